import Foundation
import ObjectModel
import ObjectStore

/// Translates predicates and sort descriptors to SQL where SQL gives exactly
/// the answers ``PredicateEvaluator`` gives; what it cannot translate is left
/// for Swift.
///
/// Translated: comparisons of an attribute of the fetched entity with a
/// constant of its own kind (`==`, `!=`, `<`, `<=`, `>`, `>=`, `IN`, `BETWEEN`,
/// nil tests), `BEGINSWITH`/`ENDSWITH`/`CONTAINS`, string comparisons with
/// `[c]`/`[d]`, `LIKE` and `MATCHES` (through `objectstore_string`, an SQL
/// function that calls the evaluator), `AND`, `OR`, `NOT` over translated parts,
/// and the constants. Everything else (key paths through relationships,
/// aggregates, quantifiers) is evaluated in Swift on the rows the translated
/// conjuncts select.
struct SQLiteQuery {
    let entity: String
    let schema: SQLiteSchema
    let model: ManagedObjectModel

    struct Plan {
        var sql: String?
        var arguments: [SQLValue] = []
        var residual: ObjectPredicate?
    }

    func plan(_ predicate: ObjectPredicate?) -> Plan {
        guard let predicate else { return Plan() }
        var arguments: [SQLValue] = []
        if let sql = translate(predicate, &arguments) { return Plan(sql: sql, arguments: arguments) }
        // Push the translatable conjuncts of a top-level AND down; keep the rest.
        guard case .and(let parts) = predicate else { return Plan(residual: predicate) }
        var sqlParts: [String] = []
        var rest: [ObjectPredicate] = []
        arguments = []
        for part in parts {
            let mark = arguments.count
            if let sql = translate(part, &arguments) {
                sqlParts.append(sql)
            } else {
                arguments.removeSubrange(mark...)
                rest.append(part)
            }
        }
        return Plan(sql: sqlParts.isEmpty ? nil : sqlParts.joined(separator: " AND "), arguments: arguments,
                    residual: rest.count == 1 ? rest[0] : .and(rest))
    }

    /// An ORDER BY clause, or nil when some key cannot be sorted by SQL the way Swift sorts.
    func order(_ descriptors: [ObjectSortDescriptor]) -> String? {
        var terms: [String] = []
        for descriptor in descriptors {
            guard let (column, type) = column(descriptor.keyPath) else { return nil }
            switch type {
            case .decimal, .double, .float, .transformable, .undefined, .objectID, .uri: return nil
            default: break
            }
            let direction = descriptor.ascending ? "ASC" : "DESC"
            if type == .date {
                // As the evaluator orders dates: nil, then NaN (kept as text), then the others.
                let c = "t.\(quote(column))"
                terms.append("(CASE WHEN \(c) IS NULL THEN 0 WHEN typeof(\(c)) = 'text' THEN 1 ELSE 2 END) \(direction)")
            }
            terms.append("\(Self.numeric("t.\(quote(column))", type)) \(direction)")
        }
        terms.append("t.Z_PK")
        return terms.joined(separator: ", ")
    }

    private func column(_ keyPath: String) -> (String, AttributeType)? {
        // An attribute with external storage holds tagged values (or file names): compared in Swift, on the values.
        guard !keyPath.contains("."), let attribute = model.entity(named: entity)?.attributesByName[keyPath], !attribute.isTransient,
              !attribute.allowsExternalBinaryDataStorage,
              let column = schema.entities[entity]?.attributes[keyPath] else { return nil }
        return (column, attribute.type)
    }

    private func translate(_ predicate: ObjectPredicate, _ arguments: inout [SQLValue]) -> String? {
        switch predicate {
        case .constant(let v): return v ? "1" : "0"
        case .not(let p):
            guard let inner = translate(p, &arguments) else { return nil }
            // A comparison with NULL is NULL in SQL, and NOT NULL is NULL: the evaluator's logic is
            // two-valued (a comparison with nil is false, its negation true). WHERE already reads NULL
            // as false under AND and OR, so only NOT needs the NULL made false first.
            return "NOT COALESCE((\(inner)), 0)"
        case .and(let ps), .or(let ps):
            if ps.isEmpty { if case .and = predicate { return "1" } else { return "0" } }
            var parts: [String] = []
            for p in ps {
                guard let sql = translate(p, &arguments) else { return nil }
                parts.append("(\(sql))")
            }
            if case .and = predicate { return parts.joined(separator: " AND ") }
            return parts.joined(separator: " OR ")
        case .comparison(let c):
            return comparison(c, &arguments)
        }
    }

