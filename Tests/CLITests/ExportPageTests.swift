import Foundation
import Testing
import TestSupport

/// `export --entity E --where P --sort K[:desc] --limit N --offset N`: one page of a fetch, on
/// every backend. The oracle is the input document, filtered, sorted and cut by this test's own code.
@Suite("objectstore export: a sorted page")
struct ExportPageTests {
    static let model = """
        {"format": "objectstore-model", "formatVersion": 1, "entities": [
         {"name": "Song", "attributes": [{"name": "title", "type": "String"}, {"name": "plays", "type": "Integer 64", "optional": true},
                                         {"name": "rating", "type": "Double", "optional": true}]}]}
        """

    /// 60 songs: plays cycle through 0..<7 (some missing), ratings through 0..<5, titles unique.
    static let songs: [(title: String, plays: Int?, rating: Double?)] = (0..<60).map { (i: Int) -> (title: String, plays: Int?, rating: Double?) in
        let title = "song " + String(format: "%02d", (i * 37) % 60)
        let plays: Int? = i % 9 == 4 ? nil : (i * 5) % 7
        let rating: Double? = i % 11 == 3 ? nil : Double((i * 3) % 5) / 2
        return (title, plays, rating)
    }

    @Test("sort by two keys (ascending and :desc), a predicate, an offset and a limit give what the document says, on every backend",
          arguments: CLI.backends + ["postgresql"])
    func page(_ backend: String) throws {
        let workspace = try Workspace()
        let store = backend == "postgresql" ? try PostgreSQLTestServer.location().absoluteString : workspace.url.appending(path: "s.\(backend)").path
        defer { if backend == "postgresql" { _ = try? CLI.run("destroy", store) } }
        let model = try workspace.write(Self.model, to: "m.json")
        let objects = Self.songs.map { song in
            "{\"_id\": \"\(song.title)\", \"title\": \"\(song.title)\"" + (song.plays.map { ", \"plays\": \($0)" } ?? "")
                + (song.rating.map { ", \"rating\": \($0)" } ?? "") + "}"
        }
        let data = try workspace.write("{\"Song\": [" + objects.joined(separator: ", ") + "]}", to: "d.json")
        let imported = try CLI.run("import", store, data, "--model", model)
        #expect(imported.status == 0, "\(imported.stderr)")
        let result = try CLI.run("export", store, "--entity", "Song", "--where", "plays >= 2", "--sort", "plays:desc", "--sort", "title",
                                 "--offset", "5", "--limit", "12")
        #expect(result.status == 0, "\(result.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: [[String: Any]]])
        let titles = document["Song"]?.map { $0["title"] as! String }
        let expected = Self.songs.filter { ($0.plays ?? -1) >= 2 }
            .sorted { a, b in a.plays! != b.plays! ? a.plays! > b.plays! : a.title < b.title }
            .dropFirst(5).prefix(12).map(\.title)
        #expect(titles == Array(expected))
        // Missing values sort first ascending (as a fetch sorts them), and a page past the end is empty.
        let nils = try CLI.run("export", store, "--entity", "Song", "--sort", "rating", "--sort", "title", "--limit", "3")
        let first = try #require(try JSONSerialization.jsonObject(with: Data(nils.stdout.utf8)) as? [String: [[String: Any]]])["Song"]
        #expect(first.map { $0.map { $0["title"] as! String } } == Array(Self.songs.filter { $0.rating == nil }.map(\.title).sorted().prefix(3)))
        let past = try CLI.run("export", store, "--entity", "Song", "--offset", "1000")
        #expect(past.status == 0 && past.stdout == "{\n  \"Song\": []\n}\n", "\(past.stdout)")
    }
}
