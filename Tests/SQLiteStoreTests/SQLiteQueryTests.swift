import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
@testable import SQLiteStore
import Testing

@Suite("SQL translation")
struct SQLiteQueryTests {
    let query = SQLiteQuery(entity: "Person", schema: SQLiteSchema(model: StoreConformance.model), model: StoreConformance.model)

    @Test("what runs in SQL", arguments: [
        "age > 30", "name == 'Ada'", "name ==[cd] 'ada'", "name BEGINSWITH[c] 'a'", "name LIKE 'A*'", "name MATCHES '[A-C].*'",
        "nickname == nil", "NOT name IN {'Ada'}", "age BETWEEN {1, 5} AND name CONTAINS 'd'", "name !=[c] 'x' OR age < 3",
    ])
    func inSQL(_ format: String) throws {
        let plan = query.plan(try ObjectPredicate(format))
        #expect(plan.residual == nil, "\(format)")
        #expect(plan.sql != nil)
    }

    @Test("what is left for Swift", arguments: [
        "manager.name == 'Ada'", "ANY pets.name == 'Rex'", "pets.@count > 1", "name == 3",
    ])
    func inSwift(_ format: String) throws {
        #expect(query.plan(try ObjectPredicate(format)).residual != nil, "\(format)")
    }

    @Test("a conjunction is split: SQL narrows, Swift finishes")
    func split() throws {
        let plan = query.plan(try ObjectPredicate("age > 30 AND manager.name == 'Ada' AND name BEGINSWITH[c] 'b'"))
        #expect(plan.sql != nil)
        #expect(plan.arguments.count == 2)
        #expect(plan.residual == .compare("manager.name", .equal, .string("Ada")))
    }

    @Test("a predicate on an indexed attribute is answered from the index (integers, doubles) with no sort step, results still in key order")
    func indexUse() throws {
        let model = try ManagedObjectModel {
            Entity("Reading", indexes: [FetchIndex(name: "bySensor", elements: [.init("sensor")]), FetchIndex(name: "byValue", elements: [.init("value")])]) {
                Attribute("sensor", .integer32)
                Attribute("value", .double)
            }
        }
        let folder = try TemporaryFolder()
        let store = try #require(try SQLiteStoreType().open(at: folder.file("index.sqlite"), model: model, options: StoreOptions()) as? SQLiteStore)
        defer { try? store.close() }
        let keys = try store.allocatePrimaryKeys(entity: "Reading", count: 2_000)
        try store.bulkInsert(keys.map { ObjectRecord(key: ObjectKey("Reading", $0), attributes: [
            "sensor": .integer((2_000 - $0) % 100), "value": .double(Double($0)),
        ]) })
        let request = FetchRequest(entity: "Reading", predicate: try ObjectPredicate("sensor == 7"))
        let plan = try store.queryPlan(request)
        #expect(plan.contains { $0.contains("USING INDEX Z_Reading_bySensor") }, "\(plan)")
        let found = try store.fetch(request).map(\.key.primaryKey)
        #expect(found == found.sorted() && found.count == 20)
        // A Double range too (NaN and -0.0 have storage of their own, kept in by the condition's form).
        let range = FetchRequest(entity: "Reading", predicate: try ObjectPredicate("value < 20.0"))
        let rangePlan = try store.queryPlan(range)
        #expect(rangePlan.contains { $0.contains("USING INDEX Z_Reading_byValue") }, "\(rangePlan)")
        #expect(try store.fetch(range).map(\.key.primaryKey) == Array(1...19))
        // With no sort and no window, no sort step either: the index's order is put in key order in Swift.
        let spread = FetchRequest(entity: "Reading", predicate: try ObjectPredicate("sensor < 3"))
        let spreadPlan = try store.queryPlan(spread)
        #expect(spreadPlan.contains { $0.contains("USING INDEX Z_Reading_bySensor") } && !spreadPlan.contains { $0.contains("TEMP B-TREE") },
                "\(spreadPlan)")
        let spreadKeys = try store.fetch(spread).map(\.key.primaryKey)
        #expect(spreadKeys.count == 60 && spreadKeys == spreadKeys.sorted())
        var window = spread
        window.fetchLimit = 5
        #expect(try store.fetch(window).map(\.key.primaryKey) == Array(spreadKeys.prefix(5)))
        // Unconditioned, the table is read in key order with no sort step.
        #expect(try store.queryPlan(FetchRequest(entity: "Reading")).allSatisfy { !$0.contains("TEMP B-TREE") })
    }

    @Test("paginated fetches share one prepared statement; the cache is bounded and a statement it drops stays usable while held")
    func statementCache() throws {
        let folder = try TemporaryFolder()
        let connection = try SQLiteConnection(path: folder.file("cache.sqlite").path, readOnly: false, create: true)
        defer { connection.close() }
        try connection.execute("CREATE TABLE t (x INTEGER)")
        let held = try connection.statement("INSERT INTO t VALUES (?1)")
        for i in 0..<(SQLiteConnection.statementCacheCapacity * 2) { _ = try connection.statement("SELECT \(i) FROM t") }
        #expect(connection.cachedStatementCount <= SQLiteConnection.statementCacheCapacity)
        try held.run([.integer(42)])
        #expect(try connection.statement("SELECT x FROM t").rows { $0.int64(0) } == [42])

        let store = try #require(try SQLiteStoreType().open(at: folder.file("pages.sqlite"), model: StoreConformance.model, options: StoreOptions()) as? SQLiteStore)
        defer { try? store.close() }
        for page in 0..<500 {
            var request = FetchRequest(entity: "Person")
            (request.fetchLimit, request.fetchOffset) = (10, page * 10)
            _ = try store.fetch(request)
        }
        #expect(try store.cachedStatementCount() < 20)
    }
}
