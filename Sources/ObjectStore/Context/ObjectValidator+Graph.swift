import ObjectModel

/// Two sides of an inverse pair that disagree in a store: `object.relationship`
/// names `target`, but `target.inverse` does not name `object` back.
public struct InverseDisagreement: Sendable, Hashable, CustomStringConvertible {
    /// The object whose relationship names the target.
    public var object: ObjectKey
    /// That relationship.
    public var relationship: String
    /// Whether it is a to-many.
    public var isToMany: Bool
    /// The object it names.
    public var target: ObjectKey
    /// The target's inverse relationship.
    public var inverse: String
    /// Whether the inverse is a to-many.
    public var inverseIsToMany: Bool
    /// What a to-one inverse names instead (nil when it names nothing, or is a to-many).
    public var inverseTarget: ObjectKey?

    /// Whether the target does not exist at all.
    public var targetIsMissing: Bool = false

    /// `Post/28.color is Color/28, but Color/28.posts does not contain Post/28`, with
    /// objects named as the JSON interchange names them.
    public var description: String {
        func id(_ key: ObjectKey) -> String { JSONInterchange.id(key) }
        let names = "\(id(object)).\(relationship) \(isToMany ? "contains" : "is") \(id(target))"
        if targetIsMissing { return "\(names), which does not exist" }
        let back = inverseIsToMany
            ? "\(id(target)).\(inverse) does not contain \(id(object))"
            : "\(id(target)).\(inverse) is \(inverseTarget.map(id) ?? "nil")"
        return "\(names), but \(back)"
    }
}

extension ObjectValidator {
    /// Every relationship of a record of `store` that names an object that does not exist,
    /// or whose inverse side does not name the record back. For many records, keep one
    /// ``InverseChecker``: it reads each long to-many once, not once per member.
    public static func inverseDisagreements(of record: ObjectRecord, in store: any PersistentStore) throws -> [InverseDisagreement] {
        try InverseChecker(store: store).disagreements(of: record)
    }
}

/// Checks that a store keeps both sides of its relationships, record after record.
///
/// A store keeps both sides by contract; this checks that it did. The members of a
/// to-many inverse are read once and kept (up to a few million keys in all), so checking
/// every member of a long to-many against it costs one read of the list, not one each.
///
/// ```swift
/// let checker = InverseChecker(store: snapshot)
/// for batch in snapshot.batches(of: "Post") { for record in try batch.get() { lines += try checker.disagreements(of: record) } }
/// ```
public final class InverseChecker {
    private let store: any PersistentStore
    private var members: [RelationshipSide: Set<ObjectKey>] = [:]
    private var kept = 0
    private static let budget = 4_000_000

    /// A checker for `store` (a snapshot, so that every read sees one moment).
    public init(store: any PersistentStore) {
        self.store = store
    }

    private var known: Set<ObjectKey> = []

    /// Whether `key` exists; targets found are remembered (within the budget), so one
    /// target named by many objects is read once.
    private func exists(_ key: ObjectKey) throws -> Bool {
        if known.contains(key) { return true }
        guard try store.record(for: key) != nil else { return false }
        if known.count >= Self.budget { known = [] }
        known.insert(key)
        return true
    }

    private func inverse(of target: ObjectKey, _ name: String, toMany: Bool) throws -> (contains: (ObjectKey) -> Bool, first: ObjectKey?) {
        guard toMany else {
            let keys = try store.relatedKeys(of: target, relationship: name)
            return ({ keys.contains($0) }, keys.first)
        }
        let side = RelationshipSide(target, name)
        if let set = members[side] { return ({ set.contains($0) }, nil) }
        let set = Set(try store.relatedKeys(of: target, relationship: name))
        if kept + set.count > Self.budget {
            members = [:]
            kept = 0
        }
        members[side] = set
        kept += set.count
        return ({ set.contains($0) }, nil)
    }

    /// The relationships of `record` that name an object that does not exist, or whose
    /// inverse side does not name the record back.
    public func disagreements(of record: ObjectRecord) throws -> [InverseDisagreement] {
        guard let entity = store.model.entity(named: record.key.entity) else { return [] }
        var found: [InverseDisagreement] = []
        for relationship in entity.storedRelationships {
            let targets = relationship.isToMany
                ? try store.relatedKeys(of: record.key, relationship: relationship.name)
                : record.toOne[relationship.name].map { [$0] } ?? []
            for target in targets {
                let inverse = relationship.inverse.flatMap { store.model.entity(named: target.entity)?.relationshipsByName[$0] }
                // (A to-many's members exist; a to-one may name what does not. Its inverse alone cannot
                // tell: SQLite derives a to-many from the foreign keys that point at it, even at nothing.)
                if !relationship.isToMany, try !exists(target) {
                    found.append(InverseDisagreement(
                        object: record.key, relationship: relationship.name, isToMany: false, target: target,
                        inverse: relationship.inverse ?? "", inverseIsToMany: inverse?.isToMany ?? false, inverseTarget: nil, targetIsMissing: true))
                    continue
                }
                guard let inverseName = relationship.inverse, let inverse else { continue }
                let back = try self.inverse(of: target, inverseName, toMany: inverse.isToMany)
                if back.contains(record.key) { continue }
                found.append(InverseDisagreement(
                    object: record.key, relationship: relationship.name, isToMany: relationship.isToMany, target: target,
                    inverse: inverseName, inverseIsToMany: inverse.isToMany, inverseTarget: back.first))
            }
        }
        return found
    }
}
