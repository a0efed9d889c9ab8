import Foundation
import ObjectModel

/// An open store: the contract every backend implements.
///
/// Everything above it (``ObjectContext``, ``StoreCoordinator``, the migration
/// engine) works with any backend through this protocol alone. Stores are
/// `Sendable`; every method is synchronous and leaves no transaction open
/// when it returns.
///
/// Backends prove themselves with `ObjectStoreTesting`'s conformance suite.
public protocol PersistentStore: AnyObject, Sendable {
    /// The store type's registered name (`memory`, `sqlite`, `atomic`, `lmdb`).
    var storeType: String { get }
    /// Where the store lives, or nil for an anonymous in-memory store.
    var url: URL? { get }
    /// The store's UUID (metadata key `NSStoreUUID`); part of every ``ObjectID``.
    var identifier: UUID { get }
    /// The model the store was opened with.
    var model: ManagedObjectModel { get }
    /// Whether writes are refused.
    var isReadOnly: Bool { get }

    /// The store's metadata.
    func metadata() throws -> StoreMetadata
    /// Replaces the store's metadata (durably, for a durable store).
    func setMetadata(_ metadata: StoreMetadata) throws

    /// Objects matching a request: its entity (with sub-entities unless the
    /// request excludes them), predicate, sort, offset and limit. Objects that
    /// sort equal come in ascending primary-key order.
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidFetch`` for an unknown entity or key path.
    func fetch(_ request: FetchRequest) throws -> [ObjectRecord]
    /// How many objects ``fetch(_:)`` would return.
    func count(_ request: FetchRequest) throws -> Int
    /// One object by key, or nil when there is none.
    func record(for key: ObjectKey) throws -> ObjectRecord?
    /// The keys among `keys` whose objects the store has, as ``record(for:)`` finds them, without
    /// reading them where the store can say so (a SQLite store: one query per entity and 500 keys).
    func existingKeys(among keys: [ObjectKey]) throws -> Set<ObjectKey>
    /// The keys across a relationship of an object: 0 or 1 for a to-one, in
    /// order for an ordered to-many, in ascending key order otherwise.
    func relatedKeys(of key: ObjectKey, relationship: String) throws -> [ObjectKey]
    /// What ``relatedKeys(of:relationship:)`` gives, with the order keys an ordered to-many
    /// keeps (``OrderKeys``): a conversion writes the very numbers the source held.
    func orderedMembers(of key: ObjectKey, relationship: String) throws -> OrderedMembers
    /// ``orderedMembers(of:relationship:)`` of many objects (of one hierarchy) at once, in the order
    /// of `keys`: a store that can reads them in one statement per batch.
    func orderedMembers(of keys: [ObjectKey], relationship: String) throws -> [OrderedMembers]
    /// The next batch of a streaming scan: up to `limit` objects of exactly
    /// `entity` (no sub-entities) with primary keys above `primaryKey`, in
    /// ascending primary-key order. Memory stays bounded by the batch.
    func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord]
    /// The objects ``scan(entity:after:limit:)`` gives, values by slot: the batch form,
    /// for code that moves many objects (a migration, a conversion). The default reads
    /// records through `scan` and lays them out; a backend implements it to skip the records.
    func scanBatch(entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordBatch
    /// The next batch of a streaming scan of the objects of exactly `entity` that `predicate`
    /// matches: up to `limit` of them with primary keys above `primaryKey`, in ascending key
    /// order, fewer only at the end. The default tests each object ``scan(entity:after:limit:)``
    /// gives; a backend that narrows the rows where the data is (SQL) reads fewer, through
    /// ``scanMatching(entity:_:after:limit:candidates:)``.
    /// - Throws: `StoreError` with code `invalidFetch` for a predicate that does not apply to `entity`.
    func scan(entity: String, matching predicate: ObjectPredicate, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord]
    /// The objects ``fetch(_:)`` returns for `request`, in the same order, values by slot: the
    /// batch form, for a reader that turns many objects into its own representation (a context
    /// making managed objects) without a record per object. `body` gets them a batch at a time:
    /// each batch holds consecutive objects of one entity, at most `batchSize` (at least 1).
    /// `body` runs while the store reads, so it must not call the store. The default reads
    /// records through `fetch` and lays them out; a backend implements it to skip the records.
    func fetchBatches(_ request: FetchRequest, batchSize: Int, _ body: (RecordBatch) throws -> Void) throws

    /// Writes a change set atomically: all of it or nothing.
    ///
    /// The store keeps both sides of every relationship that has an inverse. When
    /// the change set gives one side only, the store completes the other: an
    /// object a relationship gains is added to its new partner's inverse (at the
    /// end of an ordered to-many) and removed from its old partner's; a one-to-one
    /// partner it displaces loses it; an object a to-many drops loses its to-one
    /// back. Objects changed only that way keep their versions. When the change
    /// set gives both sides they must agree (``ChangeSet/checkInverses(model:)``).
    ///
    /// - Throws: ``StoreError``: ``StoreError/Code/conflict`` when an object's
    ///   version differs from the expected one, ``StoreError/Code/invalidChange``
    ///   for unknown objects, entities or properties, a key in use, or sides of
    ///   a relationship that disagree.
    func save(_ changes: ChangeSet) throws
    /// Writes `changes` and, in the same transaction, the new objects of the batches `nextBatch`
    /// hands out (it is called until it returns nil): exactly what ``save(_:)`` writes for
    /// `changes` with every batch's rows appended to ``ChangeSet/inserted`` as records, checked
    /// the same way, all or nothing. The batch form, for a writer with many new objects (a
    /// context's save): no record per object. `nextBatch` runs while the store writes, so it must
    /// not call the store. The default gathers the records and calls ``save(_:)``; a backend
    /// implements it to insert the batches without them.
    func save(_ changes: ChangeSet, insertingBatches nextBatch: () throws -> RecordBatch?) throws
    /// Reserves `count` new primary keys for `entity`'s hierarchy; keys are never reused.
    func allocatePrimaryKeys(entity: String, count: Int) throws -> ClosedRange<Int64>
    /// The last primary key handed out in `entity`'s hierarchy (0 when none was).
    func lastAllocatedKey(entity: String) throws -> Int64
    /// Inserts many new objects with caller-chosen primary keys (for migration
    /// and import), atomically; the key counter moves past the largest key.
    ///
    /// With `checkingReferences` false, relationships may name objects that are
    /// not inserted yet (a migration inserting both ends of a relationship in
    /// separate batches, keys known in advance); their entities are still checked.
    /// The caller guarantees the objects will exist once it is done. Only to-one
    /// relationships may be given that way, and the store does not complete the
    /// inverse sides of such a bulk insert (it could not for objects that do not
    /// exist yet): the caller writes them itself, as a migration does. The rules that need
    /// both ends (sides of a one-to-one that agree, no object claimed by two others through
    /// a to-one inverse) are then the caller's to keep too: a backend may check them from
    /// what the batch holds (the row stores do) or not (SQLite does not).
    func bulkInsert(_ records: [ObjectRecord], checkingReferences: Bool) throws
    /// Inserts a batch of new objects exactly as ``bulkInsert(_:checkingReferences:)-([ObjectRecord],_)``
    /// inserts the same records: the batch form. The default hands the records to the
    /// record form; a backend implements it to skip them.
    func bulkInsert(_ batch: RecordBatch, checkingReferences: Bool) throws
    /// A read-only view of the store as it is now, for reads that must agree with each
    /// other (an export, a conversion, a validation, a migration's source): every read
    /// through it sees the store at this moment, whatever is saved meanwhile, by this
    /// process or another, until it is closed. Writes through it throw
    /// ``StoreError/Code/readOnly``.
    ///
    /// ```swift
    /// let snapshot = try store.snapshot()
    /// defer { try? snapshot.close() }
    /// let people = try snapshot.fetch(FetchRequest(entity: "Person"))
    /// let pets = try snapshot.relatedKeys(of: people[0].key, relationship: "pets")   // as of the same moment
    /// ```
    ///
    /// A snapshot holds what it needs to read that moment (SQLite a read transaction,
    /// LMDB a read transaction, the in-memory and atomic stores a copy of their tables)
    /// until it is closed; close it when done.
    func snapshot() throws -> any PersistentStore

    /// The store's persistent history after `token` (all of it when nil), oldest first, at most
    /// `limit` transactions: one for every save, bulk insert, batch update and batch delete,
    /// written in the same transaction as its data (``StoreTransaction``). Empty for a store
    /// opened with ``StoreOptions/recordsHistory`` false that never had any.
    func history(after token: Int64?, limit: Int) throws -> [StoreTransaction]
    /// The newest transaction's token, or, once history is deleted, the greatest ever handed
    /// out; 0 for a store that never recorded one. Cheap: what an observer polls.
    func lastHistoryToken() throws -> Int64
    /// Deletes the history up to and including `token`; later tokens are never reused.
    /// Returns how many transactions went.
    @discardableResult
    func deleteHistory(through token: Int64) throws -> Int
    /// Makes every later token greater than `token`, and writes `record` (when given, even one
    /// that lists no object) under the next one, whether or not the store records history: for
    /// a store that takes another's place (a migration's), so that its tokens go on from the old
    /// store's and observers never see one handed out twice.
    func continueHistory(after token: Int64, recording record: HistoryRecord?) throws
    /// Sets `values` on every object `request` matches, in one transaction recorded in the
    /// history; returns how many (``PersistentStore/batchUpdate(_:set:author:)`` says what is
    /// checked). The default reads the matching records and saves a change set; a backend
    /// implements it to do it without them (SQLite in SQL).
    @discardableResult
    func batchUpdate(_ request: FetchRequest, set values: [String: Value?], author: String?) throws -> Int
    /// Deletes every object `request` matches, delete rules applied, in one transaction recorded
    /// in the history; returns how many went. The default works the rules out from the records
    /// and saves a change set; a backend implements it to do it without them.
    @discardableResult
    func batchDelete(_ request: FetchRequest, author: String?) throws -> Int
    /// Flushes and closes the store; later calls throw ``StoreError/Code/closed``.
    func close() throws
}

