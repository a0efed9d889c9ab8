import Foundation
import ObjectModel
import ObjectStore

extension SQLiteStore: RuleNarrowing {
    /// One SELECT per page: the rows whose columns are NULL where a value is required, out of
    /// bounds, out of length or not matching a pattern; whose relationships break a rule; and whose
    /// columns, with a rule or not, hold what the reader refuses (another storage class, an integer
    /// out of range, text that is not UTF-8). Lengths and patterns of text are judged by the
    /// validator's own rules, called from SQL (``SQLiteFunctions``), so a row that obeys every rule
    /// is given only when its values are in a form the reader takes but SQL does not know.
    public func objectsThatMayBreakRules(of entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord]? {
        try objects(of: entity, after: primaryKey, limit: limit) { description, mapping, schema in
            Self.ruleCondition(description, mapping: mapping, schema: schema)
        }
    }

    /// The relationship conditions alone: no value is read again.
    public func objectsThatMayBreakRelationshipRules(of entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord]? {
        try objects(of: entity, after: primaryKey, limit: limit) { description, mapping, schema in
            Self.relationshipConditions(description, mapping: mapping, schema: schema).map { $0.isEmpty ? "0" : $0.joined(separator: " OR ") }
        }
    }

    /// The objects of `entity` after `primaryKey` that meet the condition `condition` gives (nil: none can be said in SQL).
    private func objects(of entity: String, after primaryKey: Int64?, limit: Int,
                         _ condition: (EntityDescription, SQLiteSchema.Entity, SQLiteSchema) -> String?) throws -> [ObjectRecord]? {
        try withReader { reader in
            guard let description = model.entity(named: entity), let mapping = reader.schema.entities[entity],
                  let condition = condition(description, mapping, reader.schema) else { return nil }
            // Every row of the entity is tested: read the table in key order, not each row through the Z_ENT index.
            return try reader.records(reader.select(table: mapping.table, kinds: [mapping.number], condition: "t.Z_PK > ?1 AND (\(condition))",
                                                    arguments: [.integer(primaryKey ?? Int64.min)], limit: limit, scanning: true))
        }
    }

    /// SQLite judges relationship rules too: counts of members as ``orderedMembers(of:relationship:)`` reads them.
    public var narrowsRelationshipRules: Bool { true }

    /// The SQL condition (on alias `t`) a row that may break one of `entity`'s attribute or
    /// relationship rules meets, or nil when a rule cannot be put in SQL; `0` when there is no rule.
    /// Its values are judged in one call (``ValueChecks``): their forms and their attributes' rules.
    /// `scanning`: for a statement that reads the whole table (a required to-one's targets are
    /// then read once, not looked up row by row).
    static func ruleCondition(_ entity: EntityDescription, mapping: SQLiteSchema.Entity, schema: SQLiteSchema, scanning: Bool = false) -> String? {
        var checks: [(check: ValueChecks.Check, column: String)] = []
        for attribute in entity.layout.attributes {
            guard let name = mapping.attributes[attribute.name], let check = ValueChecks.Check(attribute) else { return nil }
            checks.append((check, "t.\(quote(name))"))
        }
        guard let relationships = relationshipConditions(entity, mapping: mapping, schema: schema, scanning: scanning) else { return nil }
        let conditions = (ValueChecks.refused(checks).map { [$0] } ?? []) + relationships
        return conditions.isEmpty ? "0" : conditions.joined(separator: " OR ")
    }

    /// The conditions a row whose relationships break a rule meets: a required to-one without a key,
    /// a to-many whose members (counted as the store reads them: rows of a known entity, join rows
    /// whose member exists) are none where some are required, or fewer or more than its bounds.
    private static func relationshipConditions(_ entity: EntityDescription, mapping: SQLiteSchema.Entity, schema: SQLiteSchema,
                                               scanning: Bool = false) -> [String]? {
        let known = schema.byNumber.keys.sorted().map(String.init).joined(separator: ",")
        var conditions: [String] = []
        for relationship in entity.storedRelationships where ObjectValidator.hasRule(relationship) {
            guard relationship.isToMany else {
                // A required to-one without a key, or whose key names no object the store reads.
                // The object is the one the reader finds: the entity the key's entity column names, else the destination.
                guard let columns = mapping.toOne[relationship.name], let target = schema.entities[relationship.destination] else { return nil }
                let key = "t.\(quote(columns.key))"
                let entity = columns.entity.map { "coalesce(t.\(quote($0)), \(target.number))" } ?? String(target.number)
                // Scanning, the target table's keys are read once per statement into a temporary
                // index each row looks up (a lookup of each row's target in its table reads a page
                // of it each time); a page of a paged narrowing looks up its own rows.
                let exists = !scanning ? "EXISTS (SELECT 1 FROM \(quote(target.table)) o WHERE o.Z_PK = \(key) AND o.Z_ENT = \(entity))"
                    : columns.entity == nil ? "\(key) IN (SELECT Z_PK FROM \(quote(target.table)) WHERE Z_ENT = \(target.number))"
                    : "(\(key), \(entity)) IN (SELECT Z_PK, Z_ENT FROM \(quote(target.table)) WHERE Z_ENT IS NOT NULL)"
                conditions.append("typeof(\(key)) != 'integer' OR NOT \(exists)")
                continue
            }
            // The rows that name the owner (an upper bound of its members, read from an index
            // alone), and the members among them the store reads: rows of a known entity.
            let named: String, members: String
            switch mapping.toMany[relationship.name] {
            case .inverseForeignKey(let table, let column, _, _)?, .hiddenForeignKey(let table, let column, _)?:
                named = "FROM \(quote(table)) x WHERE x.\(quote(column)) = t.Z_PK"
                members = named + " AND x.Z_ENT IN (\(known))"
            case .join(let table, let own, let other, _, _, let otherTable)?:
                named = "FROM \(quote(table)) j WHERE j.\(quote(own)) = t.Z_PK"
                members = "FROM \(quote(table)) j JOIN \(quote(otherTable)) m ON m.Z_PK = j.\(quote(other)) "
                    + "WHERE j.\(quote(own)) = t.Z_PK AND m.Z_ENT IN (\(known))"
            case nil:
                return nil
            }
            if relationship.isOptional && relationship.minCount == 0 {
                // A maximum alone: only an owner named by more rows than that may have too many members.
                let max = relationship.maxCount
                conditions.append("((SELECT count(*) \(named)) > \(max) AND (SELECT count(*) \(members)) > \(max))")
                continue
            }
            // The members counted once: none breaks only a required one; otherwise the bounds.
            var broken: [String] = []
            if relationship.minCount > 0 { broken.append("n < \(relationship.minCount)") }
            if relationship.maxCount > 0 { broken.append("n > \(relationship.maxCount)") }
            let some = broken.isEmpty ? "0" : broken.joined(separator: " OR ")
            conditions.append("(SELECT CASE WHEN n = 0 THEN \(relationship.isOptional ? 0 : 1) ELSE \(some) END FROM (SELECT count(*) AS n \(members)))")
        }
        return conditions
    }

    /// The condition that one of `columns` (on alias `t`, each with its attribute) holds what the
    /// reader refuses (``ValueChecks/Check/init(readable:)``): another storage class, an integer out
    /// of its type's range, a Boolean other than 0 or 1, text that is not UTF-8, a UUID blob not of
    /// 16 bytes; nil when none is asked of (types stored in forms of their own, which only a read judges).
    static func unreadable(_ columns: [(attribute: Attribute, column: String)]) -> String? {
        ValueChecks.refused(columns.map { (ValueChecks.Check(readable: $0.attribute), $0.column) })
    }
}
