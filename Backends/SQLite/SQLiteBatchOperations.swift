import Foundation
import ObjectModel
import ObjectStore

/// Batch update and delete in SQL, in one write transaction with its history record, no record
/// read: the keys (and a delete's partners, for the history) by a SELECT of the same condition,
/// then one UPDATE, or for a delete one statement per relationship whose partners let go and one
/// DELETE of the rows (a SELECT and then the change cost less than the change's `RETURNING`).
/// What SQL cannot do exactly as the contract says falls back to the record path (``PersistentStore/recordBatchUpdate(_:set:author:)``): a predicate SQL cannot answer
/// alone, an attribute with external storage or in a uniqueness constraint (update), a cascade
/// or deny rule, external storage, or a relationship without an inverse reaching the doomed
/// objects (delete).
extension SQLiteStore {
    public func batchUpdate(_ request: FetchRequest, set values: [String: Value?], author: String?) throws -> Int {
        let description = try checkBatchUpdate(request, set: values)
        guard let mapping = schema.entities[description.name] else { throw StoreError(.invalidFetch, "no entity named \(request.entityName)") }
        if let predicate = request.predicate { try PredicateEvaluator.check(predicate, on: description, in: model) }
        let plan = SQLiteQuery(entity: description.name, schema: schema, model: model).plan(request.predicate)
        let constrained = Set(model.entityDescriptions.filter { $0.rootName == description.rootName }.flatMap { $0.uniquenessConstraints.flatMap(\.properties) })
        guard plan.residual == nil,
              values.keys.allSatisfy({ !constrained.contains($0) && description.attributesByName[$0]?.allowsExternalBinaryDataStorage == false }) else {
            return try recordBatchUpdate(request, set: values, author: author)
        }
        let kinds = request.includesSubentities ? mapping.kinds : [mapping.number]
        let names = values.keys.sorted()
        // The values first (?1 …), the condition's own parameters after them.
        let arguments: [SQLValue] = names.map { name in
            let attribute = description.attributesByName[name]!
            return SQLiteValues.sql(values[name]!, textDecimal: attribute.type == .decimal && schema.isTextDecimal(description.name, name))
        } + plan.arguments
        let assignments = names.enumerated().map { "\(quote(mapping.attributes[$1]!)) = ?\($0 + 1)" } + ["Z_OPT = Z_OPT + 1"]
        let kindTest = "t.Z_ENT IN (\(kinds.map(String.init).joined(separator: ",")))"
        // The SELECT binds the condition's parameters alone; the UPDATE the values, then them.
        let selecting = kindTest + (plan.sql.map { " AND (\($0))" } ?? "")
        let updating = kindTest + (plan.sql.map { " AND (\(Self.renumbered($0, by: names.count)))" } ?? "")
        var updated: [UpdatedObject] = []
        try write(recording: {
            historyPolicy.records && !updated.isEmpty ? HistoryRecord(author: author ?? historyPolicy.author, updated: updated) : nil
        }) { writer in
            // The keys first (a plain SELECT costs less than the UPDATE's RETURNING), then the UPDATE.
            updated = try writer.connection.statement("SELECT t.Z_PK, t.Z_ENT FROM \(quote(mapping.table)) t WHERE \(selecting)").rows(plan.arguments) { row in
                UpdatedObject(key: ObjectKey(schema.byNumber[Int(row.int64(1))] ?? description.name, row.int64(0)), properties: names)
            }
            guard !updated.isEmpty else { return }
            try writer.connection.statement("UPDATE \(quote(mapping.table)) AS t SET \(assignments.joined(separator: ", ")) WHERE \(updating)").run(arguments)
        }
        return updated.count
    }

