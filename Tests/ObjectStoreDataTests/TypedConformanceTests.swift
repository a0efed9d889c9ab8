import Foundation
import ObjectStoreData
import Testing

/// Every typed behaviour on every backend: one suite, the backends as its argument.
@Suite("Typed models on every backend")
struct TypedConformanceTests {
    /// Authors with books and tags, the same each time.
    static func library(_ context: ModelContext) {
        let names = ["Ursula", "Stanisław", "Zoë", "Ada", "Borges"]
        for (index, name) in names.enumerated() {
            let author = Author(name: name, born: Date(timeIntervalSince1970: Double(index) * 1e9))
            for number in 0..<4 {
                let book = Book(title: "\(name) \(number)", pages: 50 * (index + 1) + number * 7, author: author)
                book.rating = Double((index * 7 + number * 3) % 10) / 2
                book.genre = Genre.allCases[(index + number) % 3]
                book.subtitle = number % 2 == 0 ? "part \(number)" : nil
                book.isbn = number == 3 ? nil : UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", index * 10 + number))
                book.tags = [Tag(label: "t\(number % 3)")]
                context.insert(book)
            }
        }
    }

    @Test("a saved graph reads back in a new context, and from the store reopened", arguments: TypedBackends.all)
    func persistence(_ backend: String) throws {
        let place = try TypedBackends.Place()
        do {
            let container = try place.container(backend)
            let context = ModelContext(container)
            Self.library(context)
            #expect(context.hasChanges)
            try context.save()
            #expect(!context.hasChanges)
            try check(ModelContext(container))
        }
        if backend != "memory" { try check(ModelContext(place.container(backend))) }

        func check(_ context: ModelContext) throws {
            let books = try context.fetch(FetchDescriptor<Book>(sortBy: [SortDescriptor(\.title)]))
            #expect(books.count == 20)
            let zoe = try #require(books.first { $0.title == "Zoë 2" })
            #expect(zoe.pages == 164 && zoe.subtitle == "part 2" && zoe.genre == .poetry && zoe.author?.name == "Zoë")
            #expect(zoe.author?.books.count == 4 && zoe.author?.born == Date(timeIntervalSince1970: 2e9))
            // Tags are unique by label: three of them, shared by the books.
            let tags = try context.fetch(FetchDescriptor<Tag>(sortBy: [SortDescriptor(\.label)]))
            #expect(tags.map(\.label) == ["t0", "t1", "t2"])
            #expect(tags.map { $0.books.count } == [10, 5, 5])
            #expect(books.filter { $0.isbn == nil }.count == 5)
        }
    }

    @Test("inserting a model whose unique value is stored updates the stored model (an upsert), saved or not", arguments: TypedBackends.all)
    func upsert(_ backend: String) throws {
        let place = try TypedBackends.Place()
        let container = try place.container(backend)
        let context = ModelContext(container)
        context.insert(Author(name: "Ada", born: nil))
        try context.save()
        let again = Author(name: "Ada", born: Date(timeIntervalSince1970: 1_000))
        context.insert(again)
        context.insert(Author(name: "Grace"))
        context.insert(Author(name: "Grace", born: Date(timeIntervalSince1970: 5)))   // not saved yet: updates the inserted one
        try context.save()
        let authors = try ModelContext(container).fetch(FetchDescriptor<Author>(sortBy: [SortDescriptor(\.name)]))
        #expect(authors.map(\.name) == ["Ada", "Grace"])
        #expect(authors.map(\.born) == [Date(timeIntervalSince1970: 1_000), Date(timeIntervalSince1970: 5)])
        #expect(again.persistentModelID == authors[0].persistentModelID, "the inserted model stands for the stored one")
    }

