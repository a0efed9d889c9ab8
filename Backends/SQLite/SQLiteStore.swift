import CSQLite
import Foundation
import ObjectModel
import ObjectStore
import Synchronization

/// A store in a SQLite database through the system libsqlite3, laid out the
/// way Core Data lays out its stores (`shared/specs/sqlite-layout.md`).
///
/// WAL journal mode by default (`StoreOptions.settings["journal_mode"]` picks
/// another), synchronous NORMAL, a prepared-statement cache, one transaction
/// per save. Predicates and sorts are translated to SQL where SQL gives the
/// same answers as ``PredicateEvaluator``; the rest is evaluated in Swift on
/// the rows SQL narrowed down.
///
/// ```swift
/// SQLiteStore.register()
/// try coordinator.addStore(type: "sqlite", at: URL(filePath: "app.sqlite"))
/// ```
public final class SQLiteStore: PersistentStore, IntegrityChecking, QueryPlanning {
    /// The registered type name, `sqlite`.
    public static let typeName = "sqlite"
    /// The `NSStoreType` Core Data writes for SQLite stores.
    public static let coreDataStoreType = "SQLite"

    /// Registers the `sqlite` store type (with `registry`, the shared one by default).
    public static func register(in registry: StoreTypeRegistry = .shared) {
        registry.register(SQLiteStoreType())
    }

    public var storeType: String { Self.typeName }
    public let url: URL?
    public let identifier: UUID
    public let model: ManagedObjectModel
    public let isReadOnly: Bool

    let schema: SQLiteSchema
    /// Where values of attributes with external storage live, and how their columns hold them.
    let external: SQLiteExternalData
    /// Whether commits skip fsync until close (see ``StoreOptions/deferredDurability``).
    private let deferredDurability: Bool
    /// The journal mode a new store made with deferred durability takes at close: until then it has
    /// no journal (a migration's destination is thrown away unless it completes, so nothing is
    /// rolled back), and every page is written once, not to the WAL and again at the checkpoint.
    private let journalModeAtClose: String?
    /// Whether writes record history, and their default author.
    let historyPolicy: HistoryPolicy
    /// Whether this is a snapshot: its connection stays in one read transaction until closed.
    private let isSnapshot: Bool
    /// What the store's lock guards. The reader is not Sendable: it lives inside the lock,
    /// touched by one thread at a time, and never escapes a call.
    private struct State {
        /// The connection and what reads through it; nil once closed.
        var reader: SQLiteReader?
        /// External data files committed saves no longer name, waiting for readers of earlier moments.
        var retired: [URL] = []
    }
    private let state: Mutex<State>
    /// Connections for reads beside the store's own, when ``pooling``: a read takes an idle one, or
    /// opens one up to ``ReaderPool/limit``, and reads in a transaction of its own, so the reads of
    /// several threads run at once and beside a save (WAL readers wait for no writer).
    private let readers = Mutex(ReaderPool())
    /// Whether reads take pooled readers (a WAL store, not a snapshot, not one filled in one go).
    private let pooling: Bool
    /// Whether the store's connection leaves the WAL as it found it at close (a read-only store of
    /// a file that had one): every other connection of the store is opened so too.
    private let keepsWAL: Bool

    /// The idle pooled readers and how many are open.
    private struct ReaderPool {
        /// The most connections opened for reads beside the store's own.
        static let limit = 8
        var idle: [SQLiteReader] = []
        var opened = 0
        var closed = false
    }

    init(url: URL, model: ManagedObjectModel, options: StoreOptions) throws {
        self.url = url
        self.model = model
        self.isReadOnly = options.readOnly
        let schema: SQLiteSchema
        let connection: SQLiteConnection
        let metadata: StoreMetadata
        let created = !FileManager.default.fileExists(atPath: url.path)
        if !created {
            (connection, metadata) = try SQLiteStoreType.openExisting(url, readOnly: options.readOnly)
            do {
                try metadata.checkCompatible(with: model, url: url)
                schema = try SQLiteSchema(model: model, file: SQLiteFileLayout.read(from: connection, url: url), url: url)
            } catch {
                connection.close()
                throw error
            }
        } else {
            try options.checkCreatable("SQLite", url: url)
            try SQLiteExternalData.checkUnshared(url)
            schema = SQLiteSchema(model: model)
            (connection, metadata) = try Self.create(url, schema: schema, model: model, options: options)
        }
        journalModeAtClose = created && options.deferredDurability ? Self.journalMode(options) : nil
        self.schema = schema
        external = SQLiteExternalData(store: url, metadata: metadata)
        if !options.readOnly { try connection.execute(options.deferredDurability ? "PRAGMA synchronous = OFF" : "PRAGMA synchronous = NORMAL") }
        deferredDurability = options.deferredDurability && !options.readOnly
        historyPolicy = HistoryPolicy(options)
        identifier = metadata.storeUUID ?? UUID()
        isSnapshot = false
        // Files a crash left that no row names (best effort: a store another process is writing is left alone).
        if !options.readOnly, SQLiteExternalData.sharingStores(url).isEmpty {
            try? external.removeOrphans(connection, columns: SQLiteExternalData.columns(schema, model))
        }
        let wal = try connection.statement("PRAGMA journal_mode").rows { row -> Bool in
            if case .text(let mode) = row.column(0) { mode.lowercased() == "wal" } else { false }
        }.first ?? false
        pooling = wal && !deferredDurability
        keepsWAL = connection.keepsWAL
        state = Mutex(State(reader: SQLiteReader(connection: connection, schema: schema, model: model, external: external)))
    }

