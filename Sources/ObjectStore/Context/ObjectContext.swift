import Foundation
import ObjectModel

/// The unit of work: insert, fetch, change, delete, then save or roll back.
///
/// A context keeps one ``ManagedObject`` per object ID, keeps inverse
/// relationships in step as you set them, applies delete rules and validates
/// every changed object when it saves (reporting every failure at once), and
/// refuses to save over an object someone else changed since it was read
/// (optimistic locking). It works through the store contract alone.
///
/// A context belongs to one isolation domain and is not `Sendable`; stores are.
///
/// ```swift
/// let context = ObjectContext(coordinator: coordinator)
/// let ada = try context.insert("Person")
/// ada["name"] = .string("Ada")
/// try context.save()
/// let people = try context.fetch(FetchRequest(entity: "Person", predicate: try ObjectPredicate("name BEGINSWITH 'A'")))
/// ```
public final class ObjectContext {
    /// The coordinator whose stores the context reads and writes.
    public let coordinator: StoreCoordinator

    var registered = ObjectRegistry()
    var insertedOrder: [ManagedObject] = []
    var updatedSet: Set<ObjectID> = []
    var deletedSet: Set<ObjectID> = []
    /// Primary keys reserved in a store for this context's inserts and not handed out yet,
    /// per store and hierarchy root: blocks that double in size (1, 2, 4, … up to
    /// ``largestKeyBlock``), so that n inserts take about log n + n / 4096 store round trips.
    private var reservedKeys: [KeyBlockID: (next: Int64, last: Int64, size: Int)] = [:]
    private struct KeyBlockID: Hashable {
        let store: UUID
        let root: String
    }
    /// The most keys one reservation takes.
    static let largestKeyBlock = 4_096
    /// Who this context's saves are by, in the stores' history (``StoreTransaction/author``);
    /// nil leaves it to the store's ``StoreOptions/author``. Core Data's `transactionAuthor`.
    public var transactionAuthor: String?

    /// Creates an empty context.
    public init(coordinator: StoreCoordinator) {
        self.coordinator = coordinator
    }

    /// The model of the coordinator.
    public var model: ManagedObjectModel { coordinator.model }

    /// Whether anything was inserted, changed or deleted since the last save.
    public var hasChanges: Bool { !insertedOrder.isEmpty || !updatedSet.isEmpty || !deletedSet.isEmpty }
    /// Objects inserted and not yet saved.
    public var insertedObjects: [ManagedObject] { insertedOrder.filter { !$0.isDeletedFlag } }
    /// Objects changed and not yet saved (not counting inserted ones).
    public var updatedObjects: [ManagedObject] { updatedSet.sorted().compactMap { registered[$0] }.filter { !$0.isDeletedFlag } }
    /// Objects deleted and not yet saved.
    public var deletedObjects: [ManagedObject] { deletedSet.sorted().compactMap { registered[$0] } }
    /// Every object the context holds.
    public var registeredObjects: [ManagedObject] { registered.objects.sorted { $0.objectID < $1.objectID } }

    // MARK: Insert and delete

    /// Inserts a new object of `entity`, with its attributes' default values.
    ///
    /// Its primary key is reserved in the entity's store at once, so its
    /// ``ManagedObject/objectID`` is final (no temporary IDs to swap at save). Keys are
    /// reserved in blocks, one store round trip for many inserts; keys of a block the
    /// context never hands out are skipped, never reused.
    /// - Throws: ``StoreError`` for an unknown or abstract entity, or when no store holds it.
    public func insert(_ entity: String) throws -> ManagedObject {
        guard let description = model.entity(named: entity) else {
            throw StoreError(.invalidChange, "no entity named \(entity)")
        }
        guard !description.isAbstract else { throw StoreError(.invalidChange, "entity \(entity) is abstract") }
        let store = try coordinator.store(forEntity: entity)
        let pk = try nextPrimaryKey(in: store, for: description)
        let object = ManagedObject(
            objectID: store.objectID(for: ObjectKey(entity, pk)), entity: description, context: self,
            state: .init(values: description.objectAttributes.map(\.defaultValue), toOne: [:], toMany: [:]), version: 0)
        for relationship in description.relationships where relationship.isToMany { object.state.toMany[relationship.name] = [] }
        object.isInsertedFlag = true
        registered[object.objectID] = object
        insertedOrder.append(object)
        return object
    }

