import Foundation
import ObjectModel
import ObjectStore

/// In-place lightweight migration on the server: the step's changes as DDL inside one
/// transaction (PostgreSQL's DDL is transactional), with the metadata's hashes and model, no
/// object read by the client (docs/postgresql-layout.md, "Changing the schema in place").
///
/// In place: what ``SchemaStep`` lets through — attributes added (optional, or with a default,
/// which PostgreSQL gives old rows without rewriting them), renamed or removed; relationships
/// added (optional), renamed or removed; entities added, renamed (their rows' `entity` values and
/// every reference's `…_entity` renamed with them) or removed with their whole hierarchy; fetch
/// indexes added or removed. Since every to-one here records its target's entity, a destination
/// that gains sub-entities is no blocker.
extension PostgreSQLStoreType: SchemaChanging {
    public func schemaChangeBlockers(from source: ManagedObjectModel, to destination: ManagedObjectModel) -> [String] {
        SchemaStep(from: source, to: destination, recordsTargetEntity: true).blockers
    }

    public func changeSchema(at url: URL, through models: [ManagedObjectModel], recording record: HistoryRecord?) throws {
        guard let first = models.first, let last = models.last else { return }
        let location = try PostgreSQLLocation(url)
        let connection = try Self.connect(location)
        defer { connection.close() }
        try Self.mapping(location) { try Self.sparingOthers("cannot change the schema in place", location) {
            // A table another session reads (an export, a save under way) is waited for up to 10 s, then
            // the change gives up whole, rather than queue every later reader behind its lock.
            try connection.execute("SET lock_timeout = '10s'")
            try Self.transaction(connection, "BEGIN") {
                try Self.lock(connection, location)
                guard try Self.exists(connection, location) else { throw StoreError(.notFound, "no PostgreSQL store", url: url) }
                var metadata = try Self.readMetadata(connection, location)
                guard metadata.compatibility(with: first).isCompatible else {
                    throw StoreError(.incompatibleModel, "the store was not made with the first model of the change", url: url)
                }
                var steps: [SchemaStep] = []
                for (source, destination) in zip(models, models.dropFirst()) {
                    let step = SchemaStep(from: source, to: destination, recordsTargetEntity: true)
                    guard step.blockers.isEmpty else {
                        throw StoreError(.invalidChange, "cannot change the schema in place: " + step.blockers.joined(separator: "; "), url: url)
                    }
                    logger.debug("schema \(location.schema): a schema step in place, tables and columns altered in the transaction")
                    try PostgreSQLSchemaChange(step, location).apply(connection)
                    steps.append(step)
                }
                if steps.contains(where: \.renamesNames) { try PostgreSQLHistory.rename(through: steps, connection, location) }
                // The tables now fit the last model, or nothing is committed.
                try PostgreSQLSchemaChange.check(PostgreSQLLayout(model: last, location: location), connection, location)
                try metadata.setModel(last)
                try Self.writeMetadata(metadata, connection, location)
                if let record, let store = metadata.storeUUID {
                    var tableKnown = false
                    try PostgreSQLHistory.append(record, connection, location, store: store, tableKnown: &tableKnown)
                }
            }
        } }
    }
}

/// One version step as DDL on the server: where each table and column of the old layout goes in
/// the new (``PostgreSQLLayout`` of each model), and the statements that take it there.
struct PostgreSQLSchemaChange {
    let step: SchemaStep
    let location: PostgreSQLLocation
    let old: PostgreSQLLayout
    let new: PostgreSQLLayout
    /// Old table → new table, for every table that keeps its rows (root and join tables).
    private(set) var tables: [String: String] = [:]
    /// Old root table → (old column → new column), for every column that keeps its values.
    private(set) var columns: [String: [String: String]] = [:]
    /// New root table → (new column → the attribute it adds), for the defaults of added attributes.
    private(set) var added: [String: [String: Attribute]] = [:]
    /// Old entity name → new, for entities that changed their name.
    private(set) var renamed: [String: String] = [:]

