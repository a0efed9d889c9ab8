import Foundation
import ObjectModel
import ObjectStore
import Relational

/// PostgreSQL as the predicate compiler's engine (``PredicateCompiler``), for the layout of
/// docs/postgresql-layout.md: integers in `bigint`, doubles, floats and dates in `double
/// precision` (NaN and -0.0 as they are), UUIDs in `uuid`, Booleans in `boolean`, and text
/// compared by its UTF-8 bytes (`COLLATE "C"`) on a UTF-8 server only (`unicode`).
///
/// A string holding U+0000 or U+FFFF is stored marked (``PostgreSQLValues/escape(_:)``): equal
/// strings are stored alike, but a marked string's bytes do not order or contain as its text does.
/// So a constant that would be marked is compared by equality only, and the caller checks the
/// columns compared by order or in part (the compiler's `textByBytes`) for marked rows.
struct PostgreSQLDialect: SQLDialect {
    /// Whether the server's encoding is UTF-8 (else no text comparison is SQL's).
    let unicode: Bool

    func placeholder(_ number: Int) -> String { "$\(number)" }

    func parameter(_ value: Value, comparedWith type: AttributeType) -> PGParameter? {
        PostgreSQLValues.parameter(value)
    }

    func compares(_ type: AttributeType, with value: Value, ordering: Bool) -> Bool {
        switch (type, value) {
        case (.integer16, .integer), (.integer32, .integer), (.integer64, .integer): true
        case (.boolean, .boolean), (.uuid, .uuid): !ordering
        case (.string, .string(let s)): unicode && (!ordering || PostgreSQLValues.escape(s) == s)
        default: false
        }
    }

    /// In parentheses: `BETWEEN`'s bounds take no `COLLATE` bare.
    func operand(_ column: String, _ type: AttributeType) -> String {
        type == .string ? "(\(column) COLLATE \"C\")" : column
    }

    func operand(parameter placeholder: String, _ type: AttributeType) -> String {
        type == .string ? "(\(placeholder)::text COLLATE \"C\")" : placeholder
    }

    /// `double precision` compares -0.0 equal to 0 and orders NaN above every number, so only the
    /// comparisons a NaN could pass keep it out.
    func numberComparison(_ column: String, _ op: Comparison.Operator, _ numbers: [Double], _ parameters: inout [PGParameter?]) -> String? {
        func bind(_ d: Double) -> String {
            parameters.append(PostgreSQLValues.double(d == 0 ? 0 : d))
            return "$\(parameters.count)"
        }
        let notNaN = "\(column) <> 'NaN'"
        switch op {
        case .equal: return "\(column) = \(bind(numbers[0]))"
        case .lessThan: return "\(column) < \(bind(numbers[0]))"
        case .lessThanOrEqual: return "\(column) <= \(bind(numbers[0]))"
        case .greaterThan: return "\(column) > \(bind(numbers[0])) AND \(notNaN)"
        case .greaterThanOrEqual: return "\(column) >= \(bind(numbers[0])) AND \(notNaN)"
        case .between: return "\(column) BETWEEN \(bind(numbers[0])) AND \(bind(numbers[1])) AND \(notNaN)"
        case .in:
            if numbers.isEmpty { return falseLiteral }
            return "\(column) IN (\(numbers.map(bind).joined(separator: ", ")))"
        default: return nil
        }
    }

    func textPart(_ op: Comparison.Operator, _ operand: String, _ placeholder: String) -> String? {
        let text = "\(placeholder)::text"
        switch op {
        case .beginsWith: return "starts_with(\(operand), \(text))"
        case .endsWith: return "right(\(operand), length(\(text))) = \(text) COLLATE \"C\""
        case .contains: return "strpos(\(operand), \(text)) > 0"
        default: return nil
        }
    }

    /// A missing value first, a NaN before other numbers, strings by their UTF-8 bytes as stored
    /// (the evaluator's order wherever it is one: two spellings of one text, NFC and NFD, are equal
    /// to it, yet sort by their bytes against others).
    func orderTerms(_ column: String, _ type: AttributeType, ascending: Bool) -> [String]? {
        let (up, down) = ascending ? ("ASC", "DESC") : ("DESC", "ASC")
        let present = "(\(column) IS NOT NULL) \(up)"
        switch type {
        case .integer16, .integer32, .integer64, .boolean: return [present, "\(column) \(up)"]
        case .double, .float, .date: return [present, "(\(column) = 'NaN') \(down)", "\(column) \(up)"]
        case .string where unicode: return [present, "\(column) COLLATE \"C\" \(up)"]
        default: return nil
        }
    }

    /// Integers and Booleans. Not text, whose stored bytes may be escaped; nor floating-point values and dates.
    func aggregatesExactly(_ type: AttributeType) -> Bool {
        [.integer16, .integer32, .integer64, .boolean].contains(type)
    }

    func extreme(_ function: AggregateFunction, _ column: String, _ type: AttributeType) -> String {
        guard type == .boolean else { return "\(function.rawValue)(\(column))" }
        return function == .min ? "bool_and(\(column))" : "bool_or(\(column))"
    }

    /// As text: `sum` of `bigint` is `numeric`, exact past 64 bits, which the reader then refuses.
    func exactSum(_ column: String) -> String { "sum(\(column))::text" }

    func groupOrder(_ column: String) -> String { "\(column) ASC NULLS FIRST" }
}