    private func nextPrimaryKey(in store: any PersistentStore, for entity: EntityDescription) throws -> Int64 {
        let id = KeyBlockID(store: store.identifier, root: entity.rootName)
        if let block = reservedKeys[id], block.next <= block.last {
            reservedKeys[id]!.next += 1
            return block.next
        }
        let size = min((reservedKeys[id]?.size ?? 0) * 2, Self.largestKeyBlock)
        let keys = try store.allocatePrimaryKeys(entity: entity.name, count: max(size, 1))
        reservedKeys[id] = (keys.lowerBound + 1, keys.upperBound, max(size, 1))
        return keys.lowerBound
    }

    /// Marks an object for deletion; delete rules are applied when the context saves.
    public func delete(_ object: ManagedObject) {
        guard object.context === self, !object.isDeletedFlag else { return }
        object.isDeletedFlag = true
        deletedSet.insert(object.objectID)
    }

    // MARK: Reads

    /// The object with `id` if the context holds it (nothing is read from the store), else nil.
    public func registeredObject(for id: ObjectID) -> ManagedObject? { registered[id] }

    /// The object with `id`: the registered one, or one read from its store; nil when it does not exist.
    public func object(with id: ObjectID) throws -> ManagedObject? {
        if let object = registered[id] { return object }
        guard let store = coordinator.store(withIdentifier: id.storeIdentifier) else {
            throw StoreError(.noStore, "no attached store has UUID \(id.storeIdentifier.uuidString)", objectID: id)
        }
        return try store.record(for: id.key).map { materialize($0, from: store) }
    }

    /// The objects a request matches, including unsaved changes: inserted objects
    /// that match, changed objects judged by their current values, deleted objects left out.
    /// An object the context holds without unsaved changes takes the values the store gives
    /// when the store holds another version of it (another context saved it since); one with
    /// unsaved changes keeps them.
    public func fetch(_ request: FetchRequest) throws -> [ManagedObject] {
        guard let entity = model.entity(named: request.entityName) else {
            throw StoreError(.invalidFetch, "no entity named \(request.entityName)")
        }
        if let predicate = request.predicate { try PredicateEvaluator.check(predicate, on: entity, in: model) }
        let store = try coordinator.store(forEntity: entity.name)
        guard hasChanges else { return try materialize(request, from: store) }

        var unbounded = request
        unbounded.fetchLimit = nil
        unbounded.fetchOffset = 0
        unbounded.predicate = nil
        var candidates = try materialize(unbounded, from: store)
        let kinds = Set(request.includesSubentities ? entity.kindNames : [entity.name])
        candidates += insertedOrder.filter { kinds.contains($0.entity.name) }
        var matches: [ManagedObject] = []
        for object in candidates where !object.isDeletedFlag {
            if let predicate = request.predicate, try !PredicateEvaluator.evaluate(predicate, on: ContextSubject(object)) { continue }
            matches.append(object)
        }
        var subjects = matches.map(ContextSubject.init)
        try PredicateEvaluator.sort(&subjects, by: request.sortDescriptors) { $0.object.objectID.primaryKey < $1.object.objectID.primaryKey }
        matches = subjects.map(\.object)
        return Array(matches.dropFirst(max(0, request.fetchOffset)).prefix(request.fetchLimit ?? Int.max))
    }

    /// How many objects ``fetch(_:)`` would return.
    public func count(_ request: FetchRequest) throws -> Int {
        guard hasChanges else {
            guard let entity = model.entity(named: request.entityName) else {
                throw StoreError(.invalidFetch, "no entity named \(request.entityName)")
            }
            return try coordinator.store(forEntity: entity.name).count(request)
        }
        return try fetch(request).count
    }

    /// How many objects a fetch reads from its store at a time (see ``materialize(_:from:)``).
    static let fetchBatchSize = 1_024

