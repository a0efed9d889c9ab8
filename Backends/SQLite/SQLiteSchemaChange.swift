import Foundation
import ObjectModel
import ObjectStore

/// In-place lightweight migration: the changes Core Data's layout can take with DDL alone, no
/// object loaded, in one transaction with the metadata's hashes and model (docs/migrations.md).
///
/// In place: attributes added (optional, or with a default, which SQLite gives old rows without
/// rewriting them), renamed (by renaming identifier) or removed; relationships added (optional:
/// an empty column or join table), renamed or removed; entities added, renamed or removed with
/// their whole hierarchy; fetch indexes added or removed. Everything that needs every object
/// read or rewritten (a type, a rule or a hierarchy changed, a required value with no default,
/// a relationship's storage changed) is a blocker, and the migrator copies instead.
extension SQLiteStoreType: SchemaChanging {
    public func schemaChangeBlockers(from source: ManagedObjectModel, to destination: ManagedObjectModel) -> [String] {
        Self.blockers(SchemaStep(from: source, to: destination))
    }

    /// The step's blockers, and SQLite's own: an added attribute whose default SQL cannot write as
    /// a column's DEFAULT (a non-finite double, text holding U+0000) must be given to old rows one by one.
    static func blockers(_ step: SchemaStep) -> [String] {
        var blockers = step.blockers
        for (new, changes) in step.attributeChanges.sorted(by: { $0.key < $1.key }) {
            for case .added(let attribute) in changes {
                if let value = attribute.defaultValue, literal(SQLiteValues.sql(value)) == nil {
                    blockers.append("\(new).\(attribute.name): its default has no SQL literal, so old rows must be given it one by one")
                }
            }
        }
        return blockers
    }

    public func changeSchema(at given: URL, through models: [ManagedObjectModel], recording record: HistoryRecord?) throws {
        let url = FileOperations.resolved(given)
        guard let first = models.first else { return }
        let (connection, metadata) = try Self.openExisting(url, readOnly: false)
        defer { connection.close() }
        guard metadata.compatibility(with: first).isCompatible else {
            throw StoreError(.incompatibleModel, "the store was not made with the first model of the change", url: url)
        }
        try connection.transaction {
            var steps: [SchemaStep] = []
            for (source, destination) in zip(models, models.dropFirst()) {
                let step = SchemaStep(from: source, to: destination)
                let blockers = Self.blockers(step)
                guard blockers.isEmpty else {
                    throw StoreError(.invalidChange, "cannot change the schema in place: " + blockers.joined(separator: "; "), url: url)
                }
                logger.debug("\(url.lastPathComponent): a schema step in place: tables and columns altered in the transaction")
                try step.apply(to: connection, url: url)
                steps.append(step)
            }
            if steps.contains(where: \.renamesNames) { try SQLiteHistory.rename(through: steps, connection, url: url) }
            let last = models.last!
            // The tables now fit the last model, or nothing is committed.
            _ = try SQLiteSchema(model: last, file: SQLiteFileLayout.read(from: connection, url: url), url: url)
            var updated = try Self.readMetadata(from: connection, url: url)
            try updated.setModel(last)
            try Self.writeMetadata(updated, to: connection)
            // Core Data's cached model describes the old version: the new one's replaces it.
            try Self.writeModelCache(last, to: connection)
            var tableKnown = false
            if let record { try SQLiteHistory.append(record, connection, tableKnown: &tableKnown) }
        }
    }