extension PersistentStore {
    /// Each object read (``record(for:)``).
    public func existingKeys(among keys: [ObjectKey]) throws -> Set<ObjectKey> {
        Set(try keys.filter { try record(for: $0) != nil })
    }

    /// For a store that keeps no order keys: the members numbered 1, 2, 3…
    public func orderedMembers(of key: ObjectKey, relationship: String) throws -> OrderedMembers {
        OrderedMembers(try relatedKeys(of: key, relationship: relationship))
    }

    /// One object at a time.
    public func orderedMembers(of keys: [ObjectKey], relationship: String) throws -> [OrderedMembers] {
        try keys.map { try orderedMembers(of: $0, relationship: relationship) }
    }

    /// Bridges to ``scan(entity:after:limit:)``: a backend that implements only the record forms keeps working.
    public func scanBatch(entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordBatch {
        guard let description = model.entity(named: entity) else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        var batch = RecordBatch(entity: description, capacity: limit)
        for record in try scan(entity: entity, after: primaryKey, limit: limit) { try batch.append(record) }
        return batch
    }

    /// Each object of ``scan(entity:after:limit:)`` tested by the evaluator.
    public func scan(entity: String, matching predicate: ObjectPredicate, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord] {
        try scanMatching(entity: entity, predicate, after: primaryKey, limit: limit) { try scan(entity: entity, after: $0, limit: $1) }
    }

    /// Up to `limit` objects of exactly `entity` that `predicate` matches, with keys above
    /// `primaryKey`, in key order (``scan(entity:matching:after:limit:)``), from batches of
    /// candidates: `candidates(after, n)` gives up to `n` objects of `entity` with keys above
    /// `after`, in key order, among them every object that matches (a backend's narrowing in SQL).
    /// Each candidate is tested by ``PredicateEvaluator``, so the answer is the evaluator's.
    public func scanMatching(entity: String, _ predicate: ObjectPredicate, after primaryKey: Int64?, limit: Int,
                             candidates: (Int64?, Int) throws -> [ObjectRecord]) throws -> [ObjectRecord] {
        guard let description = model.entity(named: entity) else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        try PredicateEvaluator.check(predicate, on: description, in: model)
        var found: [ObjectRecord] = []
        var last = primaryKey
        let size = Swift.max(1, limit)
        while found.count < limit {
            let batch = try candidates(last, size)
            for record in batch where try PredicateEvaluator.evaluate(predicate, on: StoreSubject(record: record, store: self)) {
                found.append(record)
                if found.count == limit { return found }
            }
            guard batch.count == size, let tail = batch.last?.key.primaryKey else { break }
            last = tail
        }
        return found
    }

    /// Bridges to ``fetch(_:)``: a backend that implements only the record forms keeps working.
    public func fetchBatches(_ request: FetchRequest, batchSize: Int, _ body: (RecordBatch) throws -> Void) throws {
        try RecordBatch.runs(of: fetch(request), batchSize: batchSize, in: model, body)
    }

    /// Bridges to ``save(_:)``: the batches' rows join the change set's inserted records.
    public func save(_ changes: ChangeSet, insertingBatches nextBatch: () throws -> RecordBatch?) throws {
        var changes = changes
        while let batch = try nextBatch() { changes.inserted += batch.records }
        try save(changes)
    }

    /// Bridges to the record form of `bulkInsert`.
    public func bulkInsert(_ batch: RecordBatch, checkingReferences: Bool) throws {
        try bulkInsert(batch.records, checkingReferences: checkingReferences)
    }

    /// Inserts many new objects with caller-chosen primary keys, every reference checked.
    public func bulkInsert(_ records: [ObjectRecord]) throws {
        try bulkInsert(records, checkingReferences: true)
    }

    /// The transactions of the store's history that `query` admits, oldest first.
    public func history(_ query: HistoryQuery) throws -> [StoreTransaction] {
        var found: [StoreTransaction] = []
        var after = query.after
        let page = 1_000
        while query.limit.map({ found.count < $0 }) ?? true {
            let batch = try history(after: after, limit: page)
            found += batch.filter { query.admits($0, model: model) }
            guard let last = batch.last, batch.count == page else { break }
            after = last.token.value
        }
        if let limit = query.limit, found.count > limit { found.removeLast(found.count - limit) }
        return found
    }

    /// The ``ObjectID`` of a key in this store.
    public func objectID(for key: ObjectKey) -> ObjectID { ObjectID(store: identifier, key: key) }

    /// Every object of exactly `entity`, in primary-key order, read `batchSize` at a time.
    ///
    /// ```swift
    /// for batch in store.batches(of: "Person", size: 1_000) { for record in try batch.get() { … } }
    /// ```
    public func batches(of entity: String, size: Int = 1_000) -> StoreScan {
        StoreScan(store: self, entity: entity, batchSize: size)
    }

    /// The objects of exactly `entity` that `predicate` matches, in batches of `size` in
    /// primary-key order (``scan(entity:matching:after:limit:)``): memory stays bounded by a batch.
    public func batches(of entity: String, matching predicate: ObjectPredicate, size: Int = 1_000) -> StoreScan {
        StoreScan(store: self, entity: entity, batchSize: size, predicate: predicate)
    }
}

/// A streaming scan over one entity, a batch at a time (see ``PersistentStore/scan(entity:after:limit:)``).
public struct StoreScan: Sequence, IteratorProtocol {
    let store: any PersistentStore
    let entity: String
    let batchSize: Int
    let predicate: ObjectPredicate?
    private var last: Int64?
    private var finished = false

