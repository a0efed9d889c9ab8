import Foundation
import ObjectStoreData
import Testing

/// History, transactions and observed fetches through the typed layer, on every backend.
@Suite("Typed models: history, transactions and observed fetches")
struct LiveDataTests {
    @Test("fetchHistory: every save a transaction with its author and changes (both sides of a relationship), after a token, by predicate; deleteHistory through one",
          arguments: TypedBackends.all)
    func history(_ backend: String) throws {
        let place = try TypedBackends.Place()
        let container = try place.container(backend)
        let writer = ModelContext(container)
        writer.transactionAuthor = "writer"
        let ada = Author(name: "Ada")
        writer.insert(ada)
        try writer.save()
        let book = Book(title: "Notes", pages: 1, author: ada)
        writer.insert(book)
        try writer.save()
        book.pages = 2
        try writer.save()
        writer.delete(book)
        try writer.save()

        let reader = ModelContext(container)
        let all = try reader.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(all.map(\.author) == ["writer", "writer", "writer", "writer"])
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.token < $1.token })
        guard all.count == 4 else { return }
        let adaID = ada.persistentModelID, bookID = all[1].changes.compactMap { change -> PersistentIdentifier? in
            if case .insert(let insert) = change { return insert.changedPersistentIdentifier }
            return nil
        }.first
        #expect(all[0].changes.map(\.changedPersistentIdentifier) == [adaID])
        if case .insert? = all[0].changes.first {} else { Issue.record("not an insert: \(all[0].changes)") }
        #expect(bookID?.entityName == "Book")
        #expect(all[1].changes.contains { if case .update(let u) = $0 { return u.changedPersistentIdentifier == adaID && u.updatedAttributes == ["books"] } else { return false } })
        #expect(all[2].changes.map(\.changedPersistentIdentifier) == [bookID].compactMap { $0 })
        if case .update(let update)? = all[2].changes.first { #expect(update.updatedAttributes == ["pages"]) } else { Issue.record("no update") }
        #expect(all[3].changes.contains { if case .delete(let d) = $0 { return d.changedPersistentIdentifier == bookID } else { return false } })

        // A predicate over the transaction, as in SwiftData; the token is Codable, to keep between runs.
        let second = all[1].token
        let kept = try JSONDecoder().decode(DefaultHistoryToken.self, from: JSONEncoder().encode(second))
        let later = try reader.fetchHistory(HistoryDescriptor(predicate: #Predicate<DefaultHistoryTransaction> { $0.token > kept }))
        #expect(later.map(\.token) == [all[2].token, all[3].token])
        var byAuthor = HistoryDescriptor<DefaultHistoryTransaction>()
        byAuthor.author = "nobody"
        #expect(try reader.fetchHistory(byAuthor).isEmpty)

        try reader.deleteHistory(HistoryDescriptor(predicate: #Predicate<DefaultHistoryTransaction> { $0.token <= kept }))
        #expect(try reader.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).map(\.token) == [all[2].token, all[3].token])
    }

    @Test("an observed fetch yields the current results, then again after saves of another context that touch its type, merged", arguments: TypedBackends.all)
    func observedFetch(_ backend: String) async throws {
        let place = try TypedBackends.Place()
        let container = try place.container(backend)
        let watcher = ModelContext(container)
        var results = watcher.results(for: FetchDescriptor<Book>(sortBy: [SortDescriptor(\.title)])).makeAsyncIterator()
        #expect(try await results.next()?.isEmpty == true)

        let writer = ModelContext(container)
        writer.transactionAuthor = "writer"
        let a = Book(title: "A", pages: 1), b = Book(title: "B", pages: 2)
        writer.insert(a)
        writer.insert(b)
        try writer.save()
        let two = try #require(try await within(300) { try await results.next() })
        #expect(two.map(\.title) == ["A", "B"])

        // An author only: no Book changes, so no new result for it; then a book's change is one.
        writer.insert(Author(name: "Ada"))
        try writer.save()
        a.title = "A2"
        try writer.save()
        let renamed = try #require(try await within(300) { try await results.next() })
        #expect(renamed.map(\.title) == ["A2", "B"])
        #expect(renamed.first === two.first, "the watcher's own model, read again by the merge")

        writer.delete(b)
        try writer.save()
        let one = try #require(try await within(300) { try await results.next() })
        #expect(one.map(\.title) == ["A2"])
    }

    @Test("the container's transactions: another context's saves arrive in order with their authors", arguments: TypedBackends.all)
    func containerTransactions(_ backend: String) async throws {
        let place = try TypedBackends.Place()
        let container = try place.container(backend)
        var transactions = container.transactions().makeAsyncIterator()
        let writer = ModelContext(container)
        writer.transactionAuthor = "first"
        writer.insert(Author(name: "Ada"))
        try writer.save()
        writer.transactionAuthor = "second"
        writer.insert(Author(name: "Bob"))
        try writer.save()
        let first = try #require(try await within(300) { try await transactions.next() })
        let second = try #require(try await within(300) { try await transactions.next() })
        #expect([first.author, second.author] == ["first", "second"])
        #expect(first.token < second.token)
    }
}

/// `body`'s result; a failure is recorded when it has not come after `seconds` (it is still
/// awaited). No figure of time is asserted: under a full parallel test run the task may wait
/// for a thread far longer than the delivery takes (docs/performance.md measures that).
func within<T>(_ seconds: Double, _ body: () async throws -> T?) async throws -> T? {
    let watchdog = Task {
        try await Task.sleep(for: .seconds(seconds))
        Issue.record("nothing arrived within \(seconds) s")
    }
    defer { watchdog.cancel() }
    return try await body()
}
