import Foundation
import ObjectModel
import ObjectStore

/// A class `@Model` made persistent: what the macro gives it, and what every model has.
///
/// Models are reference types tied to the context they were inserted into or fetched by; they
/// never cross isolation domains (they are not `Sendable`): pass a ``persistentModelID`` and
/// look the model up in the other context.
public protocol PersistentModel: AnyObject, Hashable, Identifiable, SendableMetatype {
    /// Where the model's values are (made by `@Model`).
    var _$storage: ModelStorage { get set }
    /// The entity's name: the class's name (made by `@Model`).
    static var entityName: String { get }
    /// The model's persisted properties (made by `@Model`).
    static var _$properties: [ModelProperty] { get }
    /// The uniqueness constraints, property names each (made by `@Model` from `#Unique` and `@Attribute(.unique)`).
    static var _$uniqueness: [[String]] { get }
    /// The indexes, property names each (made by `@Model` from `#Index`).
    static var _$indexes: [[String]] { get }
    /// A model over `storage`, its initializer not run: what a context makes of a fetched object.
    init(_$storage: ModelStorage)
}

extension PersistentModel {
    /// The model's identity: permanent once it is inserted into a context (a store and a
    /// primary key), temporary before.
    public var persistentModelID: PersistentIdentifier { _$storage.identifier(entity: Self.entityName) }

    /// The context the model was inserted into or fetched by; nil before it is inserted, and
    /// after its deletion is saved.
    public var modelContext: ModelContext? { _$storage.object?.context == nil ? nil : _$storage.context }

    /// Whether the model was deleted and the deletion not yet saved.
    public var isDeleted: Bool {
        guard let object = _$storage.object, object.context != nil else { return false }
        return object.isDeleted
    }

    /// Whether the model has changes its context has not saved.
    public var hasChanges: Bool {
        guard let object = _$storage.object, object.context != nil else { return _$storage.object == nil }
        return object.isInserted || object.isUpdated || object.isDeleted
    }


    public static func == (a: Self, b: Self) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension PersistentModel where ID == PersistentIdentifier {
    /// The model's identity, as ``persistentModelID``.
    public var id: PersistentIdentifier { persistentModelID }
}

/// The empty value `@Model` keeps for each persisted property, so that the property's init
/// accessor has a stored property to initialize; it takes no space.
public struct PersistedSlot: Sendable {
    /// Creates the marker.
    public init() {}
}

/// Where a model's values are: before the model is inserted, in the storage itself; after,
/// in the context's object, which tracks changes, keeps inverses in step and saves.
///
/// `@Model` gives each model one, kept inline in the model (a fetched model is one
/// allocation); its accessors are what the model's properties call.
public struct ModelStorage {
    /// The context's object, once the model is inserted or fetched.
    var object: ManagedObject?
    /// The model's context, kept alive by its models (it holds them weakly).
    var context: ModelContext?
    /// What a model made by its initializer keeps until it is inserted; nil for a fetched model.
    var unsaved: Unsaved?

    /// Values set before insertion, and the identity of a model not inserted yet.
    final class Unsaved {
        /// Values set before the model was inserted, by property name, in the order first set
        /// (a model has few: a list is cheaper than a dictionary to fill and to read).
        var pending: [(key: String, value: Pending)] = []

        subscript(key: String) -> Pending? {
            get { pending.first { $0.key == key }?.value }
            set {
                if let index = pending.firstIndex(where: { $0.key == key }) {
                    if let newValue { pending[index].value = newValue } else { pending.remove(at: index) }
                } else if let newValue {
                    pending.append((key, newValue))
                }
            }
        }
        /// Made when first asked for (a UUID costs a read of the system's random source).
        lazy var temporaryID = UUID()
    }

    /// A value set before insertion.
    enum Pending {
        case attribute(Value?)
        case toOne((any PersistentModel)?)
        case toMany([any PersistentModel])
    }

    /// An empty storage, for a new model (it allocates nothing until a value is set: a
    /// fetched model's default storage, replaced at once, costs nothing).
    public init() {}

    init(object: ManagedObject, context: ModelContext) {
        self.object = object
        self.context = context
    }

    /// The values set before insertion.
    var pending: [(key: String, value: Pending)] { unsaved?.pending ?? [] }

    /// The model's identity: its object's, or (made on first use) a temporary one.
    mutating func identifier(entity: String) -> PersistentIdentifier {
        if let object { return PersistentIdentifier(object.objectID) }
        if unsaved == nil { unsaved = Unsaved() }
        return PersistentIdentifier(temporary: unsaved!.temporaryID, entityName: entity)
    }

    /// Keeps a value until the model is inserted.
    private mutating func keep(_ value: Pending, _ key: String) {
        if unsaved == nil { unsaved = Unsaved() }
        unsaved![key] = value
    }

    /// The stored value of an attribute.
    func attribute(_ key: String) -> Value? {
        if let object { return object[key] }
        if case .attribute(let value)? = unsaved?[key] { return value }
        return nil
    }

    /// Sets an attribute: on the context's object (a failure is the context's to report at
    /// save), or kept until the model is inserted.
    mutating func setAttribute(_ value: Value?, _ key: String) {
        guard let object else {
            keep(.attribute(value), key)
            return
        }
        do { try object.set(key, value) } catch { context?.defer(error) }
    }

    // MARK: Relationships

    func toOne<T: PersistentModel>(_ key: String, as type: T.Type) -> T? {
        if let object, let context {
            guard let target = context.objectOrDefer({ try object.object(forKey: key) }) ?? nil else { return nil }
            return context.model(for: target, as: T.self)
        }
        if case .toOne(let model)? = unsaved?[key] { return model as? T }
        return nil
    }

    func toMany<T: PersistentModel>(_ key: String, as type: T.Type) -> [T] {
        if let object, let context {
            guard let targets = context.objectOrDefer({ try object.objects(forKey: key) }) else { return [] }
            return targets.compactMap { context.model(for: $0, as: T.self) }
        }
        if case .toMany(let models)? = unsaved?[key] { return models.compactMap { $0 as? T } }
        return []
    }

    mutating func setToOne(_ model: (any PersistentModel)?, _ key: String) {
        guard let object, let context else {
            keep(.toOne(model), key)
            return
        }
        let target = model.flatMap { context.attach($0) }
        do { try object.setObject(target, forKey: key) } catch { context.defer(error) }
    }

    mutating func setToMany(_ models: [any PersistentModel], _ key: String) {
        guard let object, let context else {
            keep(.toMany(models), key)
            return
        }
        let targets = models.compactMap { context.attach($0) }
        do { try object.setObjects(targets, forKey: key) } catch { context.defer(error) }
    }
}
