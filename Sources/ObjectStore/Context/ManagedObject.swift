import Foundation
import ObjectModel

/// An object in an ``ObjectContext``: one per object ID per context.
///
/// Attributes are read and written by key or typed; relationships through
/// their own accessors, which keep inverses in step as you set them.
///
/// ```swift
/// let person = try context.insert("Person")
/// person["name"] = .string("Ada")
/// person["age", as: Int.self] = 36
/// try pet.setObject(person, forKey: "owner")   // person.objects(forKey: "pets") now holds pet
/// ```
public final class ManagedObject: Hashable, CustomStringConvertible {
    /// The object's identity.
    public let objectID: ObjectID
    /// The object's entity.
    public let entity: EntityDescription
    /// The context the object belongs to (nil once the context is gone or reset).
    public internal(set) weak var context: ObjectContext?
    /// What stands for the object in a layer above (a typed model of `ObjectStoreData`), while
    /// something else keeps it alive: the object holds it weakly.
    package weak var companion: AnyObject?

    struct State {
        /// Attribute values by slot (``EntityDescription/objectAttributes``): the stored ones at
        /// their layout slots, as stores move them in batches, then the transient ones; nil is no value.
        var values: [Value?]
        var toOne: [String: ObjectID]
        var toMany: [String: [ObjectID]]
    }

    /// What a fetched or saved object keeps from its first change on; one reference in the
    /// object, nil while it is unchanged (most objects are).
    final class Changes {
        /// The state at the last fetch or save (for rollback).
        var committed: State
        /// The names of the properties changed since.
        var keys: Set<String> = []

        init(committed: State) { self.committed = committed }
    }

    var state: State
    /// The version the object was read at (0 for a new object).
    var version: Int64
    /// Set at the first change of an object that is not inserted; nil after save and rollback.
    var changes: Changes?
    var isInsertedFlag = false
    var isDeletedFlag = false

    init(objectID: ObjectID, entity: EntityDescription, context: ObjectContext, state: State, version: Int64) {
        self.objectID = objectID
        self.entity = entity
        self.context = context
        self.state = state
        self.version = version
    }

    /// Whether a fetch that reads the object at `version` takes the store's values: the store
    /// holds another version (another context saved it) and this one has no unsaved change.
    func isRefreshable(to version: Int64) -> Bool {
        version != self.version && changes == nil && !isInsertedFlag && !isDeletedFlag
    }

    /// Takes the store's state (a fetch read the object again at a newer version).
    func refresh(_ state: State, version: Int64) {
        self.state = state
        self.version = version
    }

    /// Whether the object was inserted and not yet saved.
    public var isInserted: Bool { isInsertedFlag }
    /// Whether the object was deleted and the delete not yet saved.
    public var isDeleted: Bool { isDeletedFlag }
    /// Whether the object has unsaved changes to its properties.
    public var isUpdated: Bool { !(changes?.keys.isEmpty ?? true) && !isInsertedFlag }
    /// The names of the properties changed since the last save; for an inserted object, every
    /// property it has a value for (attributes with a value, to-ones set, to-manys not empty).
    public var changedPropertyNames: Set<String> {
        guard isInsertedFlag else { return changes?.keys ?? [] }
        var names = Set(zip(entity.objectAttributes, state.values).compactMap { $1 == nil ? nil : $0.name })
        names.formUnion(state.toOne.keys)
        for (name, ids) in state.toMany where !ids.isEmpty { names.insert(name) }
        return names
    }

    public static func == (a: ManagedObject, b: ManagedObject) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String { "<\(entity.name) \(objectID.uri.absoluteString)>" }

    // MARK: Attributes

    /// The value of an attribute (nil when it has none). Set one with ``set(_:_:)-(String,Value?)``.
    public subscript(key: String) -> Value? {
        attributeValue(key)
    }

    /// Typed access to an attribute: nil when missing or of another type.
    public subscript<T: ValueConvertible>(key: String, as type: T.Type) -> T? {
        attributeValue(key).flatMap(T.init(attributeValue:))
    }

    /// The value of the attribute named `key`; nil when it has none or there is no such attribute.
    func attributeValue(_ key: String) -> Value? {
        entity.objectSlot(key).flatMap { state.values[$0] }
    }

    /// Sets an attribute, marking the object updated; a value of another type is kept and
    /// reported by validation at save.
    ///
    /// ```swift
    /// try ada.set("name", .string("Ada"))
    /// ```
    /// - Throws: ``StoreError``: ``StoreError/Code/invalidChange`` when the entity has no such
    ///   attribute; ``StoreError/Code/closed`` when the object no longer belongs to a context
    ///   (after `reset()`, a rolled-back insert or a saved delete).
    public func set(_ key: String, _ value: Value?) throws {
        try setAttribute(value, forKey: key)
    }