    /// A value as an SQL literal, for a column's DEFAULT; nil for a double SQL cannot write, and
    /// for text holding U+0000 (SQL text ends there).
    static func literal(_ value: SQLValue) -> String? {
        switch value {
        case .null: "NULL"
        case .integer(let n): String(n)
        case .real(let d): d.isFinite ? "\(d)" : nil
        case .text(let text): text.utf8.contains(0) ? nil : "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let data): "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }
}

/// SQLite's DDL for one version step (``SchemaStep``: the model side, shared with PostgreSQL).
extension SchemaStep {
    /// Runs the step's DDL on `connection`, inside the caller's transaction: every table and
    /// column that holds data continues under its new name, what is gone is dropped, what is new
    /// is created empty, and `Z_PRIMARYKEY` names the new entity set.
    func apply(to connection: SQLiteConnection, url: URL) throws {
        let layout = try SQLiteFileLayout.read(from: connection, url: url)
        let current = try SQLiteSchema(model: source, file: layout, url: url)
        // Entities keep their numbers (rows keep their Z_ENT); new ones take numbers after every row's.
        var numbers = oldEntity.mapValues { current.entities[$0]!.number }
        var next = (layout.entities.map(\.number).max() ?? 0) + 1
        for name in SQLiteSchema.newStoreOrder(of: destination) where numbers[name] == nil {
            numbers[name] = next
            next += 1
        }
        let fresh = SQLiteSchema(model: destination, numbers: numbers, existingTables: Set(layout.columns.keys))
        let moves = try Moves(self, current: current, fresh: fresh)

        func fail(_ message: String) -> StoreError { StoreError(.invalidChange, "cannot change the schema in place: \(message)", url: url) }
        func indexes(on table: String) throws -> [(name: String, columns: [String])] {
            let names = try connection.statement("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?1 AND sql IS NOT NULL")
                .rows([.text(table)]) { $0.column(0) }.compactMap { value -> String? in if case .text(let name) = value { name } else { nil } }
            return try names.map { name in
                (name, try connection.statement("SELECT name FROM pragma_index_info(?1) ORDER BY seqno").rows([.text(name)]) { row -> String in
                    if case .text(let column) = row.column(0) { column } else { "" }
                })
            }
        }
        // 1. Indexes of the old layout that the new one does not keep as they are.
        for (name, table) in current.tables {
            for index in table.indexes {
                let target = moves.tables[name].flatMap { fresh.tables[$0] }
                let mapped = index.columns.map { moves.columns[name]?[$0] }
                let kept = target?.indexes.contains { $0.name == index.name && $0.columns.map(Optional.some) == mapped } ?? false
                if !kept { try connection.execute("DROP INDEX IF EXISTS \(quote(index.name))") }
            }
        }
        // 2. Tables of entities and relationships that are gone.
        for name in current.tables.keys.sorted() where moves.tables[name] == nil && layout.columns[name.uppercased()] != nil {
            try connection.execute("DROP TABLE \(quote(name))")
        }
        // 3. Columns that are gone, with any index still on them.
        for (name, table) in current.tables.sorted(by: { $0.key < $1.key }) where moves.tables[name] != nil {
            for column in table.columns.map(\.name) where moves.columns[name]?[column] == nil {
                guard layout.columns[name.uppercased()]?.contains(column.uppercased()) == true else { continue }
                for index in try indexes(on: name) where index.columns.contains(where: { $0.uppercased() == column.uppercased() }) {
                    try connection.execute("DROP INDEX \(quote(index.name))")
                }
                try connection.execute("ALTER TABLE \(quote(name)) DROP COLUMN \(quote(column))")
            }
        }
        // 4. Renamed tables, then renamed columns, each through a temporary name so that two may trade names.
        let renamed = moves.tables.filter { $0.key != $0.value }.sorted { $0.key < $1.key }
        for (n, (old, _)) in renamed.enumerated() { try connection.execute("ALTER TABLE \(quote(old)) RENAME TO \(quote("Z_MOVING_TABLE_\(n)"))") }
        for (n, (_, new)) in renamed.enumerated() {
            guard try !connection.exists(new) else { throw fail("the store already has a table \(new)") }
            try connection.execute("ALTER TABLE \(quote("Z_MOVING_TABLE_\(n)")) RENAME TO \(quote(new))")
        }
        for (old, new) in moves.tables.sorted(by: { $0.key < $1.key }) {
            let pairs = (moves.columns[old] ?? [:]).filter { $0.key != $0.value }.sorted { $0.key < $1.key }
            for (n, (from, _)) in pairs.enumerated() { try connection.execute("ALTER TABLE \(quote(new)) RENAME COLUMN \(quote(from)) TO \(quote("Z_MOVING_\(n)"))") }
            for (n, (_, to)) in pairs.enumerated() { try connection.execute("ALTER TABLE \(quote(new)) RENAME COLUMN \(quote("Z_MOVING_\(n)")) TO \(quote(to))") }
        }
        // 5. New tables, and new columns in kept ones (an attribute's with its default).
        let kept = Set(moves.tables.values)
        for table in fresh.tables.values.sorted(by: { $0.name < $1.name }) {
            guard kept.contains(table.name) else {
                guard try !connection.exists(table.name) else { throw fail("the store already has a table \(table.name)") }
                for sql in SQLiteSchema.createStatements(for: table) { try connection.execute(sql) }
                continue
            }
            let present = Set(try connection.statement("SELECT upper(name) FROM pragma_table_info(?1)").rows([.text(table.name)]) { row -> String in
                if case .text(let name) = row.column(0) { name } else { "" }
            })
            for column in table.columns where !moves.targets.contains(Moves.Column(table: table.name, name: column.name)) {
                guard !present.contains(column.name.uppercased()) else { throw fail("table \(table.name) already has a column \(column.name)") }
                var sql = "ALTER TABLE \(quote(table.name)) ADD COLUMN \(quote(column.name)) \(column.type)"
                if let value = moves.added[Moves.Column(table: table.name, name: column.name)]?.defaultValue {
                    guard let literal = SQLiteStoreType.literal(SQLiteValues.sql(value)) else { throw fail("the default of \(column.purpose) has no SQL literal") }
                    sql += " DEFAULT \(literal)"
                }
                try connection.execute(sql)
            }
        }
        // 6. The new layout's indexes that are not there.
        for table in fresh.tables.values.sorted(by: { $0.name < $1.name }) {
            let present = Set(try indexes(on: table.name).map(\.name))
            for index in table.indexes where !present.contains(index.name) {
                try connection.execute(SQLiteSchema.createStatement(for: index, on: table.name))
            }
        }
        // 7. The entity set: rows of entities gone deleted, renamed ones renamed, new ones added.
        let continued = Set(oldEntity.values)
        for old in source.entityDescriptions where !continued.contains(old.name) {
            try connection.statement("DELETE FROM Z_PRIMARYKEY WHERE Z_ENT = ?1").run([.integer(Int64(current.entities[old.name]!.number))])
        }
        for entity in destination.entityDescriptions {
            let number = Int64(numbers[entity.name]!)
            if oldEntity[entity.name] != nil {
                try connection.statement("UPDATE Z_PRIMARYKEY SET Z_NAME = ?1 WHERE Z_ENT = ?2").run([.text(entity.name), .integer(number)])
            } else {
                let parent = Int64(entity.parent.map { numbers[$0]! } ?? 0)
                try connection.statement("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?1, ?2, ?3, 0)")
                    .run([.integer(number), .text(entity.name), .integer(parent)])
            }
        }
    }

