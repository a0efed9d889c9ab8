import Foundation
import ObjectModel
import ObjectStore

/// One migration's state, as entity migration policies see it: the two
/// stores, the association of source to destination objects, and the
/// buffered writes.
///
/// Not `Sendable`: a migration runs on one thread.
public final class MigrationContext {
    /// The source store, opened read-only.
    public let sourceStore: any PersistentStore
    /// The destination store being filled.
    public let destinationStore: any PersistentStore
    /// The mapping model.
    public let mappingModel: MappingModel
    let batchSize: Int
    /// The source objects found to exist, for a whole-row conversion's required to-ones.
    lazy var sourceKeys = ExistingKeys(sourceStore)
    /// Per mapping, its destination to-one relationships whose order keys in their inverse's
    /// ordered list phase 1 wrote with every object (``RecordBatch/inverseOrderKeys``: the source
    /// read them with its rows, and the destination writes them,
    /// ``ForeignKeyRelationships/writesInverseOrderKeys``). Phase 2 then leaves such a list out.
    var inverseOrderKeysWritten: [String: Set<String>] = [:]
    /// The source entities every object of which phase 1 read, its key marked in ``sourceKeys``.
    var sourceEntitiesRead: Set<String> = []

    /// Mappings whose destination objects keep their source object's primary key.
    private var keepingKeys: Set<String> = []
    /// Mappings whose association is implicit (same key, every source object mapped once).
    private var implicit: Set<String> = []
    /// Explicit associations: mapping name → source primary key → destination keys.
    private var explicit: [String: [Int64: [ObjectKey]]] = [:]
    private var bySourceEntity: [String: [EntityMapping]] = [:]
    private var pendingInserts: [ObjectRecord] = []
    private var pendingUpdates: [ObjectKey: ObjectUpdate] = [:]
    /// How many objects the to-many lists of ``pendingUpdates`` name: they are written when it reaches 10 × the batch size.
    private var pendingMembers = 0
    /// Whether a pending change names objects a policy chose (the store then looks them up).
    private var pendingNamesOthers = false
    /// Whether a pending change needs its inverse sides completed by the store (one not of a mapping in ``givesBothSides``).
    private var pendingNeedsCompletion = false
    /// Implicit mappings whose every relationship's other side is written from the source too (``planPhaseTwo(foreignKeys:sharedManyToMany:)``).
    private var givesBothSides: Set<String> = []
    private var updateOrder: [ObjectKey] = []
    private var reserved: [String: ClosedRange<Int64>] = [:]
    private var pendingHasReferences = false
    /// To-one relationship mappings written with the objects in phase 1 (destination name, source name),
    /// by mapping: their targets keep their keys, so the destination key is known before the target exists.
    private var phaseOneRelationships: [String: [(destination: String, source: String)]] = [:]
    /// Relationship mappings phase 2 leaves out, by mapping (``planPhaseTwo(foreignKeys:sharedManyToMany:)``).
    private var notInPhaseTwo: [String: Set<String>] = [:]
    /// The members of the source's to-many relationships that phase 2 of the current batch reads,
    /// by relationship and source object (``usePrefetched(_:)``).
    private var prefetched: [String: [ObjectKey: OrderedMembers]] = [:]

    /// The to-many lists of a group of source objects, read at once (``prefetchRead(mapping:)``).
    struct PrefetchedLists: Sendable {
        var byRelationship: [String: [ObjectKey: OrderedMembers]] = [:]
        /// How many members the lists hold, all told.
        var members = 0
    }
    /// Destination entities some object was inserted into one record at a time (by a policy
    /// or an uncompiled mapping): their attributes were not checked in phase 1.
    private(set) var insertedOneByOne: Set<String> = []
    /// For mappings with ``EntityMapping/uniqueBy``: the destination object made for each set of values.
    private var uniques: [String: [[Value?]: ObjectKey]] = [:]

    /// The model of the source store.
    public var sourceModel: ManagedObjectModel { sourceStore.model }
    /// The model of the destination store.
    public var destinationModel: ManagedObjectModel { destinationStore.model }

