import Foundation
import ObjectModel
import ObjectStore

/// The `postgresql` store type: stores named by `postgresql://` or `postgres://` URLs (libpq
/// connection URIs, plus `schema=NAME`, `public` by default).
///
/// The operations that assume files get their server meaning (docs/postgresql-layout.md):
/// a store has no files (``fileURLs(for:)`` is empty); ``destroy(at:)`` drops the store's
/// tables and sequences (and its schema, when that is not `public` and holds nothing else);
/// ``replace(at:with:)`` moves the source's tables into the destination's schema in one
/// transaction, after dropping the destination's, so every moment shows one whole store.
public struct PostgreSQLStoreType: StoreType {
    /// Creates the type.
    public init() {}

    public var name: String { PostgreSQLStore.typeName }

    /// A server store has no files: nothing to copy, move or remove beside it.
    public func fileURLs(for url: URL) -> [URL] { [] }

    /// Whether the URL's schema holds a store (its metadata table); false when the server
    /// cannot be reached.
    public func storeExists(at url: URL) -> Bool {
        guard let location = try? PostgreSQLLocation(url), let connection = try? Self.connect(location) else { return false }
        defer { connection.close() }
        return (try? Self.exists(connection, location)) ?? false
    }

    public func readMetadata(at url: URL) throws -> StoreMetadata {
        let location = try PostgreSQLLocation(url)
        let connection = try Self.connect(location)
        defer { connection.close() }
        return try Self.mapping(location) {
            guard try Self.exists(connection, location) else { throw StoreError(.notFound, "no PostgreSQL store", url: url) }
            return try Self.readMetadata(connection, location)
        }
    }

    public func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws {
        let location = try PostgreSQLLocation(url)
        let connection = try Self.connect(location)
        defer { connection.close() }
        try Self.mapping(location) {
            try Self.transaction(connection, "BEGIN") {
                guard try Self.exists(connection, location) else { throw StoreError(.notFound, "no PostgreSQL store", url: url) }
                try Self.writeMetadata(metadata, connection, location)
            }
        }
    }

    public func open(at url: URL?, model: ManagedObjectModel, options: StoreOptions) throws -> any PersistentStore {
        guard let url else { throw StoreError(.notFound, "a PostgreSQL store needs a postgresql:// URL (use the memory type for an anonymous store)") }
        return try PostgreSQLStore(location: PostgreSQLLocation(url), model: model, options: options)
    }

    /// Drops the store's tables and sequences, and its schema when that is not `public` and
    /// holds nothing else. This destroys the store's data. Nothing to drop is no error.
    public func destroy(at url: URL) throws {
        let location = try PostgreSQLLocation(url)
        let connection = try Self.connect(location)
        defer { connection.close() }
        try Self.mapping(location) {
            try Self.transaction(connection, "BEGIN") {
                try Self.lock(connection, location)
                try Self.dropRelations(connection, location)
                try Self.dropSchemaIfEmpty(connection, location)
            }
        }
    }

    /// Moves the store at `source` over the one at `destination`, in one transaction: the
    /// destination's tables are dropped and the source's moved into its schema
    /// (`ALTER TABLE … SET SCHEMA`), so every moment shows one whole store. Both must be in one
    /// database (the same URL but for `schema`).
    /// - Throws: ``StoreError/Code/notFound`` when there is no store at `source`;
    ///   ``StoreError/Code/invalidChange`` for stores in two databases.
    public func replace(at destination: URL, with source: URL) throws {
        try install(at: destination, with: source, replacing: true)
    }

