import Foundation
import ObjectModel
import ObjectStore
import Relational

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
        guard query.residual == nil,
              let aggregate = AggregateQuery(plan, dialect: SQLiteDialect(), resolve: { name in
                  entity.attributes[name].flatMap { column in
                      model.entity(named: request.entityName)?.attributesByName[name].map { ("t.\(quote(column))", $0.type) }
                  }
              }) else { return nil }
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
        var sql = "SELECT \(aggregate.selectList) FROM \(quote(entity.table)) t WHERE \(selected)"
        if let condition = query.sql { sql += " AND (\(condition))" }
        sql += aggregate.clauses
        let file = connection.path
        do {
            return try connection.statement(sql).rows(query.arguments) { row in
                try aggregate.row(count: { row.int64(Int32($0)) }, sum: { index, _ in row.int64(Int32(index)) }) { index, attribute in
                    try SQLiteValues.value(row.column(Int32(index)), as: attribute.type, at: "\(request.entityName).\(attribute.name)", in: file)
                }
            }
        } catch let error as StoreError where error.message.contains("integer overflow") {
            // SQLite's sum fails where a running total leaves 64 bits; the answer is the exact
            // total's, which the objects give.
            return nil
        }
    }
}
