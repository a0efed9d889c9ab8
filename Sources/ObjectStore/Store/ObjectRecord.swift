import ObjectModel

/// One stored object as a store reads and writes it.
///
/// Fetches and scans fill ``attributes`` and ``toOne``; to-many relationships
/// are read with ``PersistentStore/relatedKeys(of:relationship:)``. In a change
/// set, an inserted record also carries ``toMany``.
public struct ObjectRecord: Sendable, Hashable {
    /// The object's entity and primary key.
    public var key: ObjectKey
    /// The optimistic-locking version: 1 after insert, one more at each update (Core Data's `Z_OPT`).
    public var version: Int64
    /// Stored attribute values; a missing name is nil.
    public var attributes: [String: Value]
    /// To-one relationships; a missing name is nil.
    public var toOne: [String: ObjectKey]
    /// To-many relationships, in order for ordered ones (change sets and bulk inserts).
    public var toMany: [String: [ObjectKey]]
    /// The order keys of ordered to-many relationships in ``toMany`` (Core Data's `Z_FOK_…`
    /// values), one per member, ascending; a relationship not named here is numbered 1, 2, 3…
    /// (see ``OrderKeys``).
    public var orderKeys: [String: [Int64]]

    /// Creates a record.
    public init(key: ObjectKey, version: Int64 = 1, attributes: [String: Value] = [:],
                toOne: [String: ObjectKey] = [:], toMany: [String: [ObjectKey]] = [:], orderKeys: [String: [Int64]] = [:]) {
        self.key = key
        self.version = version
        self.attributes = attributes
        self.toOne = toOne
        self.toMany = toMany
        self.orderKeys = orderKeys
    }
}

/// Changes to one existing object.
public struct ObjectUpdate: Sendable, Hashable {
    /// The object.
    public var key: ObjectKey
    /// The version the change was made against; a store refuses the save
    /// with a conflict when its version differs. Nil skips the check.
    public var expectedVersion: Int64?
    /// Attributes to set; a nil value clears the attribute.
    public var attributes: [String: Value?]
    /// To-one relationships to set; a nil value clears the relationship.
    public var toOne: [String: ObjectKey?]
    /// To-many relationships to replace with these keys (in order for ordered ones).
    public var toMany: [String: [ObjectKey]]
    /// The order keys of ordered to-many relationships in ``toMany``, one per member,
    /// ascending; a relationship not named here is numbered 1, 2, 3… (see ``OrderKeys``).
    public var orderKeys: [String: [Int64]]

    /// Creates an update.
    public init(key: ObjectKey, expectedVersion: Int64? = nil, attributes: [String: Value?] = [:],
                toOne: [String: ObjectKey?] = [:], toMany: [String: [ObjectKey]] = [:], orderKeys: [String: [Int64]] = [:]) {
        self.key = key
        self.expectedVersion = expectedVersion
        self.attributes = attributes
        self.toOne = toOne
        self.toMany = toMany
        self.orderKeys = orderKeys
    }
}

/// The deletion of one object.
public struct ObjectDeletion: Sendable, Hashable {
    /// The object.
    public var key: ObjectKey
    /// The version the delete was decided against; nil skips the check.
    public var expectedVersion: Int64?

    /// Creates a deletion.
    public init(key: ObjectKey, expectedVersion: Int64? = nil) {
        self.key = key
        self.expectedVersion = expectedVersion
    }
}

/// Everything one save writes: all of it lands or none of it does.
///
/// A change set may give one side of a relationship that has an inverse, or
/// both. A store keeps the object graph consistent: it completes the side not
/// given (see ``PersistentStore/save(_:)``), and refuses a change set whose two
/// sides disagree (``checkInverses(model:)``). ``ObjectContext`` always gives
/// both. Inserted records carry caller-chosen primary keys that are not in use.
public struct ChangeSet: Sendable, Hashable {
    /// New objects.
    public var inserted: [ObjectRecord]
    /// Changes to existing objects.
    public var updated: [ObjectUpdate]
    /// Objects to remove.
    public var deleted: [ObjectDeletion]
    /// Whether updated objects keep their versions instead of moving to the next one:
    /// for a writer completing objects it has just inserted, like a migration setting
    /// relationships in its second phase. False by default.
    public var keepsVersions: Bool
    /// Who makes the change, for the store's history (``StoreTransaction/author``); nil takes the
    /// store's ``StoreOptions/author``.
    public var author: String?
    /// Whether the store looks up every object the change points to (true by default). False is
    /// for a writer whose targets exist by construction, like a migration setting the relationships
    /// of objects it has written in its second phase: the store may then skip the lookups (a target
    /// that is not there is left out of the inverse sides it completes, and is a broken reference
    /// `validate` reports). Everything else is checked as ever.
    public var checksReferences: Bool
    /// Whether the store completes the inverse side of every relationship the change gives (true by
    /// default; see ``PersistentStore/save(_:)``). False is for a writer that gives both sides of
    /// every relationship it sets, like a migration copying a consistent store: the store writes
    /// what it is given and completes nothing, as a bulk insert that does not check references.
    public var completesInverses: Bool

