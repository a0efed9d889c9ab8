import Foundation
import ObjectModel

// Optional capabilities: protocols a backend may adopt when it can do something faster than
// the store contract's general forms. The engine discovers them with `as?` and falls back to
// the contract when a store does not adopt one, or declines (docs/writing-a-backend.md).

/// A store that copies objects from another store of its own backend in one step, without
/// moving them through batches (SQLite: `ATTACH` and `INSERT … SELECT`).
///
/// The migration manager uses it when every entity mapping is a plain copy of the same
/// model that keeps keys (`objectstore convert` between two stores of one backend, an
/// identity migration) and ``canCopyObjects(of:from:)`` says yes; otherwise, and with
/// `MigrationManager.usesBulkCopy` off, it moves batches.
public protocol BulkCopying: PersistentStore {
    /// Whether ``copyObjects(of:from:)`` can copy the objects of exactly these entities from
    /// `source`: a store of this backend, with this store's model and a layout that fits this
    /// store's. A store may decline any set it cannot copy whole.
    func canCopyObjects(of entities: [String], from source: any PersistentStore) -> Bool

    /// Copies every object of exactly these entities (sub-entities are named on their own)
    /// from `source`, with their keys, versions, attribute values and every relationship
    /// among them, in one transaction that reads `source` at one moment; returns how many
    /// objects of each entity it copied. Values are carried as the source holds them. All
    /// or nothing: after an error nothing was written.
    /// - Throws: ``StoreError``; `invalidChange` when ``canCopyObjects(of:from:)`` says no,
    ///   or a key is in use.
    func copyObjects(of entities: [String], from source: any PersistentStore) throws -> [String: Int]

    /// Copies as ``copyObjects(of:from:)`` does and, beside the copy, finds the objects of each
    /// entity of `narrowing` that may break one of its attribute rules (as ``RuleNarrowing`` finds
    /// them), in the source at the moment the copy reads it: their primary keys, in key order,
    /// by entity. An entity left out of the answer is one the store did not narrow (the caller
    /// narrows it after the copy). By default, the copy alone.
    func copyObjects(of entities: [String], from source: any PersistentStore,
                     narrowing: [String]) throws -> (counts: [String: Int], mayBreakRules: [String: [Int64]])
}

extension BulkCopying {
    public func copyObjects(of entities: [String], from source: any PersistentStore,
                            narrowing: [String]) throws -> (counts: [String: Int], mayBreakRules: [String: [Int64]]) {
        (try copyObjects(of: entities, from: source), [:])
    }
}

/// A store that keeps a to-many relationship whose inverse is a to-one as that to-one alone (a
/// foreign key, as SQLite and PostgreSQL do): writing the to-one writes both sides, even when it
/// was written before its target existed. A migration then writes such a pair once.
public protocol ForeignKeyRelationships: PersistentStore {
    /// Whether both sides of a many-to-many are one join table (SQLite, as Core Data): a migration
    /// then writes the side with fewer owners and the store completes the other. False when each
    /// side has a table of its own (PostgreSQL): each side is written from the source, without
    /// completing the other. True by default.
    var sharesManyToManyTables: Bool { get }

    /// Whether the store writes the order keys a batch carries for its rows
    /// (``RecordBatch/inverseOrderKeys``) with the rows, as they are given (SQLite, into its
    /// `Z_FOK_` columns), when the batch is inserted unchecked and laid out by the store's own
    /// model (``PersistentStore/bulkInsert(_:checkingReferences:)-(RecordBatch,_)`` with
    /// `checkingReferences` false): a migration whose batches carry every member's order key then
    /// writes an ordered to-many whose inverse is a to-one with the members alone. False by default.
    var writesInverseOrderKeys: Bool { get }
}

extension ForeignKeyRelationships {
    public var sharesManyToManyTables: Bool { true }
    public var writesInverseOrderKeys: Bool { false }
}

/// A store that writes the to-many lists a batch carries (``RecordBatch/toMany``) with the rows
/// themselves, in the same pass, whatever the order of the batches: LMDB keeps each list in its
/// owner's row; a PostgreSQL store filled in one go copies a batch's join-table rows after its
/// rows and writes an ordered list's order keys into its members' rows once they are in.
///
/// A conversion of one model into such a store (every mapping a copy that keeps keys) reads each
/// batch with its lists and writes every object once, whole: it has no phase 2. Any store takes
/// such batches as it takes the same records (the default bulk insert hands them over, lists
/// included; a store that keeps a to-many in its members' rows, as SQLite's foreign keys, writes
/// it only into members that exist by then); this says that any order of batches will do, at
/// little more cost than the rows alone.
public protocol WholeRowInserting: PersistentStore {
    /// Whether this store, as it is open, writes batches' lists so (true by default; a
    /// PostgreSQL store only when it is filled in one go).
    var insertsWholeRows: Bool { get }
}

extension WholeRowInserting {
    public var insertsWholeRows: Bool { true }
}

