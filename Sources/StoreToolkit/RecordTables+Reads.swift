import Foundation
import ObjectModel
import ObjectStore

extension RowSource {
    /// The record with `key`, or nil.
    public func record(for key: ObjectKey, model: ManagedObjectModel) throws -> ObjectRecord? {
        try row(key).map { try record(key, $0, model: model) }
    }

    /// The keys across a relationship (see `PersistentStore.relatedKeys(of:relationship:)`).
    public func relatedKeys(of key: ObjectKey, relationship: String, model: ManagedObjectModel) throws -> [ObjectKey] {
        try orderedMembers(of: key, relationship: relationship, model: model).keys
    }

    /// The members across a relationship with their order keys (see `PersistentStore.orderedMembers(of:relationship:)`).
    public func orderedMembers(of key: ObjectKey, relationship: String, model: ManagedObjectModel) throws -> OrderedMembers {
        guard let entity = model.entity(named: key.entity) else {
            throw StoreError(.invalidFetch, "no entity named \(key.entity)")
        }
        guard let description = entity.relationshipsByName[relationship] else {
            throw StoreError(.invalidFetch, "\(key.entity) has no relationship named \(relationship)")
        }
        guard let row = try row(key) else { return OrderedMembers([]) }
        let members = try row.members(relationship, keeping: exists)
        return description.isOrdered || !description.isToMany ? members : OrderedMembers(members.keys.sorted())
    }

    /// A batch of a streaming scan (see `PersistentStore.scan(entity:after:limit:)`).
    public func scan(entity: String, after primaryKey: Int64?, limit: Int, model: ManagedObjectModel) throws -> [ObjectRecord] {
        guard model.entity(named: entity) != nil else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        return try primaryKeys(of: entity, after: primaryKey, limit: limit).compactMap { pk in
            let key = ObjectKey(entity, pk)
            return try row(key).map { try record(key, $0, model: model) }
        }
    }

    /// The records a request matches, sorted, with its offset and limit applied.
    public func fetch(_ request: FetchRequest, model: ManagedObjectModel) throws -> [ObjectRecord] {
        if try checked(request, model: model), let keys = try fetchedKeys(request, model: model) {
            // The source answered the whole request: read only the rows of the page.
            return try keys.compactMap { key in try row(key).map { try record(key, $0, model: model) } }
        }
        // A page holds no more than the objects before its end: only those are kept while matching.
        // (As in SQL, rows past the page's end may go unread: a predicate that fails on one of
        // them, or a damaged row there, is not reported by this fetch.)
        let end = request.fetchLimit.flatMap { limit in
            let (sum, overflow) = Swift.max(0, request.fetchOffset).addingReportingOverflow(Swift.max(0, limit))
            return overflow ? nil : sum
        }
        let matches = try matching(request, model: model, keeping: end)
        return try matches.dropFirst(Swift.max(0, request.fetchOffset)).prefix(request.fetchLimit ?? Int.max).map { try $0.record() }
    }

    /// How many records ``fetch(_:model:)`` would return.
    public func count(_ request: FetchRequest, model: ManagedObjectModel) throws -> Int {
        if try checked(request, model: model), let count = try fetchedCount(request, model: model) { return count }
        if request.predicate == nil, let entity = model.entity(named: request.entityName) {
            // No predicate: count keys, decode nothing.
            var total = 0
            for name in request.includesSubentities ? entity.kindNames : [entity.name] {
                total += try rowCount(of: name)
            }
            return Swift.min(Swift.max(0, total - Swift.max(0, request.fetchOffset)), request.fetchLimit ?? Int.max)
        }
        var unsorted = request
        unsorted.sortDescriptors = []
        let total = try matching(unsorted, model: model).count
        return Swift.min(Swift.max(0, total - Swift.max(0, request.fetchOffset)), request.fetchLimit ?? Int.max)
    }

    /// Whether the request names an entity of the model and its predicate applies to it (else the
    /// fetch throws, naming what is wrong). True: a source may answer it.
    private func checked(_ request: FetchRequest, model: ManagedObjectModel) throws -> Bool {
        guard let entity = model.entity(named: request.entityName) else {
            throw StoreError(.invalidFetch, "no entity named \(request.entityName)")
        }
        if let predicate = request.predicate { try PredicateEvaluator.check(predicate, on: entity, in: model) }
        return true
    }

    /// How many primary keys a fetch asks its source for at a time.
    private static var keyChunk: Int { 4_096 }