    /// Creates a change set.
    public init(inserted: [ObjectRecord] = [], updated: [ObjectUpdate] = [], deleted: [ObjectDeletion] = [],
                keepsVersions: Bool = false, author: String? = nil, checksReferences: Bool = true, completesInverses: Bool = true) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.keepsVersions = keepsVersions
        self.author = author
        self.checksReferences = checksReferences
        self.completesInverses = completesInverses
    }

    /// Whether it changes nothing.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

/// The rules of order keys, the numbers an ordered to-many keeps with its members (Core Data's
/// `Z_FOK_…` columns): a store keeps the numbers it is given, so a store converted to another
/// backend and back holds the very numbers it held (`docs/reliability.md`).
///
/// Order keys are one per member and ascending. A list given without them is numbered 1, 2, 3…;
/// a member a store appends to a list (completing an inverse) gets the last number plus one.
public enum OrderKeys {
    /// The numbers of a list of `count` members given without order keys: 1, 2, 3…
    public static func positions(_ count: Int) -> [Int64] { count == 0 ? [] : Array(1...Int64(count)) }

    /// Whether `keys` are the numbers a list of that many members gets without order keys.
    public static func arePositions(_ keys: [Int64]) -> Bool {
        keys.indices.allSatisfy { keys[$0] == Int64($0 + 1) }
    }

    /// Checks order keys given for `relationship` of `owner` with `count` members.
    /// - Throws: ``StoreError/Code/invalidChange`` when they are not one per member, not
    ///   ascending, or given for a relationship that is not an ordered to-many.
    public static func check(_ keys: [Int64], count: Int, owner: ObjectKey, relationship: Relationship?) throws {
        guard let relationship, relationship.isToMany, relationship.isOrdered else {
            throw StoreError(.invalidChange, "\(owner).\(relationship?.name ?? "?"): order keys are for ordered to-many relationships only")
        }
        guard keys.count == count else {
            throw StoreError(.invalidChange, "\(owner).\(relationship.name): \(keys.count) order keys for \(count) members")
        }
        guard keys.indices.dropFirst().allSatisfy({ keys[$0 - 1] < keys[$0] }) else {
            throw StoreError(.invalidChange, "\(owner).\(relationship.name): the order keys are not ascending")
        }
    }
}

/// The members of a relationship with their order keys (``OrderKeys``), one per member.
public struct OrderedMembers: Sendable, Hashable {
    /// The members, in order for an ordered to-many.
    public var keys: [ObjectKey]
    /// Their order keys, ascending: as the store keeps them for an ordered to-many, else 1, 2, 3…
    public var orderKeys: [Int64]

    /// Members with their order keys (one per member).
    public init(keys: [ObjectKey], orderKeys: [Int64]) {
        precondition(keys.count == orderKeys.count, "one order key per member")
        self.keys = keys
        self.orderKeys = orderKeys
    }

    /// Members numbered 1, 2, 3…
    public init(_ keys: [ObjectKey]) {
        self.init(keys: keys, orderKeys: OrderKeys.positions(keys.count))
    }

    /// Adds a member as a store reads it, with the order key it keeps: a member without one (added
    /// from the other side), or with one not above the last, is numbered on from the last, so the
    /// keys stay ascending.
    public mutating func append(_ key: ObjectKey, orderKey: Int64?) {
        keys.append(key)
        if let orderKey, orderKey > orderKeys.last ?? .min { orderKeys.append(orderKey) } else { orderKeys.append((orderKeys.last ?? 0) + 1) }
    }
}
