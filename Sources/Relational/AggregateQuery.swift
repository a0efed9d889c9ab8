import Foundation
import ObjectModel
import ObjectStore

/// An aggregate fetch as one `SELECT … GROUP BY … ORDER BY`, for any engine through its
/// ``SQLDialect``: the select list of its groups and expressions, the clauses after the caller's
/// `FROM … WHERE …`, and the reading of each answered row.
///
/// Built only where SQL gives exactly the reference's answer: groups and extremes of the types the
/// dialect orders and compares exactly (``SQLDialect/aggregatesExactly(_:)``), counts of any
/// attribute, and sums and means of integers (an exact sum, the mean that sum over the count).
/// Anything else is declined (nil) and computed from the objects.
package struct AggregateQuery {
    /// The plan it answers.
    package let plan: AggregatePlan
    /// The select list: each group's column, then each expression's terms.
    package let selectList: String
    /// ` GROUP BY … ORDER BY …`, or empty without groups.
    package let clauses: String

    /// The query of `plan`, reading attributes' columns through `resolve`; nil when some part is
    /// not one the engine answers exactly.
    package init?<Dialect: SQLDialect>(_ plan: AggregatePlan, dialect: Dialect,
                                       resolve: (String) -> (column: String, type: AttributeType)?) {
        var groups: [String] = []
        for attribute in plan.groupAttributes {
            guard dialect.aggregatesExactly(attribute.type), let (column, _) = resolve(attribute.name) else { return nil }
            groups.append(column)
        }
        var terms: [String] = []
        for (expression, attribute) in zip(plan.request.expressions, plan.expressionAttributes) {
            guard let attribute else {
                terms.append("count(*)")
                continue
            }
            guard let (column, type) = resolve(attribute.name) else { return nil }
            switch expression.function {
            case .count:
                terms.append("count(\(column))")
            case .sum, .average:
                guard AggregatePlan.isInteger(attribute) else { return nil }
                terms.append(dialect.exactSum(column))
                terms.append("count(\(column))")
            case .min, .max:
                guard dialect.aggregatesExactly(type) else { return nil }
                terms.append(dialect.extreme(expression.function, column, type))
            }
        }
        self.plan = plan
        selectList = (groups + terms).joined(separator: ", ")
        clauses = groups.isEmpty ? ""
            : " GROUP BY \(groups.joined(separator: ", ")) ORDER BY \(groups.map(dialect.groupOrder).joined(separator: ", "))"
    }

    /// One answered row, read through the engine's accessors of its columns (counting from 0, in
    /// the select list's order): `count` of a count, `sum` of an exact sum of an attribute (nil over no values),
    /// `value` of a group or an extreme as a value of its attribute's type.
    package func row(count: (Int) throws -> Int64, sum: (Int, Attribute) throws -> Int64?,
                     value: (Int, Attribute) throws -> Value?) throws -> AggregateRow {
        var group: [String: Value] = [:]
        var index = 0
        for attribute in plan.groupAttributes {
            group[attribute.name] = try value(index, attribute)
            index += 1
        }
        var values: [String: Value] = [:]
        for (expression, attribute) in zip(plan.request.expressions, plan.expressionAttributes) {
            switch expression.function {
            case .count:
                values[expression.name] = .integer(try count(index))
                index += 1
            case .sum, .average:
                let number = try count(index + 1)
                let total = try attribute.flatMap { number == 0 ? 0 : try sum(index, $0) } ?? 0
                values[expression.name] = expression.function == .sum ? .integer(total)
                    : number == 0 ? nil : .double(Double(total) / Double(number))
                index += 2
            case .min, .max:
                // An extreme is of an attribute (the query was built only so).
                values[expression.name] = try attribute.flatMap { try value(index, $0) }
                index += 1
            }
        }
        return AggregateRow(group: group, values: values)
    }
}