    /// Whether SQL compares a stored value of `type` with `value` as Swift does.
    private func fits(_ value: Value, _ type: AttributeType) -> Bool {
        switch (type, value) {
        case (.integer16, .integer), (.integer32, .integer), (.integer64, .integer): return true
        case (.integer16, .double(let d)), (.integer32, .double(let d)), (.integer64, .double(let d)): return d.isFinite
        case (.double, .integer), (.float, .integer): return true
        case (.double, .double(let d)), (.float, .double(let d)): return !d.isNaN
        case (.string, .string), (.boolean, .boolean), (.date, .date), (.uuid, .uuid), (.binaryData, .data): return true
        default: return false
        }
    }

    /// A stored Double, Float or Date as the number it is: -0.0 is kept as an 8-byte blob
    /// (`SQLiteValues`), which SQL would order after every number; numerically it is 0.
    static func numeric(_ column: String, _ type: AttributeType) -> String {
        guard type == .double || type == .float || type == .date else { return column }
        return "(CASE WHEN typeof(\(column)) = 'blob' THEN 0.0 ELSE \(column) END)"
    }

    /// A comparison of a Double, Float or Date column with constants, on the bare column so
    /// that SQLite can answer it from an index. Values are stored as numbers, NaN as text and
    /// -0.0 as an 8-byte blob (`SQLiteValues`); SQLite orders every number before every text
    /// and every text before every blob. So a bound below keeps NaN out by itself, a bound
    /// above is closed with `< ''` (below every text), and -0.0, numerically 0, is added by
    /// equality with its blob where 0 is in the range.
    private func indexableNumeric(_ c: Comparison, raw column: String, _ arguments: inout [SQLValue]) -> String? {
        func number(_ expression: ObjectStore.PredicateExpression) -> Double? {
            switch expression {
            case .constant(.double(let d)?) where !d.isNaN: d
            case .constant(.integer(let i)?): Double(i)
            case .constant(.date(let d)?) where !d.timeIntervalSinceReferenceDate.isNaN: d.timeIntervalSinceReferenceDate
            default: nil
            }
        }
        func bind(_ d: Double) -> String {
            arguments.append(.real(d == 0 ? 0 : d))   // a zero bound is 0.0, whatever its sign
            return "?\(arguments.count)"
        }
        func orMinusZero(_ sql: String, if zeroMatches: Bool) -> String {
            guard zeroMatches else { return sql }
            arguments.append(SQLiteValues.sql(.double(-0.0)))
            return "(\(sql)) OR \(column) = ?\(arguments.count)"
        }
        switch (c.op, c.rhs) {
        case (.equal, let rhs):
            guard let v = number(rhs) else { return nil }
            return orMinusZero("\(column) = \(bind(v))", if: v == 0)
        case (.lessThan, let rhs):
            guard let v = number(rhs) else { return nil }
            return orMinusZero("\(column) < \(bind(v))", if: 0 < v)
        case (.lessThanOrEqual, let rhs):
            guard let v = number(rhs) else { return nil }
            return orMinusZero("\(column) <= \(bind(v))", if: 0 <= v)
        case (.greaterThan, let rhs):
            guard let v = number(rhs) else { return nil }
            return orMinusZero("\(column) > \(bind(v)) AND \(column) < ''", if: 0 > v)
        case (.greaterThanOrEqual, let rhs):
            guard let v = number(rhs) else { return nil }
            return orMinusZero("\(column) >= \(bind(v)) AND \(column) < ''", if: 0 >= v)
        case (.between, .list(let bounds)) where bounds.count == 2:
            guard let low = number(bounds[0]), let high = number(bounds[1]) else { return nil }
            return orMinusZero("\(column) BETWEEN \(bind(low)) AND \(bind(high))", if: low <= 0 && 0 <= high)
        case (.in, .list(let items)):
            let values = items.compactMap(number)
            guard values.count == items.count else { return nil }
            if values.isEmpty { return "0" }
            return orMinusZero("\(column) IN (\(values.map(bind).joined(separator: ", ")))", if: values.contains(0))
        default:
            return nil
        }
    }