    /// Where the data of the old layout goes in the new one.
    private struct Moves {
        struct Column: Hashable { let table: String, name: String }
        /// Old table → new table, for every table that keeps its rows.
        var tables: [String: String] = [:]
        /// Old table → (old column → new column), for every column that keeps its values.
        var columns: [String: [String: String]] = [:]
        /// The new columns that continue old ones.
        var targets: Set<Column> = []
        /// New attribute columns, for their defaults.
        var added: [Column: Attribute] = [:]

        init(_ step: SchemaStep, current: SQLiteSchema, fresh: SQLiteSchema) throws {
            func move(_ oldTable: String, _ oldColumn: String?, _ newTable: String, _ newColumn: String?) {
                guard let oldColumn, let newColumn else { return }
                tables[oldTable] = newTable
                columns[oldTable, default: [:]][oldColumn] = newColumn
                targets.insert(Column(table: newTable, name: newColumn))
            }
            for (new, oldName) in step.oldEntity {
                let was = current.entities[oldName]!, now = fresh.entities[new]!
                let old = step.source.entity(named: oldName)!, entity = step.destination.entity(named: new)!
                for column in ["Z_PK", "Z_ENT", "Z_OPT"] { move(was.table, column, now.table, column) }
                for change in step.attributeChanges[new] ?? [] {
                    switch change {
                    case .kept(let a, let b): move(was.table, was.attributes[a.name], now.table, now.attributes[b.name])
                    case .added(let attribute): added[Column(table: now.table, name: now.attributes[attribute.name]!)] = attribute
                    case .removed, .blocked: break
                    }
                }
                for case let (a?, b) in step.relationshipPairs(old, entity) {
                    if let from = was.toOne[a.name], let to = now.toOne[b.name] {
                        move(was.table, from.key, now.table, to.key)
                        move(was.table, from.entity, now.table, to.entity)
                        continue
                    }
                    switch (was.toMany[a.name], now.toMany[b.name]) {
                    case (.inverseForeignKey(let t1, _, _, let o1)?, .inverseForeignKey(let t2, _, _, let o2)?):
                        move(t1, o1, t2, o2)
                    case (.hiddenForeignKey(let t1, let c1, let o1)?, .hiddenForeignKey(let t2, let c2, let o2)?):
                        move(t1, c1, t2, c2)
                        move(t1, o1, t2, o2)
                    case (.join(let t1, let own1, let other1, let order1, let otherOrder1, _)?, .join(let t2, let own2, let other2, let order2, let otherOrder2, _)?):
                        move(t1, own1, t2, own2)
                        move(t1, other1, t2, other2)
                        move(t1, order1, t2, order2)
                        move(t1, otherOrder1, t2, otherOrder2)
                    default:
                        throw StoreError(.invalidChange, "cannot change the schema in place: \(new).\(b.name) is stored otherwise in the new layout")
                    }
                }
            }
        }
    }
}
