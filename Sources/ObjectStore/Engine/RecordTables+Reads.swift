import Foundation
import ObjectModel

extension RecordTables {
    /// The record with `key`, or nil.
    public func record(for key: ObjectKey, model: ManagedObjectModel) -> ObjectRecord? {
        tables[key.entity]?.rows[key.primaryKey].map { record(key, $0, model: model) }
    }

    /// The keys across a relationship (see ``PersistentStore/relatedKeys(of:relationship:)``).
    public func relatedKeys(of key: ObjectKey, relationship: String, model: ManagedObjectModel) throws -> [ObjectKey] {
        guard let entity = model.entity(named: key.entity) else {
            throw StoreError(.invalidFetch, "no entity named \(key.entity)")
        }
        guard let description = entity.relationshipsByName[relationship] else {
            throw StoreError(.invalidFetch, "\(key.entity) has no relationship named \(relationship)")
        }
        guard let row = tables[key.entity]?.rows[key.primaryKey] else { return [] }
        let keys = (row.relationships[relationship] ?? []).filter(exists)
        return description.isOrdered || !description.isToMany ? keys : keys.sorted()
    }

    /// A batch of a streaming scan (see ``PersistentStore/scan(entity:after:limit:)``).
    public func scan(entity: String, after primaryKey: Int64?, limit: Int, model: ManagedObjectModel) throws -> [ObjectRecord] {
        guard model.entity(named: entity) != nil else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        guard let table = tables[entity] else { return [] }
        var index = primaryKey.map { table.firstIndex(after: $0) } ?? 0
        var batch: [ObjectRecord] = []
        batch.reserveCapacity(Swift.min(limit, table.order.count))
        while index < table.order.count && batch.count < limit {
            let pk = table.order[index]
            batch.append(record(ObjectKey(entity, pk), table.rows[pk]!, model: model))
            index += 1
        }
        return batch
    }

    /// The records a request matches, sorted, with its offset and limit applied.
    public func fetch(_ request: FetchRequest, model: ManagedObjectModel) throws -> [ObjectRecord] {
        let matches = try matching(request, model: model)
        return matches.dropFirst(Swift.max(0, request.fetchOffset)).prefix(request.fetchLimit ?? Int.max).map(\.record)
    }

    /// How many records ``fetch(_:model:)`` would return.
    public func count(_ request: FetchRequest, model: ManagedObjectModel) throws -> Int {
        var unsorted = request
        unsorted.sortDescriptors = []
        let total = try matching(unsorted, model: model).count
        return Swift.min(Swift.max(0, total - Swift.max(0, request.fetchOffset)), request.fetchLimit ?? Int.max)
    }

    /// Reserves `count` keys in `entity`'s hierarchy.
    public mutating func allocatePrimaryKeys(entity: String, count: Int, model: ManagedObjectModel) throws -> ClosedRange<Int64> {
        guard let description = model.entity(named: entity) else {
            throw StoreError(.invalidChange, "no entity named \(entity)")
        }
        guard count > 0 else { throw StoreError(.invalidChange, "cannot allocate \(count) primary keys") }
        let first = lastKey[description.rootName, default: 0] + 1
        let last = first + Int64(count) - 1
        lastKey[description.rootName] = last
        return first...last
    }

    private func matching(_ request: FetchRequest, model: ManagedObjectModel) throws -> [RecordSubject] {
        guard let entity = model.entity(named: request.entityName) else {
            throw StoreError(.invalidFetch, "no entity named \(request.entityName)")
        }
        let snapshot = RecordSnapshot(state: self, model: model)
        var subjects: [RecordSubject] = []
        for name in request.includesSubentities ? entity.kindNames : [entity.name] {
            guard let table = tables[name] else { continue }
            for pk in table.order {
                let subject = RecordSubject(snapshot: snapshot, key: ObjectKey(name, pk), row: table.rows[pk]!)
                if let predicate = request.predicate, try !PredicateEvaluator.evaluate(predicate, on: subject) { continue }
                subjects.append(subject)
            }
        }
        try PredicateEvaluator.sort(&subjects, by: request.sortDescriptors) { $0.key.primaryKey < $1.key.primaryKey }
        return subjects
    }
}