    init(_ step: SchemaStep, _ location: PostgreSQLLocation) throws {
        self.step = step
        self.location = location
        old = PostgreSQLLayout(model: step.source, location: location)
        new = PostgreSQLLayout(model: step.destination, location: location)
        func fail(_ message: String) -> StoreError { StoreError(.invalidChange, "cannot change the schema in place: \(message)", url: location.url) }
        for (newName, oldName) in step.oldEntity.sorted(by: { $0.key < $1.key }) {
            let was = old.entities[oldName]!, now = new.entities[newName]!
            if oldName != newName { renamed[oldName] = newName }
            tables[was.table] = now.table
            for column in ["pk", "entity", "version"] { columns[was.table, default: [:]][column] = column }
            func move(_ from: String?, _ to: String?) { if let from, let to { columns[was.table, default: [:]][from] = to } }
            for change in step.attributeChanges[newName] ?? [] {
                switch change {
                case .kept(let a, let b):
                    move(was.entity.layout.attributeSlot(a.name).map { was.attributes[$0] }, now.entity.layout.attributeSlot(b.name).map { now.attributes[$0] })
                case .added(let attribute):
                    if let slot = now.entity.layout.attributeSlot(attribute.name) { added[now.table, default: [:]][now.attributes[slot]] = attribute }
                case .removed, .blocked: break
                }
            }
            for case let (a?, b) in step.relationshipPairs(was.entity, now.entity) {
                if let from = was.entity.layout.toOneSlot(a.name), let to = now.entity.layout.toOneSlot(b.name) {
                    move(was.toOne[from].key, now.toOne[to].key)
                    move(was.toOne[from].entity, now.toOne[to].entity)
                    move(was.toOneOrder[from], now.toOneOrder[to])
                    continue
                }
                switch (was.toMany[a.name], now.toMany[b.name]) {
                case (.joinTable(let from)?, .joinTable(let to)?): tables[from] = to
                case (.inverseColumn?, .inverseColumn?): break   // the inverse to-one's columns move with it
                default: throw fail("\(newName).\(b.name) is stored otherwise in the new layout")
                }
            }
        }
    }

