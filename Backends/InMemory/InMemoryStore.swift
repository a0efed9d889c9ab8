import Foundation
import ObjectModel
import ObjectStore
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

    let database: MemoryDatabase
    private let isClosed = Atomic<Bool>(false)

    /// Creates a fresh anonymous store with `model`.
    public convenience init(model: ManagedObjectModel) throws {
        let metadata = try StoreMetadata(storeType: Self.typeName, model: model)
        try self.init(database: MemoryDatabase(metadata: metadata), url: nil, model: model, readOnly: false)
    }

    init(database: MemoryDatabase, url: URL?, model: ManagedObjectModel, readOnly: Bool) throws {
        let metadata = database.tables.withLock { $0.metadata }
        let compatibility = metadata.compatibility(with: model)
        guard compatibility.isCompatible else {
            throw StoreError(.incompatibleModel, "the store was made with another model: \(compatibility)",
                             url: url, compatibility: compatibility)
        }
        self.database = database
        self.url = url
        self.model = model
        self.isReadOnly = readOnly
        self.identifier = metadata.storeUUID ?? UUID()
    }

    public func allocatePrimaryKeys(entity: String, count: Int) throws -> ClosedRange<Int64> {
        try writeTables { try $0.allocatePrimaryKeys(entity: entity, count: count, model: model) }
    }

    public func close() throws {
        isClosed.store(true, ordering: .releasing)
    }

    public func readTables<T>(_ body: (RecordTables) throws -> T) throws -> T {
        if isClosed.load(ordering: .acquiring) { throw StoreError(.closed, "the store is closed", url: url) }
        return try database.tables.withLock { try body($0) }
    }

    public func writeTables<T>(_ body: (inout RecordTables) throws -> T) throws -> T {
        if isClosed.load(ordering: .acquiring) { throw StoreError(.closed, "the store is closed", url: url) }
        if isReadOnly { throw StoreError(.readOnly, "the store was opened read-only", url: url) }
        return try database.tables.withLock { try body(&$0) }
    }
}

/// The data of one in-memory store, shared by every open handle to it.
final class MemoryDatabase: Sendable {
    let tables: Mutex<RecordTables>

    init(metadata: StoreMetadata) {
        tables = Mutex(RecordTables(metadata: metadata))
    }
}
