import Foundation
import ObjectModel

/// Batch update and batch delete: many objects changed by a store in one transaction, no
/// context and no managed object built (Core Data's `NSBatchUpdateRequest` and
/// `NSBatchDeleteRequest`). Each is recorded in the store's history as one transaction, so
/// observers see it like any save (docs/observation.md, "Batch operations").
extension PersistentStore {
    /// Sets `values` on every object `request` matches (its entity, sub-entities unless
    /// excluded, predicate; no sort, offset or limit), in one transaction; returns how many.
    ///
    /// Only attributes can be set, each to a constant (nil clears it). Every rule of the model
    /// is checked before anything is written: the type, required, ranges, lengths, patterns
    /// (``ObjectValidator/check(_:_:)``), and uniqueness constraints by the store's save.
    ///
    /// ```swift
    /// let n = try store.batchUpdate(FetchRequest(entity: "Book", predicate: ObjectPredicate("year < 1900")),
    ///                               set: ["outOfCopyright": .bool(true)], author: "nightly")
    /// ```
    /// - Throws: ``StoreError/Code/invalidChange`` for a name that is no attribute of the entity,
    ///   ``StoreError/Code/validationFailed`` for a value a rule refuses, naming the attribute,
    ///   ``StoreError/Code/conflict`` when another writer changed a matched object meanwhile.
    @discardableResult
    public func batchUpdate(_ request: FetchRequest, set values: [String: Value?], author: String?) throws -> Int {
        try recordBatchUpdate(request, set: values, author: author)
    }

    /// ``batchUpdate(_:set:author:)`` with the store's own author.
    @discardableResult
    public func batchUpdate(_ request: FetchRequest, set values: [String: Value?]) throws -> Int {
        try batchUpdate(request, set: values, author: nil)
    }

    /// Deletes every object `request` matches (no sort, offset or limit), with the model's
    /// delete rules applied, in one transaction; returns how many objects went, those the
    /// cascade took included.
    ///
    /// Cascade deletes the objects across the relationship too; nullify takes the deleted
    /// objects out of the surviving partners' inverse relationships; deny refuses the whole
    /// delete while a related object that is not deleted with it remains, naming both.
    ///
    /// - Throws: ``StoreError/Code/deleteDenied`` naming the object and the relationship that
    ///   blocks it; ``StoreError/Code/conflict`` when another writer changed an object meanwhile.
    @discardableResult
    public func batchDelete(_ request: FetchRequest, author: String?) throws -> Int {
        try recordBatchDelete(request, author: author)
    }

    /// ``batchDelete(_:author:)`` with the store's own author.
    @discardableResult
    public func batchDelete(_ request: FetchRequest) throws -> Int {
        try batchDelete(request, author: nil)
    }

    /// Checks what a batch update sets against `request`'s entity: attributes only, stored, each
    /// value allowed by every rule of the model. Returns the entity.
    /// - Throws: ``StoreError/Code/invalidChange`` or ``StoreError/Code/validationFailed`` naming the attribute.
    public func checkBatchUpdate(_ request: FetchRequest, set values: [String: Value?]) throws -> EntityDescription {
        guard let entity = model.entity(named: request.entityName) else { throw StoreError(.invalidFetch, "no entity named \(request.entityName)") }
        guard !values.isEmpty else { throw StoreError(.invalidChange, "a batch update sets at least one attribute") }
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            guard let attribute = entity.attributesByName[name] else {
                let what = entity.relationshipsByName[name] != nil ? "a relationship (a batch update sets attributes only)" : "not a property"
                throw StoreError(.invalidChange, "\(entity.name).\(name) is \(what)")
            }
            guard !attribute.isTransient else { throw StoreError(.invalidChange, "\(entity.name).\(name) is transient: nothing to store") }
            if let (_, message) = ObjectValidator.check(attribute, value).first {
                throw StoreError(.validationFailed, "\(entity.name).\(name): \(message)")
            }
        }
        return entity
    }

    /// `request` without its sort, offset and limit: what a batch operation acts on.
    static func everyMatch(_ request: FetchRequest) -> FetchRequest {
        var matching = request
        matching.sortDescriptors = []
        matching.fetchOffset = 0
        matching.fetchLimit = nil
        return matching
    }

    /// The batch update every store can do: the matching records read, then one change set
    /// saved with their versions expected.
    @discardableResult
    public func recordBatchUpdate(_ request: FetchRequest, set values: [String: Value?], author: String? = nil) throws -> Int {
        _ = try checkBatchUpdate(request, set: values)
        let records = try fetch(Self.everyMatch(request))
        guard !records.isEmpty else { return 0 }
        let updates = records.map { record in
            var update = ObjectUpdate(key: record.key, expectedVersion: record.version)
            for (name, value) in values { update.attributes[name] = value }
            return update
        }
        try save(ChangeSet(updated: updates, author: author))
        return records.count
    }

    /// The batch delete every store can do: the matching records read, the rules worked out from
    /// them, then one change set saved with their versions expected.
    @discardableResult
    public func recordBatchDelete(_ request: FetchRequest, author: String? = nil) throws -> Int {
        guard model.entity(named: request.entityName) != nil else { throw StoreError(.invalidFetch, "no entity named \(request.entityName)") }
        let found = try fetch(Self.everyMatch(request))
        guard !found.isEmpty else { return 0 }
        var plan = DeletePlan(store: self)
        for record in found { plan.add(record) }
        try plan.close()
        try save(ChangeSet(updated: try plan.nullifications(), deleted: plan.deletions, author: author))
        return plan.deletions.count
    }
}