    /// Moves the store at `source` (a schema of the same database) to `destination`, in one
    /// transaction holding both schemas' locks. With `replacing` false, a store that is at
    /// `destination` by then (another process's, made while this one was being filled) is kept
    /// and this fails with ``StoreError/Code/alreadyExists``: two runs that each create the store
    /// never have one's data silently replaced by the other's.
    public func install(at destination: URL, with source: URL, replacing: Bool) throws {
        let (to, from) = (try PostgreSQLLocation(destination), try PostgreSQLLocation(source))
        guard to.conninfo == from.conninfo else {
            throw StoreError(.invalidChange, "a PostgreSQL store can replace only a store in the same database (\(from.conninfo) is not \(to.conninfo))",
                             url: destination)
        }
        guard to.schema != from.schema else { return }
        let connection = try Self.connect(to)
        defer { connection.close() }
        try Self.mapping(to) { try Self.sparingOthers("the store was not replaced", to) {
            try Self.transaction(connection, "BEGIN") {
                try Self.lock(connection, from)
                try Self.lock(connection, to)
                guard try Self.exists(connection, from) else { throw StoreError(.notFound, "no PostgreSQL store to move", url: source) }
                if !replacing, try Self.exists(connection, to) {
                    throw StoreError(.alreadyExists, "a store was made here while this one was being filled; it is kept, and this one was not put in its place",
                                     url: destination)
                }
                // Without CASCADE: another program's view or foreign key on the store's tables keeps it in place.
                try Self.dropRelations(connection, to, cascading: false)
                try connection.execute("CREATE SCHEMA IF NOT EXISTS \(to.quotedSchema)")
                for (kind, name) in try Self.relations(connection, from) {
                    try connection.execute("ALTER \(kind == "sequence" ? "SEQUENCE" : "TABLE") \(from.qualified(name)) SET SCHEMA \(to.quotedSchema)")
                }
                for table in [PostgreSQLLayout.relationsTable, PostgreSQLLayout.metadataTable] {
                    try connection.execute("ALTER TABLE \(from.qualified(table)) SET SCHEMA \(to.quotedSchema)")
                }
                try Self.dropSchemaIfEmpty(connection, from)
            }
        } }
    }

    /// Runs `body`, which changes or replaces the store's tables in one transaction, turning the
    /// server's refusals into errors that say what happened (`what`: "the store was not replaced"…):
    /// another program's view or foreign key on a table or column it drops (without `CASCADE`) is
    /// ``StoreError/Code/invalidChange``; a lock another session holds past `lock_timeout`, or a
    /// deadlock with one, ``StoreError/Code/busy``. Nothing of `body` is committed then.
    static func sparingOthers<T>(_ what: String, _ location: PostgreSQLLocation, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PostgreSQLError where error.sqlState == "2BP01" {
            throw StoreError(.invalidChange, "\(what): \(error.message)\(error.detail.map { " (\($0))" } ?? ""); "
                             + "nothing was changed: drop or change what depends on the store's tables first", url: location.url, cause: error)
        } catch let error as PostgreSQLError where ["55P03", "40P01", "40001"].contains(error.sqlState) {
            throw StoreError(.busy, "\(what): another session is using the store's tables (an export, a save); nothing was changed: "
                             + "try again when it is done", url: location.url, cause: error)
        }
    }

    /// `postgresql://` and `postgres://`, libpq's two spellings.
    public var urlSchemes: [String] { ["postgresql", "postgres"] }

    /// What names one store whatever the URL's spelling: the server cluster's system identifier,
    /// the database and the schema (two URLs with the same identity are the same store); nil when
    /// the server cannot be reached.
    public func identity(at url: URL) -> String? {
        guard let location = try? PostgreSQLLocation(url), let connection = try? Self.connect(location) else { return nil }
        defer { connection.close() }
        guard let rows = try? connection.query("SELECT system_identifier::text, current_database() FROM pg_control_system()") else { return nil }
        return "\(rows.text(0, 0) ?? "")/\(rows.text(0, 1) ?? "")/\(location.schema)"
    }

    /// A schema of its own in the same database (``PostgreSQLStagedStore``).
    public func stage(beside destination: URL, verb: String) throws -> any StagedLocation {
        try PostgreSQLStagedStore(beside: destination, verb: verb)
    }

    /// Drops the staging schemas killed runs left (``PostgreSQLStagedStore/sweep(beside:)``).
    public func sweepStaged(beside destination: URL) -> [String] {
        PostgreSQLStagedStore.sweep(beside: destination).map { "the schema \($0)" }
    }

    /// ``install(at:with:replacing:)``: one transaction.
    public func install(_ staged: URL, at destination: URL, replacing existing: (any StoreType)?) throws {
        try install(at: destination, with: staged, replacing: existing != nil)
    }

