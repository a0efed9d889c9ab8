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
            let members = try members(of: key, storage)
            row.setList(name, members.keys, orderKeys: members.orderKeys)
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

    /// The members of one to-many side, in order for an ordered one, with the order keys it keeps
    /// (``OrderedMembers/append(_:orderKey:)``).
    func members(of key: ObjectKey, _ storage: PostgreSQLLayout.ToMany) throws -> OrderedMembers {
        let rows: PGRows
        switch storage {
        case .joinTable(let table):
            rows = try connection.query("SELECT member, member_entity, position FROM \(location.qualified(table)) WHERE owner = $1 ORDER BY position",
                                        [.text(String(key.primaryKey))])
        case .inverseColumn(let table, let column, let entityColumn, let orderColumn):
            let order = orderColumn.map { "\(PGConnection.quote($0)) NULLS LAST, pk" } ?? "pk"
            rows = try connection.query(
                "SELECT pk, entity, \(orderColumn.map(PGConnection.quote) ?? "NULL::bigint") FROM \(location.qualified(table)) "
                    + "WHERE \(PGConnection.quote(column)) = $1 AND \(PGConnection.quote(entityColumn)) = $2 ORDER BY \(order)",
                [.text(String(key.primaryKey)), .text(key.entity)])
        }
        var members = OrderedMembers(keys: [], orderKeys: [])
        for r in 0..<rows.count {
            guard let pk = rows.int64(r, 0), let entity = rows.text(r, 1) else { continue }
            members.append(ObjectKey(entity, pk), orderKey: rows.int64(r, 2))
        }
        return members
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
        var orders: [(ObjectKey, table: String, column: String, members: OrderedMembers)] = []
        for (key, row) in put {
            try naming(key, storeID) { try write(key, row, orders: &orders) }
        }
        for (key, table, column, members) in orders {
            try naming(key, storeID) {
                let quoted = PGConnection.quote(column)
                try connection.query(
                    "UPDATE \(location.qualified(table)) AS t SET \(quoted) = x.p FROM unnest($1::bigint[], $2::bigint[]) AS x(m, p) "
                        + "WHERE t.pk = x.m AND t.\(quoted) IS DISTINCT FROM x.p",
                    [.text(Self.array(members.keys.map { String($0.primaryKey) })), .text(Self.array(members.orderKeys.map(String.init)))])
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
    private func write(_ key: ObjectKey, _ row: StoredRow, orders: inout [(ObjectKey, table: String, column: String, members: OrderedMembers)]) throws {
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
            let members = row.members(name)
            switch storage {
            case .joinTable(let table):
                let qualified = location.qualified(table)
                try connection.query("DELETE FROM \(qualified) WHERE owner = $1", [.text(String(key.primaryKey))])
                if !members.keys.isEmpty {
                    try connection.query(
                        "INSERT INTO \(qualified) (owner, member, member_entity, position) "
                            + "SELECT $1, m, e, p FROM unnest($2::bigint[], $3::text[], $4::bigint[]) AS x(m, e, p)",
                        [.text(String(key.primaryKey)), .text(Self.array(members.keys.map { String($0.primaryKey) })),
                         .text(Self.array(members.keys.map(\.entity))), .text(Self.array(members.orderKeys.map(String.init)))])
                }
            case .inverseColumn(let table, _, _, let orderColumn):
                if let orderColumn, !members.keys.isEmpty { orders.append((key, table, orderColumn, members)) }
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

// MARK: Bulk paths

extension PostgreSQLView {
    /// A batch of a streaming scan in one statement: keyset pagination (`entity = $1 AND pk > $2
    /// ORDER BY pk LIMIT $3`, on the `(entity, pk)` index), each row's columns read straight into
    /// slots; a to-one whose target no longer exists is left out in SQL (a left join that finds
    /// no target). Memory stays bounded by `limit`.
    func scanBatch(_ entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordBatch {
        let columns = try columns(entity)
        let description = columns.entity
        var batch = RecordBatch(entity: description, capacity: limit)
        guard limit > 0, primaryKey != Int64.max else { return batch }
        let layout = description.layout
        var select = ["x.pk", "x.version"] + columns.attributes.map { "x." + PGConnection.quote($0) }
        var joins = ""
        for (slot, relationship) in layout.toOne.enumerated() {
            let (key, entityColumn) = (PGConnection.quote(columns.toOne[slot].key), PGConnection.quote(columns.toOne[slot].entity))
            let target = location.qualified(self.layout.entities[relationship.destination]?.table ?? columns.table)
            // The batch's rows first, then each target looked up by its key, row by row (a lateral
            // subquery): `limit` probes of the primary key's index. An EXISTS in the select list or a
            // plain join may be planned as a hash of the whole target table, built again for each
            // batch, which makes a scan quadratic in the store.
            joins += " LEFT JOIN LATERAL (SELECT t.pk, t.entity FROM \(target) t WHERE t.pk = x.\(key) AND t.entity = x.\(entityColumn) LIMIT 1)"
                + " t\(slot) ON true"
            select.append("t\(slot).pk")
            select.append("t\(slot).entity")
        }
        let page = "SELECT * FROM \(location.qualified(columns.table)) WHERE entity = $1 AND pk > $2 ORDER BY pk LIMIT $3"
        let rows = try connection.query(
            "SELECT \(select.joined(separator: ", ")) FROM (\(page)) x\(joins) ORDER BY x.pk",
            [.text(entity), .text(String(primaryKey ?? Int64.min)), .text(String(limit))])
        let width = layout.attributes.count
        for r in 0..<rows.count {
            guard let pk = rows.int64(r, 0), let version = rows.int64(r, 1) else {
                throw StoreError(.corrupt, "a row of \(columns.table) has no key or version", url: location.url)
            }
            let row = batch.appendRow(primaryKey: pk, version: version)
            for (slot, attribute) in layout.attributes.enumerated() {
                batch[row, attribute: slot] = try PostgreSQLValues.value(rows, r, 2 + slot, as: attribute.type, place: "\(entity)/p\(pk).\(attribute.name)")
            }
            for slot in 0..<layout.toOne.count {
                if let target = rows.int64(r, 2 + width + 2 * slot), let name = rows.text(r, 3 + width + 2 * slot) {
                    batch[row, toOne: slot] = ObjectKey(name, target)
                }
            }
        }
        return batch
    }

    /// Inserts a batch whose references are not checked with one `COPY … FROM STDIN` into its
    /// root's table, sent in chunks of about a megabyte; the hierarchy's sequence moved past its
    /// largest key. A key in use anywhere in the hierarchy breaks the table's primary key, and
    /// nothing of the batch lands.
    func copy(_ batch: RecordBatch) throws {
        let columns = try columns(batch.entity.name)
        let layout = batch.layout
        let names = ["pk", "entity", "version"] + columns.attributes.map(PGConnection.quote)
            + columns.toOne.flatMap { [PGConnection.quote($0.key), PGConnection.quote($0.entity)] }
        let entity = Self.copyField(batch.entity.name)
        do {
            try connection.copyIn("COPY \(location.qualified(columns.table)) (\(names.joined(separator: ", "))) FROM STDIN") { send in
                var chunk = ""
                chunk.reserveCapacity(1 << 20)
                for row in 0..<batch.count {
                    chunk += String(batch.primaryKeys[row]) + "\t" + entity + "\t" + String(batch.versions[row])
                    for slot in 0..<layout.attributes.count {
                        chunk += "\t"
                        chunk += batch[row, attribute: slot].map { Self.copyField(PostgreSQLValues.text($0)) } ?? "\\N"
                    }
                    for slot in 0..<layout.toOne.count {
                        if let target = batch[row, toOne: slot] {
                            chunk += "\t" + String(target.primaryKey) + "\t" + Self.copyField(target.entity)
                        } else {
                            chunk += "\t\\N\t\\N"
                        }
                    }
                    chunk += "\n"
                    if chunk.utf8.count >= 1 << 20 {
                        try send(Data(chunk.utf8))
                        chunk.removeAll(keepingCapacity: true)
                    }
                }
                if !chunk.isEmpty { try send(Data(chunk.utf8)) }
            }
        } catch let error as PostgreSQLError where error.sqlState == "23505" {
            throw StoreError(.invalidChange, "cannot insert the \(batch.entity.name) batch: a primary key is in use in \(batch.entity.rootName)'s hierarchy "
                             + "(\(error.detail ?? error.message)); nothing of it was written", url: location.url, cause: error)
        }
        let highest = batch.primaryKeys.max() ?? 0
        let root = batch.entity.rootName
        if highest > (try lastKey(root, locking: true)) { try setLastKey(root, highest) }
    }

    /// A field of `COPY`'s text format: backslash, tab, newline and carriage return escaped.
    static func copyField(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x5C || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) else { return text }
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\t": escaped += "\\t"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}

// MARK: Relationship reads

extension PostgreSQLView {
    /// The keys across a relationship in one statement (``PersistentStore/relatedKeys(of:relationship:)``):
    /// none when the object does not exist, targets that no longer exist left out, in order for an
    /// ordered to-many, else in ascending key order.
    func relatedKeys(of key: ObjectKey, relationship name: String) throws -> [ObjectKey] {
        let columns = try columns(key.entity)
        guard let relationship = columns.entity.relationshipsByName[name] else {
            throw StoreError(.invalidFetch, "\(key.entity) has no relationship named \(name)")
        }
        let owner = location.qualified(columns.table)
        let target = location.qualified(layout.entities[relationship.destination]?.table ?? columns.table)
        let parameters: [PGParameter?] = [.text(String(key.primaryKey)), .text(key.entity)]
        let rows: PGRows
        if !relationship.isToMany {
            guard let slot = columns.entity.layout.toOneSlot(name) else { return [] }
            let (column, entityColumn) = (PGConnection.quote(columns.toOne[slot].key), PGConnection.quote(columns.toOne[slot].entity))
            rows = try connection.query(
                "SELECT x.\(column), x.\(entityColumn) FROM \(owner) x JOIN \(target) t ON t.pk = x.\(column) AND t.entity = x.\(entityColumn) "
                    + "WHERE x.pk = $1 AND x.entity = $2", parameters)
        } else {
            let ownerExists = "EXISTS (SELECT 1 FROM \(owner) o WHERE o.pk = $1 AND o.entity = $2)"
            switch columns.toMany[name] {
            case .joinTable(let table)?:
                rows = try connection.query(
                    "SELECT j.member, j.member_entity FROM \(location.qualified(table)) j JOIN \(target) t ON t.pk = j.member AND t.entity = j.member_entity "
                        + "WHERE j.owner = $1 AND \(ownerExists) ORDER BY j.position", parameters)
            case .inverseColumn(let table, let column, let entityColumn, let orderColumn)?:
                let order = orderColumn.map { "\(PGConnection.quote($0)) NULLS LAST, pk" } ?? "pk"
                rows = try connection.query(
                    "SELECT pk, entity FROM \(location.qualified(table)) WHERE \(PGConnection.quote(column)) = $1 "
                        + "AND \(PGConnection.quote(entityColumn)) = $2 AND \(ownerExists) ORDER BY \(order)", parameters)
            case nil:
                return []
            }
        }
        let keys = (0..<rows.count).compactMap { r in rows.int64(r, 0).flatMap { pk in rows.text(r, 1).map { ObjectKey($0, pk) } } }
        return relationship.isOrdered || !relationship.isToMany ? keys : keys.sorted()
    }
}

// MARK: Predicates in SQL

extension PostgreSQLView {
    /// The keys of `entity`'s objects that may match `predicate`, from one SELECT whose WHERE holds
    /// the predicate's translatable conjuncts with bound parameters; nil when none translates.
    ///
    /// Translated: a comparison of an attribute of the entity with a constant of its own kind —
    /// integers (`==`, `!=`, `<`, `<=`, `>`, `>=`), strings, Booleans and UUIDs (`==`, `!=`),
    /// without `[c]`/`[d]` — and nil tests. Each is widened so that SQL never leaves out an object
    /// the evaluator would keep (a NULL passes every comparison but `== constant`); the evaluator
    /// then tests the whole predicate on what SQL selects, so the answers are the evaluator's.
    func candidateKeys(of entity: String, matching predicate: ObjectPredicate) throws -> [Int64]? {
        guard let (sql, parameters) = try candidateQuery(of: entity, matching: predicate) else { return nil }
        let rows = try connection.query(sql, parameters)
        return (0..<rows.count).compactMap { rows.int64($0, 0) }
    }

    /// The SELECT of ``candidateKeys(of:matching:)``, or nil when nothing of `predicate` translates.
    private func candidateQuery(of entity: String, matching predicate: ObjectPredicate) throws -> (String, [PGParameter?])? {
        let columns = try columns(entity)
        var parameters: [PGParameter?] = [.text(entity)]
        let conjuncts: [ObjectPredicate]
        if case .and(let parts) = predicate { conjuncts = parts } else { conjuncts = [predicate] }
        let conditions = conjuncts.compactMap { condition($0, columns, &parameters) }
        guard !conditions.isEmpty else { return nil }
        return ("SELECT pk FROM \(location.qualified(columns.table)) WHERE entity = $1 AND \(conditions.joined(separator: " AND ")) ORDER BY pk", parameters)
    }

    /// PostgreSQL's plan (`EXPLAIN`) for what a fetch of `request` runs: the one SELECT of the whole
    /// request (``fetchedKeys(_:model:)``: predicate, sort and window in SQL) when it translates
    /// exactly; else, for each entity it reads, the predicate's translated part in SQL (its
    /// indexes) or every key of the entity, the rest (predicate, sort, window) in Swift.
    func queryPlan(_ request: FetchRequest, model: ManagedObjectModel) throws -> [String] {
        guard let entity = model.entity(named: request.entityName) else { throw StoreError(.invalidFetch, "no entity named \(request.entityName)") }
        if let (sql, parameters) = try pageQuery(request, model: model) {
            let rows = try connection.query("EXPLAIN " + sql, parameters)
            return (0..<rows.count).compactMap { rows.text($0, 0) }
        }
        var lines: [String] = []
        for name in request.includesSubentities ? entity.kindNames : [entity.name] {
            let columns = try columns(name)
            let (sql, parameters) = try request.predicate.flatMap { try candidateQuery(of: name, matching: $0) }
                ?? ("SELECT pk FROM \(location.qualified(columns.table)) WHERE entity = $1 ORDER BY pk", [.text(name)])
            let rows = try connection.query("EXPLAIN " + sql, parameters)
            lines += (0..<rows.count).compactMap { rows.text($0, 0) }
        }
        return lines
    }

    /// One comparison as SQL, or nil when it is not one SQL answers exactly.
    private func condition(_ predicate: ObjectPredicate, _ columns: PostgreSQLLayout.EntityColumns, _ parameters: inout [PGParameter?]) -> String? {
        guard case .comparison(let c) = predicate, c.quantifier == .direct, c.options.isEmpty,
              case .keyPath(let name) = c.lhs, case .constant(let constant) = c.rhs,
              let slot = columns.entity.layout.attributeSlot(name) else { return nil }
        let column = PGConnection.quote(columns.attributes[slot])
        let type = columns.entity.layout.attributes[slot].type
        guard let constant else {
            switch c.op {
            case .equal: return "\(column) IS NULL"
            case .notEqual: return "\(column) IS NOT NULL"
            default: return nil
            }
        }
        let fits: Bool
        switch (type, constant) {
        case (.integer16, .integer), (.integer32, .integer), (.integer64, .integer): fits = true
        case (.string, .string), (.boolean, .boolean), (.uuid, .uuid): fits = c.op == .equal || c.op == .notEqual
        default: fits = false
        }
        guard fits, let sqlOperator = ["==": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="][c.op.rawValue] else { return nil }
        parameters.append(PostgreSQLValues.parameter(constant))
        let comparison = "\(column) \(sqlOperator) $\(parameters.count)"
        return c.op == .equal ? comparison : "(\(column) IS NULL OR \(comparison))"
    }
}

// MARK: Whole fetches in SQL

extension PostgreSQLView {
    /// One SELECT of the keys a fetch gives, when its predicate and sort translate to SQL that gives
    /// exactly the evaluator's answers: the page's keys only cross the wire, whatever the store's size.
    func fetchedKeys(_ request: FetchRequest, model: ManagedObjectModel) throws -> [ObjectKey]? {
        guard let (sql, parameters) = try pageQuery(request, model: model) else { return nil }
        let rows = try connection.query(sql, parameters)
        return try (0..<rows.count).map { r in
            guard let entity = rows.text(r, 0), let pk = rows.int64(r, 1) else { throw StoreError(.corrupt, "a row without a key", url: location.url) }
            return ObjectKey(entity, pk)
        }
    }

    /// The SELECT of ``fetchedKeys(_:model:)``, or nil when the request is not all SQL's.
    private func pageQuery(_ request: FetchRequest, model: ManagedObjectModel) throws -> (String, [PGParameter?])? {
        guard let (from, selected) = try exactSelection(request, model: model),
              let order = try exactOrder(request.sortDescriptors, model: model, request: request) else { return nil }
        var parameters = selected
        var sql = "SELECT entity, pk \(from) ORDER BY \((order + ["pk"]).joined(separator: ", "))"
        if let limit = request.fetchLimit {
            parameters.append(.text(String(max(0, limit))))
            sql += " LIMIT $\(parameters.count)"
        }
        if request.fetchOffset > 0 {
            parameters.append(.text(String(request.fetchOffset)))
            sql += " OFFSET $\(parameters.count)"
        }
        return (sql, parameters)
    }

    /// `count(*)` of the selection, the window applied in Swift.
    func fetchedCount(_ request: FetchRequest, model: ManagedObjectModel) throws -> Int? {
        guard let (from, parameters) = try exactSelection(request, model: model) else { return nil }
        let rows = try connection.query("SELECT count(*) \(from)", parameters)
        let total = Int(rows.int64(0, 0) ?? 0)
        return min(max(0, total - max(0, request.fetchOffset)), request.fetchLimit ?? Int.max)
    }

    /// `FROM … WHERE …` selecting exactly the objects the request's entity (and sub-entities) and
    /// predicate give, or nil when the predicate has a part SQL does not answer exactly.
    private func exactSelection(_ request: FetchRequest, model: ManagedObjectModel) throws -> (String, [PGParameter?])? {
        guard let entity = model.entity(named: request.entityName) else { return nil }
        let kinds = (request.includesSubentities ? entity.kindNames : [entity.name]).filter { model.entity(named: $0)?.isAbstract == false }
        guard !kinds.isEmpty, let columns = layout.entities[entity.name], let resolve = try sharedColumns(entity, kinds) else { return nil }
        var parameters: [PGParameter?] = kinds.map { .text($0) }
        var conditions = ["entity IN (" + kinds.indices.map { "$\($0 + 1)" }.joined(separator: ", ") + ")"]
        if let predicate = request.predicate {
            guard let condition = exactCondition(predicate, resolve, &parameters) else { return nil }
            conditions.append(condition)
        }
        return ("FROM \(location.qualified(columns.table)) WHERE " + conditions.joined(separator: " AND "), parameters)
    }

    /// The column and type of each attribute of `entity`, when every kind read keeps it in the same column.
    private func sharedColumns(_ entity: EntityDescription, _ kinds: [String]) throws -> ((String) -> (column: String, type: AttributeType)?)? {
        var found: [String: (String, AttributeType)] = [:]
        for (slot, attribute) in entity.layout.attributes.enumerated() {
            let column = try columns(entity.name).attributes[slot]
            for kind in kinds {
                guard let other = layout.entities[kind], let s = other.entity.layout.attributeSlot(attribute.name),
                      other.attributes[s] == column else { return nil }
            }
            found[attribute.name] = (PGConnection.quote(column), attribute.type)
        }
        return { found[$0] }
    }

    /// A predicate as a two-valued SQL condition that holds exactly where the evaluator says true,
    /// or nil. Translated: `AND`, `OR`, `NOT`, constants, and comparisons of an attribute with a
    /// constant of its kind, without options or quantifiers: integers and Booleans (`==`, `!=`; and
    /// for integers `<`, `<=`, `>`, `>=`), doubles and dates by order (a NaN compares false), and
    /// nil tests. A missing value is unequal to every constant and fails every order comparison.
    private func exactCondition(_ predicate: ObjectPredicate, _ resolve: (String) -> (column: String, type: AttributeType)?,
                                _ parameters: inout [PGParameter?]) -> String? {
        switch predicate {
        case .constant(let value): return value ? "TRUE" : "FALSE"
        case .and(let parts), .or(let parts):
            guard !parts.isEmpty else { if case .and = predicate { return "TRUE" } else { return "FALSE" } }
            var translated: [String] = []
            for part in parts {
                guard let condition = exactCondition(part, resolve, &parameters) else { return nil }
                translated.append(condition)
            }
            if case .and = predicate { return "(" + translated.joined(separator: " AND ") + ")" }
            return "(" + translated.joined(separator: " OR ") + ")"
        case .not(let part):
            return exactCondition(part, resolve, &parameters).map { "(NOT \($0))" }
        case .comparison(let c):
            guard c.quantifier == .direct, c.options.isEmpty, case .keyPath(let name) = c.lhs, case .constant(let constant) = c.rhs,
                  let (column, type) = resolve(name) else { return nil }
            guard let constant else {
                switch c.op {
                case .equal: return "(\(column) IS NULL)"
                case .notEqual: return "(\(column) IS NOT NULL)"
                default: return nil
                }
            }
            let ordering = [.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual].contains(c.op)
            switch (type, constant) {
            case (.integer16, .integer), (.integer32, .integer), (.integer64, .integer), (.boolean, .boolean):
                guard c.op == .equal || c.op == .notEqual || (ordering && type != .boolean) else { return nil }
            case (.double, .double), (.float, .double), (.date, .date):
                // (A NaN constant never gets here: the predicate check refuses it before any fetch.)
                guard ordering else { return nil }
            default: return nil
            }
            guard let sqlOperator = ["==": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="][c.op.rawValue] else { return nil }
            parameters.append(PostgreSQLValues.parameter(constant))
            let comparison = "\(column) \(sqlOperator) $\(parameters.count)"
            if c.op == .notEqual { return "(\(column) IS NULL OR \(comparison))" }
            let number = type == .double || type == .float || type == .date
            return "(\(column) IS NOT NULL" + (number ? " AND \(column) <> 'NaN'" : "") + " AND \(comparison))"
        }
    }

    /// ORDER BY terms giving ``ValueOrdering/total(_:_:)``'s order for each descriptor (a missing
    /// value first, a NaN before other numbers, strings by their UTF-8 bytes), or nil when a key
    /// is not an attribute of a kind SQL orders exactly.
    private func exactOrder(_ descriptors: [ObjectSortDescriptor], model: ManagedObjectModel, request: FetchRequest) throws -> [String]? {
        guard let entity = model.entity(named: request.entityName) else { return nil }
        let kinds = (request.includesSubentities ? entity.kindNames : [entity.name]).filter { model.entity(named: $0)?.isAbstract == false }
        guard let resolve = try sharedColumns(entity, kinds) else { return nil }
        var terms: [String] = []
        for descriptor in descriptors {
            guard let (column, type) = resolve(descriptor.keyPath) else { return nil }
            let (up, down) = descriptor.ascending ? ("ASC", "DESC") : ("DESC", "ASC")
            terms.append("(\(column) IS NOT NULL) \(up)")
            switch type {
            case .integer16, .integer32, .integer64, .boolean:
                terms.append("\(column) \(up)")
            case .double, .float, .date:
                terms.append("(\(column) = 'NaN') \(down)")
                terms.append("\(column) \(up)")
            default:
                return nil
            }
        }
        return terms
    }
}