    public func batchDelete(_ request: FetchRequest, author: String?) throws -> Int {
        guard let description = model.entity(named: request.entityName), let mapping = schema.entities[description.name] else {
            throw StoreError(.invalidFetch, "no entity named \(request.entityName)")
        }
        if let predicate = request.predicate { try PredicateEvaluator.check(predicate, on: description, in: model) }
        let plan = SQLiteQuery(entity: description.name, schema: schema, model: model).plan(request.predicate)
        let kinds = request.includesSubentities ? mapping.kinds : [mapping.number]
        let doomedEntities = kinds.compactMap { schema.byNumber[$0].flatMap(model.entity(named:)) }
        guard plan.residual == nil, sqlCanDelete(doomedEntities) else { return try recordBatchDelete(request, author: author) }

        var deleted: [ObjectKey] = []
        var partners: [ObjectKey: Set<String>] = [:]
        try write(recording: {
            guard historyPolicy.records, !deleted.isEmpty else { return nil }
            return HistoryRecord(author: author ?? historyPolicy.author, updated: partners.map { UpdatedObject(key: $0.key, properties: $0.value.sorted()) },
                                 deleted: deleted)
        }) { writer in
            let connection = writer.connection
            // The doomed rows, as a condition each statement evaluates again: earlier statements
            // change only foreign keys and join rows, never the attributes it reads.
            var condition = "t.Z_ENT IN (\(kinds.map(String.init).joined(separator: ",")))"
            if let sql = plan.sql { condition += " AND (\(sql))" }
            func doomed(_ number: Int) -> String { "(SELECT t.Z_PK FROM \(quote(mapping.table)) t WHERE \(condition) AND t.Z_ENT = \(number))" }
            /// Notes each row's partner (column 0 its key, column 1 its Z_ENT or NULL) as updated by `property`.
            func note(_ sql: String, _ property: String, _ destination: String) throws {
                var seen: Set<Int64> = []
                try connection.statement(sql).forEachRow(plan.arguments) { row in
                    let key = row.int64(0)
                    guard seen.insert(key).inserted else { return }
                    let entity = row.column(1) == .null ? destination : (schema.byNumber[Int(row.int64(1))] ?? destination)
                    partners[ObjectKey(entity, key), default: []].insert(property)
                }
            }
            // Every partner's side first, while the doomed rows are there to find them by.
            var partnerColumns: [(column: String, entity: String?, inverse: String, destination: String)] = []
            for entity in doomedEntities {
                let own = schema.entities[entity.name]!
                for relationship in entity.relationships where !relationship.isTransient {
                    guard let inverse = relationship.inverse else { continue }
                    if !relationship.isToMany, let columns = own.toOne[relationship.name] {
                        // The partner's to-many (or one-to-one) loses the object: read from the deleted rows below.
                        if !partnerColumns.contains(where: { $0.column == columns.key }) {
                            partnerColumns.append((columns.key, columns.entity, inverse, relationship.destination))
                        }
                        // A one-to-one partner that holds the key itself lets go of it.
                        if let back = model.entity(named: relationship.destination)?.relationshipsByName[inverse], !back.isToMany,
                           let partner = schema.entities[relationship.destination], let backColumns = partner.toOne[inverse] {
                            try connection.statement("UPDATE \(quote(partner.table)) SET \(quote(backColumns.key)) = NULL"
                                                     + (backColumns.entity.map { ", \(quote($0)) = NULL" } ?? "")
                                                     + " WHERE \(quote(backColumns.key)) IN \(doomed(own.number))").run(plan.arguments)
                        }
                        continue
                    }
                    switch own.toMany[relationship.name] {
                    case .inverseForeignKey(let table, let column, let entityColumn, let order)?:
                        var set = "\(quote(column)) = NULL"
                        if let entityColumn { set += ", \(quote(entityColumn)) = NULL" }
                        if let order { set += ", \(quote(order)) = NULL" }
                        try note("SELECT Z_PK, Z_ENT FROM \(quote(table)) WHERE \(quote(column)) IN \(doomed(own.number))", inverse, relationship.destination)
                        try connection.statement("UPDATE \(quote(table)) SET \(set) WHERE \(quote(column)) IN \(doomed(own.number))").run(plan.arguments)
                    case .join(let table, let ownColumn, let other, _, _, let otherTable)?:
                        try note("SELECT o.Z_PK, o.Z_ENT FROM \(quote(otherTable)) o WHERE o.Z_PK IN "
                                 + "(SELECT DISTINCT j.\(quote(other)) FROM \(quote(table)) j WHERE j.\(quote(ownColumn)) IN \(doomed(own.number)))",
                                 inverse, relationship.destination)
                        try connection.statement("DELETE FROM \(quote(table)) WHERE \(quote(ownColumn)) IN \(doomed(own.number))").run(plan.arguments)
                    default:
                        break
                    }
                }
            }
            // Then the rows: their keys and their own to-ones' partners in one pass, then one DELETE.
            let extra = partnerColumns.flatMap { ["t." + quote($0.column), $0.entity.map { "t." + quote($0) } ?? "NULL"] }
            let columns = (["t.Z_PK", "t.Z_ENT"] + extra).joined(separator: ", ")
            var seen = [Set<Int64>](repeating: [], count: partnerColumns.count)
            try connection.statement("SELECT \(columns) FROM \(quote(mapping.table)) t WHERE \(condition)").forEachRow(plan.arguments) { row in
                deleted.append(ObjectKey(schema.byNumber[Int(row.int64(1))] ?? description.name, row.int64(0)))
                for (index, partner) in partnerColumns.enumerated() {
                    let column = Int32(2 + 2 * index)
                    guard row.column(column) != .null, seen[index].insert(row.int64(column)).inserted else { continue }
                    let entity = row.column(column + 1) == .null ? partner.destination : (schema.byNumber[Int(row.int64(column + 1))] ?? partner.destination)
                    partners[ObjectKey(entity, row.int64(column)), default: []].insert(partner.inverse)
                }
            }
            try connection.statement("DELETE FROM \(quote(mapping.table)) AS t WHERE \(condition)").run(plan.arguments)
            // The partners that are themselves deleted are not updated (a relationship within the hierarchy).
            let doomedNames = Set(doomedEntities.map(\.name))
            if partners.keys.contains(where: { doomedNames.contains($0.entity) }) {
                let gone = Set(deleted)
                partners = partners.filter { !gone.contains($0.key) }
            }
        }
        return deleted.count
    }

    /// Whether SQL deletes objects of `entities` exactly as the contract says: their rules are
    /// nullify or no action, they keep no external data files, and every relationship reaching
    /// them from any entity has an inverse (so their own relationships list every partner).
    private func sqlCanDelete(_ entities: [EntityDescription]) -> Bool {
        let roots = Set(entities.map(\.rootName))
        for entity in entities {
            if entity.storedAttributes.contains(where: \.allowsExternalBinaryDataStorage) { return false }
            for relationship in entity.relationships where !relationship.isTransient {
                if relationship.deleteRule == .cascade || relationship.deleteRule == .deny { return false }
                if relationship.inverse == nil { return false }
            }
        }
        for entity in model.entityDescriptions {
            for relationship in entity.relationships where !relationship.isTransient && relationship.inverse == nil {
                if let destination = model.entity(named: relationship.destination), roots.contains(destination.rootName) { return false }
            }
        }
        return true
    }

    /// SQL whose `?n` parameters are moved up by `offset`.
    static func renumbered(_ sql: String, by offset: Int) -> String {
        guard offset > 0 else { return sql }
        return sql.replacing(/\?(\d+)/) { match in "?\(Int(match.output.1)! + offset)" }
    }
}
