import Foundation
import ObjectModel
import ObjectStore

/// The unit of work over a container: insert, fetch, change and delete models, then save.
///
/// ```swift
/// let context = ModelContext(container)
/// let trip = Trip(name: "Lisbon", start: .now)
/// context.insert(trip)
/// trip.stops.append(Stop(name: "Belém"))      // inserted with it
/// try context.save()
/// let recent = try context.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.start, order: .reverse)]))
/// ```
///
/// A context belongs to one isolation domain (it is not `Sendable`), and so do its models.
/// Inserting a model inserts the models its relationships reach. Inserting a model whose
/// values for a uniqueness constraint equal a stored (or inserted) model's updates that model
/// with the new values (an upsert): the inserted model then stands for it. What cannot be
/// done at the moment of a change (a failure of the store) is reported by the next ``save()``.
public final class ModelContext {
    /// The container the context works on.
    public let container: ModelContainer
    /// The store layer's context, which tracks changes, keeps inverses in step and saves.
    let objects: ObjectContext
    /// Failures of changes, reported by the next save.
    private var deferred: [any Error] = []

    /// Whether the context saves by itself: its unsaved changes before each fetch (so a fetch
    /// reads them from the store) and when it goes away; a failed autosave is dropped, as in
    /// SwiftData. On for ``ModelContainer/mainContext``, off for the contexts you make. There
    /// is no run loop to save on here: call ``save()`` where it matters.
    public var autosaveEnabled = false

    /// A context on `container`.
    public init(_ container: ModelContainer) {
        self.container = container
        objects = ObjectContext(coordinator: container.coordinator)
    }

    // MARK: Changes

    /// Inserts `model`, and the models its relationships reach; a model already in the context
    /// is left as it is. With a uniqueness constraint whose values a stored model has, the
    /// stored model takes the new values and `model` stands for it.
    public func insert<T: PersistentModel>(_ model: T) {
        _ = attach(model)
    }

    /// Marks `model` for deletion; its delete rules apply when the context saves. A model
    /// inserted and not saved is just dropped.
    public func delete<T: PersistentModel>(_ model: T) {
        guard let object = model._$storage.object, model._$storage.context === self else { return }
        objects.delete(object)
    }

    /// Deletes every model of `model`'s type (and subclasses') that `predicate` accepts, at the next save.
    public func delete<T: PersistentModel>(model: T.Type, where predicate: Predicate<T>? = nil, includeSubclasses: Bool = true) throws {
        for each in try fetch(FetchDescriptor<T>(predicate: predicate)) { delete(each) }
    }

    /// Whether anything was inserted, changed or deleted since the last save.
    public var hasChanges: Bool { objects.hasChanges }

    /// The models inserted and not saved.
    public var insertedModelsArray: [any PersistentModel] { objects.insertedObjects.compactMap { model(for: $0) } }
    /// The models changed and not saved.
    public var changedModelsArray: [any PersistentModel] { objects.updatedObjects.compactMap { model(for: $0) } }
    /// The models deleted and not saved.
    public var deletedModelsArray: [any PersistentModel] { objects.deletedObjects.compactMap { model(for: $0) } }

    /// Saves every change in one transaction of the store: all of it, or nothing and an error
    /// (failed validation names every failure; a uniqueness or delete rule names the model).
    /// A failure of an earlier change (a relationship to a model of another context, say) is
    /// reported here, and nothing is saved.
    public func save() throws {
        if let first = deferred.first {
            deferred = []
            throw first
        }
        // Deleted models no longer belong to the context: their objects leave it.
        try objects.save()
    }

    /// Discards every unsaved change: inserted models leave the context, changed ones get their
    /// saved values back, deleted ones stay.
    public func rollback() {
        deferred = []
        // Inserted models leave the context with their objects.
        objects.rollback()
    }

