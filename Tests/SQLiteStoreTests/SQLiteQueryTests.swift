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
}
