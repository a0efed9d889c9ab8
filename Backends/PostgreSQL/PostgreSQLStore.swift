import Foundation
import ObjectModel
import ObjectStore
import StoreToolkit
import Synchronization

/// A store in a PostgreSQL database, through libpq's blocking API: one table per inheritance
/// root with typed columns, join tables for to-many sides without a to-one inverse, one key
/// sequence per root and a metadata table, all in the schema the URL names
/// (docs/postgresql-layout.md).
///
/// Several processes and hosts may use one store at once. Every save is one `REPEATABLE READ`
/// transaction: a save over an object another process changed since fails with
/// ``StoreError/Code/conflict`` naming it, never overwriting the other write. Keys come from
/// sequences, so two writers never collide. A ``snapshot()`` is a `REPEATABLE READ READ ONLY`
/// transaction on a connection of its own, held until it is closed.
///
/// ```swift
/// PostgreSQLStore.register()
/// let url = URL(string: "postgresql://app@db.example.com/library?schema=books")!
/// let store = try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions())
/// ```
public final class PostgreSQLStore: TransactionalStore, QueryPlanning, WholeRowInserting {
    /// The registered type name, `postgresql`.
    public static let typeName = "postgresql"

    /// Registers the `postgresql` store type (with `registry`, the shared one by default).
    public static func register(in registry: StoreTypeRegistry = .shared) {
        registry.register(PostgreSQLStoreType())
    }

    public var storeType: String { Self.typeName }
    public var url: URL? { location.url }
    public let identifier: UUID
    public let model: ManagedObjectModel
    public let isReadOnly: Bool

    let location: PostgreSQLLocation
    let layout: PostgreSQLLayout
    /// Whether writes record history, and their default author.
    let historyPolicy: HistoryPolicy
    /// Whether this is a snapshot: its connection holds one read-only transaction until closed.
    let isSnapshot: Bool
    /// Whether commits skip the WAL flush until ``close()`` (``StoreOptions/deferredDurability``).
    private let deferredDurability: Bool
    /// For a snapshot, each root's last allocated key when it was taken (sequences are outside
    /// transactions, so a snapshot reads them once, at its start).
    private let snapshotKeys: [String: Int64]
    /// Whether the server keeps text in UTF-8 (its `server_encoding`): string predicates and sorts
    /// then run in SQL (``PostgreSQLDialect``).
    let unicode: Bool
    /// The metadata row of the model's version hashes when the store opened: a save finds it
    /// unchanged, or the store was migrated or replaced meanwhile and the save is refused.
    private let openedHashes: Data?
    /// The connections: each call takes one for itself (a snapshot has one, a store filled in one
    /// go one, for its open `COPY`).
    private let pool: PGConnectionPool
    /// What the store's calls share besides the connections.
    private let state = Mutex(State())

    private struct State {
        /// Inheritance roots whose tables took a bulk load (`COPY`) since the planner's statistics
        /// of them were last gathered (``finishBulkLoad(_:closing:)``).
        var loaded: Set<String> = []
        /// Whether the history table was found in the schema (see ``PostgreSQLHistory/append``).
        var historyTableKnown = false
        /// A `COPY` left open across unchecked batches (see ``bulkInsert(_:checkingReferences:)``).
        var pendingCopy: PendingCopy?
        /// The indexes (beyond primary keys) of a store this open made to be filled in one go
        /// (``streamsCopies``): made once rows are in (``finishBulkLoad(_:closing:)``).
        var owedIndexes: [String] = []
        /// Whether a save wrote rows since the store opened (rows that did not come by `COPY`).
        var savedRows = false
        /// For a store filled in one go: the rows saves inserted into each join table, and how
        /// many there were when the table was last analyzed (``analyzeGrownJoinTables(_:)``).
        var joinTableRows: [String: (inserted: Int, analyzed: Int)] = [:]
        /// For a store filled in one go: the order keys streamed batches' lists owe their members,
        /// by column and member's key: taken by the member's row when it comes later, else written
        /// once it is in (``applyOwedOrders(_:)``).
        var owedOrders: [OrderColumn: [Int64: Int64]] = [:]
        /// For a store filled in one go: join-table rows streamed batches gave, by `COPY`
        /// statement, sent once the rows' copy ends (``finishCopy(_:)``).
        var spooled: [String: Spool] = [:]
    }

    /// Join-table rows kept aside in a temporary file, unlinked as soon as it is made (a killed
    /// process leaves nothing), so that the open `COPY` of an entity's rows is not ended and
    /// begun again for every batch to copy the batch's join rows: the server then stores the
    /// rows while the next batch is read, and the join rows go in with one `COPY` a table.
    private struct Spool {
        let file: FileHandle
        /// The entity whose lists the rows are (named when a pair is in twice).
        let entity: EntityDescription