    /// The store's migration lock, an advisory lock held by a connection for as long as `body`
    /// runs: a second migration fails with ``StoreError/Code/busy``, and so does every save of the
    /// store meanwhile (each save takes the lock shared, in its transaction); a save that began
    /// before is waited for, up to 10 seconds. A store opened before the migration refuses to save
    /// into the migrated store (``StoreError/Code/storeReplaced``). A killed run's lock goes with
    /// its connection.
    public func withMigrationLock<T>(at url: URL, _ body: () throws -> T) throws -> T {
        let location = try PostgreSQLLocation(url)
        let connection = try Self.connect(location)
        // Released before the connection goes: the server ends a closed session a moment later,
        // and a save right after the migration must not find the lock still held.
        defer {
            _ = try? connection.query("SELECT pg_advisory_unlock_all()")
            connection.close()
        }
        try Self.mapping(location) {
            // One migration at a time (a killed run's lock is waited for while its server process
            // notices the lost connection); then the writers' lock, once saves under way end.
            do {
                try connection.execute("SET lock_timeout = '5s'")
                try connection.query("SELECT pg_advisory_lock(hashtext($1))", [.text("objectstore migration " + location.quotedSchema)])
            } catch let error as PostgreSQLError where error.sqlState == "55P03" {
                throw StoreError(.busy, "another process is migrating the store", url: url)
            }
            try connection.execute("SET lock_timeout = '10s'")
            do {
                try connection.query("SELECT pg_advisory_lock(hashtext($1))", [.text(Self.migrationLockKey(location))])
            } catch let error as PostgreSQLError where error.sqlState == "55P03" {
                throw StoreError(.busy, "a save of the store has been under way for 10 seconds; nothing was migrated", url: url, cause: error)
            }
        }
        logger.debug("the migration lock of the store in schema \(location.schema) is held")
        return try body()
    }

    /// Nil: the migration lock keeps every writer out (``withMigrationLock(at:_:)``).
    public func changeToken(at url: URL) -> AnyHashable? { nil }

    /// Copies the store's tables, sequences (at their values), relation and metadata tables into
    /// `destination`'s schema, in one transaction under both stores' locks.
    public func copyStore(at source: URL, to destination: URL) throws {
        let (from, to) = (try PostgreSQLLocation(source), try PostgreSQLLocation(destination))
        guard from.conninfo == to.conninfo else {
            throw StoreError(.invalidChange, "a PostgreSQL store is copied only within its database", url: destination)
        }
        let connection = try Self.connect(from)
        defer { connection.close() }
        try Self.mapping(from) {
            try Self.transaction(connection, "BEGIN ISOLATION LEVEL REPEATABLE READ") {
                try Self.lock(connection, from)
                try Self.lock(connection, to)
                guard try Self.exists(connection, from) else { throw StoreError(.notFound, "no PostgreSQL store to copy", url: source) }
                try connection.execute("CREATE SCHEMA IF NOT EXISTS \(to.quotedSchema)")
                let tables = try Self.relations(connection, from) + [("table", PostgreSQLLayout.relationsTable), ("table", PostgreSQLLayout.metadataTable)]
                for (kind, name) in tables {
                    if kind == "sequence" {
                        let rows = try connection.query("SELECT min_value::text, start_value::text FROM pg_sequences WHERE schemaname = $1 AND sequencename = $2",
                                                        [.text(from.schema), .text(name)])
                        try connection.execute("CREATE SEQUENCE \(to.qualified(name)) MINVALUE \(rows.int64(0, 0) ?? 0) START \(rows.int64(0, 1) ?? 0)")
                        try connection.query("SELECT setval($1::regclass, last_value, is_called) FROM \(from.qualified(name))", [.text(to.qualified(name))])
                    } else {
                        try connection.execute("CREATE TABLE \(to.qualified(name)) (LIKE \(from.qualified(name)) INCLUDING ALL)")
                        try connection.execute("INSERT INTO \(to.qualified(name)) SELECT * FROM \(from.qualified(name))")
                    }
                }
            }
        }
    }

    /// The advisory lock a migration holds on the store for as long as it runs.
    static func migrationLockKey(_ location: PostgreSQLLocation) -> String { "objectstore migrating " + location.quotedSchema }

