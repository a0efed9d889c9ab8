import Foundation
import ObjectModel
import ObjectStore

extension SQLiteStore: AggregateFetching {
    /// One `SELECT … GROUP BY … ORDER BY` where SQL gives exactly the reference's answer: a
    /// predicate SQL translates whole, groups of integers, booleans and strings (SQLite's binary
    /// collation orders UTF-8 bytes, as ``ValueOrdering`` does), counts of any attribute, sums and
    /// means of integers (SQLite's integer sum is exact and fails where 64 bits do; the mean is
    /// that sum over the count), and extremes of integers, booleans and strings. Anything else
    /// (floating-point values, which the store keeps NaN and -0 of in forms of their own; dates)
    /// is declined and computed from the objects.
    public func aggregateWhereStored(_ request: AggregateRequest) throws -> [AggregateRow]? {
        let plan = try AggregatePlan(request, model: model)
        return try read { reader in try reader.aggregate(plan) }
    }
}

extension SQLiteReader {
    func aggregate(_ plan: AggregatePlan) throws -> [AggregateRow]? {
        let request = plan.request
        let entity = try self.entity(request.entityName)
        let query = SQLiteQuery(entity: request.entityName, schema: schema, model: model).plan(request.predicate)
        guard query.residual == nil else { return nil }
        let exact: Set<AttributeType> = [.integer16, .integer32, .integer64, .boolean, .string]
        var groups: [String] = []
        for attribute in plan.groupAttributes {
            guard exact.contains(attribute.type), let column = entity.attributes[attribute.name] else { return nil }
            groups.append("t.\(quote(column))")
        }
        // Each expression's terms in the SELECT list, after the groups.
        var terms: [String] = []
        for (expression, attribute) in zip(request.expressions, plan.expressionAttributes) {
            guard let attribute else {
                terms.append("count(*)")
                continue
            }
            guard let column = entity.attributes[attribute.name].map({ "t.\(quote($0))" }) else { return nil }
            switch expression.function {
            case .count:
                terms.append("count(\(column))")
            case .sum, .average:
                guard AggregatePlan.isInteger(attribute) else { return nil }
                terms.append("sum(\(column))")
                terms.append("count(\(column))")
            case .min, .max:
                guard exact.contains(attribute.type) else { return nil }
                terms.append("\(expression.function.rawValue)(\(column))")
            }
        }
        let kinds = request.includesSubentities ? entity.kinds : [entity.number]
        let selected = "t.Z_ENT IN (\(kinds.map(String.init).joined(separator: ",")))"
        // Values the reader would refuse (another storage class, out of range, text not UTF-8, a
        // string kept as a blob): SQL would group and sum them as they are; the objects' answer is refused.
        let used = plan.groupAttributes + plan.expressionAttributes.compactMap { $0 }
        let columns = used.compactMap { attribute in entity.attributes[attribute.name].map { (attribute, "t.\(quote($0))") } }
        if let unreadable = SQLiteStore.unreadable(columns) {
            let damaged = try connection.statement("SELECT EXISTS (SELECT 1 FROM \(quote(entity.table)) t WHERE \(selected) AND (\(unreadable)))")
                .rows { $0.int64(0) }.first == 1
            if damaged { return nil }
        }
        var sql = "SELECT \((groups + terms).joined(separator: ", ")) FROM \(quote(entity.table)) t "
            + "WHERE \(selected)"
        if let condition = query.sql { sql += " AND (\(condition))" }
        if !groups.isEmpty { sql += " GROUP BY \(groups.joined(separator: ", ")) ORDER BY \(groups.joined(separator: ", "))" }
        let file = connection.path
        do {
            return try connection.statement(sql).rows(query.arguments) { row in
                var group: [String: Value] = [:]
                var index: Int32 = 0
                for attribute in plan.groupAttributes {
                    group[attribute.name] = try SQLiteValues.value(row.column(index), as: attribute.type,
                                                                   at: "\(request.entityName).\(attribute.name)", in: file)
                    index += 1
                }
                var values: [String: Value] = [:]
                for (expression, attribute) in zip(request.expressions, plan.expressionAttributes) {
                    switch expression.function {
                    case .count:
                        values[expression.name] = .integer(row.int64(index))
                        index += 1
                    case .sum, .average:
                        let count = row.int64(index + 1)
                        let sum = count == 0 ? 0 : row.int64(index)
                        values[expression.name] = expression.function == .sum ? .integer(sum)
                            : count == 0 ? nil : .double(Double(sum) / Double(count))
                        index += 2
                    case .min, .max:
                        values[expression.name] = try SQLiteValues.value(row.column(index), as: attribute!.type,
                                                                         at: "\(request.entityName).\(attribute!.name)", in: file)
                        index += 1
                    }
                }
                return AggregateRow(group: group, values: values)
            }
        } catch let error as StoreError where error.message.contains("integer overflow") {
            // SQLite's sum fails where a running total leaves 64 bits; the answer is the exact
            // total's, which the objects give.
            return nil
        }
    }
}
