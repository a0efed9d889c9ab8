import Foundation
import ObjectModel
import ObjectStore

/// Reads records through a connection, for one store.
///
/// `@unchecked Sendable`: used by one thread at a time — the store's own reader inside the
/// store's `Mutex`, a pooled one while one call holds it (``SQLiteStore``'s reader pool), never two.
final class SQLiteReader: @unchecked Sendable {
    let connection: SQLiteConnection
    /// Whether the history table was found in the file (``SQLiteHistory/append(_:_:tableKnown:)``).
    var historyTableKnown = false
    let schema: SQLiteSchema
    let model: ManagedObjectModel
    /// Where the values of attributes with external storage are, and how their columns hold them.
    let external: SQLiteExternalData
    /// Whether the connection stays in one read transaction (a snapshot's): what a read found
    /// then holds for as long as the reader does.
    var readsOneMoment = false
    /// The tables every row of which names its table's only concrete entity (``rowsNoReadSees(limit:)``
    /// found none that does not, at the moment this reader reads): their rows' entity is known
    /// without reading their `Z_ENT`. Kept only by a reader that reads one moment.
    private var tablesOfOneEntity: [String: Int] = [:]
    /// Counts of every object of an entity, by their SQL, read once by a reader that reads one moment.
    private var counts: [String: Int] = [:]
    /// The SELECT list of each table: its columns, in schema order.
    private var selectLists: [String: (sql: String, index: [String: Int32])] = [:]

    /// How to turn a row of one entity into a record, worked out once.
    private struct DecodePlan {
        let name: String
        let attributes: [(name: String, type: AttributeType, column: Int32, external: Bool)]
        let toOne: [(name: String, destination: String, key: Int32, entity: Int32?)]
    }
    private var plans: [Int: DecodePlan] = [:]