    /// A second connection to `store`'s file, inside one read transaction: in WAL mode it
    /// reads one moment while writers go on; in a rollback mode writers wait until it closes.
    private init(snapshotOf store: SQLiteStore, at url: URL) throws {
        self.url = url
        model = store.model
        schema = store.schema
        identifier = store.identifier
        external = store.external
        isReadOnly = true
        deferredDurability = false
        journalModeAtClose = nil
        historyPolicy = HistoryPolicy(StoreOptions(readOnly: true))
        isSnapshot = true
        keepsWAL = store.keepsWAL
        let connection = try SQLiteConnection(path: url.path, readOnly: true, create: false, keepingWAL: keepsWAL)
        do {
            try connection.execute("BEGIN")
            // The read transaction starts with the first read.
            _ = try connection.statement("SELECT count(*) FROM Z_METADATA").rows { $0.int64(0) }
        } catch {
            connection.close()
            throw error
        }
        pooling = false
        let reader = SQLiteReader(connection: connection, schema: schema, model: model, external: external)
        reader.readsOneMoment = true
        state = Mutex(State(reader: reader))
    }

    public func snapshot() throws -> any PersistentStore {
        try withReader { _ in }   // a closed store has no moment to give: StoreError.closed
        return try SQLiteStore(snapshotOf: self, at: url!)
    }

    /// The journal mode a new store is made with: the `journal_mode` setting, WAL by default.
    private static func journalMode(_ options: StoreOptions) -> String {
        options.settings["journal_mode"]?.uppercased() ?? "WAL"
    }

    private static func create(_ url: URL, schema: SQLiteSchema, model: ManagedObjectModel,
                               options: StoreOptions) throws -> (SQLiteConnection, StoreMetadata) {
        let connection = try SQLiteConnection(path: url.path, readOnly: false, create: true)
        do {
            let mode = journalMode(options)
            guard ["WAL", "DELETE", "TRUNCATE", "PERSIST", "MEMORY", "OFF"].contains(mode) else {
                throw StoreError(.invalidChange, "unknown journal_mode \(mode)", url: url)
            }
            // With deferred durability, no journal and no sync until close (``journalModeAtClose``), from
            // the first write on: the page the auto-vacuum setting writes took a journal and four syncs.
            // (WAL is set after it: entering WAL writes the file's first page, after which the
            // auto-vacuum setting no longer takes.)
            if options.deferredDurability {
                try connection.execute("PRAGMA journal_mode = OFF")
                try connection.execute("PRAGMA synchronous = OFF")
            }
            // Incremental auto-vacuum, as Core Data's stores have it (set before the first table).
            try connection.execute("PRAGMA auto_vacuum = INCREMENTAL")
            if !options.deferredDurability { try connection.execute("PRAGMA journal_mode = \(mode)") }
            var metadata = try StoreMetadata(storeType: coreDataStoreType, model: model)
            metadata[StoreMetadata.Key.storeType] = .string(coreDataStoreType)
            for (key, value) in SQLiteStoreType.coreDataKeys { metadata[key] = value }
            metadata[SQLiteExternalData.metadataKey] = .integer(1)
            metadata[SQLiteExternalData.digestsKey] = .integer(1)
            try connection.transaction {
                for sql in schema.createStatements { try connection.execute(sql) }
                let insert = try connection.statement("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?1, ?2, ?3, 0)")
                for name in schema.ordered {
                    let entity = schema.entities[name]!
                    try insert.run([.integer(Int64(entity.number)), .text(name), .integer(Int64(entity.superNumber))])
                }
                try SQLiteStoreType.writeMetadata(metadata, to: connection)
                try SQLiteStoreType.writeModelCache(model, to: connection)
            }
            return (connection, metadata)
        } catch {
            connection.close()
            try? SQLiteStoreType().destroy(at: url)
            throw error
        }
    }