    /// Runs the step on `connection`, inside the caller's transaction: every table and column that
    /// holds data continues under its new name, what is gone is dropped, what is new is created
    /// empty (an added attribute's column holding its default), renamed entities are renamed in
    /// every row that names them, and the indexes are the new layout's.
    func apply(_ connection: PGConnection) throws {
        func fail(_ message: String) -> StoreError { StoreError(.invalidChange, "cannot change the schema in place: \(message)", url: location.url) }
        func exists(_ name: String) throws -> Bool {
            try connection.query("SELECT to_regclass($1) IS NOT NULL", [.text(location.qualified(name))]).text(0, 0) == "t"
        }
        let oldRelations = Dictionary(old.relations.map { ($0.name, $0.kind) }, uniquingKeysWith: { a, _ in a })
        let newRelations = Dictionary(new.relations.map { ($0.name, $0.kind) }, uniquingKeysWith: { a, _ in a })
        // Each kept root's key sequence goes with its table (named after the root entity's name, not
        // its table's: a long name's table and sequence are each cut and hashed whole).
        var moves = tables
        let oldRoots = step.source.entityDescriptions.filter { $0.parent == nil }.map(\.name)
        for (newName, oldName) in step.oldEntity where oldRoots.contains(oldName) {
            moves[PostgreSQLLayout.sequence(oldName)] = PostgreSQLLayout.sequence(newName)
        }
        // The relations both layouts have that belong to no entity (the history's) stay as they are.
        let entityRelations = Set(old.tableColumns.keys).union(oldRoots.map(PostgreSQLLayout.sequence)).union(old.joinTables)
        let untouched = Set(oldRelations.keys).subtracting(entityRelations).intersection(newRelations.keys)
        func statement(_ kind: String?) -> String { kind == "sequence" ? "SEQUENCE" : "TABLE" }

        // 1. Relations of entities and relationships that are gone.
        // Without CASCADE: what another program made on them (a view, a foreign key) stops the change.
        for name in entityRelations.sorted() where moves[name] == nil {
            try connection.execute("DROP \(statement(oldRelations[name])) IF EXISTS \(location.qualified(name))")
        }
        // 2. Columns that are gone (PostgreSQL drops their indexes with them).
        for (table, kept) in columns.sorted(by: { $0.key < $1.key }) {
            for column in old.tableColumns[table]!.map(\.name) where kept[column] == nil {
                try connection.execute("ALTER TABLE \(location.qualified(table)) DROP COLUMN \(PGConnection.quote(column))")
            }
        }
        // 3. Renamed relations, then renamed columns, each through a temporary name so that two may trade names.
        let renamedRelations = moves.filter { $0.key != $0.value }.sorted { $0.key < $1.key }
        for (n, (from, _)) in renamedRelations.enumerated() {
            try connection.execute("ALTER \(statement(oldRelations[from])) \(location.qualified(from)) RENAME TO \(PGConnection.quote("objectstore_moving_\(n)"))")
        }
        for (n, (from, to)) in renamedRelations.enumerated() {
            guard try !exists(to) else { throw fail("the schema already has a relation \(to)") }
            try connection.execute("ALTER \(statement(oldRelations[from])) \(location.qualified("objectstore_moving_\(n)")) RENAME TO \(PGConnection.quote(to))")
        }
        for (table, kept) in columns.sorted(by: { $0.key < $1.key }) {
            let target = location.qualified(tables[table]!)
            let pairs = kept.filter { $0.key != $0.value }.sorted { $0.key < $1.key }
            for (n, (from, _)) in pairs.enumerated() {
                try connection.execute("ALTER TABLE \(target) RENAME COLUMN \(PGConnection.quote(from)) TO \(PGConnection.quote("objectstore_moving_\(n)"))")
            }
            for (n, (_, to)) in pairs.enumerated() {
                try connection.execute("ALTER TABLE \(target) RENAME COLUMN \(PGConnection.quote("objectstore_moving_\(n)")) TO \(PGConnection.quote(to))")
            }
        }
        // 4. New relations, and new columns in kept tables (an added attribute's holding its default:
        //    PostgreSQL keeps one value for the old rows, none rewritten; the default is then dropped,
        //    as a store's own tables have none).
        let targets = Set(moves.values)
        for relation in new.relations where !targets.contains(relation.name) && !untouched.contains(relation.name) {
            guard try !exists(relation.name) else { throw fail("the schema already has a relation \(relation.name)") }
            for sql in relation.ddl { try connection.execute(sql) }
        }
        for (from, to) in tables.sorted(by: { $0.key < $1.key }) where new.tableColumns[to] != nil {
            let continued = Set(columns[from]?.values.map { $0 } ?? [])
            let table = location.qualified(to)
            for (column, type) in new.tableColumns[to]! where !continued.contains(column) {
                guard let value = added[to]?[column]?.defaultValue else {
                    try connection.execute("ALTER TABLE \(table) ADD COLUMN \(PGConnection.quote(column)) \(type)")
                    continue
                }
                let literal = "'" + PostgreSQLValues.text(value).replacingOccurrences(of: "'", with: "''") + "'::\(type)"
                try connection.execute("ALTER TABLE \(table) ADD COLUMN \(PGConnection.quote(column)) \(type) DEFAULT \(literal)")
                try connection.execute("ALTER TABLE \(table) ALTER COLUMN \(PGConnection.quote(column)) DROP DEFAULT")
            }
        }
        // 5. Renamed entities, in every row that names them: a row's own entity, a to-one's target, a list's member.
        if !renamed.isEmpty {
            let cases = renamed.sorted { $0.key < $1.key }
            let parameters: [PGParameter?] = cases.flatMap { [.text($0.key), .text($0.value)] }
            func rename(_ table: String, _ column: String) throws {
                let when = cases.indices.map { "WHEN $\(2 * $0 + 1) THEN $\(2 * $0 + 2)" }.joined(separator: " ")
                let olds = cases.indices.map { "$\(2 * $0 + 1)" }.joined(separator: ", ")
                let quoted = PGConnection.quote(column)
                try connection.query("UPDATE \(location.qualified(table)) SET \(quoted) = CASE \(quoted) \(when) END WHERE \(quoted) IN (\(olds))", parameters)
            }
            // A to-one's `…_entity` columns as the layout names them (never an attribute's that only looks like one).
            var referenceColumns: [String: Set<String>] = [:]
            for entity in new.entities.values { referenceColumns[entity.table, default: []].formUnion(entity.toOne.map(\.entity)) }
            for table in new.tableColumns.keys.sorted() {
                try rename(table, "entity")
                for column in (referenceColumns[table] ?? []).sorted() { try rename(table, column) }
            }
            for table in new.joinTables.sorted() { try rename(table, "member_entity") }
        }
        // 6. The new layout's indexes: those the old one made that the new does not want are dropped (others'
        //    indexes are left alone), those it lacks made. Only plain b-tree indexes are the layout's kind:
        //    a unique, partial, expression or INCLUDE index is another program's, whatever its columns.
        var present: [String: [String]] = [:]
        let rows = try connection.query("""
            SELECT i.relname, t.relname || chr(31) || array_to_string(array(
                SELECT a.attname || CASE WHEN (x.indoption[k.o - 1] & 1) = 1 THEN ' DESC' ELSE '' END
                FROM unnest(x.indkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.n
                ORDER BY k.o), chr(31))
            FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
            JOIN pg_namespace s ON s.oid = t.relnamespace
            WHERE s.nspname = $1 AND NOT x.indisprimary
              AND NOT x.indisunique AND x.indpred IS NULL AND x.indexprs IS NULL AND x.indnkeyatts = x.indnatts
              AND i.relam = (SELECT oid FROM pg_am WHERE amname = 'btree')
            """, [.text(location.schema)])
        for r in 0..<rows.count { present[rows.text(r, 1) ?? "", default: []].append(rows.text(r, 0) ?? "") }
        let wanted = Set(new.indexes.map(\.signature))
        // The old layout's indexes as they are named now, through the renamed tables and columns.
        let ours = Set(old.indexes.compactMap { index -> String? in
            guard let table = tables[index.table] else { return nil }
            var keys: [(column: String, descending: Bool)] = []
            for key in index.keys {
                // A join table keeps its columns; a root table's moved or dropped ones are in `columns`.
                guard let column = old.tableColumns[index.table] == nil ? key.column : columns[index.table]?[key.column] else { return nil }
                keys.append((column, key.descending))
            }
            return PostgreSQLLayout.Index(location, table, keys).signature
        })
        for (signature, names) in present.sorted(by: { $0.key < $1.key }) where ours.contains(signature) && !wanted.contains(signature) {
            for name in names { try connection.execute("DROP INDEX \(location.qualified(name))") }
        }
        var made = Set(present.keys)
        for index in new.indexes where made.insert(index.signature).inserted { try connection.execute(index.statement) }
        // 7. The list of the store's relations.
        try connection.execute("DELETE FROM \(location.qualified(PostgreSQLLayout.relationsTable))")
        for relation in new.relations {
            try connection.query("INSERT INTO \(location.qualified(PostgreSQLLayout.relationsTable)) (name, kind) VALUES ($1, $2)",
                                 [.text(relation.name), .text(relation.kind)])
        }
    }

