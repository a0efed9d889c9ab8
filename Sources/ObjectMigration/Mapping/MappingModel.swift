import Synchronization
import Foundation
import ObjectModel
import ObjectStore

/// How one source entity becomes destination objects.
public struct EntityMapping: Sendable {
    /// Core Data's kinds of entity mapping.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// A destination entity with no source: no objects are made.
        case add
        /// A source entity with no destination: its objects are dropped.
        case remove
        /// Same entity, same properties: values copied as they are.
        case copy
        /// A changed entity: values computed by the property mappings.
        case transform
        /// A custom policy decides.
        case custom
    }

    /// The mapping's name, unique in the mapping model (`PersonToPerson`).
    public var name: String
    /// What the mapping does.
    public var kind: Kind
    /// The source entity (exactly this entity: sub-entities have mappings of their own).
    public var sourceEntity: String?
    /// The destination entity.
    public var destinationEntity: String?
    /// The source entity's version hash; a store whose hash differs is refused.
    public var sourceVersionHash: Data?
    /// The destination entity's version hash.
    public var destinationVersionHash: Data?
    /// Destination attribute name → value expression. Unmapped attributes take their default.
    public var attributeMappings: [String: MappingExpression]
    /// Destination relationship name → expression yielding source objects (mapped
    /// through the association) or destination objects.
    public var relationshipMappings: [String: MappingExpression]
    /// Only source objects matching this predicate are migrated.
    public var sourceFilter: ObjectPredicate?
    /// The name of a custom ``EntityMigrationPolicy`` in the policy registry.
    public var policyName: String?
    /// Free-form key-value pairs for policies.
    public var userInfo: [String: String]
    /// Destination attributes whose values identify an object: destination objects of this
    /// mapping with equal values of all of them are one object, found or created, and every
    /// source object that maps to it is associated with it (so `destinations(…)` of any of them
    /// gives the one object). Empty: every source object gets its own.
    public var uniqueBy: [String]

    /// Creates an entity mapping.
    public init(name: String, kind: Kind, sourceEntity: String?, destinationEntity: String?,
                sourceVersionHash: Data? = nil, destinationVersionHash: Data? = nil,
                attributeMappings: [String: MappingExpression] = [:], relationshipMappings: [String: MappingExpression] = [:],
                sourceFilter: ObjectPredicate? = nil, policyName: String? = nil, userInfo: [String: String] = [:], uniqueBy: [String] = []) {
        self.name = name
        self.kind = kind
        self.sourceEntity = sourceEntity
        self.destinationEntity = destinationEntity
        self.sourceVersionHash = sourceVersionHash
        self.destinationVersionHash = destinationVersionHash
        self.attributeMappings = attributeMappings
        self.relationshipMappings = relationshipMappings
        self.sourceFilter = sourceFilter
        self.policyName = policyName
        self.userInfo = userInfo
        self.uniqueBy = uniqueBy
    }
}

/// A mapping model: how a store of one model becomes a store of another.
///
/// Make one by hand, infer one (``MappingInference/inferredMapping(from:to:options:)``),
/// or take the identity mapping to convert a store between backends.
public struct MappingModel: Sendable {
    /// The entity mappings, in the order they run.
    public var entityMappings: [EntityMapping]
    /// The name of the model version the mapping starts from, when it says (a mapping file's
    /// `sourceVersion`): ``StoreMigrator`` matches the mapping to its step by it.
    public var sourceVersion: String?
    /// The name of the model version the mapping leads to, when it says.
    public var destinationVersion: String?
    /// Whether, naming no versions and recording no hashes, the mapping fits a step by the names
    /// of its entities and properties (``fitsByNames(from:to:)``): an Xcode mapping model's way.
    var fitsStepsByNames = false

    /// Creates a mapping model.
    public init(entityMappings: [EntityMapping], sourceVersion: String? = nil, destinationVersion: String? = nil) {
        self.entityMappings = entityMappings
        self.sourceVersion = sourceVersion
        self.destinationVersion = destinationVersion
    }

