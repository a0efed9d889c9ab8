import Foundation
import ObjectModel
import ObjectStore

/// Translates predicates and sort descriptors to SQL that gives exactly `PredicateEvaluator`'s
/// answers, for any engine through its ``SQLDialect``: the one translator of the SQL backends.
///
/// A translated condition holds (is true) exactly where the evaluator says true; where the
/// evaluator says false it is false or NULL, which `WHERE`, `AND` and `OR` read as false. `NOT`
/// makes NULL false first (`NOT COALESCE(…, FALSE)`): the evaluator's logic is two-valued, a
/// comparison with nil is false and its negation true.
///
/// Translated: `AND`, `OR`, `NOT` of translated parts, the constants, and comparisons of an
/// attribute (as `resolve` names its column) with constants of its own kind: nil tests, `==`,
/// `!=`, `<`, `<=`, `>`, `>=`, `IN` and `BETWEEN` where the dialect compares that type exactly;
/// `BEGINSWITH`, `ENDSWITH` and `CONTAINS` on strings; string comparisons with `[c]`/`[d]`, `LIKE`
/// and `MATCHES` where the dialect can call the evaluator. Key paths through relationships,
/// aggregates and quantifiers are the evaluator's.
public struct PredicateCompiler<Dialect: SQLDialect> {
    /// The engine.
    public let dialect: Dialect
    /// The quoted column and the type of an attribute by its name; nil for what has no column of
    /// its own to compare (a key path, a transient attribute, a value kept elsewhere).
    public let resolve: (String) -> (column: String, type: AttributeType)?

    /// A compiler for `dialect`, reading attributes' columns through `resolve`.
    public init(dialect: Dialect, resolve: @escaping (String) -> (column: String, type: AttributeType)?) {
        self.dialect = dialect
        self.resolve = resolve
    }

    /// A predicate's translatable part in SQL, and what the evaluator must still test.
    public struct Split {
        /// The condition, or nil when no part translates.
        public var condition: String?
        /// What the condition does not say, or nil when it says everything.
        public var residual: ObjectPredicate?
    }

    /// `predicate` as one condition when all of it translates; else the translatable conjuncts of a
    /// top-level `AND`, with the rest left as the residual. Parameters go in `parameters`, and the
    /// text columns read by their bytes in order or in part (not by equality) in `textByBytes`.
    public func split(_ predicate: ObjectPredicate?, _ parameters: inout [Dialect.Parameter], _ textByBytes: inout Set<String>) -> Split {
        guard let predicate else { return Split() }
        let (start, known) = (parameters.count, textByBytes)
        if let sql = condition(predicate, &parameters, &textByBytes) { return Split(condition: sql) }
        guard case .and(let parts) = predicate else { return Split(residual: predicate) }
        parameters.removeSubrange(start...)
        textByBytes = known
        var translated: [String] = []
        var rest: [ObjectPredicate] = []
        for part in parts {
            if let sql = compiled(part, &parameters, &textByBytes) {
                translated.append("(\(sql))")
            } else {
                rest.append(part)
            }
        }
        return Split(condition: translated.isEmpty ? nil : translated.joined(separator: " AND "),
                     residual: rest.isEmpty ? nil : rest.count == 1 ? rest[0] : .and(rest))
    }

    /// `predicate` as a condition, or nil when some part is not SQL's; nothing is added to
    /// `parameters` or `textByBytes` then.
    public func condition(_ predicate: ObjectPredicate, _ parameters: inout [Dialect.Parameter], _ textByBytes: inout Set<String>) -> String? {
        compiled(predicate, &parameters, &textByBytes)
    }

    /// ORDER BY terms giving the evaluator's order for `descriptors`, or nil when some key is not
    /// one SQL orders exactly. The caller adds its key column last, as the evaluator breaks ties by key.
    public func order(_ descriptors: [ObjectSortDescriptor], _ textByBytes: inout Set<String>) -> [String]? {
        var terms: [String] = []
        var read: Set<String> = []
        for descriptor in descriptors {
            guard let (column, type) = resolve(descriptor.keyPath),
                  let more = dialect.orderTerms(column, type, ascending: descriptor.ascending) else { return nil }
            if type == .string { read.insert(column) }
            terms += more
        }
        textByBytes.formUnion(read)
        return terms
    }

    // MARK: Translation

    /// Translates, or returns nil with `parameters` and `textByBytes` as they were.
    private func compiled(_ predicate: ObjectPredicate, _ parameters: inout [Dialect.Parameter], _ textByBytes: inout Set<String>) -> String? {
        let (start, known) = (parameters.count, textByBytes)
        guard let sql = translate(predicate, &parameters, &textByBytes) else {
            parameters.removeSubrange(start...)
            textByBytes = known
            return nil
        }
        return sql
    }

    private func translate(_ predicate: ObjectPredicate, _ parameters: inout [Dialect.Parameter], _ textByBytes: inout Set<String>) -> String? {
        switch predicate {
        case .constant(let value):
            return value ? dialect.trueLiteral : dialect.falseLiteral
        case .not(let part):
            return translate(part, &parameters, &textByBytes).map { "NOT COALESCE((\($0)), \(dialect.falseLiteral))" }
        case .and(let parts), .or(let parts):
            let isAnd: Bool
            if case .and = predicate { isAnd = true } else { isAnd = false }
            guard !parts.isEmpty else { return isAnd ? dialect.trueLiteral : dialect.falseLiteral }
            var translated: [String] = []
            for part in parts {
                guard let sql = translate(part, &parameters, &textByBytes) else { return nil }
                translated.append("(\(sql))")
            }
            return translated.joined(separator: isAnd ? " AND " : " OR ")
        case .comparison(let c):
            return comparison(c, &parameters, &textByBytes)
        }
    }