    init(source: any PersistentStore, destination: any PersistentStore, mapping: MappingModel, batchSize: Int) {
        sourceStore = source
        destinationStore = destination
        mappingModel = mapping
        self.batchSize = batchSize
        // Keys are kept when one source hierarchy alone fills a destination hierarchy;
        // a second source hierarchy moving in gets new keys, or keys would collide.
        var rootOwner: [String: String] = [:]
        for m in mapping.entityMappings {
            guard let s = m.sourceEntity, let d = m.destinationEntity, m.kind == .copy || m.kind == .transform,
                  let sourceRoot = source.model.entity(named: s)?.rootName,
                  let destinationRoot = destination.model.entity(named: d)?.rootName else { continue }
            if rootOwner[destinationRoot] == nil { rootOwner[destinationRoot] = sourceRoot }
            if rootOwner[destinationRoot] == sourceRoot {
                // Objects made unique by their values are not one per source object: they get keys of their own.
                guard m.uniqueBy.isEmpty else { continue }
                keepingKeys.insert(m.name)
                if m.policyName == nil && m.sourceFilter == nil { implicit.insert(m.name) }
            }
        }
        for m in mapping.entityMappings {
            if let s = m.sourceEntity { bySourceEntity[s, default: []].append(m) }
        }
        for m in mapping.entityMappings where implicit.contains(m.name) {
            var direct: [(String, String)] = []
            for (name, expression) in m.relationshipMappings.sorted(by: { $0.key < $1.key }) {
                guard case .source(let path) = expression, isDirect(m, destination: name, source: path) else { continue }
                direct.append((name, path))
            }
            phaseOneRelationships[m.name] = direct
        }
    }

    /// Whether a relationship mapping can be written in phase 1: a to-one from a to-one of the
    /// source whose every possible target is migrated by one implicit mapping into the right entity.
    ///
    /// Its target may not exist yet when it is written, so the store cannot complete the inverse
    /// side: that must be the target mapping's own copy of the source's inverse. Otherwise the
    /// relationship waits for phase 2, when every object exists and the store completes it.
    private func isDirect(_ m: EntityMapping, destination name: String, source path: String) -> Bool {
        guard !path.contains("."), let s = m.sourceEntity, let d = m.destinationEntity,
              let sourceRelationship = sourceModel.entity(named: s)?.relationshipsByName[path], !sourceRelationship.isToMany,
              !sourceRelationship.isTransient,
              let destinationRelationship = destinationModel.entity(named: d)?.relationshipsByName[name], !destinationRelationship.isToMany,
              let kinds = sourceModel.entity(named: sourceRelationship.destination)?.kindNames else { return false }
        for kind in kinds where sourceModel.entity(named: kind)?.isAbstract == false {
            guard let mappings = bySourceEntity[kind], mappings.count == 1, implicit.contains(mappings[0].name),
                  let target = mappings[0].destinationEntity,
                  destinationModel.entity(named: target)?.isKind(of: destinationRelationship.destination) == true else { return false }
            if let inverse = destinationRelationship.inverse {
                guard let sourceInverse = sourceRelationship.inverse,
                      case .source(sourceInverse)? = mappings[0].relationshipMappings[inverse] else { return false }
            }
        }
        return true
    }

