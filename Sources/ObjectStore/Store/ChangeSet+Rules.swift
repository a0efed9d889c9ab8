import Foundation
import ObjectModel

/// The store contract's rules that the model alone decides, written once: every backend
/// checks a change set with ``ChangeSet/checkShape(model:)`` and a batch with
/// ``RecordBatch/checkInsertable(in:)``, both built on these. What needs the store's data
/// (a key in use, a target that exists, a version that moved) is each store's to check.
enum ContractRule {
    /// An object can be inserted as an instance of `entity`.
    static func insertable(_ entity: EntityDescription, _ key: ObjectKey) throws {
        if entity.isAbstract { throw StoreError(.invalidChange, "cannot insert \(key): entity \(entity.name) is abstract") }
        try newKey(key)
    }

    /// A new object's primary key: 1 or more.
    static func newKey(_ key: ObjectKey) throws {
        guard key.primaryKey > 0 else { throw StoreError(.invalidChange, "cannot insert \(key): primary keys start at 1") }
    }

    /// `value` fits `attribute`'s type.
    static func value(_ value: Value, of attribute: Attribute, _ key: ObjectKey) throws {
        guard attribute.type.accepts(value) else {
            throw StoreError(.invalidChange, "\(key).\(attribute.name): \(value) is not a valid \(attribute.type.modelName)")
        }
    }

    /// `target` is an object of `relationship`'s destination or of a sub-entity of it.
    static func target(_ target: ObjectKey, of relationship: Relationship, from source: ObjectKey, model: ManagedObjectModel) throws {
        guard model.entity(named: target.entity)?.isKind(of: relationship.destination) == true else {
            throw StoreError(.invalidChange, "\(source).\(relationship.name): \(target) is not a \(relationship.destination)")
        }
    }
}

extension ChangeSet {
    /// Refuses a change set that updates or deletes an object whose stored version is not the
    /// one it expected (``ObjectUpdate/expectedVersion``, ``ObjectDeletion/expectedVersion``):
    /// changes computed from objects someone else changed since are a conflict, whatever else
    /// is wrong with them, so every store checks this first. `version` gives an object's stored
    /// version, or nil when it does not exist (which the store reports later, as a missing object).
    /// - Throws: ``StoreError`` with ``StoreError/Code/conflict`` naming the object.
    public func checkVersions(storeID: UUID, version: (ObjectKey) throws -> Int64?) throws {
        let expected = updated.compactMap { u in u.expectedVersion.map { (u.key, $0) } } + deleted.compactMap { d in d.expectedVersion.map { (d.key, $0) } }
        for (key, expected) in expected {
            if let stored = try version(key), stored != expected {
                throw StoreError(.conflict, "\(key) was changed by someone else (version \(stored), expected \(expected))",
                                 objectID: ObjectID(store: storeID, key: key))
            }
        }
    }

    /// Checks everything about the change set that the model decides, before a store reads
    /// or writes anything: the two sides of every inverse pair agree (``checkInverses(model:)``);
    /// every object's entity exists; an inserted object's entity is not abstract and its key is
    /// 1 or more and not given twice in one hierarchy; every name an insert or update sets is a
    /// stored attribute, to-one or to-many of its entity; every value fits its attribute's type;
    /// no to-many lists an object twice; every target is of its relationship's destination (or
    /// a sub-entity of it).
    ///
    /// What needs the store's data is the store's to check: a key already in use, targets
    /// that exist (when it checks references), objects to update or delete that exist, and
    /// their versions.
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidChange`` naming the object and property.
    public func checkShape(model: ManagedObjectModel) throws {
        try checkInverses(model: model)
        var insertedPerRoot: [String: Set<Int64>] = [:]
        for record in inserted {
            let entity = try Self.entity(of: record.key, "insert", model)
            try ContractRule.insertable(entity, record.key)
            guard insertedPerRoot[entity.rootName, default: []].insert(record.key.primaryKey).inserted else {
                throw StoreError(.invalidChange, "cannot insert \(record.key): primary key \(record.key.primaryKey) is in use in \(entity.rootName)'s hierarchy")
            }
            for (name, value) in record.attributes { try Self.attribute(name, value, record.key, entity) }
            for (name, target) in record.toOne { try Self.toOne(name, target, record.key, entity, model) }
            for (name, targets) in record.toMany { try Self.toMany(name, targets, record.key, entity, model) }
            try Self.orderKeys(record.orderKeys, of: record.toMany, record.key, entity)
        }
        for update in updated {
            let entity = try Self.entity(of: update.key, "update", model)
            for (name, value) in update.attributes { try Self.attribute(name, value, update.key, entity) }
            for (name, target) in update.toOne { try Self.toOne(name, target, update.key, entity, model) }
            for (name, targets) in update.toMany { try Self.toMany(name, targets, update.key, entity, model) }
            try Self.orderKeys(update.orderKeys, of: update.toMany, update.key, entity)
        }
        for deletion in deleted { _ = try Self.entity(of: deletion.key, "delete", model) }
    }

    private static func entity(of key: ObjectKey, _ verb: String, _ model: ManagedObjectModel) throws -> EntityDescription {
        guard let entity = model.entity(named: key.entity) else {
            throw StoreError(.invalidChange, "cannot \(verb) \(key): no entity named \(key.entity)")
        }
        return entity
    }

    private static func attribute(_ name: String, _ value: Value?, _ key: ObjectKey, _ entity: EntityDescription) throws {
        guard let attribute = entity.attributesByName[name], !attribute.isTransient else {
            throw StoreError(.invalidChange, "\(key): no stored attribute named \(name)")
        }
        if let value { try ContractRule.value(value, of: attribute, key) }
    }

    private static func toOne(_ name: String, _ target: ObjectKey?, _ key: ObjectKey, _ entity: EntityDescription, _ model: ManagedObjectModel) throws {
        guard let relationship = entity.relationshipsByName[name], !relationship.isToMany, !relationship.isTransient else {
            throw StoreError(.invalidChange, "\(key): no stored to-one relationship named \(name)")
        }
        if let target { try ContractRule.target(target, of: relationship, from: key, model: model) }
    }

    /// Order keys name a to-many list the change gives, one ascending number per member.
    private static func orderKeys(_ orderKeys: [String: [Int64]], of toMany: [String: [ObjectKey]], _ key: ObjectKey,
                                  _ entity: EntityDescription) throws {
        for (name, keys) in orderKeys {
            guard let members = toMany[name] else {
                throw StoreError(.invalidChange, "\(key).\(name): order keys are given without the relationship's members")
            }
            try OrderKeys.check(keys, count: members.count, owner: key, relationship: entity.relationshipsByName[name])
        }
    }

    private static func toMany(_ name: String, _ targets: [ObjectKey], _ key: ObjectKey, _ entity: EntityDescription,
                               _ model: ManagedObjectModel) throws {
        guard let relationship = entity.relationshipsByName[name], relationship.isToMany, !relationship.isTransient else {
            throw StoreError(.invalidChange, "\(key): no stored to-many relationship named \(name)")
        }
        guard !ObjectKey.hasDuplicates(targets) else {
            throw StoreError(.invalidChange, "\(key).\(name): an object appears twice")
        }
        var fits = EntityMemo { model.entity(named: $0)?.isKind(of: relationship.destination) == true }
        for target in targets where !fits(target.entity) { try ContractRule.target(target, of: relationship, from: key, model: model) }
    }
}
