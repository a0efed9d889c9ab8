import CLMDB
import Foundation
import ObjectModel
import ObjectStore

/// The `lmdb` store type: the data file and its `-lock` file.
public struct LMDBStoreType: StoreType {
    /// Creates the type.
    public init() {}

    public var name: String { LMDBStore.typeName }
    public var fileExtensions: [String] { ["lmdb", "mdb"] }

    /// The data file and `<file>-lock`.
    public func fileURLs(for url: URL) -> [URL] {
        [url, url.deletingLastPathComponent().appending(path: url.lastPathComponent + "-lock")]
    }

    /// LMDB's meta page: the magic `0xBEEFC0DE` and data version 1 after the 16-byte page header.
    public func recognizes(header: Data) -> Bool {
        header.count >= 24 && Self.uint32(header, 16) == Self.magic && Self.uint32(header, 20) == 1
    }

    public func readMetadata(at url: URL) throws -> StoreMetadata {
        let (environment, metadata) = try Self.openExisting(FileOperations.resolved(url), readOnly: true)
        environment.close()
        return metadata
    }

    public func writeMetadata(_ metadata: StoreMetadata, at given: URL) throws {
        let url = FileOperations.resolved(given)
        let (environment, _) = try Self.openExisting(url, readOnly: false)
        defer { environment.close() }
        try Self.mapping(url) {
            try environment.write { txn in try txn.put(LMDBLayout.meta, LMDBLayout.metadataKey, try PropertyListValue.binaryPropertyList(metadata.values)) }
        }
    }

    public func open(at url: URL?, model: ManagedObjectModel, options: StoreOptions) throws -> any PersistentStore {
        guard let url else { throw StoreError(.notFound, "an LMDB store needs a file URL (use the memory type for an anonymous store)") }
        // Through a link or its real path, one store: one lock file, beside the real file.
        logger.debug("opening \(url.path)\(options.readOnly ? ", read-only" : "")\(options.deferredDurability ? ", durable at close" : "")")
        return try LMDBStore(url: FileOperations.resolved(url), model: model, options: options)
    }

    /// Holds LMDB's writer lock (a write transaction, begun once the writer holding it is
    /// done, as every LMDB writer waits), and aborts it after `body`. Writers check, once they
    /// hold the lock, that the file is still the store's. A damaged file, which no store opens
    /// for writing, has no writer to exclude: `body` runs without it.
    public func withWriteLock<T>(at given: URL, _ body: () throws -> T) throws -> T {
        let url = FileOperations.resolved(given)
        let environment: LMDBEnvironment
        do {
            (environment, _) = try Self.openExisting(url, readOnly: false)
        } catch let error as StoreError where error.code == .corrupt {
            return try body()
        }
        defer { environment.close() }
        return try Self.mapping(url) { try environment.holdingWriteLock(body) }
    }

    // MARK: Shared helpers

    static let magic: UInt32 = 0xBEEF_C0DE