    /// The objects a store fetches for `request`: the registered ones, and new ones made from the
    /// store's batches, values copied slot by slot (no record or dictionary per object).
    func materialize(_ request: FetchRequest, from store: any PersistentStore) throws -> [ManagedObject] {
        var objects: [ManagedObject] = []
        try store.fetchBatches(request, batchSize: Self.fetchBatchSize) { batch in
            let entity = model.entity(named: batch.entity.name) ?? batch.entity
            let width = batch.layout.attributes.count, links = batch.layout.toOne.count
            let transients = entity.objectAttributes.count - width
            registered.reserveCapacity(batch.count, store: store.identifier, entity: entity.name)
            objects.reserveCapacity(objects.count + batch.count)
            for row in 0..<batch.count {
                let id = store.objectID(for: batch.key(at: row))
                let existing = registered[id]
                if let existing, !existing.isRefreshable(to: batch.versions[row]) {
                    objects.append(existing)
                    continue
                }
                var values: [Value?] = []
                values.reserveCapacity(width + transients)
                values.append(contentsOf: batch.values[row * width ..< (row + 1) * width])
                if transients > 0 {
                    if let existing { values.append(contentsOf: existing.state.values[width...]) } else { values.append(contentsOf: repeatElement(nil, count: transients)) }
                }
                var toOne: [String: ObjectID] = [:]
                for slot in 0..<links {
                    if let target = batch[row, toOne: slot] { toOne[batch.layout.toOne[slot].name] = store.objectID(for: target) }
                }
                if let existing {
                    // Read again after another context saved it: the store's values, its to-manys read anew when asked.
                    existing.refresh(.init(values: values, toOne: toOne, toMany: [:]), version: batch.versions[row])
                    objects.append(existing)
                    continue
                }
                let object = ManagedObject(objectID: id, entity: entity, context: self,
                                           state: .init(values: values, toOne: toOne, toMany: [:]), version: batch.versions[row])
                registered[id] = object
                objects.append(object)
            }
        }
        return objects
    }

    /// An object's state as `record` gives it (its to-manys read when asked), the transient values `existing` holds kept.
    private func state(of record: ObjectRecord, entity: EntityDescription, from store: any PersistentStore,
                       keepingTransientsOf existing: ManagedObject?) -> ManagedObject.State {
        ManagedObject.State(
            values: zip(entity.objectAttributes.indices, entity.objectAttributes).map { slot, attribute in
                attribute.isTransient ? existing?.state.values[slot] : record.attributes[attribute.name]
            },
            toOne: record.toOne.mapValues { store.objectID(for: $0) }, toMany: [:])
    }

    /// The registered object of a record, made from it when there is none.
    func materialize(_ record: ObjectRecord, from store: any PersistentStore) -> ManagedObject {
        let id = store.objectID(for: record.key)
        let existing = registered[id]
        if let existing, !existing.isRefreshable(to: record.version) { return existing }
        let entity = model.entity(named: record.key.entity)!
        let state = self.state(of: record, entity: entity, from: store, keepingTransientsOf: existing)
        if let existing {
            existing.refresh(state, version: record.version)
            return existing
        }
        let object = ManagedObject(objectID: id, entity: entity, context: self, state: state, version: record.version)
        registered[id] = object
        return object
    }

    // MARK: Merging

    /// Brings the context up to date with a transaction saved elsewhere (another context,
    /// another process; see ``HistoryObserver``): Core Data's `mergeChanges`.
    ///
    /// An object it updated that this context holds without unsaved changes is read again; one
    /// with unsaved changes keeps them, and saving them is a conflict naming it (never a lost
    /// update). An object it deleted leaves the context, unsaved changes and all. Objects it
    /// inserted are found by the next fetch. A transaction of a store the coordinator does not
    /// hold changes nothing.
    /// - Returns: the objects read again and those that left the context.
    @discardableResult
    public func mergeChanges(from transaction: StoreTransaction) throws -> (refreshed: [ManagedObject], removed: [ManagedObject]) {
        guard let store = coordinator.store(withIdentifier: transaction.token.storeIdentifier) else { return ([], []) }
        var removed: [ManagedObject] = []
        for key in transaction.deleted {
            let id = store.objectID(for: key)
            guard let object = registered[id] else { continue }
            registered[id] = nil
            updatedSet.remove(id)
            deletedSet.remove(id)
            object.context = nil
            removed.append(object)
        }
        var refreshed: [ManagedObject] = []
        for entry in transaction.updated {
            let id = store.objectID(for: entry.key)
            guard let object = registered[id], object.changes == nil, !object.isInsertedFlag, !object.isDeletedFlag else { continue }
            guard let record = try store.record(for: entry.key) else {
                registered[id] = nil
                object.context = nil
                removed.append(object)
                continue
            }
            // Read again even at the same version: a store moves an inverse side without a new version.
            object.refresh(state(of: record, entity: object.entity, from: store, keepingTransientsOf: object), version: record.version)
            refreshed.append(object)
        }
        return (refreshed, removed)
    }

