/// An actor that works with models through a context of its own, isolated to it: what
/// `@ModelActor` makes of an actor. Models stay in the actor; identifiers cross.
///
/// ```swift
/// @ModelActor
/// actor Importer {
///     func add(_ names: [String]) throws -> [PersistentIdentifier] {
///         let trips = names.map { Trip(name: $0, start: .now) }
///         trips.forEach(modelContext.insert)
///         try modelContext.save()
///         return trips.map(\.persistentModelID)
///     }
/// }
/// let ids = try await Importer(modelContainer: container).add(["Lisbon", "Porto"])
/// ```
///
/// Unlike SwiftData's, the actor runs on its own executor (there is no `modelExecutor`): the
/// context is a stored property of the actor, so the compiler keeps it there.
public protocol ModelActor: Actor {
    /// The container the actor's context works on.
    nonisolated var modelContainer: ModelContainer { get }
    /// The actor's context.
    var modelContext: ModelContext { get }
}

extension ModelActor {
    /// The model with `id` in the actor's context, or nil when no such model exists (or it is
    /// not a `T`): the context's own, else read from the store.
    public subscript<T: PersistentModel>(id: PersistentIdentifier, as type: T.Type) -> T? {
        modelContext.existingModel(for: id, as: T.self)
    }
}