    init(connection: SQLiteConnection, schema: SQLiteSchema, model: ManagedObjectModel, external: SQLiteExternalData) {
        self.connection = connection
        self.schema = schema
        self.model = model
        self.external = external
        for table in schema.tables.values where !table.name.hasPrefix("Z_") {
            let names = table.columns.map(\.name)
            selectLists[table.name] = (names.map { "t." + quote($0) }.joined(separator: ", "),
                                       Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, Int32($0)) }))
        }
        for (name, mapping) in schema.entities {
            guard let description = model.entity(named: name), let index = selectLists[mapping.table]?.index else { continue }
            plans[mapping.number] = DecodePlan(
                name: name,
                attributes: mapping.attributes.compactMap { attribute, column in
                    description.attributesByName[attribute].map { (attribute, $0.type, index[column]!, $0.allowsExternalBinaryDataStorage) }
                }.sorted { $0.column < $1.column },
                toOne: mapping.toOne.compactMap { relationship, columns in
                    description.relationshipsByName[relationship].map {
                        (relationship, $0.destination, index[columns.key]!, columns.entity.map { index[$0]! })
                    }
                }.sorted { $0.key < $1.key })
        }
    }


    /// An INSERT of every column of an entity's table, with where each value goes.
    struct InsertPlan {
        let sql: String
        let width: Int
        let attributes: [String: (index: Int, type: AttributeType)]
        let toOne: [String: (key: Int, entity: Int?)]
        /// The to-one relationships whose rows' order keys in their inverse's ordered list the
        /// table holds (``SQLiteSchema/inverseOrderColumn(of:in:)``), and where.
        let inverseOrder: [String: Int]
    }
    private var insertPlans: [Int: InsertPlan] = [:]

    func insertPlan(for number: Int) -> InsertPlan {
        if let plan = insertPlans[number] { return plan }
        let name = schema.byNumber[number]!
        let mapping = schema.entities[name]!
        let description = model.entity(named: name)!
        var columns = ["Z_PK", "Z_ENT", "Z_OPT"]
        var attributes: [String: (Int, AttributeType)] = [:]
        for (attribute, column) in mapping.attributes.sorted(by: { $0.value < $1.value }) {
            attributes[attribute] = (columns.count, description.attributesByName[attribute]!.type)
            columns.append(column)
        }
        var toOne: [String: (Int, Int?)] = [:]
        for (relationship, column) in mapping.toOne.sorted(by: { $0.value.key < $1.value.key }) {
            let key = columns.count
            columns.append(column.key)
            var entity: Int?
            if let entityColumn = column.entity {
                entity = columns.count
                columns.append(entityColumn)
            }
            toOne[relationship] = (key, entity)
        }
        var inverseOrder: [String: Int] = [:]
        for relationship in description.layout.toOne {
            guard let column = schema.inverseOrderColumn(of: relationship, in: mapping) else { continue }
            inverseOrder[relationship.name] = columns.count
            columns.append(column)
        }
        let sql = "INSERT INTO \(quote(mapping.table)) (\(columns.map(quote).joined(separator: ", "))) VALUES (\(columns.indices.map { "?\($0 + 1)" }.joined(separator: ", ")))"
        let plan = InsertPlan(sql: sql, width: columns.count, attributes: attributes, toOne: toOne, inverseOrder: inverseOrder)
        insertPlans[number] = plan
        return plan
    }

    private var cleanups: [Int: [String]] = [:]

    /// The statements (parameter ?1: the primary key) that clear what points to a deleted
    /// object of entity `number`: foreign keys and join rows that reach it, and the rows it
    /// owned through a hidden foreign key or a join table. Worked out once per entity.
    func cleanupStatements(for number: Int) -> [String] {
        if let statements = cleanups[number] { return statements }
        let deleted = model.entity(named: schema.byNumber[number]!)!
        var statements: [String] = []
        for (name, entity) in schema.entities.sorted(by: { $0.value.number < $1.value.number }) {
            let declared = model.entity(named: name)!.declaration
            for relationship in declared.relationships where !relationship.isTransient {
                guard model.entity(named: relationship.destination)?.rootName == deleted.rootName else { continue }
                if !relationship.isToMany, let columns = entity.toOne[relationship.name] {
                    var set = "\(quote(columns.key)) = NULL"
                    if let entityColumn = columns.entity { set += ", \(quote(entityColumn)) = NULL" }
                    statements.append("UPDATE \(quote(entity.table)) SET \(set) WHERE \(quote(columns.key)) = ?1")
                } else if case .join(let table, _, let other, _, _, _)? = entity.toMany[relationship.name] {
                    statements.append("DELETE FROM \(quote(table)) WHERE \(quote(other)) = ?1")
                }
            }
            guard deleted.isKind(of: name) else { continue }
            for relationship in declared.relationships where relationship.isToMany {
                switch entity.toMany[relationship.name] {
                case .hiddenForeignKey(let table, let column, let order)?:
                    statements.append("UPDATE \(quote(table)) SET \(quote(column)) = NULL\(order.map { ", \(quote($0)) = NULL" } ?? "") WHERE \(quote(column)) = ?1")
                case .join(let table, let own, _, _, _, _)?:
                    statements.append("DELETE FROM \(quote(table)) WHERE \(quote(own)) = ?1")
                default: break
                }
            }
        }
        cleanups[number] = statements
        return statements
    }

    private var updateStatements: [String: String] = [:]

    /// The UPDATE of one row for these columns (parameters: ?1 Z_PK, ?2 Z_ENT, then the columns, then the version).
    func updateStatement(table: String, columns: [String], checksVersion: Bool, bumpsVersion: Bool) -> String {
        let key = table + "|" + columns.joined(separator: "|") + (checksVersion ? "|v" : "") + (bumpsVersion ? "|b" : "")
        if let sql = updateStatements[key] { return sql }
        var set = columns.enumerated().map { "\(quote($1)) = ?\($0 + 3)" }
        set.append(bumpsVersion ? "Z_OPT = Z_OPT + 1" : "Z_OPT = Z_OPT")
        var sql = "UPDATE \(quote(table)) SET \(set.joined(separator: ", ")) WHERE Z_PK = ?1 AND Z_ENT = ?2"
        if checksVersion { sql += " AND Z_OPT = ?\(columns.count + 3)" }
        updateStatements[key] = sql
        return sql
    }

    func entity(_ name: String) throws -> SQLiteSchema.Entity {
        guard let entity = schema.entities[name] else { throw StoreError(.invalidFetch, "no entity named \(name)") }
        return entity
    }

    /// A column's value as `type`; for an attribute with external storage, the bytes its tagged
    /// value holds or names (``SQLiteExternalData``).
    private func value(_ sql: SQLValue, as type: AttributeType, external: Bool, at place: @autoclosure () -> String) throws -> Value? {
        let value = try SQLiteValues.value(sql, as: type, at: place(), in: connection.path)
        guard external, case .data(let blob)? = value else { return value }
        return .data(try self.external.read(blob, at: place(), url: URL(filePath: connection.path), connection: connection))
    }

    /// Decodes the current row of a `SELECT <select list> FROM <table> t`.
    private func decode(_ row: Statement, table: String) throws -> ObjectRecord? {
        guard let plan = plans[Int(row.int64(1))] else { return nil }
        var record = ObjectRecord(key: ObjectKey(plan.name, row.int64(0)), version: row.int64(2))
        // Sized once (`reserveCapacity` on a dictionary costs a generic call per row).
        var attributes = [String: Value](minimumCapacity: plan.attributes.count)
        for attribute in plan.attributes {
            let value = try self.value(row.column(attribute.column), as: attribute.type, external: attribute.external,
                                       at: "\(table) row \(record.key.primaryKey), attribute \(plan.name).\(attribute.name)")
            if let value { attributes[attribute.name] = value }
        }
        record.attributes = attributes
        for relationship in plan.toOne {
            guard case .integer(let pk) = row.column(relationship.key) else { continue }
            var target = relationship.destination
            if let entityColumn = relationship.entity, case .integer(let n) = row.column(entityColumn), let actual = schema.byNumber[Int(n)] {
                target = actual
            }
            record.toOne[relationship.name] = ObjectKey(target, pk)
        }
        return record
    }

    /// A SELECT of a table's rows matching an SQL condition (on alias `t`), in the given order (nil: as
    /// SQLite finds them) and window.
    struct Select {
        var table: String
        var sql: String
        var arguments: [SQLValue]
    }

    /// With `scanning`, the kinds are tested on each row of the table rather than found through its
    /// Z_ENT index: for a condition every row of the entity must be tested against, a scan in key
    /// order is cheaper than a lookup of each row.
    func select(table: String, kinds: [Int], condition: String? = nil, arguments: [SQLValue] = [],
                order: String? = "t.Z_PK", limit: Int? = nil, offset: Int = 0, scanning: Bool = false) -> Select {
        var sql = "SELECT \(selectLists[table]!.sql) FROM \(quote(table)) t WHERE \(scanning ? "+" : "")t.Z_ENT IN (\(kinds.map(String.init).joined(separator: ",")))"
        if let condition { sql += " AND (\(condition))" }
        if let order { sql += " ORDER BY \(order)" }
        var arguments = arguments
        if limit != nil || offset > 0 {
            // Bound, not written into the SQL: a paginated read prepares one statement, not one per page.
            sql += " LIMIT ?\(arguments.count + 1) OFFSET ?\(arguments.count + 2)"
            arguments += [.integer(Int64(limit ?? -1)), .integer(Int64(offset))]
        }
        return Select(table: table, sql: sql, arguments: arguments)
    }

    func records(_ select: Select) throws -> [ObjectRecord] {
        try connection.statement(select.sql).rows(select.arguments) { try decode($0, table: select.table) }.compactMap { $0 }
    }

    func records(table: String, kinds: [Int], condition: String? = nil, arguments: [SQLValue] = [],
                 order: String = "t.Z_PK", limit: Int? = nil, offset: Int = 0) throws -> [ObjectRecord] {
        try records(select(table: table, kinds: kinds, condition: condition, arguments: arguments, order: order, limit: limit, offset: offset))
    }

    func record(for key: ObjectKey) throws -> ObjectRecord? {
        guard let entity = schema.entities[key.entity] else { return nil }
        return try records(table: entity.table, kinds: [entity.number], condition: "t.Z_PK = ?1", arguments: [.integer(key.primaryKey)]).first
    }

    /// The keys among `keys` whose rows are there with their entity's number (as ``record(for:)``
    /// finds them), 500 at a time per entity, from the table's key alone.
    func existingKeys(among keys: [ObjectKey]) throws -> Set<ObjectKey> {
        var found: Set<ObjectKey> = []
        let most = 500
        for (name, group) in Dictionary(grouping: keys, by: \.entity) {
            guard let entity = schema.entities[name] else { continue }
            let sql = "SELECT Z_PK FROM \(quote(entity.table)) WHERE Z_ENT = \(entity.number) AND Z_PK IN ("
                + (1...most).map { "?\($0)" }.joined(separator: ",") + ")"
            let primaryKeys = Array(Set(group.map(\.primaryKey)))
            for start in stride(from: 0, to: primaryKeys.count, by: most) {
                // One statement for every part: the last part is filled up with its first key again.
                var part = primaryKeys[start..<min(start + most, primaryKeys.count)].map { SQLValue.integer($0) }
                part += Array(repeating: part[0], count: most - part.count)
                found.formUnion(try connection.statement(sql).rows(part) { ObjectKey(name, $0.int64(0)) })
            }
        }
        return found
    }

    func relatedKeys(of key: ObjectKey, relationship name: String) throws -> [ObjectKey] {
        try orderedMembers(of: key, relationship: name).keys
    }

    /// The members of a relationship, with the order keys of an ordered to-many as its order
    /// column holds them (``OrderedMembers/append(_:orderKey:)``).
    func orderedMembers(of key: ObjectKey, relationship name: String) throws -> OrderedMembers {
        try orderedMembers(of: [key], relationship: name)[0]
    }

    /// ``orderedMembers(of:relationship:)`` of many owners: for a to-many one statement per entity and
    /// 500 owners (members without an order number, added from the other side, come last in key
    /// order); for a to-one each owner's row.
    func orderedMembers(of keys: [ObjectKey], relationship name: String) throws -> [OrderedMembers] {
        var found: [ObjectKey: OrderedMembers] = [:]
        for (entityName, owners) in Dictionary(grouping: keys, by: \.entity) {
            let entity = try self.entity(entityName)
            guard let relationship = model.entity(named: entityName)?.relationshipsByName[name] else {
                throw StoreError(.invalidFetch, "\(entityName) has no relationship named \(name)")
            }
            guard relationship.isToMany else {
                for owner in owners { found[owner] = OrderedMembers(try record(for: owner)?.toOne[name].map { [$0] } ?? []) }
                continue
            }
            guard let storage = entity.toMany[name] else { continue }
            for start in stride(from: 0, to: owners.count, by: 500) {
                let chunk = owners[start..<min(owners.count, start + 500)]
                // Bound, so every full chunk runs one prepared statement.
                let list = (1...chunk.count).map { "?\($0)" }.joined(separator: ",")
                let sql: String
                switch storage {
                case .inverseForeignKey(let table, let column, _, let order), .hiddenForeignKey(let table, let column, let order):
                    // A table of one entity's rows answers from the column's index alone, unless the order is asked for.
                    let entity = tablesOfOneEntity[table].map(String.init) ?? "Z_ENT"
                    sql = "SELECT \(quote(column)), Z_PK, \(entity), \(order.map(quote) ?? "NULL") FROM \(quote(table)) WHERE \(quote(column)) IN (\(list)) "
                        + "ORDER BY \(quote(column)), \(order.map { "\(quote($0)) IS NULL, \(quote($0)), " } ?? "")Z_PK"
                case .join(let table, let own, let other, let order, _, let otherTable):
                    sql = "SELECT j.\(quote(own)), j.\(quote(other)), t.Z_ENT, \(order.map { "j.\(quote($0))" } ?? "NULL") FROM \(quote(table)) j "
                        + "JOIN \(quote(otherTable)) t ON t.Z_PK = j.\(quote(other)) WHERE j.\(quote(own)) IN (\(list)) "
                        + "ORDER BY j.\(quote(own)), \(order.map { "j.\(quote($0)) IS NULL, j.\(quote($0)), " } ?? "")j.\(quote(other))"
                }
                var lists: [Int64: OrderedMembers] = [:]
                let rows = try connection.statement(sql).rows(chunk.map { .integer($0.primaryKey) }) { ($0.int64(0), $0.int64(1), $0.int64(2), $0.optionalInt64(3)) }
                for (owner, pk, number, order) in rows {
                    guard let member = schema.byNumber[Int(number)] else { continue }
                    lists[owner, default: OrderedMembers([])].append(ObjectKey(member, pk), orderKey: order)
                }
                for owner in chunk {
                    let members = lists[owner.primaryKey] ?? OrderedMembers([])
                    found[owner] = relationship.isOrdered ? members : OrderedMembers(members.keys.sorted())
                }
            }
        }
        return keys.map { found[$0] ?? OrderedMembers([]) }
    }

    func scan(entity name: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord] {
        let entity = try self.entity(name)
        return try records(table: entity.table, kinds: [entity.number], condition: "t.Z_PK > ?1",
                           arguments: [.integer(primaryKey ?? Int64.min)], limit: limit)
    }

    /// A batch of ``scan(entity:after:limit:)`` narrowed by the part of `predicate` SQL answers
    /// exactly: every object that matches it is among them.
    func scan(entity name: String, narrowedBy predicate: ObjectPredicate, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord] {
        let entity = try self.entity(name)
        let plan = SQLiteQuery(entity: name, schema: schema, model: model).plan(predicate)
        return try records(table: entity.table, kinds: [entity.number],
                           condition: "t.Z_PK > ?\(plan.arguments.count + 1)" + (plan.sql.map { " AND (\($0))" } ?? ""),
                           arguments: plan.arguments + [.integer(primaryKey ?? Int64.min)], limit: limit)
    }

    /// Where each slot of an entity's layout is in its table's SELECT list, worked out once.
    private struct SlotPlan {
        let attributes: [(column: Int32, type: AttributeType, name: String, external: Bool)]
        let toOne: [(key: Int32, entity: Int32?, destination: String)]
        /// The to-one relationships whose rows' order keys in their inverse's ordered list the
        /// table holds (``SQLiteSchema/inverseOrderColumn(of:in:)``), and where.
        let inverseOrder: [(name: String, column: Int32)]
    }
    private var slotPlans: [Int: SlotPlan] = [:]

    private func slotPlan(_ entity: SQLiteSchema.Entity, _ layout: EntityLayout) -> SlotPlan {
        if let plan = slotPlans[entity.number] { return plan }
        let index = selectLists[entity.table]!.index
        let plan = SlotPlan(
            attributes: layout.attributes.map { (index[entity.attributes[$0.name]!]!, $0.type, $0.name, $0.allowsExternalBinaryDataStorage) },
            toOne: layout.toOne.map { relationship in
                let columns = entity.toOne[relationship.name]!
                return (index[columns.key]!, columns.entity.map { index[$0]! }, relationship.destination)
            },
            inverseOrder: layout.toOne.compactMap { relationship in
                schema.inverseOrderColumn(of: relationship, in: entity).map { (relationship.name, index[$0]!) }
            })
        slotPlans[entity.number] = plan
        return plan
    }

    /// ``scan(entity:after:limit:)`` read straight into slots, with the rows' order keys in the
    /// ordered lists their to-ones' targets hold them in (``RecordBatch/inverseOrderKeys``).
    func scanBatch(entity name: String, after primaryKey: Int64?, limit: Int) throws -> RecordBatch {
        let entity = try self.entity(name)
        let description = model.entity(named: name)!
        let plan = slotPlan(entity, description.layout)
        let select = select(table: entity.table, kinds: [entity.number], condition: "t.Z_PK > ?1",
                            arguments: [.integer(primaryKey ?? Int64.min)], limit: limit)
        var batch = RecordBatch(entity: description, capacity: limit)
        // A column's keys are given only when each is an integer or NULL: another value (a real, a
        // text) sorts as itself, not as the integer it reads as.
        var orderKeys: [[Int64?]?] = plan.inverseOrder.map { _ in [] }
        try connection.statement(select.sql).forEachRow(select.arguments) { row in
            try append(row, to: &batch, plan, table: entity.table)
            for (i, order) in plan.inverseOrder.enumerated() where orderKeys[i] != nil {
                switch row.column(order.column) {
                case .integer(let key): orderKeys[i]!.append(key)
                case .null: orderKeys[i]!.append(nil)
                default: orderKeys[i] = nil
                }
            }
        }
        for (i, order) in plan.inverseOrder.enumerated() { if let keys = orderKeys[i] { batch.setInverseOrderKeys(order.name, keys) } }
        return batch
    }

    /// Adds the object of the current row (of `plan`'s entity) to `batch`, values by slot.
    private func append(_ row: Statement, to batch: inout RecordBatch, _ plan: SlotPlan, table: String) throws {
        let r = batch.appendRow(primaryKey: row.int64(0), version: row.int64(2))
        for (slot, attribute) in plan.attributes.enumerated() {
            batch[r, attribute: slot] = try value(
                row.column(attribute.column), as: attribute.type, external: attribute.external,
                at: "\(table) row \(batch.primaryKeys[r]), attribute \(batch.entity.name).\(attribute.name)")
        }
        for (slot, link) in plan.toOne.enumerated() {
            guard case .integer(let pk) = row.column(link.key) else { continue }
            var target = link.destination
            if let entityColumn = link.entity, case .integer(let n) = row.column(entityColumn), let actual = schema.byNumber[Int(n)] {
                target = actual
            }
            batch[r, toOne: slot] = ObjectKey(target, pk)
        }
    }

    /// ``fetch(_:)`` read straight into slots, a batch of consecutive objects of one entity at a
    /// time, when one SELECT gives the rows in their final order; else the records laid out.
    func fetchBatches(_ request: FetchRequest, batchSize: Int, _ body: (RecordBatch) throws -> Void) throws {
        let plan = try fetchPlan(request)
        guard !plan.finishesInSwift, !plan.ordersKeysInSwift else {
            return try RecordBatch.runs(of: fetch(request), batchSize: batchSize, in: model, body)
        }
        let size = max(1, batchSize)
        var batch: RecordBatch?
        var current: (number: Int, plan: SlotPlan)?
        try connection.statement(plan.select.sql).forEachRow(plan.select.arguments) { row in
            let number = Int(row.int64(1))
            if current?.number != number || batch!.count >= size {
                if let full = batch { try body(full) }
                // Rows of no entity of the model are skipped, as the record form skips them.
                guard let name = schema.byNumber[number], let mapping = schema.entities[name],
                      let description = model.entity(named: name), plans[number] != nil else {
                    batch = nil
                    current = nil
                    return
                }
                current = (number, slotPlan(mapping, description.layout))
                batch = RecordBatch(entity: description, capacity: size)
            }
            try append(row, to: &batch!, current!.plan, table: plan.select.table)
        }
        if let last = batch { try body(last) }
    }

    // MARK: Fetch

    /// How a fetch runs: one SELECT, and what is left for Swift (a residual predicate, a sort
    /// SQL cannot do the evaluator's way, and then the window; or only putting the rows in key order).
    private struct FetchPlan {
        var select: Select
        var residual: ObjectPredicate?
        var finishesInSwift: Bool
        var ordersKeysInSwift = false
    }

    private func fetchPlan(_ request: FetchRequest) throws -> FetchPlan {
        let entity = try self.entity(request.entityName)
        if let predicate = request.predicate, let description = model.entity(named: request.entityName) {
            try PredicateEvaluator.check(predicate, on: description, in: model)
        }
        let kinds = request.includesSubentities ? entity.kinds : [entity.number]
        let query = SQLiteQuery(entity: request.entityName, schema: schema, model: model)
        let plan = query.plan(request.predicate)
        // Key order, spelled `+t.Z_PK` under a condition: SQLite may then find the rows through an
        // index on the condition and sort the few it finds, instead of reading the whole table in key order.
        let keyOrder = plan.sql == nil ? "t.Z_PK" : "+t.Z_PK"
        // With a condition, no sort and no window, SQL gives the rows in the order it finds them (from
        // an index, say) and Swift puts the few it found in key order: no sort step in SQLite's plan.
        if plan.residual == nil, plan.sql != nil, request.sortDescriptors.isEmpty, request.fetchLimit == nil, request.fetchOffset <= 0 {
            return FetchPlan(select: select(table: entity.table, kinds: kinds, condition: plan.sql, arguments: plan.arguments, order: nil),
                             residual: nil, finishesInSwift: false, ordersKeysInSwift: true)
        }
        let order = request.sortDescriptors.isEmpty ? keyOrder : query.order(request.sortDescriptors)
        if plan.residual == nil, let order {
            return FetchPlan(select: select(table: entity.table, kinds: kinds, condition: plan.sql, arguments: plan.arguments,
                                            order: order, limit: request.fetchLimit, offset: max(0, request.fetchOffset)),
                             residual: nil, finishesInSwift: false)
        }
        return FetchPlan(select: select(table: entity.table, kinds: kinds, condition: plan.sql, arguments: plan.arguments, order: keyOrder),
                         residual: plan.residual, finishesInSwift: true)
    }

    func fetch(_ request: FetchRequest) throws -> [ObjectRecord] {
        let plan = try fetchPlan(request)
        guard plan.finishesInSwift else {
            var found = try records(plan.select)
            if plan.ordersKeysInSwift, !found.indices.dropFirst().allSatisfy({ found[$0 - 1].key.primaryKey < found[$0].key.primaryKey }) {
                found.sort { $0.key.primaryKey < $1.key.primaryKey }
            }
            return found
        }
        // Narrowed with SQL, finished in Swift with the shared semantics.
        var subjects = try records(plan.select).map { SQLiteSubject(record: $0, reader: self) }
        if let residual = plan.residual {
            subjects = try subjects.filter { try PredicateEvaluator.evaluate(residual, on: $0) }
        }
        try PredicateEvaluator.sort(&subjects, by: request.sortDescriptors) { $0.record.key.primaryKey < $1.record.key.primaryKey }
        return subjects.dropFirst(max(0, request.fetchOffset)).prefix(request.fetchLimit ?? Int.max).map(\.record)
    }

    /// SQLite's plan for the SELECT a fetch runs (`EXPLAIN QUERY PLAN`), one line per step.
    func queryPlan(_ request: FetchRequest) throws -> [String] {
        let select = try fetchPlan(request).select
        return try connection.statement("EXPLAIN QUERY PLAN " + select.sql).rows(select.arguments) { row in
            if case .text(let detail) = row.column(3) { return detail }
            return ""
        }
    }

    func count(_ request: FetchRequest) throws -> Int {
        let entity = try self.entity(request.entityName)
        let kinds = request.includesSubentities ? entity.kinds : [entity.number]
        let plan = SQLiteQuery(entity: request.entityName, schema: schema, model: model).plan(request.predicate)
        guard plan.residual == nil else {
            var unsorted = request
            unsorted.sortDescriptors = []
            return try fetch(unsorted).count
        }
        var sql = "SELECT COUNT(*) FROM \(quote(entity.table)) t WHERE t.Z_ENT IN (\(kinds.map(String.init).joined(separator: ",")))"
        if let condition = plan.sql { sql += " AND (\(condition))" }
        let total: Int
        if plan.sql == nil, readsOneMoment {
            // Every object of a table of one entity: the rows, which SQLite counts from its smallest
            // index; and, at one moment, counted once.
            if let only = tablesOfOneEntity[entity.table], kinds == [only] { sql = "SELECT COUNT(*) FROM \(quote(entity.table))" }
            if let known = counts[sql] { total = known } else {
                total = Int(try connection.statement(sql).rows { $0.int64(0) }.first ?? 0)
                counts[sql] = total
            }
        } else {
            total = Int(try connection.statement(sql).rows(plan.arguments) { $0.int64(0) }.first ?? 0)
        }
        return min(max(0, total - max(0, request.fetchOffset)), request.fetchLimit ?? Int.max)
    }
}