    // MARK: Rollback and reset

    /// Discards every unsaved change: inserted objects leave the context,
    /// changed ones get their saved values back, deleted ones stay.
    public func rollback() {
        for object in insertedOrder {
            registered[object.objectID] = nil
            object.context = nil
        }
        registered.forEach { object in
            if let changes = object.changes { object.state = changes.committed }
            object.changes = nil
            object.isDeletedFlag = false
        }
        insertedOrder = []
        updatedSet = []
        deletedSet = []
    }

    /// Forgets every object and every unsaved change.
    public func reset() {
        registered.forEach { $0.context = nil }
        registered.removeAll()
        insertedOrder = []
        updatedSet = []
        deletedSet = []
    }

    // MARK: Change tracking

    func willChange(_ object: ManagedObject, key: String) throws {
        guard object.context === self else { throw StoreError(.invalidChange, "\(object) belongs to another context") }
        // An inserted object's every property is new: it keeps no list of names (at 100,000 inserts,
        // a set of names per object was a fifth of the memory; see changedPropertyNames).
        guard !object.isInsertedFlag else { return }
        if object.changes == nil { object.changes = ManagedObject.Changes(committed: object.state) }
        object.changes!.keys.insert(key)
        updatedSet.insert(object.objectID)
    }

    /// The IDs of a to-many relationship, read from the store the first time.
    func toManyIDs(_ object: ManagedObject, _ relationship: Relationship) throws -> [ObjectID] {
        if let ids = object.state.toMany[relationship.name] { return ids }
        guard let store = coordinator.store(withIdentifier: object.objectID.storeIdentifier) else {
            throw StoreError(.noStore, "no attached store holds \(object)")
        }
        let ids = try store.relatedKeys(of: object.objectID.key, relationship: relationship.name).map { store.objectID(for: $0) }
        object.state.toMany[relationship.name] = ids
        if let changes = object.changes, changes.committed.toMany[relationship.name] == nil {
            changes.committed.toMany[relationship.name] = ids
        }
        return ids
    }

    private func setPrimitiveToOne(_ object: ManagedObject, _ name: String, _ id: ObjectID?) throws {
        guard object.state.toOne[name] != id else { return }
        try willChange(object, key: name)
        object.state.toOne[name] = id
    }

    private func setPrimitiveToMany(_ object: ManagedObject, _ relationship: Relationship, _ ids: [ObjectID]) throws {
        let current = try toManyIDs(object, relationship)
        guard current != ids else { return }
        try willChange(object, key: relationship.name)
        object.state.toMany[relationship.name] = ids
    }

    private func inverse(of relationship: Relationship, on object: ManagedObject) -> Relationship? {
        relationship.inverse.flatMap { object.entity.relationshipsByName[$0] }
    }

    private func checkTarget(_ target: ManagedObject, of relationship: Relationship, from source: ManagedObject) throws {
        guard target.context === self else {
            throw StoreError(.invalidChange, "\(source.entity.name).\(relationship.name): \(target) belongs to another context")
        }
        guard target.entity.isKind(of: relationship.destination) else {
            throw StoreError(.invalidChange, "\(source.entity.name).\(relationship.name): \(target) is not a \(relationship.destination)")
        }
    }

    /// Removes `source` from `target`'s side of `relationship`'s inverse.
    private func detach(_ source: ManagedObject, from target: ManagedObject, _ relationship: Relationship) throws {
        guard let inverse = inverse(of: relationship, on: target) else { return }
        if inverse.isToMany {
            try setPrimitiveToMany(target, inverse, try toManyIDs(target, inverse).filter { $0 != source.objectID })
        } else if target.state.toOne[inverse.name] == source.objectID {
            try setPrimitiveToOne(target, inverse.name, nil)
        }
    }

