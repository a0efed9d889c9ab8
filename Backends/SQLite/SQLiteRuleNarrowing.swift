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
    /// relationship rules meets, or nil when a rule cannot be put in SQL; `FALSE` when there is no rule.
    static func ruleCondition(_ entity: EntityDescription, mapping: SQLiteSchema.Entity, schema: SQLiteSchema) -> String? {
        let columns = mapping.attributes
        var conditions: [String] = []
        for attribute in entity.layout.attributes {
            guard let name = columns[attribute.name] else { return nil }
            let c = "t.\(quote(name))"
            let rules = attribute.validation
            if !attribute.isOptional { conditions.append("\(c) IS NULL") }
            if attribute.type == .string {
                // Text: its storage class, UTF-8, length in characters and pattern in one call of the validator's rules.
                if rules.pattern.map({ $0.contains("\0") || (try? WholeMatch.matcher(for: $0)) == nil }) == true {
                    return nil   // A pattern that is not a regular expression is broken by every value: not narrowed.
                }
                guard rules.minValue == nil, rules.maxValue == nil else { return nil }   // Bounds on text: the validator's to judge.
                conditions.append(textBreaks(c, rules))
                continue
            }
            if attribute.type == .decimal {
                guard let condition = decimalBreaks(c, rules) else { return nil }
                conditions.append(condition)
                continue
            }
            // A value the reader would refuse, whatever the rules: the row is read, and the read says so.
            if let unreadable = unreadable(attribute, c) { conditions.append(unreadable) }
            guard rules != ValidationRules() else { continue }
            switch attribute.type {
            case .integer16, .integer32, .integer64, .boolean, .double, .float, .date: break
            case .binaryData where !attribute.allowsExternalBinaryDataStorage: break
            default: return nil   // Rules on values stored in a form of their own (decimals…): not said in SQL.
            }
            // Each term is NULL for a NULL value, which the type test above judges; every value
            // is read once per term, so a range is one `NOT BETWEEN`, not two comparisons.
            var bounds: [String?] = []
            for bound in [rules.minValue, rules.maxValue] {
                switch bound {
                case nil: bounds.append(nil)
                case .integer(let v)?: bounds.append(String(v))
                case .double(let v)? where v.isFinite: bounds.append(String(format: "%.17g", v))
                case .date(let d)? where d.timeIntervalSinceReferenceDate.isFinite:
                    bounds.append(String(format: "%.17g", d.timeIntervalSinceReferenceDate))
                default: return nil
                }
            }
            if let range = outside(c, bounds[0], bounds[1]) { conditions.append(range) }
            // Data's length in bytes.
            if attribute.type == .binaryData, let range = outside("length(\(c))", rules.minLength.map(String.init), rules.maxLength.map(String.init)) {
                conditions.append(range)
            }
            if rules.pattern != nil { return nil }   // A pattern on what is not text: the validator's to judge.
        }
        guard let relationships = relationshipConditions(entity, mapping: mapping, schema: schema) else { return nil }
        conditions += relationships
        return conditions.isEmpty ? "0" : conditions.joined(separator: " OR ")
    }

    /// The conditions a row whose relationships break a rule meets: a required to-one without a key,
    /// a to-many whose members (counted as the store reads them: rows of a known entity, join rows
    /// whose member exists) are none where some are required, or fewer or more than its bounds.
    private static func relationshipConditions(_ entity: EntityDescription, mapping: SQLiteSchema.Entity, schema: SQLiteSchema) -> [String]? {
        let known = schema.byNumber.keys.sorted().map(String.init).joined(separator: ",")
        var conditions: [String] = []
        for relationship in entity.storedRelationships where ObjectValidator.hasRule(relationship) {
            guard relationship.isToMany else {
                // A required to-one without a key, or whose key names no object the store reads.
                // The object is the one the reader finds: the entity the key's entity column names, else the destination.
                guard let columns = mapping.toOne[relationship.name], let target = schema.entities[relationship.destination] else { return nil }
                let key = "t.\(quote(columns.key))"
                let entity = columns.entity.map { "coalesce(t.\(quote($0)), \(target.number))" } ?? String(target.number)
                conditions.append("typeof(\(key)) != 'integer' OR NOT EXISTS (SELECT 1 FROM \(quote(target.table)) o WHERE o.Z_PK = \(key) AND o.Z_ENT = \(entity))")
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

    /// The condition that column `c` holds what the reader refuses as a value of `attribute`
    /// (``SQLiteValues``): a storage class its type is not written as (a superset: the reader accepts
    /// some others), an integer out of its type's range, a Boolean other than 0 or 1, text that is
    /// not UTF-8, a UUID blob not of 16 bytes. Nil for types stored in forms of their own (decimals,
    /// URIs, transformables, external data), which only a read judges.
    static func unreadable(_ attribute: Attribute, _ c: String) -> String? {
        switch attribute.type {
        case .integer16, .integer32:
            let range = attribute.type.integerRange!
            return "typeof(\(c)) NOT IN ('integer', 'null') OR \(c) NOT BETWEEN \(range.lowerBound) AND \(range.upperBound)"
        case .integer64: return "typeof(\(c)) NOT IN ('integer', 'null')"
        case .boolean: return "typeof(\(c)) NOT IN ('integer', 'null') OR \(c) NOT IN (0, 1)"
        case .double, .float, .date: return "typeof(\(c)) NOT IN ('real', 'integer', 'null')"
        case .string: return textBreaks(c, ValidationRules())
        case .binaryData where !attribute.allowsExternalBinaryDataStorage: return "typeof(\(c)) NOT IN ('blob', 'null')"
        case .uuid: return "typeof(\(c)) NOT IN ('blob', 'null') OR (typeof(\(c)) = 'blob' AND length(\(c)) != 16)"
        default: return nil
        }
    }

    /// The SQL condition that text column `c` holds what the reader refuses (another storage class,
    /// bytes that are not UTF-8) or a text that breaks `rules`' length or pattern.
    private static func textBreaks(_ c: String, _ rules: ValidationRules) -> String {
        let pattern = rules.pattern.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" } ?? "NULL"
        return "\(SQLiteFunctions.text)(\(c), \(rules.minLength.map(String.init) ?? "NULL"), "
            + "\(rules.maxLength.map(String.init) ?? "NULL"), \(pattern)) = 0"
    }

    /// The SQL condition (a superset) that decimal column `c` holds a value that breaks `rules`'
    /// bounds or that only the reader judges, or nil when the rules cannot be put so. A decimal is
    /// stored as an integer where one holds it, else as a double where one holds it exactly
    /// (`SQLiteValues`), else as its text: text and infinities are named for the reader. Numbers
    /// are compared with each bound's nearest double moved one step outwards: a double below the
    /// minimum rounds to no more than the minimum's double, and an integer below it is below that
    /// double and half a step, so every value beyond a bound is named, and a few at it, checked in Swift.
    private static func decimalBreaks(_ c: String, _ rules: ValidationRules) -> String? {
        guard rules.minLength == nil, rules.maxLength == nil, rules.pattern == nil else { return nil }
        var terms = ["typeof(\(c)) IN ('text', 'blob')", "\(c) IN (9e999, -9e999)"]
        for (bound, comparison) in [(rules.minValue, "<="), (rules.maxValue, ">=")] {
            guard let bound else { continue }
            let number: Double? = switch bound {
            case .decimal(let d): Double(d.description)
            case .integer(let i): Double(i)
            case .double(let d): d
            default: nil
            }
            guard let number, number.isFinite else { return nil }
            let looser = comparison == "<=" ? number.nextUp : number.nextDown
            guard looser.isFinite else { return nil }
            terms.append("\(c) \(comparison) \(String(format: "%.17g", looser))")
        }
        return terms.joined(separator: " OR ")
    }

    /// The SQL condition that `value` lies outside `min...max` (either bound may be missing), or nil when neither is given.
    private static func outside(_ value: String, _ min: String?, _ max: String?) -> String? {
        switch (min, max) {
        case let (min?, max?): "\(value) NOT BETWEEN \(min) AND \(max)"
        case let (min?, nil): "\(value) < \(min)"
        case let (nil, max?): "\(value) > \(max)"
        case (nil, nil): nil
        }
    }
}
