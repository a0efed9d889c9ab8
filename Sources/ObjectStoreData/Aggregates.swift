import Foundation
import ObjectModel
import ObjectStore

/// One value an aggregate fetch of models answers with, named by a key path of the model:
/// `.count()`, `.sum(\.pages)`, `.average(\.rating, as: "mean")`.
public struct ModelAggregate<T: PersistentModel>: @unchecked Sendable {
    // `PartialKeyPath` is immutable; Swift 6.3 does not say it is Sendable.
    let function: AggregateFunction
    let keyPath: PartialKeyPath<T>?
    let name: String?

    /// How many models, or how many have a value at `keyPath`; named `count` (or `count(name)`) unless `name` is given.
    public static func count(_ keyPath: PartialKeyPath<T>? = nil, as name: String? = nil) -> Self { Self(function: .count, keyPath: keyPath, name: name) }
    /// The sum of a numeric property's values (an integer for integers, 0 over none); named `sum(name)` unless `name` is given.
    public static func sum(_ keyPath: PartialKeyPath<T>, as name: String? = nil) -> Self { Self(function: .sum, keyPath: keyPath, name: name) }
    /// The smallest of a property's values; named `min(name)` unless `name` is given.
    public static func min(_ keyPath: PartialKeyPath<T>, as name: String? = nil) -> Self { Self(function: .min, keyPath: keyPath, name: name) }
    /// The largest of a property's values; named `max(name)` unless `name` is given.
    public static func max(_ keyPath: PartialKeyPath<T>, as name: String? = nil) -> Self { Self(function: .max, keyPath: keyPath, name: name) }
    /// The mean of a numeric property's values, a `Double`; named `average(name)` unless `name` is given.
    public static func average(_ keyPath: PartialKeyPath<T>, as name: String? = nil) -> Self { Self(function: .average, keyPath: keyPath, name: name) }
}

extension ModelContext {
    /// Counts, sums, extremes and means over the saved models `descriptor` selects, in groups by
    /// the values at `groupBy` (`AggregateRow`: one row per group, in ascending order of its
    /// values; one row without groups). As Core Data's dictionary fetches, it reads what the store
    /// holds: save first for changes to count. The descriptor's sort and window are not used.
    ///
    /// ```swift
    /// let rows = try context.aggregate(FetchDescriptor<Book>(predicate: #Predicate { $0.pages > 100 }),
    ///                                  groupBy: [\.genre], [.count(), .average(\.pages, as: "pages")])
    /// ```
    ///
    /// The store computes it where it can (SQLite and PostgreSQL in one `SELECT … GROUP BY`).
    /// - Throws: ``ModelContextError`` for a key path that is not a stored attribute of `T`, or a
    ///   predicate the store cannot evaluate whole (one that names models by identity, or calls
    ///   what has no store form); `StoreError` as `PersistentStore.aggregate(_:)` throws.
    public func aggregate<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, groupBy: [PartialKeyPath<T>] = [],
                                              _ expressions: [ModelAggregate<T>]) throws -> [AggregateRow] {
        let plan = FetchPlan(descriptor, entity: T.entityName)
        guard plan.residual == nil, plan.identifiers == nil else {
            throw ModelContextError("\(T.entityName): an aggregate fetch needs a predicate the store evaluates whole")
        }
        func name(_ keyPath: AnyKeyPath) throws -> String {
            guard let name = T.propertyName(keyPath), !T.isToMany(name) else {
                throw ModelContextError("\(T.entityName): \(keyPath) is not a stored attribute")
            }
            return name
        }
        let request = AggregateRequest(
            entity: T.entityName, predicate: plan.request.predicate, groupBy: try groupBy.map { try name($0) },
            expressions: try expressions.map { expression in
                try AggregateExpression(expression.function, of: expression.keyPath.map { try name($0) }, as: expression.name)
            })
        return try container.coordinator.store(forEntity: T.entityName).aggregate(request)
    }
}