    /// Runs `block`, then saves what it changed; when it throws (or the save fails), everything
    /// it changed is rolled back.
    public func transaction(block: () throws -> Void) throws {
        do {
            try block()
            try save()
        } catch {
            rollback()
            throw error
        }
    }

    /// Saves now what an autosave would save later (a context with autosave off: nothing).
    public func processPendingChanges() {
        guard autosaveEnabled, hasChanges else { return }
        try? save()
    }

    // MARK: Reads

    /// The models `descriptor` selects, in its order.
    /// - Throws: `StoreError` when the store cannot be read.
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [T] {
        processPendingChanges()
        let plan = FetchPlan(descriptor, entity: T.entityName)
        var found: [T]
        if let identifiers = plan.identifiers {
            // Only the models named: each read by its key (or found in the context), not every model of the type.
            var seen: Set<PersistentIdentifier> = []
            found = try identifiers.compactMap { id in
                guard seen.insert(id).inserted, id.entityName == T.entityName, let objectID = id.objectID,
                      let object = try objects.object(with: objectID), !object.isDeleted else { return nil }
                return model(for: object, as: T.self)
            }.sorted { $0.persistentModelID < $1.persistentModelID }
        } else {
            found = try objects.fetch(plan.request).compactMap { model(for: $0, as: T.self) }
        }
        if let residual = plan.residual { found = try found.filter { try residual.evaluate($0) } }
        if plan.sortsInSwift { found.sort(using: descriptor.sortBy) }
        if plan.windowsInSwift {
            found = Array(found.dropFirst(descriptor.fetchOffset ?? 0).prefix(descriptor.fetchLimit ?? Int.max))
        }
        try prefetch(descriptor.relationshipKeyPathsForPrefetching, of: found)
        return found
    }

