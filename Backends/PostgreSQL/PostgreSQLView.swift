import Foundation
import ObjectModel
import ObjectStore
import StoreToolkit

/// The rows of one transaction, for the shared row-store semantics (validation, completion of
/// inverse sides, predicates the evaluator finishes), and the statements that write them.
struct PostgreSQLView: RowSource {
    let connection: PGConnection
    let layout: PostgreSQLLayout
    let location: PostgreSQLLocation

    func columns(_ entity: String) throws -> PostgreSQLLayout.EntityColumns {
        guard let columns = layout.entities[entity] else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        return columns
    }

    /// `version, <attributes…>, <to-one key, to-one entity…>` of `entity`'s table.
    func selectList(_ columns: PostgreSQLLayout.EntityColumns) -> String {
        (["pk", "version"] + columns.attributes.map(PGConnection.quote)
            + columns.toOne.flatMap { [PGConnection.quote($0.key), PGConnection.quote($0.entity)] }).joined(separator: ", ")
    }

    func row(_ key: ObjectKey) throws -> StoredRow? {
        guard let columns = layout.entities[key.entity] else { return nil }
        let rows = try connection.query("SELECT \(selectList(columns)) FROM \(location.qualified(columns.table)) WHERE pk = $1 AND entity = $2",
                                        [.text(String(key.primaryKey)), .text(key.entity)])
        guard rows.count == 1 else { return nil }
        var row = try storedRow(rows, 0, columns)
        for (name, storage) in columns.toMany {
            row.relationships[name] = try members(of: key, storage)
        }
        return row
    }

    /// A row's version, attributes and to-ones, from a result of ``selectList(_:)``.
    func storedRow(_ rows: PGRows, _ r: Int, _ columns: PostgreSQLLayout.EntityColumns) throws -> StoredRow {
        let layout = columns.entity.layout
        var attributes: [String: Value] = [:]
        var relationships: [String: [ObjectKey]] = [:]
        for (slot, attribute) in layout.attributes.enumerated() {
            if let value = try PostgreSQLValues.value(rows, r, 2 + slot, as: attribute.type,
                                                      place: "\(columns.entity.name)/p\(rows.text(r, 0) ?? "?").\(attribute.name)") {
                attributes[attribute.name] = value
            }
        }
        let base = 2 + layout.attributes.count
        for (slot, relationship) in layout.toOne.enumerated() {
            if let pk = rows.int64(r, base + 2 * slot), let entity = rows.text(r, base + 2 * slot + 1) {
                relationships[relationship.name] = [ObjectKey(entity, pk)]
            }
        }
        guard let version = rows.int64(r, 1) else { throw StoreError(.corrupt, "a row of \(columns.table) has no version", url: location.url) }
        return StoredRow(version: version, attributes: attributes, relationships: relationships)
    }

    /// The members of one to-many side, in order for an ordered one.
    func members(of key: ObjectKey, _ storage: PostgreSQLLayout.ToMany) throws -> [ObjectKey] {
        let rows: PGRows
        switch storage {
        case .joinTable(let table):
            rows = try connection.query("SELECT member, member_entity FROM \(location.qualified(table)) WHERE owner = $1 ORDER BY position",
                                        [.text(String(key.primaryKey))])
        case .inverseColumn(let table, let column, let entityColumn, let orderColumn):
            let order = orderColumn.map { "\(PGConnection.quote($0)) NULLS LAST, pk" } ?? "pk"
            rows = try connection.query(
                "SELECT pk, entity FROM \(location.qualified(table)) WHERE \(PGConnection.quote(column)) = $1 "
                    + "AND \(PGConnection.quote(entityColumn)) = $2 ORDER BY \(order)",
                [.text(String(key.primaryKey)), .text(key.entity)])
        }
        return (0..<rows.count).compactMap { r in rows.int64(r, 0).flatMap { pk in rows.text(r, 1).map { ObjectKey($0, pk) } } }
    }

    func exists(_ key: ObjectKey) throws -> Bool {
        guard let columns = layout.entities[key.entity] else { return false }
        return try connection.query("SELECT 1 FROM \(location.qualified(columns.table)) WHERE pk = $1 AND entity = $2",
                                    [.text(String(key.primaryKey)), .text(key.entity)]).count == 1
    }

    func rowCount(of entity: String) throws -> Int {
        let columns = try columns(entity)
        let rows = try connection.query("SELECT count(*) FROM \(location.qualified(columns.table)) WHERE entity = $1", [.text(entity)])
        return Int(rows.int64(0, 0) ?? 0)
    }

    func primaryKeys(of entity: String, after primaryKey: Int64?, limit: Int?) throws -> [Int64] {
        let columns = try columns(entity)
        var sql = "SELECT pk FROM \(location.qualified(columns.table)) WHERE entity = $1 AND pk > $2 ORDER BY pk"
        var parameters: [PGParameter?] = [.text(entity), .text(String(primaryKey ?? Int64.min))]
        if let limit {
            sql += " LIMIT $3"
            parameters.append(.text(String(Swift.max(0, limit))))
        }
        let rows = try connection.query(sql, parameters)
        return (0..<rows.count).compactMap { rows.int64($0, 0) }
    }

    // MARK: Writes