    init(store: any PersistentStore, entity: String, batchSize: Int, predicate: ObjectPredicate? = nil) {
        self.store = store
        self.entity = entity
        self.batchSize = Swift.max(1, batchSize)
        self.predicate = predicate
    }

    /// The next batch (never empty), a failure, or nil at the end.
    public mutating func next() -> Result<[ObjectRecord], any Error>? {
        guard !finished else { return nil }
        do {
            let batch = try predicate.map { try store.scan(entity: entity, matching: $0, after: last, limit: batchSize) }
                ?? store.scan(entity: entity, after: last, limit: batchSize)
            if batch.count < batchSize { finished = true }
            guard let tail = batch.last else { return nil }
            last = tail.key.primaryKey
            return .success(batch)
        } catch {
            finished = true
            return .failure(error)
        }
    }
}

/// Options for opening a store.
public struct StoreOptions: Sendable, Hashable {
    /// Refuse writes, and never change the store's files.
    public var readOnly: Bool
    /// Create the store when none exists at the URL (the default).
    public var createIfMissing: Bool
    /// Backend-specific settings (for example `journal_mode` for SQLite).
    public var settings: [String: String]
    /// Writes need not reach stable storage before ``PersistentStore/close()``, which
    /// makes everything durable: for a store filled in one go, like a migration's
    /// destination. A crash before close can lose those writes, so use it only for
    /// a store that is thrown away when the work does not finish. With history off too, a store
    /// may also defer committing unchecked batches (PostgreSQL keeps one `COPY` open across an
    /// entity's batches): a batch it refuses (a key in use) is then reported by the next call,
    /// ``PersistentStore/close()`` at the latest, and nothing since the last commit is kept.
    public var deferredDurability: Bool
    /// Whether writes record persistent history (``PersistentStore/history(after:limit:)``): true
    /// by default. A store built to be swapped in for another (a migration's or a conversion's
    /// destination) turns it off and is given its history afterwards.
    public var recordsHistory: Bool
    /// The author recorded for writes that name none (a bulk insert, a change set without
    /// ``ChangeSet/author``): `objectstore --author`.
    public var author: String?

