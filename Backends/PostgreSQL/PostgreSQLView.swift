import Foundation
import ObjectModel
import ObjectStore
import Relational
import StoreToolkit

/// The rows of one transaction, for the shared row-store semantics (validation, completion of
/// inverse sides, predicates the evaluator finishes), and the statements that write them.
struct PostgreSQLView: RowSource {
    let connection: PGConnection
    let layout: PostgreSQLLayout
    let location: PostgreSQLLocation
    /// Rows read ahead for this transaction (``prefetch(_:)``): a save reads the rows it checks and
    /// completes with a statement per entity and per to-many side, not per object.
    var cache = RowCache()
    /// Whether a save rewrites (in place, unchanged) the rows it puts as they were: true but for a
    /// store filled in one go, which no other process writes.
    var touchesKeptRows = true
    /// Whether the server's text is UTF-8, so that SQL can compare strings as the evaluator does
    /// (``PostgreSQLDialect``); otherwise string predicates and sorts stay in Swift.
    let unicode: Bool

    init(connection: PGConnection, layout: PostgreSQLLayout, location: PostgreSQLLocation, unicode: Bool) {
        self.connection = connection
        self.layout = layout
        self.location = location
        self.unicode = unicode
    }

    /// Rows of one transaction by key; nil for a key known to have no row. Emptied when the
    /// transaction writes.
    final class RowCache {
        var rows: [ObjectKey: StoredRow?] = [:]
        /// Rows the transaction inserted into each join table (by unqualified name).
        var joinRowsInserted: [String: Int] = [:]
    }

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
        if let known = cache.rows[key] { return known }
        guard let columns = layout.entities[key.entity] else { return nil }
        let rows = try connection.query("SELECT \(selectList(columns)) FROM \(location.qualified(columns.table)) WHERE pk = $1 AND entity = $2",
                                        [.text(String(key.primaryKey)), .text(key.entity)])
        guard rows.count == 1 else { return nil }
        var row = try storedRow(rows, 0, columns)
        for (name, storage) in columns.toMany {
            let members = try members(ofEach: [key.primaryKey], entity: key.entity, storage)[key.primaryKey]
            row.setList(name, members?.keys ?? [], orderKeys: members?.orderKeys ?? [])
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

    /// Reads the rows of `keys` into the cache: one statement per entity for the rows, one per
    /// entity and to-many side for their members; a key without a row is remembered as such.
    func prefetch(_ keys: some Sequence<ObjectKey>) throws {
        var wanted: [String: Set<Int64>] = [:]
        for key in keys where cache.rows[key] == nil && layout.entities[key.entity] != nil { wanted[key.entity, default: []].insert(key.primaryKey) }
        for (entity, primaryKeys) in wanted.sorted(by: { $0.key < $1.key }) {
            let columns = try columns(entity)
            let list = Self.array(primaryKeys.sorted().map(String.init))
            let rows = try connection.query("SELECT \(selectList(columns)) FROM \(location.qualified(columns.table)) WHERE entity = $1 AND pk = ANY($2::bigint[])",
                                            [.text(entity), .text(list)])
            var found: [Int64: StoredRow] = [:]
            for r in 0..<rows.count {
                guard let pk = rows.int64(r, 0) else { continue }
                found[pk] = try storedRow(rows, r, columns)
            }
            for (name, storage) in columns.toMany {
                let lists = try members(ofEach: Array(found.keys), entity: entity, storage)
                // As ``row(_:)`` reads a row: every side set, an empty one too.
                for owner in Array(found.keys) {
                    found[owner]?.setList(name, lists[owner]?.keys ?? [], orderKeys: lists[owner]?.orderKeys ?? [])
                }
            }
            for pk in primaryKeys { cache.rows[ObjectKey(entity, pk)] = .some(found[pk]) }
        }
    }

    /// The members of one to-many side of each of `owners` (of `entity`), in one statement; with
    /// `existingIn`, a join table's members that have no row in that table (the destination's) left out.
    private func members(ofEach owners: [Int64], entity: String, _ storage: PostgreSQLLayout.ToMany,
                         existingIn targets: String? = nil) throws -> [Int64: OrderedMembers] {
        guard !owners.isEmpty else { return [:] }
        let list = Self.array(owners.sorted().map(String.init))
        let rows: PGRows
        switch storage {
        case .joinTable(let table):
            let existing = targets.map { " JOIN \(location.qualified($0)) t ON t.pk = j.member AND t.entity = j.member_entity" } ?? ""
            rows = try connection.query("SELECT j.owner, j.member, j.member_entity, j.position FROM \(location.qualified(table)) j\(existing) "
                                        + "WHERE j.owner = ANY($1::bigint[]) ORDER BY j.owner, j.position", [.text(list)])
        case .inverseColumn(let table, let column, let entityColumn, let orderColumn):
            let order = orderColumn.map { "\(PGConnection.quote($0)) NULLS LAST, pk" } ?? "pk"
            rows = try connection.query(
                "SELECT \(PGConnection.quote(column)), pk, entity, \(orderColumn.map(PGConnection.quote) ?? "NULL::bigint") FROM \(location.qualified(table)) "
                    + "WHERE \(PGConnection.quote(column)) = ANY($1::bigint[]) AND \(PGConnection.quote(entityColumn)) = $2 "
                    + "ORDER BY \(PGConnection.quote(column)), \(order)",
                [.text(list), .text(entity)])
        }
        var members: [Int64: OrderedMembers] = [:]
        for r in 0..<rows.count {
            guard let owner = rows.int64(r, 0), let pk = rows.int64(r, 1), let memberEntity = rows.text(r, 2) else { continue }
            members[owner, default: OrderedMembers(keys: [], orderKeys: [])].append(ObjectKey(memberEntity, pk), orderKey: rows.int64(r, 3))
        }
        return members
    }

    /// ``PersistentStore/orderedMembers(of:relationship:)`` of each of `keys`, in their order: per
    /// entity, one statement for the owners that exist and one for their members; nil for a
    /// relationship that is not a stored to-many (the caller then asks object by object).
    func orderedMembers(of keys: [ObjectKey], relationship name: String) throws -> [OrderedMembers]? {
        var found: [ObjectKey: OrderedMembers] = [:]
        for (entity, primaryKeys) in Dictionary(grouping: keys, by: \.entity).mapValues({ $0.map(\.primaryKey) }) {
            let columns = try columns(entity)
            guard let storage = columns.toMany[name], let relationship = columns.entity.relationshipsByName[name],
                  let targets = layout.entities[relationship.destination]?.table else { return nil }
            let owners = try connection.query("SELECT pk FROM \(location.qualified(columns.table)) WHERE entity = $1 AND pk = ANY($2::bigint[])",
                                              [.text(entity), .text(Self.array(primaryKeys.map(String.init)))])
            let existing = (0..<owners.count).compactMap { owners.int64($0, 0) }
            let members = try members(ofEach: existing, entity: entity, storage, existingIn: targets)
            for pk in existing {
                let list = members[pk] ?? OrderedMembers(keys: [], orderKeys: [])
                // An unordered side keeps no order keys: its members, in key order as `relatedKeys` gives
                // them, are numbered 1, 2, 3…
                found[ObjectKey(entity, pk)] = relationship.isOrdered ? list : OrderedMembers(list.keys.sorted())
            }
        }
        return keys.map { found[$0] ?? OrderedMembers(keys: [], orderKeys: []) }
    }

    func exists(_ key: ObjectKey) throws -> Bool {
        if let known = cache.rows[key] { return known != nil }
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
        // What the rows held when this transaction read them: a row or a to-many side put as it
        // was is not written again.
        let before = cache.rows
        cache.rows.removeAll()
        for (entity, keys) in Self.grouped(deleted.map { ($0, ()) }) {
            try naming(keys.map(\.0), storeID) {
                let columns = try columns(entity)
                let list = Self.array(keys.map { String($0.0.primaryKey) })
                try connection.query("DELETE FROM \(location.qualified(columns.table)) WHERE entity = $1 AND pk = ANY($2::bigint[])", [.text(entity), .text(list)])
                for case .joinTable(let table) in columns.toMany.values {
                    try connection.query("DELETE FROM \(location.qualified(table)) WHERE owner = ANY($1::bigint[])", [.text(list)])
                }
            }
        }
        // Order columns are set once every row is in place (a member may be put after its owner).
        var orders: [(ObjectKey, table: String, column: String, members: OrderedMembers)] = []
        for (entity, rows) in Self.grouped(put) {
            try naming(rows.map(\.0), storeID) { try write(entity, rows, before: before, orders: &orders) }
        }
        // One statement per order column, for every list of the save.
        for lists in Dictionary(grouping: orders, by: { "\($0.table)\u{0}\($0.column)" }).sorted(by: { $0.key < $1.key }).map(\.value) {
            try naming(lists.map(\.0), storeID) {
                let (table, quoted) = (lists[0].table, PGConnection.quote(lists[0].column))
                try connection.query(
                    "UPDATE \(location.qualified(table)) AS t SET \(quoted) = x.p FROM unnest($1::bigint[], $2::bigint[]) AS x(m, p) "
                        + "WHERE t.pk = x.m AND t.\(quoted) IS DISTINCT FROM x.p",
                    [.text(Self.array(lists.flatMap { $0.members.keys.map { String($0.primaryKey) } })),
                     .text(Self.array(lists.flatMap { $0.members.orderKeys.map(String.init) }))])
            }
        }
        for (root, last) in lastKeys.sorted(by: { $0.key < $1.key }) where last > (try lastKey(root, locking: true)) {
            try setLastKey(root, last)
        }
    }

    /// `items` by the entity of their keys, each group in the order given, the entities in name order.
    private static func grouped<T>(_ items: [(ObjectKey, T)]) -> [(String, [(ObjectKey, T)])] {
        Dictionary(grouping: items, by: { $0.0.entity }).sorted { $0.key < $1.key }
    }

    /// Runs `body`, the statements of the objects of `keys`; a serialization failure or deadlock
    /// becomes a conflict naming the object (the first, when the statement wrote several).
    private func naming(_ keys: [ObjectKey], _ storeID: UUID, _ body: () throws -> Void) throws {
        guard let key = keys.first else { return }
        let named = keys.count == 1 ? "\(key)" : "\(key) (or another of the \(keys.count) \(key.entity) objects saved with it)"
        do {
            try body()
        } catch let error as PostgreSQLError where error.sqlState == "40001" || error.sqlState == "40P01" {
            throw StoreError(.conflict, "\(named) was changed by another process while this save ran; nothing was saved",
                             url: location.url, objectID: ObjectID(store: storeID, key: key), cause: error)
        } catch let error as PostgreSQLError where error.sqlState == "23505" {
            throw StoreError(.invalidChange, "cannot insert \(named): its primary key is in use in its hierarchy",
                             url: location.url, cause: error)
        }
    }

    /// Inserts or replaces the rows of `entity`'s objects with one statement, and rewrites their
    /// to-many sides with two statements per join table.
    private func write(_ entity: String, _ all: [(ObjectKey, StoredRow)], before: [ObjectKey: StoredRow?],
                       orders: inout [(ObjectKey, table: String, column: String, members: OrderedMembers)]) throws {
        let columns = try columns(entity)
        let layout = columns.entity.layout
        // The rows whose version, attributes or to-ones differ from what was read (all, for a row not
        // read); values compare as stored (the same bytes), not as equal values ("é" precomposed or
        // not, 0.0 and -0.0 are other values to keep).
        var rows: [(ObjectKey, StoredRow)] = [], kept: [String] = []
        for (key, row) in all {
            if case let old?? = before[key], old.version == row.version, Self.sameAsStored(old.attributes, row.attributes),
               !layout.toOne.contains(where: { old.relationships[$0.name]?.first != row.relationships[$0.name]?.first }) {
                kept.append(String(key.primaryKey))
            } else {
                rows.append((key, row))
            }
        }
        try upsert(entity, rows, columns)
        // A row put as it was is still part of the save: touched as a write touches it, so that a
        // concurrent change or delete of it conflicts (40001) as it would with the row written (a
        // lock alone would let a delete through after this save commits). A store filled in one go
        // has no other writer: nothing to touch.
        if !kept.isEmpty && touchesKeptRows {
            try connection.query("UPDATE \(location.qualified(columns.table)) SET version = version WHERE entity = $1 AND pk = ANY($2::bigint[])",
                                 [.text(entity), .text(Self.array(kept))])
        }
        for (name, storage) in columns.toMany.sorted(by: { $0.key < $1.key }) {
            // The owners whose side differs from what was read, and of those, the ones that held members.
            var changed: [(ObjectKey, OrderedMembers)] = [], held: [String] = []
            for (key, row) in all {
                let members = row.members(name)
                switch before[key] {
                case let old??:
                    let was = old.members(name)
                    if was.keys == members.keys && was.orderKeys == members.orderKeys { continue }
                    if !was.keys.isEmpty { held.append(String(key.primaryKey)) }
                case .some(nil):
                    break   // no row when read: a new object holds nothing yet
                case nil:
                    held.append(String(key.primaryKey))
                }
                changed.append((key, members))
            }
            switch storage {
            case .joinTable(let table):
                let qualified = location.qualified(table)
                if !held.isEmpty { try connection.query("DELETE FROM \(qualified) WHERE owner = ANY($1::bigint[])", [.text(Self.array(held))]) }
                var (owner, member, memberEntity, position) = ([String?](), [String?](), [String?](), [String?]())
                for (key, members) in changed {
                    for (index, target) in members.keys.enumerated() {
                        owner.append(String(key.primaryKey))
                        member.append(String(target.primaryKey))
                        memberEntity.append(target.entity)
                        position.append(String(members.orderKeys[index]))
                    }
                }
                if !owner.isEmpty {
                    cache.joinRowsInserted[table, default: 0] += owner.count
                    try connection.query(
                        "INSERT INTO \(qualified) (owner, member, member_entity, position) "
                            + "SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[])",
                        [.text(Self.array(owner)), .text(Self.array(member)), .text(Self.array(memberEntity)), .text(Self.array(position))])
                }
            case .inverseColumn(let table, _, _, let orderColumn):
                guard let orderColumn else { continue }
                for (key, members) in changed where !members.keys.isEmpty { orders.append((key, table, orderColumn, members)) }
            }
        }
    }

    /// Whether two rows' attributes are the same as the table holds them: the same names, and each
    /// value's column text byte for byte.
    static func sameAsStored(_ a: [String: Value], _ b: [String: Value]) -> Bool {
        a.count == b.count && a.allSatisfy { name, value in
            guard let other = b[name] else { return false }
            switch (value, other) {
            case (.integer(let x), .integer(let y)): return x == y
            case (.boolean(let x), .boolean(let y)): return x == y
            default: return PostgreSQLValues.text(value).utf8.elementsEqual(PostgreSQLValues.text(other).utf8)
            }
        }
    }

    /// Inserts or replaces the rows of `entity`'s objects with one statement.
    private func upsert(_ entity: String, _ rows: [(ObjectKey, StoredRow)], _ columns: PostgreSQLLayout.EntityColumns) throws {
        guard !rows.isEmpty else { return }
        let layout = columns.entity.layout
        var names = ["pk", "entity", "version"]
        var types = ["bigint", "text", "bigint"]
        var arrays: [[String?]] = [rows.map { String($0.0.primaryKey) }, rows.map { _ in entity }, rows.map { String($0.1.version) }]
        for (slot, attribute) in layout.attributes.enumerated() {
            names.append(PGConnection.quote(columns.attributes[slot]))
            types.append(PostgreSQLLayout.columnType(attribute.type))
            arrays.append(rows.map { $0.1.attributes[attribute.name].map(PostgreSQLValues.text) })
        }
        for (slot, relationship) in layout.toOne.enumerated() {
            names.append(PGConnection.quote(columns.toOne[slot].key))
            names.append(PGConnection.quote(columns.toOne[slot].entity))
            types.append(contentsOf: ["bigint", "text"])
            arrays.append(rows.map { $0.1.relationships[relationship.name]?.first.map { String($0.primaryKey) } })
            arrays.append(rows.map { $0.1.relationships[relationship.name]?.first?.entity })
        }
        let unnest = types.enumerated().map { "$\($0.offset + 1)::\($0.element)[]" }.joined(separator: ", ")
        let updates = names.dropFirst().map { "\($0) = EXCLUDED.\($0)" }.joined(separator: ", ")
        try connection.query("INSERT INTO \(location.qualified(columns.table)) (\(names.joined(separator: ", "))) SELECT * FROM unnest(\(unnest)) "
                             + "ON CONFLICT (pk) DO UPDATE SET \(updates)", arrays.map { .text(Self.array($0)) })
    }

    /// A PostgreSQL array literal of `elements`, each quoted, nil as `NULL`.
    static func array(_ elements: [String?]) -> String {
        var bytes: [UInt8] = [0x7B]
        bytes.reserveCapacity(elements.count * 8 + 2)
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(0x2C) }
            guard let element else {
                bytes.append(contentsOf: [0x4E, 0x55, 0x4C, 0x4C])   // NULL
                continue
            }
            bytes.append(0x22)
            for byte in element.utf8 {
                // A backslash or a double quote is escaped with a backslash.
                if byte == 0x5C || byte == 0x22 { bytes.append(0x5C) }
                bytes.append(byte)
            }
            bytes.append(0x22)
        }
        bytes.append(0x7D)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A PostgreSQL array literal of `elements`, each quoted.
    static func array(_ elements: [String]) -> String { array(elements.map(Optional.some)) }

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
    /// ``scanBatch(_:after:limit:narrowing:)`` of every row.
    func scanBatch(_ entity: EntityDescription, after primaryKey: Int64?, limit: Int, model _: ManagedObjectModel) throws -> RecordBatch {
        try scanBatch(entity.name, after: primaryKey, limit: limit)
    }