    /// Decides what phase 2 of the implicit mappings leaves out, because it is written already or
    /// will be from the other side, and which mappings give both sides of everything they write:
    /// - a to-one written in phase 1 is left out;
    /// - where the destination reads a to-many whose inverse is a to-one from that to-one
    ///   (`foreignKeys`: ``ForeignKeyRelationships``), such a to-many is left out when every mapping
    ///   of the other side wrote the to-one in phase 1 (and, of an ordered one, each member's order
    ///   key: ``inverseOrderKeysWritten``); and of an unordered many-to-many whose other
    ///   side every mapping there writes from the source's inverse, the side with more objects (the
    ///   shorter lists) is left out: the side written has the fewest owners, and the store completes
    ///   the other (when its two sides are one table: `sharedManyToMany`);
    /// - elsewhere (a store that keeps both sides in its rows, or a many-to-many whose sides are
    ///   tables of their own) every side is written from the source, and a mapping whose every
    ///   relationship's other side is written so too (in phase 1 or 2) saves without completing
    ///   inverses (``ChangeSet/completesInverses``): each row is written once with its own lists,
    ///   instead of once per member added to it.
    func planPhaseTwo(foreignKeys: Bool, sharedManyToMany: Bool = true) throws {
        /// Implicit mappings whose objects are of `entity` (or a sub-entity), and whether every
        /// mapping into that entity is implicit.
        func mappings(into entity: String) -> [EntityMapping]? {
            let into = mappingModel.entityMappings.filter { m in
                m.kind != .remove && m.kind != .add && m.destinationEntity.flatMap { destinationModel.entity(named: $0) }?.isKind(of: entity) == true
            }
            return into.allSatisfy { implicit.contains($0.name) } ? into : nil
        }
        /// The entity where `name` is declared, above every entity that inherits it.
        func declaring(_ entity: EntityDescription, _ name: String) -> String {
            var current = entity
            while let parent = current.parent.flatMap({ destinationModel.entity(named: $0) }), parent.relationshipsByName[name] != nil { current = parent }
            return current.name
        }
        var owners: [String: Int] = [:]
        func objects(_ entity: String) throws -> Int {
            if let known = owners[entity] { return known }
            let count = try (mappings(into: entity) ?? []).reduce(0) { sum, m in try sum + sourceStore.objectCount(exactly: m.sourceEntity!) }
            owners[entity] = count
            return count
        }
        for m in mappingModel.entityMappings where implicit.contains(m.name) {
            guard let s = m.sourceEntity, let d = m.destinationEntity, let source = sourceModel.entity(named: s),
                  let destination = destinationModel.entity(named: d) else { continue }
            var left = Set(phaseOneRelationships[m.name, default: []].map(\.destination))
            var bothSides = true
            for (name, expression) in m.relationshipMappings where !left.contains(name) {
                guard case .source(let path) = expression, !path.contains("."),
                      let relationship = destination.relationshipsByName[name], let sourceRelationship = source.relationshipsByName[path] else {
                    bothSides = false
                    continue
                }
                // A relationship without an inverse has no other side.
                guard let inverseName = relationship.inverse else { continue }
                guard let target = destinationModel.entity(named: relationship.destination), let inverse = target.relationshipsByName[inverseName],
                      let sourceInverse = sourceRelationship.inverse, let others = mappings(into: relationship.destination), !others.isEmpty else {
                    bothSides = false
                    continue
                }
                let inPhaseOne = others.allSatisfy { o in phaseOneRelationships[o.name]?.contains { $0 == (inverseName, sourceInverse) } == true }
                let inPhaseTwo = others.allSatisfy { o in if case .source(sourceInverse)? = o.relationshipMappings[inverseName] { true } else { false } }
                if !foreignKeys || (!sharedManyToMany && relationship.isToMany && inverse.isToMany) {
                    // Every side is written from the source: the other one in phase 1, or in phase 2 by its own mappings.
                    if !(inPhaseOne || inPhaseTwo) { bothSides = false }
                    continue
                }
                // The store writes this side from the other's foreign key or completes it: inverses are completed.
                bothSides = false
                guard relationship.isToMany else { continue }
                if !inverse.isToMany {
                    // An ordered list's order keys are in its members' rows too: written with them, or not yet.
                    let ordered = !relationship.isOrdered || others.allSatisfy { inverseOrderKeysWritten[$0.name]?.contains(inverseName) == true }
                    if inPhaseOne && ordered { left.insert(name) }
                    continue
                }
                guard !relationship.isOrdered, !inverse.isOrdered, inPhaseTwo else { continue }
                let mine = declaring(destination, name), theirs = declaring(target, inverseName)
                guard (mine, name) != (theirs, inverseName) else { continue }   // a relationship that is its own inverse
                let (here, there) = (try objects(mine), try objects(theirs))
                if here > there || (here == there && (mine, name) > (theirs, inverseName)) { left.insert(name) }
            }
            notInPhaseTwo[m.name] = left
            if bothSides && (!foreignKeys || !sharedManyToMany) { givesBothSides.insert(m.name) }
        }
    }

