import Foundation
import ObjectModel
import ObjectStore

extension SQLiteStore: RuleNarrowing {
    /// One SELECT per page: the rows whose columns are NULL where a value is required, out of
    /// bounds, out of length, or of a storage class the attribute's type does not give. String
    /// lengths are counted in characters (grapheme clusters), which SQLite does not count: text
    /// with other than ASCII, or with a carriage return, is always given, and checked by the caller.
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
            for (bound, op) in [(rules.minValue, "<"), (rules.maxValue, ">")] {
                guard let bound else { continue }
                switch bound {
                case .integer(let v): conditions.append("\(c) \(op) \(v)")
                case .double(let v) where v.isFinite: conditions.append("\(c) \(op) \(String(format: "%.17g", v))")
                case .date(let d) where d.timeIntervalSinceReferenceDate.isFinite:
                    conditions.append("\(c) \(op) \(String(format: "%.17g", d.timeIntervalSinceReferenceDate))")
                default: return nil
                }
            }
            guard rules.minLength != nil || rules.maxLength != nil else { continue }
            // Bounds on the length in bytes, which SQLite knows without reading the text. A string
            // has no more characters than bytes, and none only when it has no bytes: a maximum, or
            // a minimum of 1, is told by the bytes alone. A larger minimum may be broken by text of
            // more bytes than characters: anything but ASCII, and CR LF (one character), are given
            // too (NUL included: SQLite's `length` stops there).
            let bytes = "length(CAST(\(c) AS BLOB))"
            var length: [String] = []
            if let max = rules.maxLength { length.append("\(bytes) > \(max)") }
            if let min = rules.minLength {
                length.append("\(bytes) < \(min)")
                if attribute.type == .string && min > 1 {
                    length.append("length(\(c)) != \(bytes)")
                    length.append("instr(\(c), char(13)) > 0")
                }
            }
            conditions.append("(\(c) IS NOT NULL AND (\(length.joined(separator: " OR "))))")
        }
        return conditions.isEmpty ? "0" : conditions.joined(separator: " OR ")
    }
}
