import Foundation
import ObjectModel
import ObjectStore

/// Read access to stored rows: all the shared engine needs from a backend that
/// keeps each object as one row (the in-memory tables, an LMDB database).
///
/// On top of it the engine gives every such backend the same semantics:
/// change-set validation, fetches through `PredicateEvaluator`, relationship
/// reads and streaming scans.
public protocol RowSource {
    /// The row of `key`, or nil.
    func row(_ key: ObjectKey) throws -> StoredRow?
    /// Primary keys of exactly `entity`, ascending, above `primaryKey`, at most `limit`.
    func primaryKeys(of entity: String, after primaryKey: Int64?, limit: Int?) throws -> [Int64]
    /// Whether an object with `key` exists (without decoding it, where the source can).
    func exists(_ key: ObjectKey) throws -> Bool
    /// How many objects of exactly `entity` there are (without reading them, where the source can).
    func rowCount(of entity: String) throws -> Int
    /// The primary keys of exactly `entity`, ascending, of every object that may match `predicate`
    /// (a superset: the evaluator still tests each), or nil to consider every object. A source
    /// that can narrow a fetch itself (PostgreSQL translates comparisons with constants to SQL)
    /// answers; the default does not.
    func candidateKeys(of entity: String, matching predicate: ObjectPredicate) throws -> [Int64]?
    /// The keys of the objects a fetch of `request` gives — its predicate, sort, offset and limit
    /// applied — in the fetch's order, when the source answers the whole request itself with the
    /// evaluator's exact answers (PostgreSQL, in one SELECT); nil to let the evaluator do it. The
    /// request's predicate has been checked against the model.
    func fetchedKeys(_ request: FetchRequest, model: ManagedObjectModel) throws -> [ObjectKey]?
    /// How many objects a fetch of `request` gives, when the source counts them itself exactly; nil otherwise.
    func fetchedCount(_ request: FetchRequest, model: ManagedObjectModel) throws -> Int?
    /// A batch of a streaming scan of exactly `entity` (see `PersistentStore.scan(entity:after:limit:)`).
    /// The default reads each key's row; a source that walks its rows in key order reads them as it goes.
    func scan(entity: String, after primaryKey: Int64?, limit: Int, model: ManagedObjectModel) throws -> [ObjectRecord]
    /// The same batch in slots (see `PersistentStore.scanBatch(entity:after:limit:)`). The default
    /// lays out the records of ``scan(entity:after:limit:model:)``; a source that can decode its rows
    /// straight into the slots does.
    func scanBatch(_ entity: EntityDescription, after primaryKey: Int64?, limit: Int, model: ManagedObjectModel) throws -> RecordBatch
    /// ``orderedMembers(of:relationship:model:)`` of many objects, in the order of `keys`. The
    /// default reads them one at a time; a source that can read only the lists does.
    func orderedMembers(of keys: [ObjectKey], relationship: String, model: ManagedObjectModel) throws -> [OrderedMembers]
}

extension RowSource {
    public func exists(_ key: ObjectKey) throws -> Bool { try row(key) != nil }
    public func rowCount(of entity: String) throws -> Int { try primaryKeys(of: entity, after: nil, limit: nil).count }
    public func candidateKeys(of entity: String, matching predicate: ObjectPredicate) throws -> [Int64]? { nil }
    public func fetchedKeys(_ request: FetchRequest, model: ManagedObjectModel) throws -> [ObjectKey]? { nil }
    public func fetchedCount(_ request: FetchRequest, model: ManagedObjectModel) throws -> Int? { nil }
    public func scanBatch(_ entity: EntityDescription, after primaryKey: Int64?, limit: Int, model: ManagedObjectModel) throws -> RecordBatch {
        var batch = RecordBatch(entity: entity, capacity: limit)
        for record in try scan(entity: entity.name, after: primaryKey, limit: limit, model: model) { try batch.append(record) }
        return batch
    }

    public func orderedMembers(of keys: [ObjectKey], relationship: String, model: ManagedObjectModel) throws -> [OrderedMembers] {
        try keys.map { try orderedMembers(of: $0, relationship: relationship, model: model) }
    }

