import Foundation
import ObjectModel
import ObjectStore
import LMDBStore
import SQLiteStore
import Testing
import TestSupport

/// A context in this process and the real binary in another, on one store: the other
/// process's save reaches the context through the history and is merged; a change the
/// context made over it is a conflict naming the object.
@Suite("A context merges another process's saves")
struct ProcessMergeTests {
    @Test("objectstore update in another process: the context's object read again by the merge; a stale change of it refused as a conflict naming it",
          arguments: ["sqlite", "lmdb"])
    func mergeAcrossProcesses(_ type: String) throws {
        let workspace = try Workspace()
        let store = workspace.url.appending(path: "lib.\(type)")
        let bundle = PostgreSQLCommandTests.examples.appending(path: "Library.xcdatamodeld")
        #expect(try CLI.run("import", store.path, PostgreSQLCommandTests.examples.appending(path: "library.json").path, "--model", bundle.path).status == 0)
        let model = try ModelLoader.loadModel(at: bundle)
        let registry = StoreTypeRegistry()
        SQLiteStore.register(in: registry)
        LMDBStore.register(in: registry)
        let coordinator = StoreCoordinator(model: model, registry: registry)
        let opened = try coordinator.addStore(type: type, at: store)
        defer { try? opened.close() }
        let context = ObjectContext(coordinator: coordinator)
        let books = try context.fetch(FetchRequest(entity: "Book", predicate: try ObjectPredicate("title == 'Solaris'")))
        let solaris = try #require(books.first)
        let before = try opened.lastHistoryToken()

        let updated = try CLI.run("update", store.path, "--entity", "Book", "--where", "title == 'Solaris'", "--set", "pageCount=999", "--author", "other process")
        #expect(updated.stdout == "updated 1\n", "\(updated.stdout)\(updated.stderr)")
        var seen: [StoreTransaction] = []
        try HistoryObserver(store: opened, type: try registry.type(named: type), after: before).run { transaction in
            seen.append(transaction)
            return false
        }
        #expect(seen.first?.author == "other process")
        #expect(seen.first?.updated.map(\.key) == [solaris.objectID.key])
        #expect(solaris["pageCount"] == .integer(204))
        try context.mergeChanges(from: seen[0])
        #expect(solaris["pageCount"] == .integer(999), "read again by the merge, no fetch")

        // A change made here over another change there: refused, naming the book; the other process's value stays.
        try solaris.set("pageCount", .integer(1))
        #expect(try CLI.run("update", store.path, "--entity", "Book", "--where", "title == 'Solaris'", "--set", "pageCount=500").status == 0)
        let conflict = try #require(throws: StoreError.self) { try context.save() }
        #expect(conflict.code == .conflict && conflict.objectID == solaris.objectID)
        let export = try CLI.run("export", store.path, "--entity", "Book", "--where", "title == 'Solaris'")
        #expect(export.stdout.contains("\"pageCount\": 500"), "\(export.stdout)")
    }
}