/// A SQLite record as predicates see it; relationships are read on demand.
struct SQLiteSubject: PredicateSubject {
    let record: ObjectRecord
    let reader: SQLiteReader

    var identity: Value { .string(record.key.description) }

    func resolve(_ key: String) throws -> ResolvedKey? {
        guard let entity = reader.model.entity(named: record.key.entity) else { return nil }
        if entity.attributesByName[key] != nil { return .value(record.attributes[key]) }
        guard let relationship = entity.relationshipsByName[key] else { return nil }
        if relationship.isToMany {
            let keys = try reader.relatedKeys(of: record.key, relationship: key)
            return .objects(try keys.compactMap { try reader.record(for: $0) }.map { SQLiteSubject(record: $0, reader: reader) })
        }
        let target = try record.toOne[key].flatMap { try reader.record(for: $0) }
        return .object(target.map { SQLiteSubject(record: $0, reader: reader) })
    }
}

extension SQLiteReader {
    /// Rows of the entity tables no fetch sees: a `Z_ENT` of no concrete entity of the table
    /// (NULL included), or a key below 1; at most `limit` (all when nil).
    func rowsNoReadSees(limit: Int?) throws -> [String] {
        var found: [String] = []
        let bound = limit.map { " LIMIT \($0)" } ?? ""
        for table in schema.tables.values.sorted(by: { $0.name < $1.name }) where !table.name.hasPrefix("Z_") {
            let concrete = schema.entities.values.filter { $0.table == table.name && model.entity(named: $0.name)?.isAbstract == false }
            let numbers = concrete.map { String($0.number) }.sorted().joined(separator: ",")
            // In the order of the table's Z_ENT index, which answers alone where there is one (a
            // quarter of a scan of the rows): the entity numbers the index holds, which fetches by
            // entity read. A row whose number in the table disagrees with its index entry is damage
            // that `validate --deep` (SQLite's integrity_check) reports.
            let strays = try connection.statement("SELECT Z_PK, Z_ENT FROM \(quote(table.name)) WHERE Z_ENT NOT IN (\(numbers)) OR Z_ENT IS NULL ORDER BY Z_ENT, Z_PK\(bound)")
                .rows { "\(table.name) row \($0.int64(0)) has Z_ENT \($0.int64(1)), which is no concrete entity of this table: no fetch sees it" }
            if readsOneMoment, strays.isEmpty, concrete.count == 1 { tablesOfOneEntity[table.name] = concrete[0].number }
            found += strays
            found += try connection.statement("SELECT Z_PK FROM \(quote(table.name)) WHERE Z_PK <= 0 ORDER BY Z_PK\(bound)")
                .rows { "\(table.name) row \($0.int64(0)) has a primary key below 1" }
            if let limit, found.count >= limit { return Array(found.prefix(limit)) }
        }
        return found
    }

