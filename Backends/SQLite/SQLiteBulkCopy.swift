import CSQLite
import Foundation
import ObjectModel
import ObjectStore
import Synchronization

/// Copying a whole store's objects from another SQLite store inside SQLite: the source file
/// attached to this store's connection, each table copied with one `INSERT … SELECT`.
extension SQLiteStore: BulkCopying {
    /// The name the source is attached under.
    private static let attached = "objectstore_source"

    /// Yes when `source` is another SQLite store (or a snapshot of one) with this store's
    /// model and the same layout — every entity numbered alike, every table with the same
    /// columns — and `entities` names every concrete entity: join tables and key counters
    /// belong to the whole store, so this store copies only whole stores.
    public func canCopyObjects(of entities: [String], from source: any PersistentStore) -> Bool {
        guard !isReadOnly, let source = source as? SQLiteStore, let sourceURL = source.url, let url,
              sourceURL.standardizedFileURL != url.standardizedFileURL,
              source.model.versionHashes == model.versionHashes,
              // Flagged columns are copied as they are: both stores must hold them alike (a model
              // with none copies between stores written before and after external data was tagged).
              source.external.isTagged == external.isTagged
                || !model.entityDescriptions.contains(where: { $0.storedAttributes.contains(where: \.allowsExternalBinaryDataStorage) }),
              Set(entities) == Set(model.entityDescriptions.filter { !$0.isAbstract }.map(\.name)),
              // Decimals an earlier version kept as text are copied through their values, which
              // this store writes as numbers where exact (SQL cannot tell which texts those are).
              source.schema.textDecimals.isEmpty,
              source.schema.byNumber == schema.byNumber,
              Set(source.schema.tables.keys) == Set(schema.tables.keys) else { return false }
        return schema.tables.allSatisfy { name, table in
            source.schema.tables[name]?.columns.map(\.name) == table.columns.map(\.name)
        }
    }

    /// Attaches the source's file read-only, copies every entity's rows, every join table and
    /// the key counters in one transaction, and detaches it.
    ///
    /// A table whose columns in the file are the destination's — same names, types and order,
    /// none hidden or generated — is copied as `INSERT INTO t SELECT * FROM source.t`, the form
    /// SQLite's transfer optimization copies as stored records without decoding them; rows of
    /// another entity number than the table's (which no fetch sees) are then deleted, so exactly
    /// what the source's fetches see arrives. Any other table is copied column by column, one
    /// entity at a time (`WHERE Z_ENT = n`) where it holds entities.
    ///
    /// The transaction reads the source file at one moment; when `source` is a snapshot, that
    /// moment is the file's latest when the copy begins, at or after the snapshot's (the system
    /// SQLite has no `sqlite3_snapshot_open` to share the snapshot's moment).
    public func copyObjects(of entities: [String], from source: any PersistentStore) throws -> [String: Int] {
        try copyObjects(of: entities, from: source, narrowing: []).counts
    }