    /// A batch of a streaming scan in one statement: keyset pagination (`entity = $1 AND pk > $2
    /// ORDER BY pk LIMIT $3`, on the `(entity, pk)` index), each row's columns read straight into
    /// slots; a to-one whose target no longer exists is left out in SQL (a left join that finds
    /// no target). Memory stays bounded by `limit`.
    ///
    /// With `narrowing` (``narrowing(_:matching:after:)``, after 3), only the rows it selects.
    func scanBatch(_ entity: String, after primaryKey: Int64?, limit: Int, narrowing: Narrowing? = nil) throws -> RecordBatch {
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
        let condition = narrowing.map { " AND (\($0.sql))" } ?? ""
        let page = "SELECT * FROM \(location.qualified(columns.table)) WHERE entity = $1 AND pk > $2\(condition) ORDER BY pk LIMIT $3"
        let rows = try connection.query(
            "SELECT \(select.joined(separator: ", ")) FROM (\(page)) x\(joins) ORDER BY x.pk",
            [.text(entity), .text(String(primaryKey ?? Int64.min)), .text(String(limit))] + (narrowing?.parameters ?? []))
        let width = layout.attributes.count
        let types = layout.attributes.map(\.type)
        for r in 0..<rows.count {
            guard let pk = rows.int64(r, 0), let version = rows.int64(r, 1) else {
                throw StoreError(.corrupt, "a row of \(columns.table) has no key or version", url: location.url)
            }
            let row = batch.appendRow(primaryKey: pk, version: version)
            for slot in 0..<width {
                batch[row, attribute: slot] = try PostgreSQLValues.value(rows, r, 2 + slot, as: types[slot],
                                                                         place: "\(entity)/\(pk).\(layout.attributes[slot].name)")
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
        do {
            try connection.copyIn(try copyStatement(batch)) { send in try copyRows(batch, send: send) }
        } catch let error as PostgreSQLError where error.sqlState == "23505" {
            throw Self.keyInUse(batch.entity, error, location: location, since: "it")
        }
        try moveKeyCounter(batch.entity.rootName, past: batch.primaryKeys.max() ?? 0)
    }

    /// The `COPY … FROM STDIN` statement of a batch of `entity`'s objects (one per entity: the
    /// entity's own columns of its root's table), in the binary format (``PGBinaryCopy``).
    func copyStatement(_ batch: RecordBatch, orders: [String] = []) throws -> String {
        let columns = try columns(batch.entity.name)
        let names = ["pk", "entity", "version"] + columns.attributes.map(PGConnection.quote)
            + columns.toOne.flatMap { [PGConnection.quote($0.key), PGConnection.quote($0.entity)] } + orders.map(PGConnection.quote)
        return "COPY \(location.qualified(columns.table)) (\(names.joined(separator: ", "))) FROM STDIN" + PGBinaryCopy.option
    }

    /// The batch's rows in the format of ``copyStatement(_:orders:)``, handed to `send` in chunks
    /// of about a megabyte; `orders` gives the values of the order columns the statement names
    /// after the to-ones, a list a column, a value or nil a row.
    func copyRows(_ batch: RecordBatch, orders: [[Int64?]] = [], send: (Data) throws -> Void) throws {
        let layout = batch.layout
        let (width, links) = (layout.attributes.count, layout.toOne.count)
        let entity = Array(batch.entity.name.utf8)
        let fields = 3 + width + 2 * links + orders.count
        var targetNames: [String: [UInt8]] = [:]
        var chunk: [UInt8] = []
        chunk.reserveCapacity(1 << 20 + 4096)
        for row in 0..<batch.count {
            PGBinaryCopy.appendFieldCount(fields, to: &chunk)
            PGBinaryCopy.appendBigint(batch.primaryKeys[row], to: &chunk)
            PGBinaryCopy.appendPlainText(entity, to: &chunk)
            PGBinaryCopy.appendBigint(batch.versions[row], to: &chunk)
            for slot in 0..<width {
                if let value = batch[row, attribute: slot] {
                    try PGBinaryCopy.appendValue(value, to: &chunk)
                } else {
                    PGBinaryCopy.appendNull(to: &chunk)
                }
            }
            for slot in 0..<links {
                if let target = batch[row, toOne: slot] {
                    PGBinaryCopy.appendBigint(target.primaryKey, to: &chunk)
                    if targetNames[target.entity] == nil { targetNames[target.entity] = Array(target.entity.utf8) }
                    PGBinaryCopy.appendPlainText(targetNames[target.entity]!, to: &chunk)
                } else {
                    PGBinaryCopy.appendNull(to: &chunk)
                    PGBinaryCopy.appendNull(to: &chunk)
                }
            }
            for column in orders {
                if let order = column[row] { PGBinaryCopy.appendBigint(order, to: &chunk) } else { PGBinaryCopy.appendNull(to: &chunk) }
            }
            if chunk.count >= 1 << 20 {
                try send(Data(chunk))
                chunk.removeAll(keepingCapacity: true)
            }
        }
        if !chunk.isEmpty { try send(Data(chunk)) }
    }

    /// The `COPY … FROM STDIN` statement of a join table's rows (``copyJoinRows(_:_:send:)``).
    func copyJoinStatement(_ table: String) -> String {
        "COPY \(location.qualified(table)) (owner, member, member_entity, position) FROM STDIN" + PGBinaryCopy.option
    }

    /// The join-table rows of `lists` (one per row of `batch`, the owner's), in `COPY`'s binary
    /// format for `(owner, member, member_entity, position)` (``copyJoinStatement(_:)``), handed
    /// to `send` in chunks of about a megabyte; a member's position is its order key in the owner's list.
    func copyJoinRows(_ batch: RecordBatch, _ lists: [OrderedMembers], send: (Data) throws -> Void) throws {
        var chunk: [UInt8] = []
        chunk.reserveCapacity(1 << 20 + 4096)
        var entityNames: [String: [UInt8]] = [:]
        for (row, list) in lists.enumerated() {
            for (index, member) in list.keys.enumerated() {
                PGBinaryCopy.appendFieldCount(4, to: &chunk)
                PGBinaryCopy.appendBigint(batch.primaryKeys[row], to: &chunk)
                PGBinaryCopy.appendBigint(member.primaryKey, to: &chunk)
                if entityNames[member.entity] == nil { entityNames[member.entity] = Array(member.entity.utf8) }
                PGBinaryCopy.appendPlainText(entityNames[member.entity]!, to: &chunk)
                PGBinaryCopy.appendBigint(list.orderKeys[index], to: &chunk)
            }
            if chunk.count >= 1 << 20 {
                try send(Data(chunk))
                chunk.removeAll(keepingCapacity: true)
            }
        }
        if !chunk.isEmpty { try send(Data(chunk)) }
    }

    /// Moves `root`'s key sequence past `highest` when it is behind.
    func moveKeyCounter(_ root: String, past highest: Int64) throws {
        if highest > (try lastKey(root, locking: true)) { try setLastKey(root, highest) }
    }

    /// The error of a copy that broke a primary key: nothing of `what` was written.
    static func keyInUse(_ entity: EntityDescription, _ error: PostgreSQLError, location: PostgreSQLLocation, since what: String) -> StoreError {
        StoreError(.invalidChange, "cannot insert the \(entity.name) batch: a primary key is in use in \(entity.rootName)'s hierarchy "
                   + "(\(error.detail ?? error.message)); nothing of \(what) was written", url: location.url, cause: error)
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
    /// The keys of `entity`'s objects that may match `predicate`, from one SELECT whose WHERE is
    /// the predicate's narrowing (``narrowing(_:matching:after:)``); nil when nothing translates.
    /// The evaluator then tests the whole predicate on what SQL selects.
    func candidateKeys(of entity: String, matching predicate: ObjectPredicate) throws -> [Int64]? {
        guard let (sql, parameters) = try candidateQuery(of: entity, matching: predicate) else { return nil }
        let rows = try connection.query(sql, parameters)
        return (0..<rows.count).compactMap { rows.int64($0, 0) }
    }

    /// The SELECT of ``candidateKeys(of:matching:)``, or nil when nothing of `predicate` translates.
    private func candidateQuery(of entity: String, matching predicate: ObjectPredicate) throws -> (String, [PGParameter?])? {
        guard let narrowing = try narrowing(entity, matching: predicate, after: 1) else { return nil }
        let table = location.qualified(try columns(entity).table)
        return ("SELECT pk FROM \(table) WHERE entity = $1 AND (\(narrowing.sql)) ORDER BY pk", [.text(entity)] + narrowing.parameters)
    }

    /// A condition on one entity's rows that selects every object a predicate matches, and may
    /// select more (``narrowing(_:matching:after:)``).
    struct Narrowing {
        /// The SQL, whose parameters are numbered after the statement's own.
        let sql: String
        /// Its parameters.
        let parameters: [PGParameter?]
    }

    /// The condition on exactly `entity`'s rows that selects every object `predicate` matches:
    /// the predicate in SQL, or its top-level conjuncts that translate; nil when none does. Rows
    /// whose text the condition would read by its bytes in order or in part, where that text is
    /// stored marked, are selected too (their bytes are not their text's). Its parameters are
    /// numbered after the statement's own `reserved` ones. The evaluator then tests each row selected.
    func narrowing(_ entity: String, matching predicate: ObjectPredicate, after reserved: Int) throws -> Narrowing? {
        let compiler = compiler(try columns(entity))
        var parameters = [PGParameter?](repeating: nil, count: reserved)
        var text: Set<String> = []
        guard var sql = compiler.split(predicate, &parameters, &text).condition else { return nil }
        if !text.isEmpty {
            parameters.append(.text(PostgreSQLValues.markedPrefix))
            sql = "(\(sql)) OR " + text.sorted().map { "left(\($0), 1) = $\(parameters.count)" }.joined(separator: " OR ")
        }
        return Narrowing(sql: sql, parameters: Array(parameters.dropFirst(reserved)))
    }

    /// The compiler reading the columns of one entity's own attributes.
    func compiler(_ columns: PostgreSQLLayout.EntityColumns) -> PredicateCompiler<PostgreSQLDialect> {
        compiler { name in
            columns.entity.layout.attributeSlot(name).map { (PGConnection.quote(columns.attributes[$0]), columns.entity.layout.attributes[$0].type) }
        }
    }

    /// The one predicate compiler, for this server, reading columns through `resolve`.
    func compiler(_ resolve: @escaping (String) -> (column: String, type: AttributeType)?) -> PredicateCompiler<PostgreSQLDialect> {
        PredicateCompiler(dialect: PostgreSQLDialect(unicode: unicode), resolve: resolve)
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
        var orderedText: Set<String> = []
        guard let selection = try exactSelection(request, model: model, orderedText: &orderedText),
              let order = try exactOrder(request.sortDescriptors, model: model, request: request, orderedText: &orderedText),
              try !holdsMarkedText(orderedText, selection.kinds.from, selection.kinds.parameters) else { return nil }
        let (from, selected) = (selection.from, selection.parameters)
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
        var orderedText: Set<String> = []
        guard let selection = try exactSelection(request, model: model, orderedText: &orderedText),
              try !holdsMarkedText(orderedText, selection.kinds.from, selection.kinds.parameters) else { return nil }
        let (from, parameters) = (selection.from, selection.parameters)
        let rows = try connection.query("SELECT count(*) \(from)", parameters)
        let total = Int(rows.int64(0, 0) ?? 0)
        return min(max(0, total - max(0, request.fetchOffset)), request.fetchLimit ?? Int.max)
    }

    /// Whether a text column the request orders by, or compares by order, holds a string stored
    /// marked (one with U+0000 or U+FFFF, ``PostgreSQLValues/escape(_:)``) in any object of the
    /// request's entities (`from` selects them all: a comparison by order of the stored bytes could
    /// itself leave such a row out), so such a request is answered in Swift: its bytes are not the string's.
    func holdsMarkedText(_ columns: Set<String>, _ from: String, _ parameters: [PGParameter?]) throws -> Bool {
        guard !columns.isEmpty else { return false }
        let marker = "$\(parameters.count + 1)"
        let marked = columns.sorted().map { "left(\($0), 1) = \(marker)" }.joined(separator: " OR ")
        let rows = try connection.query("SELECT EXISTS (SELECT 1 \(from) AND (\(marked)))", parameters + [.text(PostgreSQLValues.markedPrefix)])
        return rows.text(0, 0) == "t"
    }

    /// `FROM … WHERE …` selecting exactly the objects the request's entity (and sub-entities) and
    /// predicate give, or nil when the predicate has a part SQL does not answer exactly; the text
    /// columns it compares by order are added to `orderedText`.
    func exactSelection(_ request: FetchRequest, model: ManagedObjectModel, orderedText: inout Set<String>) throws -> Selection? {
        guard let entity = model.entity(named: request.entityName) else { return nil }
        let kinds = (request.includesSubentities ? entity.kindNames : [entity.name]).filter { model.entity(named: $0)?.isAbstract == false }
        guard !kinds.isEmpty, let columns = layout.entities[entity.name], let resolve = try sharedColumns(entity, kinds) else { return nil }
        var parameters: [PGParameter?] = kinds.map { .text($0) }
        var conditions = ["entity IN (" + kinds.indices.map { "$\($0 + 1)" }.joined(separator: ", ") + ")"]
        if let predicate = request.predicate {
            guard let condition = compiler(resolve).condition(predicate, &parameters, &orderedText) else { return nil }
            conditions.append("(\(condition))")
        }
        let table = "FROM \(location.qualified(columns.table)) WHERE "
        return Selection(from: table + conditions.joined(separator: " AND "), parameters: parameters,
                         kinds: (table + conditions[0], Array(parameters.prefix(kinds.count))))
    }

    /// `FROM … WHERE …` and its parameters; `kinds`, the same over every object of the request's
    /// entities, whatever the predicate.
    struct Selection {
        let from: String
        let parameters: [PGParameter?]
        let kinds: (from: String, parameters: [PGParameter?])
    }

    /// The column and type of each attribute of `entity`, when every kind read keeps it in the same column.
    func sharedColumns(_ entity: EntityDescription, _ kinds: [String]) throws -> ((String) -> (column: String, type: AttributeType)?)? {
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

    /// ORDER BY terms giving ``ValueOrdering/total(_:_:)``'s order for each descriptor (a missing
    /// value first, a NaN before other numbers, strings by their UTF-8 bytes), or nil when a key is
    /// not an attribute of a kind SQL orders exactly.
    private func exactOrder(_ descriptors: [ObjectSortDescriptor], model: ManagedObjectModel, request: FetchRequest,
                            orderedText: inout Set<String>) throws -> [String]? {
        guard let entity = model.entity(named: request.entityName) else { return nil }
        let kinds = (request.includesSubentities ? entity.kindNames : [entity.name]).filter { model.entity(named: $0)?.isAbstract == false }
        guard let resolve = try sharedColumns(entity, kinds) else { return nil }
        return compiler(resolve).order(descriptors, &orderedText)
    }
}