    /// What reads alone do not see: rows of no concrete entity of their table (they are
    /// invisible to every fetch), keys that are not positive, foreign keys and join rows
    /// naming rows that do not exist, and, `deep`, SQLite's own `integrity_check`.
    func integrityProblems(deep: Bool) throws -> [String] {
        var problems: [String] = []
        func add(_ rows: [String], limit: Int = 40) {
            problems += rows.prefix(limit)
            if rows.count > limit { problems.append("… and \(rows.count - limit) more like it") }
        }
        if deep {
            let lines = try connection.statement("PRAGMA integrity_check").rows { row -> String in
                if case .text(let line) = row.column(0) { return line }
                return "?"
            }
            if lines != ["ok"] { add(lines.map { "SQLite integrity_check: \($0)" }) }
        }
        add(try rowsNoReadSees(limit: nil))
        // Every key at or below its hierarchy's counter: a key above it would be handed out again.
        for root in model.entityDescriptions where root.parent == nil {
            guard let mapping = schema.entities[root.name] else { continue }
            let counter = try connection.statement("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?1").rows([.integer(Int64(mapping.number))]) { $0.int64(0) }.first
            guard let counter else {
                problems.append("Z_PRIMARYKEY has no row for \(root.name): its keys have no counter")
                continue
            }
            let kinds = mapping.kinds.map(String.init).joined(separator: ",")
            add(try connection.statement("SELECT Z_PK FROM \(quote(mapping.table)) WHERE Z_ENT IN (\(kinds)) AND Z_PK > ?1 ORDER BY Z_PK")
                .rows([.integer(counter)]) { "\(mapping.table) row \($0.int64(0)) has a key above \(root.name)'s counter in Z_PRIMARYKEY (\(counter)): the next insert would reuse it" })
        }
        for entity in schema.entities.values.sorted(by: { $0.number < $1.number }) {
            guard let description = model.entity(named: entity.name) else { continue }
            for relationship in description.declaration.relationships where !relationship.isTransient && relationship.isToMany {
                guard case .join(let table, let own, let other, _, _, let otherTable)? = entity.toMany[relationship.name] else { continue }
                add(try connection.statement("SELECT j.\(quote(own)), j.\(quote(other)) FROM \(quote(table)) j LEFT JOIN \(quote(otherTable)) t "
                                             + "ON t.Z_PK = j.\(quote(other)) WHERE t.Z_PK IS NULL")
                    .rows { "\(table): \(entity.name)/\($0.int64(0)).\(relationship.name) names row \($0.int64(1)) of \(otherTable), which does not exist" })
            }
        }
        return problems
    }
}