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

    @Test("a model's life: a stable temporary identity, then a permanent one; one instance per object while it is held; rolled back, deleted and saved, it leaves its context")
    func lifecycle() throws {
        let container = try ModelContainer(for: Author.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let ada = Author(name: "Ada")
        let temporary = ada.persistentModelID
        #expect(ada.persistentModelID == temporary && ada.modelContext == nil && ada.hasChanges)
        #expect(Author(name: "Ada").persistentModelID != temporary)
        context.insert(ada)
        #expect(ada.modelContext === context && ada.hasChanges)
        try context.save()
        let permanent = ada.persistentModelID
        #expect(permanent != temporary && !ada.hasChanges)
        #expect((context.registeredModel(for: permanent) as Author?) === ada)
        // While a model is held, every fetch and lookup gives that instance.
        #expect(try context.fetch(FetchDescriptor<Author>()).first === ada)
        #expect(context.model(for: permanent) as? Author === ada)
        // Another context makes its own, and keeps it while it is held.
        let other = ModelContext(container)
        let theirs = try #require(try other.fetch(FetchDescriptor<Author>()).first)
        #expect(theirs !== ada && theirs.name == "Ada" && theirs.persistentModelID == permanent)
        #expect(try other.fetch(FetchDescriptor<Author>()).first === theirs)
        // A fetch sees the context's unsaved change, through the same instance.
        ada.name = "Ada L."
        let identity = ObjectIdentifier(try #require(try context.fetch(FetchDescriptor<Author>(predicate: #Predicate { $0.name == "Ada L." })).first))
        #expect(identity == ObjectIdentifier(ada))
        // An inserted model rolled back leaves the context.
        let bob = Author(name: "Bob")
        context.insert(bob)
        context.rollback()
        #expect(bob.modelContext == nil && !bob.isDeleted)
        #expect(ada.name == "Ada" && ada.modelContext === context)
        #expect(try context.fetch(FetchDescriptor<Author>()).map(\.name) == ["Ada"])
        // A deleted model, once the deletion is saved, is no longer the context's.
        context.delete(ada)
        #expect(ada.isDeleted && ada.hasChanges)
        try context.save()
        #expect(ada.modelContext == nil && !ada.isDeleted)
        #expect((context.registeredModel(for: permanent) as Author?) == nil)
        #expect(try context.fetchCount(FetchDescriptor<Author>()) == 0)
        #expect(try other.fetchCount(FetchDescriptor<Author>()) == 0)
    }
}
