import Foundation
import ObjectModel
import ObjectStore
import Relational

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
        guard let aggregate = AggregateQuery(plan, dialect: PostgreSQLDialect(unicode: unicode), resolve: resolve) else { return nil }
        let rows = try connection.query("SELECT \(aggregate.selectList) \(selection.from)\(aggregate.clauses)", selection.parameters)
        return try (0..<rows.count).map { r in
            try aggregate.row(count: { rows.int64(r, $0) ?? 0 }, sum: { index, attribute in
                guard let text = rows.text(r, index) else { return nil }
                guard let exact = Int64(text) else { throw StoreError(.invalidFetch, "\(request.entityName).\(attribute.name): the sum leaves 64 bits") }
                return exact
            }, value: { index, attribute in
                guard let text = rows.text(r, index) else { return nil }
                if attribute.type == .boolean { return .boolean(text == "t") }
                guard let integer = Int64(text) else {
                    throw StoreError(.corrupt, "\(request.entityName): the server answered \(String(reflecting: text)) for an integer", url: location.url)
                }
                return .integer(integer)
            })
        }
    }
}
