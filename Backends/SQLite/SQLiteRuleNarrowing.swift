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
            return try reader.records(table: mapping.table, kinds: [mapping.number], condition: "t.Z_PK > ?1 AND (\(condition))",
                                      arguments: [.integer(primaryKey ?? Int64.min)], limit: limit)
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
            if !attribute.isOptional { conditions.append("\(c) IS NULL") }
            let classes: [String]
            switch attribute.type {
            case .integer16, .integer32, .integer64, .boolean: classes = ["integer"]
            case .double, .float, .date: classes = ["real", "integer"]
            case .string: classes = ["text"]
            case .binaryData where !attribute.allowsExternalBinaryDataStorage: classes = ["blob"]
            default:
                // Stored in a form of their own (decimals, UUIDs, external data…): only a required one is said here.
                guard rules == ValidationRules() else { return nil }
                continue
            }
            conditions.append("typeof(\(c)) NOT IN ('null', \(classes.map { "'\($0)'" }.joined(separator: ", ")))")
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
            var length: [String] = []
            if let min = rules.minLength { length.append("length(\(c)) < \(min)") }
            if let max = rules.maxLength { length.append("length(\(c)) > \(max)") }
            if attribute.type == .string {
                // Characters SQLite counts otherwise than Swift: anything but ASCII, and CR LF (one character).
                length.append("length(CAST(\(c) AS BLOB)) != length(\(c))")
                length.append("instr(\(c), char(13)) > 0")
            }
            conditions.append("(\(c) IS NOT NULL AND (\(length.joined(separator: " OR "))))")
        }
        return conditions.isEmpty ? "0" : conditions.joined(separator: " OR ")
    }
}