    /// Writes what ``RowSource/writes(for:model:completing:)`` computed: deletions, every row in
    /// full (its to-many sides rewritten), the key sequences moved past the largest keys.
    /// - Throws: ``StoreError/Code/conflict`` naming the object when another transaction changed
    ///   its row since this one began.
    func apply(deleted: [ObjectKey], put: [(ObjectKey, StoredRow)], lastKeys: [String: Int64], storeID: UUID) throws {
        for key in deleted {
            try naming(key, storeID) {
                let columns = try columns(key.entity)
                try connection.query("DELETE FROM \(location.qualified(columns.table)) WHERE pk = $1 AND entity = $2",
                                     [.text(String(key.primaryKey)), .text(key.entity)])
                for case .joinTable(let table) in columns.toMany.values {
                    try connection.query("DELETE FROM \(location.qualified(table)) WHERE owner = $1", [.text(String(key.primaryKey))])
                }
            }
        }
        // Order columns are set once every row is in place (a member may be put after its owner).
        var orders: [(ObjectKey, table: String, column: String, members: [ObjectKey])] = []
        for (key, row) in put {
            try naming(key, storeID) { try write(key, row, orders: &orders) }
        }
        for (key, table, column, members) in orders {
            try naming(key, storeID) {
                let quoted = PGConnection.quote(column)
                try connection.query(
                    "UPDATE \(location.qualified(table)) AS t SET \(quoted) = x.p FROM unnest($1::bigint[]) WITH ORDINALITY AS x(m, p) "
                        + "WHERE t.pk = x.m AND t.\(quoted) IS DISTINCT FROM x.p",
                    [.text(Self.array(members.map { String($0.primaryKey) }))])
            }
        }
        for (root, last) in lastKeys.sorted(by: { $0.key < $1.key }) where last > (try lastKey(root, locking: true)) {
            try setLastKey(root, last)
        }
    }

    /// Runs `body`; a serialization failure or deadlock becomes a conflict naming `key`.
    private func naming(_ key: ObjectKey, _ storeID: UUID, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as PostgreSQLError where error.sqlState == "40001" || error.sqlState == "40P01" {
            throw StoreError(.conflict, "\(key) was changed by another process while this save ran; nothing was saved",
                             url: location.url, objectID: ObjectID(store: storeID, key: key), cause: error)
        } catch let error as PostgreSQLError where error.sqlState == "23505" {
            throw StoreError(.invalidChange, "cannot insert \(key): primary key \(key.primaryKey) is in use in its hierarchy",
                             url: location.url, cause: error)
        }
    }

    /// Inserts or replaces one row, and rewrites its to-many sides.
    private func write(_ key: ObjectKey, _ row: StoredRow, orders: inout [(ObjectKey, table: String, column: String, members: [ObjectKey])]) throws {
        let columns = try columns(key.entity)
        let layout = columns.entity.layout
        var names = ["pk", "entity", "version"]
        var parameters: [PGParameter?] = [.text(String(key.primaryKey)), .text(key.entity), .text(String(row.version))]
        for (slot, attribute) in layout.attributes.enumerated() {
            names.append(PGConnection.quote(columns.attributes[slot]))
            parameters.append(PostgreSQLValues.parameter(row.attributes[attribute.name]))
        }
        for (slot, relationship) in layout.toOne.enumerated() {
            let target = row.relationships[relationship.name]?.first
            names.append(PGConnection.quote(columns.toOne[slot].key))
            names.append(PGConnection.quote(columns.toOne[slot].entity))
            parameters.append(target.map { .text(String($0.primaryKey)) })
            parameters.append(target.map { .text($0.entity) })
        }
        let placeholders = (1...names.count).map { "$\($0)" }.joined(separator: ", ")
        let updates = names.dropFirst().map { "\($0) = EXCLUDED.\($0)" }.joined(separator: ", ")
        try connection.query("INSERT INTO \(location.qualified(columns.table)) (\(names.joined(separator: ", "))) VALUES (\(placeholders)) "
                             + "ON CONFLICT (pk) DO UPDATE SET \(updates)", parameters)
        for (name, storage) in columns.toMany {
            let members = row.relationships[name] ?? []
            switch storage {
            case .joinTable(let table):
                let qualified = location.qualified(table)
                try connection.query("DELETE FROM \(qualified) WHERE owner = $1", [.text(String(key.primaryKey))])
                if !members.isEmpty {
                    try connection.query(
                        "INSERT INTO \(qualified) (owner, member, member_entity, position) "
                            + "SELECT $1, m, e, p FROM unnest($2::bigint[], $3::text[]) WITH ORDINALITY AS x(m, e, p)",
                        [.text(String(key.primaryKey)), .text(Self.array(members.map { String($0.primaryKey) })),
                         .text(Self.array(members.map(\.entity)))])
                }
            case .inverseColumn(let table, _, _, let orderColumn):
                if let orderColumn, !members.isEmpty { orders.append((key, table, orderColumn, members)) }
            }
        }
    }

    /// A PostgreSQL array literal of `elements`, each quoted.
    static func array(_ elements: [String]) -> String {
        "{" + elements.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
            .joined(separator: ",") + "}"
    }

    // MARK: Keys

    /// The last key handed out in `root`'s hierarchy; with `locking`, the hierarchy's advisory
    /// lock is taken first (held to the end of the transaction), so that allocations in other
    /// processes wait.
    func lastKey(_ root: String, locking: Bool) throws -> Int64 {
        let sequence = location.qualified(PostgreSQLLayout.sequence(root))
        if locking { try connection.query("SELECT pg_advisory_xact_lock(hashtext($1))", [.text(sequence)]) }
        let rows = try connection.query("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM \(sequence)")
        return rows.int64(0, 0) ?? 0
    }

    /// Moves `root`'s sequence to `last` (sequences are not transactional: a key handed out
    /// stays handed out even when the transaction rolls back, so none is ever reused).
    func setLastKey(_ root: String, _ last: Int64) throws {
        try connection.query("SELECT setval($1::regclass, $2, true)",
                             [.text(location.qualified(PostgreSQLLayout.sequence(root))), .text(String(last))])
    }
}
