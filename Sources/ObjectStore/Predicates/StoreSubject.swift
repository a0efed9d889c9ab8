import Foundation
import ObjectModel

/// A record of any store as predicates see it; relationships are read through the store on demand.
public struct StoreSubject: PredicateSubject {
    /// The record.
    public let record: ObjectRecord
    /// The store it came from.
    public let store: any PersistentStore

    /// Wraps a record of `store`.
    public init(record: ObjectRecord, store: any PersistentStore) {
        self.record = record
        self.store = store
    }

    public var identity: Value { .string(record.key.description) }

    public func resolve(_ key: String) throws -> ResolvedKey? {
        guard let entity = store.model.entity(named: record.key.entity) else { return nil }
        if entity.attributesByName[key] != nil { return .value(record.attributes[key]) }
        guard let relationship = entity.relationshipsByName[key] else { return nil }
        if relationship.isToMany {
            let keys = try store.relatedKeys(of: record.key, relationship: key)
            return .objects(try keys.compactMap { try store.record(for: $0) }.map { StoreSubject(record: $0, store: store) })
        }
        let target = try record.toOne[key].flatMap { try store.record(for: $0) }
        return .object(target.map { StoreSubject(record: $0, store: store) })
    }
}
