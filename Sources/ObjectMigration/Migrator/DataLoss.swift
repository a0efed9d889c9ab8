import Foundation
import ObjectModel
import ObjectStore

/// Stored data of the source a migration step does not carry to its destination: an
/// attribute or relationship no mapping reads, an entity no mapping reads, or the objects an
/// entity mapping's filter leaves out.
///
/// ``StoreMigrator`` refuses a step that drops data the store has unless it is told that the
/// loss is meant (``StoreMigrator/allowsDataLoss``; `objectstore migrate --allow-data-loss`).
/// A mapping that reads a property in any of its expressions carries it, whatever it makes of
/// it; a custom policy or a closure in a mapping is taken to read every property of its entity.
public struct DataDrop: Sendable, Hashable, CustomStringConvertible {
    /// What is dropped.
    public enum Kind: String, Sendable, Hashable {
        /// Every value of one attribute.
        case attribute
        /// Every link of one relationship (no mapping reads it or its inverse).
        case relationship
        /// Every object of one entity (exactly that entity).
        case entity
        /// The objects of one entity that the filters of its mappings leave out.
        case filtered
    }

    /// What is dropped.
    public var kind: Kind
    /// The source entity (exactly this entity; its sub-entities have drops of their own).
    public var entity: String
    /// The attribute or relationship, for those kinds.
    public var property: String?
    /// What the store holds that the step would drop: an attribute's values (objects holding one),
    /// a relationship's links (objects a to-one holds; members of a to-many), objects; nil when they cannot be counted before the step runs (a
    /// later step of a chain, for a property no earlier step copies from the store).
    public var count: Int?

    /// `Post.date (120 values)`, `Post.tags (31 links)`, `entity Tag (30 objects)`, `Post objects its mappings' filters leave out (12 objects)`.
    public var description: String {
        let counted: (String) -> String = { unit in
            count.map { " (\($0) \(unit)\($0 == 1 ? "" : "s"))" } ?? " (counted when the step runs)"
        }
        switch kind {
        case .attribute: return "\(entity).\(property ?? "")" + counted("value")
        case .relationship: return "\(entity).\(property ?? "")" + counted("link")
        case .entity: return "entity \(entity)" + counted("object")
        case .filtered: return "\(entity) objects its mappings' filters leave out" + counted("object")
        }
    }

    /// Whether the drop loses data: it holds values, or may (not counted yet).
    public var losesData: Bool { count.map { $0 > 0 } ?? true }

    /// The drops of a step through `mapping` from a store of `source`, not counted.
    public static func drops(of mapping: MappingModel, from source: ManagedObjectModel) -> [DataDrop] {
        var drops: [DataDrop] = []
        // Whether each concrete kind's mappings read a property (nil: they may read anything).
        var readByKind: [String: Set<String>?] = [:]
        for entity in source.entityDescriptions where !entity.isAbstract {
            let readers = mapping.entityMappings.filter { $0.sourceEntity == entity.name && [.copy, .transform, .custom].contains($0.kind) }
            if readers.isEmpty {
                drops.append(DataDrop(kind: .entity, entity: entity.name))
                readByKind[entity.name] = Set<String>()
                continue
            }
            readByKind[entity.name] = readers.reduce(Optional(Set<String>())) { read, m in
                guard let read, let more = Self.propertiesRead(by: m) else { return nil }
                return read.union(more)
            }
            if readers.allSatisfy({ $0.sourceFilter != nil }) && readByKind[entity.name]! != nil {
                drops.append(DataDrop(kind: .filtered, entity: entity.name))
            }
        }
        // Properties read further along key paths (`$source.author.name` reads Author.name).
        let alongPaths = Self.propertiesAlongPaths(mapping, source)
        func readAlong(_ entity: EntityDescription, _ name: String) -> Bool {
            alongPaths.contains { $0.property == name && entity.isKind(of: $0.entity) }
        }
        for entity in source.entityDescriptions where !entity.isAbstract {
            // A dropped entity's properties go with it; a policy's entity keeps them all.
            guard let read = readByKind[entity.name] ?? nil, !drops.contains(where: { $0.kind == .entity && $0.entity == entity.name }) else { continue }
            for attribute in entity.storedAttributes where !read.contains(attribute.name) && !readAlong(entity, attribute.name) {
                drops.append(DataDrop(kind: .attribute, entity: entity.name, property: attribute.name))
            }
            for relationship in entity.storedRelationships where !read.contains(relationship.name) && !readAlong(entity, relationship.name) {
                // Links the inverse carries are kept: every concrete kind the relationship reaches reads it.
                if let inverse = relationship.inverse, let target = source.entity(named: relationship.destination) {
                    // A pair neither side of which is read is one loss: named once, by the side met first.
                    if drops.contains(where: { $0.kind == .relationship && $0.property == inverse && target.kindNames.contains($0.entity) }) { continue }
                    let kinds = target.kindNames.filter { source.entity(named: $0)?.isAbstract == false }
                    let inverseRead = !kinds.isEmpty && kinds.allSatisfy { kind in
                        guard let read = readByKind[kind] else { return false }
                        return read?.contains(inverse) ?? true
                    }
                    if inverseRead { continue }
                }
                drops.append(DataDrop(kind: .relationship, entity: entity.name, property: relationship.name))
            }
        }
        return drops
    }

