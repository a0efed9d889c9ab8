import Foundation

/// An object's key inside one store: its entity and its primary key.
///
/// Primary keys are unique within an entity hierarchy (the root entity and
/// every entity below it) and are never reused.
public struct ObjectKey: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The object's concrete entity.
    public var entity: String
    /// The object's primary key.
    public var primaryKey: Int64

    /// Creates a key.
    public init(_ entity: String, _ primaryKey: Int64) {
        self.entity = entity
        self.primaryKey = primaryKey
    }

    public static func < (a: ObjectKey, b: ObjectKey) -> Bool {
        a.entity != b.entity ? a.entity < b.entity : a.primaryKey < b.primaryKey
    }

    /// `Entity/<pk>`: how a person reads an object's key everywhere (errors, `validate`, history,
    /// an export's `_id`s); the store it is in is named beside it once.
    public var description: String { "\(entity)/\(primaryKey)" }
}

/// An object's identity across stores: the store's UUID, the entity and the primary key.
///
/// Its URI form is `x-objectstore://<store-uuid>/<Entity>/p<pk>`.
///
/// ```swift
/// let id = ObjectID(store: uuid, entity: "Person", primaryKey: 7)
/// let again = ObjectID(uri: id.uri)   // == id
/// ```
public struct ObjectID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The UUID of the store that holds the object.
    public var storeIdentifier: UUID
    /// The entity and primary key inside that store.
    public var key: ObjectKey

    /// Creates an ID.
    public init(store: UUID, entity: String, primaryKey: Int64) {
        self.storeIdentifier = store
        self.key = ObjectKey(entity, primaryKey)
    }

    /// Creates an ID from a store UUID and a key.
    public init(store: UUID, key: ObjectKey) {
        self.storeIdentifier = store
        self.key = key
    }

    /// The object's concrete entity.
    public var entityName: String { key.entity }
    /// The object's primary key.
    public var primaryKey: Int64 { key.primaryKey }

    /// The URI scheme of object IDs.
    public static let uriScheme = "x-objectstore"

    /// `x-objectstore://<store-uuid>/<Entity>/p<pk>`.
    public var uri: URL {
        var components = URLComponents()
        components.scheme = Self.uriScheme
        components.host = storeIdentifier.uuidString
        components.path = "/\(key.entity)/p\(key.primaryKey)"
        return components.url!
    }

    /// Parses the URI form; nil for anything else.
    public init?(uri: URL) {
        guard let components = URLComponents(url: uri, resolvingAgainstBaseURL: false),
              components.scheme == Self.uriScheme,
              let host = components.host, let store = UUID(uuidString: host)
        else { return nil }
        let parts = components.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].isEmpty, !parts[1].isEmpty, parts[2].first == "p",
              let pk = Int64(parts[2].dropFirst())
        else { return nil }
        self.init(store: store, entity: String(parts[1]), primaryKey: pk)
    }

    public static func < (a: ObjectID, b: ObjectID) -> Bool {
        a.storeIdentifier != b.storeIdentifier ? a.storeIdentifier.uuidString < b.storeIdentifier.uuidString : a.key < b.key
    }

    public var description: String { uri.absoluteString }
}