    /// The record of a row, with to-one relationships whose target no longer exists left out.
    /// - Throws: `StoreError` with code `corrupt` for a to-one that holds several objects.
    public func record(_ key: ObjectKey, _ row: StoredRow, model: ManagedObjectModel) throws -> ObjectRecord {
        var toOne: [String: ObjectKey] = [:]
        if let entity = model.entity(named: key.entity) {
            for relationship in entity.relationships where !relationship.isToMany {
                guard let targets = row.relationships[relationship.name] else { continue }
                guard targets.count <= 1 else {
                    throw StoreError(.corrupt, "\(key).\(relationship.name) is a to-one but holds \(targets.count) objects")
                }
                if let target = targets.first, try exists(target) { toOne[relationship.name] = target }
            }
        }
        return ObjectRecord(key: key, version: row.version, attributes: row.attributes, toOne: toOne)
    }

    /// Checks a change set completely before anything is applied, so a save is all or nothing:
    /// versions first (`ChangeSet.checkVersions(storeID:version:)`: a stale change is a
    /// conflict), the model's rules (`ChangeSet.checkShape(model:)`), then what needs the rows: no
    /// inserted key in use in its hierarchy, every target existing after the change (when
    /// `checkingReferences`), every updated or deleted object existing at the version expected.
    public func validate(_ changes: ChangeSet, model: ManagedObjectModel, storeID: UUID, checkingReferences: Bool = true) throws {
        let checkingReferences = checkingReferences && changes.checksReferences
        try changes.checkVersions(storeID: storeID) { try row($0)?.version }
        try changes.checkShape(model: model)
        let deleted = Set(changes.deleted.map(\.key))
        var inserted: Set<ObjectKey> = []
        for record in changes.inserted {
            let root = model.entity(named: record.key.entity)!.rootName
            if try model.entity(named: root)!.kindNames.contains(where: { try exists(ObjectKey($0, record.key.primaryKey)) }) {
                throw StoreError(.invalidChange, "cannot insert \(record.key): primary key \(record.key.primaryKey) is in use in \(root)'s hierarchy")
            }
            inserted.insert(record.key)
        }
        if checkingReferences {
            func exists(_ target: ObjectKey, _ source: ObjectKey, _ name: String) throws {
                guard !deleted.contains(target), try inserted.contains(target) || self.exists(target) else {
                    throw StoreError(.invalidChange, "\(source).\(name): \(target) does not exist")
                }
            }
            for record in changes.inserted {
                for (name, target) in record.toOne { try exists(target, record.key, name) }
                for (name, targets) in record.toMany { for target in targets { try exists(target, record.key, name) } }
            }
            for update in changes.updated {
                for (name, target) in update.toOne { if let target { try exists(target, update.key, name) } }
                for (name, targets) in update.toMany { for target in targets { try exists(target, update.key, name) } }
            }
        }
        for update in changes.updated {
            guard !deleted.contains(update.key), try exists(update.key) else {
                throw StoreError(.invalidChange, "cannot update \(update.key): it does not exist")
            }
        }
        for deletion in changes.deleted {
            guard try exists(deletion.key) else { throw StoreError(.invalidChange, "cannot delete \(deletion.key): it does not exist") }
        }
        try checkUniqueness(changes, model: model)
    }

    /// `ChangeSet.checkUniqueness(model:url:stored:holders:)` over these rows: the stored
    /// objects of a constraint's entities are read once per save that touches the constraint.
    public func checkUniqueness(_ changes: ChangeSet, model: ManagedObjectModel, url: URL? = nil) throws {
        guard model.entityDescriptions.contains(where: { !$0.uniquenessConstraints.isEmpty }) else { return }
        func field(_ row: StoredRow, _ name: String) -> UniqueField? {
            row.attributes[name].map(UniqueField.value) ?? row.relationships[name]?.first.map(UniqueField.object)
        }
        var byValues: [UniquenessConstraint: [[UniqueField]: [ObjectKey]]] = [:]
        try changes.checkUniqueness(model: model, url: url, stored: { key, names in
            try row(key).map { row in names.map { field(row, $0) } }
        }, holders: { constraint, values in
            if byValues[constraint] == nil {
                var index: [[UniqueField]: [ObjectKey]] = [:]
                for kind in model.entity(named: constraint.entity)?.kindNames ?? [] {
                    for pk in try primaryKeys(of: kind, after: nil, limit: nil) {
                        let key = ObjectKey(kind, pk)
                        guard let row = try row(key) else { continue }
                        let fields = constraint.properties.compactMap { field(row, $0) }
                        if fields.count == constraint.properties.count { index[fields, default: []].append(key) }
                    }
                }
                byValues[constraint] = index
            }
            return byValues[constraint]![values] ?? []
        })
    }

