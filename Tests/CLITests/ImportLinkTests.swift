import Foundation
import Testing
import TestSupport

/// `import` into a store that has objects: relationships that name them by `Entity/pk`, and
/// `--upsert` by a uniqueness constraint. The oracle is the documents themselves and, for SQLite,
/// the rows as SQLite reads them (both sides of every relationship).
@Suite("objectstore import: linking to what is there, upsert")
struct ImportLinkTests {
    static let model = """
        {"format": "objectstore-model", "formatVersion": 1, "entities": [
         {"name": "Author", "attributes": [{"name": "email", "type": "String"}, {"name": "name", "type": "String", "optional": true}],
          "uniquenessConstraints": [["email"]],
          "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "author"}]},
         {"name": "Book", "attributes": [{"name": "title", "type": "String"}],
          "relationships": [{"name": "author", "destination": "Author", "inverse": "books"}]}]}
        """

    /// Authors by email with their name and book titles, and books by title with their author's email, from an export.
    func graph(_ store: String) throws -> (authors: [String: String], books: [String: String]) {
        let export = try CLI.run("export", store)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [String: [[String: Any]]])
        let authors = document["Author"] ?? [], books = document["Book"] ?? []
        let emailOf = Dictionary(uniqueKeysWithValues: authors.map { ($0["_id"] as! String, $0["email"] as! String) })
        let titleOf = Dictionary(uniqueKeysWithValues: books.map { ($0["_id"] as! String, $0["title"] as! String) })
        return (Dictionary(uniqueKeysWithValues: authors.map { a in
                    (a["email"] as! String, "\(a["name"] as? String ?? "-"): " + (a["books"] as! [String]).map { titleOf[$0]! }.sorted().joined(separator: ","))
                }),
                Dictionary(uniqueKeysWithValues: books.map { ($0["title"] as! String, ($0["author"] as? String).map { emailOf[$0]! } ?? "-") }))
    }

    @Test("a new object links to existing ones by Entity/pk, both sides kept; an unknown or wrong-kind key is refused, nothing imported",
          arguments: CLI.backends)
    func links(_ ext: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write(Self.model, to: "m.json"), store = workspace.url.appending(path: "s.\(ext)").path
        let first = try workspace.write(#"{"Author": [{"_id": "a", "email": "ann@x", "name": "Ann"}, {"_id": "b", "email": "bo@x"}], "Book": [{"_id": "k", "title": "K", "author": "a"}]}"#, to: "1.json")
        #expect(try CLI.run("import", store, first, "--model", model).status == 0)
        // Bo is Author/2 and K is Book/1, as the first export numbered them.
        let second = try workspace.write(#"{"Book": [{"_id": "n", "title": "N", "author": "Author/2"}], "Author": [{"_id": "c", "email": "cy@x", "books": ["Book/1"]}]}"#, to: "2.json")
        // Without --link-existing a key the document does not have is refused: a partial export never links to another store's objects.
        let unlinked = try CLI.run("import", store, second)
        #expect(unlinked.status == 1 && unlinked.stderr.contains(#"no object has _id "Book/1""#), "\(unlinked.stderr)")
        let result = try CLI.run("import", store, second, "--link-existing")
        #expect(result.status == 0 && result.stdout == "Author 1\nBook 1\n", "\(result.stderr)")
        let (authors, books) = try graph(store)
        #expect(authors == ["ann@x": "Ann: ", "bo@x": "-: N", "cy@x": "-: K"], "K moved from Ann to Cy, N is Bo's")
        #expect(books == ["K": "cy@x", "N": "bo@x"])
        if ext == "sqlite" {
            let raw = try RawDatabase(URL(filePath: store))
            defer { raw.close() }
            #expect(try raw.strings("SELECT b.ZTITLE, a.ZEMAIL FROM ZBOOK b JOIN ZAUTHOR a ON a.Z_PK = b.ZAUTHOR ORDER BY b.ZTITLE") == [["K", "cy@x"], ["N", "bo@x"]])
        }
        let before = try graph(store)
        for (document, why) in [(#"{"Book": [{"_id": "x", "title": "X", "author": "Author/99"}]}"#, #"the store has no object "Author/99""#),
                                (#"{"Book": [{"_id": "x", "title": "X", "author": "Book/1"}]}"#, "Book/1 is a Book, not a Author")] {
            let bad = try CLI.run("import", store, try workspace.write(document, to: "bad.json"), "--link-existing")
            #expect(bad.status == 1 && bad.stderr.contains(why), "\(bad.stderr)")
            #expect(try graph(store) == before, "nothing imported")
        }
    }

    @Test("--upsert: an object equal by a constraint updates the existing one (given values replace, the rest kept); without it nothing is imported",
          arguments: CLI.backends)
    func upsert(_ ext: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write(Self.model, to: "m.json"), store = workspace.url.appending(path: "s.\(ext)").path
        let first = try workspace.write(#"{"Author": [{"_id": "a", "email": "ann@x", "name": "Ann"}], "Book": [{"_id": "k", "title": "K", "author": "a"}]}"#, to: "1.json")
        #expect(try CLI.run("import", store, first, "--model", model).status == 0)
        let again = try workspace.write(#"{"Author": [{"_id": "x", "email": "ann@x", "name": "Ann B."}, {"_id": "y", "email": "cy@x"}], "Book": [{"_id": "m", "title": "M", "author": "x"}]}"#, to: "2.json")
        let refused = try CLI.run("import", store, again)
        #expect(refused.status == 1 && refused.stderr.contains("Author(email)") && refused.stderr.contains("--upsert"), "\(refused.stderr)")
        #expect(try graph(store).authors == ["ann@x": "Ann: K"])
        let result = try CLI.run("import", store, again, "--upsert")
        #expect(result.status == 0 && result.stdout == "Author 2 (1 new, 1 updated)\nBook 1 (1 new, 0 updated)\n", "\(result.stderr)")
        let (authors, books) = try graph(store)
        #expect(authors == ["ann@x": "Ann B.: K,M", "cy@x": "-: "], "the name replaced, K kept, M added")
        #expect(books == ["K": "ann@x", "M": "ann@x"])
        #expect(try CLI.run("validate", store).status == 0)
        let twice = try workspace.write(#"{"Author": [{"_id": "p", "email": "cy@x"}, {"_id": "q", "email": "cy@x"}]}"#, to: "3.json")
        let clash = try CLI.run("import", store, twice, "--upsert")
        #expect(clash.status == 1 && clash.stderr.contains("both equal Author/"), "\(clash.stderr)")
    }
}
