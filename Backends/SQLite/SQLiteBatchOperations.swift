import Foundation
import ObjectModel
import ObjectStore

/// Batch update and delete in SQL: one `UPDATE … RETURNING` or a handful of statements over a
/// temporary table of the doomed keys, in one write transaction with its history record; no
/// record is read. What SQL cannot do exactly as the contract says falls back to the record
/// path (``PersistentStore/recordBatchUpdate(_:set:author:)``): a predicate SQL cannot answer
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
        var arguments: [SQLValue] = names.map { name in
            let attribute = description.attributesByName[name]!
            return SQLiteValues.sql(values[name]!, textDecimal: attribute.type == .decimal && schema.isTextDecimal(description.name, name))
        }
        arguments += plan.arguments
        let assignments = names.enumerated().map { "\(quote(mapping.attributes[$1]!)) = ?\($0 + 1)" } + ["Z_OPT = Z_OPT + 1"]
        var condition = "t.Z_ENT IN (\(kinds.map(String.init).joined(separator: ",")))"
        if let sql = plan.sql { condition += " AND (\(Self.renumbered(sql, by: names.count)))" }
        var updated: [UpdatedObject] = []
        try write(recording: {
            historyPolicy.records && !updated.isEmpty ? HistoryRecord(author: author ?? historyPolicy.author, updated: updated) : nil
        }) { writer in
            let sql = "UPDATE \(quote(mapping.table)) AS t SET \(assignments.joined(separator: ", ")) WHERE \(condition) RETURNING Z_PK, Z_ENT"
            updated = try writer.connection.statement(sql).rows(arguments) { row in
                UpdatedObject(key: ObjectKey(schema.byNumber[Int(row.int64(1))] ?? description.name, row.int64(0)), properties: names)
            }
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
            try connection.execute("CREATE TEMP TABLE IF NOT EXISTS os_doomed (pk INTEGER PRIMARY KEY, ent INTEGER NOT NULL)")
            try connection.execute("DELETE FROM temp.os_doomed")
            var select = "INSERT INTO temp.os_doomed SELECT t.Z_PK, t.Z_ENT FROM \(quote(mapping.table)) t WHERE t.Z_ENT IN (\(kinds.map(String.init).joined(separator: ",")))"
            if let sql = plan.sql { select += " AND (\(sql))" }
            try connection.statement(select).run(plan.arguments)
            deleted = try connection.statement("SELECT pk, ent FROM temp.os_doomed ORDER BY pk").rows { row in
                ObjectKey(schema.byNumber[Int(row.int64(1))] ?? description.name, row.int64(0))
            }
            guard !deleted.isEmpty else { return }
            func note(_ sql: String, _ property: String, _ fallbackEntity: String) throws {
                try connection.statement(sql).forEachRow { row in
                    let entity = row.column(1) == .null ? fallbackEntity : (schema.byNumber[Int(row.int64(1))] ?? fallbackEntity)
                    partners[ObjectKey(entity, row.int64(0)), default: []].insert(property)
                }
            }
            for entity in doomedEntities {
                let doomed = "(SELECT pk FROM temp.os_doomed WHERE ent = \(schema.entities[entity.name]!.number))"
                for relationship in entity.relationships where !relationship.isTransient {
                    guard let inverse = relationship.inverse else { continue }
                    let own = schema.entities[entity.name]!
                    if !relationship.isToMany, let columns = own.toOne[relationship.name] {
                        // The partner's to-many (or one-to-one) loses the object; its row keeps its values.
                        let target = model.entity(named: relationship.destination)
                        let targetEntity = columns.entity.map { "t.\(quote($0))" } ?? String(schema.entities[relationship.destination]!.number)
                        try note("SELECT DISTINCT t.\(quote(columns.key)), \(targetEntity) FROM \(quote(own.table)) t WHERE t.Z_PK IN \(doomed) AND t.\(quote(columns.key)) IS NOT NULL",
                                 inverse, target?.name ?? relationship.destination)
                        // A one-to-one partner that holds the key itself lets go of it.
                        if let back = target?.relationshipsByName[inverse], !back.isToMany,
                           let partner = schema.entities[relationship.destination], let backColumns = partner.toOne[inverse] {
                            try connection.execute("UPDATE \(quote(partner.table)) SET \(quote(backColumns.key)) = NULL"
                                                   + (backColumns.entity.map { ", \(quote($0)) = NULL" } ?? "") + " WHERE \(quote(backColumns.key)) IN \(doomed)")
                        }
                        continue
                    }
                    switch own.toMany[relationship.name] {
                    case .inverseForeignKey(let table, let column, let entityColumn, let order)?:
                        try note("SELECT Z_PK, Z_ENT FROM \(quote(table)) WHERE \(quote(column)) IN \(doomed)", inverse, relationship.destination)
                        var set = "\(quote(column)) = NULL"
                        if let entityColumn { set += ", \(quote(entityColumn)) = NULL" }
                        if let order { set += ", \(quote(order)) = NULL" }
                        try connection.execute("UPDATE \(quote(table)) SET \(set) WHERE \(quote(column)) IN \(doomed)")
                    case .join(let table, let ownColumn, let other, _, _, let otherTable)?:
                        try note("SELECT DISTINCT j.\(quote(other)), o.Z_ENT FROM \(quote(table)) j JOIN \(quote(otherTable)) o ON o.Z_PK = j.\(quote(other)) "
                                 + "WHERE j.\(quote(ownColumn)) IN \(doomed)", inverse, relationship.destination)
                        try connection.execute("DELETE FROM \(quote(table)) WHERE \(quote(ownColumn)) IN \(doomed)")
                    default:
                        break
                    }
                }
            }
            // The partners that are themselves deleted are not updated.
            for key in deleted { partners[key] = nil }
            try connection.execute("DELETE FROM \(quote(mapping.table)) WHERE Z_PK IN (SELECT pk FROM temp.os_doomed)")
            try connection.execute("DELETE FROM temp.os_doomed")
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