    @Test("deleting an author cascades to its books; their tags stay, without them; rollback undoes a delete", arguments: TypedBackends.all)
    func cascade(_ backend: String) throws {
        let place = try TypedBackends.Place()
        let container = try place.container(backend)
        let context = ModelContext(container)
        Self.library(context)
        try context.save()
        let ada = try #require(try context.fetch(FetchDescriptor<Author>(predicate: #Predicate { $0.name == "Ada" })).first)
        context.delete(ada)
        #expect(ada.isDeleted)
        context.rollback()
        #expect(!ada.isDeleted && ada.books.count == 4)
        context.delete(ada)
        try context.save()
        let other = ModelContext(container)
        #expect(try other.fetchCount(FetchDescriptor<Author>()) == 4)
        #expect(try other.fetchCount(FetchDescriptor<Book>()) == 16)
        #expect(try other.fetch(FetchDescriptor<Book>()).allSatisfy { $0.author?.name != "Ada" })
        #expect(try other.fetch(FetchDescriptor<Tag>()).map { $0.books.count }.reduce(0, +) == 16)
        try other.delete(model: Book.self, where: #Predicate { $0.pages > 200 })
        try other.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Book>()).allSatisfy { $0.pages <= 200 })
    }

    @Test("fetchCount, fetchIdentifiers, model(for:), enumerate, transaction", arguments: TypedBackends.all)
    func reads(_ backend: String) throws {
        let place = try TypedBackends.Place()
        let container = try place.container(backend)
        let context = ModelContext(container)
        try context.transaction { Self.library(context) }
        #expect(!context.hasChanges)
        let descriptor = FetchDescriptor<Book>(predicate: #Predicate { $0.pages >= 100 }, sortBy: [SortDescriptor(\.pages, order: .reverse)])
        let ids = try context.fetchIdentifiers(descriptor)
        #expect(try context.fetchCount(descriptor) == ids.count && ids.count == 16)
        let other = ModelContext(container)
        let first = try #require(other.model(for: ids[0]) as? Book)
        #expect(first.pages == 271 && first.title == "Borges 3")
        var seen: [Int] = []
        try other.enumerate(descriptor, batchSize: 3) { seen.append($0.pages) }
        #expect(seen == seen.sorted(by: >) && seen.count == 16)
        // A failing transaction changes nothing.
        #expect(throws: (any Error).self) {
            try other.transaction {
                other.insert(Author(name: "Nobody"))
                throw CancellationError()
            }
        }
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Author>()) == 5)
    }

    @Test("a fetch sees what another context saved, for every model without unsaved changes; a fetch by identity reads only those models",
          arguments: TypedBackends.all)
    func freshness(_ backend: String) throws {
        let place = try TypedBackends.Place()
        let container = try place.container(backend)
        let mine = ModelContext(container), theirs = ModelContext(container)
        Self.library(mine)
        try mine.save()
        let books = try mine.fetch(FetchDescriptor<Book>(sortBy: [SortDescriptor(\.title)]))
        let (first, second) = (books[0], books[1])
        second.pages = 999   // unsaved here
        for book in try theirs.fetch(FetchDescriptor<Book>(predicate: #Predicate { $0.title == "Ada 0" || $0.title == "Ada 1" })) {
            book.rating = 4.5
            book.subtitle = "revised"
        }
        try theirs.save()
        #expect(first.title == "Ada 0" && first.rating != 4.5)   // nothing read yet
        _ = try mine.fetch(FetchDescriptor<Book>())
        #expect(first.rating == 4.5 && first.subtitle == "revised")
        // A model with unsaved changes keeps them (and the other context's values stay unseen).
        #expect(second.pages == 999 && second.subtitle != "revised")
        // By identity: that model, read by its key; no other model of the type is read into the context.
        let lookup = ModelContext(container)
        let id = first.persistentModelID, other = books[5].persistentModelID
        let found = try lookup.fetch(FetchDescriptor<Book>(predicate: #Predicate { $0.persistentModelID == id }))
        #expect(found.map(\.title) == ["Ada 0"] && found.first?.rating == 4.5)
        #expect((lookup.registeredModel(for: other) as Book?) == nil)
        let ids = [books[3].persistentModelID, id, books[3].persistentModelID]
        #expect(try lookup.fetch(FetchDescriptor<Book>(predicate: #Predicate { ids.contains($0.persistentModelID) })).map(\.title) == ["Ada 0", "Ada 3"])
        #expect(try lookup.fetchCount(FetchDescriptor<Book>(predicate: #Predicate { $0.persistentModelID == other })) == 1)
        // A deleted model is not found by its identity.
        theirs.delete(try #require(theirs.fetch(FetchDescriptor<Book>(predicate: #Predicate { $0.persistentModelID == other })).first))
        try theirs.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Book>(predicate: #Predicate { $0.persistentModelID == other })).isEmpty)
    }

    @Test("a model actor imports; identifiers cross, models do not", arguments: TypedBackends.all)
    func modelActor(_ backend: String) async throws {
        let place = try TypedBackends.Place()
        let container = try place.container(backend)
        let importer = Importer(modelContainer: container)
        let ids = try await importer.add(["Lisbon", "Porto", "Faro"])
        let context = ModelContext(container)
        #expect(Set(ids.compactMap { (context.model(for: $0) as? Author)?.name }) == ["Lisbon", "Porto", "Faro"])
        #expect(try await importer.count() == 3)
        // The actor's subscript finds a model by identifier; nil for one that is not there.
        #expect(try await importer.rename(ids[0], to: "Lisboa"))
        #expect(try ModelContext(container).fetch(FetchDescriptor<Author>(predicate: #Predicate { $0.name == "Lisboa" })).count == 1)
        #expect(try await !importer.rename(Author(name: "Nowhere").persistentModelID, to: "x"))
    }
}

@ModelActor
actor Importer {
    func add(_ names: [String]) throws -> [PersistentIdentifier] {
        let authors = names.map { Author(name: $0) }
        for author in authors { modelContext.insert(author) }
        try modelContext.save()
        return authors.map(\.persistentModelID)
    }

    func count() throws -> Int { try modelContext.fetchCount(FetchDescriptor<Author>()) }

    /// Renames the author with `id` (looked up with the actor's subscript); false when there is none.
    func rename(_ id: PersistentIdentifier, to name: String) throws -> Bool {
        guard let author = self[id, as: Author.self] else { return false }
        author.name = name
        try modelContext.save()
        return true
    }
}
