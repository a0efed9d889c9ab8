import Foundation
import ObjectModel
import ObjectStore
import Relational

/// SQLite as the predicate compiler's engine (``PredicateCompiler``): values as ``SQLiteValues``
/// stores them, text compared by its UTF-8 bytes (`BINARY`), and the evaluator itself as an SQL
/// function (`objectstore_string`) for string comparisons with options, `LIKE` and `MATCHES`.
struct SQLiteDialect: SQLDialect {
    func placeholder(_ number: Int) -> String { "?\(number)" }

    var trueLiteral: String { "1" }
    var falseLiteral: String { "0" }

    func parameter(_ value: Value, comparedWith type: AttributeType) -> SQLValue {
        switch value {
        // A zero to compare with is 0.0, whatever its sign (as ``operand(_:_:)`` reads a stored -0.0).
        case .double(let d) where d == 0: .real(0)
        case .date(let d) where d.timeIntervalSinceReferenceDate == 0: .real(0)
        default: SQLiteValues.sql(value)
        }
    }

    func compares(_ type: AttributeType, with value: Value, ordering: Bool) -> Bool {
        switch (type, value) {
        case (.integer16, .integer), (.integer32, .integer), (.integer64, .integer): true
        // The evaluator compares `Double(integer)` with the double, which rounds integers past 2^53;
        // SQLite compares exactly. Below 2^53 in magnitude the rounding cannot cross the constant.
        case (.integer16, .double(let d)), (.integer32, .double(let d)), (.integer64, .double(let d)): d.magnitude < 0x1p53
        case (.string, .string), (.uuid, .uuid), (.binaryData, .data): true
        case (.boolean, .boolean): !ordering
        default: false
        }
    }

    /// A stored Double, Float or Date as the number it is: -0.0 is kept as an 8-byte blob
    /// (`SQLiteValues`), which SQL would order after every number; numerically it is 0.
    func operand(_ column: String, _ type: AttributeType) -> String {
        guard type == .double || type == .float || type == .date else { return column }
        return "(CASE WHEN typeof(\(column)) = 'blob' THEN 0.0 ELSE \(column) END)"
    }

    /// On the bare column, so that SQLite can answer it from an index. Values are stored as
    /// numbers, NaN as text and -0.0 as an 8-byte blob (`SQLiteValues`); SQLite orders every number
    /// before every text and every text before every blob. So a bound below keeps NaN out by
    /// itself, a bound above is closed with `< ''` (below every text), and -0.0, numerically 0, is
    /// added by equality with its blob where 0 is in the range.
    func numberComparison(_ column: String, _ op: Comparison.Operator, _ numbers: [Double], _ parameters: inout [SQLValue]) -> String? {
        func bind(_ d: Double) -> String {
            parameters.append(.real(d == 0 ? 0 : d))   // a zero bound is 0.0, whatever its sign
            return "?\(parameters.count)"
        }
        func orMinusZero(_ sql: String, if zeroMatches: Bool) -> String {
            guard zeroMatches else { return sql }
            parameters.append(SQLiteValues.sql(.double(-0.0)))
            return "(\(sql)) OR \(column) = ?\(parameters.count)"
        }
        switch op {
        case .equal: return orMinusZero("\(column) = \(bind(numbers[0]))", if: numbers[0] == 0)
        case .lessThan: return orMinusZero("\(column) < \(bind(numbers[0]))", if: 0 < numbers[0])
        case .lessThanOrEqual: return orMinusZero("\(column) <= \(bind(numbers[0]))", if: 0 <= numbers[0])
        case .greaterThan: return orMinusZero("\(column) > \(bind(numbers[0])) AND \(column) < ''", if: 0 > numbers[0])
        case .greaterThanOrEqual: return orMinusZero("\(column) >= \(bind(numbers[0])) AND \(column) < ''", if: 0 >= numbers[0])
        case .between:
            let (low, high) = (numbers[0], numbers[1])
            return orMinusZero("\(column) BETWEEN \(bind(low)) AND \(bind(high))", if: low <= 0 && 0 <= high)
        case .in:
            if numbers.isEmpty { return "0" }
            return orMinusZero("\(column) IN (\(numbers.map(bind).joined(separator: ", ")))", if: numbers.contains(0))
        default: return nil
        }
    }

