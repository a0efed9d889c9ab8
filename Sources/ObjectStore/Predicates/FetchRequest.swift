/// How to order fetched objects: a key path and a direction.
///
/// Missing values sort first in ascending order; strings compare by their UTF-8 bytes.
public struct ObjectSortDescriptor: Sendable, Hashable {
    /// The key path to sort by (`name`, `owner.name`).
    public var keyPath: String
    /// Whether smaller values come first.
    public var ascending: Bool

    /// Creates a sort descriptor.
    public init(_ keyPath: String, ascending: Bool = true) {
        self.keyPath = keyPath
        self.ascending = ascending
    }
}

/// What to fetch: an entity, a predicate, an order and a window.
///
/// ```swift
/// var request = FetchRequest(entity: "Person", predicate: try ObjectPredicate("age > 30"))
/// request.sortDescriptors = [ObjectSortDescriptor("name")]
/// request.fetchLimit = 10
/// ```
public struct FetchRequest: Sendable, Hashable {
    /// The entity to fetch.
    public var entityName: String
    /// The condition objects must meet; nil for every object.
    public var predicate: ObjectPredicate?
    /// The order, most significant first; ties come in primary-key order.
    public var sortDescriptors: [ObjectSortDescriptor]
    /// The most objects to return; nil for no limit.
    public var fetchLimit: Int?
    /// How many matching objects to skip first.
    public var fetchOffset: Int
    /// Whether instances of sub-entities are included (the default).
    public var includesSubentities: Bool

    /// Creates a request.
    public init(entity: String, predicate: ObjectPredicate? = nil, sortDescriptors: [ObjectSortDescriptor] = [],
                fetchLimit: Int? = nil, fetchOffset: Int = 0, includesSubentities: Bool = true) {
        self.entityName = entity
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.includesSubentities = includesSubentities
    }
}