    /// Whether phase 2 has nothing to write for the mapping: every relationship it maps is written
    /// in phase 1 or from the other side (``planPhaseTwo(foreignKeys:sharedManyToMany:)``).
    func hasNothingForPhaseTwo(_ m: EntityMapping) -> Bool {
        notInPhaseTwo[m.name].map { $0.count == m.relationshipMappings.count } ?? false
    }

    /// The to-many relationships phase 2 copies as they are (`$source.name`) from the source
    /// objects of a mapping, read for a group of objects at once, one batch read per relationship
    /// instead of one per object (``PersistentStore/orderedMembers(of:relationship:)-([ObjectKey],_)``).
    /// It reads the source store alone, so it may run beside the migration (``ReadAhead``); nil
    /// when the mapping copies none.
    func prefetchRead(mapping m: EntityMapping) -> (@Sendable ([ObjectKey]) throws -> PrefetchedLists)? {
        guard let s = m.sourceEntity, let source = sourceModel.entity(named: s) else { return nil }
        let leftOut = notInPhaseTwo[m.name] ?? []
        var paths: [String] = []
        for (name, expression) in m.relationshipMappings where !leftOut.contains(name) {
            guard case .source(let path) = expression, !path.contains("."), !paths.contains(path),
                  source.relationshipsByName[path]?.isToMany == true else { continue }
            paths.append(path)
        }
        guard !paths.isEmpty else { return nil }
        let store = sourceStore
        return { [paths] keys in
            var lists = PrefetchedLists()
            guard !keys.isEmpty else { return lists }
            for path in paths {
                let members = try store.orderedMembers(of: keys, relationship: path)
                lists.members += members.reduce(0) { $0 + $1.keys.count }
                lists.byRelationship[path] = Dictionary(uniqueKeysWithValues: zip(keys, members))
            }
            return lists
        }
    }

    /// Makes `lists` (``prefetchRead(mapping:)``) the members phase 2 reads, in place of the last group's.
    func usePrefetched(_ lists: PrefetchedLists) {
        prefetched = lists.byRelationship
    }

    /// The members of a source object's to-many relationship: prefetched, or read now.
    private func members(of key: ObjectKey, _ relationship: String) throws -> OrderedMembers {
        if let members = prefetched[relationship]?[key] { return members }
        return try sourceStore.orderedMembers(of: key, relationship: relationship)
    }

    /// Whether the mapping's objects keep their keys, every source object mapped once,
    /// by the default policy (its association costs nothing).
    func isImplicit(_ mapping: EntityMapping) -> Bool { implicit.contains(mapping.name) }

    /// The to-one relationship mappings written with the objects in phase 1 (destination name, source name).
    func phaseOneRelationships(of mapping: EntityMapping) -> [(destination: String, source: String)] {
        phaseOneRelationships[mapping.name] ?? []
    }

    /// The destination entity of the objects made from a source entity's objects (its first mapping's).
    func destinationEntity(madeFrom sourceEntity: String) -> String? {
        bySourceEntity[sourceEntity]?.first?.destinationEntity
    }

    /// Whether the mapping's destination objects keep their source keys.
    func keepsKeys(_ mapping: EntityMapping) -> Bool { keepingKeys.contains(mapping.name) }

    /// Whether every old object URI names, after the migration, the object it named before or
    /// none: every object of an entity the source model has keeps its source object's key (no
    /// policy, no custom mapping, no second hierarchy moving in). Objects of an entity the source
    /// model has no name for (one made unique by its values, say) may get keys of their own: no
    /// old URI names them. Only then may the destination keep the source's UUID.
    var keepsEveryKey: Bool {
        mappingModel.entityMappings.allSatisfy { m in
            guard m.kind != .remove, m.kind != .add, let d = m.destinationEntity else { return true }
            return (keepsKeys(m) && m.policyName == nil) || sourceModel.entity(named: d) == nil
        }
    }

    private func keptRoot(_ mapping: EntityMapping) -> String? {
        mapping.destinationEntity.flatMap { destinationModel.entity(named: $0)?.rootName }
    }

