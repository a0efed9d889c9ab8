import Foundation
import ObjectModel
import ObjectStore

extension SQLiteStore: RuleNarrowing {
    /// One SELECT per page: the rows whose columns are NULL where a value is required, out of
    /// bounds, out of length, or of a storage class the attribute's type does not give. String
    /// lengths are counted in characters (grapheme clusters), which SQLite does not count: where a
    /// minimum length above 1 applies, text with other than ASCII, or with a carriage return, is
    /// always given, and checked by the caller.
    public func objectsThatMayBreakRules(of entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord]? {
        try withReader { reader in
            guard let description = model.entity(named: entity), let mapping = reader.schema.entities[entity],
                  let condition = Self.ruleCondition(description, columns: mapping.attributes) else { return nil }
            // Every row of the entity is tested: read the table in key order, not each row through the Z_ENT index.
            return try reader.records(reader.select(table: mapping.table, kinds: [mapping.number], condition: "t.Z_PK > ?1 AND (\(condition))",
                                                    arguments: [.integer(primaryKey ?? Int64.min)], limit: limit, scanning: true))
        }
    }

    /// The SQL condition (on alias `t`) a row that may break one of `entity`'s attribute rules meets,
    /// or nil when a rule cannot be put in SQL; `FALSE` when there is no rule.
    static func ruleCondition(_ entity: EntityDescription, columns: [String: String]) -> String? {
        var conditions: [String] = []
        for attribute in entity.layout.attributes where !attribute.isOptional || attribute.validation != ValidationRules() {
            guard let name = columns[attribute.name], attribute.validation.pattern == nil else { return nil }
            let c = "t.\(quote(name))"
            let rules = attribute.validation
            let classes: [String]
            switch attribute.type {
            case .integer16, .integer32, .integer64, .boolean: classes = ["integer"]
            case .double, .float, .date: classes = ["real", "integer"]
            case .string: classes = ["text"]
            case .binaryData where !attribute.allowsExternalBinaryDataStorage: classes = ["blob"]
            default:
                // Stored in a form of their own (decimals, UUIDs, external data…): only a required one is said here.
                guard rules == ValidationRules() else { return nil }
                if !attribute.isOptional { conditions.append("\(c) IS NULL") }
                continue
            }
            // A value of a storage class the type does not give, or none where one is required.
            let allowed = (attribute.isOptional ? ["null"] : []) + classes
            conditions.append(allowed.count == 1 ? "typeof(\(c)) != '\(allowed[0])'" : "typeof(\(c)) NOT IN (\(allowed.map { "'\($0)'" }.joined(separator: ", ")))")
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
            // Bounds on the length in bytes, which SQLite knows without counting characters. A
            // string has no more characters than bytes, and none only when it has no bytes: a
            // maximum, or a minimum of 1, is told by the bytes alone. A larger minimum may be broken
            // by text of more bytes than characters: anything but ASCII, and CR LF (one character),
            // are given too (NUL included: SQLite's `length` stops there).
            let bytes = "length(CAST(\(c) AS BLOB))"
            if let range = outside(bytes, rules.minLength.map(String.init), rules.maxLength.map(String.init)) { conditions.append(range) }
            if attribute.type == .string, let min = rules.minLength, min > 1 {
                // Where the length in bytes must be `min` exactly (the term above), text of as many
                // characters as bytes has `min` characters.
                conditions.append("length(\(c)) != \(rules.maxLength == min ? String(min) : bytes)")
                conditions.append("instr(\(c), char(13)) > 0")
            }
        }
        return conditions.isEmpty ? "0" : conditions.joined(separator: " OR ")
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
