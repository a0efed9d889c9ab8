import Foundation
import ObjectStore

/// A model's identity, to pass across isolation domains and look the model up in another
/// context (``ModelContext/model(for:)``): the store's UUID, the entity and the primary key.
/// A model not inserted yet has a temporary one, which changes when it is inserted.
///
/// It is `Codable` as `{"storeIdentifier": "…", "entityName": "Trip", "primaryKey": 12}`
/// (a temporary one with `"temporaryIdentifier"` instead of the store and key).
public struct PersistentIdentifier: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The entity's name.
    public let entityName: String
    /// The store's UUID (nil for a temporary identifier).
    public let storeIdentifier: UUID?
    /// The primary key in the store (nil for a temporary identifier).
    public let primaryKey: Int64?
    /// The identity of a model not inserted yet.
    let temporaryIdentifier: UUID?

    init(_ id: ObjectID) {
        entityName = id.entityName
        storeIdentifier = id.storeIdentifier
        primaryKey = id.primaryKey
        temporaryIdentifier = nil
    }

    init(temporary: UUID, entityName: String) {
        self.entityName = entityName
        storeIdentifier = nil
        primaryKey = nil
        temporaryIdentifier = temporary
    }

    /// Whether the identifier is temporary (its model has not been inserted).
    public var isTemporary: Bool { temporaryIdentifier != nil }

    /// The store layer's object ID, for a permanent identifier.
    public var objectID: ObjectID? {
        guard let storeIdentifier, let primaryKey else { return nil }
        return ObjectID(store: storeIdentifier, entity: entityName, primaryKey: primaryKey)
    }

    public static func < (a: PersistentIdentifier, b: PersistentIdentifier) -> Bool {
        (a.entityName, a.primaryKey ?? -1, a.storeIdentifier?.uuidString ?? a.temporaryIdentifier?.uuidString ?? "")
            < (b.entityName, b.primaryKey ?? -1, b.storeIdentifier?.uuidString ?? b.temporaryIdentifier?.uuidString ?? "")
    }

    /// `Trip/12` (a temporary one: `Trip/temporary-<UUID>`).
    public var description: String {
        if let primaryKey { return "\(entityName)/\(primaryKey)" }
        return "\(entityName)/temporary-\(temporaryIdentifier?.uuidString ?? "")"
    }
}