    /// The (entity, property) pairs the key paths of `mapping`'s expressions read: each key of
    /// `$source.a.b.c` on the entity it is read from.
    static func propertiesAlongPaths(_ mapping: MappingModel, _ source: ManagedObjectModel) -> [(entity: String, property: String)] {
        var found: [(entity: String, property: String)] = []
        func walk(_ expression: MappingExpression, from start: EntityDescription) {
            switch expression {
            case .source(let path):
                var entity = start
                for key in path.split(separator: ".").map(String.init) {
                    found.append((entity.name, key))
                    guard let relationship = entity.relationshipsByName[key], let next = source.entity(named: relationship.destination) else { return }
                    entity = next
                }
            case .call(_, let arguments): for argument in arguments { walk(argument, from: start) }
            case .destinations(_, let inner): walk(inner, from: start)
            case .constant, .custom: return
            }
        }
        for m in mapping.entityMappings {
            guard let name = m.sourceEntity, let entity = source.entity(named: name) else { continue }
            for expression in Array(m.attributeMappings.values) + Array(m.relationshipMappings.values) { walk(expression, from: entity) }
        }
        return found
    }

    /// The source properties an entity mapping reads (the first key of every `$source` path in its
    /// expressions), or nil when a policy or a closure may read any.
    static func propertiesRead(by mapping: EntityMapping) -> Set<String>? {
        guard mapping.kind != .custom, mapping.policyName == nil else { return nil }
        var read: Set<String> = []
        func walk(_ expression: MappingExpression) -> Bool {
            switch expression {
            case .source(let path):
                if let first = path.split(separator: ".").first { read.insert(String(first)) }
                return true
            case .constant: return true
            case .call(_, let arguments): return arguments.allSatisfy(walk)
            case .destinations(_, let inner): return walk(inner)
            case .custom: return false
            }
        }
        for expression in Array(mapping.attributeMappings.values) + Array(mapping.relationshipMappings.values) {
            guard walk(expression) else { return nil }
        }
        return read
    }

    /// The drop counted in `store` (opened with the model the step reads).
    func counted(in store: any PersistentStore, mapping: MappingModel) throws -> DataDrop {
        var drop = self
        let entity = self.entity
        func count(_ predicate: ObjectPredicate?) throws -> Int {
            try store.count(FetchRequest(entity: entity, predicate: predicate, includesSubentities: false))
        }
        switch kind {
        case .entity:
            drop.count = try count(nil)
        case .filtered:
            let filters = mapping.entityMappings.filter { $0.sourceEntity == entity }.compactMap(\.sourceFilter)
            drop.count = try count(.not(.or(filters)))
        case .attribute:
            drop.count = try count(.compare(property!, .notEqual, nil))
        case .relationship:
            guard store.model.entity(named: entity)?.relationshipsByName[property!]?.isToMany == true else {
                drop.count = try count(.compare(property!, .notEqual, nil))
                break
            }
            // A to-many's links, a batch of objects at a time.
            var links = 0, after: Int64? = nil
            while true {
                let batch = try store.scan(entity: entity, after: after, limit: 1_000)
                guard let last = batch.last else { break }
                links += try store.orderedMembers(of: batch.map(\.key), relationship: property!).reduce(0) { $0 + $1.keys.count }
                after = last.key.primaryKey
            }
            drop.count = links
        }
        return drop
    }

    /// Where the data a drop names came from in the store a chain of steps starts from.
    enum Origin {
        /// From this property (or entity) of the store: its values are what is dropped.
        case store(DataDrop)
        /// Made by a step of the chain with no value of the store behind it (an attribute added
        /// with its default, or set to a constant): nothing of the store's is dropped.
        case madeByTheMigration
        /// A relationship a step set no expression for: what it holds came through its inverse, if anything.
        case unmapped
        /// Computed from the store's values or made by a policy: counted only when the step runs.
        case unknown
    }

    /// Where the property (or entity) this drop names came from in the store `steps` start from,
    /// following plain copies (`$source.<name>`) back through each step's mapping.
    func origin(through steps: ArraySlice<MigrationStep>) -> Origin {
        var origin = self
        for step in steps.reversed() {
            let makers = step.mapping.entityMappings.filter { $0.destinationEntity == origin.entity && $0.kind != .add }
            // An entity only an `add` mapping makes starts empty.
            if makers.isEmpty, step.mapping.entityMappings.contains(where: { $0.destinationEntity == origin.entity && $0.kind == .add }) {
                return .madeByTheMigration
            }
            guard makers.count == 1, let maker = makers.first, maker.policyName == nil, maker.sourceFilter == nil,
                  maker.kind == .copy || maker.kind == .transform, let from = maker.sourceEntity else { return .unknown }
            if let property = origin.property {
                switch maker.attributeMappings[property] ?? maker.relationshipMappings[property] {
                case .source(let path) where !path.isEmpty && !path.contains("."): origin.property = path
                case .destinations(_, .source(let path)) where !path.isEmpty && !path.contains("."): origin.property = path
                // A conversion of one source value (`toString($source.x)`, `coalesce($source.x, …)`)
                // holds a value where the source did: followed back to it.
                case .call(_, let arguments):
                    guard case .source(let path)? = arguments.first, !path.isEmpty, !path.contains(".") else { return .unknown }
                    origin.property = path
                // An attribute no expression sets takes its default; a relationship may have been
                // filled through its inverse.
                case nil where origin.kind == .attribute, .constant: return .madeByTheMigration
                case nil: return .unmapped
                default: return .unknown
                }
            }
            origin.entity = from
        }
        return .store(origin)
    }
}