    /// Moves each destination hierarchy's key counter past the keys its source hierarchy
    /// handed out, so kept keys and new keys never meet, and no key is reused.
    func reserveKeptKeys() throws {
        var done: Set<String> = []
        for mapping in mappingModel.entityMappings where keepsKeys(mapping) {
            guard let root = keptRoot(mapping), let source = mapping.sourceEntity, done.insert(root).inserted else { continue }
            let last = try sourceStore.lastAllocatedKey(entity: source) - destinationStore.lastAllocatedKey(entity: root)
            if last > 0 { _ = try destinationStore.allocatePrimaryKeys(entity: root, count: Int(last)) }
        }
    }

    // MARK: Association

    /// The destination objects made from a source object, by one mapping or by any.
    public func destinationKeys(for source: ObjectKey, mapping name: String? = nil) -> [ObjectKey] {
        let mappings = name.flatMap { mappingModel.mapping(named: $0) }.map { [$0] } ?? bySourceEntity[source.entity] ?? []
        return mappings.flatMap { m -> [ObjectKey] in
            if implicit.contains(m.name), m.sourceEntity == source.entity, let d = m.destinationEntity {
                return [ObjectKey(d, source.primaryKey)]
            }
            return explicit[m.name]?[source.primaryKey] ?? []
        }
    }

    /// ``destinationKeys(for:mapping:)`` of many source objects, by any mapping: the mappings of
    /// each run of keys of one entity are looked up once.
    func destinationKeys(for keys: [ObjectKey]) -> [ObjectKey] {
        // The destination entity where the source entity's only mapping is implicit (a key keeps its number).
        var implicitInto = EntityMemo { entity -> String? in
            guard let mappings = self.bySourceEntity[entity], mappings.count == 1, self.implicit.contains(mappings[0].name) else { return nil }
            return mappings[0].destinationEntity
        }
        var result: [ObjectKey] = []
        result.reserveCapacity(keys.count)
        for key in keys {
            if let into = implicitInto(key.entity) { result.append(ObjectKey(into, key.primaryKey)) } else { result += destinationKeys(for: key) }
        }
        return result
    }

    // MARK: Phase 1

    /// Makes a destination object for `source` (phase 1); the object is associated with `source`.
    ///
    /// An attribute the caller leaves out takes its default value (it has no source
    /// value to copy). An attribute given as nil stays nil, as in Core Data, unless it
    /// is required and has a default (an optional attribute that became required).
    @discardableResult
    public func insertDestination(entity: String, attributes: [String: Value?], for source: ObjectKey,
                                  mapping: EntityMapping) throws -> ObjectKey {
        try insertDestination(entity: entity, attributes: attributes, toOne: [:], for: source, version: nil, mapping: mapping)
    }

    /// What the default policy does in phase 1: the mapped attributes, and the to-one
    /// relationships whose targets' keys are already known.
    public func insertMappedDestination(for source: ObjectRecord, mapping: EntityMapping) throws {
        guard let entity = mapping.destinationEntity else { return }
        var toOne: [String: ObjectKey] = [:]
        for (name, path) in phaseOneRelationships(of: mapping) {
            guard let target = source.toOne[path], let into = destinationEntity(madeFrom: target.entity) else { continue }
            toOne[name] = ObjectKey(into, target.primaryKey)
        }
        try insertDestination(entity: entity, attributes: try mappedAttributes(for: source, mapping: mapping), toOne: toOne,
                              for: source.key, version: source.version, mapping: mapping)
    }

