import CSQLite
import Foundation
import ObjectModel
import ObjectStore

/// The `sqlite` store type: the database file with its `-wal`, `-shm` and `-journal`.
public struct SQLiteStoreType: StoreType {
    /// Creates the type.
    public init() {}

    public var name: String { SQLiteStore.typeName }
    public var fileExtensions: [String] { ["sqlite", "sqlite3", "db"] }

    /// The file, then `-wal`, `-shm` and `-journal`, and Core Data's `.<name>_SUPPORT` folder
    /// (the files of external binary data): one store, moved, copied and removed together. A
    /// folder another store beside it shares (``SQLiteExternalData/sharingStores(_:)``) is not
    /// this store's alone, and is left out.
    public func fileURLs(for url: URL) -> [URL] {
        [url] + ["-wal", "-shm", "-journal"].map { url.deletingLastPathComponent().appending(path: url.lastPathComponent + $0) }
            + (SQLiteExternalData.sharingStores(url).isEmpty ? [SQLiteExternalData.supportFolder(for: url)] : [])
    }

    static let header = Data("SQLite format 3\0".utf8)

    /// Turns off SQLite's process-wide memory statistics (`SQLITE_CONFIG_MEMSTATUS`), so that
    /// no allocation SQLite makes takes their global mutex: a tenth of a bulk copy's time.
    /// Without them `sqlite3_memory_used` and `sqlite3_status64` read nothing and the heap limits
    /// are not enforced, for every user of SQLite in the process. Call it before any other
    /// thread uses SQLite; once SQLite has been initialized (by this code or any other in the
    /// process) it changes nothing.
    public func configureOwnProcess() {
        _ = objectstore_sqlite_memory_statistics_off()
    }

    public func recognizes(header: Data) -> Bool { header.starts(with: Self.header) }

    /// Reads the metadata read-only: the store's files are not changed.
    public func readMetadata(at url: URL) throws -> StoreMetadata {
        let (connection, metadata) = try Self.openExisting(FileOperations.resolved(url), readOnly: true)
        connection.close()
        return metadata
    }

    public func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws {
        let (connection, _) = try Self.openExisting(FileOperations.resolved(url), readOnly: false)
        defer { connection.close() }
        try connection.transaction { try Self.writeMetadata(metadata, to: connection) }
    }

    public func open(at url: URL?, model: ManagedObjectModel, options: StoreOptions) throws -> any PersistentStore {
        guard let url else { throw StoreError(.notFound, "a SQLite store needs a file URL (use the memory type for an anonymous store)") }
        // Through a link or its real path, one store: its -wal and -journal beside the real file.
        logger.debug("opening \(url.path)\(options.readOnly ? ", read-only" : "")\(options.deferredDurability ? ", durable at close" : "")")
        return try SQLiteStore(url: FileOperations.resolved(url), model: model, options: options)
    }

    /// Moves the whole store (``StoreType/replaceFiles(at:with:)``: external data files merged
    /// first, the main file last), then removes the external data files the new store does not name.
    public func checkNewStoreLocation(_ url: URL) throws {
        try SQLiteExternalData.checkUnshared(FileOperations.resolved(url))
    }

    public func replace(at destination: URL, with source: URL) throws {
        try checkNewStoreLocation(destination)
        try replaceFiles(at: destination, with: source)
        try? Self.removeUnnamedExternalFiles(at: FileOperations.resolved(destination))
    }

    /// Removes the files of a closed store's `_EXTERNAL_DATA` folder that no value of its tables
    /// names (any BLOB column's value tagged 0x02: without a model, a column that only looks
    /// like a reference keeps a file, never the other way round). In one write transaction.
    static func removeUnnamedExternalFiles(at url: URL) throws {
        guard SQLiteExternalData.sharingStores(url).isEmpty else { return }
        let external = SQLiteExternalData(store: url, isTagged: true)
        guard let present = try? FileManager.default.contentsOfDirectory(atPath: external.folder.path), !present.isEmpty else { return }
        let (connection, _) = try openExisting(url, readOnly: false)
        defer { connection.close() }
        let pairs = try connection.statement(
            "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table' AND upper(p.type) = 'BLOB'").rows { row in
            (row.column(0), row.column(1))
        }
        var columns: [String: [String]] = [:]
        for case (.text(let table), .text(let column)) in pairs where !["Z_METADATA", "Z_MODELCACHE", SQLiteExternalData.digestTable, SQLiteHistory.table].contains(table.uppercased()) {
            columns[table, default: []].append(column)
        }
        try external.removeOrphans(connection, columns: columns)
    }