    /// The copy, with the rule narrowing of `narrowing`'s entities (``RuleNarrowing``) run on
    /// another thread, in a connection of its own to the source, while this one copies: at the
    /// copy's moment, since the source's write lock is held from just before that connection
    /// begins its read until the copy has begun its own (no writer commits between them). Where
    /// the lock cannot be had (another writer holds it for 50 ms, the file cannot be written), or
    /// a table is copied column by column (its values take this store's column types, which a
    /// narrowing of the source would not see), nothing is narrowed beside the copy.
    public func copyObjects(of entities: [String], from source: any PersistentStore,
                            narrowing: [String]) throws -> (counts: [String: Int], mayBreakRules: [String: [Int64]]) {
        guard canCopyObjects(of: entities, from: source), let sourceURL = source.url else {
            throw StoreError(.invalidChange, "cannot copy these objects from \(source.url?.path ?? "the source") inside SQLite: another backend, model or layout", url: url)
        }
        // The ATTACH outside any transaction, read-only: the copy itself never writes to the
        // source; the copy in one transaction (``write(immediate:_:)``).
        try withReader { reader in
            try reader.connection.statement("ATTACH DATABASE ?1 AS \(Self.attached)").run([.text(URL(filePath: sourceURL.path).absoluteString + "?mode=ro")])
        }
        defer { try? withReader { try $0.connection.execute("DETACH DATABASE \(Self.attached)") } }
        let sourceExternal = (source as! SQLiteStore).external
        // One scan per table, for every entity it holds: the rows that may break their entity's rules.
        let judged = narrowing.compactMap { entity -> (table: String, number: Int, entity: String, condition: String)? in
            guard let description = model.entity(named: entity), let mapping = schema.entities[entity],
                  let condition = Self.ruleCondition(description, mapping: mapping, schema: schema, scanning: true) else { return nil }
            return (mapping.table, mapping.number, entity, condition)
        }
        // Each table in up to four parts of at least 50,000 keys, the largest tables first (keys
        // times columns): the copy's thread, once done, takes the parts left from the last
        // (``SourceNarrowing/help(on:)``). The key range is read before the copy's moment: the first
        // and last parts are open-ended.
        let ranges = try withReader { reader in
            try Dictionary(uniqueKeysWithValues: Set(judged.map(\.table)).map { table in
                let row = try reader.connection.statement("SELECT coalesce(min(Z_PK), 0), coalesce(max(Z_PK), 0) FROM \(Self.attached).\(quote(table))")
                    .rows { ($0.int64(0), $0.int64(1)) }.first ?? (0, 0)
                return (table, row)
            })
        }
        func size(_ table: String) -> Double {
            (Double(ranges[table]!.1) - Double(ranges[table]!.0)) * Double(schema.tables[table]?.columns.count ?? 1)
        }
        let queries = Dictionary(grouping: judged, by: \.table).sorted { (size($0.key), $1.key) > (size($1.key), $0.key) }.flatMap { table, held in
            let conditions = held.map { "(+t.Z_ENT = \($0.number) AND (\($0.condition)))" }.joined(separator: " OR ")
            let entities = Dictionary(uniqueKeysWithValues: held.map { (Int64($0.number), $0.entity) })
            let sql = "SELECT t.Z_ENT, t.Z_PK FROM \(quote(table)) t WHERE t.Z_PK > ?1 AND t.Z_PK <= ?2 AND (\(conditions)) ORDER BY t.Z_PK "
                + "LIMIT \(SourceNarrowing.most * held.count + 1)"
            let bounds = Self.partBounds(ranges[table]!)
            return zip([Int64.min] + bounds, bounds + [Int64.max]).map { SourceNarrowing.Query(entities: entities, sql: sql, keys: $0...$1) }
        }
        // The narrowing's connection is opened first; the lock is held only from just before its
        // read begins until the copy's has (two reads of the schema's first page).
        let beside = queries.isEmpty ? nil : SourceNarrowing(path: sourceURL.path, queries: queries)
        var narrowed = false
        defer { _ = beside?.finish() }
        var whole = true
        // The history records the copy as one transaction inserting every object it copied.
        var copied: [ObjectKey] = []
        let counts = try write(immediate: false, recording: { historyPolicy.record(inserting: copied) }) { writer in
            let connection = writer.connection
            if let beside, beside.opened(), let lock = SourceNarrowing.writeLock(on: sourceURL.path) {
                defer {
                    try? lock.execute("ROLLBACK")
                    lock.close()
                }
                narrowed = beside.begin()
                // The copy's read of the source begins here, and lasts until its commit.
                try connection.execute("SELECT count(*) FROM \(Self.attached).sqlite_master")
            }
            beside?.cancel()
            var counts: [String: Int] = [:]
            let byTable = Dictionary(grouping: entities.map { schema.entities[$0]! }, by: \.table)
            // A table's columns as the file declares them: name, type, hidden or generated, in order.
            func declared(_ database: String, _ table: String) throws -> [SQLValue] {
                try connection.statement("SELECT name || ':' || type || ':' || hidden FROM pragma_table_xinfo(?1, ?2)")
                    .rows([.text(table), .text(database)]) { $0.column(0) }
            }
            for (name, table) in schema.tables {
                let quoted = quote(name)
                let held = byTable[name] ?? []
                if try declared(Self.attached, name) == declared("main", name) {
                    // The table whole, as SQLite copies a table of the same declaration into an empty
                    // one (its records as they are), then out again the rows of entities not copied.
                    try connection.execute("INSERT INTO main.\(quoted) SELECT * FROM \(Self.attached).\(quoted)")
                    guard !held.isEmpty else { continue }
                    let copied = connection.changes
                    // Counted by entity number in the source, as the copy read it (the table's Z_ENT
                    // index answers alone where there is one): the rows of any other number, or of
                    // none, are deleted only when there are some, not looked for in a second pass
                    // over every row.
                    let byNumber = Dictionary(uniqueKeysWithValues: held.map { ($0.number, $0.name) })
                    for entity in held { counts[entity.name] = 0 }
                    let grouped = try connection.statement("SELECT Z_ENT, count(*) FROM \(Self.attached).\(quoted) WHERE typeof(Z_ENT) = 'integer' GROUP BY Z_ENT")
                        .rows { ($0.int64(0), $0.int64(1)) }
                    for (number, count) in grouped { if let entity = byNumber[Int(number)] { counts[entity] = Int(count) } }
                    if held.reduce(0, { $0 + counts[$1.name]! }) != copied {
                        let numbers = held.map { String($0.number) }.joined(separator: ",")
                        try connection.execute("DELETE FROM main.\(quoted) WHERE Z_ENT IS NULL OR Z_ENT NOT IN (\(numbers))")
                    }
                    continue
                }
                whole = false
                let columns = table.columns.map { quote($0.name) }.joined(separator: ", ")
                guard !held.isEmpty else {
                    try connection.execute("INSERT INTO main.\(quoted) (\(columns)) SELECT \(columns) FROM \(Self.attached).\(quoted)")
                    continue
                }
                for entity in held {
                    try connection.statement("INSERT INTO main.\(quoted) (\(columns)) SELECT \(columns) FROM \(Self.attached).\(quoted) WHERE Z_ENT = ?1")
                        .run([.integer(Int64(entity.number))])
                    counts[entity.name] = connection.changes
                }
            }
            try connection.execute("""
                UPDATE main.Z_PRIMARYKEY SET Z_MAX = max(Z_MAX, coalesce((SELECT s.Z_MAX FROM \(Self.attached).Z_PRIMARYKEY s WHERE s.Z_ENT = main.Z_PRIMARYKEY.Z_ENT), 0))
                """)
            // And past every key copied, whatever the source's counter said (one behind its keys,
            // changed behind its back, would give new objects keys in use).
            for root in Set(entities.compactMap { model.entity(named: $0)?.rootName }).sorted() {
                guard let mapping = schema.entities[root] else { continue }
                try connection.statement("UPDATE main.Z_PRIMARYKEY SET Z_MAX = max(Z_MAX, (SELECT coalesce(max(Z_PK), 0) FROM main.\(quote(mapping.table)))) WHERE Z_ENT = ?1")
                    .run([.integer(Int64(mapping.number))])
            }
            // The files the copied rows name come along (linked where the file system allows).
            let names = try SQLiteExternalData.referencedNames(connection, columns: SQLiteExternalData.columns(schema, model))
            try external.adopt(names, from: sourceExternal, sourceDatabase: Self.attached, connection: connection, files: writer.files,
                               url: sourceURL) { name in (try? referrer(of: name, connection)) ?? "a value of the source store" }
            if historyPolicy.records {
                for entity in entities {
                    guard let mapping = schema.entities[entity] else { continue }
                    copied += try connection.statement("SELECT Z_PK FROM main.\(quote(mapping.table)) WHERE Z_ENT = ?1")
                        .rows([.integer(Int64(mapping.number))]) { ObjectKey(entity, $0.int64(0)) }
                }
            }
            return counts
        }
        if narrowed && whole {
            // The copy holds the very rows the narrowing reads: this thread narrows the tables the
            // other has not begun, in the copy; then, while the other ends, the copy goes to disk.
            try withReader { reader in beside?.help(on: reader.connection) }
            try writeBackEarly()
        }
        let found = narrowed && whole ? beside?.finish() ?? [:] : [:]
        if !queries.isEmpty {
            logger.debug("rule narrowing beside the copy: \(found.count) of \(judged.count) entities\(!narrowed ? " (the source's write lock was not had)" : whole ? "" : " (a table was copied column by column)")")
        }
        return (counts, found)
    }

    /// Where a table whose keys run from `keys.first` to `keys.last` is cut into parts for its
    /// narrowing: up to four parts of at least 50,000 keys, each bound above the one before.
    private static func partBounds(_ keys: (first: Int64, last: Int64)) -> [Int64] {
        let span = Double(keys.last) - Double(keys.first)
        let parts = Int(min(4, max(1, (span / 50_000).rounded(.down))))
        var bounds: [Int64] = []
        for part in 1..<max(parts, 1) {
            let value = (Double(keys.first) + span * Double(part) / Double(parts)).rounded(.down)
            let bound = value >= 9.2e18 ? Int64.max : value <= -9.2e18 ? Int64.min : Int64(value)
            if bound > (bounds.last ?? Int64.min), bound < Int64.max { bounds.append(bound) }
        }
        return bounds
    }

    /// The object and property (`Book/3.scan`) whose copied value names the external data file `name`.
    private func referrer(of name: String, _ connection: SQLiteConnection) throws -> String? {
        for entity in model.entityDescriptions where !entity.isAbstract {
            guard let mapping = schema.entities[entity.name] else { continue }
            for attribute in entity.storedAttributes where attribute.allowsExternalBinaryDataStorage {
                guard let column = mapping.attributes[attribute.name] else { continue }
                let sql = "SELECT Z_PK FROM main.\(quote(mapping.table)) WHERE Z_ENT = ?1 AND substr(\(quote(column)), 1, 1) = x'02' AND instr(\(quote(column)), ?2) > 0"
                if let key = try connection.statement(sql).rows([.integer(Int64(mapping.number)), .blob(Data(name.utf8))], { $0.int64(0) }).first {
                    return "\(entity.name)/\(key).\(attribute.name)"
                }
            }
        }
        return nil
    }
}

/// The rule narrowing of a bulk copy's source on a thread of its own (``SQLiteStore/copyObjects(of:from:narrowing:)``):
/// a read-only connection, opened at once, that begins one read transaction when told to
/// (``begin()``), then runs one query per table, in the order given, and keeps the keys it finds
/// by entity; the copy's thread, once its copy is whole, runs those left from the last
/// (``help(on:)``).
private final class SourceNarrowing: Sendable {
    /// The most keys kept for one entity: beyond, the entity is left to the caller's paged narrowing.
    static let most = 10_000

    /// A query of part of a table: its rows' entity numbers and keys, in key order, for the
    /// entities it names, of the keys after the range's first and up to its last (`?1`, `?2`).
    struct Query: Sendable {
        let entities: [Int64: String]
        let sql: String
        let keys: ClosedRange<Int64>
    }

    /// What the queries found: keys by entity, and the entities past the most kept.
    private struct Found {
        var keys: [String: [Int64]]
        var tooMany: Set<String> = []
    }

    private let ready = DispatchSemaphore(value: 0)
    private let go = DispatchSemaphore(value: 0)
    private let started = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    /// Whether the connection opened; whether to read (told once); whether the read began.
    private let state = Mutex<(opened: Bool, told: Bool, proceed: Bool, reading: Bool, joined: Bool)>((false, false, false, false, false))
    /// What the queries found; nil after an error.
    private let found: Mutex<Found?>
    /// The queries no thread has begun.
    private let left: Mutex<[Query]>

    init(path: String, queries: [Query]) {
        left = Mutex(queries)
        found = Mutex(Found(keys: Dictionary(queries.flatMap(\.entities.values).map { ($0, []) }, uniquingKeysWith: { a, _ in a })))
        Thread { [self] in
            defer { done.signal() }
            // A second connection of a store that is open: its WAL is the open store's to fold.
            let connection = try? SQLiteConnection(path: path, readOnly: true, create: false, keepingWAL: true)
            defer { connection?.close() }
            state.withLock { $0.opened = connection != nil }
            ready.signal()
            guard let connection else { return }
            go.wait()
            guard state.withLock({ $0.proceed }) else { return }
            let began = (try? connection.execute("BEGIN; SELECT count(*) FROM sqlite_master")) != nil
            state.withLock { $0.reading = began }
            started.signal()
            guard began else { return }
            defer { try? connection.execute("COMMIT") }
            while let query = left.withLock({ $0.isEmpty ? nil : $0.removeFirst() }), run(query, on: connection) {}
        }.start()
    }

    /// Runs `query` on `connection` and keeps what it finds; false after an error (nothing found is kept then).
    private func run(_ query: Query, on connection: SQLiteConnection) -> Bool {
        do {
            let rows = try connection.statement(query.sql).rows([.integer(query.keys.lowerBound), .integer(query.keys.upperBound)]) { ($0.int64(0), $0.int64(1)) }
            found.withLock { found in
                // Past the query's limit, no entity of the table is known whole.
                guard rows.count <= Self.most * query.entities.count else { return found?.tooMany.formUnion(query.entities.values) ?? () }
                for (number, key) in rows { found?.keys[query.entities[number]!]!.append(key) }
            }
            return true
        } catch {
            found.withLock { $0 = nil }
            left.withLock { $0 = [] }
            return false
        }
    }

    /// Runs the queries the thread has not begun, the last first, on `connection`, which must read
    /// what the thread reads (a whole copy of the source, made at the moment the thread's read began).
    func help(on connection: SQLiteConnection) {
        while let query = left.withLock({ $0.popLast() }), run(query, on: connection) {}
    }

    /// Waits until the thread has opened its connection: whether it did.
    func opened() -> Bool {
        ready.wait()
        ready.signal()
        return state.withLock { $0.opened }
    }

    /// Tells the thread to begin its read (under the source's write lock), and waits until it
    /// has: whether it did.
    func begin() -> Bool {
        guard tell(proceed: true) else { return false }
        started.wait()
        return state.withLock { $0.reading }
    }

    /// Tells the thread not to read, unless it was told already.
    func cancel() { _ = tell(proceed: false) }

    private func tell(proceed: Bool) -> Bool {
        let first = state.withLock { state in
            defer { state.told = true }
            if !state.told { state.proceed = proceed }
            return !state.told
        }
        if first { go.signal() }
        return first
    }

    /// Waits for the thread (once; it is told not to read if it was not told): the keys it found
    /// by entity, empty after an error or when it did not read.
    func finish() -> [String: [Int64]] {
        cancel()
        let wait = state.withLock { state in
            defer { state.joined = true }
            return !state.joined
        }
        if wait { done.wait() }
        guard state.withLock({ $0.reading }), let found = found.withLock({ $0 }) else { return [:] }
        // The parts were read in any order: the keys of each entity, in key order.
        return found.keys.filter { !found.tooMany.contains($0.key) && $0.value.count <= Self.most }.mapValues { $0.sorted() }
    }

    /// A connection to the source holding its write lock (`BEGIN IMMEDIATE`, nothing written),
    /// or nil when the lock is not had within 50 ms or the file cannot be written (SQLite then
    /// opens it read-only, where `BEGIN IMMEDIATE` takes no lock: the transaction's state says
    /// so). It never folds the source's WAL at close.
    static func writeLock(on path: String) -> SQLiteConnection? {
        guard let connection = try? SQLiteConnection(path: path, readOnly: false, create: false) else { return nil }
        sqlite3_busy_timeout(connection.handle, 50)
        guard sqlite3_db_readonly(connection.handle, "main") == 0,
              objectstore_sqlite_no_checkpoint_on_close(connection.handle, 1) == SQLITE_OK,
              (try? connection.execute("BEGIN IMMEDIATE")) != nil else {
            connection.close()
            return nil
        }
        guard sqlite3_txn_state(connection.handle, "main") == SQLITE_TXN_WRITE else {
            try? connection.execute("ROLLBACK")
            connection.close()
            return nil
        }
        return connection
    }
}