    @discardableResult
    private func insertDestination(entity: String, attributes: [String: Value?], toOne: [String: ObjectKey], for source: ObjectKey,
                                   version: Int64?, mapping: EntityMapping) throws -> ObjectKey {
        guard let description = destinationModel.entity(named: entity), !description.isAbstract else {
            throw MigrationError(.invalidMapping, "no concrete destination entity named \(entity)", mapping: mapping.name)
        }
        var values: [String: Value] = [:]
        for attribute in description.storedAttributes {
            let given = attributes[attribute.name]
            let value: Value?
            switch given {
            case nil: value = attribute.defaultValue                              // no source value to copy
            case .some(nil): value = attribute.isOptional ? nil : attribute.defaultValue  // a copied nil stays nil
            case .some(let v?): value = v
            }
            guard let value else { continue }
            guard let coerced = attribute.type.coerce(value) else {
                throw MigrationError(.expression, "\(entity).\(attribute.name): \(value.kindName) \(value) is not a valid \(attribute.type.modelName)",
                                     mapping: mapping.name, phase: .createObjects, sourceObject: source)
            }
            values[attribute.name] = coerced
        }
        for name in attributes.keys where description.attributesByName[name]?.isTransient != false {
            throw MigrationError(.invalidMapping, "\(entity) has no stored attribute named \(name)", mapping: mapping.name)
        }
        var identity: [Value?] = []
        if !mapping.uniqueBy.isEmpty {
            identity = mapping.uniqueBy.map { values[$0] }
            // One object for these values: the source object is associated with the one made before.
            if let existing = uniques[mapping.name]?[identity] {
                if !(explicit[mapping.name]?[source.primaryKey] ?? []).contains(existing) {
                    explicit[mapping.name, default: [:]][source.primaryKey, default: []].append(existing)
                }
                return existing
            }
        }
        let key: ObjectKey
        let first = (explicit[mapping.name]?[source.primaryKey] ?? []).isEmpty
        // An object that keeps its source object's key keeps its version (Core Data's `Z_OPT`) too.
        var kept: Int64 = 1
        if implicit.contains(mapping.name) || (keepsKeys(mapping) && first && description.rootName == keptRoot(mapping)) {
            key = ObjectKey(entity, source.primaryKey)
            kept = version ?? 1
        } else {
            key = ObjectKey(entity, try newKey(description.rootName))
        }
        if !implicit.contains(mapping.name) { explicit[mapping.name, default: [:]][source.primaryKey, default: []].append(key) }
        if !mapping.uniqueBy.isEmpty { uniques[mapping.name, default: [:]][identity] = key }
        insertedOneByOne.insert(entity)
        pendingInserts.append(ObjectRecord(key: key, version: kept, attributes: values, toOne: toOne))
        if !toOne.isEmpty { pendingHasReferences = true }
        if pendingInserts.count >= batchSize { try flush() }
        return key
    }

    private func newKey(_ root: String) throws -> Int64 {
        if let range = reserved[root], !range.isEmpty {
            reserved[root] = range.dropFirst().isEmpty ? nil : (range.lowerBound + 1)...range.upperBound
            return range.lowerBound
        }
        let range = try destinationStore.allocatePrimaryKeys(entity: root, count: 256)
        reserved[root] = (range.lowerBound + 1)...range.upperBound
        return range.lowerBound
    }

    /// The destination attribute values the mapping's expressions give for `source`:
    /// every mapped attribute, nil where the expression gives no value.
    public func mappedAttributes(for source: ObjectRecord, mapping: EntityMapping) throws -> [String: Value?] {
        var values: [String: Value?] = [:]
        for (name, expression) in mapping.attributeMappings {
            values[name] = .some(try evaluate(expression, on: source).value)
        }
        return values
    }

    // MARK: Phase 2

    /// The destination relationships the mapping's expressions give for the destination made from `source`.
    public func mappedRelationships(for source: ObjectRecord, mapping: EntityMapping, destination: ObjectKey) throws -> [(String, [ObjectKey])] {
        try mappedLists(for: source, mapping: mapping, destination: destination).map { ($0.name, $0.targets) }
    }