    /// A store in WAL mode keeps its last commits in `-wal` until they are folded in.
    public var keepsWriteAheadLog: Bool { true }

    /// Folds the WAL into the main file (`PRAGMA wal_checkpoint(TRUNCATE)`); closing removes the empty WAL.
    public func checkpoint(at given: URL) throws {
        let url = FileOperations.resolved(given)
        guard FileManager.default.fileExists(atPath: url.path) else { throw StoreError(.notFound, "no SQLite store", url: url) }
        let (connection, _) = try Self.openExisting(url, readOnly: false)
        defer { connection.close() }
        let rows = try connection.statement("PRAGMA wal_checkpoint(TRUNCATE)").rows { $0.int64(0) }
        logger.debug("\(url.lastPathComponent): checkpoint \(rows.first == 0 ? "done: the log is folded into the main file" : "could not finish")")
        if rows.first == 1 { throw StoreError(.io, "the checkpoint could not finish: another connection is busy", url: url) }
    }

    /// Holds SQLite's write lock (`BEGIN IMMEDIATE`, waiting up to 5 s for a writer, then
    /// ``StoreError/Code/busy``) on a connection that leaves the log files in place when it
    /// closes. Writers check, once they hold the lock, that the file is still the store's. A
    /// file SQLite cannot read as a database has no writer to exclude: `body` runs without it.
    public func withWriteLock<T>(at given: URL, _ body: () throws -> T) throws -> T {
        let url = FileOperations.resolved(given)
        let connection: SQLiteConnection
        do {
            try Self.checkFile(url)
            connection = try SQLiteConnection(path: url.path, readOnly: false, create: false)
        } catch let error as StoreError where error.code == .corrupt {
            return try body()
        }
        defer { connection.close() }
        try connection.keepLogFilesAtClose()
        do {
            try connection.execute("BEGIN IMMEDIATE")
        } catch let error as StoreError where error.code == .corrupt {
            return try body()
        }
        defer { try? connection.execute("ROLLBACK") }
        return try body()
    }

    // MARK: Shared helpers

