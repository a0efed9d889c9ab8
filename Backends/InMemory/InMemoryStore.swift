import Foundation
import ObjectModel
import ObjectStore
import StoreToolkit
import Synchronization

/// The reference implementation of the store contract, kept entirely in memory.
///
/// An anonymous store (`url: nil`) is private to the instance and costs
/// microseconds to create: what test suites use. A store opened at a URL is a
/// named database that lives as long as the process, so it can be closed,
/// reopened, read without a model, migrated, replaced and destroyed like any
/// other store; it occupies no files.
///
/// ```swift
/// InMemoryStore.register()
/// let store = try InMemoryStore(model: model)
/// ```
public final class InMemoryStore: RecordTablesStore {
    /// The registered type name, `memory`.
    public static let typeName = "memory"

    /// Registers the `memory` store type (with `registry`, the shared one by default).
    public static func register(in registry: StoreTypeRegistry = .shared) {
        registry.register(InMemoryStoreType())
    }

    public var storeType: String { Self.typeName }
    public let url: URL?
    public let identifier: UUID
    public let model: ManagedObjectModel
    public let isReadOnly: Bool
    public let historyPolicy: HistoryPolicy

    let database: MemoryDatabase
    /// The database while the store is open.
    private let state: StoreState<MemoryDatabase>

    /// Creates a fresh anonymous store with `model`.
    public convenience init(model: ManagedObjectModel) throws {
        try self.init(database: MemoryDatabase(model: model), url: nil, model: model, options: StoreOptions())
    }

    init(database: MemoryDatabase, url: URL?, model: ManagedObjectModel, options: StoreOptions) throws {
        let readOnly = options.readOnly
        historyPolicy = HistoryPolicy(options)
        if let new = database.newModel, new.model.versionHashes == model.versionHashes {
            // A new database of this model: compatible by construction, its metadata not written yet.
            identifier = new.uuid
        } else {
            let metadata = try database.withTables { $0.metadata }
            try metadata.checkCompatible(with: model, url: url)
            identifier = metadata.storeUUID ?? UUID()
        }
        self.database = database
        state = StoreState(database, url: url, readOnly: readOnly)
        self.url = url
        self.model = model
        self.isReadOnly = readOnly
    }

    public func metadata() throws -> StoreMetadata {
        try state.open().withTables { $0.metadata }
    }

    public func setMetadata(_ metadata: StoreMetadata) throws {
        try writeRows { tables in
            tables.metadata = metadata
            database.dropPendingMetadata()
        }
    }

    /// A copy of the tables as they are now, their metadata complete.
    public func snapshot() throws -> any PersistentStore {
        _ = try metadata()
        return try tablesSnapshot()
    }

    public func close() throws {
        try state.close()
    }

    public func readTables<T>(_ body: (RecordTables) throws -> T) throws -> T {
        try state.open().tables.withLock { try body($0) }
    }

    public func writeRows<T>(_ body: (inout RecordTables) throws -> T) throws -> T {
        let result = try state.openForWriting().tables.withLock { try body(&$0) }
        // No files to watch: observers of this store hear of the save from this process.
        HistoryNotifier.post()
        return result
    }
}

/// The data of one in-memory store, shared by every open handle to it.
///
/// A new database records its model in its metadata (hashes, checksum, the embedded
/// model) only when the metadata is first read: creating one for a test costs no
/// metadata at all. ``tables`` holds empty metadata until then; read the metadata
/// through ``withTables(_:)``.
final class MemoryDatabase: Sendable {
    let tables: Mutex<RecordTables>
    /// The model and UUID of a new database whose metadata is not written yet.
    private let pending: Mutex<(model: ManagedObjectModel, uuid: UUID)?>

    /// A database with `metadata`.
    init(metadata: StoreMetadata) {
        tables = Mutex(RecordTables(metadata: metadata))
        pending = Mutex(nil)
    }

    /// A new, empty database of `model`, its metadata written when first read.
    init(model: ManagedObjectModel, uuid: UUID = UUID()) {
        tables = Mutex(RecordTables(metadata: StoreMetadata()))
        pending = Mutex((model, uuid))
    }

    /// The model and UUID of a new database whose metadata is not written yet.
    var newModel: (model: ManagedObjectModel, uuid: UUID)? { pending.withLock { $0 } }

    /// Runs `body` on the tables, their metadata written first if it was pending.
    func withTables<T>(_ body: (inout RecordTables) throws -> T) throws -> T {
        try tables.withLock { tables in
            if let new = pending.withLock({ $0 }) {
                tables.metadata = try StoreMetadata(storeType: InMemoryStore.typeName, uuid: new.uuid, model: new.model)
                pending.withLock { $0 = nil }
            }
            return try body(&tables)
        }
    }

    /// Forgets a pending metadata (the metadata was replaced). Call it under ``tables``' lock.
    func dropPendingMetadata() {
        pending.withLock { $0 = nil }
    }
}