    /// ``mappedRelationships(for:mapping:destination:)`` with the order keys of an ordered to-many
    /// copied from an ordered to-many of the source, member for member: the numbers the source kept.
    func mappedLists(for source: ObjectRecord, mapping: EntityMapping, destination: ObjectKey) throws
        -> [(name: String, targets: [ObjectKey], orderKeys: [Int64]?)] {
        guard let entity = destinationModel.entity(named: destination.entity) else { return [] }
        var result: [(name: String, targets: [ObjectKey], orderKeys: [Int64]?)] = []
        let leftOut = notInPhaseTwo[mapping.name] ?? []
        for (name, expression) in mapping.relationshipMappings.sorted(by: { $0.key < $1.key }) where !leftOut.contains(name) {
            guard let relationship = entity.relationshipsByName[name], !relationship.isTransient else {
                throw MigrationError(.invalidMapping, "\(destination.entity) has no stored relationship named \(name)", mapping: mapping.name)
            }
            if relationship.isOrdered, case .source(let path) = expression,
               sourceModel.entity(named: source.key.entity)?.relationshipsByName[path].map({ $0.isToMany && $0.isOrdered }) == true {
                let members = try members(of: source.key, path)
                let targets = members.keys.map { destinationKeys(for: $0) }
                // Member for member, or the order keys cannot follow: numbered anew.
                if targets.allSatisfy({ $0.count == 1 && destinationModel.entity(named: $0[0].entity)?.isKind(of: relationship.destination) == true }),
                   Set(targets.map { $0[0] }).count == targets.count {
                    result.append((name, targets.map { $0[0] }, members.orderKeys))
                    continue
                }
            }
            var targets: [ObjectKey]
            switch try evaluate(expression, on: source) {
            case .value(nil): targets = []
            case .value(let v?): throw MigrationError(.expression, "\(destination.entity).\(name): the expression gave the value \(v), not objects",
                                                      mapping: mapping.name, phase: .createRelationships, sourceObject: source.key)
            case .objects(let keys): targets = destinationKeys(for: keys)
            case .destinationObjects(let keys): targets = keys
            }
            var seen: Set<ObjectKey> = []
            var fits = EntityMemo { self.destinationModel.entity(named: $0)?.isKind(of: relationship.destination) ?? false }
            targets = targets.filter { fits($0.entity) && seen.insert($0).inserted }
            // A to-many that became a to-one keeps its first object.
            if !relationship.isToMany { targets = Array(targets.prefix(1)) }
            result.append((name, targets, nil))
        }
        return result
    }

    /// Sets a relationship of a destination object (phase 2); an ordered to-many may be given the
    /// order keys to keep (one ascending number per member, `OrderKeys`), else it is numbered 1, 2, 3…
    public func setRelationship(_ name: String, of destination: ObjectKey, to targets: [ObjectKey], orderKeys: [Int64]? = nil) throws {
        try setRelationship(name, of: destination, to: targets, orderKeys: orderKeys, mapping: nil)
    }

    /// ``setRelationship(_:of:to:orderKeys:)``; `mapping`: the mapping whose expressions gave the targets
    /// (``mappedLists(for:mapping:destination:)``), objects this migration wrote, which the store need not
    /// look up when every pending change is such; nil for targets a policy chose.
    func setRelationship(_ name: String, of destination: ObjectKey, to targets: [ObjectKey], orderKeys: [Int64]?, mapping: EntityMapping?) throws {
        if mapping == nil { pendingNamesOthers = true }
        if !(mapping.map { givesBothSides.contains($0.name) } ?? false) { pendingNeedsCompletion = true }
        guard let relationship = destinationModel.entity(named: destination.entity)?.relationshipsByName[name] else {
            throw MigrationError(.invalidMapping, "\(destination.entity) has no relationship named \(name)")
        }
        if pendingUpdates[destination] == nil {
            pendingUpdates[destination] = ObjectUpdate(key: destination)
            updateOrder.append(destination)
        }
        if relationship.isToMany, let mapping, !mapping.uniqueBy.isEmpty {
            // An object made once for several source objects (uniqueBy) gathers what each of them gives.
            var merged = try pendingUpdates[destination]!.toMany[name] ?? destinationStore.relatedKeys(of: destination, relationship: name)
            let known = Set(merged)
            merged += targets.filter { !known.contains($0) }
            pendingUpdates[destination]!.toMany[name] = merged
            pendingMembers += targets.count
        } else if relationship.isToMany {
            pendingUpdates[destination]!.toMany[name] = targets
            pendingUpdates[destination]!.orderKeys[name] = relationship.isOrdered ? orderKeys : nil
            pendingMembers += targets.count
        } else {
            pendingUpdates[destination]!.toOne[name] = .some(targets.first)
        }
        if pendingUpdates.count >= batchSize || pendingMembers >= 10 * batchSize { try flush() }
    }