    /// The models `descriptor` selects, as a collection (SwiftData's form of a batched fetch).
    /// The store is read once, as by ``fetch(_:)``: a model holds no copy of its values (it
    /// reads them from the context's object when asked), so there is nothing for batches to
    /// spare; `batchSize` is accepted for source compatibility.
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, batchSize: Int) throws -> FetchResultsCollection<T> {
        FetchResultsCollection(models: try fetch(descriptor))
    }

    /// How many models `descriptor` selects.
    public func fetchCount<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> Int {
        let plan = FetchPlan(descriptor, entity: T.entityName)
        guard plan.residual == nil, !plan.windowsInSwift, plan.identifiers == nil else { return try fetch(descriptor).count }
        return try objects.count(plan.request)
    }

    /// How the store runs the fetch of `descriptor`: its database's plan, one line per step
    /// (SQLite's `EXPLAIN QUERY PLAN`: `SEARCH ZBOOK USING INDEX …` when a predicate uses an
    /// index); empty for a store that has none to show.
    public func queryPlan<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [String] {
        let plan = FetchPlan(descriptor, entity: T.entityName)
        guard let store = try container.coordinator.store(forEntity: T.entityName) as? any QueryPlanning else { return [] }
        return try store.queryPlan(plan.request)
    }

    /// The identifiers of the models `descriptor` selects.
    public func fetchIdentifiers<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [PersistentIdentifier] {
        try fetch(descriptor).map(\.persistentModelID)
    }

    /// Calls `block` with each model `descriptor` selects, reading `batchSize` at a time.
    public func enumerate<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, batchSize: Int = 5_000, allowEscapingMutations: Bool = false,
                                              block: (T) throws -> Void) throws {
        var page = descriptor
        let start = descriptor.fetchOffset ?? 0
        let end = descriptor.fetchLimit.map { start + $0 } ?? Int.max
        var offset = start
        while offset < end {
            page.fetchOffset = offset
            page.fetchLimit = min(batchSize, end - offset)
            let batch = try fetch(page)
            for model in batch { try block(model) }
            if batch.count < page.fetchLimit! { break }
            offset += batch.count
        }
    }

    /// The model with `id`: the context's, or one read from the store; its properties are read
    /// when first used. A temporary identifier, or one of a model that is gone, gives a model
    /// whose properties read as empty; ``registeredModel(for:)`` says whether the context has it.
    public func model(for id: PersistentIdentifier) -> any PersistentModel {
        if let objectID = id.objectID, let object = try? objects.object(with: objectID), let model = model(for: object) { return model }
        guard let type = container.schema.type(of: id.entityName) else {
            preconditionFailure("\(id): no model type of the container's schema is named \(id.entityName)")
        }
        return type.init(_$storage: ModelStorage())
    }

    /// The model with `id`: the context's, or read from the store; nil when there is none (a
    /// temporary identifier, a model deleted or of another type).
    func existingModel<T: PersistentModel>(for id: PersistentIdentifier, as type: T.Type) -> T? {
        guard id.entityName == T.entityName, let objectID = id.objectID,
              let object = try? objects.object(with: objectID), !object.isDeleted else { return nil }
        return model(for: object, as: T.self)
    }

    /// The model with `id` if the context holds it, else nil.
    public func registeredModel<T: PersistentModel>(for id: PersistentIdentifier) -> T? {
        id.objectID.flatMap { objects.registeredObject(for: $0)?.companion } as? T
    }

    // MARK: Models and objects

    /// The model of an object of this context (made, without its initializer, the first time).
    func model<T: PersistentModel>(for object: ManagedObject, as type: T.Type) -> T? {
        if let model = object.companion as? T { return model }
        // An object of T's entity is made a T here, with no lookup; any other goes the general way.
        guard object.entity.name == T.entityName, object.companion == nil else { return model(for: object) as? T }
        let model = T(_$storage: ModelStorage(object: object, context: self))
        object.companion = model
        return model
    }

    func model(for object: ManagedObject) -> (any PersistentModel)? {
        if let model = object.companion as? any PersistentModel { return model }
        guard let type = container.schema.type(of: object.entity.name) else { return nil }
        let model = type.init(_$storage: ModelStorage(object: object, context: self))
        object.companion = model
        return model
    }

    /// The object of `model`, inserting it (and what it reaches) when it has none.
    func attach(_ model: any PersistentModel) -> ManagedObject? {
        if let object = model._$storage.object {
            if object.context != nil {
                guard model._$storage.context === self else {
                    self.defer(ModelContextError("\(model.persistentModelID) belongs to another context: a relationship joins models of one context"))
                    return nil
                }
                return object
            }
            // Its object left its context (a rolled-back insertion, a saved deletion): inserted anew, empty.
            model._$storage = ModelStorage()
        }
        let entity = type(of: model).entityName
        let object: ManagedObject
        let upserted: Bool
        do {
            if let existing = try uniqueMatch(for: model) {
                (object, upserted) = (existing, true)
            } else {
                (object, upserted) = (try objects.insert(entity), false)
            }
        } catch {
            self.defer(error)
            return nil
        }
        model._$storage.object = object
        model._$storage.context = self
        if object.companion == nil { object.companion = model }
        // What was set before insertion, now on the object (related models inserted on the way).
        // An upsert takes the new attributes, and adds to the relationships without emptying them.
        let pending = model._$storage.pending
        model._$storage.unsaved = nil
        // A copy: with its object set, its setters write to the object, not to itself.
        var storage = model._$storage
        for (key, value) in pending {
            switch value {
            case .attribute(let value): storage.setAttribute(value, key)
            case .toOne(let target):
                if !upserted || target != nil { storage.setToOne(target, key) }
            case .toMany(let targets):
                guard upserted else {
                    storage.setToMany(targets, key)
                    continue
                }
                for target in targets {
                    guard let related = attach(target) else { continue }
                    do { try object.addObject(related, forKey: key) } catch { self.defer(error) }
                }
            }
        }
        return object
    }

    /// The stored or inserted object whose values for one of the model's uniqueness constraints
    /// equal the model's (its values set before insertion), if any.
    private func uniqueMatch(for model: any PersistentModel) throws -> ManagedObject? {
        let type = type(of: model)
        for constraint in type._$uniqueness {
            var conditions: [ObjectPredicate] = []
            for key in constraint {
                guard case .attribute(let value)? = model._$storage.unsaved?[key] else { break }
                conditions.append(.compare(key, .equal, value))
            }
            guard conditions.count == constraint.count, !conditions.isEmpty else { continue }
            let request = FetchRequest(entity: type.entityName, predicate: conditions.count == 1 ? conditions[0] : .and(conditions), fetchLimit: 1)
            if let match = try objects.fetch(request).first { return match }
        }
        return nil
    }

    /// Loads the related models of `keyPaths` for `models`, so reading them reads no more.
    private func prefetch<T: PersistentModel>(_ keyPaths: [PartialKeyPath<T>], of models: [T]) throws {
        for keyPath in keyPaths {
            guard let name = T.propertyName(keyPath) else { continue }
            for model in models { _ = try model._$storage.object?.objects(forKey: name) }
        }
    }

    /// Keeps a failure for the next save.
    func `defer`(_ error: any Error) {
        deferred.append(error)
    }

    /// Runs `read`, keeping its failure for the next save; nil when it failed.
    func objectOrDefer<R>(_ read: () throws -> R) -> R? {
        do { return try read() } catch {
            self.defer(error)
            return nil
        }
    }

    deinit {
        // Autosave: what is left unsaved is saved when the context goes (a failure is dropped, as an autosave's is).
        if autosaveEnabled, objects.hasChanges { try? objects.save() }
    }
}

