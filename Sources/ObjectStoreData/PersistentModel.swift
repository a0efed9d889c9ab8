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
    var _$storage: ModelStorage { get }
    /// The model's persisted properties (made by `@Model`).
    static var _$properties: [ModelProperty<Self>] { get }
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
    public var modelContext: ModelContext? { _$storage.object == nil ? nil : _$storage.context }


    /// Whether the model was deleted and the deletion not yet saved.
    public var isDeleted: Bool { _$storage.object?.isDeleted ?? false }

    /// Whether the model has changes its context has not saved.
    public var hasChanges: Bool {
        guard let object = _$storage.object else { return true }
        return object.isInserted || object.isUpdated || object.isDeleted
    }

    /// The entity's name: the class's name.
    public static var entityName: String { String(describing: Self.self) }

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
/// `@Model` gives each model one; its accessors are what the model's properties call.
public final class ModelStorage {
    /// The context's object, once the model is inserted or fetched.
    var object: ManagedObject?
    /// The model's context, kept alive by its models (it holds them weakly).
    var context: ModelContext?
    /// Values set before the model was inserted, by property name.
    var pending: [String: Pending] = [:]
    /// The identity of a model not inserted yet.
    private(set) lazy var temporaryID = UUID()

    /// A value set before insertion.
    enum Pending {
        case attribute(Value?)
        case toOne((any PersistentModel)?)
        case toMany([any PersistentModel])
    }

    /// An empty storage, for a new model.
    public init() {}

    init(object: ManagedObject, context: ModelContext) {
        self.object = object
        self.context = context
    }

    func identifier(entity: String) -> PersistentIdentifier {
        if let object { return PersistentIdentifier(object.objectID) }
        return PersistentIdentifier(temporary: temporaryID, entityName: entity)
    }

    /// The stored value of an attribute.
    func attribute(_ key: String) -> Value? {
        if let object { return object[key] }
        if case .attribute(let value)? = pending[key] { return value }
        return nil
    }

    /// Sets an attribute: on the context's object (a failure is the context's to report at
    /// save), or kept until the model is inserted.
    func setAttribute(_ value: Value?, _ key: String) {
        guard let object else {
            pending[key] = .attribute(value)
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
        if case .toOne(let model)? = pending[key] { return model as? T }
        return nil
    }

    func toMany<T: PersistentModel>(_ key: String, as type: T.Type) -> [T] {
        if let object, let context {
            guard let targets = context.objectOrDefer({ try object.objects(forKey: key) }) else { return [] }
            return targets.compactMap { context.model(for: $0, as: T.self) }
        }
        if case .toMany(let models)? = pending[key] { return models.compactMap { $0 as? T } }
        return []
    }

    func setToOne(_ model: (any PersistentModel)?, _ key: String) {
        guard let object, let context else {
            pending[key] = .toOne(model)
            return
        }
        let target = model.flatMap { context.attach($0) }
        do { try object.setObject(target, forKey: key) } catch { context.defer(error) }
    }

    func setToMany(_ models: [any PersistentModel], _ key: String) {
        guard let object, let context else {
            pending[key] = .toMany(models)
            return
        }
        let targets = models.compactMap { context.attach($0) }
        do { try object.setObjects(targets, forKey: key) } catch { context.defer(error) }
    }
}
