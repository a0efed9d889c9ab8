import Crypto
import Foundation
import ObjectModel
import ObjectStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Core Data's external binary storage (`allowsExternalBinaryDataStorage`) in a SQLite store
/// (`docs/coredata-formats.md`, "External binary data").
///
/// The column of such an attribute holds a tagged value: byte `0x01` then the bytes
/// themselves, or byte `0x02` then the name of a file in `.<name>_SUPPORT/_EXTERNAL_DATA/`
/// beside the store (a UUID string, NUL-terminated) that holds the bytes. Values of more than
/// ``threshold`` bytes are written to a file, smaller ones inline. Other attributes are untouched.
struct SQLiteExternalData: Sendable {
    /// The tag of a value held in the column.
    static let inlineTag: UInt8 = 0x01
    /// The tag of a value held in a file.
    static let fileTag: UInt8 = 0x02
    /// Values of more than this many bytes (128 KiB) are written to a file.
    static let threshold = 128 * 1024
    /// The table where this library keeps each external data file's length and SHA-256, written
    /// in the transaction that writes the reference (a table of its own, not Core Data's `Z`
    /// namespace). A read checks the file against them.
    static let digestTable = "OBJECTSTORE_EXTERNAL_DATA"
    /// The metadata key of a store this library wrote with the tags. A store with an embedded
    /// ObjectStore model and without this key was written before the tags were: its flagged
    /// columns hold the bytes as they are.
    static let metadataKey = "ObjectStoreExternalBinaryData"
    /// The metadata key of a store that records a length and digest for every file it writes
    /// (made by this library since the digests were): a file without them is then damage (the
    /// table emptied or dropped), not an older store.
    static let digestsKey = "ObjectStoreExternalDataDigests"

    /// Where the files are: `.<name>_SUPPORT/_EXTERNAL_DATA` beside the store.
    let folder: URL
    /// Whether flagged columns hold tagged values (false: an older ObjectStore store, raw bytes).
    let isTagged: Bool
    /// Whether every file must have its length and digest recorded (``digestsKey``).
    let requiresDigests: Bool

    init(store url: URL, isTagged: Bool, requiresDigests: Bool = false) {
        folder = Self.supportFolder(for: url).appending(path: "_EXTERNAL_DATA")
        self.isTagged = isTagged
        self.requiresDigests = requiresDigests
    }

    /// The external data of the store at `url` with `metadata`.
    init(store url: URL, metadata: StoreMetadata) {
        self.init(store: url, isTagged: Self.isTagged(metadata), requiresDigests: metadata[Self.digestsKey] != nil)
    }

    /// Whether a store with `metadata` holds tagged values.
    static func isTagged(_ metadata: StoreMetadata) -> Bool {
        metadata[metadataKey] != nil || metadata[StoreMetadata.Key.embeddedModel] == nil
    }

    /// The other SQLite stores beside `url` whose support folder is `url`'s: Core Data names the
    /// folder after the file name without its extension, so `x.sqlite` and `x.db` would share
    /// `.x_SUPPORT`. A store that shares it never removes, moves or sweeps the folder (the files
    /// may be the other's), and no new store is made to share one.
    static func sharingStores(_ url: URL) -> [URL] {
        let folder = supportFolder(for: url), directory = url.deletingLastPathComponent()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        // A store that shares the folder has a name whose bytes begin with the folder's: the names
        // of a crowded directory are told apart so before any is made a URL (by bytes, not
        // characters: a name may end in a character that joins the next into one).
        let stem = Array(supportStem(for: url).utf8)
        return names.filter { $0.utf8.starts(with: stem) }.sorted().compactMap { name -> URL? in
            guard name != url.lastPathComponent, !["-wal", "-shm", "-journal"].contains(where: name.hasSuffix) else { return nil }
            let other = directory.appending(path: name)
            guard supportFolder(for: other) == folder, let handle = FileHandle(forReadingAtPath: other.path) else { return nil }
            defer { try? handle.close() }
            return (try? handle.read(upToCount: 16)).map { $0.starts(with: SQLiteStoreType.header) } == true ? other : nil
        }
    }

    /// Refuses a store at `url` that would share its support folder with another (``sharingStores(_:)``).
    static func checkUnshared(_ url: URL) throws {
        guard let other = sharingStores(url).first else { return }
        throw StoreError(.alreadyExists, "\(other.lastPathComponent) beside it keeps its external binary data in \(supportFolder(for: url).lastPathComponent), "
                         + "which this store would share (Core Data names that folder after the file name without its extension): give it another name", url: url)
    }

    /// The store's support folder, `.<name>_SUPPORT`, `<name>` its file name without a plain
    /// extension (`Notes.sqlite` → `.Notes_SUPPORT`); an extension with other characters than
    /// letters and digits is kept, so that two staged stores (`.Notes.sqlite.migrating-<UUID>`)
    /// never share one.
    static func supportFolder(for url: URL) -> URL {
        url.deletingLastPathComponent().appending(path: ".\(supportStem(for: url))_SUPPORT")
    }

