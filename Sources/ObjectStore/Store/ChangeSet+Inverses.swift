import ObjectModel

/// One relationship of one object: a side of an edge of the object graph.
public struct RelationshipSide: Sendable, Hashable {
    /// The object.
    public var key: ObjectKey
    /// The relationship's name.
    public var name: String

    /// Creates a side.
    public init(_ key: ObjectKey, _ name: String) {
        self.key = key
        self.name = name
    }
}

extension ChangeSet {
    /// The relationship values the change set gives, by side: every to-one and
    /// to-many an inserted record carries, and every one an update sets (an
    /// update's nil to-one is the empty list). Sides it does not mention are not here.
    public var givenRelationships: [RelationshipSide: [ObjectKey]] {
        var given: [RelationshipSide: [ObjectKey]] = [:]
        for record in inserted {
            for (name, target) in record.toOne { given[RelationshipSide(record.key, name)] = [target] }
            for (name, targets) in record.toMany { given[RelationshipSide(record.key, name)] = targets }
        }
        for update in updated {
            for (name, target) in update.toOne { given[RelationshipSide(update.key, name)] = target.map { [$0] } ?? [] }
            for (name, targets) in update.toMany { given[RelationshipSide(update.key, name)] = targets }
        }
        return given
    }

    /// Refuses a change set whose two sides of an inverse pair disagree.
    ///
    /// A change set may give one side of a relationship only, and the store completes
    /// the other (see ``PersistentStore/save(_:)``). When it gives both, they must
    /// agree: an object named through a relationship must name the namer back through
    /// the inverse, and no object may be claimed through a to-one inverse by two others.
    /// Checked on the change set alone, before a store reads or writes anything.
    ///
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidChange`` naming both sides.
    public func checkInverses(model: ManagedObjectModel) throws {
        let given = givenRelationships
        var claims: [RelationshipSide: ObjectKey] = [:]
        var sets: [RelationshipSide: Set<ObjectKey>] = [:]   // a large to-many is searched once, not once per member
        let givenNames = Set(given.keys.map(\.name))
        for (side, targets) in given.sorted(by: { ($0.key.key, $0.key.name) < ($1.key.key, $1.key.name) }) {
            guard let relationship = model.entity(named: side.key.entity)?.relationshipsByName[side.name],
                  let inverseName = relationship.inverse else { continue }
            // Whether the targets' inverse is a to-one, by the targets' entity (nearly always one).
            var inverseIsToOne = EntityMemo { model.entity(named: $0)?.relationshipsByName[inverseName].map { !$0.isToMany } ?? false }
            for target in targets {
                let back = RelationshipSide(target, inverseName)
                if givenNames.contains(inverseName), let theirs = given[back] {
                    if sets[back] == nil { sets[back] = Set(theirs) }
                    guard sets[back]!.contains(side.key) else {
                        throw StoreError(.invalidChange, "the change set's sides disagree: \(side.key).\(side.name) names \(target), "
                                         + "but \(target).\(inverseName) does not name \(side.key)")
                    }
                }
                guard inverseIsToOne(target.entity) else { continue }
                if let other = claims[back], other != side.key {
                    throw StoreError(.invalidChange, "the change set's sides disagree: \(other) and \(side.key) both name \(target), "
                                     + "whose \(inverseName) is to-one")
                }
                claims[back] = side.key
            }
        }
    }
}
