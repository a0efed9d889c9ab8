import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreData
import Testing

/// `ModelContext.aggregate` on every backend, against answers counted by hand.
@Suite struct TypedAggregateTests {
    @Test("groups, counts, sums and extremes of saved models by key paths; a predicate the store cannot evaluate whole, and a key path that is no attribute, are refused",
          arguments: TypedBackends.all)
    func aggregates(_ backend: String) throws {
        let place = try TypedBackends.Place()
        let context = ModelContext(try place.container(backend))
        for (i, pages) in [100, 250, 40, 310].enumerated() {
            let book = Book(title: "book \(i)", pages: pages)
            book.genre = i % 2 == 0 ? .fiction : .poetry
            context.insert(book)
        }
        try context.save()
        // Over 50 pages: 100 (fiction), 250 and 310 (poetry); 40 (fiction) left out.
        let rows = try context.aggregate(FetchDescriptor<Book>(predicate: #Predicate { $0.pages > 50 }), groupBy: [\.genre],
                                         [.count(), .sum(\.pages), .max(\.pages, as: "longest")])
        #expect(rows == [
            AggregateRow(group: ["genre": .string("fiction")], values: ["count": .integer(1), "sum(pages)": .integer(100), "longest": .integer(100)]),
            AggregateRow(group: ["genre": .string("poetry")], values: ["count": .integer(2), "sum(pages)": .integer(560), "longest": .integer(310)]),
        ], "\(backend)")
        #expect(throws: ModelContextError.self) { try context.aggregate(FetchDescriptor<Book>(predicate: #Predicate { $0.title.count > 1 }), [.count()]) }
        #expect(throws: ModelContextError.self) { try context.aggregate(FetchDescriptor<Book>(), [.count(\.tags)]) }
    }
}