    /// Creates options.
    public init(readOnly: Bool = false, createIfMissing: Bool = true, settings: [String: String] = [:],
                deferredDurability: Bool = false, recordsHistory: Bool = true, author: String? = nil) {
        self.readOnly = readOnly
        self.createIfMissing = createIfMissing
        self.settings = settings
        self.deferredDurability = deferredDurability
        self.recordsHistory = recordsHistory
        self.author = author
    }

    /// Checks that a store missing at `url` may be made: asked to (``createIfMissing``), and not
    /// read-only. Every backend's open asks this before it creates anything.
    /// - Throws: `StoreError` with code `notFound` ("no `kind` store").
    public func checkCreatable(_ kind: String, url: URL?) throws {
        guard createIfMissing, !readOnly else { throw StoreError(.notFound, "no \(kind) store", url: url) }
    }
}

/// A store that can check its own files beyond what reading them checks: an optional
/// capability (`objectstore validate` asks for it).
///
/// SQLite reports rows of no entity the model knows, references to rows that do not
/// exist, and (deep) SQLite's own `integrity_check`; LMDB (deep) walks its pages.
public protocol IntegrityChecking {
    /// One line per problem, naming what and where. `deep` adds the checks that read
    /// every page of the file.
    func integrityProblems(deep: Bool) throws -> [String]
    /// Rows that every read passes by without a word (SQLite: a row whose `Z_ENT` names no
    /// entity of its table, or whose key is below 1), at most `limit`: what an export or a
    /// conversion checks first, so that it never leaves an object out silently. Cheaper than
    /// ``integrityProblems(deep:)``; empty by default.
    func rowsNoReadSees(limit: Int) throws -> [String]
}

extension IntegrityChecking {
    public func rowsNoReadSees(limit: Int) throws -> [String] { [] }
}