    /// Writes what is buffered.
    func flush() throws {
        if !pendingInserts.isEmpty {
            // References written in phase 1 may name objects of a later batch: they exist by the end of phase 1.
            try destinationStore.bulkInsert(pendingInserts, checkingReferences: !pendingHasReferences)
            pendingInserts.removeAll(keepingCapacity: true)
            pendingHasReferences = false
        }
        if !pendingUpdates.isEmpty {
            // Relationships of objects this migration made: they stay at their first version.
            // Targets the mapping gave are objects this migration wrote in phase 1: the store need not look
            // them up, unless a policy named some itself.
            try destinationStore.save(ChangeSet(updated: updateOrder.map { pendingUpdates[$0]! }, keepsVersions: true,
                                                checksReferences: pendingNamesOthers, completesInverses: pendingNeedsCompletion))
            pendingUpdates.removeAll(keepingCapacity: true)
            updateOrder.removeAll(keepingCapacity: true)
            pendingMembers = 0
            pendingNamesOthers = false
            pendingNeedsCompletion = false
        }
    }

    // MARK: Expressions

    /// Evaluates an expression on a source object to a value.
    public func value(of expression: MappingExpression, on source: ObjectRecord) throws -> Value? {
        try evaluate(expression, on: source).value
    }

    func evaluate(_ expression: MappingExpression, on source: ObjectRecord) throws -> Evaluated {
        switch expression {
        case .constant(let v): return .value(v)
        case .source(let path): return try resolve(path, on: source)
        case .call(let name, let arguments):
            let values = try arguments.map { argument -> Value? in
                switch try evaluate(argument, on: source) {
                case .value(let v): return v
                default: throw MigrationError(.expression, "\(name): an argument is a set of objects, not a value", sourceObject: source.key)
                }
            }
            do {
                return .value(try MappingFunctions.call(name, values))
            } catch var error as MigrationError {
                error.sourceObject = source.key
                throw error
            }
        case .destinations(let mapping, let inner):
            switch try evaluate(inner, on: source) {
            case .objects(let keys): return .destinationObjects(keys.flatMap { destinationKeys(for: $0, mapping: mapping) })
            case .value(nil): return .destinationObjects([])
            default: throw MigrationError(.expression, "destinations: the argument must give source objects", sourceObject: source.key)
            }
        case .custom(let closure):
            return .value(try closure(MappingInput(source: source, value: { path in try self.resolve(path, on: source).value })))
        }
    }

    private func resolve(_ path: String, on source: ObjectRecord) throws -> Evaluated {
        if path.isEmpty { return .objects([source.key]) }
        if !path.utf8.contains(UInt8(ascii: ".")), let value = source.attributes[path] { return .value(value) }
        var record = source
        let parts = path.split(separator: ".").map(String.init)
        for (i, part) in parts.enumerated() {
            guard let entity = sourceModel.entity(named: record.key.entity) else { break }
            let last = i == parts.count - 1
            if entity.attributesByName[part] != nil {
                guard last else { throw MigrationError(.expression, "$source.\(path): \(part) is an attribute", sourceObject: source.key) }
                return .value(record.attributes[part])
            }
            guard let relationship = entity.relationshipsByName[part] else {
                throw MigrationError(.expression, "$source.\(path): \(entity.name) has no property named \(part)", sourceObject: source.key)
            }
            let keys = relationship.isToMany
                ? (i == 0 ? try members(of: record.key, part).keys : try sourceStore.relatedKeys(of: record.key, relationship: part))
                : record.toOne[part].map { [$0] } ?? []
            if last { return .objects(keys) }
            guard !relationship.isToMany else {
                throw MigrationError(.expression, "$source.\(path): \(part) is a to-many relationship and must end the key path", sourceObject: source.key)
            }
            guard let next = try keys.first.flatMap({ try sourceStore.record(for: $0) }) else { return .value(nil) }
            record = next
        }
        return .value(nil)
    }
}
