import Foundation
import ObjectModel

/// Every change between two models, grouped by entity, as `objectstore diff` prints them.
public struct ModelDiff: Sendable {
    /// Changes of one entity.
    public struct EntityChanges: Sendable, Hashable {
        /// The entity's name in the destination model (the source's for a removed entity).
        public var entity: String
        /// `added`, `removed`, `changed`.
        public var status: String
        /// One line per change.
        public var changes: [String]
    }

    /// Changed, added and removed entities, in ascending order of name.
    public var entities: [EntityChanges]
    /// Whether a lightweight migration can be inferred.
    public var isLightweight: Bool { blockingChanges.isEmpty }
    /// What blocks inference, one line each.
    public var blockingChanges: [String]
    /// What the inferred migration drops (``DataDrop``, not counted: no store is read).
    public var drops: [DataDrop]
    private let sourceNames: [String: String]
    private let sourceModel: ManagedObjectModel

    /// The changes of `entity`, a removal that drops data ending with what it drops
    /// (`- attribute date (drops its values)`; not a relationship whose inverse carries its links).
    public func markedChanges(of entity: EntityChanges) -> [String] {
        func dropping(_ kind: DataDrop.Kind, _ name: String, _ property: String?) -> Bool {
            drops.contains { $0.kind == kind && $0.property == property && sourceModel.entity(named: $0.entity)?.isKind(of: name) == true }
        }
        let sourceName = entity.status == "removed" ? entity.entity : sourceNames[entity.entity] ?? entity.entity
        return entity.changes.map { line in
            let words = line.split(separator: " ").map(String.init)
            // A property made transient keeps no value: `~ attribute date: stored -> transient`.
            if words.count >= 3, words[0] == "~", line.contains("stored -> transient") {
                let name = String(words[2].dropLast())
                if words[1] == "attribute", dropping(.attribute, sourceName, name) { return line + " (drops its values)" }
                if words[1] == "relationship", dropping(.relationship, sourceName, name) { return line + " (drops its links)" }
                return line
            }
            guard words.count >= 3, words[0] == "-" else { return line }
            switch words[1] {
            case "entity" where sourceModel.entity(named: words[2])?.kindNames.contains(where: { dropping(.entity, $0, nil) }) == true:
                return line + " (drops its objects)"
            case "attribute" where dropping(.attribute, sourceName, words[2]): return line + " (drops its values)"
            case "relationship" where dropping(.relationship, sourceName, words[2]): return line + " (drops its links)"
            default: return line
            }
        }
    }