/// A store that finds, where the data is, the objects that may break an entity's attribute
/// rules (required, bounds, lengths, patterns), and its relationship rules when
/// ``narrowsRelationshipRules`` says so: a migration's phase 3 then reads only those, and checks
/// them exactly with ``ObjectValidator``, instead of reading every object (SQLite adopts it).
public protocol RuleNarrowing: PersistentStore {
    /// Up to `limit` objects of exactly `entity`, in key order after `primaryKey`, among which are
    /// all that break one of its attribute rules, and of its relationship rules when
    /// ``narrowsRelationshipRules`` is true (the store may give more: the caller checks each); nil
    /// when the store cannot narrow the entity's rules.
    func objectsThatMayBreakRules(of entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord]?

    /// Whether the objects ``objectsThatMayBreakRules(of:after:limit:)`` gives (and a bulk copy's
    /// narrowing beside it names) include every one that breaks a relationship rule (required,
    /// minimum and maximum counts). False by default.
    var narrowsRelationshipRules: Bool { get }

    /// As ``objectsThatMayBreakRules(of:after:limit:)``, for the relationship rules alone (the
    /// attributes were checked before): a store that narrows relationship rules need not read the
    /// attributes again. By default, ``objectsThatMayBreakRules(of:after:limit:)``.
    func objectsThatMayBreakRelationshipRules(of entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord]?
}

extension RuleNarrowing {
    public var narrowsRelationshipRules: Bool { false }

    public func objectsThatMayBreakRelationshipRules(of entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord]? {
        try objectsThatMayBreakRules(of: entity, after: primaryKey, limit: limit)
    }
}

/// A store that counts an entity's objects without reading them (LMDB from `mdb_stat`,
/// the in-memory tables from their size). The migration manager takes its progress totals
/// from it when a store adopts it; SQLite does not (`count(*)` walks the table).
public protocol ObjectCounting: PersistentStore {
    /// How many objects of exactly `entity` the store holds (sub-entities not counted).
    func objectCount(of entity: String) throws -> Int
}

/// A store type whose closed stores can move to another model version in place: their tables
/// altered and their metadata updated in one transaction, no object loaded. SQLite and PostgreSQL
/// adopt it (tables and columns added, renamed and dropped: docs/migrations.md; ``SchemaStep`` is
/// the model side both share), and `StoreMigrator` uses it for the steps of a plan it can serve.
public protocol SchemaChanging: StoreType {
    /// Why a store of `source` cannot move to `destination` in place, one sentence per change
    /// naming the entity and property; empty when it can.
    func schemaChangeBlockers(from source: ManagedObjectModel, to destination: ManagedObjectModel) -> [String]

    /// Moves the closed store at `url`, written with `models[0]`, through each following model
    /// in turn, all in one transaction: after an error or a crash it is as it was. `record`, when
    /// given, is appended to the store's persistent history in that transaction (a migration's:
    /// it lists no object, since any may have changed).
    /// - Throws: ``StoreError``; ``StoreError/Code/invalidChange`` when a step has blockers.
    func changeSchema(at url: URL, through models: [ManagedObjectModel], recording record: HistoryRecord?) throws
}

extension SchemaChanging {
    /// ``changeSchema(at:through:recording:)`` with nothing recorded in the history.
    public func changeSchema(at url: URL, through models: [ManagedObjectModel]) throws {
        try changeSchema(at: url, through: models, recording: nil)
    }
}

extension PersistentStore {
    /// How many objects of exactly `entity` there are: from ``ObjectCounting`` when the store
    /// adopts it, else by ``count(_:)``.
    public func objectCount(exactly entity: String) throws -> Int {
        if let counting = self as? any ObjectCounting { return try counting.objectCount(of: entity) }
        return try count(FetchRequest(entity: entity, includesSubentities: false))
    }
}

/// A store type whose stores carry the model they were written with in a form of their own,
/// readable without a model file: Core Data's SQLite stores keep theirs in `Z_MODELCACHE`.
///
/// The `objectstore` tool opens a store with it when the store embeds no ObjectStore model
/// (``StoreMetadata/embeddedModel()``) and no model is given.
///
/// ```swift
/// if let type = type as? any CarriedModelReading, let model = try type.carriedModel(at: url) { … }
/// ```
public protocol CarriedModelReading: StoreType {
    /// The model the closed store at `url` carries, or nil when it carries none. The store's
    /// files are not changed.
    /// - Throws: ``StoreError`` when the store cannot be read; `ModelError` when it carries a
    ///   model that cannot be decoded (damaged, or holding what this library does not know).
    func carriedModel(at url: URL) throws -> ManagedObjectModel?
}

/// A store that says how its database runs a fetch (an optional capability): SQLite's
/// `EXPLAIN QUERY PLAN`, one line per step, to see that a predicate uses an index.
public protocol QueryPlanning {
    /// The database's plan for the fetch `request` runs.
    func queryPlan(_ request: FetchRequest) throws -> [String]
}
