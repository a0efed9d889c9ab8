import Foundation

/// Validation rules of an attribute, checked when a context saves.
///
/// None of them enters the version hash: changing a rule never requires a migration.
public struct ValidationRules: Sendable, Hashable {
    /// The smallest value a number or date may have.
    public var minValue: Value?
    /// The largest value a number or date may have.
    public var maxValue: Value?
    /// The fewest characters of a string (bytes of binary data).
    public var minLength: Int?
    /// The most characters of a string (bytes of binary data).
    public var maxLength: Int?
    /// A regular expression a string must match in full.
    public var pattern: String?

    /// Creates rules; every rule is optional.
    public init(minValue: Value? = nil, maxValue: Value? = nil, minLength: Int? = nil, maxLength: Int? = nil, pattern: String? = nil) {
        self.minValue = minValue
        self.maxValue = maxValue
        self.minLength = minLength
        self.maxLength = maxLength
        self.pattern = pattern
    }

    /// Whether no rule is set.
    public var isEmpty: Bool {
        minValue == nil && maxValue == nil && minLength == nil && maxLength == nil && pattern == nil
    }
}

/// An attribute of an entity: a named, typed value.
///
/// ```swift
/// let age = Attribute("age", .integer16, optional: false, default: .integer(0))
/// ```
public struct Attribute: Sendable, Hashable {
    /// The attribute's name, unique in its entity's hierarchy.
    public var name: String
    /// The type of the values it holds.
    public var type: AttributeType
    /// Whether it may be nil when saved.
    public var isOptional: Bool
    /// Whether it lives only in memory: never stored, never hashed.
    public var isTransient: Bool
    /// The value a newly inserted object starts with.
    public var defaultValue: Value?
    /// Rules checked at save.
    public var validation: ValidationRules
    /// The attribute's name in the previous model version, for migrations.
    public var renamingIdentifier: String?
    /// Text mixed into the version hash to force a migration without a schema change.
    public var versionHashModifier: String?
    /// Whether large binary values may live outside the store (hashed, as in Core Data).
    public var allowsExternalBinaryDataStorage: Bool
    /// Whether the value is kept in history after deletion (hashed, as in Core Data).
    public var preservesValueInHistoryOnDeletion: Bool
    /// The name of the value transformer of a transformable attribute (informational).
    public var valueTransformerName: String?
    /// Free-form key-value pairs for the application.
    public var userInfo: [String: String]

    /// Creates an attribute.
    public init(
        _ name: String, _ type: AttributeType, optional: Bool = true, transient: Bool = false,
        default defaultValue: Value? = nil, validation: ValidationRules = ValidationRules(),
        renamingIdentifier: String? = nil, versionHashModifier: String? = nil,
        allowsExternalBinaryDataStorage: Bool = false, preservesValueInHistoryOnDeletion: Bool = false,
        valueTransformerName: String? = nil, userInfo: [String: String] = [:]
    ) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.isTransient = transient
        self.defaultValue = defaultValue
        self.validation = validation
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        self.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
        self.valueTransformerName = valueTransformerName
        self.userInfo = userInfo
    }
}

/// What happens to related objects when an object is deleted.
public enum DeleteRule: String, Sendable, Hashable, Codable, CaseIterable {
    /// Related objects lose their reference to the deleted object.
    case nullify
    /// Related objects are deleted too.
    case cascade
    /// The delete fails while any related object remains.
    case deny
    /// Nothing is done; references to the deleted object dangle.
    case noAction
}

