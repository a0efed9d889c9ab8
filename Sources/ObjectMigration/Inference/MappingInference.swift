import Foundation
import ObjectModel
import ObjectStore

/// Lightweight migration: a mapping model computed from two models.
///
/// It infers what Core Data infers: added and removed entities, attributes
/// and relationships; renames through renaming identifiers (an element's
/// identifier is its renaming identifier, or its name when it has none, and
/// elements of the two models correspond when their identifiers are equal, so
/// renames chain across versions); required to optional; optional to required
/// with a default value; to-one to to-many and back; unordered to ordered and
/// back; new parents and children; properties moving up or down a hierarchy;
/// entities moving into or out of a hierarchy. Merging two hierarchies is not
/// inferable.
///
/// When it cannot infer, the error lists every blocking change, one per line,
/// naming the entity and the property.
public enum MappingInference {
    /// Options beyond Core Data's rules.
    public struct Options: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Lossless widenings become inferable: Integer 16 → 32 → 64, Float → Double, any number → String.
        public static let allowLosslessWidening = Options(rawValue: 1)
        /// An attribute that becomes required without a default value is inferable: its values
        /// are copied and every destination object is checked in phase 3 to have one (for a
        /// migration whose earlier stage filled them; ``MigrationStage``).
        public static let allowRequiringFilledAttributes = Options(rawValue: 2)
    }

    /// The inferred mapping from `source` to `destination`.
    /// - Throws: ``InferenceError`` listing every blocking change.
    public static func inferredMapping(from source: ManagedObjectModel, to destination: ManagedObjectModel,
                                       options: Options = []) throws -> MappingModel {
        let result = infer(source, destination, options)
        guard result.blocking.isEmpty else { throw InferenceError(blockingChanges: result.blocking) }
        return result.mapping
    }

    /// Every change that blocks inference, one sentence each; empty when the mapping can be inferred.
    public static func blockingChanges(from source: ManagedObjectModel, to destination: ManagedObjectModel,
                                       options: Options = []) -> [String] {
        infer(source, destination, options).blocking
    }

    static func identity(_ entity: Entity) -> String { entity.renamingIdentifier ?? entity.name }
    static func identity(_ attribute: Attribute) -> String { attribute.renamingIdentifier ?? attribute.name }
    static func identity(_ relationship: Relationship) -> String { relationship.renamingIdentifier ?? relationship.name }

    /// Destination entity name for each source entity name that has one.
    static func counterparts(_ source: ManagedObjectModel, _ destination: ManagedObjectModel) -> [String: String] {
        var byIdentity: [String: String] = [:]
        for entity in destination.entities { byIdentity[identity(entity)] = entity.name }
        var result: [String: String] = [:]
        for entity in source.entities { if let d = byIdentity[identity(entity)] { result[entity.name] = d } }
        return result
    }

    static func widens(_ from: AttributeType, _ to: AttributeType) -> Bool {
        switch (from, to) {
        case (.integer16, .integer32), (.integer16, .integer64), (.integer32, .integer64), (.float, .double): true
        case (_, .string) where from.isNumeric: true
        default: false
        }
    }

    static func infer(_ source: ManagedObjectModel, _ destination: ManagedObjectModel, _ options: Options)
        -> (mapping: MappingModel, blocking: [String]) {
        var blocking: [String] = []
        var mappings: [EntityMapping] = []
        let counterpart = counterparts(source, destination)
        let mappedFrom = Dictionary(counterpart.map { ($1, $0) }, uniquingKeysWith: { a, _ in a })

        // Two source hierarchies (each with sub-entities) brought into one destination hierarchy.
        var sourceRootsByDestinationRoot: [String: Set<String>] = [:]
        for (s, d) in counterpart {
            let sourceRoot = source.entity(named: s)!.rootName
            guard source.entity(named: sourceRoot)!.kindNames.count > 1 else { continue }
            sourceRootsByDestinationRoot[destination.entity(named: d)!.rootName, default: []].insert(sourceRoot)
        }
        for (root, roots) in sourceRootsByDestinationRoot.sorted(by: { $0.key < $1.key }) where roots.count > 1 {
            blocking.append("\(root): merges the hierarchies of \(roots.sorted().joined(separator: " and ")), which is not inferable")
        }

        for sourceEntity in source.entityDescriptions where !sourceEntity.isAbstract {
            guard let d = counterpart[sourceEntity.name], let destinationEntity = destination.entity(named: d) else {
                mappings.append(EntityMapping(name: "\(sourceEntity.name)ToNothing", kind: .remove, sourceEntity: sourceEntity.name,
                                              destinationEntity: nil, sourceVersionHash: sourceEntity.versionHash))
                continue
            }
            if destinationEntity.isAbstract {
                blocking.append("\(d): becomes abstract, so the objects of \(sourceEntity.name) have nowhere to go")
                continue
            }
            var attributes: [String: MappingExpression] = [:]
            for attribute in destinationEntity.storedAttributes {
                let place = "\(d).\(attribute.name)"
                guard let old = sourceEntity.storedAttributes.first(where: { identity($0) == identity(attribute) }) else {
                    if !attribute.isOptional && attribute.defaultValue == nil {
                        blocking.append("\(place): required, has no default, and no source property")
                    }
                    continue
                }
                var expression = MappingExpression.source(old.name)
                if old.type != attribute.type {
                    if options.contains(.allowLosslessWidening) && widens(old.type, attribute.type) {
                        if attribute.type == .string { expression = .call("toString", [expression]) }
                    } else {
                        blocking.append("\(place): type changed from \(old.type.modelName) to \(attribute.type.modelName)")
                        continue
                    }
                }
                if old.isOptional && !attribute.isOptional && !(attribute.defaultValue == nil && options.contains(.allowRequiringFilledAttributes)) {
                    guard let value = attribute.defaultValue else {
                        blocking.append("\(place): changed from optional to required and has no default value")
                        continue
                    }
                    expression = .call("coalesce", [expression, .constant(value)])
                }
                attributes[attribute.name] = expression
            }
            var relationships: [String: MappingExpression] = [:]
            for relationship in destinationEntity.storedRelationships {
                let place = "\(d).\(relationship.name)"
                guard let old = sourceEntity.storedRelationships.first(where: { identity($0) == identity(relationship) }) else {
                    if !relationship.isOptional { blocking.append("\(place): required, and no source relationship") }
                    continue
                }
                let target = counterpart[old.destination]
                guard let target, destination.entity(named: target)?.isKind(of: relationship.destination) == true
                        || destination.entity(named: relationship.destination)?.isKind(of: target) == true else {
                    blocking.append("\(place): destination changed from \(old.destination) to \(relationship.destination)")
                    continue
                }
                if old.isOptional && !relationship.isOptional {
                    blocking.append("\(place): changed from optional to required")
                    continue
                }
                relationships[relationship.name] = .source(old.name)
            }
            let copy = sourceEntity.name == d && sourceEntity.versionHash == destinationEntity.versionHash
            mappings.append(EntityMapping(
                name: "\(sourceEntity.name)To\(d)", kind: copy ? .copy : .transform, sourceEntity: sourceEntity.name,
                destinationEntity: d, sourceVersionHash: sourceEntity.versionHash, destinationVersionHash: destinationEntity.versionHash,
                attributeMappings: attributes, relationshipMappings: relationships))
        }
        for entity in destination.entityDescriptions where mappedFrom[entity.name] == nil && !entity.isAbstract {
            mappings.append(EntityMapping(name: "NothingTo\(entity.name)", kind: .add, sourceEntity: nil,
                                          destinationEntity: entity.name, destinationVersionHash: entity.versionHash))
        }
        return (MappingModel(entityMappings: mappings), blocking)
    }
}

/// A mapping could not be inferred; every reason is listed.
public struct InferenceError: Error, Sendable, CustomStringConvertible {
    /// One sentence per blocking change, each naming entity and property.
    public var blockingChanges: [String]

    public var description: String {
        "no lightweight migration can be inferred:\n" + blockingChanges.joined(separator: "\n")
    }
}