    // MARK: Contract

    public func metadata() throws -> StoreMetadata {
        try read { try SQLiteStoreType.readMetadata(from: $0.connection, url: url!) }
    }

    public func setMetadata(_ metadata: StoreMetadata) throws {
        try checkWritable()
        try withReader { reader in try reader.connection.transaction { try SQLiteStoreType.writeMetadata(metadata, to: reader.connection) } }
    }

    public func fetch(_ request: FetchRequest) throws -> [ObjectRecord] {
        try read { try $0.fetch(request) }
    }

    /// SQLite's plan for the SELECT ``fetch(_:)`` runs for `request` (`EXPLAIN QUERY PLAN`),
    /// one line per step: whether a predicate is answered from an index, for one.
    public func queryPlan(_ request: FetchRequest) throws -> [String] {
        try withReader { try $0.queryPlan(request) }
    }

    /// How many prepared statements the store's connection keeps (for tests).
    func cachedStatementCount() throws -> Int {
        try withReader { $0.connection.cachedStatementCount }
    }

    public func count(_ request: FetchRequest) throws -> Int {
        try read { try $0.count(request) }
    }

    public func record(for key: ObjectKey) throws -> ObjectRecord? {
        try read { try $0.record(for: key) }
    }

    public func existingKeys(among keys: [ObjectKey]) throws -> Set<ObjectKey> {
        try read { try $0.existingKeys(among: keys) }
    }

    public func relatedKeys(of key: ObjectKey, relationship: String) throws -> [ObjectKey] {
        try read { try $0.relatedKeys(of: key, relationship: relationship) }
    }

    public func orderedMembers(of key: ObjectKey, relationship: String) throws -> OrderedMembers {
        try read { try $0.orderedMembers(of: key, relationship: relationship) }
    }

    public func orderedMembers(of keys: [ObjectKey], relationship: String) throws -> [OrderedMembers] {
        try read { try $0.orderedMembers(of: keys, relationship: relationship) }
    }

