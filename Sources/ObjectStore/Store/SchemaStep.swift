import ObjectModel

/// The model side of one in-place version step (``SchemaChanging``): which source entity,
/// attribute and relationship each destination one continues (by renaming identifier, else by
/// name, as inference matches them), and what keeps the step from being done without reading
/// every object. A backend turns it into its own DDL; SQLite and PostgreSQL both do.
///
/// Blockers: a type, a rule or a hierarchy changed, a property moved up or down its hierarchy, a
/// required value with no default, a required relationship added, a relationship's storage changed
/// (to-one, to-many and ordered; its destination; its inverse), uniqueness constraints changed, a
/// sub-entity removed while its hierarchy stays.
public struct SchemaStep: Sendable {
    /// The model the store is written with.
    public let source: ManagedObjectModel
    /// The model it moves to.
    public let destination: ManagedObjectModel
    /// Destination entity → the source entity it continues.
    public private(set) var oldEntity: [String: String] = [:]
    /// Why the step cannot be done in place, one sentence per change; empty when it can.
    public private(set) var blockers: [String] = []
    /// Destination entity (of those that continue one) → what happens to each of its own stored attributes.
    public private(set) var attributeChanges: [String: [AttributeChange]] = [:]

    /// Matches the two models and names what blocks the step.
    /// - Parameters:
    ///   - source: the model the store is written with.
    ///   - destination: the model it moves to.
    ///   - recordsTargetEntity: whether every stored to-one records its target's entity
    ///     (PostgreSQL's `<name>_entity`); where it does not (Core Data's layout records it only when
    ///     the destination has sub-entities), a destination that gains sub-entities blocks the step.
    public init(from source: ManagedObjectModel, to destination: ManagedObjectModel, recordsTargetEntity: Bool = false) {
        self.source = source
        self.destination = destination
        var taken: Set<String> = []
        for byIdentifier in [true, false] {
            for new in destination.entityDescriptions where oldEntity[new.name] == nil {
                let name = byIdentifier ? new.declaration.renamingIdentifier ?? new.name : new.name
                if source.entity(named: name) != nil, taken.insert(name).inserted { oldEntity[new.name] = name }
            }
        }
        let newEntity = Dictionary(uniqueKeysWithValues: oldEntity.map { ($1, $0) })
        for new in destination.entityDescriptions {
            guard let old = oldEntity[new.name].flatMap(source.entity(named:)) else { continue }
            if old.parent.map({ newEntity[$0] }) != new.parent.map({ Optional($0) }) || old.isAbstract != new.isAbstract {
                blockers.append("\(new.name): its place in the hierarchy changed")
            }
            // A property that moves up or down the hierarchy (declared by the entity, then by an
            // ancestor, or the other way) keeps its values only through a copy: in place it would be
            // one declaration removed and another added.
            let oldOwn = Set(old.declaration.attributes.map(\.name) + old.declaration.relationships.map(\.name))
            let newOwn = Set(new.declaration.attributes.map(\.name) + new.declaration.relationships.map(\.name))
            for (name, renaming) in Self.storedProperties(new).sorted(by: { $0.0 < $1.0 }) {
                guard let was = Self.continued(name, renaming, in: old) else { continue }
                if oldOwn.contains(was) != newOwn.contains(name) {
                    blockers.append("\(new.name).\(name): now declared by another entity of its hierarchy, so its values must be copied")
                }
            }
            if old.declaration.uniquenessConstraints != new.declaration.uniquenessConstraints {
                blockers.append("\(new.name): its uniqueness constraints changed, so every object must be checked")
            }
            let changes = Self.attributeChanges(old.declaration, new.declaration)
            attributeChanges[new.name] = changes
            for case .blocked(let reason) in changes { blockers.append(reason) }
            for (was, relationship) in relationshipPairs(old, new) {
                guard let was else {
                    if !relationship.isOptional || relationship.minCount > 0 {
                        blockers.append("\(new.name).\(relationship.name): a required relationship added, which no object has")
                    }
                    continue
                }
                if let reason = relationshipBlocker(was, relationship, newEntity: newEntity, recordsTargetEntity: recordsTargetEntity) {
                    blockers.append("\(new.name).\(relationship.name): \(reason)")
                }
            }
        }
        for old in source.entityDescriptions where newEntity[old.name] == nil {
            if old.ancestors.contains(where: { newEntity[$0] != nil }) {
                blockers.append("\(old.name): removed while its hierarchy stays, so its objects must be deleted one by one")
            }
        }
    }