    /// On the text's bytes (`CAST … AS BLOB`): SQLite's `length` and `substr` of text stop at a
    /// U+0000, a blob's do not; and in UTF-8 a text's bytes begin with, end with or contain another
    /// text's bytes exactly where its scalars do.
    func textPart(_ op: Comparison.Operator, _ operand: String, _ placeholder: String) -> String? {
        let (text, part) = ("CAST(\(operand) AS BLOB)", "CAST(\(placeholder) AS BLOB)")
        switch op {
        case .beginsWith: return "substr(\(text), 1, length(\(part))) = \(part)"
        case .endsWith: return "(length(\(text)) >= length(\(part)) AND substr(\(text), -length(\(part))) = \(part))"
        case .contains: return "instr(\(text), \(part)) > 0"
        default: return nil
        }
    }

    func evaluatorComparison(_ op: Comparison.Operator, _ options: Comparison.Options, _ operand: String, _ placeholder: String) -> String? {
        switch op {
        case .equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .beginsWith, .endsWith, .contains, .like, .matches:
            "\(SQLiteFunctions.stringComparison)('\(op.rawValue)', \(options.rawValue), \(operand), \(placeholder))"
        case .in, .between: nil
        }
    }

    func orderTerms(_ column: String, _ type: AttributeType, ascending: Bool) -> [String]? {
        switch type {
        case .decimal, .double, .float, .transformable, .undefined, .objectID, .uri: return nil
        default: break
        }
        let direction = ascending ? "ASC" : "DESC"
        var terms: [String] = []
        if type == .date {
            // As the evaluator orders dates: nil, then NaN (kept as text), then the others.
            terms.append("(CASE WHEN \(column) IS NULL THEN 0 WHEN typeof(\(column)) = 'text' THEN 1 ELSE 2 END) \(direction)")
        }
        terms.append("\(operand(column, type)) \(direction)")
        return terms
    }

    /// Integers, Booleans and strings (the binary collation orders UTF-8 bytes, as ``ValueOrdering``
    /// does). Not floating-point values, which the store keeps NaN and -0 of in forms of their own, nor dates.
    func aggregatesExactly(_ type: AttributeType) -> Bool {
        [.integer16, .integer32, .integer64, .boolean, .string].contains(type)
    }
}

/// A fetch's predicate and sort for one entity of a SQLite store, in SQL where SQL gives exactly
/// ``PredicateEvaluator``'s answers (``PredicateCompiler`` with ``SQLiteDialect``); the rest is left
/// for Swift. Columns are read as `t."column"`.
struct SQLiteQuery {
    let entity: String
    let schema: SQLiteSchema
    let model: ManagedObjectModel

    struct Plan {
        var sql: String?
        var arguments: [SQLValue] = []
        var residual: ObjectPredicate?
    }

    private var compiler: PredicateCompiler<SQLiteDialect> {
        let (entity, schema, model) = (entity, schema, model)
        return PredicateCompiler(dialect: SQLiteDialect()) { keyPath in
            // An attribute with external storage holds tagged values (or file names): compared in Swift, on the values.
            guard !keyPath.contains("."), let attribute = model.entity(named: entity)?.attributesByName[keyPath], !attribute.isTransient,
                  !attribute.allowsExternalBinaryDataStorage,
                  let column = schema.entities[entity]?.attributes[keyPath] else { return nil }
            return ("t.\(quote(column))", attribute.type)
        }
    }

    func plan(_ predicate: ObjectPredicate?) -> Plan {
        var arguments: [SQLValue] = []
        var text: Set<String> = []   // SQLite compares text by its bytes as stored: nothing to check
        let split = compiler.split(predicate, &arguments, &text)
        return Plan(sql: split.condition, arguments: arguments, residual: split.residual)
    }

    /// An ORDER BY clause, or nil when some key cannot be sorted by SQL the way Swift sorts.
    func order(_ descriptors: [ObjectSortDescriptor]) -> String? {
        var text: Set<String> = []
        return compiler.order(descriptors, &text).map { ($0 + ["t.Z_PK"]).joined(separator: ", ") }
    }
}