/// The objects a batch delete removes (its matches and what they cascade to) and what it
/// changes in the survivors, worked out from the store's records.
private struct DeletePlan {
    let store: any PersistentStore
    private(set) var records: [ObjectKey: ObjectRecord] = [:]
    private var order: [ObjectKey] = []
    private var pending: [ObjectKey] = []

    init(store: any PersistentStore) { self.store = store }

    var deletions: [ObjectDeletion] { order.map { ObjectDeletion(key: $0, expectedVersion: records[$0]!.version) } }

    mutating func add(_ record: ObjectRecord) {
        guard records[record.key] == nil else { return }
        records[record.key] = record
        order.append(record.key)
        pending.append(record.key)
    }

    /// The keys across `relationship` of a doomed object.
    func targets(of key: ObjectKey, _ relationship: Relationship) throws -> [ObjectKey] {
        if !relationship.isToMany { return records[key]!.toOne[relationship.name].map { [$0] } ?? [] }
        if let given = records[key]!.toMany[relationship.name] { return given }
        return try store.relatedKeys(of: key, relationship: relationship.name)
    }

    /// Adds what cascades reach, then refuses the delete when a deny rule blocks it.
    mutating func close() throws {
        var denied: [(ObjectKey, Relationship, [ObjectKey])] = []
        while let key = pending.popLast() {
            guard let entity = store.model.entity(named: key.entity) else { continue }
            for relationship in entity.relationships where relationship.deleteRule == .cascade || relationship.deleteRule == .deny {
                let targets = try targets(of: key, relationship)
                if relationship.deleteRule == .deny { denied.append((key, relationship, targets)); continue }
                for target in targets where records[target] == nil {
                    guard let record = try store.record(for: target) else { continue }
                    add(record)
                }
            }
        }
        for (key, relationship, targets) in denied {
            if let blocking = targets.first(where: { records[$0] == nil }) {
                throw StoreError(.deleteDenied,
                                 "cannot delete \(JSONInterchange.id(key)): \(key.entity).\(relationship.name) still holds \(JSONInterchange.id(blocking)) (delete rule deny)",
                                 objectID: store.objectID(for: blocking))
            }
        }
    }

    /// The survivors' updates that take the deleted objects out of their inverse relationships.
    func nullifications() throws -> [ObjectUpdate] {
        var updates: [ObjectKey: ObjectUpdate] = [:]
        var lists: [ObjectKey: [String: OrderedMembers]] = [:]
        for key in order {
            guard let entity = store.model.entity(named: key.entity) else { continue }
            for relationship in entity.relationships {
                guard let inverseName = relationship.inverse else { continue }
                for target in try targets(of: key, relationship) where records[target] == nil {
                    guard let inverse = store.model.entity(named: target.entity)?.relationshipsByName[inverseName] else { continue }
                    guard let partner = try store.record(for: target) else { continue }
                    if updates[target] == nil { updates[target] = ObjectUpdate(key: target, expectedVersion: partner.version) }
                    if inverse.isToMany {
                        // The members that stay keep their order keys.
                        let list = try lists[target]?[inverseName] ?? partner.toMany[inverseName].map(OrderedMembers.init)
                            ?? store.orderedMembers(of: target, relationship: inverseName)
                        let kept = list.keys.indices.filter { records[list.keys[$0]] == nil }
                        let left = OrderedMembers(keys: kept.map { list.keys[$0] }, orderKeys: kept.map { list.orderKeys[$0] })
                        lists[target, default: [:]][inverseName] = left
                        updates[target]!.toMany[inverseName] = left.keys
                        if inverse.isOrdered { updates[target]!.orderKeys[inverseName] = left.orderKeys }
                    } else if partner.toOne[inverseName] == key {
                        updates[target]!.toOne[inverseName] = .some(nil)
                    }
                }
            }
        }
        return updates.keys.sorted().map { updates[$0]! }
    }
}