    /// Compares two models.
    public init(from source: ManagedObjectModel, to destination: ManagedObjectModel, options: MappingInference.Options = []) {
        let counterpart = MappingInference.counterparts(source, destination)
        let mappedFrom = Dictionary(counterpart.map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        var result: [EntityChanges] = []
        for entity in source.entities where counterpart[entity.name] == nil {
            result.append(EntityChanges(entity: entity.name, status: "removed", changes: ["- entity \(entity.name)"]))
        }
        for entity in destination.entities {
            guard let s = mappedFrom[entity.name], let old = source.entity(named: s)?.declaration else {
                var lines = ["+ entity \(entity.name)" + (entity.parent.map { " : \($0)" } ?? "") + (entity.isAbstract ? " (abstract)" : "")]
                lines += entity.attributes.map { "+ attribute \(Self.describe($0))" }
                lines += entity.relationships.map { "+ relationship \(Self.describe($0))" }
                result.append(EntityChanges(entity: entity.name, status: "added", changes: lines))
                continue
            }
            let lines = Self.changes(old, entity, counterpart, before: source.entity(named: s)!, after: destination.entity(named: entity.name)!)
            if !lines.isEmpty { result.append(EntityChanges(entity: entity.name, status: "changed", changes: lines)) }
        }
        let inference = MappingInference.infer(source, destination, options)
        drops = DataDrop.drops(of: inference.mapping, from: source)
        entities = result.sorted { $0.entity < $1.entity }
        sourceNames = mappedFrom
        sourceModel = source
        blockingChanges = inference.blocking
    }

    static func describe(_ a: Attribute) -> String {
        "\(a.name): \(a.type.modelName), \(a.isOptional ? "optional" : "required")" + (a.isTransient ? ", transient" : "")
            + (a.defaultValue.map { ", default \($0)" } ?? "")
    }

    static func describe(_ r: Relationship) -> String {
        "\(r.name) -> \(r.destination), \(r.isToMany ? "to-many" : "to-one")" + (r.isOrdered ? ", ordered" : "")
            + ", \(r.isOptional ? "optional" : "required")"
    }

    private static func changes(_ old: Entity, _ new: Entity, _ counterpart: [String: String],
                                before: EntityDescription, after: EntityDescription) -> [String] {
        var lines: [String] = []
        if old.name != new.name { lines.append("~ renamed from \(old.name)") }
        let oldParent = old.parent.map { counterpart[$0] ?? $0 }
        if oldParent != new.parent { lines.append("~ parent: \(old.parent ?? "(none)") -> \(new.parent ?? "(none)")") }
        if old.isAbstract != new.isAbstract { lines.append("~ abstract: \(old.isAbstract ? "yes" : "no") -> \(new.isAbstract ? "yes" : "no")") }
        if old.versionHashModifier != new.versionHashModifier { lines.append("~ version hash modifier: \(old.versionHashModifier ?? "(none)") -> \(new.versionHashModifier ?? "(none)")") }
        if old.uniquenessConstraints != new.uniquenessConstraints { lines.append("~ uniqueness constraints changed") }
        let id = MappingInference.identity as (Attribute) -> String
        for attribute in old.attributes where !new.attributes.contains(where: { id($0) == id(attribute) }) {
            if after.attributes.contains(where: { id($0) == id(attribute) }) {
                lines.append("~ attribute \(attribute.name): now inherited")
            } else {
                lines.append("- attribute \(attribute.name)")
            }
        }
        for attribute in new.attributes {
            guard let before = before.attributes.first(where: { id($0) == id(attribute) }) else {
                lines.append("+ attribute \(describe(attribute))")
                continue
            }
            if !old.attributes.contains(where: { id($0) == id(attribute) }) { lines.append("~ attribute \(attribute.name): now declared here, was inherited") }
            var notes: [String] = []
            if before.name != attribute.name { notes.append("renamed from \(before.name)") }
            if before.type != attribute.type { notes.append("type \(before.type.modelName) -> \(attribute.type.modelName)") }
            if before.isOptional != attribute.isOptional { notes.append(before.isOptional ? "optional -> required" : "required -> optional") }
            if before.isTransient != attribute.isTransient { notes.append(before.isTransient ? "transient -> stored" : "stored -> transient") }
            if before.defaultValue != attribute.defaultValue {
                notes.append("default \(before.defaultValue.map { "\($0)" } ?? "(none)") -> \(attribute.defaultValue.map { "\($0)" } ?? "(none)")")
            }
            if before.validation != attribute.validation { notes.append("validation rules changed") }
            if before.versionHashModifier != attribute.versionHashModifier { notes.append("version hash modifier changed") }
            if !notes.isEmpty { lines.append("~ attribute \(attribute.name): " + notes.joined(separator: "; ")) }
        }
        let rid = MappingInference.identity as (Relationship) -> String
        for relationship in old.relationships where !new.relationships.contains(where: { rid($0) == rid(relationship) }) {
            if after.relationships.contains(where: { rid($0) == rid(relationship) }) {
                lines.append("~ relationship \(relationship.name): now inherited")
            } else {
                lines.append("- relationship \(relationship.name)")
            }
        }
        for relationship in new.relationships {
            guard let before = before.relationships.first(where: { rid($0) == rid(relationship) }) else {
                lines.append("+ relationship \(describe(relationship))")
                continue
            }
            if !old.relationships.contains(where: { rid($0) == rid(relationship) }) { lines.append("~ relationship \(relationship.name): now declared here, was inherited") }
            var notes: [String] = []
            if before.name != relationship.name { notes.append("renamed from \(before.name)") }
            if (counterpart[before.destination] ?? before.destination) != relationship.destination {
                notes.append("destination \(before.destination) -> \(relationship.destination)")
            }
            if before.isToMany != relationship.isToMany { notes.append(before.isToMany ? "to-many -> to-one" : "to-one -> to-many") }
            if before.isOrdered != relationship.isOrdered { notes.append(before.isOrdered ? "ordered -> unordered" : "unordered -> ordered") }
            if before.isOptional != relationship.isOptional { notes.append(before.isOptional ? "optional -> required" : "required -> optional") }
            if before.isTransient != relationship.isTransient { notes.append(before.isTransient ? "transient -> stored" : "stored -> transient") }
            if before.inverse != relationship.inverse { notes.append("inverse \(before.inverse ?? "(none)") -> \(relationship.inverse ?? "(none)")") }
            if before.deleteRule != relationship.deleteRule { notes.append("delete rule \(before.deleteRule.rawValue) -> \(relationship.deleteRule.rawValue)") }
            if before.minCount != relationship.minCount || before.maxCount != relationship.maxCount {
                notes.append("count \(before.minCount)...\(before.maxCount) -> \(relationship.minCount)...\(relationship.maxCount)")
            }
            if !notes.isEmpty { lines.append("~ relationship \(relationship.name): " + notes.joined(separator: "; ")) }
        }
        return lines
    }
}
