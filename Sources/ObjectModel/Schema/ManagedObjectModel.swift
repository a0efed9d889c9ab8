import Foundation
import Synchronization

/// A checked, immutable schema: the entities, their hierarchy and their version hashes.
///
/// Building one checks the whole model and throws a ``ModelError`` listing
/// every problem: an unknown destination or parent entity, an inverse that
/// does not point back, an inheritance cycle, a property declared twice in one
/// hierarchy, a default value of the wrong type.
///
/// ```swift
/// let model = try ManagedObjectModel {
///     Entity("Person") { Attribute("name", .string, optional: false) }
/// }
/// print(model.versionHashes["Person"]!.hexString)
/// ```
public struct ManagedObjectModel: Sendable, Hashable {
    /// The entities as declared, in declaration order.
    public let entities: [Entity]
    /// Named configurations: each names the entities its store holds.
    public let configurations: [String: [String]]
    /// The model's version identifiers (Core Data's `versionIdentifiers`).
    public let versionIdentifiers: [String]

    private let resolved: ResolvedModel
    /// What is worked out from the model on first use and kept: its JSON form and checksum.
    let derived = DerivedValues()

    /// Builds and checks a model.
    ///
    /// - Parameters:
    ///   - entities: the entities, each with its own properties.
    ///   - configurations: configuration name to entity names.
    ///   - versionIdentifiers: identifiers recorded in stores made with this model.
    /// - Throws: ``ModelError`` with code ``ModelError/Code/inconsistentModel`` listing every problem.
    public init(entities: [Entity], configurations: [String: [String]] = [:], versionIdentifiers: [String] = []) throws {
        self.entities = entities
        self.configurations = configurations
        self.versionIdentifiers = versionIdentifiers
        self.resolved = try ResolvedModel(entities: entities, configurations: configurations)
    }

    public static func == (a: ManagedObjectModel, b: ManagedObjectModel) -> Bool {
        a.entities == b.entities && a.configurations == b.configurations && a.versionIdentifiers == b.versionIdentifiers
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(entities)
        hasher.combine(versionIdentifiers)
    }

    /// The resolved entity named `name`, or nil.
    public func entity(named name: String) -> EntityDescription? { resolved.byName[name] }

    /// Every resolved entity, in ascending order of name.
    public var entityDescriptions: [EntityDescription] { resolved.sorted }

    /// The names of every entity, in ascending order.
    public var entityNames: [String] { resolved.sorted.map(\.name) }

    /// The version hash of every entity, by entity name.
    public var versionHashes: [String: Data] { resolved.hashes }

    /// The model's version checksum: SHA-256 over the entity hashes in
    /// ascending order of entity name, base64-encoded.
    public var versionChecksum: String {
        derived.checksum.withLock { checksum in
            if let checksum { return checksum }
            let computed = VersionHasher.checksum(of: resolved.hashes)
            checksum = computed
            return computed
        }
    }

    /// Core Data's digest of the entity hashes (`NSStoreModelVersionHashesDigest`): SHA-512 over
    /// each entity's name and hash in ascending order of name, base64-encoded.
    public var versionHashesDigest: String { VersionHasher.hashesDigest(of: resolved.hashes) }

    /// The names of the entities a configuration holds (every entity for nil or unknown names).
    public func entityNames(inConfiguration configuration: String?) -> [String] {
        guard let configuration, let names = configurations[configuration] else { return entityNames }
        return names.sorted()
    }
}

/// An entity resolved within its model: own and inherited properties, its
/// place in the hierarchy, and its version hash.
///
/// Instances are immutable and shared; get them from ``ManagedObjectModel/entity(named:)``.
public final class EntityDescription: Sendable, CustomStringConvertible {
    /// The declared entity.
    public let declaration: Entity
    /// Every attribute, inherited ones first (root to leaf), then own ones.
    public let attributes: [Attribute]
    /// Every relationship, inherited ones first (root to leaf), then own ones.
    public let relationships: [Relationship]
    /// Attributes by name.
    public let attributesByName: [String: Attribute]
    /// Relationships by name.
    public let relationshipsByName: [String: Relationship]
    /// The names of the ancestors, from the parent up to the root.
    public let ancestors: [String]
    /// The names of the direct sub-entities, in ascending order.
    public let subentities: [String]
    /// The names of this entity and of every entity below it, in ascending order.
    public let kindNames: [String]
    /// The entity's version hash (32 bytes).
    public let versionHash: Data
    /// The uniqueness constraints its instances obey: its ancestors' (root first), then its own.
    public let uniquenessConstraints: [UniquenessConstraint]

