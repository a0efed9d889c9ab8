import Foundation

/// What to fetch: a predicate, an order and a window, over one model type.
///
/// ```swift
/// var descriptor = FetchDescriptor<Trip>(predicate: #Predicate { $0.name.contains("a") }, sortBy: [SortDescriptor(\.start, order: .reverse)])
/// descriptor.fetchLimit = 10
/// let trips = try context.fetch(descriptor)
/// ```
///
/// The predicate and the sort run in the store (in SQL on SQLite and PostgreSQL, with their
/// indexes) as far as they translate (docs/typed-models.md lists what does); the rest is
/// evaluated on the models the store gives, with the same answers.
public struct FetchDescriptor<T: PersistentModel> {
    /// The condition models must meet; nil for every model.
    public var predicate: Predicate<T>?
    /// The order, most significant first; ties come in the order the models were inserted.
    public var sortBy: [SortDescriptor<T>]
    /// The most models to return; nil for no limit.
    public var fetchLimit: Int?
    /// How many matching models to skip first.
    public var fetchOffset: Int?
    /// Whether models inserted and not yet saved are included (the default).
    public var includePendingChanges: Bool
    /// The properties to load; all of them are (accepted for source compatibility).
    public var propertiesToFetch: [PartialKeyPath<T>]
    /// Relationships whose models to load with the fetch, in one read each.
    public var relationshipKeyPathsForPrefetching: [PartialKeyPath<T>]

    /// A descriptor.
    public init(predicate: Predicate<T>? = nil, sortBy: [SortDescriptor<T>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
        fetchLimit = nil
        fetchOffset = nil
        includePendingChanges = true
        propertiesToFetch = []
        relationshipKeyPathsForPrefetching = []
    }
}