    /// Adds `source` to `target`'s side of `relationship`'s inverse, taking
    /// `target` away from whatever it pointed to before through a to-one inverse.
    private func attach(_ source: ManagedObject, to target: ManagedObject, _ relationship: Relationship) throws {
        guard let inverse = inverse(of: relationship, on: target) else { return }
        if inverse.isToMany {
            let ids = try toManyIDs(target, inverse)
            if !ids.contains(source.objectID) { try setPrimitiveToMany(target, inverse, ids + [source.objectID]) }
            return
        }
        if let previous = target.state.toOne[inverse.name], previous != source.objectID,
           let previousObject = try object(with: previous) {
            if relationship.isToMany {
                try setPrimitiveToMany(previousObject, relationship,
                                       try toManyIDs(previousObject, relationship).filter { $0 != target.objectID })
            } else if previousObject.state.toOne[relationship.name] == target.objectID {
                try setPrimitiveToOne(previousObject, relationship.name, nil)
            }
        }
        try setPrimitiveToOne(target, inverse.name, source.objectID)
    }

    func setToOne(_ object: ManagedObject, _ relationship: Relationship, _ target: ManagedObject?) throws {
        if let target { try checkTarget(target, of: relationship, from: object) }
        let old = object.state.toOne[relationship.name]
        guard old != target?.objectID else { return }
        if let old, let oldObject = try self.object(with: old) { try detach(object, from: oldObject, relationship) }
        if let target { try attach(object, to: target, relationship) }
        try setPrimitiveToOne(object, relationship.name, target?.objectID)
    }

    func setToMany(_ object: ManagedObject, _ relationship: Relationship, _ targets: [ManagedObject]) throws {
        for target in targets { try checkTarget(target, of: relationship, from: object) }
        var seen: Set<ObjectID> = []
        let ids = targets.map(\.objectID).filter { seen.insert($0).inserted }
        let old = try toManyIDs(object, relationship)
        let oldSet = Set(old)
        for id in old where !seen.contains(id) {
            if let removed = try self.object(with: id) { try detach(object, from: removed, relationship) }
        }
        for target in targets where !oldSet.contains(target.objectID) { try attach(object, to: target, relationship) }
        try setPrimitiveToMany(object, relationship, ids)
    }

    /// Applies the delete rules of every deleted object; see ``save()``.
    func processDeletes() throws {
        // 1. The closure of cascades.
        var work = deletedSet.sorted()
        var deny: [(ManagedObject, Relationship, [ObjectID])] = []
        var related: [(ManagedObject, Relationship, [ObjectID])] = []
        while let id = work.popLast() {
            guard let object = registered[id] else { continue }
            for relationship in object.entity.relationships where relationship.deleteRule != .noAction {
                let targets = relationship.isToMany
                    ? try toManyIDs(object, relationship)
                    : object.state.toOne[relationship.name].map { [$0] } ?? []
                switch relationship.deleteRule {
                case .cascade:
                    for target in targets where !deletedSet.contains(target) {
                        guard let targetObject = try self.object(with: target) else { continue }
                        targetObject.isDeletedFlag = true
                        deletedSet.insert(target)
                        work.append(target)
                    }
                case .deny: deny.append((object, relationship, targets))
                default: break
                }
                related.append((object, relationship, targets))
            }
        }
        // 2. Deny rules, judged on the whole closure.
        for (object, relationship, targets) in deny {
            if let blocking = targets.first(where: { !deletedSet.contains($0) }) {
                throw StoreError(.deleteDenied,
                    "cannot delete \(object.objectID.key): \(object.entity.name).\(relationship.name) still holds \(blocking.key) (delete rule deny)",
                    objectID: blocking)
            }
        }
        // 3. Nullify the surviving side of every inverse.
        for (object, relationship, targets) in related {
            for target in targets where !deletedSet.contains(target) {
                if let targetObject = try self.object(with: target) { try detach(object, from: targetObject, relationship) }
            }
        }
    }
}

/// A managed object as predicates see it: current, unsaved values included.
struct ContextSubject: PredicateSubject {
    let object: ManagedObject

    init(_ object: ManagedObject) { self.object = object }

    var identity: Value { .string(object.objectID.key.description) }

    func resolve(_ key: String) throws -> ResolvedKey? {
        if let slot = object.entity.objectSlot(key) { return .value(object.state.values[slot]) }
        guard let relationship = object.entity.relationshipsByName[key], let context = object.context else { return nil }
        if relationship.isToMany {
            let ids = try context.toManyIDs(object, relationship)
            return .objects(try ids.compactMap { try context.object(with: $0) }.map(ContextSubject.init))
        }
        let target = try object.state.toOne[key].flatMap { try context.object(with: $0) }
        return .object(target.map(ContextSubject.init))
    }
}