    static func uint32(_ data: Data, _ at: Int) -> UInt32 {
        data.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }
    }

    static func uint64(_ data: Data, _ at: Int) -> UInt64 {
        data.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
    }

    /// Converts LMDB's errors to the store error.
    static func mapping<T>(_ url: URL, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as LMDBError {
            let code: StoreError.Code = switch error.code {
            case MDB_CORRUPTED, MDB_INVALID, MDB_VERSION_MISMATCH, MDB_PAGE_NOTFOUND: .corrupt
            case EACCES, EROFS: .readOnly
            default: .io
            }
            throw StoreError(code, error.message, url: url)
        }
    }

    /// What `validate` reports beyond reading: with `deep`, every page the file's current
    /// state reaches, walked again (opening walks them too).
    static func integrityProblems(_ url: URL, deep: Bool) throws -> [String] {
        guard deep else { return [] }
        do {
            try checkFile(url)
            return []
        } catch let error as StoreError where error.code == .corrupt {
            return [error.message]
        }
    }

    /// Checks the file before LMDB maps it: LMDB trusts its pages, and a damaged one makes
    /// it read out of bounds (a crash), not fail. The two meta pages are checked, then every
    /// page the current one reaches (``LMDBPageWalk``). A writer in another process may reuse
    /// pages while they are walked, so a walk that fails is tried again on the newer state
    /// while there is one: damage stays where it is, a writer moves on.
    static func checkFile(_ url: URL) throws {
        try FileOperations.checkRegularFile(url, kind: "LMDB store")
        var lastTransaction: UInt64?
        for _ in 0..<5 {
            let (data, release) = try map(url)
            let (pageSize, meta, transaction, last) = try checkMetaPages(data, url: url)
            do {
                var walk = LMDBPageWalk(data: data, pageSize: pageSize, lastPage: last, url: url, release: release)
                try walk.walk(metaOffset: meta * pageSize)
                return
            } catch let error as StoreError {
                if lastTransaction == transaction { throw error }
                lastTransaction = transaction
                usleep(10_000)
            }
        }
        throw StoreError(.busy, "the store kept changing while it was checked; try again", url: url)
    }

    /// The file mapped read-only, and a function that drops the pages read so far from the
    /// process's resident set (a walk of a large file would otherwise count all of it).
    static func map(_ url: URL) throws -> (Data, release: () -> Void) {
        let handle: FileHandle
        do { handle = try FileHandle(forReadingFrom: url) } catch {
            throw StoreError(.io, "cannot read the file: \((error as NSError).localizedDescription)", url: url, cause: error as NSError)
        }
        defer { try? handle.close() }
        let fd = handle.fileDescriptor
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StoreError(.io, "cannot read the file: \(String(cString: strerror(errno)))", url: url) }
        let size = Int(info.st_size)
        guard size > 0 else { return (Data(), {}) }
        guard let base = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), base != MAP_FAILED else {
            throw StoreError(.io, "cannot map the file: \(String(cString: strerror(errno)))", url: url)
        }
        let data = Data(bytesNoCopy: base, count: size, deallocator: .custom { pointer, count in munmap(pointer, count) })
        return (data, { madvise(base, size, MADV_DONTNEED) })
    }

    /// Checks both meta pages; returns the page size, the current meta page (0 or 1), its
    /// transaction number and the last page it says is in use.
    static func checkMetaPages(_ data: Data, url: URL) throws -> (pageSize: Int, meta: Int, transaction: UInt64, last: UInt64) {
        guard data.count >= 152, LMDBStoreType().recognizes(header: data) else {
            throw StoreError(.corrupt, "not an LMDB environment (no LMDB meta page at the start)", url: url)
        }
        let pageSize = Int(uint32(data, 40))
        guard pageSize >= 512, pageSize <= 65_536, pageSize & (pageSize - 1) == 0 else {
            throw StoreError(.corrupt, "the meta page's page size \(pageSize) is invalid", url: url)
        }
        guard data.count >= 2 * pageSize else {
            throw StoreError(.corrupt, "truncated: \(data.count) bytes is less than the two \(pageSize)-byte meta pages every LMDB file starts with", url: url)
        }
        guard data.count % pageSize == 0 else {
            throw StoreError(.corrupt, "truncated: \(data.count) bytes is not a whole number of \(pageSize)-byte pages", url: url)
        }
        var best: (page: Int, txn: UInt64, last: UInt64)?
        for page in 0..<2 {
            let base = page * pageSize
            // The page header: the page's own number (8 bytes), padding, then its flags (P_META = 0x08).
            guard uint64(data, base) == UInt64(page) else {
                throw StoreError(.corrupt, "meta page \(page) is damaged: its header names page \(uint64(data, base))", url: url)
            }
            guard data[base + 10] & 0x08 != 0 else {
                throw StoreError(.corrupt, "meta page \(page) is damaged: it is not marked as a meta page", url: url)
            }
            guard uint32(data, base + 16) == magic, uint32(data, base + 20) == 1 else {
                throw StoreError(.corrupt, "meta page \(page) is damaged", url: url)
            }
            guard Int(uint32(data, base + 40)) == pageSize else {
                throw StoreError(.corrupt, "meta page \(page) is damaged: it gives another page size", url: url)
            }
            let meta = (page: page, txn: uint64(data, base + 144), last: uint64(data, base + 136))
            // liblmdb writes transaction n's meta page at n mod 2 (both say 0 in a new file).
            guard meta.txn == 0 || meta.txn % 2 == UInt64(page) else {
                throw StoreError(.corrupt, "meta page \(page) is damaged: it names transaction \(meta.txn), which is never written to it", url: url)
            }
            if let other = best {
                // The other holds the transaction before: the two are one apart, or both 0.
                guard max(other.txn, meta.txn) - min(other.txn, meta.txn) == 1 || (other.txn == 0 && meta.txn == 0) else {
                    throw StoreError(.corrupt, "the meta pages are damaged: they name transactions \(other.txn) and \(meta.txn), "
                                     + "where one is the other's next", url: url)
                }
            }
            if best == nil || meta.txn > best!.txn { best = meta }
        }
        let pages = UInt64(data.count / pageSize)
        guard let best, best.last < pages else {
            throw StoreError(.corrupt, "truncated: the meta page names page \(best?.last ?? 0), the file holds \(pages) pages", url: url)
        }
        return (pageSize, best.page, best.txn, best.last)
    }

    /// Opens an existing store and reads its metadata; a failed open leaves no lock file it created.
    static func openExisting(_ url: URL, readOnly: Bool, deferSync: Bool = false) throws -> (LMDBEnvironment, StoreMetadata) {
        try checkFile(url)
        let lockFile = LMDBStoreType().fileURLs(for: url)[1]
        let lockExisted = FileManager.default.fileExists(atPath: lockFile.path)
        var environment: LMDBEnvironment?
        do {
            let opened = try mapping(url) { try LMDBEnvironment(path: url.path, readOnly: readOnly, deferSync: deferSync) }
            environment = opened
            try mapping(url) { try opened.openDatabases([LMDBLayout.meta], create: false) }
            try mapping(url) { try LMDBRowFormat.adoptChecksums(opened, url: url) }
            let metadata = try mapping(url) { try opened.read { try readMetadata($0, url: url) } }
            return (opened, metadata)
        } catch {
            environment?.close()
            if !lockExisted { try? FileManager.default.removeItem(at: lockFile) }
            throw error
        }
    }

    static func readMetadata(_ txn: LMDBTransaction, url: URL) throws -> StoreMetadata {
        guard txn.database(LMDBLayout.meta) != nil else {
            throw StoreError(.corrupt, "an LMDB environment, but not a store (no meta database)", url: url)
        }
        guard let data = try txn.get(LMDBLayout.meta, LMDBLayout.metadataKey) else {
            throw StoreError(.corrupt, "the store holds no metadata", url: url)
        }
        if let values = PropertyListValue.decodeDictionary(data) { return StoreMetadata(values) }
        // A store whose values carry checksums, read before its format says so (its format record
        // damaged, or of a version this build does not read): the metadata with its checksum right.
        if !txn.environment.checksummed, data.count > 4 {
            let sum = data.suffix(4).withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
            let value = data.dropLast(4)
            let right = LMDBLayout.metadataKey.withUnsafeBytes { key in value.withUnsafeBytes { LMDBTransaction.checksum(LMDBLayout.meta, key, $0) } }
            if sum == right, let values = PropertyListValue.decodeDictionary(Data(value)) { return StoreMetadata(values) }
        }
        throw StoreError(.corrupt, "the metadata is not a property list dictionary", url: url)
    }
}