    private func comparison(_ c: Comparison, _ arguments: inout [SQLValue]) -> String? {
        guard c.quantifier == .direct, case .keyPath(let path) = c.lhs, let (name, type) = column(path) else { return nil }
        let column = Self.numeric("t.\(quote(name))", type)
        func bind(_ value: Value) -> String {
            switch value {
            // A zero to compare with is 0.0, whatever its sign (as the expression above reads it).
            case .double(let d) where d == 0: arguments.append(.real(0))
            case .date(let d) where d.timeIntervalSinceReferenceDate == 0: arguments.append(.real(0))
            default: arguments.append(SQLiteValues.sql(value))
            }
            return "?\(arguments.count)"
        }
        // String comparisons with options, LIKE and MATCHES: the evaluator's own code, as an SQL function.
        if type == .string, case .constant(.string(let s)?) = c.rhs,
           !c.options.isEmpty || c.op == .like || c.op == .matches,
           [.equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual,
            .beginsWith, .endsWith, .contains, .like, .matches].contains(c.op) {
            return "\(SQLiteFunctions.stringComparison)('\(c.op.rawValue)', \(c.options.rawValue), \(column), \(bind(.string(s))))"
        }
        guard c.options.isEmpty else { return nil }
        if type == .double || type == .float || type == .date, let sql = indexableNumeric(c, raw: "t.\(quote(name))", &arguments) {
            return sql
        }
        // NaN is stored as text; keep it out of ordering comparisons, where SQL would sort it after numbers.
        let numeric = (type == .double || type == .float || type == .date) ? " AND typeof(\(column)) != 'text'" : ""
        switch (c.op, c.rhs) {
        case (.equal, .constant(nil)): return "\(column) IS NULL"
        case (.notEqual, .constant(nil)): return "\(column) IS NOT NULL"
        case (.equal, .constant(let v?)) where fits(v, type): return "\(column) = \(bind(v))\(numeric)"
        case (.notEqual, .constant(let v?)) where fits(v, type): return "NOT COALESCE((\(column) IS \(bind(v))\(numeric)), 0)"
        case (.lessThan, .constant(let v?)) where fits(v, type) && type != .boolean: return "\(column) < \(bind(v))\(numeric)"
        case (.lessThanOrEqual, .constant(let v?)) where fits(v, type) && type != .boolean: return "\(column) <= \(bind(v))\(numeric)"
        case (.greaterThan, .constant(let v?)) where fits(v, type) && type != .boolean: return "\(column) > \(bind(v))\(numeric)"
        case (.greaterThanOrEqual, .constant(let v?)) where fits(v, type) && type != .boolean: return "\(column) >= \(bind(v))\(numeric)"
        case (.in, .list(let items)):
            var values: [Value] = []
            for item in items {
                guard case .constant(let v?) = item, fits(v, type) else { return nil }
                values.append(v)
            }
            if values.isEmpty { return "0" }
            return "\(column) IN (\(values.map(bind).joined(separator: ", ")))\(numeric)"
        case (.between, .list(let bounds)) where bounds.count == 2 && type != .boolean:
            guard case .constant(let low?) = bounds[0], case .constant(let high?) = bounds[1], fits(low, type), fits(high, type) else { return nil }
            return "\(column) BETWEEN \(bind(low)) AND \(bind(high))\(numeric)"
        case (.beginsWith, .constant(.string(let s)?)) where type == .string:
            if s.isEmpty { return "\(column) IS NOT NULL" }
            return "substr(\(column), 1, length(\(bind(.string(s))))) = ?\(arguments.count)"
        case (.endsWith, .constant(.string(let s)?)) where type == .string:
            if s.isEmpty { return "\(column) IS NOT NULL" }
            return "(length(\(column)) >= length(\(bind(.string(s)))) AND substr(\(column), -length(?\(arguments.count))) = ?\(arguments.count))"
        case (.contains, .constant(.string(let s)?)) where type == .string:
            return "instr(\(column), \(bind(.string(s)))) > 0"
        default:
            return nil
        }
    }
}