/// A failure of a change to models, reported by ``ModelContext/save()``.
public struct ModelContextError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// How a fetch runs: the store's request, and what is left to Swift.
struct FetchPlan<T: PersistentModel> {
    var request: FetchRequest
    /// The predicate, when the store's request does not say all of it.
    var residual: Predicate<T>?
    /// Whether the sort is done in Swift (a key path or comparator the store does not have).
    var sortsInSwift = false
    /// Whether the offset and limit are applied in Swift (after a residual predicate or sort).
    var windowsInSwift = false
    /// The models the predicate names by identity, read one by one (``IdentityLookup``).
    var identifiers: [PersistentIdentifier]?

    init(_ descriptor: FetchDescriptor<T>, entity: String) {
        request = FetchRequest(entity: entity)
        if let predicate = descriptor.predicate, let identifiers = IdentityLookup.identifiers(predicate) {
            // Read by key, then sorted and windowed in Swift.
            self.identifiers = identifiers
            sortsInSwift = !descriptor.sortBy.isEmpty
            windowsInSwift = true
            return
        }
        if let predicate = descriptor.predicate {
            let (translated, complete) = PredicateTranslator.translate(predicate)
            request.predicate = translated
            if !complete { residual = predicate }
        }
        var sorts: [ObjectSortDescriptor] = []
        for descriptor in descriptor.sortBy {
            guard descriptor.stringComparator == nil, let keyPath = descriptor.keyPath, let name = T.propertyName(keyPath), !T.isToMany(name) else {
                sortsInSwift = true
                break
            }
            sorts.append(ObjectSortDescriptor(name, ascending: descriptor.order == .forward))
        }
        if !sortsInSwift { request.sortDescriptors = sorts }
        windowsInSwift = residual != nil || sortsInSwift
        if !windowsInSwift {
            request.fetchLimit = descriptor.fetchLimit
            request.fetchOffset = descriptor.fetchOffset ?? 0
        }
    }
}

/// The models of a fetch, in its order (``ModelContext/fetch(_:batchSize:)``).
public struct FetchResultsCollection<Element: PersistentModel>: RandomAccessCollection {
    let models: [Element]
    public var startIndex: Int { models.startIndex }
    public var endIndex: Int { models.endIndex }
    public subscript(position: Int) -> Element { models[position] }
}