    /// The subjects a request matches, sorted; with `best`, only its first `best` (a page's end:
    /// no more rows are held at once than twice that, however many match).
    private func matching(_ request: FetchRequest, model: ManagedObjectModel, keeping best: Int? = nil) throws -> [RowSubject<Self>] {
        guard let entity = model.entity(named: request.entityName) else {
            throw StoreError(.invalidFetch, "no entity named \(request.entityName)")
        }
        if let predicate = request.predicate { try PredicateEvaluator.check(predicate, on: entity, in: model) }
        let box = RowSourceBox(source: self, model: model)
        var subjects: [RowSubject<Self>] = []
        // Kept rows are cut back to `best` when they reach twice that (at least 1,024).
        let cutAt = best.map { Swift.max($0 > Int.max / 2 ? Int.max : 2 * $0, 1_024) }
        // Sorted by the descriptors, then by primary key (unique in an entity's tree): a total
        // order, so the first `best` of the kept ones are the first `best` of all.
        func sortAndKeep(_ count: Int) throws {
            try PredicateEvaluator.sort(&subjects, by: request.sortDescriptors) { $0.key.primaryKey < $1.key.primaryKey }
            if subjects.count > count { subjects.removeSubrange(count...) }
        }
        for name in request.includesSubentities ? entity.kindNames : [entity.name] {
            let candidates = try request.predicate.flatMap { try candidateKeys(of: name, matching: $0) }
            var matched = 0, after: Int64? = nil
            // The keys a few thousand at a time (all at once when the source named candidates).
            scanning: while true {
                let keys = try candidates ?? primaryKeys(of: name, after: after, limit: Self.keyChunk)
                for pk in keys {
                    // In primary-key order (no descriptors), a kind gives at most `best` of the first `best`.
                    if let best, request.sortDescriptors.isEmpty, matched >= best { break scanning }
                    let key = ObjectKey(name, pk)
                    guard let row = try row(key) else { continue }
                    let subject = RowSubject(box: box, key: key, row: row)
                    if let predicate = request.predicate, try !PredicateEvaluator.evaluate(predicate, on: subject) { continue }
                    subjects.append(subject)
                    matched += 1
                    if let best, let cutAt, subjects.count >= cutAt { try sortAndKeep(best) }
                }
                guard candidates == nil, keys.count == Self.keyChunk, let last = keys.last else { break }
                after = last
            }
        }
        try sortAndKeep(best ?? subjects.count)
        return subjects
    }
}

extension RecordTables {
    /// A batch of a streaming scan (see `PersistentStore.scanBatch(entity:after:limit:)`), read
    /// slot by slot: a packed row is decoded straight into the batch, a dictionary row read by
    /// slot name; no record is built. It holds what ``scan(entity:after:limit:model:)`` gives.
    public func scanBatch(_ entity: EntityDescription, after primaryKey: Int64?, limit: Int, model _: ManagedObjectModel) throws -> RecordBatch {
        var batch = RecordBatch(entity: entity, capacity: limit)
        guard let table = tables[entity.name], limit > 0 else { return batch }
        let layout = entity.layout
        let start = primaryKey.map { table.firstIndex(after: $0) } ?? 0
        let end = start + Swift.min(limit, table.order.count - start)
        guard start < end else { return batch }
        // Runs of packed rows decode straight into the batch, a run at a time.
        if let packed = table.packed {
            let attributeSlots = packed.columns.map { layout.attributeSlot($0) }
            let toOneSlots = packed.relationships.map { layout.toOneSlot($0) }
            let targets = packed.names.map { tables[$0] }
            let exists = { (name: Int, pk: Int64) in targets[name]?.contains(pk) ?? false }
            if table.isPackedOnly {
                try packed.decode(rows: start..<end, into: &batch, attributeSlots: attributeSlots, toOneSlots: toOneSlots, exists: exists)
                return batch
            }
            var run: Range<Int>? = nil
            func flush() throws {
                if let rows = run { try packed.decode(rows: rows, into: &batch, attributeSlots: attributeSlots, toOneSlots: toOneSlots, exists: exists) }
                run = nil
            }
            for pk in table.order[start..<end] {
                if table.rows[pk] == nil, let index = table.packedIndex(pk) {
                    if let rows = run, rows.upperBound == index { run = rows.lowerBound..<(index + 1) } else { try flush(); run = index..<(index + 1) }
                    continue
                }
                try flush()
                try append(pk, try table.row(pk), to: &batch)
            }
            try flush()
        } else {
            for pk in table.order[start..<end] { try append(pk, try table.row(pk), to: &batch) }
        }
        return batch
    }

    /// Adds a decoded row to a batch, to-ones whose target no longer exists left out.
    private func append(_ pk: Int64, _ row: StoredRow?, to batch: inout RecordBatch) throws {
        guard let row else { return }
        let layout = batch.layout
        let r = batch.appendRow(primaryKey: pk, version: row.version)
        for (slot, attribute) in layout.attributes.enumerated() { batch[r, attribute: slot] = row.attributes[attribute.name] }
        for (slot, relationship) in layout.toOne.enumerated() {
            guard let targets = row.relationships[relationship.name] else { continue }
            guard targets.count <= 1 else {
                throw StoreError(.corrupt, "\(ObjectKey(batch.entity.name, pk)).\(relationship.name) is a to-one but holds \(targets.count) objects")
            }
            if let target = targets.first, exists(target) { batch[r, toOne: slot] = target }
        }
    }
}