    /// The `<name>` of ``supportFolder(for:)``: the file name without a plain extension.
    private static func supportStem(for url: URL) -> String {
        let ext = url.pathExtension
        let plain = !ext.isEmpty && ext.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII }
        return plain ? url.deletingPathExtension().lastPathComponent : url.lastPathComponent
    }

    /// The file name a tagged value names, or nil for an inline value.
    /// - Throws: ``StoreError`` (corrupt) for a value with neither tag or a name that is no plain file name.
    static func fileName(_ blob: Data, at place: () -> String, url: URL?) throws -> String? {
        guard let tag = blob.first else {
            throw StoreError(.corrupt, "\(place()) holds an empty value, without the 0x01 (inline) or 0x02 (external file) tag external storage writes", url: url)
        }
        switch tag {
        case inlineTag: return nil
        case fileTag:
            var bytes = blob.dropFirst()
            if bytes.last == 0 { bytes = bytes.dropLast() }
            guard let name = String(validating: bytes, as: UTF8.self), !name.isEmpty, name != ".", name != "..",
                  !name.contains("/"), !name.contains("\0") else {
                throw StoreError(.corrupt, "\(place()) names an external data file, but \(String(reflecting: String(decoding: bytes.prefix(60), as: UTF8.self))) is not a file name", url: url)
            }
            return name
        default:
            throw StoreError(.corrupt, "\(place()) holds a value starting with byte 0x\(String(format: "%02X", tag)), neither 0x01 (inline) nor 0x02 (an external data file)", url: url)
        }
    }

    /// The bytes of a flagged column's value; a file's bytes are checked against the length and
    /// digest recorded with its reference (``digestTable``), where there are some (a store Core
    /// Data wrote has none).
    /// - Throws: ``StoreError`` (corrupt) for a value with neither tag, naming a file that is not
    ///   there, is a symbolic link or no regular file, or whose bytes are not the ones written.
    func read(_ blob: Data, at place: @autoclosure () -> String, url: URL?, connection: SQLiteConnection, database: String = "main") throws -> Data {
        guard isTagged else { return blob }
        guard let name = try Self.fileName(blob, at: place, url: url) else { return Data(blob.dropFirst()) }
        let bytes = try readFile(name, at: place(), url: url)
        guard let (length, digest) = try Self.recorded(name, connection, database: database) else {
            guard !requiresDigests else {
                throw StoreError(.corrupt, "\(place()) names the external data file \(name), for which \(Self.digestTable) holds no length and SHA-256, "
                                 + "though this store records them for every file it writes: the table was emptied or dropped, or the reference changed", url: url)
            }
            return bytes
        }
        guard bytes.count == length, Data(SHA256.hash(data: bytes)) == digest else {
            let what = bytes.count == length ? "its SHA-256 differs" : "it holds \(bytes.count) bytes"
            throw StoreError(.corrupt, "\(place()) names the external data file \(name), which is not the file written (\(length) bytes; \(what)): "
                             + "it was changed, truncated or swapped in \(folder.path)", url: url)
        }
        return bytes
    }

    /// The bytes of the file `name` of the folder, never through a symbolic link.
    private func readFile(_ name: String, at place: @autoclosure () -> String, url: URL?) throws -> Data {
        let file = folder.appending(path: name)
        let fd = open(file.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            let why = switch code {
            case ENOENT: "which is missing from \(folder.path)"
            case ELOOP: "which is a symbolic link in \(folder.path) (never followed: the store's values are its own files)"
            default: "which cannot be read in \(folder.path) (\(String(cString: strerror(code))))"
            }
            throw StoreError(.corrupt, "\(place()) names the external data file \(name), \(why)", url: url)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw StoreError(.corrupt, "\(place()) names the external data file \(name), which is not a regular file in \(folder.path)", url: url)
        }
        var bytes = Data(count: Int(info.st_size))
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + offset, $0.count - offset, off_t(offset)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                throw StoreError(.corrupt, "\(place()) names the external data file \(name), which cannot be read in \(folder.path)", url: url)
            }
            offset += n
        }
        return bytes
    }

    /// The length and SHA-256 recorded for the file `name`, or nil when none is (a store Core
    /// Data wrote, or one written before the table was).
    static func recorded(_ name: String, _ connection: SQLiteConnection, database: String = "main") throws -> (Int, Data)? {
        guard try connection.statement("SELECT 1 FROM \(database).sqlite_master WHERE type = 'table' AND name = ?1").rows([.text(digestTable)], { _ in 1 }).count == 1 else {
            return nil
        }
        let rows = try connection.statement("SELECT length, sha256 FROM \(database).\(digestTable) WHERE name = ?1").rows([.text(name)]) { ($0.column(0), $0.column(1)) }
        guard let (lengthValue, digestValue) = rows.first else { return nil }
        guard case .integer(let length) = lengthValue, case .blob(let digest) = digestValue, digest.count == 32 else {
            throw StoreError(.corrupt, "\(digestTable) holds no length and SHA-256 for \(name)", url: URL(filePath: connection.path))
        }
        return (Int(length), digest)
    }

    /// Records the files a save wrote (their lengths and digests) and forgets the ones it made
    /// obsolete, in the save's transaction.
    static func record(_ ledger: ExternalFileLedger, _ connection: SQLiteConnection) throws {
        guard !ledger.digests.isEmpty || !ledger.obsolete.isEmpty else { return }
        try connection.execute("CREATE TABLE IF NOT EXISTS \(digestTable) (name TEXT PRIMARY KEY, length INTEGER NOT NULL, sha256 BLOB NOT NULL)")
        for (name, length, digest) in ledger.digests {
            try connection.statement("INSERT OR REPLACE INTO \(digestTable) (name, length, sha256) VALUES (?1, ?2, ?3)")
                .run([.text(name), .integer(Int64(length)), .blob(digest)])
        }
        for file in ledger.obsolete {
            try connection.statement("DELETE FROM \(digestTable) WHERE name = ?1").run([.text(file.lastPathComponent)])
        }
    }

    /// A flagged attribute's value as its column holds it: inline, or written to a new file
    /// (made durable before the transaction commits; removed if it does not) for a large value.
    func write(_ data: Data, files: ExternalFileLedger, url: URL?) throws -> Data {
        guard isTagged else { return data }
        guard data.count > Self.threshold else { return Data([Self.inlineTag]) + data }
        let name = UUID().uuidString
        try files.write(data, to: folder.appending(path: name), url: url)
        return Data([Self.fileTag]) + Data(name.utf8) + Data([0])
    }

    /// The names of the files every flagged column of the store names (SQL over `columns`, table → columns).
    static func referencedNames(_ connection: SQLiteConnection, columns: [String: [String]], database: String = "main") throws -> Set<String> {
        var names: Set<String> = []
        for (table, list) in columns {
            for column in list {
                let sql = "SELECT \(quote(column)) FROM \(database).\(quote(table)) WHERE substr(\(quote(column)), 1, 1) = x'02'"
                for case .blob(let blob) in try connection.statement(sql).rows([], { $0.column(0) }) {
                    if let name = try? fileName(blob, at: { "" }, url: nil) { names.insert(name) }
                }
            }
        }
        return names
    }

    /// The flagged columns of `schema`'s tables for `model`, table → columns.
    static func columns(_ schema: SQLiteSchema, _ model: ManagedObjectModel) -> [String: [String]] {
        var columns: [String: Set<String>] = [:]
        for (name, mapping) in schema.entities {
            guard let entity = model.entity(named: name) else { continue }
            for attribute in entity.storedAttributes where attribute.allowsExternalBinaryDataStorage {
                if let column = mapping.attributes[attribute.name] { columns[mapping.table, default: []].insert(column) }
            }
        }
        return columns.mapValues { $0.sorted() }
    }

    /// Whether no reader of the file, in this process or another, reads a moment before the
    /// latest commit, so that a file only earlier moments name can go: in WAL mode, a passive
    /// checkpoint that copies every frame (a reader of an earlier moment holds frames back); in
    /// the other journal modes, always (a reader's lock keeps any commit out while it reads).
    static func noEarlierReaders(_ connection: SQLiteConnection) -> Bool {
        guard let row = try? connection.statement("PRAGMA wal_checkpoint(PASSIVE)").rows([], { ($0.int64(0), $0.int64(1), $0.int64(2)) }).first else {
            return false
        }
        return row.0 == 0 && row.1 == row.2
    }

    /// Removes the files no row names: what a transaction cut short by a crash wrote, and what
    /// a row replaced or deleted named when the removal after its commit did not happen. Runs
    /// inside a write transaction, so no other writer has files in flight, and only when no
    /// reader reads an earlier moment (``noEarlierReaders(_:)``), which may name them.
    func removeOrphans(_ connection: SQLiteConnection, columns: [String: [String]]) throws {
        guard isTagged, let present = try? FileManager.default.contentsOfDirectory(atPath: folder.path), !present.isEmpty,
              Self.noEarlierReaders(connection) else { return }
        try connection.transaction {
            let named = try Self.referencedNames(connection, columns: columns)
            for name in present where !named.contains(name) && !FileOperations.isFolder(folder.appending(path: name)) {
                try? FileManager.default.removeItem(at: folder.appending(path: name))
            }
            // The lengths and digests of files no row names any more.
            if try connection.exists(Self.digestTable) {
                for name in try connection.statement("SELECT name FROM \(Self.digestTable)").rows([], { $0.column(0) }) {
                    if case .text(let text) = name, !named.contains(text) {
                        try connection.statement("DELETE FROM \(Self.digestTable) WHERE name = ?1").run([.text(text)])
                    }
                }
            }
        }
    }

    /// Copies into this store's folder the files of `source`'s folder that `names` lists
    /// (a hard link where the file system allows, a copy otherwise), durable before return; each
    /// is first read and checked as a read checks it (the source's recorded length and digest, in
    /// `sourceDatabase` of `connection`), and its length and digest are recorded here.
    /// - Parameter place: the object and property whose value names a file, for errors.
    func adopt(_ names: Set<String>, from source: SQLiteExternalData, sourceDatabase: String, connection: SQLiteConnection,
               files: ExternalFileLedger, url: URL?, place: (String) -> String) throws {
        for name in names.sorted() {
            let from = source.folder.appending(path: name), to = folder.appending(path: name)
            let bytes = try source.read(Data([Self.fileTag]) + Data(name.utf8), at: place(name), url: source.folder.deletingLastPathComponent(),
                                        connection: connection, database: sourceDatabase)
            files.noteDigest(name, of: bytes)
            guard !FileManager.default.fileExists(atPath: to.path) else { continue }
            try files.copy(from, to: to, url: url)
        }
    }
}

