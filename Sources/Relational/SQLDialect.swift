import Foundation
import ObjectModel
import ObjectStore

/// What one SQL engine does differently, for the one predicate compiler both SQL backends use
/// (``PredicateCompiler``) and their aggregate fetches: how parameters are spelled and bound, how a column of each attribute
/// type compares and orders, and which comparisons it answers exactly as `PredicateEvaluator` does.
///
/// A dialect answers nil (or false) for what its engine cannot answer exactly; the compiler then
/// leaves that part of a predicate to the evaluator. A dialect never widens or narrows an answer.
///
/// ```swift
/// let compiler = PredicateCompiler(dialect: PostgreSQLDialect(unicode: true)) { name in columns[name] }
/// var parameters: [PGParameter?] = []
/// var bytes: Set<String> = []
/// let condition = compiler.condition(predicate, &parameters, &bytes)   // nil: not all SQL's
/// ```
public protocol SQLDialect: Sendable {
    /// A bound value, as the engine's client library takes it.
    associatedtype Parameter

    /// The placeholder of the `number`th parameter, counting from 1 (`?3`, `$3`).
    func placeholder(_ number: Int) -> String

    /// `value` bound for comparison with a column of `type`. A zero is bound as 0, whatever its sign.
    func parameter(_ value: Value, comparedWith type: AttributeType) -> Parameter

    /// The engine's literals for true and false, as conditions.
    var trueLiteral: String { get }
    var falseLiteral: String { get }

    /// Whether SQL compares a stored value of `type` with the constant `value` exactly as the
    /// evaluator does: by equality (`ordering` false: `==`, `!=`, `IN`) or also by order (`<`,
    /// `<=`, `>`, `>=`, `BETWEEN`, and for strings `BEGINSWITH`, `ENDSWITH`, `CONTAINS`). Not asked
    /// for doubles, floats and dates, which go to ``numberComparison(_:_:_:_:)``.
    func compares(_ type: AttributeType, with value: Value, ordering: Bool) -> Bool

    /// The expression a comparison reads for `column` (a quoted, possibly qualified name) of `type`.
    func operand(_ column: String, _ type: AttributeType) -> String

    /// The expression a comparison reads for the parameter at `placeholder`, compared with a column of `type`.
    func operand(parameter placeholder: String, _ type: AttributeType) -> String

    /// A comparison of `column` (a double, float or date attribute's, as stored) with finite
    /// numbers (a date's as its seconds since the reference date): `op` is `==`, `<`, `<=`, `>`,
    /// `>=` (one number), `BETWEEN` (two) or `IN` (one or more). A stored NaN matches none of them.
    /// The dialect binds what it needs in `parameters`; nil leaves the comparison to the evaluator.
    func numberComparison(_ column: String, _ op: Comparison.Operator, _ numbers: [Double], _ parameters: inout [Parameter]) -> String?

    /// Whether the text `operand` (from ``operand(_:_:)``) begins with, ends with or contains the
    /// non-empty text at `placeholder`, comparing Unicode scalars; nil when the engine cannot say.
    func textPart(_ op: Comparison.Operator, _ operand: String, _ placeholder: String) -> String?

    /// The evaluator itself, called from SQL, for a string comparison SQL has no form of (with
    /// `[c]` or `[d]`, `LIKE`, `MATCHES`); nil when the engine cannot call it.
    func evaluatorComparison(_ op: Comparison.Operator, _ options: Comparison.Options, _ operand: String, _ placeholder: String) -> String?

    /// ORDER BY terms that put the values of `column` of `type` in `ValueOrdering.total(_:_:)`'s
    /// order (a missing value first), reversed when not `ascending`; nil when SQL cannot.
    func orderTerms(_ column: String, _ type: AttributeType, ascending: Bool) -> [String]?

    /// Whether SQL groups values of `type`, and finds their least and greatest, exactly as the
    /// reference does (`ValueOrdering.total(_:_:)`'s order and equality).
    func aggregatesExactly(_ type: AttributeType) -> Bool

    /// The least (`min`) or greatest (`max`) value of `column` of `type`. By default `min(column)`.
    func extreme(_ function: AggregateFunction, _ column: String, _ type: AttributeType) -> String

    /// The exact sum of an integer `column`, as a term the engine's row reader gives as a 64-bit
    /// integer (or fails on). By default `sum(column)`.
    func exactSum(_ column: String) -> String

    /// A group's column in the ORDER BY of grouped answers: a missing value first. By default `column`.
    func groupOrder(_ column: String) -> String
}

extension SQLDialect {
    public var trueLiteral: String { "TRUE" }
    public var falseLiteral: String { "FALSE" }
    public func operand(_ column: String, _ type: AttributeType) -> String { column }
    public func operand(parameter placeholder: String, _ type: AttributeType) -> String { placeholder }
    public func evaluatorComparison(_ op: Comparison.Operator, _ options: Comparison.Options, _ operand: String, _ placeholder: String) -> String? { nil }
    public func extreme(_ function: AggregateFunction, _ column: String, _ type: AttributeType) -> String { "\(function.rawValue)(\(column))" }
    public func exactSum(_ column: String) -> String { "sum(\(column))" }
    public func groupOrder(_ column: String) -> String { column }
}