    /// The mapping named `name`.
    public func mapping(named name: String) -> EntityMapping? { entityMappings.first { $0.name == name } }

    /// Checks the mapping against the models it goes between, before any store is read: every
    /// entity it names exists, the version hashes it records are the models', every property it
    /// sets or makes unique by is one of its destination entity's, every `$source.<key path>` starts with a property
    /// of its source entity (and walks relationships to properties), every `destinations('Name', …)`
    /// names one of its entity mappings, and every policy it names is registered.
    /// - Throws: ``MigrationError`` with ``MigrationError/Code/invalidMapping`` naming the entity mapping.
    public func check(from source: ManagedObjectModel, to destination: ManagedObjectModel, policies: PolicyRegistry = .shared) throws {
        try check(from: source, to: destination, policies: Optional(policies))
    }

    /// Whether the mapping fits the two models by names alone: ``check(from:to:policies:)`` finds
    /// nothing wrong (policies aside), and its entity mappings name every concrete entity of both.
    /// How a mapping that records neither version names nor hashes is matched to a step.
    func fitsByNames(from source: ManagedObjectModel, to destination: ManagedObjectModel) -> Bool {
        guard (try? check(from: source, to: destination, policies: nil)) != nil else { return false }
        let sources = Set(entityMappings.compactMap(\.sourceEntity)), destinations = Set(entityMappings.compactMap(\.destinationEntity))
        return source.entityDescriptions.allSatisfy { $0.isAbstract || sources.contains($0.name) }
            && destination.entityDescriptions.allSatisfy { $0.isAbstract || destinations.contains($0.name) }
    }

    /// ``check(from:to:policies:)``; with no registry, policy names are not looked up.
    func check(from source: ManagedObjectModel, to destination: ManagedObjectModel, policies: PolicyRegistry?) throws {
        for m in entityMappings {
            func fail(_ message: String) -> MigrationError { MigrationError(.invalidMapping, message, mapping: m.name) }
            // A mapping that names no entity to read or to write would move nothing without a word.
            let needs: (source: Bool, destination: Bool) = switch m.kind {
            case .copy, .transform: (true, true)
            case .custom, .remove: (true, false)
            case .add: (false, true)
            }
            if needs.source && m.sourceEntity == nil { throw fail("a \(m.kind.rawValue) mapping names its source entity") }
            if needs.destination && m.destinationEntity == nil { throw fail("a \(m.kind.rawValue) mapping names its destination entity") }
            var from: EntityDescription?
            if let s = m.sourceEntity {
                guard let entity = source.entity(named: s) else { throw fail("the source model has no entity named \(s)") }
                if let expected = m.sourceVersionHash, entity.versionHash != expected {
                    throw MigrationError(.incompatibleSource, "the source model's \(s) hash differs from the mapping's", mapping: m.name)
                }
                from = entity
            }
            if let d = m.destinationEntity {
                guard let entity = destination.entity(named: d) else { throw fail("the destination model has no entity named \(d)") }
                if let expected = m.destinationVersionHash, entity.versionHash != expected {
                    throw fail("the destination model's \(d) hash differs from the mapping's")
                }
                for name in m.attributeMappings.keys where entity.attributesByName[name] == nil {
                    throw fail("\(d) has no attribute named \(name)")
                }
                for name in m.relationshipMappings.keys where entity.relationshipsByName[name] == nil {
                    throw fail("\(d) has no relationship named \(name)")
                }
                for name in m.uniqueBy where entity.attributesByName[name] == nil {
                    throw fail("uniqueBy: \(d) has no attribute named \(name)")
                }
            }
            if let name = m.policyName, let policies, policies.policy(named: name) == nil {
                throw fail("no migration policy named \(name) is registered: a program that migrates with this mapping registers "
                           + "one under that name in the PolicyRegistry (register(_:named: \(String(reflecting: name))))")
            }
            // Key paths from the source entity, through relationships, to a property.
            func walk(_ expression: MappingExpression) throws {
                switch expression {
                case .source(let path):
                    guard var entity = from, !path.isEmpty else { return }
                    for key in path.split(separator: ".").map(String.init) {
                        if entity.attributesByName[key] != nil { return }
                        guard let relationship = entity.relationshipsByName[key], let next = source.entity(named: relationship.destination) else {
                            throw fail("$source.\(path): \(entity.name) has no property named \(key)")
                        }
                        entity = next
                    }
                case .call(_, let arguments): for argument in arguments { try walk(argument) }
                case .destinations(let name, let inner):
                    if let name, mapping(named: name) == nil { throw fail("destinations: no entity mapping named \(name)") }
                    try walk(inner)
                case .constant, .custom: return
                }
            }
            for expression in Array(m.attributeMappings.values) + Array(m.relationshipMappings.values) { try walk(expression) }
            if let from, let d = m.destinationEntity, let made = destination.entity(named: d) {
                for (name, expression) in m.relationshipMappings.sorted(by: { $0.key < $1.key }) {
                    guard let relationship = made.relationshipsByName[name] else { continue }
                    if let problem = targetProblem(expression, from: from, to: relationship, source: source, destination: destination) {
                        throw fail("\(d).\(name): \(problem)")
                    }
                }
            }
        }
    }