    /// `record`, written under the source model's names, under the destination's: the keys of an
    /// entity that continues under another name take that name, and the properties an update set
    /// that continue under other names take theirs (matched as the step matches them). Keys of an
    /// entity the step removes, and properties it removes, keep their names. Nil when nothing in
    /// the record is renamed, so a store rewrites only the records that change.
    public func renaming(_ record: HistoryRecord) -> HistoryRecord? {
        let newEntity = Dictionary(uniqueKeysWithValues: oldEntity.map { ($1, $0) })
        var propertyNames: [String: [String: String]] = [:]
        func names(_ entity: String) -> [String: String] {
            if let known = propertyNames[entity] { return known }
            var renamed: [String: String] = [:]
            if let new = newEntity[entity].flatMap(destination.entity(named:)), let old = source.entity(named: entity) {
                for (name, renaming) in Self.storedProperties(new) {
                    if let was = Self.continued(name, renaming, in: old), was != name { renamed[was] = name }
                }
            }
            propertyNames[entity] = renamed
            return renamed
        }
        var changed = false
        func key(_ key: ObjectKey) -> ObjectKey {
            guard let name = newEntity[key.entity], name != key.entity else { return key }
            changed = true
            return ObjectKey(name, key.primaryKey)
        }
        let updated = record.updated.map { entry in
            let renamed = names(entry.key.entity)
            let properties = entry.properties.map { renamed[$0] ?? $0 }
            if properties != entry.properties { changed = true }
            return UpdatedObject(key: key(entry.key), properties: properties.sorted())
        }
        let renamed = HistoryRecord(timestamp: record.timestamp, author: record.author, inserted: record.inserted.map(key),
                                    updated: updated, deleted: record.deleted.map(key))
        return changed ? renamed : nil
    }

    /// Whether the step renames an entity or a stored property: only then may a history record need ``renaming(_:)``.
    public var renamesNames: Bool {
        oldEntity.contains { new, old in
            guard new == old else { return true }
            guard let entity = destination.entity(named: new) else { return false }
            return Self.storedProperties(entity).contains { name, renaming in renaming.map { $0 != name } ?? false }
        }
    }

    /// The entity's stored attributes and relationships, each name with its renaming identifier.
    private static func storedProperties(_ entity: EntityDescription) -> [(String, String?)] {
        entity.storedAttributes.map { ($0.name, $0.renamingIdentifier) } + entity.storedRelationships.map { ($0.name, $0.renamingIdentifier) }
    }

    /// The property of `old` that the destination's property `name` (with `renaming`) continues:
    /// by its renaming identifier, else by name, as inference matches them; nil for a new one.
    private static func continued(_ name: String, _ renaming: String?, in old: EntityDescription) -> String? {
        [renaming ?? name, name].first { old.attributesByName[$0] != nil || old.relationshipsByName[$0] != nil }
    }

    /// `record` under the names of the last of `steps`' destinations (``renaming(_:)`` step by
    /// step), or nil when no step renames anything in it.
    public static func renaming(_ record: HistoryRecord, through steps: [SchemaStep]) -> HistoryRecord? {
        var current: HistoryRecord?
        for step in steps { current = step.renaming(current ?? record) ?? current }
        return current
    }

