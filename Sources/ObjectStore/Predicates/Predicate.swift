import Foundation
import ObjectModel

/// A condition on objects: an expression tree with the NSPredicate operators.
///
/// Build one in code or parse the NSPredicate format syntax:
///
/// ```swift
/// let p = try ObjectPredicate("age > 30 AND name BEGINSWITH[c] \"a\"")
/// let q = ObjectPredicate.and([.compare("age", .greaterThan, .integer(30)), .compare("name", .beginsWith, .string("a"), [.caseInsensitive])])
/// ```
///
/// What a predicate means is defined once, in ``PredicateEvaluator``; a backend
/// may translate predicates (to SQL) but must give the same answers.
public indirect enum ObjectPredicate: Sendable, Hashable {
    /// Always true (`TRUEPREDICATE`) or always false (`FALSEPREDICATE`).
    case constant(Bool)
    /// A comparison of two expressions.
    case comparison(Comparison)
    /// True when every operand is.
    case and([ObjectPredicate])
    /// True when any operand is.
    case or([ObjectPredicate])
    /// True when the operand is false.
    case not(ObjectPredicate)

    /// Parses the NSPredicate format syntax.
    /// - Throws: ``PredicateSyntaxError`` with the column of the problem.
    public init(_ format: String) throws {
        var parser = PredicateParser(format)
        self = try parser.parse()
    }

    /// `keyPath <op> value`.
    public static func compare(_ keyPath: String, _ op: Comparison.Operator, _ value: Value?,
                               _ options: Comparison.Options = []) -> ObjectPredicate {
        .comparison(Comparison(.keyPath(keyPath), op, .constant(value), options: options))
    }
}

/// A comparison: `lhs <operator>[options] rhs`, optionally quantified over a to-many.
public struct Comparison: Sendable, Hashable {
    /// The comparison operators.
    public enum Operator: String, Sendable, Hashable, CaseIterable {
        case equal = "=="
        case notEqual = "!="
        case lessThan = "<"
        case lessThanOrEqual = "<="
        case greaterThan = ">"
        case greaterThanOrEqual = ">="
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        case contains = "CONTAINS"
        case like = "LIKE"
        case matches = "MATCHES"
        case `in` = "IN"
        case between = "BETWEEN"
    }

    /// How a to-many left side is quantified.
    public enum Quantifier: String, Sendable, Hashable {
        /// No quantifier: a to-many left side is tested as `ANY`.
        case direct = ""
        case any = "ANY"
        case all = "ALL"
        case none = "NONE"
    }

    /// String comparison options: `[c]`, `[d]`, `[cd]`.
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `[c]`: case-insensitive.
        public static let caseInsensitive = Options(rawValue: 1)
        /// `[d]`: diacritic-insensitive.
        public static let diacriticInsensitive = Options(rawValue: 2)
    }

    /// The left side.
    public var lhs: PredicateExpression
    /// The operator.
    public var op: Operator
    /// The right side.
    public var rhs: PredicateExpression
    /// The quantifier of a to-many left side.
    public var quantifier: Quantifier
    /// String options.
    public var options: Options

    /// Creates a comparison.
    public init(_ lhs: PredicateExpression, _ op: Operator, _ rhs: PredicateExpression, quantifier: Quantifier = .direct, options: Options = []) {
        self.lhs = lhs
        self.op = op
        self.rhs = rhs
        self.quantifier = quantifier
        self.options = options
    }
}

/// One side of a comparison.
public indirect enum PredicateExpression: Sendable, Hashable {
    /// A key path from the evaluated object: `name`, `owner.name`, `pets.@count`.
    case keyPath(String)
    /// A constant; nil is `NIL`.
    case constant(Value?)
    /// A list of expressions: `{1, 2, 3}`.
    case list([PredicateExpression])
}

extension ObjectPredicate: CustomStringConvertible {
    /// The predicate in the NSPredicate format syntax; parsing it gives an equal predicate.
    public var description: String {
        switch self {
        case .constant(let v): v ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .comparison(let c): c.description
        case .and(let ps): ps.isEmpty ? "TRUEPREDICATE" : "(" + ps.map(\.description).joined(separator: " AND ") + ")"
        case .or(let ps): ps.isEmpty ? "FALSEPREDICATE" : "(" + ps.map(\.description).joined(separator: " OR ") + ")"
        case .not(let p): "NOT " + p.description
        }
    }
}

extension Comparison: CustomStringConvertible {
    public var description: String {
        var text = quantifier == .direct ? "" : quantifier.rawValue + " "
        text += lhs.description + " " + op.rawValue
        if !options.isEmpty {
            text += "[" + (options.contains(.caseInsensitive) ? "c" : "") + (options.contains(.diacriticInsensitive) ? "d" : "") + "]"
        }
        return text + " " + rhs.description
    }
}

extension PredicateExpression: CustomStringConvertible {
    public var description: String {
        switch self {
        case .keyPath(let path): path
        case .list(let items): "{" + items.map(\.description).joined(separator: ", ") + "}"
        case .constant(nil): "nil"
        case .constant(.some(let value)):
            switch value {
            case .integer(let v): String(v)
            case .double(let v): String(v)
            case .boolean(let v): v ? "TRUE" : "FALSE"
            default: "\"" + value.textForm.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
            }
        }
    }
}