        init(entity: EntityDescription) throws {
            let url = FileManager.default.temporaryDirectory.appending(path: ".objectstore-join-rows-\(UUID().uuidString)")
            guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]),
                  let file = FileHandle(forUpdatingAtPath: url.path) else {
                throw StoreError(.io, "cannot make a temporary file for join-table rows in \(url.deletingLastPathComponent().path)")
            }
            try? FileManager.default.removeItem(at: url)
            self.file = file
            self.entity = entity
        }
    }
    /// Whether unchecked batches stream into one open `COPY`: a store filled in one go, durable at
    /// close and recording no history (a migration's or conversion's destination).
    private let streamsCopies: Bool

    /// An open `COPY` and its transaction: the statement (one entity's columns), the entity, and
    /// each root's largest key sent, for its sequence when the copy ends.
    private struct PendingCopy {
        let statement: String
        let entity: EntityDescription
        var highest: [String: Int64] = [:]
        /// The owed order keys its rows took (``stream(_:)``): owed again if the copy fails.
        var takenOrders: [OrderColumn: [Int64: Int64]] = [:]
    }

    init(location: PostgreSQLLocation, model: ManagedObjectModel, options: StoreOptions) throws {
        self.location = location
        self.model = model
        isReadOnly = options.readOnly
        historyPolicy = HistoryPolicy(options)
        isSnapshot = false
        deferredDurability = options.deferredDurability && !options.readOnly
        let streams = deferredDurability && !historyPolicy.records
        streamsCopies = streams
        snapshotKeys = [:]
        let layout = PostgreSQLLayout(model: model, location: location)
        self.layout = layout
        let setUp = { (connection: PGConnection) throws in
            if options.readOnly { try connection.execute("SET default_transaction_read_only = on") }
            // Durable at close (a migration's or conversion's destination, thrown away unless
            // complete): commits do not wait for the server's WAL flush.
            if options.deferredDurability && !options.readOnly { try connection.execute("SET synchronous_commit = off") }
        }
        let connection = try PostgreSQLStoreType.connect(location)
        let metadata: StoreMetadata
        var owedIndexes: [String] = []
        do {
            metadata = try PostgreSQLStoreType.mapping(location) { () throws -> StoreMetadata in
                if try !PostgreSQLStoreType.exists(connection, location) {
                    try options.checkCreatable("PostgreSQL", url: location.url)
                    // A store filled in one go builds its indexes once it is filled: a bulk load into
                    // tables without them, then each index built whole, takes half the time.
                    if try PostgreSQLStoreType.create(connection, location, layout: layout, model: model, deferringIndexes: streams) {
                        owedIndexes = streams ? layout.indexes.map(\.statement) : []
                    }
                }
                let metadata = try PostgreSQLStoreType.readMetadata(connection, location)
                try metadata.checkCompatible(with: model, url: location.url)
                try setUp(connection)
                return metadata
            }
            openedHashes = try PostgreSQLStoreType.mapping(location) { try Self.hashesRow(connection, location) }
            unicode = try PostgreSQLStoreType.mapping(location) { try connection.query("SHOW server_encoding").text(0, 0) == "UTF8" }
        } catch {
            connection.close()
            throw error
        }
        identifier = metadata.storeUUID ?? UUID()
        state.withLock { $0.owedIndexes = owedIndexes }
        // A store that keeps a `COPY` open across calls has one connection, the copy's.
        pool = PGConnectionPool(first: connection, limit: streamsCopies ? 1 : location.poolSize) {
            let connection = try PostgreSQLStoreType.connect(location)
            try PostgreSQLStoreType.mapping(location) { try setUp(connection) }
            return connection
        }
    }

    /// A snapshot of `store`: a connection of its own in a `REPEATABLE READ READ ONLY` transaction.
    private init(snapshotOf store: PostgreSQLStore) throws {
        location = store.location
        model = store.model
        layout = store.layout
        identifier = store.identifier
        openedHashes = store.openedHashes
        isReadOnly = true
        historyPolicy = HistoryPolicy(StoreOptions(readOnly: true))
        isSnapshot = true
        unicode = store.unicode
        deferredDurability = false
        streamsCopies = false
        let location = store.location
        let connection = try PostgreSQLStoreType.connect(location)
        do {
            snapshotKeys = try PostgreSQLStoreType.mapping(location) {
                try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                // The transaction's snapshot is taken by its first query: now.
                try connection.query("SELECT 1 FROM \(location.qualified(PostgreSQLLayout.metadataTable)) LIMIT 1")
                let view = PostgreSQLView(connection: connection, layout: store.layout, location: store.location, unicode: store.unicode)
                var keys: [String: Int64] = [:]
                for entity in store.model.entityDescriptions where entity.parent == nil {
                    keys[entity.name] = try view.lastKey(entity.name, locking: false)
                }
                return keys
            }
        } catch {
            connection.close()
            throw error
        }
        // The snapshot is its connection's transaction: another connection would read another moment.
        pool = PGConnectionPool(first: connection, limit: 1) {
            throw StoreError(.closed, "the snapshot's connection to the server was lost: take a new snapshot", url: location.url)
        }
    }

    // MARK: Contract

    public func metadata() throws -> StoreMetadata {
        try read { view in try PostgreSQLStoreType.readMetadata(view.connection, location) }
    }

    public func setMetadata(_ metadata: StoreMetadata) throws {
        try write { view in try PostgreSQLStoreType.writeMetadata(metadata, view.connection, location) }
    }

    /// Fetches and counts answer in one SELECT where the request translates (``PostgreSQLView/fetchedKeys(_:model:)``).
    public func readRows<T>(_ body: (any RowSource) throws -> T) throws -> T {
        try read { try body($0) }
    }

    /// PostgreSQL's plan for the SELECT a fetch runs (``PostgreSQLView/queryPlan(_:model:)``):
    /// `Index Scan using …` when the predicate's translated part uses an index.
    public func queryPlan(_ request: FetchRequest) throws -> [String] {
        try read { try $0.queryPlan(request, model: model) }
    }

    /// One statement (``PostgreSQLView/relatedKeys(of:relationship:)``).
    public func relatedKeys(of key: ObjectKey, relationship: String) throws -> [ObjectKey] {
        try read { try $0.relatedKeys(of: key, relationship: relationship) }
    }

    /// The batch form's answer for one object.
    public func orderedMembers(of key: ObjectKey, relationship: String) throws -> OrderedMembers {
        try orderedMembers(of: [key], relationship: relationship)[0]
    }

    /// Two statements per entity of `keys` (``PostgreSQLView/orderedMembers(of:relationship:)``); a
    /// to-one gives its related key, numbered 1.
    public func orderedMembers(of keys: [ObjectKey], relationship: String) throws -> [OrderedMembers] {
        try read { view in
            if let members = try view.orderedMembers(of: keys, relationship: relationship) { return members }
            return try keys.map { OrderedMembers(try view.relatedKeys(of: $0, relationship: relationship)) }
        }
    }

    /// The records of ``scanBatch(entity:after:limit:)``'s one statement.
    public func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord] {
        try read { try $0.scanBatch(entity, after: primaryKey, limit: limit).records }
    }

    /// One statement per batch (``PostgreSQLView/scanBatch(_:after:limit:)``).
    public func scanBatch(entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordBatch {
        try read { try $0.scanBatch(entity, after: primaryKey, limit: limit) }
    }

    /// Each batch one statement whose WHERE selects every object `predicate` matches
    /// (``PostgreSQLView/narrowing(_:matching:after:)``), where the predicate translates; the evaluator tests each.
    public func scan(entity: String, matching predicate: ObjectPredicate, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord] {
        try scanMatching(entity: entity, predicate, after: primaryKey, limit: limit) { after, size in
            try read { view in
                try view.scanBatch(entity, after: after, limit: size, narrowing: try view.narrowing(entity, matching: predicate, after: 3)).records
            }
        }
    }

    public func save(_ changes: ChangeSet) throws {
        try save(changes, checkingReferences: true)
    }

    /// An unchecked batch laid out by the store's own model, of an entity without uniqueness
    /// constraints, goes in with one `COPY … FROM STDIN`, unless it carries to-many lists and the
    /// store is not being filled in one go (``stream(_:)`` writes those lists); others take the
    /// record path.
    public func bulkInsert(_ batch: RecordBatch, checkingReferences: Bool) throws {
        if checkingReferences || model.entity(named: batch.entity.name) !== batch.entity || !batch.entity.uniquenessConstraints.isEmpty
            || (!batch.toMany.isEmpty && !streamsCopies) {
            return try bulkInsert(batch.records, checkingReferences: checkingReferences)
        }
        guard !batch.isEmpty else { return }
        try batch.checkInsertable(in: model)
        if streamsCopies { return try stream(batch) }
        try write { view in
            try view.copy(batch)
            try appendHistory(historyPolicy.record(inserting: (0..<batch.count).map(batch.key(at:))), view)
        }
        state.withLock { _ = $0.loaded.insert(batch.entity.rootName) }
    }

    /// A store filled in one go writes batches' lists with their rows (``stream(_:)``).
    public var insertsWholeRows: Bool { streamsCopies }

    /// Sends `batch` into the open `COPY` of its entity, opening one (and its transaction) when
    /// another entity's is open or none is: the server stores each chunk while the next batch is
    /// read and made. The copy ends, its keys' sequences move and it commits at the next call that
    /// is not a batch of the same entity (``finishCopy(_:)``); a key in use fails that call, with
    /// nothing of the copy written. Only a store filled in one go and thrown away unless complete
    /// streams (``streamsCopies``).
    ///
    /// The lists the batch carries (``WholeRowInserting``) go in too: a join table's rows by their
    /// own `COPY`; an ordered list kept in its members' rows (the inverse to-one's column) owes its
    /// members their order keys, written once they are in (``applyOwedOrders(_:)``); any other
    /// list is what its members' to-ones say, written with their rows.
    private func stream(_ batch: RecordBatch) throws {
        try withConnection { connection in
            let view = PostgreSQLView(connection: connection, layout: layout, location: location, unicode: unicode)
            try PostgreSQLStoreType.mapping(location) {
                // A member's order key its owner's list gave already goes in with its row.
                let columns = try view.columns(batch.entity.name)
                let orderColumns = Array(Set(columns.toOneOrder.compactMap { $0 })).sorted()
                var taken: [OrderColumn: [Int64: Int64]] = [:]
                let orders = state.withLock { state in
                    orderColumns.map { column in
                        let place = OrderColumn(table: columns.table, column: column)
                        return batch.primaryKeys.map { key in
                            let order = state.owedOrders[place]?.removeValue(forKey: key)
                            if let order { taken[place, default: [:]][key] = order }
                            return order
                        }
                    }
                }
                do {
                    try streamCopy(try view.copyStatement(batch, orders: orderColumns), of: batch.entity, connection) {
                        try view.copyRows(batch, orders: orders, send: $0)
                    }
                } catch {
                    state.withLock { Self.oweAgain(taken, in: &$0) }
                    throw error
                }
                state.withLock { $0.pendingCopy?.takenOrders.merge(taken) { $0.merging($1) { _, new in new } } }
                let root = batch.entity.rootName
                state.withLock { state in
                    let highest = max(state.pendingCopy?.highest[root] ?? 0, batch.primaryKeys.max() ?? 0)
                    state.pendingCopy?.highest[root] = highest
                    _ = state.loaded.insert(root)
                }
                for (name, lists) in batch.toMany.sorted(by: { $0.key < $1.key }) {
                    switch columns.toMany[name] {
                    case .joinTable(let table)? where lists.contains(where: { !$0.keys.isEmpty }):
                        let statement = view.copyJoinStatement(table)
                        let spool = state.withLock { state -> Spool? in
                            if let spool = state.spooled[statement] { return spool }
                            let spool = try? Spool(entity: batch.entity)
                            state.spooled[statement] = spool
                            return spool
                        }
                        guard let spool else {
                            // No temporary file to be had: the join rows go by a COPY of their own, as the rows' ends.
                            try streamCopy(statement, of: batch.entity, connection) { try view.copyJoinRows(batch, lists, send: $0) }
                            continue
                        }
                        try view.copyJoinRows(batch, lists) { chunk in
                            do {
                                try spool.file.write(contentsOf: chunk)
                            } catch {
                                throw StoreError(.io, "cannot keep the \(batch.entity.name) batch's join-table rows aside in a temporary file "
                                                 + "(\(FileManager.default.temporaryDirectory.path); TMPDIR names another): \(error.localizedDescription)",
                                                 url: location.url)
                            }
                        }
                    case .inverseColumn(let table, _, _, let orderColumn?)?:
                        state.withLock { state in
                            for list in lists {
                                for (member, orderKey) in zip(list.keys, list.orderKeys) {
                                    state.owedOrders[OrderColumn(table: table, column: orderColumn), default: [:]][member.primaryKey] = orderKey
                                }
                            }
                        }
                    default:
                        break
                    }
                }
            }
        }
    }

    /// Sends `rows` into the open `COPY` of `statement`, opening one (and its transaction) when
    /// another is open or none is (see ``stream(_:)``); `entity` is named when a key is in use.
    private func streamCopy(_ statement: String, of entity: EntityDescription, _ connection: PGConnection,
                            _ rows: ((Data) throws -> Void) throws -> Void) throws {
        if state.withLock({ $0.pendingCopy?.statement }) != statement { try finishCopy(connection) }
        if state.withLock({ $0.pendingCopy == nil }) {
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            do {
                try checkStillTheStore(connection)
                try connection.beginCopy(statement)
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
            state.withLock { $0.pendingCopy = PendingCopy(statement: statement, entity: entity) }
        }
        do {
            try rows(connection.putCopyData)
        } catch {
            // The batches' join rows kept aside go with their rows; the order keys they took are owed again.
            state.withLock { state in
                if let taken = state.pendingCopy?.takenOrders { Self.oweAgain(taken, in: &state) }
                (state.pendingCopy, state.spooled) = (nil, [:])
            }
            connection.abortCopy()
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// A column of members' order keys in an ordered list (``stream(_:)``).
    struct OrderColumn: Hashable {
        let table: String
        let column: String
    }

    /// Writes the order keys batches' lists owe to members that are in by now, in one transaction,
    /// one statement per column and 50,000 members; those of members not in yet stay owed.
    private func applyOwedOrders(_ connection: PGConnection) throws {
        let owed = state.withLock { state in
            defer { state.owedOrders = [:] }
            return state.owedOrders
        }
        guard !owed.isEmpty else { return }
        var left: [OrderColumn: [Int64: Int64]] = [:]
        do {
            try PostgreSQLStoreType.transaction(connection, "BEGIN") {
                for (place, orders) in owed.sorted(by: { ($0.key.table, $0.key.column) < ($1.key.table, $1.key.column) }) {
                    let pairs = orders.sorted { $0.key < $1.key }
                    let quoted = PGConnection.quote(place.column)
                    for start in stride(from: 0, to: pairs.count, by: 50_000) {
                        let part = pairs[start..<min(pairs.count, start + 50_000)]
                        let written = try connection.query(
                            "UPDATE \(location.qualified(place.table)) AS t SET \(quoted) = x.o FROM unnest($1::bigint[], $2::bigint[]) AS x(m, o) "
                                + "WHERE t.pk = x.m RETURNING t.pk",
                            [.text(PostgreSQLView.array(part.map { String($0.key) })), .text(PostgreSQLView.array(part.map { String($0.value) }))])
                        let done = Set((0..<written.count).compactMap { written.int64($0, 0) })
                        for (member, order) in part where !done.contains(member) { left[place, default: [:]][member] = order }
                    }
                }
            }
        } catch {
            state.withLock { Self.oweAgain(owed, in: &$0) }
            throw error
        }
        state.withLock { Self.oweAgain(left, in: &$0) }
    }

    /// Runs `body` with a connection of the pool no other call has meanwhile.
    private func withConnection<T>(_ body: (PGConnection) throws -> T) throws -> T {
        try pool.withConnection(closedError: StoreError.closed(location.url, snapshot: isSnapshot), body)
    }

    /// Ends the bulk load of a store filled in one go, before anything but a batch reads or writes
    /// it once rows came (by batches or by a save), and at close: the open `COPY`, if any, ends
    /// (``finishCopy(_:)``), and the indexes it owes are made, each built whole from its table, in
    /// one transaction; they stay owed until that commits. Reads and writes before any row (a check
    /// that the store is empty, keys allocated) leave them owed.
    ///
    /// The tables a bulk load filled then get the planner's statistics, not when autovacuum comes
    /// by: without them it takes a table of 100,000 rows for one of a few hundred, and scans a
    /// whole entity for each batch a migration's second phase reads back, or sorts one for each
    /// batch of a scan (quadratic in the store). The size and the key columns are what those
    /// need, at a third of the cost of every column's; autovacuum gathers the others later.
    private func finishBulkLoad(_ connection: PGConnection, closing: Bool = false) throws {
        try finishCopy(connection)
        let owed = state.withLock { state in closing || !state.loaded.isEmpty || state.savedRows ? state.owedIndexes : [] }
        if !owed.isEmpty {
            try PostgreSQLStoreType.transaction(connection, "BEGIN") {
                for statement in owed { try connection.execute(statement) }
            }
            state.withLock { $0.owedIndexes = [] }
        }
        try applyOwedOrders(connection)
        let loaded = state.withLock { state in
            defer { state.loaded = [] }
            return state.loaded
        }
        // Statistics are the planner's advice, not the store's content: a failure leaves them to autovacuum.
        for root in loaded.sorted() {
            try? connection.execute("ANALYZE \(location.qualified(PostgreSQLLayout.identifier(root))) (pk, entity)")
        }
    }

    /// Ends the open `COPY` of ``stream(_:)``, if any, and commits it (on the store's one
    /// connection); then copies the join-table rows its batches kept aside, a table at a time.
    private func finishCopy(_ connection: PGConnection) throws {
        let (pending, spooled) = state.withLock { state in
            defer { (state.pendingCopy, state.spooled) = (nil, [:]) }
            return (state.pendingCopy, state.spooled)
        }
        if let pending {
            do {
                try committing(connection, { PostgreSQLView.keyInUse(pending.entity, $0, location: location, since: "its batches sent since the last commit") }) {
                    try connection.endCopy()
                    let view = PostgreSQLView(connection: connection, layout: layout, location: location, unicode: unicode)
                    for (root, highest) in pending.highest.sorted(by: { $0.key < $1.key }) { try view.moveKeyCounter(root, past: highest) }
                }
            } catch {
                state.withLock { Self.oweAgain(pending.takenOrders, in: &$0) }
                throw error
            }
        }
        for (statement, spool) in spooled.sorted(by: { $0.key < $1.key }) {
            defer { try? spool.file.close() }
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            let pairTwice = { (error: PostgreSQLError) in
                StoreError(.invalidChange, "cannot insert the join-table rows of the \(spool.entity.name) batches: an object lists a member twice "
                           + "(\(error.detail ?? error.message)); the objects are in, none of these rows", url: self.location.url, cause: error)
            }
            try committing(connection, pairTwice) {
                try checkStillTheStore(connection)
                try spool.file.seek(toOffset: 0)
                try connection.beginCopy(statement)
                do {
                    while let chunk = try spool.file.read(upToCount: 1 << 20), !chunk.isEmpty { try connection.putCopyData(chunk) }
                } catch {
                    connection.abortCopy()
                    throw error
                }
                try connection.endCopy()
            }
        }
    }

    /// Runs `body` in the open transaction and commits it, or rolls it back; a key in use is the
    /// error `keyInUse` makes of it.
    private func committing(_ connection: PGConnection, _ keyInUse: (PostgreSQLError) -> StoreError, _ body: () throws -> Void) throws {
        do {
            try body()
            try connection.execute("COMMIT")
        } catch {
            if connection.inTransaction { try? connection.execute("ROLLBACK") }
            if let error = error as? PostgreSQLError, error.sqlState == "23505" { throw keyInUse(error) }
            throw error
        }
    }

    /// Owes `taken` order keys again (a copy or an update that took them failed, or found members
    /// not in yet), keeping any owed since.
    private static func oweAgain(_ taken: [OrderColumn: [Int64: Int64]], in state: inout State) {
        state.owedOrders.merge(taken) { owed, taken in owed.merging(taken) { since, _ in since } }
    }

    /// Runs inside ``write(_:)``.
    private func appendHistory(_ record: HistoryRecord?, _ view: PostgreSQLView) throws {
        guard let record else { return }
        var known = state.withLock { $0.historyTableKnown }
        try PostgreSQLHistory.append(record, view.connection, location, store: identifier, tableKnown: &known)
        state.withLock { $0.historyTableKnown = known }
    }

    public func history(after token: Int64?, limit: Int) throws -> [StoreTransaction] {
        try read { try PostgreSQLHistory.read(after: token, limit: limit, $0.connection, location, store: identifier) }
    }

    public func lastHistoryToken() throws -> Int64 {
        try read { try PostgreSQLHistory.last($0.connection, location) }
    }

    @discardableResult
    public func deleteHistory(through token: Int64) throws -> Int {
        try write { try PostgreSQLHistory.delete(through: token, $0.connection, location) }
    }

    public func continueHistory(after token: Int64, recording record: HistoryRecord?) throws {
        try write { view in
            try PostgreSQLHistory.continueAfter(token, view.connection, location)
            try appendHistory(record, view)
        }
    }

    /// One transaction; run again, from a new snapshot, when the server found it colliding with
    /// another (a serialization failure or a deadlock: two of this process's threads completing
    /// one parent, say) and every object it updates or deletes names the version it expects. The
    /// run again checks those versions anew: a real conflict is still one, reported as such, and
    /// only collisions over rows the save merely rewrites in place (inverse sides it completes)
    /// are waited out. At most ``saveAttempts`` runs.
    private func save(_ changes: ChangeSet, checkingReferences: Bool) throws {
        let versioned = changes.updated.allSatisfy { $0.expectedVersion != nil } && changes.deleted.allSatisfy { $0.expectedVersion != nil }
        var attempt = 1
        while true {
            do {
                return try write { view in
                    var view = view
                    view.touchesKeptRows = !deferredDurability
                    try view.prefetch(Self.keysRead(by: changes, model: model, checkingReferences: checkingReferences))
                    try view.validate(changes, model: model, storeID: identifier, checkingReferences: checkingReferences)
                    let writes = try view.writes(for: changes, model: model, completing: checkingReferences)
                    try view.apply(deleted: writes.deleted, put: writes.put, lastKeys: writes.lastKeys, storeID: identifier)
                    if streamsCopies { analyzeGrownJoinTables(view) }
                    try appendHistory(historyPolicy.record(for: changes), view)
                    if !changes.isEmpty { state.withLock { $0.savedRows = true } }
                }
            } catch let error as StoreError where versioned && attempt < Self.saveAttempts && error.code == .conflict
                        && ["40001", "40P01"].contains((error.cause as? PostgreSQLError)?.sqlState) {
                attempt += 1
                // A few milliseconds, twice as many each time up to a quarter of a second, so colliding
                // saves do not meet again at once (eight threads on one row, on a busy machine, met
                // eight times in a row with the backoff growing by 4 ms a time).
                usleep(UInt32.random(in: 1_000...(UInt32(1_000) << min(attempt + 1, 8))))
            }
        }
    }

    /// In a store filled in one go, gives the join tables a save's rows doubled the planner's
    /// statistics, in the save's transaction: they fill during a migration's second phase, which
    /// reads each batch's owners' rows back from them, and without statistics (or with those of
    /// an emptier table) the planner scans the whole table for every batch.
    private func analyzeGrownJoinTables(_ view: PostgreSQLView) {
        let grown = state.withLock { state -> [String] in
            var grown: [String] = []
            for (table, inserted) in view.cache.joinRowsInserted {
                var counts = state.joinTableRows[table] ?? (0, 0)
                counts.inserted += inserted
                if counts.inserted >= Swift.max(5_000, 2 * counts.analyzed) {
                    counts.analyzed = counts.inserted
                    grown.append(table)
                }
                state.joinTableRows[table] = counts
            }
            return grown.sorted()
        }
        view.cache.joinRowsInserted = [:]
        // Statistics are the planner's advice, not the store's content: a failure leaves them to
        // autovacuum, and the save's transaction as it was.
        for table in grown {
            do {
                try view.connection.execute("SAVEPOINT statistics; ANALYZE \(location.qualified(table)); RELEASE SAVEPOINT statistics")
            } catch {
                try? view.connection.execute("ROLLBACK TO SAVEPOINT statistics; RELEASE SAVEPOINT statistics")
            }
        }
    }

    /// How many times a save that collided with another transaction is run at most.
    static let saveAttempts = 16

    /// The objects a save of `changes` reads to check and complete it: those it updates or deletes,
    /// each inserted key in every entity of its hierarchy (a key in use), and every target it
    /// names when targets are looked up or inverse sides completed.
    static func keysRead(by changes: ChangeSet, model: ManagedObjectModel, checkingReferences: Bool) -> Set<ObjectKey> {
        var keys = Set(changes.updated.map(\.key)).union(changes.deleted.map(\.key))
        let targets = (checkingReferences && changes.checksReferences) || changes.completesInverses
        for record in changes.inserted {
            for kind in model.entity(named: record.key.entity).flatMap({ model.entity(named: $0.rootName)?.kindNames }) ?? [] {
                keys.insert(ObjectKey(kind, record.key.primaryKey))
            }
            guard targets else { continue }
            keys.formUnion(record.toOne.values)
            for targets in record.toMany.values { keys.formUnion(targets) }
        }
        for update in changes.updated where targets {
            for target in update.toOne.values { if let target { keys.insert(target) } }
            for targets in update.toMany.values { keys.formUnion(targets) }
        }
        return keys
    }

    /// The root's sequence; a snapshot's, as it was when the snapshot was taken.
    public func lastKey(of root: String) throws -> Int64 {
        if isSnapshot { return snapshotKeys[root] ?? 0 }
        return try read { try $0.lastKey(root, locking: false) }
    }

    /// The root's sequence, locked until the transaction ends.
    public func withLastKey<T>(of root: String, _ body: (inout Int64) throws -> T) throws -> T {
        try write { view in
            var last = try view.lastKey(root, locking: true)
            let result = try body(&last)
            try view.setLastKey(root, last)
            return result
        }
    }

    public func bulkInsert(_ records: [ObjectRecord], checkingReferences: Bool) throws {
        try save(ChangeSet(inserted: records), checkingReferences: checkingReferences)
    }

    public func snapshot() throws -> any PersistentStore {
        try withConnection { connection in try PostgreSQLStoreType.mapping(location) { try finishBulkLoad(connection) } }
        return try PostgreSQLStore(snapshotOf: self)
    }

    /// Closes the connections (a snapshot's transaction ends with its one). A copy still open
    /// commits first; a table a bulk load filled gets the planner's statistics; a store durable
    /// at close is made durable.
    public func close() throws {
        let closing: Result<Void, any Error>?
        do {
            closing = try closeConnections()
        } catch where isSnapshot {
            // A snapshot whose connection is gone has no transaction left to end.
            return
        }
        try closing?.get()
    }

    /// The closing work of ``close()`` on one of the pool's connections, and the pool closed.
    private func closeConnections() throws -> Result<Void, any Error>? {
        try pool.close { connection -> Result<Void, any Error> in
            // A copy still open commits now, or the close says why it could not.
            let copying = Result { try PostgreSQLStoreType.mapping(location) { try finishBulkLoad(connection, closing: true) } }
            if isSnapshot { try? connection.execute("COMMIT") }
            guard deferredDurability else { return copying }
            // A synchronous commit of a transaction with an ID flushes the server's WAL up to it:
            // every earlier commit of this store is then durable too.
            return copying.flatMap {
                Result {
                    try PostgreSQLStoreType.mapping(location) {
                        try connection.execute("SET synchronous_commit = on")
                        _ = try PostgreSQLStoreType.transaction(connection, "BEGIN") { try connection.query("SELECT txid_current()") }
                    }
                }
            }
        }
    }

    // MARK: Transactions

    /// Runs `body` in one read-only `REPEATABLE READ` transaction (a snapshot's own, for a snapshot).
    func read<T>(_ body: (PostgreSQLView) throws -> T) throws -> T {
        try withConnection { connection in
            let view = PostgreSQLView(connection: connection, layout: layout, location: location, unicode: unicode)
            return try PostgreSQLStoreType.mapping(location) {
                try finishBulkLoad(connection)
                if isSnapshot { return try body(view) }
                return try PostgreSQLStoreType.transaction(connection, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") { try body(view) }
            }
        }
    }

    /// Runs `body` in one `REPEATABLE READ` transaction: committed when it returns, rolled back
    /// when it throws. A write over a row another transaction changed meanwhile fails with
    /// SQLSTATE 40001, a ``StoreError/Code/conflict``.
    func write<T>(_ body: (PostgreSQLView) throws -> T) throws -> T {
        if isReadOnly { throw StoreError.readOnly(location.url, snapshot: isSnapshot) }
        return try withConnection { connection in
            let view = PostgreSQLView(connection: connection, layout: layout, location: location, unicode: unicode)
            return try PostgreSQLStoreType.mapping(location) {
                try finishBulkLoad(connection)
                return try PostgreSQLStoreType.transaction(connection, "BEGIN ISOLATION LEVEL REPEATABLE READ") {
                    try checkStillTheStore(connection)
                    return try body(view)
                }
            }
        }
    }

    /// The metadata row of the version hashes, as stored.
    private static func hashesRow(_ connection: PGConnection, _ location: PostgreSQLLocation) throws -> Data? {
        try connection.query("SELECT value FROM \(location.qualified(PostgreSQLLayout.metadataTable)) WHERE key = $1",
                             [.text(StoreMetadata.Key.versionHashes)]).bytes(0, 0)
    }

    /// At the start of a write transaction: takes the migration lock shared (a migration running
    /// refuses the save: ``StoreError/Code/busy``), and checks that the store is still the one that
    /// opened — its version hashes as they were, or the model's (``StoreError/Code/storeReplaced``
    /// when a migration or a replacement came between). One round trip.
    private func checkStillTheStore(_ connection: PGConnection) throws {
        let rows = try connection.query(
            "SELECT pg_try_advisory_xact_lock_shared(hashtext($1)), (SELECT value FROM \(location.qualified(PostgreSQLLayout.metadataTable)) WHERE key = $2)",
            [.text(PostgreSQLStoreType.migrationLockKey(location)), .text(StoreMetadata.Key.versionHashes)])
        guard rows.text(0, 0) == "t" else {
            throw StoreError(.busy, "the store is being migrated by another process; nothing was saved (save again when the migration is done)", url: location.url)
        }
        let hashes = rows.bytes(0, 1)
        if hashes == openedHashes { return }
        // Written again with the same hashes (another encoding of the same value) is the same model.
        if let hashes, let current = PropertyListValue.decodeDictionary(hashes)?[StoreMetadata.Key.versionHashes],
           StoreMetadata([StoreMetadata.Key.versionHashes: current]).compatibility(with: model).isCompatible { return }
        throw StoreError(.storeReplaced, "the store was migrated or replaced since it was opened; nothing was saved (open it again)", url: location.url)
    }
}

/// A to-many whose inverse is a to-one is read from that to-one's column; each side of a
/// many-to-many has a join table of its own (docs/postgresql-layout.md).
extension PostgreSQLStore: ForeignKeyRelationships {
    public var sharesManyToManyTables: Bool { false }
}
