import Foundation
import ObjectStoreData
import Testing

@Suite("Typed models: the basics")
struct BasicsTests {
    @Test("insert a graph, save, fetch it back in another context with every value and both sides of every relationship")
    func roundTrip() throws {
        let container = try ModelContainer(for: Author.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let ada = Author(name: "Ada")
        let book = Book(title: "Notes", pages: 120, author: ada)
        book.genre = .essay
        book.size = Dimensions(width: 14, height: 21)
        book.tags = [Tag(label: "math"), Tag(label: "history")]
        context.insert(book)
        try context.save()
        let other = ModelContext(container)
        let authors = try other.fetch(FetchDescriptor<Author>())
        #expect(authors.count == 1)
        let fetched = try #require(authors.first?.books.first)
        #expect(fetched.title == "Notes" && fetched.pages == 120 && fetched.genre == .essay && fetched.subtitle == nil)
        #expect(fetched.size == Dimensions(width: 14, height: 21))
        #expect(Set(fetched.tags.map(\.label)) == ["math", "history"])
        #expect(fetched.tags.allSatisfy { $0.books.map(\.title) == ["Notes"] })
        #expect(fetched.author === authors.first)
    }
}
