import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import SQLiteStore
import Testing

/// Contexts on one store through separate connections (as separate processes have them): a
/// save in one reaches the other through the history (``HistoryObserver``) and
/// ``ObjectContext/mergeChanges(from:)``; a write over a change the writer had not seen is a
/// conflict, never a lost update.
@Suite("Contexts merge each other's saves; stale writes conflict")
struct ContextMergeTests {
    static let model: ManagedObjectModel = try! ManagedObjectModel {
        Entity("Person") {
            Attribute("name", .string, optional: false)
            Attribute("age", .integer64)
            Relationship("pets", to: "Pet", inverse: "owner", toMany: true)
        }
        Entity("Pet") {
            Attribute("name", .string)
            Relationship("owner", to: "Person", inverse: "pets")
        }
    }

    let folder: TemporaryFolder
    let url: URL

    init() throws {
        SQLiteStore.register()
        folder = try TemporaryFolder()
        url = folder.file("people.sqlite")
        try SQLiteStoreType().open(at: url, model: Self.model, options: StoreOptions()).close()
    }

    /// A context on a store connection of its own.
    func context(author: String? = nil) throws -> ObjectContext { try Self.context(url, author: author) }

    static func context(_ url: URL, author: String?) throws -> ObjectContext {
        let coordinator = StoreCoordinator(model: model)
        try coordinator.addStore(type: "sqlite", at: url)
        let context = ObjectContext(coordinator: coordinator)
        context.transactionAuthor = author
        return context
    }

    /// The transactions the store of `context` records after `token`, waiting for `count` of them.
    func transactions(of context: ObjectContext, after token: Int64, count: Int) throws -> [StoreTransaction] {
        let store = try #require(context.coordinator.stores.first)
        var found: [StoreTransaction] = []
        try HistoryObserver(store: store, type: SQLiteStoreType(), after: token).run { transaction in
            found.append(transaction)
            return found.count < count
        }
        return found
    }

    @Test("a save in one context is merged into another: updated objects read again, deleted ones leave; authors recorded")
    func merge() throws {
        let writer = try context(author: "writer"), reader = try context()
        let ada = try writer.insert("Person")
        try ada.set("name", "Ada")
        try ada.set("age", Int64(36))
        try writer.save()
        let seen = try #require(try reader.fetch(FetchRequest(entity: "Person")).first)
        #expect(seen["age"] == .integer(36))
        let token = try reader.coordinator.stores[0].lastHistoryToken()

        try ada.set("age", Int64(37))
        try writer.save()
        let update = try transactions(of: reader, after: token, count: 1)
        #expect(update.map(\.author) == ["writer"])
        #expect(update.first?.updated == [UpdatedObject(key: ada.objectID.key, properties: ["age"])])
        let merged = try reader.mergeChanges(from: update[0])
        #expect(merged.refreshed.map(\.objectID) == [seen.objectID])
        #expect(seen["age"] == .integer(37), "read again without a fetch")

        writer.delete(ada)
        try writer.save()
        let deletion = try transactions(of: reader, after: update[0].token.value, count: 1)
        #expect(deletion.first?.deleted == [ada.objectID.key])
        #expect(try reader.mergeChanges(from: deletion[0]).removed.map(\.objectID) == [seen.objectID])
        #expect(reader.registeredObject(for: seen.objectID) == nil)
    }

    @Test("a coordinator's transactions: another connection's saves arrive in order, merged into a context as they come")
    func coordinatorTransactions() async throws {
        let writer = try context(author: "writer"), reader = try context()
        var transactions = reader.coordinator.transactions().makeAsyncIterator()
        let ada = try writer.insert("Person")
        try ada.set("name", "Ada")
        try writer.save()
        try ada.set("age", Int64(3))
        try writer.save()
        let first = try #require(try await transactions.next()), second = try #require(try await transactions.next())
        #expect(first.inserted == [ada.objectID.key] && second.updated.map(\.key) == [ada.objectID.key])
        #expect([first.author, second.author] == ["writer", "writer"] && first.token < second.token)
        try reader.mergeChanges(from: first)
        #expect(try reader.fetch(FetchRequest(entity: "Person")).first?["age"] == .integer(3))
    }

    @Test("a change made over an object another context changed since is a conflict naming it, merged or not")
    func staleWrite() throws {
        let first = try context(), second = try context()
        let ada = try first.insert("Person")
        try ada.set("name", "Ada")
        try first.save()
        let token = try first.coordinator.stores[0].lastHistoryToken()
        let stale = try #require(try second.fetch(FetchRequest(entity: "Person")).first)
        try stale.set("age", Int64(1))
        try ada.set("age", Int64(2))
        try first.save()
        // Merging keeps the second context's unsaved change; saving it is refused.
        let transaction = try transactions(of: second, after: token, count: 1)[0]
        #expect(try second.mergeChanges(from: transaction).refreshed.isEmpty)
        let error = try #require(throws: StoreError.self) { try second.save() }
        #expect(error.code == .conflict)
        #expect(error.objectID == ada.objectID)
        #expect(try first.coordinator.stores[0].record(for: ada.objectID.key)?.attributes["age"] == .integer(2), "the first save stands")
    }

    @Test("8 writers on their own connections increment one counter: every increment lands, each once, in history")
    func hammer() throws {
        let setup = try context()
        let counter = try setup.insert("Person")
        try counter.set("name", "counter")
        try counter.set("age", Int64(0))
        try setup.save()
        let start = try setup.coordinator.stores[0].lastHistoryToken()
        let writers = 8, increments = 25
        let conflicts = Mutex(0)
        let url = self.url
        try withThrowingTaskGroupSync(count: writers) { index in
            let context = try Self.context(url, author: "writer \(index)")
            var done = 0
            while done < increments {
                let object = try #require(try context.fetch(FetchRequest(entity: "Person")).first)
                let age = try #require(object["age", as: Int64.self])
                try object.set("age", age + 1)
                do {
                    try context.save()
                    done += 1
                } catch let error as StoreError where error.code == .conflict || error.code == .busy {
                    conflicts.withLock { $0 += 1 }
                    context.rollback()
                }
            }
        }
        let store = setup.coordinator.stores[0]
        #expect(try store.record(for: counter.objectID.key)?.attributes["age"] == .integer(Int64(writers * increments)))
        let history = try store.history(after: start, limit: 10_000)
        #expect(history.count == writers * increments)
        for index in 0..<writers { #expect(history.filter { $0.author == "writer \(index)" }.count == increments) }
        #expect(zip(history, history.dropFirst()).allSatisfy { $0.token < $1.token })
    }
}

import Synchronization

/// Runs `body(0..<count)` on `count` threads at once; rethrows the first failure.
func withThrowingTaskGroupSync(count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
    let failures = Mutex<[String]>([])
    DispatchQueue.concurrentPerform(iterations: count) { index in
        do { try body(index) } catch { failures.withLock { $0.append("\(index): \(error)") } }
    }
    let found = failures.withLock { $0 }
    if !found.isEmpty { Issue.record("\(found)") }
}
