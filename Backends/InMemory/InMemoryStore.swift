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
public final class InMemoryStore: PersistentStore {
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
        let metadata = database.state.withLock { $0.metadata }
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

    // MARK: Metadata

    public func metadata() throws -> StoreMetadata {
        try checkOpen()
        return database.state.withLock { $0.metadata }
    }

    public func setMetadata(_ metadata: StoreMetadata) throws {
        try checkWritable()
        database.state.withLock { $0.metadata = metadata }
    }

    // MARK: Reads

    public func fetch(_ request: FetchRequest) throws -> [ObjectRecord] {
        let matches = try matching(request)
        let window = matches.dropFirst(max(0, request.fetchOffset)).prefix(request.fetchLimit ?? Int.max)
        return window.map { $0.record }
    }

    public func count(_ request: FetchRequest) throws -> Int {
        var unbounded = request
        unbounded.sortDescriptors = []
        let total = try matching(unbounded).count
        let afterOffset = max(0, total - max(0, request.fetchOffset))
        return min(afterOffset, request.fetchLimit ?? Int.max)
    }

    public func record(for key: ObjectKey) throws -> ObjectRecord? {
        try checkOpen()
        return database.state.withLock { state in
            state.tables[key.entity]?.rows[key.primaryKey].map { state.record(key, $0, model: model) }
        }
    }

    public func relatedKeys(of key: ObjectKey, relationship: String) throws -> [ObjectKey] {
        try checkOpen()
        guard let entity = model.entity(named: key.entity) else {
            throw StoreError(.invalidFetch, "no entity named \(key.entity)")
        }
        guard let description = entity.relationshipsByName[relationship] else {
            throw StoreError(.invalidFetch, "\(key.entity) has no relationship named \(relationship)")
        }
        return database.state.withLock { state in
            guard let row = state.tables[key.entity]?.rows[key.primaryKey] else { return [] }
            let keys = (row.relationships[relationship] ?? []).filter(state.exists)
            return description.isOrdered || !description.isToMany ? keys : keys.sorted()
        }
    }

    public func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord] {
        try checkOpen()
        guard model.entity(named: entity) != nil else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        return database.state.withLock { state in
            guard let table = state.tables[entity] else { return [] }
            var index = primaryKey.map { table.firstIndex(after: $0) } ?? 0
            var batch: [ObjectRecord] = []
            batch.reserveCapacity(min(limit, table.order.count))
            while index < table.order.count && batch.count < limit {
                let pk = table.order[index]
                batch.append(state.record(ObjectKey(entity, pk), table.rows[pk]!, model: model))
                index += 1
            }
            return batch
        }
    }

    private func matching(_ request: FetchRequest) throws -> [MemorySubject] {
        try checkOpen()
        guard let entity = model.entity(named: request.entityName) else {
            throw StoreError(.invalidFetch, "no entity named \(request.entityName)")
        }
        let snapshot = MemorySnapshot(state: database.state.withLock { $0 }, model: model)
        var subjects: [MemorySubject] = []
        for name in request.includesSubentities ? entity.kindNames : [entity.name] {
            guard let table = snapshot.state.tables[name] else { continue }
            for pk in table.order {
                let subject = MemorySubject(snapshot: snapshot, key: ObjectKey(name, pk), row: table.rows[pk]!)
                if let predicate = request.predicate, try !PredicateEvaluator.evaluate(predicate, on: subject) { continue }
                subjects.append(subject)
            }
        }
        var failure: (any Error)?
        subjects.sort { a, b in
            if failure == nil, !request.sortDescriptors.isEmpty {
                do {
                    let order = try PredicateEvaluator.sortOrder(a, b, by: request.sortDescriptors)
                    if order != 0 { return order < 0 }
                } catch {
                    failure = error
                }
            }
            return a.key.primaryKey < b.key.primaryKey
        }
        if let failure { throw failure }
        return subjects
    }

    // MARK: Writes

    public func save(_ changes: ChangeSet) throws {
        try checkWritable()
        try database.state.withLock { state in
            try state.validate(changes, model: model, storeID: identifier)
            state.apply(changes, model: model)
        }
    }

    public func allocatePrimaryKeys(entity: String, count: Int) throws -> ClosedRange<Int64> {
        try checkWritable()
        guard let description = model.entity(named: entity) else {
            throw StoreError(.invalidChange, "no entity named \(entity)")
        }
        guard count > 0 else { throw StoreError(.invalidChange, "cannot allocate \(count) primary keys") }
        return database.state.withLock { state in
            let first = state.lastKey[description.rootName, default: 0] + 1
            let last = first + Int64(count) - 1
            state.lastKey[description.rootName] = last
            return first...last
        }
    }

    public func bulkInsert(_ records: [ObjectRecord]) throws {
        try save(ChangeSet(inserted: records))
    }

    public func close() throws {
        isClosed.store(true, ordering: .releasing)
    }

    private func checkOpen() throws {
        if isClosed.load(ordering: .acquiring) { throw StoreError(.closed, "the store is closed", url: url) }
    }

    private func checkWritable() throws {
        try checkOpen()
        if isReadOnly { throw StoreError(.readOnly, "the store was opened read-only", url: url) }
    }
}