    private func comparison(_ c: Comparison, _ parameters: inout [Dialect.Parameter], _ textByBytes: inout Set<String>) -> String? {
        guard c.quantifier == .direct, case .keyPath(let name) = c.lhs, let (column, type) = resolve(name) else { return nil }
        let operand = dialect.operand(column, type)
        func bind(_ value: Value) -> String {
            parameters.append(dialect.parameter(value, comparedWith: type))
            return dialect.operand(parameter: dialect.placeholder(parameters.count), type)
        }
        // String comparisons SQL has no form of: the evaluator's own code, where the engine can call it.
        if type == .string, case .constant(.string(let s)?) = c.rhs, !c.options.isEmpty || c.op == .like || c.op == .matches {
            guard c.op != .in, c.op != .between else { return nil }
            return bound(.string(s), type, &parameters) { dialect.evaluatorComparison(c.op, c.options, operand, $0) }
        }
        guard c.options.isEmpty else { return nil }
        switch (c.op, c.rhs) {
        case (.equal, .constant(nil)): return "\(operand) IS NULL"
        case (.notEqual, .constant(nil)): return "\(operand) IS NOT NULL"
        case (.notEqual, .constant(let value?)):
            // True where the value is missing or differs: the negation of equality.
            let equal = Comparison(c.lhs, .equal, .constant(value))
            return comparison(equal, &parameters, &textByBytes).map { "NOT COALESCE((\($0)), \(dialect.falseLiteral))" }
        default: break
        }
        if type == .double || type == .float || type == .date {
            return numbers(c, type).flatMap { dialect.numberComparison(column, c.op, $0, &parameters) }
        }
        let ordering: Bool
        switch c.op {
        case .equal, .in: ordering = false
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .between, .beginsWith, .endsWith, .contains: ordering = true
        case .notEqual, .like, .matches: return nil
        }
        guard let constants = constants(c.rhs, op: c.op),
              constants.allSatisfy({ dialect.compares(type, with: $0, ordering: ordering) }) else { return nil }
        if ordering, type == .string { textByBytes.insert(column) }
        switch c.op {
        case .equal, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            let sqlOperator = c.op == .equal ? "=" : c.op.rawValue
            return "\(operand) \(sqlOperator) \(bind(constants[0]))"
        case .in:
            if constants.isEmpty { return dialect.falseLiteral }
            return "\(operand) IN (\(constants.map(bind).joined(separator: ", ")))"
        case .between:
            return "\(operand) BETWEEN \(bind(constants[0])) AND \(bind(constants[1]))"
        case .beginsWith, .endsWith, .contains:
            guard type == .string, case .string(let s) = constants[0] else { return nil }
            // Every text begins with, ends with and contains the empty text.
            if s.isEmpty { return "\(operand) IS NOT NULL" }
            return bound(constants[0], type, &parameters) { dialect.textPart(c.op, operand, $0) }
        case .notEqual, .like, .matches:
            return nil
        }
    }

    /// What `make` builds on `value` bound as a parameter (its bare placeholder); nil, and the
    /// parameter taken back, when it builds nothing.
    private func bound(_ value: Value, _ type: AttributeType, _ parameters: inout [Dialect.Parameter], _ make: (String) -> String?) -> String? {
        parameters.append(dialect.parameter(value, comparedWith: type))
        guard let sql = make(dialect.placeholder(parameters.count)) else {
            parameters.removeLast()
            return nil
        }
        return sql
    }

    /// The constants of a comparison's right side (one, two for `BETWEEN`, any number for `IN`),
    /// none of them nil; nil otherwise.
    private func constants(_ rhs: ObjectStore.PredicateExpression, op: Comparison.Operator) -> [Value]? {
        switch (op, rhs) {
        case (.in, .list(let items)), (.between, .list(let items)):
            var values: [Value] = []
            for item in items {
                guard case .constant(let value?) = item else { return nil }
                values.append(value)
            }
            return op == .between && values.count != 2 ? nil : values
        case (.in, _), (.between, _):
            return nil
        case (_, .constant(let value?)):
            return [value]
        default:
            return nil
        }
    }

    /// The finite numbers a double, float or date attribute is compared with: numbers for the
    /// first two, dates for a date; nil for anything else (NaN included).
    private func numbers(_ c: Comparison, _ type: AttributeType) -> [Double]? {
        switch c.op {
        case .equal, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .between, .in: break
        default: return nil
        }
        guard let constants = constants(c.rhs, op: c.op) else { return nil }
        var numbers: [Double] = []
        for constant in constants {
            let number: Double
            switch (type, constant) {
            case (.double, .double(let d)), (.float, .double(let d)): number = d
            case (.double, .integer(let i)), (.float, .integer(let i)): number = Double(i)
            case (.date, .date(let d)): number = d.timeIntervalSinceReferenceDate
            default: return nil
            }
            guard !number.isNaN else { return nil }
            numbers.append(number)
        }
        return numbers
    }
}