    /// Why the objects `expression` gives cannot be members of `relationship` (the source objects
    /// it reaches are made into objects of another entity, or into none, or it gives values), or
    /// nil when they can or it cannot be told (a closure, a function, a policy's objects).
    private func targetProblem(_ expression: MappingExpression, from: EntityDescription, to relationship: Relationship,
                               source: ManagedObjectModel, destination: ManagedObjectModel) -> String? {
        var inner = expression, named: String?
        if case .destinations(let name, let of) = expression { (inner, named) = (of, name) }
        guard case .source(let path) = inner, !path.isEmpty else { return nil }
        // The entity the key path ends at.
        var entity = from
        for key in path.split(separator: ".").map(String.init) {
            if entity.attributesByName[key] != nil { return "$source.\(path) gives values of an attribute, not objects" }
            guard let step = entity.relationshipsByName[key], let next = source.entity(named: step.destination) else { return nil }
            entity = next
        }
        func fits(_ made: String?) -> Bool { made.flatMap { destination.entity(named: $0) }?.isKind(of: relationship.destination) == true }
        if let named {
            guard let mapping = self.mapping(named: named) else { return nil }
            return fits(mapping.destinationEntity) ? nil
                : "destinations('\(named)', $source.\(path)) are \(mapping.destinationEntity ?? "no") objects, not \(relationship.destination)"
        }
        let kinds = Set(entity.kindNames)
        let makers = entityMappings.filter { $0.sourceEntity.map(kinds.contains) == true && $0.kind != .remove && $0.kind != .add }
        guard !makers.isEmpty else {
            return "$source.\(path) gives \(entity.name) objects, which no entity mapping makes into \(relationship.destination) objects"
        }
        // Members of the wrong kind are left out at run time (a split entity, a narrowed destination):
        // refused only when no mapping makes any of them into a member.
        guard makers.contains(where: { $0.policyName != nil || $0.kind == .custom || fits($0.destinationEntity) }) else {
            let made = Set(makers.compactMap(\.destinationEntity)).sorted().joined(separator: ", ")
            return "$source.\(path) gives \(entity.name) objects, which the mapping makes into \(made), not \(relationship.destination)"
        }
        return nil
    }

