import Foundation
import ObjectModel

/// One stored object.
public struct StoredRow: Sendable, Hashable {
    /// The optimistic-locking version.
    public var version: Int64
    /// Stored attribute values.
    public var attributes: [String: Value]
    /// Every relationship's keys (a to-one holds at most one).
    public var relationships: [String: [ObjectKey]]

    /// Creates a row.
    public init(version: Int64, attributes: [String: Value], relationships: [String: [ObjectKey]]) {
        self.version = version
        self.attributes = attributes
        self.relationships = relationships
    }
}


/// The objects of one concrete entity, with their keys kept in ascending order.
public struct RecordTable: Sendable {
    /// Rows by primary key.
    public internal(set) var rows: [Int64: StoredRow] = [:]
    /// The primary keys, ascending.
    public internal(set) var order: [Int64] = []

    /// The index of the first key greater than `pk`.
    /// The index in ``order`` of the first key greater than `pk`.
    public func firstIndex(after pk: Int64) -> Int {
        var (low, high) = (0, order.count)
        while low < high {
            let mid = (low + high) / 2
            if order[mid] <= pk { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// An empty table.
    public init() {}

    /// Adds or replaces a row.
    public mutating func insert(_ pk: Int64, _ row: StoredRow) {
        if rows[pk] != nil { rows[pk] = row; return }
        rows[pk] = row
        if let last = order.last, last >= pk {
            order.insert(pk, at: firstIndex(after: pk))
        } else {
            order.append(pk)
        }
    }

    mutating func remove(_ pk: Int64) {
        guard rows.removeValue(forKey: pk) != nil else { return }
        let index = firstIndex(after: pk) - 1
        if index >= 0 && order[index] == pk { order.remove(at: index) }
    }
}

/// A whole store's objects held in memory, with the contract's semantics:
/// validation of change sets before anything is applied, fetches through the
/// shared predicate evaluator, per-hierarchy key allocation.
///
/// The in-memory and atomic-file backends keep their data in one; a backend
/// that reads a whole store into memory can too.
public struct RecordTables: Sendable {
    /// The store's metadata.
    public var metadata: StoreMetadata
    /// The tables, by concrete entity.
    public internal(set) var tables: [String: RecordTable] = [:]
    /// The last primary key handed out, by root entity.
    public var lastKey: [String: Int64] = [:]

    /// Empty tables with `metadata`.
    public init(metadata: StoreMetadata) {
        self.metadata = metadata
    }

    /// Replaces the table of `entity` (for backends that load a whole store).
    public mutating func setTable(_ table: RecordTable, for entity: String) {
        tables[entity] = table
    }

    /// Whether an object with `key` exists.
    public func exists(_ key: ObjectKey) -> Bool { tables[key.entity]?.rows[key.primaryKey] != nil }

    /// The record of a row, with to-one relationships whose target no longer exists left out.
    public func record(_ key: ObjectKey, _ row: StoredRow, model: ManagedObjectModel) -> ObjectRecord {
        var toOne: [String: ObjectKey] = [:]
        if let entity = model.entity(named: key.entity) {
            for relationship in entity.relationships where !relationship.isToMany {
                if let target = row.relationships[relationship.name]?.first, exists(target) { toOne[relationship.name] = target }
            }
        }
        return ObjectRecord(key: key, version: row.version, attributes: row.attributes, toOne: toOne)
    }

    /// Checks a change set completely before anything is applied, so a save is all or nothing.
    public func validate(_ changes: ChangeSet, model: ManagedObjectModel, storeID: UUID) throws {
        let deleted = Set(changes.deleted.map(\.key))
        var inserted: Set<ObjectKey> = []
        var insertedPerRoot: [String: Set<Int64>] = [:]
        for record in changes.inserted {
            guard let entity = model.entity(named: record.key.entity) else {
                throw StoreError(.invalidChange, "cannot insert \(record.key): no entity named \(record.key.entity)")
            }
            if entity.isAbstract {
                throw StoreError(.invalidChange, "cannot insert \(record.key): entity \(entity.name) is abstract")
            }
            guard record.key.primaryKey > 0 else {
                throw StoreError(.invalidChange, "cannot insert \(record.key): primary keys start at 1")
            }
            let root = entity.rootName
            let taken = model.entity(named: root)!.kindNames.contains { tables[$0]?.rows[record.key.primaryKey] != nil }
            if taken || !insertedPerRoot[root, default: []].insert(record.key.primaryKey).inserted {
                throw StoreError(.invalidChange, "cannot insert \(record.key): primary key \(record.key.primaryKey) is in use in \(root)'s hierarchy")
            }
            inserted.insert(record.key)
        }
        func target(_ key: ObjectKey, of relationship: Relationship, from source: ObjectKey) throws {
            guard let destination = model.entity(named: key.entity), destination.isKind(of: relationship.destination) else {
                throw StoreError(.invalidChange, "\(source).\(relationship.name): \(key) is not a \(relationship.destination)")
            }
            guard !deleted.contains(key), inserted.contains(key) || exists(key) else {
                throw StoreError(.invalidChange, "\(source).\(relationship.name): \(key) does not exist")
            }
        }
        func check(_ key: ObjectKey, attributes: [String: Value?], toOne: [String: ObjectKey?], toMany: [String: [ObjectKey]]) throws {
            let entity = model.entity(named: key.entity)!
            for (name, value) in attributes {
                guard let attribute = entity.attributesByName[name], !attribute.isTransient else {
                    throw StoreError(.invalidChange, "\(key): no stored attribute named \(name)")
                }
                if let value, !attribute.type.accepts(value) {
                    throw StoreError(.invalidChange, "\(key).\(name): \(value) is not a valid \(attribute.type.modelName)")
                }
            }
            for (name, value) in toOne {
                guard let relationship = entity.relationshipsByName[name], !relationship.isToMany, !relationship.isTransient else {
                    throw StoreError(.invalidChange, "\(key): no stored to-one relationship named \(name)")
                }
                if let value { try target(value, of: relationship, from: key) }
            }
            for (name, values) in toMany {
                guard let relationship = entity.relationshipsByName[name], relationship.isToMany, !relationship.isTransient else {
                    throw StoreError(.invalidChange, "\(key): no stored to-many relationship named \(name)")
                }
                guard Set(values).count == values.count else {
                    throw StoreError(.invalidChange, "\(key).\(name): an object appears twice")
                }
                for value in values { try target(value, of: relationship, from: key) }
            }
        }
        for record in changes.inserted {
            try check(record.key, attributes: record.attributes, toOne: record.toOne, toMany: record.toMany)
        }
        for update in changes.updated {
            guard let row = tables[update.key.entity]?.rows[update.key.primaryKey], !deleted.contains(update.key) else {
                throw StoreError(.invalidChange, "cannot update \(update.key): it does not exist")
            }
            if let expected = update.expectedVersion, expected != row.version {
                throw StoreError(.conflict, "\(update.key) was changed by someone else (version \(row.version), expected \(expected))",
                                 objectID: ObjectID(store: storeID, key: update.key))
            }
            try check(update.key, attributes: update.attributes, toOne: update.toOne, toMany: update.toMany)
        }
        for deletion in changes.deleted {
            guard let row = tables[deletion.key.entity]?.rows[deletion.key.primaryKey] else {
                throw StoreError(.invalidChange, "cannot delete \(deletion.key): it does not exist")
            }
            if let expected = deletion.expectedVersion, expected != row.version {
                throw StoreError(.conflict, "\(deletion.key) was changed by someone else (version \(row.version), expected \(expected))",
                                 objectID: ObjectID(store: storeID, key: deletion.key))
            }
        }
    }

    /// Applies a validated change set; nothing here can fail.
    public mutating func apply(_ changes: ChangeSet, model: ManagedObjectModel) {
        for deletion in changes.deleted { tables[deletion.key.entity]?.remove(deletion.key.primaryKey) }
        for record in changes.inserted {
            var relationships = record.toMany
            for (name, target) in record.toOne { relationships[name] = [target] }
            let row = StoredRow(version: max(1, record.version), attributes: record.attributes, relationships: relationships)
            tables[record.key.entity, default: RecordTable()].insert(record.key.primaryKey, row)
            let root = model.entity(named: record.key.entity)!.rootName
            lastKey[root] = max(lastKey[root, default: 0], record.key.primaryKey)
        }
        for update in changes.updated {
            tables[update.key.entity]!.rows[update.key.primaryKey]!.apply(update)
        }
    }
}

extension StoredRow {
    mutating func apply(_ update: ObjectUpdate) {
        for (name, value) in update.attributes { attributes[name] = value }
        for (name, target) in update.toOne { relationships[name] = target.map { [$0] } }
        for (name, targets) in update.toMany { relationships[name] = targets }
        version += 1
    }
}

/// A consistent copy of a store's state for evaluating a fetch outside the lock.
final class RecordSnapshot {
    let state: RecordTables
    let model: ManagedObjectModel

    init(state: RecordTables, model: ManagedObjectModel) {
        self.state = state
        self.model = model
    }
}

/// An object of a snapshot, as predicates see it.
struct RecordSubject: PredicateSubject {
    let snapshot: RecordSnapshot
    let key: ObjectKey
    let row: StoredRow

    var record: ObjectRecord { snapshot.state.record(key, row, model: snapshot.model) }

    var identity: Value { .string(key.description) }

    func resolve(_ name: String) -> ResolvedKey? {
        guard let entity = snapshot.model.entity(named: key.entity) else { return nil }
        if entity.attributesByName[name] != nil { return .value(row.attributes[name]) }
        guard let relationship = entity.relationshipsByName[name] else { return nil }
        let targets = (row.relationships[name] ?? []).compactMap(subject)
        return relationship.isToMany ? .objects(targets) : .object(targets.first)
    }

    private func subject(_ key: ObjectKey) -> RecordSubject? {
        snapshot.state.tables[key.entity]?.rows[key.primaryKey].map { RecordSubject(snapshot: snapshot, key: key, row: $0) }
    }
}