    /// The entity's own stored relationships in the destination, each with the source one it
    /// continues (nil: new).
    public func relationshipPairs(_ old: EntityDescription, _ new: EntityDescription) -> [(Relationship?, Relationship)] {
        let stored = old.declaration.relationships.filter { !$0.isTransient }
        var taken: Set<String> = []
        return new.declaration.relationships.filter { !$0.isTransient }.map { relationship in
            let identity = relationship.renamingIdentifier ?? relationship.name
            let was = stored.first { $0.name == identity && !taken.contains($0.name) }
                ?? stored.first { $0.name == relationship.name && !taken.contains($0.name) }
            if let was { taken.insert(was.name) }
            return (was, relationship)
        }
    }

    /// Why a kept relationship cannot stay where it is stored, or nil.
    private func relationshipBlocker(_ was: Relationship, _ now: Relationship, newEntity: [String: String], recordsTargetEntity: Bool) -> String? {
        if was.isToMany != now.isToMany || was.isOrdered != now.isOrdered { return "it changed between to-one, to-many and ordered" }
        if newEntity[was.destination] != now.destination { return "its destination changed" }
        let tighter = (was.isOptional && !now.isOptional) || now.minCount > was.minCount
            || (now.maxCount > 0 && (was.maxCount == 0 || now.maxCount < was.maxCount))
        if tighter { return "its rules changed, so every object must be checked" }
        // Where a to-many is stored depends on its inverse: that to-one's column, a join table, or a hidden column.
        if now.isToMany {
            let from = source.entity(named: was.destination)!, to = destination.entity(named: now.destination)!
            let oldInverse = was.inverse.flatMap { from.relationshipsByName[$0] }
            let newInverse = now.inverse.flatMap { to.relationshipsByName[$0] }
            let continued = oldInverse.flatMap { old in relationshipPairs(from, to).first { $0.0?.name == old.name }?.1.name }
            if oldInverse?.isToMany != newInverse?.isToMany || continued != newInverse?.name {
                return "its inverse changed, so it is stored elsewhere"
            }
        } else if !recordsTargetEntity, source.entity(named: was.destination)?.subentities.isEmpty == true,
                  destination.entity(named: now.destination)?.subentities.isEmpty == false {
            return "its destination gained sub-entities, so each row must record its target's entity"
        }
        return nil
    }

    /// What happens to one stored attribute of an entity between two versions.
    public enum AttributeChange: Sendable {
        /// Kept (perhaps renamed): the old declaration and the new.
        case kept(Attribute, Attribute)
        /// New: a column for it, old rows given its default (or nil).
        case added(Attribute)
        /// Gone: its column dropped.
        case removed(Attribute)
        /// Not expressible in place; why.
        case blocked(String)
    }

    /// The entity's own stored attributes, matched by renaming identifier or name as inference
    /// matches them.
    private static func attributeChanges(_ old: Entity, _ new: Entity) -> [AttributeChange] {
        let stored = old.attributes.filter { !$0.isTransient }
        var changes: [AttributeChange] = []
        var matched: Set<String> = []
        for attribute in new.attributes where !attribute.isTransient {
            let identity = attribute.renamingIdentifier ?? attribute.name
            guard let was = stored.first(where: { $0.name == identity && !matched.contains($0.name) })
                    ?? stored.first(where: { $0.name == attribute.name && !matched.contains($0.name) }) else {
                changes.append(attribute.isOptional || attribute.defaultValue != nil ? .added(attribute)
                               : .blocked("\(new.name).\(attribute.name): required, with no default"))
                continue
            }
            matched.insert(was.name)
            if was.type != attribute.type || was.allowsExternalBinaryDataStorage != attribute.allowsExternalBinaryDataStorage
                || was.valueTransformerName != attribute.valueTransformerName {
                changes.append(.blocked("\(new.name).\(attribute.name): its type or storage changed"))
            } else if (was.isOptional && !attribute.isOptional) || was.validation != attribute.validation {
                changes.append(.blocked("\(new.name).\(attribute.name): its rules changed, so every object must be checked"))
            } else {
                changes.append(.kept(was, attribute))
            }
        }
        for attribute in stored where !matched.contains(attribute.name) { changes.append(.removed(attribute)) }
        return changes
    }
}
