import Foundation
import ObjectModel
import ObjectStore
import SQLiteStore
import Testing

/// The code of the ObjectStore documentation's "Getting started" article, as written there
/// (a model in Swift, a SQLite store, a save and a fetch): the article must not drift from the API.
@Test("the Getting started article's code runs as written")
func gettingStartedArticle() throws {
    let folder = FileManager.default.temporaryDirectory.appending(path: "getting-started-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }

    let model = try ManagedObjectModel {
        Entity("Author") {
            Attribute("name", .string, optional: false)
            Relationship("books", to: "Book", inverse: "author", toMany: true)
        }
        Entity("Book") {
            Attribute("title", .string, optional: false)
            Relationship("author", to: "Author", inverse: "books")
        }
    }
    SQLiteStore.register()
    let coordinator = StoreCoordinator(model: model)
    try coordinator.addStore(type: "sqlite", at: folder.appending(path: "library.sqlite"))
    let context = ObjectContext(coordinator: coordinator)

    let author = try context.insert("Author")
    try author.set("name", .string("Ursula K. Le Guin"))
    let book = try context.insert("Book")
    try book.set("title", .string("A Wizard of Earthsea"))
    try book.setObject(author, forKey: "author")   // the inverse, author.books, follows
    try context.save()

    let books = try context.fetch(FetchRequest(entity: "Book", predicate: try ObjectPredicate("author.name BEGINSWITH 'Ursula'")))
    #expect(books.map { $0["title"] } == [.string("A Wizard of Earthsea")])
    #expect(try context.fetch(FetchRequest(entity: "Author")).first.map { try $0.objects(forKey: "books").count } == 1)
}