/// A relationship from one entity to another.
///
/// ```swift
/// let pets = Relationship("pets", to: "Pet", inverse: "owner", toMany: true, deleteRule: .cascade)
/// ```
public struct Relationship: Sendable, Hashable {
    /// The relationship's name, unique in its entity's hierarchy.
    public var name: String
    /// The name of the entity it points to.
    public var destination: String
    /// The name of the relationship on the destination that points back, if any.
    public var inverse: String?
    /// Whether it holds a collection of objects.
    public var isToMany: Bool
    /// Whether a to-many relationship keeps its objects in order.
    public var isOrdered: Bool
    /// The fewest objects a to-many holds at save (0: no minimum).
    public var minCount: Int
    /// The most objects a to-many holds at save (0: no maximum). Always 1 for a to-one.
    public var maxCount: Int
    /// What happens to the related objects when the source object is deleted.
    public var deleteRule: DeleteRule
    /// Whether it may be empty (nil for a to-one) when saved.
    public var isOptional: Bool
    /// Whether it lives only in memory: never stored, never hashed.
    public var isTransient: Bool
    /// The relationship's name in the previous model version, for migrations.
    public var renamingIdentifier: String?
    /// Text mixed into the version hash to force a migration without a schema change.
    public var versionHashModifier: String?
    /// Free-form key-value pairs for the application.
    public var userInfo: [String: String]

    /// Creates a relationship.
    public init(
        _ name: String, to destination: String, inverse: String? = nil, toMany: Bool = false,
        ordered: Bool = false, minCount: Int = 0, maxCount: Int? = nil, deleteRule: DeleteRule = .nullify,
        optional: Bool = true, transient: Bool = false, renamingIdentifier: String? = nil,
        versionHashModifier: String? = nil, userInfo: [String: String] = [:]
    ) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.isToMany = toMany
        self.isOrdered = ordered
        self.minCount = minCount
        self.maxCount = maxCount ?? (toMany ? 0 : 1)
        self.deleteRule = deleteRule
        self.isOptional = optional
        self.isTransient = transient
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.userInfo = userInfo
    }
}

/// A fetch index over one or more properties of an entity.
public struct FetchIndex: Sendable, Hashable, Codable {
    /// One property of the index and its order.
    public struct Element: Sendable, Hashable, Codable {
        /// The property's name.
        public var property: String
        /// Whether the index sorts this property ascending.
        public var ascending: Bool
        /// Creates an index element.
        public init(_ property: String, ascending: Bool = true) {
            self.property = property
            self.ascending = ascending
        }
    }

    /// The index's name.
    public var name: String
    /// The indexed properties, in order.
    public var elements: [Element]

    /// Creates an index.
    public init(name: String, elements: [Element]) {
        self.name = name
        self.elements = elements
    }
}

/// An entity as declared: its own properties and a reference to its parent.
///
/// A ``ManagedObjectModel`` resolves entities into ``EntityDescription``s,
/// which add the inherited properties and the hierarchy.
public struct Entity: Sendable, Hashable {
    /// The entity's name, unique in the model.
    public var name: String
    /// The name of the parent entity, if it inherits from one.
    public var parent: String?
    /// Whether it can have no instances of its own (only of sub-entities).
    public var isAbstract: Bool
    /// Its own attributes (inherited ones are not repeated).
    public var attributes: [Attribute]
    /// Its own relationships (inherited ones are not repeated).
    public var relationships: [Relationship]
    /// The entity's name in the previous model version, for migrations.
    public var renamingIdentifier: String?
    /// Text mixed into the version hash to force a migration without a schema change.
    public var versionHashModifier: String?
    /// Sets of attribute names whose combined values are unique among instances.
    public var uniquenessConstraints: [[String]]
    /// Fetch indexes.
    public var indexes: [FetchIndex]
    /// The class name Xcode generates for the entity (informational).
    public var representedClassName: String?
    /// Free-form key-value pairs for the application.
    public var userInfo: [String: String]

    /// Creates an entity.
    public init(
        _ name: String, parent: String? = nil, abstract: Bool = false, attributes: [Attribute] = [],
        relationships: [Relationship] = [], renamingIdentifier: String? = nil, versionHashModifier: String? = nil,
        uniquenessConstraints: [[String]] = [], indexes: [FetchIndex] = [], representedClassName: String? = nil,
        userInfo: [String: String] = [:]
    ) {
        self.name = name
        self.parent = parent
        self.isAbstract = abstract
        self.attributes = attributes
        self.relationships = relationships
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.uniquenessConstraints = uniquenessConstraints
        self.indexes = indexes
        self.representedClassName = representedClassName
        self.userInfo = userInfo
    }
}