    /// The rows a validated change set writes: deletions, then every inserted and
    /// updated row in full, and, when `completing`, the rows whose inverse sides the
    /// change set moves (see `completeInverses(_:_:_:model:deleted:)`). A bulk insert
    /// that does not check references does not complete: its caller writes both sides.
    public func writes(for changes: ChangeSet, model: ManagedObjectModel, completing: Bool = true) throws -> (deleted: [ObjectKey], put: [(ObjectKey, StoredRow)], lastKeys: [String: Int64]) {
        var rows = PendingRows()
        var lastKeys: [String: Int64] = [:]
        var before: [RelationshipSide: [ObjectKey]] = [:]
        for record in changes.inserted {
            var row = StoredRow(version: Swift.max(1, record.version), attributes: record.attributes, relationships: [:])
            for (name, targets) in record.toMany { row.setList(name, targets, orderKeys: record.orderKeys[name]) }
            for (name, target) in record.toOne { row.relationships[name] = [target] }
            rows.put(record.key, row)
            let root = model.entity(named: record.key.entity)!.rootName
            lastKeys[root] = Swift.max(lastKeys[root, default: 0], record.key.primaryKey)
        }
        for update in changes.updated {
            if rows.rows[update.key] == nil {
                guard let current = try row(update.key) else { throw StoreError(.invalidChange, "cannot update \(update.key): it does not exist") }
                rows.put(update.key, current)
            }
            // What the store held before the change set (a second update of one object does not move it).
            for name in Array(update.toOne.keys) + Array(update.toMany.keys) where before[RelationshipSide(update.key, name)] == nil {
                before[RelationshipSide(update.key, name)] = rows.rows[update.key]!.relationships[name] ?? []
            }
            rows.rows[update.key]!.apply(update, bumpingVersion: !changes.keepsVersions)
        }
        if completing && changes.completesInverses {
            let deleted = Set(changes.deleted.map(\.key))
            try completeInverses(changes.givenRelationships, before, &rows, model: model, deleted: deleted)
            rows.finish()
        }
        return (changes.deleted.map(\.key), rows.order.map { ($0, rows.rows[$0]!) }, lastKeys)
    }

    /// Completes the other side of every relationship side the change set gives
    /// (`given`, with their stored values `before`): an object added to a side is
    /// added to the inverse side of its new partner (at the end of an ordered
    /// to-many), taken out of its old partner's, and a one-to-one partner it
    /// displaces loses it. Sides the change set gives itself are left as given
    /// (``ChangeSet/checkInverses(model:)`` made sure they agree); objects that do
    /// not exist (deleted, or not inserted yet) are skipped. Rows changed only
    /// here keep their versions.
    /// Rows not in `rows` are read with `read` (the source's own rows by default).
    func completeInverses(_ given: [RelationshipSide: [ObjectKey]], _ before: [RelationshipSide: [ObjectKey]],
                          _ rows: inout PendingRows, model: ManagedObjectModel, deleted: Set<ObjectKey>,
                          read: ((ObjectKey) throws -> StoredRow?)? = nil) throws {
        func load(_ key: ObjectKey) throws -> Bool {
            if rows.rows[key] != nil { return true }
            guard !deleted.contains(key) else { return false }
            let found = try read.map { try $0(key) } ?? row(key)
            guard let row = found else { return false }
            rows.load(key, row)
            return true
        }
        func remove(_ key: ObjectKey, from side: RelationshipSide) throws {
            guard given[side] == nil, try load(side.key) else { return }
            rows.remove(key, from: side)
        }
        for (side, after) in given.sorted(by: { ($0.key.key, $0.key.name) < ($1.key.key, $1.key.name) }) {
            guard let inverseName = model.entity(named: side.key.entity)?.relationshipsByName[side.name]?.inverse else { continue }
            let was = before[side] ?? []
            let now = Set(after)
            let old = Set(was)
            for target in was where !now.contains(target) { try remove(side.key, from: RelationshipSide(target, inverseName)) }
            for target in after where !old.contains(target) {
                let back = RelationshipSide(target, inverseName)
                guard given[back] == nil, try load(target),
                      let inverse = model.entity(named: target.entity)?.relationshipsByName[inverseName] else { continue }
                if inverse.isToMany {
                    rows.append(side.key, to: back)
                } else if let displaced = rows.set(back, to: side.key), displaced != side.key {
                    // A one-to-one partner the target had before loses it.
                    try remove(target, from: RelationshipSide(displaced, side.name))
                }
            }
        }
    }
}