    public func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord] {
        try read { try $0.scan(entity: entity, after: primaryKey, limit: limit) }
    }

    public func scanBatch(entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordBatch {
        try read { try $0.scanBatch(entity: entity, after: primaryKey, limit: limit) }
    }

    /// Each batch read with the part of `predicate` SQL answers in its WHERE; the evaluator tests the rest.
    public func scan(entity: String, matching predicate: ObjectPredicate, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord] {
        try scanMatching(entity: entity, predicate, after: primaryKey, limit: limit) { after, size in
            try read { try $0.scan(entity: entity, narrowedBy: predicate, after: after, limit: size) }
        }
    }

    public func fetchBatches(_ request: FetchRequest, batchSize: Int, _ body: (RecordBatch) throws -> Void) throws {
        try read { try $0.fetchBatches(request, batchSize: batchSize, body) }
    }

    public func save(_ changes: ChangeSet) throws {
        try save(changes, checkingReferences: true)
    }

    /// Rows that set no to-one relationship are bound slot by slot as the batches come; the
    /// others join the change set as records (see ``SQLiteWriter/apply(_:insertingBatches:)``).
    public func save(_ changes: ChangeSet, insertingBatches nextBatch: () throws -> RecordBatch?) throws {
        var inserted: [ObjectKey] = []
        try write(recording: { historyPolicy.record(for: changes, inserting: inserted) }) { writer in
            try writer.apply(changes) {
                let batch = try nextBatch()
                if let batch { inserted += (0..<batch.count).map(batch.key(at:)) }
                return batch
            }
        }
    }

    private func save(_ changes: ChangeSet, checkingReferences: Bool) throws {
        try write(recording: { historyPolicy.record(for: changes) }) { try $0.apply(changes, checkingReferences: checkingReferences) }
    }

    /// Runs `body` with a writer in one write transaction. External data files the writer
    /// writes are synced before the commit and removed if it does not happen; files it makes
    /// obsolete are removed after the commit once no reader reads an earlier moment, which may
    /// name them (``retireFiles(_:_:)``).
    /// `recording` gives the history record of the write once `body` has run (nil for none), written in the same transaction.
    func write<T: Sendable>(immediate: Bool = true, recording: () -> HistoryRecord? = { nil }, _ body: (SQLiteWriter) throws -> T) throws -> T {
        try checkWritable()
        return try withState { state in
            guard let reader = state.reader else { throw StoreError.closed(url, snapshot: isSnapshot) }
            let files = ExternalFileLedger()
            do {
                let result = try reader.connection.transaction(immediate: immediate) {
                    let result = try body(SQLiteWriter(reader: reader, storeID: identifier, files: files))
                    if let record = recording() { try SQLiteHistory.append(record, reader.connection, tableKnown: &reader.historyTableKnown) }
                    try SQLiteExternalData.record(files, reader.connection)
                    try files.flush(url: url)
                    return result
                }
                Self.retireFiles(files.committed(), &state.retired, reader.connection)
                return result
            } catch {
                files.rolledBack()
                throw error
            }
        }
    }

    /// Removes the external data files committed saves no longer name, `obsolete` among them,
    /// when no reader (a snapshot, another process) reads a moment that names them; the rest
    /// wait for a later save or the close. What a process leaves when it ends is swept when the
    /// store is next opened for writing (``SQLiteExternalData/removeOrphans(_:columns:)``).
    private static func retireFiles(_ obsolete: [URL], _ retired: inout [URL], _ connection: SQLiteConnection) {
        retired += obsolete
        guard !retired.isEmpty, SQLiteExternalData.noEarlierReaders(connection) else { return }
        for file in retired { try? FileManager.default.removeItem(at: file) }
        retired = []
    }

    public func allocatePrimaryKeys(entity: String, count: Int) throws -> ClosedRange<Int64> {
        try checkWritable()
        guard let description = model.entity(named: entity) else { throw StoreError(.invalidChange, "no entity named \(entity)") }
        guard count > 0 else { throw StoreError(.invalidChange, "cannot allocate \(count) primary keys") }
        let root = Int64(schema.entities[description.rootName]!.number)
        return try withReader { reader in
            try reader.connection.transaction {
                let rows = try reader.connection.statement("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?1").rows([.integer(root)]) { $0.int64(0) }
                guard let before = rows.first else { throw StoreError(.corrupt, "Z_PRIMARYKEY has no row for \(description.rootName)", url: url) }
                // SQLite would make an overflowing sum a real: the counter is moved from here.
                let (last, overflow) = before.addingReportingOverflow(Int64(count))
                guard !overflow else {
                    throw StoreError(.invalidChange, "cannot allocate \(count) primary keys after \(before) in \(description.rootName)'s hierarchy")
                }
                try reader.connection.statement("UPDATE Z_PRIMARYKEY SET Z_MAX = ?1 WHERE Z_ENT = ?2").run([.integer(last), .integer(root)])
                return (before + 1)...last
            }
        }
    }

    public func lastAllocatedKey(entity: String) throws -> Int64 {
        guard let description = model.entity(named: entity) else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        let root = Int64(schema.entities[description.rootName]!.number)
        return try read { reader in
            try reader.connection.statement("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?1").rows([.integer(root)]) { $0.int64(0) }.first ?? 0
        }
    }

    public func bulkInsert(_ records: [ObjectRecord], checkingReferences: Bool) throws {
        try save(ChangeSet(inserted: records), checkingReferences: checkingReferences)
    }

    /// An unchecked batch laid out by the store's own model, carrying no to-many lists, is bound
    /// slot by slot, no record built; any other goes through the record form (which checks and
    /// completes references, and names what does not fit another model's layout).
    public func bulkInsert(_ batch: RecordBatch, checkingReferences: Bool) throws {
        if checkingReferences || model.entity(named: batch.entity.name) !== batch.entity || !batch.toMany.isEmpty {
            return try bulkInsert(batch.records, checkingReferences: checkingReferences)
        }
        try write(recording: { historyPolicy.record(inserting: (0..<batch.count).map(batch.key(at:))) }) { try $0.insert(batch) }
    }

    public func history(after token: Int64?, limit: Int) throws -> [StoreTransaction] {
        try read { try SQLiteHistory.read(after: token, limit: limit, $0.connection, store: identifier, url: url) }
    }

    public func lastHistoryToken() throws -> Int64 {
        try read { try SQLiteHistory.last($0.connection) }
    }

    @discardableResult
    public func deleteHistory(through token: Int64) throws -> Int {
        try write { try SQLiteHistory.delete(through: token, $0.reader.connection) }
    }

    public func continueHistory(after token: Int64, recording record: HistoryRecord?) throws {
        try write { writer in
            try SQLiteHistory.continueAfter(token, writer.connection)
            if let record { try SQLiteHistory.append(record, writer.connection, tableKnown: &writer.reader.historyTableKnown) }
        }
    }

    /// Closes the connection; the last connection to close folds the WAL into the main file.
    /// A store opened with deferred durability is made durable first.
    public func close() throws {
        readers.withLock { pool in
            pool.closed = true
            for reader in pool.idle { reader.connection.close() }
            pool.idle = []
        }
        try withState { state in
            guard let current = state.reader else { return }
            defer {
                current.connection.close()
                state.reader = nil
            }
            if isSnapshot { try current.connection.execute("COMMIT") }
            Self.retireFiles([], &state.retired, current.connection)
            if deferredDurability {
                try current.connection.execute("PRAGMA synchronous = FULL")
                if let mode = journalModeAtClose {
                    _ = try current.connection.statement("PRAGMA journal_mode = \(mode)").rows { $0.column(0) }
                    // Everything written without a journal, on disk before the store is handed over.
                    try Self.sync(url!)
                }
                _ = try current.connection.statement("PRAGMA wal_checkpoint(TRUNCATE)").rows { $0.int64(0) }
            }
        }
    }

    /// A store being filled in one go (made with deferred durability) puts what it has written on
    /// disk now, while its caller waits for other work, so that its close, which must, finds little
    /// left to write. Nothing for any other store.
    /// - Throws: ``StoreError`` when the file cannot be synced: a failed sync is reported once, so
    ///   the close's own sync could no longer tell.
    func writeBackEarly() throws {
        guard deferredDurability, journalModeAtClose != nil, let url else { return }
        do {
            try Self.sync(url)
        } catch {
            throw StoreError(.io, "the copy could not be put on disk: \(error.localizedDescription)", url: url)
        }
    }

    /// Puts what is written to the file at `url` on disk (the store's own connection syncs nothing
    /// while it is filled in one go).
    private static func sync(_ url: URL) throws {
        let handle = try FileHandle(forUpdating: url)
        defer { try? handle.close() }
        try handle.synchronize()
    }

    public func integrityProblems(deep: Bool) throws -> [String] {
        try withReader { try $0.integrityProblems(deep: deep) }
    }

    public func rowsNoReadSees(limit: Int) throws -> [String] {
        try withReader { try $0.rowsNoReadSees(limit: limit) }
    }

    private func checkWritable() throws {
        if isReadOnly { throw StoreError.readOnly(url, snapshot: isSnapshot) }
    }

    /// Runs `body`, which only reads, on a pooled reader in a read transaction of its own (a WAL
    /// store), at once with other threads' reads and saves; else on the store's own reader.
    func read<T: Sendable>(_ body: (SQLiteReader) throws -> T) throws -> T {
        guard pooling, let reader = takeReader() else { return try withReader(body) }
        defer {
            readers.withLock { pool in
                if pool.closed { reader.connection.close() } else { pool.idle.append(reader) }
            }
        }
        return try reader.connection.readTransaction { try body(reader) }
    }

    /// An idle pooled reader, or a new one while fewer than the limit are open; nil when the store
    /// is closed, the pool is full or a connection cannot be opened (the store's own reader then serves).
    private func takeReader() -> SQLiteReader? {
        enum Taken { case reader(SQLiteReader), open, none }
        let taken = readers.withLock { pool -> Taken in
            if pool.closed { return .none }
            if let reader = pool.idle.popLast() { return .reader(reader) }
            guard pool.opened < ReaderPool.limit else { return .none }
            pool.opened += 1
            return .open
        }
        switch taken {
        case .none: return nil
        case .reader(let reader): return reader
        case .open:
            // Opened by path: kept only while the path still names the file the store's own
            // connection has (another process may have moved the store aside or replaced it). A
            // pooled connection opened before reads that same file, as the store's own does.
            let connection = try? SQLiteConnection(path: url!.path, readOnly: true, create: false, keepingWAL: keepsWAL)
            guard let connection, (try? withReader({ try $0.connection.checkNotMoved() })) != nil else {
                connection?.close()
                readers.withLock { $0.opened -= 1 }
                return nil
            }
            return SQLiteReader(connection: connection, schema: schema, model: model, external: external)
        }
    }

    func withReader<T: Sendable>(_ body: (SQLiteReader) throws -> T) throws -> T {
        try withState { state in
            guard let reader = state.reader else { throw StoreError.closed(url, snapshot: isSnapshot) }
            return try body(reader)
        }
    }

    /// Runs `body` with the store's state, under its lock.
    private func withState<T: Sendable>(_ body: (inout State) throws -> T) throws -> T {
        try state.withLock { state in try body(&state) }
    }
}

/// A to-many whose inverse is a to-one is that to-one's foreign key (Core Data's layout), and an
/// ordered one's order keys are in the members' rows (`Z_FOK_` columns): a batch's are written
/// with its rows.
extension SQLiteStore: ForeignKeyRelationships {
    public var writesInverseOrderKeys: Bool { true }
}
