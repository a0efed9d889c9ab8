/// One property in an ``Entity`` built with ``PropertyBuilder``.
public enum PropertyDeclaration: Sendable, Hashable {
    case attribute(Attribute)
    case relationship(Relationship)
}

/// Builds an entity's property list from attribute and relationship expressions.
@resultBuilder
public enum PropertyBuilder {
    public static func buildExpression(_ a: Attribute) -> [PropertyDeclaration] { [.attribute(a)] }
    public static func buildExpression(_ r: Relationship) -> [PropertyDeclaration] { [.relationship(r)] }
    public static func buildBlock(_ parts: [PropertyDeclaration]...) -> [PropertyDeclaration] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [PropertyDeclaration]?) -> [PropertyDeclaration] { part ?? [] }
    public static func buildEither(first part: [PropertyDeclaration]) -> [PropertyDeclaration] { part }
    public static func buildEither(second part: [PropertyDeclaration]) -> [PropertyDeclaration] { part }
    public static func buildArray(_ parts: [[PropertyDeclaration]]) -> [PropertyDeclaration] { parts.flatMap { $0 } }
}

/// Builds a model's entity list.
@resultBuilder
public enum EntityBuilder {
    public static func buildExpression(_ e: Entity) -> [Entity] { [e] }
    public static func buildBlock(_ parts: [Entity]...) -> [Entity] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [Entity]?) -> [Entity] { part ?? [] }
    public static func buildEither(first part: [Entity]) -> [Entity] { part }
    public static func buildEither(second part: [Entity]) -> [Entity] { part }
    public static func buildArray(_ parts: [[Entity]]) -> [Entity] { parts.flatMap { $0 } }
}

extension Entity {
    /// Creates an entity from a list of properties.
    ///
    /// ```swift
    /// Entity("Person") {
    ///     Attribute("name", .string, optional: false)
    ///     Relationship("pets", to: "Pet", inverse: "owner", toMany: true)
    /// }
    /// ```
    public init(
        _ name: String, parent: String? = nil, abstract: Bool = false, uniquenessConstraints: [[String]] = [],
        indexes: [FetchIndex] = [], renamingIdentifier: String? = nil, versionHashModifier: String? = nil,
        @PropertyBuilder properties: () -> [PropertyDeclaration]
    ) {
        var attributes: [Attribute] = []
        var relationships: [Relationship] = []
        for property in properties() {
            switch property {
            case .attribute(let a): attributes.append(a)
            case .relationship(let r): relationships.append(r)
            }
        }
        self.init(
            name, parent: parent, abstract: abstract, attributes: attributes, relationships: relationships,
            renamingIdentifier: renamingIdentifier, versionHashModifier: versionHashModifier,
            uniquenessConstraints: uniquenessConstraints, indexes: indexes)
    }
}

extension ManagedObjectModel {
    /// Builds and checks a model from a list of entities.
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(versionIdentifiers: ["1"]) {
    ///     Entity("Person") { Attribute("name", .string) }
    /// }
    /// ```
    /// - Throws: ``ModelError`` listing every problem.
    public init(
        versionIdentifiers: [String] = [], configurations: [String: [String]] = [:],
        @EntityBuilder entities: () -> [Entity]
    ) throws {
        try self.init(entities: entities(), configurations: configurations, versionIdentifiers: versionIdentifiers)
    }
}