    /// Fails unless every table of `layout` is there with exactly its columns and their types.
    static func check(_ layout: PostgreSQLLayout, _ connection: PGConnection, _ location: PostgreSQLLocation) throws {
        let joinColumns = [("owner", "bigint"), ("member", "bigint"), ("member_entity", "text"), ("position", "bigint")]
        // The history's tables are made by the first write that records history, and are not the step's.
        let expectedTables = layout.tableColumns.mapValues { [("pk", "bigint"), ("entity", "text"), ("version", "bigint")] + $0 }
            .merging(layout.joinTables.map { ($0, joinColumns) }) { a, _ in a }
        for (table, expected) in expectedTables.sorted(by: { $0.key < $1.key }) {
            let rows = try connection.query("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2",
                                            [.text(location.schema), .text(table)])
            guard rows.count > 0 else {
                throw StoreError(.invalidChange, "cannot change the schema in place: the table \(table) is missing after the step", url: location.url)
            }
            let found = (0..<rows.count).map { "\(rows.text($0, 0) ?? "") \(rows.text($0, 1) ?? "")" }.sorted()
            let wanted = expected.map { "\($0.0) \($0.1)" }.sorted()
            guard found == wanted else {
                throw StoreError(.invalidChange, "cannot change the schema in place: the table \(table) has the columns \(found.joined(separator: ", ")) where the model needs \(wanted.joined(separator: ", "))", url: location.url)
            }
        }
    }
}