    /// Checks what can be checked before SQLite touches the file: the header and the length.
    static func checkFile(_ url: URL) throws {
        try FileOperations.checkRegularFile(url, kind: "SQLite store")
        let size = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
        guard let handle = FileHandle(forReadingAtPath: url.path) else { throw StoreError(.io, "cannot read the file", url: url) }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 100)) ?? Data()
        guard head.starts(with: header) else {
            throw StoreError(.corrupt, "not a SQLite database (the first 16 bytes are not \"SQLite format 3\")", url: url)
        }
        guard head.count == 100 else { throw StoreError(.corrupt, "truncated: \(size) bytes is shorter than the 100-byte header", url: url) }
        let raw = Int(head[16]) << 8 | Int(head[17])
        let pageSize = raw == 1 ? 65_536 : raw
        guard pageSize >= 512, pageSize <= 65_536, pageSize & (pageSize - 1) == 0 else {
            throw StoreError(.corrupt, "the header's page size \(raw) is invalid", url: url)
        }
        // Transactions a damaged -wal holds after the damage, which SQLite would drop without a word.
        try SQLiteWALCheck.check(url)
        // With a -wal or a -journal beside it, the main file's header and length may be behind
        // (a checkpoint cut short) or ahead (a rollback pending): SQLite settles that, not us.
        let sidecars = SQLiteStoreType().fileURLs(for: url).prefix(4).dropFirst()
        guard !sidecars.contains(where: { FileManager.default.fileExists(atPath: $0.path) && !$0.path.hasSuffix("-shm") }) else { return }
        guard size % pageSize == 0 else {
            throw StoreError(.corrupt, "truncated: \(size) bytes is not a whole number of \(pageSize)-byte pages", url: url)
        }
        func u32(_ at: Int) -> Int { Int(head[at]) << 24 | Int(head[at + 1]) << 16 | Int(head[at + 2]) << 8 | Int(head[at + 3]) }
        let pages = u32(28)
        if u32(92) == u32(24), pages > 0, size < pages * pageSize {
            throw StoreError(.corrupt, "truncated: the header says \(pages) pages, the file holds \(size / pageSize)", url: url)
        }
    }

    /// Opens an existing store and reads its metadata. On failure nothing is left
    /// behind: sidecar files SQLite created are removed and the file is unchanged.
    static func openExisting(_ url: URL, readOnly: Bool) throws -> (SQLiteConnection, StoreMetadata) {
        try checkFile(url)
        let sidecars = SQLiteStoreType().fileURLs(for: url).prefix(4).dropFirst()
        let existed = Set(sidecars.filter { FileManager.default.fileExists(atPath: $0.path) })
        let connection = try SQLiteConnection(path: url.path, readOnly: readOnly, create: false)
        do {
            guard try connection.exists("Z_METADATA") else {
                throw StoreError(.corrupt, "a SQLite database, but not a store (no Z_METADATA table)", url: url)
            }
            return (connection, try readMetadata(from: connection, url: url))
        } catch {
            connection.close()
            for file in sidecars where !existed.contains(file) { try? FileManager.default.removeItem(at: file) }
            if let error = error as? StoreError { throw StoreError(error.code, error.message, url: url, cause: error) }
            throw error
        }
    }

    /// The metadata: Z_PLIST's dictionary, with the store UUID from Z_UUID, where Core Data keeps it.
    static func readMetadata(from connection: SQLiteConnection, url: URL) throws -> StoreMetadata {
        let rows = try connection.statement("SELECT Z_PLIST, Z_UUID FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1").rows { ($0.column(0), $0.column(1)) }
        guard let (plistColumn, uuidColumn) = rows.first, case .blob(let plist) = plistColumn else {
            throw StoreError(.corrupt, "Z_METADATA holds no metadata", url: url)
        }
        guard let values = PropertyListValue.decodeDictionary(plist) else {
            throw StoreError(.corrupt, "Z_METADATA's Z_PLIST is not a property list dictionary", url: url)
        }
        var metadata = StoreMetadata(values)
        if case .text(let text) = uuidColumn, let uuid = UUID(uuidString: text) {
            metadata[StoreMetadata.Key.storeUUID] = .string(uuid.uuidString)
        }
        return metadata
    }

    /// The keys Core Data writes into a new store's Z_PLIST besides the model's: the framework
    /// version whose layout new stores follow (1523, the newest in `shared/fixtures/coredata-stores`,
    /// docs/sqlite-layout.md) and the auto-vacuum level, as Core Data writes them.
    static let coreDataKeys: [String: PropertyListValue] = [
        "NSPersistenceFrameworkVersion": .integer(1523),
        "NSPersistenceMaximumFrameworkVersion": .integer(1523),
        "_NSAutoVacuumLevel": .string("2"),
    ]

    /// Writes the metadata: the store UUID in Z_UUID, where Core Data keeps it (never NULL: a
    /// metadata without one keeps the store's), everything else in Z_PLIST.
    static func writeMetadata(_ metadata: StoreMetadata, to connection: SQLiteConnection) throws {
        var values = metadata.values
        let existing = try connection.statement("SELECT Z_UUID FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1").rows { row -> String? in
            if case .text(let text) = row.column(0) { return text }
            return nil
        }.first ?? nil
        let uuid = metadata.storeUUID?.uuidString ?? existing.flatMap { UUID(uuidString: $0)?.uuidString } ?? UUID().uuidString
        values[StoreMetadata.Key.storeUUID] = nil
        // How the store's external-storage columns hold values is the store's, not the caller's to drop.
        let kept = [SQLiteExternalData.metadataKey, SQLiteExternalData.digestsKey].filter { values[$0] == nil }
        if !kept.isEmpty,
           case .blob(let plist)? = try connection.statement("SELECT Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1").rows([], { $0.column(0) }).first,
           let stored = PropertyListValue.decodeDictionary(plist) {
            for key in kept { values[key] = stored[key] }
        }
        let plist = try PropertyListValue.binaryPropertyList(values)
        try connection.statement("DELETE FROM Z_METADATA").run()
        try connection.statement("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?1, ?2)").run([.text(uuid), .blob(plist)])
    }
}