/// The rows one change set writes, in the order they were first changed; the rows
/// completion only read; for each to-many side completion touches, its members as a set,
/// so that adding or removing many members of one long list costs one pass over it.
struct PendingRows {
    var rows: [ObjectKey: StoredRow] = [:]
    private(set) var order: [ObjectKey] = []
    private var changed: Set<ObjectKey> = []
    private var members: [RelationshipSide: Set<ObjectKey>] = [:]
    /// Sides members were removed from: their lists are filtered once, in ``finish()``.
    private var shrunk: Set<RelationshipSide> = []

    /// Adds a row the change set writes.
    mutating func put(_ key: ObjectKey, _ row: StoredRow) {
        rows[key] = row
        markChanged(key)
    }

    /// Adds a stored row, written only if completion changes it.
    mutating func load(_ key: ObjectKey, _ row: StoredRow) {
        if rows[key] == nil { rows[key] = row }
    }

    private mutating func markChanged(_ key: ObjectKey) {
        if changed.insert(key).inserted { order.append(key) }
    }

    private mutating func memberSet(_ side: RelationshipSide) -> Set<ObjectKey> {
        if let set = members[side] { return set }
        let set = Set(rows[side.key]!.relationships[side.name] ?? [])
        members[side] = set
        return set
    }

    mutating func remove(_ key: ObjectKey, from side: RelationshipSide) {
        guard memberSet(side).contains(key) else { return }
        members[side]!.remove(key)
        shrunk.insert(side)
        markChanged(side.key)
    }

    mutating func append(_ key: ObjectKey, to side: RelationshipSide) {
        guard !memberSet(side).contains(key) else { return }
        members[side]!.insert(key)
        rows[side.key]!.relationships[side.name, default: []].append(key)
        // A list with order keys numbers the new member on from its last.
        if let last = rows[side.key]!.orderKeys[side.name]?.last { rows[side.key]!.orderKeys[side.name]!.append(last + 1) }
        markChanged(side.key)
    }

    /// Sets a to-one side to `key`; returns what it named before.
    mutating func set(_ side: RelationshipSide, to key: ObjectKey) -> ObjectKey? {
        let before = rows[side.key]!.relationships[side.name]?.first
        guard before != key else { return before }
        rows[side.key]!.relationships[side.name] = [key]
        members[side] = [key]
        markChanged(side.key)
        return before
    }

    /// Applies the removals: each shrunk list filtered once, its order kept.
    mutating func finish() {
        for side in shrunk {
            let keep = members[side]!
            let kept = rows[side.key]!.members(side.name, keeping: keep.contains)
            rows[side.key]!.setList(side.name, kept.keys, orderKeys: kept.orderKeys)
        }
        shrunk = []
    }
}

/// A row source shared by the subjects of one fetch.
final class RowSourceBox<Source: RowSource> {
    let source: Source
    let model: ManagedObjectModel

    init(source: Source, model: ManagedObjectModel) {
        self.source = source
        self.model = model
    }
}

/// A stored row as predicates see it.
struct RowSubject<Source: RowSource>: PredicateSubject {
    let box: RowSourceBox<Source>
    let key: ObjectKey
    let row: StoredRow

    func record() throws -> ObjectRecord { try box.source.record(key, row, model: box.model) }

    var identity: Value { .string(key.description) }

    func resolve(_ name: String) throws -> ResolvedKey? {
        guard let entity = box.model.entity(named: key.entity) else { return nil }
        if entity.attributesByName[name] != nil { return .value(row.attributes[name]) }
        guard let relationship = entity.relationshipsByName[name] else { return nil }
        let targets = try (row.relationships[name] ?? []).compactMap { target in
            try box.source.row(target).map { RowSubject(box: box, key: target, row: $0) }
        }
        return relationship.isToMany ? .objects(targets) : .object(targets.first)
    }
}
