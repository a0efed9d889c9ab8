/// A uniqueness constraint as it applies to an entity's instances: no two instances of
/// ``entity`` (or of its sub-entities) have equal values for all of ``properties``.
///
/// An instance with no value (nil) for any of the properties is not constrained, as in
/// SQL's unique indexes: two objects whose `email` is nil never conflict.
///
/// ```swift
/// let car = model.entity(named: "SportCar")!
/// print(car.uniquenessConstraints.map(\.name))   // ["Car(numberPlate)"], inherited from Car
/// ```
public struct UniquenessConstraint: Sendable, Hashable, CustomStringConvertible {
    /// The entity that declares it (the entity itself or an ancestor).
    public let entity: String
    /// The constrained attributes and to-one relationships, in declared order.
    public let properties: [String]

    /// Creates a constraint declared on `entity` over `properties`.
    public init(entity: String, properties: [String]) {
        self.entity = entity
        self.properties = properties
    }

    /// How errors name it: `Person(firstName, lastName)`.
    public var name: String { "\(entity)(\(properties.joined(separator: ", ")))" }

    /// The name of the unique index Core Data creates for it in a SQLite store,
    /// `Z_<Entity>_UNIQUE_<property>_<property>` (seen in Apple-written stores:
    /// `Z_Person_UNIQUE_firstName_lastName`).
    public var indexName: String { "Z_\(entity)_UNIQUE_" + properties.joined(separator: "_") }

    public var description: String { name }
}
