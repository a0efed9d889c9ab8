import Foundation
import ObjectModel
import ObjectStore

extension PostgreSQLStore: AggregateFetching {
    /// One `SELECT … GROUP BY … ORDER BY` where the server gives exactly the reference's answer: a
    /// predicate that translates whole (as a fetch's does), groups of integers and Booleans (a
    /// missing value first), counts of any attribute, sums and means of integers (summed exactly;
    /// a sum past 64 bits is the reference's error), and extremes of integers and Booleans.
    /// Anything else (text, whose stored bytes may be escaped; floating-point values and dates) is
    /// declined and computed from the objects.
    public func aggregateWhereStored(_ request: AggregateRequest) throws -> [AggregateRow]? {
        let plan = try AggregatePlan(request, model: model)
        return try read { try $0.aggregate(plan, model: model) }
    }
}

extension PostgreSQLView {
    func aggregate(_ plan: AggregatePlan, model: ManagedObjectModel) throws -> [AggregateRow]? {
        let request = plan.request
        guard let entity = model.entity(named: request.entityName) else { return nil }
        let fetch = FetchRequest(entity: request.entityName, predicate: request.predicate, includesSubentities: request.includesSubentities)
        var orderedText: Set<String> = []
        let kinds = (request.includesSubentities ? entity.kindNames : [entity.name]).filter { model.entity(named: $0)?.isAbstract == false }
        guard let selection = try exactSelection(fetch, model: model, orderedText: &orderedText),
              let resolve = try sharedColumns(entity, kinds),
              try !holdsMarkedText(orderedText, selection.kinds.from, selection.kinds.parameters) else { return nil }
        let exact: Set<AttributeType> = [.integer16, .integer32, .integer64, .boolean]
        var groups: [String] = []
        for attribute in plan.groupAttributes {
            guard exact.contains(attribute.type), let (column, _) = resolve(attribute.name) else { return nil }
            groups.append(column)
        }
        var terms: [String] = []
        for (expression, attribute) in zip(request.expressions, plan.expressionAttributes) {
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
                terms.append("sum(\(column))::text")
                terms.append("count(\(column))")
            case .min, .max:
                guard exact.contains(type) else { return nil }
                let function = type == .boolean ? (expression.function == .min ? "bool_and" : "bool_or") : expression.function.rawValue
                terms.append("\(function)(\(column))")
            }
        }
        var sql = "SELECT \((groups + terms).joined(separator: ", ")) \(selection.from)"
        if !groups.isEmpty {
            sql += " GROUP BY \(groups.joined(separator: ", ")) ORDER BY \(groups.map { "\($0) ASC NULLS FIRST" }.joined(separator: ", "))"
        }
        let rows = try connection.query(sql, selection.parameters)
        func value(_ row: Int, _ column: Int, _ type: AttributeType) throws -> Value? {
            guard let text = rows.text(row, column) else { return nil }
            if type == .boolean { return .boolean(text == "t") }
            guard let integer = Int64(text) else {
                throw StoreError(.corrupt, "\(request.entityName): the server answered \(String(reflecting: text)) for an integer", url: location.url)
            }
            return .integer(integer)
        }
        return try (0..<rows.count).map { r in
            var group: [String: Value] = [:]
            var index = 0
            for attribute in plan.groupAttributes {
                group[attribute.name] = try value(r, index, attribute.type)
                index += 1
            }
            var values: [String: Value] = [:]
            for (expression, attribute) in zip(request.expressions, plan.expressionAttributes) {
                switch expression.function {
                case .count:
                    values[expression.name] = .integer(rows.int64(r, index) ?? 0)
                    index += 1
                case .sum, .average:
                    let count = rows.int64(r, index + 1) ?? 0
                    var sum: Int64 = 0
                    if let text = rows.text(r, index) {
                        guard let exact = Int64(text) else { throw StoreError(.invalidFetch, "\(request.entityName).\(attribute!.name): the sum leaves 64 bits") }
                        sum = exact
                    }
                    values[expression.name] = expression.function == .sum ? .integer(sum)
                        : count == 0 ? nil : .double(Double(sum) / Double(count))
                    index += 2
                case .min, .max:
                    values[expression.name] = try value(r, index, attribute!.type)
                    index += 1
                }
            }
            return AggregateRow(group: group, values: values)
        }
    }
}
