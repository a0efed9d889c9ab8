/// Makes a class a persistent model: its stored properties become the attributes and
/// relationships of an entity named after the class, kept by the context it is inserted into.
///
/// ```swift
/// @Model
/// final class Trip {
///     #Unique<Trip>([\.name])
///     var name: String
///     var start: Date
///     @Relationship(deleteRule: .cascade, inverse: \Stop.trip) var stops: [Stop] = []
///     @Transient var isSelected = false
///
///     init(name: String, start: Date) {
///         self.name = name
///         self.start = start
///     }
/// }
/// ```
///
/// Every persisted property needs its type written out. Attributes: `String`, `Bool`, the
/// integer types, `Double`, `Float`, `Decimal`, `Date`, `Data`, `UUID`, `URL`, optionals of
/// each, `RawRepresentable` `Codable` enums (stored as their raw value) and other `Codable`
/// types (stored as JSON, in a Transformable attribute). A property of a model type, an
/// optional of one or an array of one is a relationship (docs/typed-models.md).
@attached(member, names: named(_$storage), named(entityName), named(_$properties), named(_$uniqueness), named(_$indexes), named(init))
@attached(memberAttribute)
@attached(extension, conformances: PersistentModel)
public macro Model() = #externalMacro(module: "ObjectStoreDataMacros", type: "ModelMacro")

/// Made by `@Model` on each persisted property: the property's accessors over the model's storage.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(_))
public macro _PersistedProperty() = #externalMacro(module: "ObjectStoreDataMacros", type: "PersistedPropertyMacro")

/// Options for an attribute: `@Attribute(.unique)`, `@Attribute(.externalStorage)`,
/// `@Attribute(originalName: "title")` (the name in the previous schema version, for a
/// migration), `hashModifier` (Core Data's version hash modifier).
@attached(peer)
public macro Attribute(_ options: Schema.Attribute.Option..., originalName: String? = nil, hashModifier: String? = nil)
    = #externalMacro(module: "ObjectStoreDataMacros", type: "MarkerMacro")

/// Options for a relationship: its delete rule, its inverse (`inverse: \Stop.trip`), how many
/// models it may hold, its name in the previous schema version.
@attached(peer)
public macro Relationship(_ options: Schema.Relationship.Option..., deleteRule: Schema.Relationship.DeleteRule = .nullify,
                          minimumModelCount: Int? = 0, maximumModelCount: Int? = 0, originalName: String? = nil,
                          inverse: AnyKeyPath? = nil, hashModifier: String? = nil)
    = #externalMacro(module: "ObjectStoreDataMacros", type: "MarkerMacro")

/// A stored property the model does not persist (it needs an initial value).
@attached(peer)
public macro Transient() = #externalMacro(module: "ObjectStoreDataMacros", type: "MarkerMacro")

/// Uniqueness constraints of a model: each array of key paths is one constraint. Inserting a
/// model whose values for a constraint equal a stored model's updates that model (an upsert).
@freestanding(declaration)
public macro Unique<T>(_ constraints: [PartialKeyPath<T>]...) = #externalMacro(module: "ObjectStoreDataMacros", type: "ConstraintMacro")

/// Indexes of a model: each array of key paths is one index (SQLite and PostgreSQL create it).
@freestanding(declaration)
public macro Index<T>(_ indexes: [PartialKeyPath<T>]...) = #externalMacro(module: "ObjectStoreDataMacros", type: "ConstraintMacro")

/// Makes an actor a model actor: it gets `modelContainer` and a `modelContext` of its own,
/// isolated to it, and `init(modelContainer:)`.
///
/// ```swift
/// @ModelActor
/// actor Importer {
///     func importTrips(_ names: [String]) throws {
///         for name in names { modelContext.insert(Trip(name: name, start: .now)) }
///         try modelContext.save()
///     }
/// }
/// ```
@attached(member, names: named(modelContainer), named(modelContext), named(init))
@attached(extension, conformances: ModelActor)
public macro ModelActor() = #externalMacro(module: "ObjectStoreDataMacros", type: "ModelActorMacro")