    init(declaration: Entity, attributes: [Attribute], relationships: [Relationship], ancestors: [String],
         subentities: [String], kindNames: [String], versionHash: Data, uniquenessConstraints: [UniquenessConstraint] = []) {
        self.declaration = declaration
        self.uniquenessConstraints = uniquenessConstraints
        self.attributes = attributes
        self.relationships = relationships
        self.storedAttributes = attributes.filter { !$0.isTransient }
        self.storedRelationships = relationships.filter { !$0.isTransient }
        self.layout = EntityLayout(entity: declaration.name, attributes: storedAttributes, relationships: storedRelationships)
        self.objectAttributes = storedAttributes + attributes.filter(\.isTransient)
        self.objectSlots = Dictionary(objectAttributes.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
        self.attributesByName = Dictionary(attributes.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        self.relationshipsByName = Dictionary(relationships.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        self.ancestors = ancestors
        self.subentities = subentities
        self.kindNames = kindNames
        self.versionHash = versionHash
    }

    /// The entity's name.
    public var name: String { declaration.name }
    /// The parent entity's name.
    public var parent: String? { declaration.parent }
    /// Whether it can have no instances of its own.
    public var isAbstract: Bool { declaration.isAbstract }
    /// The root of its hierarchy (itself when it has no parent).
    public var rootName: String { ancestors.last ?? name }
    /// Attributes that are stored (not transient).
    public let storedAttributes: [Attribute]
    /// Relationships that are stored (not transient).
    public let storedRelationships: [Relationship]
    /// The slots of its stored attributes and to-one relationships.
    public let layout: EntityLayout
    /// Every attribute in the order an object in memory keeps their values: the stored ones
    /// at their ``layout`` slots (0, 1, 2…), then the transient ones.
    public let objectAttributes: [Attribute]
    private let objectSlots: [String: Int]
    /// The place of an attribute's value in ``objectAttributes`` (its layout slot for a
    /// stored attribute), or nil when the entity has no attribute of that name.
    public func objectSlot(_ name: String) -> Int? { objectSlots[name] }
    /// Whether this entity is `name` or descends from it.
    public func isKind(of name: String) -> Bool { self.name == name || ancestors.contains(name) }
    public var description: String { "Entity \(name)" }
}

/// The derived state of a model, computed once when it is built.
/// Values computed from an immutable model once, on first use (stores created by the
/// thousand in a test suite embed the same model each time).
final class DerivedValues: Sendable {
    let json = Mutex<Data?>(nil)
    let checksum = Mutex<String?>(nil)
}

private final class ResolvedModel: Sendable {
    let byName: [String: EntityDescription]
    let sorted: [EntityDescription]
    let hashes: [String: Data]

    init(entities: [Entity], configurations: [String: [String]]) throws {
        var problems = ModelChecker.problems(entities: entities, configurations: configurations)
        guard problems.isEmpty else { throw ModelError(.inconsistentModel, problems: problems) }

        let declared = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var children: [String: [String]] = [:]
        for e in entities { if let p = e.parent { children[p, default: []].append(e.name) } }
        func ancestors(_ name: String) -> [String] {
            var chain: [String] = []
            var current = declared[name]?.parent
            while let p = current { chain.append(p); current = declared[p]?.parent }
            return chain
        }
        func kinds(_ name: String) -> [String] {
            [name] + (children[name] ?? []).flatMap(kinds)
        }
        var byName: [String: EntityDescription] = [:]
        var hashes: [String: Data] = [:]
        // Parents first, so a child's hash can use its parent's.
        for entity in entities.sorted(by: { ancestors($0.name).count < ancestors($1.name).count }) {
            let chain = ancestors(entity.name)
            let lineage = chain.reversed().compactMap { declared[$0] } + [entity]
            let attributes = lineage.flatMap(\.attributes)
            let relationships = lineage.flatMap(\.relationships)
            let hash = VersionHasher.entityHash(
                entity, attributes: attributes, relationships: relationships,
                parentHash: entity.parent.flatMap { hashes[$0] }, lineage: Set(chain + [entity.name]))
            hashes[entity.name] = hash
            byName[entity.name] = EntityDescription(
                declaration: entity, attributes: attributes, relationships: relationships, ancestors: chain,
                subentities: (children[entity.name] ?? []).sorted(), kindNames: kinds(entity.name).sorted(),
                versionHash: hash,
                uniquenessConstraints: lineage.flatMap { declaring in
                    declaring.uniquenessConstraints.filter { !$0.isEmpty }.map { UniquenessConstraint(entity: declaring.name, properties: $0) }
                })
        }
        problems = ModelChecker.relationshipProblems(byName)
        guard problems.isEmpty else { throw ModelError(.inconsistentModel, problems: problems) }
        self.byName = byName
        self.sorted = byName.values.sorted { $0.name < $1.name }
        self.hashes = hashes
    }
}
