import Foundation
import ObjectModel
import ObjectStore
import StoreToolkit
import Synchronization

/// A store kept whole in one binary file: checked completely at open, written
/// completely and atomically at every save (`docs/atomic-format.md`). A store opened
/// for writing holds the file's bytes; one opened read-only holds its rows' keys and
/// offsets and reads rows from the file (the one it opened) when they are needed.
///
/// A save writes a temporary file beside the store, fsyncs it, renames it over
/// the store and fsyncs the directory: a crash at any point leaves the old file
/// or the new one, never a torn one. For small documents.
///
/// A store opened for writing holds an exclusive lock (`flock` on `<file>-lock`)
/// until it is closed, from the read at open to the last save: a second writer,
/// in this process or another, waits five seconds and then gets a `busy` error,
/// so no write is ever lost to another. Readers take no lock (every file they can
/// see is complete). A save keeps the file's permission bits and owner; a file
/// without write permission for its owner is not opened for writing.
///
/// Primary keys are handed out from memory and recorded in the file with the
/// next save; every key a saved object has ever used is below the recorded
/// counter, so no stored key is ever reused.
public final class AtomicStore: RecordTablesStore {
    /// The registered type name, `atomic`.
    public static let typeName = "atomic"

    /// Registers the `atomic` store type (with `registry`, the shared one by default).
    public static func register(in registry: StoreTypeRegistry = .shared) {
        registry.register(AtomicStoreType())
    }

    public var storeType: String { Self.typeName }
    public var url: URL? { fileURL }
    public let identifier: UUID
    public let model: ManagedObjectModel
    public let isReadOnly: Bool

    let fileURL: URL
    let fileSystem: any AtomicFileSystem
    private let state: StoreState<RecordTables>
    /// The writer's lock, held from open to close (nil for a read-only store).
    private let writerLock: FileLock?
    /// Whether the tables changed since the file was last written (key counters
    /// always; everything, with deferred durability).
    private let countersChanged = Mutex(false)
    /// Whether saves only change memory and the file is written at close.
    private let deferredDurability: Bool
    public let historyPolicy: HistoryPolicy
    /// For a read-only store, the file's identity when its history was last read (see ``lastHistoryToken()``).
    private let historySeen = Mutex<FileOperations.Identity?>(nil)

    init(url: URL, model: ManagedObjectModel, options: StoreOptions, fileSystem: any AtomicFileSystem) throws {
        self.fileURL = url
        self.model = model
        self.isReadOnly = options.readOnly
        self.fileSystem = fileSystem
        self.deferredDurability = options.deferredDurability && !options.readOnly
        self.historyPolicy = HistoryPolicy(options)
        let exists = FileManager.default.fileExists(atPath: url.path)
        if !exists { try options.checkCreatable("atomic", url: url) }
        if exists, !options.readOnly, let mode = FileOperations.attributes(url)?.mode, mode & 0o200 == 0 {
            throw StoreError(.readOnly, "the file is read-only (mode \(String(mode, radix: 8))): open it read-only, or make it writable", url: url)
        }
        // A writer locks the store before it reads it, and keeps the lock until it closes.
        let lock = options.readOnly ? nil : try FileLock(url: AtomicStoreType.lockURL(url), waiting: 5, what: url)
        var tables: RecordTables
        do {
            // Temporary files of a killed writer: no live writer owns them now that this one holds the lock.
            if lock != nil {
                for stale in AtomicStoreType.staleTemporaries(url) { try? FileManager.default.removeItem(at: stale) }
            }
            if exists {
                // Taken before the file is read: a file replaced in between is read again later.
                historySeen.withLock { $0 = FileOperations.identity(url) }
                tables = try AtomicStoreType.load(url, inMemory: !options.readOnly)
                try tables.metadata.checkCompatible(with: model, url: url)
            } else {
                tables = RecordTables(metadata: try StoreMetadata(storeType: Self.typeName, model: model))
                try AtomicStoreType.write(tables, to: url, fileSystem: fileSystem)
            }
        } catch {
            lock?.release()
            // A store that was to be made and was not leaves no lock file of its own.
            if !exists && !FileManager.default.fileExists(atPath: url.path) { try? FileManager.default.removeItem(at: AtomicStoreType.lockURL(url)) }
            throw error
        }
        writerLock = lock
        identifier = tables.metadata.storeUUID ?? UUID()
        state = StoreState(tables, url: url, readOnly: options.readOnly)
    }

    /// Moves the counter in memory only: it is recorded in the file by the next save, or at close.
    public func withLastKey<T>(of root: String, _ body: (inout Int64) throws -> T) throws -> T {
        try state.withLockForWriting { tables in
            let result = try body(&tables.lastKey[root, default: 0])
            countersChanged.withLock { $0 = true }
            return result
        }
    }

    /// Closes the store, first writing what changed since the file was last written
    /// (key counters, and with deferred durability every save).
    public func close() throws {
        try state.close { current in
            defer { writerLock?.release() }
            if !isReadOnly, countersChanged.withLock({ $0 }) {
                try AtomicStoreType.write(current, to: fileURL, fileSystem: fileSystem)
            }
        }
    }

    public func readTables<T>(_ body: (RecordTables) throws -> T) throws -> T {
        try state.withLock { try body($0) }
    }

    /// The newest token. A writer holds the file's lock, so its tables are the file; a read-only
    /// store reads the file again when it changed since, so an observer sees other processes' saves.
    public func lastHistoryToken() throws -> Int64 {
        try currentTables().lastHistoryToken
    }

    public func history(after token: Int64?, limit: Int) throws -> [StoreTransaction] {
        try currentTables().history(after: token, limit: limit, store: identifier, place: fileURL.path)
    }

    /// The tables as they are, for a read-only store those of the file as it is now.
    private func currentTables() throws -> RecordTables {
        guard isReadOnly else { return try readTables { $0 } }
        let now = FileOperations.identity(fileURL)
        return try state.withLock { tables in
            try historySeen.withLock { seen in
                guard now != seen, let now else { return }
                let fresh = try AtomicStoreType.load(fileURL, inMemory: false)
                guard fresh.metadata.storeUUID == tables.metadata.storeUUID else {
                    throw StoreError(.storeReplaced, "another store replaced this one", url: fileURL)
                }
                tables = fresh
                seen = now
            }
            return tables
        }
    }

    /// Applies `body` to a copy, writes the copy to disk, and only then keeps it.
    public func writeRows<T>(_ body: (inout RecordTables) throws -> T) throws -> T {
        try state.withLockForWriting { tables in
            if deferredDurability {
                // Nothing to write yet: change the tables in place (the body is all or nothing).
                let result = try body(&tables)
                countersChanged.withLock { $0 = true }
                return result
            }
            var copy = tables
            let result = try body(&copy)
            try AtomicStoreType.write(copy, to: fileURL, fileSystem: fileSystem)
            countersChanged.withLock { $0 = false }
            tables = copy
            return result
        }
    }
}