    /// Sets an attribute from a Swift value (`try ada.set("age", 36)`); see ``set(_:_:)-(String,Value?)``.
    public func set<T: ValueConvertible>(_ key: String, _ value: T?) throws {
        try setAttribute(value?.attributeValue, forKey: key)
    }

    /// Sets an attribute (what ``set(_:_:)-(String,Value?)`` does).
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidChange`` when the entity has no such attribute.
    public func setAttribute(_ value: Value?, forKey key: String) throws {
        guard let slot = entity.objectSlot(key) else {
            throw StoreError(.invalidChange, "\(entity.name) has no attribute named \(key)", objectID: objectID)
        }
        let type = entity.objectAttributes[slot].type
        let coerced = value.map { type.coerce($0) ?? $0 }
        try liveContext().willChange(self, key: key)
        state.values[slot] = coerced
    }

    // MARK: Relationships

    /// The object of a to-one relationship.
    public func object(forKey key: String) throws -> ManagedObject? {
        let relationship = try self.relationship(key, toMany: false)
        guard let id = state.toOne[relationship.name] else { return nil }
        return try liveContext().object(with: id)
    }

    /// Sets a to-one relationship, updating the inverse on every object involved.
    public func setObject(_ object: ManagedObject?, forKey key: String) throws {
        let relationship = try self.relationship(key, toMany: false)
        try liveContext().setToOne(self, relationship, object)
    }

    /// The objects of a to-many relationship (in order for an ordered one).
    public func objects(forKey key: String) throws -> [ManagedObject] {
        let relationship = try self.relationship(key, toMany: true)
        let context = try liveContext()
        return try context.toManyIDs(self, relationship).compactMap { try context.object(with: $0) }
    }

    /// Replaces a to-many relationship, updating the inverse on every object involved.
    public func setObjects(_ objects: [ManagedObject], forKey key: String) throws {
        let relationship = try self.relationship(key, toMany: true)
        try liveContext().setToMany(self, relationship, objects)
    }

    /// Adds an object to a to-many relationship (at the end of an ordered one).
    public func addObject(_ object: ManagedObject, forKey key: String) throws {
        var current = try objects(forKey: key)
        guard !current.contains(object) else { return }
        current.append(object)
        try setObjects(current, forKey: key)
    }

    /// Removes an object from a to-many relationship.
    public func removeObject(_ object: ManagedObject, forKey key: String) throws {
        try setObjects(try objects(forKey: key).filter { $0 !== object }, forKey: key)
    }

    // MARK: Key-value access

    /// The value of any property: a `Value` for an attribute, a ``ManagedObject``
    /// for a to-one, an array of them for a to-many, or nil.
    public func value(forKey key: String) throws -> Any? {
        if let slot = entity.objectSlot(key) { return state.values[slot] }
        guard let relationship = entity.relationshipsByName[key] else {
            throw StoreError(.invalidChange, "\(entity.name) has no property named \(key)", objectID: objectID)
        }
        return relationship.isToMany ? try objects(forKey: key) : try object(forKey: key)
    }

    /// Sets any property: a `Value` or a ``ValueConvertible`` for an attribute,
    /// a ``ManagedObject`` for a to-one, an array of them for a to-many, or nil.
    public func setValue(_ value: Any?, forKey key: String) throws {
        if entity.attributesByName[key] != nil {
            switch value {
            case nil: try setAttribute(nil, forKey: key)
            case let v as Value: try setAttribute(v, forKey: key)
            case let v as any ValueConvertible: try setAttribute(v.attributeValue, forKey: key)
            default: throw StoreError(.invalidChange, "\(entity.name).\(key): \(type(of: value!)) is not an attribute value", objectID: objectID)
            }
            return
        }
        guard let relationship = entity.relationshipsByName[key] else {
            throw StoreError(.invalidChange, "\(entity.name) has no property named \(key)", objectID: objectID)
        }
        if relationship.isToMany {
            guard let objects = (value ?? [ManagedObject]()) as? [ManagedObject] else {
                throw StoreError(.invalidChange, "\(entity.name).\(key) takes an array of objects", objectID: objectID)
            }
            try setObjects(objects, forKey: key)
        } else {
            guard value == nil || value is ManagedObject else {
                throw StoreError(.invalidChange, "\(entity.name).\(key) takes an object", objectID: objectID)
            }
            try setObject(value as? ManagedObject, forKey: key)
        }
    }

    private func relationship(_ key: String, toMany: Bool) throws -> Relationship {
        guard let relationship = entity.relationshipsByName[key] else {
            throw StoreError(.invalidChange, "\(entity.name) has no relationship named \(key)", objectID: objectID)
        }
        guard relationship.isToMany == toMany else {
            throw StoreError(.invalidChange, "\(entity.name).\(key) is a \(relationship.isToMany ? "to-many" : "to-one") relationship", objectID: objectID)
        }
        return relationship
    }

    func liveContext() throws -> ObjectContext {
        guard let context else { throw StoreError(.invalidChange, "\(self) no longer belongs to a context", objectID: objectID) }
        return context
    }
}