    /// A location for a store staged beside the one at `url`: the same database, a schema of its
    /// own (`<schema>_<verb>_<id>`), to be moved over it with ``replace(at:with:)`` once complete.
    /// Prefer ``PostgreSQLStagedStore``, which also marks the schema as staging and holds it, so that
    /// what a killed run leaves is swept.
    /// - Throws: ``StoreError/Code/notFound`` for a URL that names no PostgreSQL store.
    public static func stagingURL(beside url: URL, verb: String) throws -> URL {
        let location = try PostgreSQLLocation(url)
        let id = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
        let schema = PostgreSQLLayout.identifier("\(location.schema)_\(verb)_\(id)")
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "_"))
        let encoded = schema.addingPercentEncoding(withAllowedCharacters: allowed) ?? schema
        let base = location.conninfo
        return URL(string: base + (base.contains("?") ? "&" : "?") + "schema=" + encoded)!
    }

    // MARK: Shared helpers

    /// Connects to the store's server.
    /// - Throws: ``StoreError`` (`io`, or `notFound` for a database that does not exist).
    static func connect(_ location: PostgreSQLLocation) throws -> PGConnection {
        // The schema names the store; the connection string may hold a password and is not logged.
        logger.debug("connecting to the server of the store in schema \(location.schema)")
        return try mapping(location) { try PGConnection(conninfo: location.conninfo) }
    }

    /// Converts the server's errors to the store error, the server's carried as the cause.
    static func mapping<T>(_ location: PostgreSQLLocation, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PostgreSQLError {
            throw StoreError(error.storeCode, "PostgreSQL: \(error)", url: location.url, cause: error)
        }
    }

    /// Runs `body` between `begin` and `COMMIT`, rolling back when it throws.
    static func transaction<T>(_ connection: PGConnection, _ begin: String, _ body: () throws -> T) throws -> T {
        try connection.execute(begin)
        do {
            let result = try body()
            try connection.execute("COMMIT")
            return result
        } catch {
            if connection.inTransaction { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// Takes the store's advisory lock until the transaction ends (creation, destroy, replace).
    static func lock(_ connection: PGConnection, _ location: PostgreSQLLocation) throws {
        try connection.query("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("objectstore " + location.quotedSchema)])
    }

    /// Whether the schema holds a store (its metadata table).
    static func exists(_ connection: PGConnection, _ location: PostgreSQLLocation) throws -> Bool {
        let rows = try connection.query("SELECT to_regclass($1) IS NOT NULL", [.text(location.qualified(PostgreSQLLayout.metadataTable))])
        return rows.text(0, 0) == "t"
    }

    /// Creates the store: schema, metadata and relation tables, every table and sequence of the
    /// layout, the metadata; in one transaction, under the store's lock (two processes creating
    /// one store at once make it once).
    /// Makes the store's schema, tables and sequences, and its indexes unless `deferringIndexes`;
    /// returns whether it made the store (false: it existed).
    @discardableResult
    static func create(_ connection: PGConnection, _ location: PostgreSQLLocation, layout: PostgreSQLLayout, model: ManagedObjectModel,
                       deferringIndexes: Bool = false) throws -> Bool {
        try transaction(connection, "BEGIN") {
            try lock(connection, location)
            guard try !exists(connection, location) else { return false }
            try connection.execute("CREATE SCHEMA IF NOT EXISTS \(location.quotedSchema)")
            try connection.execute("CREATE TABLE \(location.qualified(PostgreSQLLayout.relationsTable)) (name text PRIMARY KEY, kind text NOT NULL)")
            for relation in layout.relations {
                for statement in relation.ddl { try connection.execute(statement) }
                try connection.query("INSERT INTO \(location.qualified(PostgreSQLLayout.relationsTable)) (name, kind) VALUES ($1, $2)",
                                     [.text(relation.name), .text(relation.kind)])
            }
            if !deferringIndexes { for index in layout.indexes { try connection.execute(index.statement) } }
            try connection.execute("CREATE TABLE \(location.qualified(PostgreSQLLayout.metadataTable)) (key text PRIMARY KEY, value bytea NOT NULL)")
            try writeMetadata(try StoreMetadata(storeType: PostgreSQLStore.typeName, model: model), connection, location)
            return true
        }
    }

    /// The store's tables and sequences (the metadata and relation tables apart).
    static func relations(_ connection: PGConnection, _ location: PostgreSQLLocation) throws -> [(kind: String, name: String)] {
        let table = location.qualified(PostgreSQLLayout.relationsTable)
        guard try connection.query("SELECT to_regclass($1) IS NOT NULL", [.text(table)]).text(0, 0) == "t" else { return [] }
        let rows = try connection.query("SELECT kind, name FROM \(table) ORDER BY name")
        return (0..<rows.count).map { (rows.text($0, 0) ?? "", rows.text($0, 1) ?? "") }
    }

    /// Drops the store's tables and sequences, and its metadata and relation tables; with
    /// `cascading`, what depends on them too (`destroy`), else such a dependent stops it (SQLSTATE 2BP01).
    static func dropRelations(_ connection: PGConnection, _ location: PostgreSQLLocation, cascading: Bool = true) throws {
        let cascade = cascading ? " CASCADE" : ""
        for (kind, name) in try relations(connection, location) {
            try connection.execute("DROP \(kind == "sequence" ? "SEQUENCE" : "TABLE") IF EXISTS \(location.qualified(name))\(cascade)")
        }
        for table in [PostgreSQLLayout.relationsTable, PostgreSQLLayout.metadataTable] {
            try connection.execute("DROP TABLE IF EXISTS \(location.qualified(table))\(cascade)")
        }
    }

    /// Drops the schema when it is not `public` and holds nothing.
    static func dropSchemaIfEmpty(_ connection: PGConnection, _ location: PostgreSQLLocation) throws {
        guard location.schema != "public" else { return }
        let rows = try connection.query(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1", [.text(location.schema)])
        let others = try connection.query(
            "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1", [.text(location.schema)])
        if rows.int64(0, 0) == 0 && others.int64(0, 0) == 0 {
            try connection.execute("DROP SCHEMA IF EXISTS \(location.quotedSchema)")
        }
    }

    /// The metadata table: one row per key, its value a binary property list of a one-key dictionary.
    static func readMetadata(_ connection: PGConnection, _ location: PostgreSQLLocation) throws -> StoreMetadata {
        let rows = try connection.query("SELECT key, value FROM \(location.qualified(PostgreSQLLayout.metadataTable))")
        var values: [String: PropertyListValue] = [:]
        for r in 0..<rows.count {
            guard let key = rows.text(r, 0), let data = rows.bytes(r, 1), let entry = PropertyListValue.decodeDictionary(data), let value = entry[key] else {
                throw StoreError(.corrupt, "the metadata row \(String(reflecting: rows.text(r, 0) ?? "")) is not a property list of its key",
                                 url: location.url)
            }
            values[key] = value
        }
        return StoreMetadata(values)
    }

    static func writeMetadata(_ metadata: StoreMetadata, _ connection: PGConnection, _ location: PostgreSQLLocation) throws {
        let table = location.qualified(PostgreSQLLayout.metadataTable)
        try connection.execute("DELETE FROM \(table)")
        for (key, value) in metadata.values.sorted(by: { $0.key < $1.key }) {
            try connection.query("INSERT INTO \(table) (key, value) VALUES ($1, $2)",
                                 [.text(key), .bytes(try PropertyListValue.binaryPropertyList([key: value]))])
        }
    }
}

/// A store being filled in a schema of its own beside a server store's (`<schema>_<verb>_<id>`),
/// moved over it only when complete: the server's counterpart of `StagedStore`.
///
/// The schema is made at once and marked as staging for its destination (a comment on the
/// schema: `objectstore staging for <schema>`), and a connection holds a session advisory lock
/// on it for as long as the staging lives: a run that is killed loses its connection, and with
/// it the lock, so the next run beside the same destination finds the schema unheld and drops it
/// (``sweep(beside:)``), as file stores sweep their staged files.
///
/// ```swift
/// _ = PostgreSQLStagedStore.sweep(beside: url)
/// let staged = try PostgreSQLStagedStore(beside: url, verb: "converting")
/// do {
///     try fill(staged.url)
///     try PostgreSQLStoreType().install(at: url, with: staged.url, replacing: false)
///     staged.finish()
/// } catch {
///     staged.discard()
///     throw error
/// }
/// ```
public final class PostgreSQLStagedStore: StagedLocation {
    /// Where the staged store is: the destination's URL with the staging schema.
    public let url: URL
    private let connection: PGConnection
    private let location: PostgreSQLLocation

    /// Makes the staging schema beside the store at `destination`, marks it and holds it.
    /// - Throws: ``StoreError`` when the server cannot be reached or the schema cannot be made.
    public init(beside destination: URL, verb: String) throws {
        url = try PostgreSQLStoreType.stagingURL(beside: destination, verb: verb)
        location = try PostgreSQLLocation(url)
        let target = try PostgreSQLLocation(destination)
        connection = try PostgreSQLStoreType.connect(location)
        do {
            try PostgreSQLStoreType.mapping(location) {
                try connection.query("SELECT pg_advisory_lock(hashtext($1))", [.text(Self.lockKey(location.schema))])
                // Made and marked in one transaction: a run killed in between leaves no unmarked schema.
                try connection.execute("BEGIN; CREATE SCHEMA \(location.quotedSchema); "
                                       + "COMMENT ON SCHEMA \(location.quotedSchema) IS \(PGConnection.literal(Self.mark(target.schema))); COMMIT")
            }
        } catch {
            connection.close()
            throw error
        }
    }

    /// The comment that marks a staging schema for the store in `schema`.
    static func mark(_ schema: String) -> String { "objectstore staging for \(schema)" }

    /// The advisory lock a live staging holds on its schema.
    static func lockKey(_ schema: String) -> String { "objectstore staging " + schema }

    /// Ends the staging after the store was moved into place (its schema is gone with the move).
    public func finish() {
        close()
    }

    /// Releases the staging's lock (at once, not when the server ends the session) and disconnects.
    private func close() {
        _ = try? connection.query("SELECT pg_advisory_unlock_all()")
        connection.close()
    }

    /// Drops the staged store and its schema, and ends the staging.
    public func discard() {
        try? PostgreSQLStoreType.mapping(location) {
            try PostgreSQLStoreType.dropRelations(connection, location)
            try connection.execute("DROP SCHEMA IF EXISTS \(location.quotedSchema) CASCADE")
        }
        close()
    }

    /// Drops the staging schemas that killed runs left beside the store at `destination` (marked
    /// for it, and held by no live run) and returns their names, to tell the user. A server that
    /// cannot be reached has nothing swept.
    public static func sweep(beside destination: URL) -> [String] {
        guard let target = try? PostgreSQLLocation(destination), let connection = try? PostgreSQLStoreType.connect(target) else { return [] }
        defer { connection.close() }
        guard let rows = try? connection.query("SELECT nspname FROM pg_namespace WHERE obj_description(oid, 'pg_namespace') = $1 ORDER BY nspname",
                                               [.text(mark(target.schema))]) else { return [] }
        var removed: [String] = []
        for index in 0..<rows.count {
            guard let schema = rows.text(index, 0) else { continue }
            let key = lockKey(schema)
            // Held: a live run's, or a killed run's whose server process has not yet noticed the lost
            // connection (a moment, longer on a loaded server): waited for briefly.
            guard (try? connection.execute("SET lock_timeout = '5s'")) != nil,
                  (try? connection.query("SELECT pg_advisory_lock(hashtext($1))", [.text(key)])) != nil else { continue }
            defer { _ = try? connection.query("SELECT pg_advisory_unlock(hashtext($1))", [.text(key)]) }
            // A live run that held it may have finished meanwhile, its schema moved into place or
            // dropped: only a schema still there and marked is a leftover.
            guard (try? connection.query("SELECT 1 FROM pg_namespace WHERE nspname = $1 AND obj_description(oid, 'pg_namespace') = $2",
                                         [.text(schema), .text(mark(target.schema))]).count) == 1 else { continue }
            // No live run holds it: what may still lock its tables is a killed run's transaction, which
            // its server process rolls back as it ends.
            _ = try? connection.execute("SET lock_timeout = '60s'")
            if (try? connection.execute("DROP SCHEMA IF EXISTS \(PGConnection.quote(schema)) CASCADE")) != nil {
                removed.append(schema)
                logger.debug("dropped the staging schema \(schema): an interrupted run left it")
            }
        }
        return removed
    }
}
