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
    /// or whose inverse side does not name the record back. A store keeps both sides by
    /// contract; this checks that it did.
    public static func inverseDisagreements(of record: ObjectRecord, in store: any PersistentStore) throws -> [InverseDisagreement] {
        guard let entity = store.model.entity(named: record.key.entity) else { return [] }
        var found: [InverseDisagreement] = []
        for relationship in entity.storedRelationships {
            let targets = relationship.isToMany
                ? try store.relatedKeys(of: record.key, relationship: relationship.name)
                : record.toOne[relationship.name].map { [$0] } ?? []
            for target in targets {
                let inverse = relationship.inverse.flatMap { store.model.entity(named: target.entity)?.relationshipsByName[$0] }
                if !relationship.isToMany, try store.record(for: target) == nil {
                    found.append(InverseDisagreement(
                        object: record.key, relationship: relationship.name, isToMany: false, target: target,
                        inverse: relationship.inverse ?? "", inverseIsToMany: inverse?.isToMany ?? false, inverseTarget: nil, targetIsMissing: true))
                    continue
                }
                guard let inverseName = relationship.inverse, let inverse else { continue }
                let back = try store.relatedKeys(of: target, relationship: inverseName)
                guard !back.contains(record.key) else { continue }
                found.append(InverseDisagreement(
                    object: record.key, relationship: relationship.name, isToMany: relationship.isToMany, target: target,
                    inverse: inverseName, inverseIsToMany: inverse.isToMany, inverseTarget: inverse.isToMany ? nil : back.first))
            }
        }
        return found
    }
}