    /// Copies every concrete entity of `model` unchanged: a conversion between backends.
    public static func identity(for model: ManagedObjectModel) -> MappingModel {
        MappingModel(entityMappings: model.entityDescriptions.filter { !$0.isAbstract }.map { entity in
            EntityMapping(
                name: "\(entity.name)To\(entity.name)", kind: .copy, sourceEntity: entity.name, destinationEntity: entity.name,
                sourceVersionHash: entity.versionHash, destinationVersionHash: entity.versionHash,
                attributeMappings: Dictionary(uniqueKeysWithValues: entity.storedAttributes.map { ($0.name, .source($0.name)) }),
                relationshipMappings: Dictionary(uniqueKeysWithValues: entity.storedRelationships.map { ($0.name, .source($0.name)) }))
        })
    }
}

/// Core Data's migration hooks, for entity mappings that need code.
///
/// Every hook has a default that does what the mapping says; a policy
/// overrides the ones it needs. Register policies by name in a
/// ``PolicyRegistry`` and name them in ``EntityMapping/policyName``.
public protocol EntityMigrationPolicy: Sendable {
    /// Before anything of the mapping runs.
    func beginEntityMapping(_ mapping: EntityMapping, context: MigrationContext) throws
    /// Makes the destination objects for one source object (zero, one or several),
    /// each with ``MigrationContext/insertDestination(entity:attributes:for:mapping:)``.
    func createDestinationInstances(for source: ObjectRecord, mapping: EntityMapping, context: MigrationContext) throws
    /// After every source object of the mapping went through phase 1.
    func endInstanceCreation(_ mapping: EntityMapping, context: MigrationContext) throws
    /// Sets the relationships of one destination object made from `source`.
    func createRelationships(forDestination destination: ObjectKey, source: ObjectRecord, mapping: EntityMapping,
                             context: MigrationContext) throws
    /// After phase 2 of the mapping.
    func endRelationshipCreation(_ mapping: EntityMapping, context: MigrationContext) throws
    /// Phase 3 beyond the model's rules: return one failure message per problem.
    func performCustomValidation(_ mapping: EntityMapping, context: MigrationContext) throws -> [ValidationFailure]
    /// After everything of the mapping.
    func endEntityMapping(_ mapping: EntityMapping, context: MigrationContext) throws
}

extension EntityMigrationPolicy {
    public func beginEntityMapping(_ mapping: EntityMapping, context: MigrationContext) throws {}

    public func createDestinationInstances(for source: ObjectRecord, mapping: EntityMapping, context: MigrationContext) throws {
        try context.insertMappedDestination(for: source, mapping: mapping)
    }

    public func endInstanceCreation(_ mapping: EntityMapping, context: MigrationContext) throws {}

    public func createRelationships(forDestination destination: ObjectKey, source: ObjectRecord, mapping: EntityMapping,
                                    context: MigrationContext) throws {
        for (name, targets, orderKeys) in try context.mappedLists(for: source, mapping: mapping, destination: destination) {
            try context.setRelationship(name, of: destination, to: targets, orderKeys: orderKeys, mapping: mapping)
        }
    }

    public func endRelationshipCreation(_ mapping: EntityMapping, context: MigrationContext) throws {}

    public func performCustomValidation(_ mapping: EntityMapping, context: MigrationContext) throws -> [ValidationFailure] { [] }

    public func endEntityMapping(_ mapping: EntityMapping, context: MigrationContext) throws {}
}

/// The policy of mappings that name none: exactly what the mapping says.
public struct DefaultMigrationPolicy: EntityMigrationPolicy {
    public init() {}
}

/// Custom migration policies by name.
public final class PolicyRegistry: Sendable {
    /// The registry mappings look names up in by default.
    public static let shared = PolicyRegistry()
    private let policies = Mutex<[String: any EntityMigrationPolicy]>([:])

    /// An empty registry.
    public init() {}

    /// Registers `policy` under `name`.
    public func register(_ policy: any EntityMigrationPolicy, named name: String) {
        policies.withLock { $0[name] = policy }
    }

    /// The policy named `name`.
    public func policy(named name: String) -> (any EntityMigrationPolicy)? { policies.withLock { $0[name] } }
}