/// The external data files one save writes and makes obsolete: the new ones are removed if
/// the save does not commit, the obsolete ones once it has.
final class ExternalFileLedger {
    private(set) var written: [URL] = []
    private(set) var obsolete: [URL] = []
    /// The name, length and SHA-256 of every file the save wrote or adopted.
    private(set) var digests: [(name: String, length: Int, sha256: Data)] = []
    private var folders: Set<URL> = []

    /// Notes the length and digest of the file `name` holding `bytes`, to record with the save.
    func noteDigest(_ name: String, of bytes: Data) {
        digests.append((name, bytes.count, Data(SHA256.hash(data: bytes))))
    }

    /// Writes `data` to the new file `url`, synced to disk.
    func write(_ data: Data, to file: URL, url: URL?) throws {
        noteDigest(file.lastPathComponent, of: data)
        try makeFolder(file.deletingLastPathComponent(), url: url)
        let fd = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("create", file, url) }
        written.append(file)
        defer { close(fd) }
        try data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = systemWrite(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0 { if errno == EINTR { continue }; throw failure("write", file, url) }
                offset += n
            }
        }
        guard fsync(fd) == 0 else { throw failure("sync", file, url) }
    }

    /// Links (or copies) `source` to the new file `file`, synced to disk.
    func copy(_ source: URL, to file: URL, url: URL?) throws {
        try makeFolder(file.deletingLastPathComponent(), url: url)
        if link(source.path, file.path) == 0 {
            written.append(file)
            return
        }
        let digests = self.digests
        try write(try Data(contentsOf: source), to: file, url: url)
        self.digests = digests
    }

    /// Notes a file a committed save no longer names.
    func retire(_ file: URL) { obsolete.append(file) }

    /// Makes the new files' names durable: their folders synced. Call before the commit.
    func flush(url: URL?) throws {
        for folder in folders {
            let fd = open(folder.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw failure("open", folder, url) }
            defer { close(fd) }
            guard fsync(fd) == 0 else { throw failure("sync", folder, url) }
        }
    }

    /// The save committed: the files it made obsolete, which readers of earlier moments may
    /// still read (the store removes them when none does, ``SQLiteStore``).
    func committed() -> [URL] {
        defer {
            written = []
            obsolete = []
            digests = []
        }
        return obsolete
    }

    /// The save did not commit: the files it wrote go.
    func rolledBack() {
        for file in written { try? FileManager.default.removeItem(at: file) }
        written = []
        obsolete = []
        digests = []
    }

    private func makeFolder(_ folder: URL, url: URL?) throws {
        guard !folders.contains(folder) else { return }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw StoreError(.io, "cannot make the external data folder \(folder.path)", url: url, cause: error)
        }
        // The folder, the support folder and the store's folder: each may hold a new name.
        folders.insert(folder)
        folders.insert(folder.deletingLastPathComponent())
        folders.insert(folder.deletingLastPathComponent().deletingLastPathComponent())
    }

    private func failure(_ verb: String, _ file: URL, _ url: URL?) -> StoreError {
        let code = errno
        let reason = FileOperations.fullDiskExplanation(code, at: file) ?? String(cString: strerror(code))
        return StoreError(.io, "cannot \(verb) the external data file \(file.lastPathComponent): \(reason)", url: url)
    }
}

/// POSIX `write`, under a name no method shadows.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
