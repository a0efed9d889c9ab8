import Foundation
import Testing
import TestSupport

/// Two real processes on one store: no write is lost, and no reader sees half of one.
@Suite("Two processes on one store")
struct TwoProcessTests {
    static let durable = CLI.backends

    static func start(_ arguments: [String]) throws -> (Process, Pipe, Pipe) {
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        return (process, out, err)
    }

    static func finish(_ started: (Process, Pipe, Pipe)) -> CLI.Result {
        let (process, out, err) = started
        let stdout = out.fileHandleForReading.readDataToEndOfFile(), stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CLI.Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                          stderr: String(decoding: stderr, as: UTF8.self), signaled: process.terminationReason == .uncaughtSignal)
    }

    /// A document of `count` books on a few shelves, ids prefixed so that several can go into one store.
    static func document(_ prefix: String, _ count: Int) -> String {
        let shelves = (0..<10).map { "{\"_id\": \"\(prefix)s\($0)\", \"name\": \"\(prefix) shelf \($0)\"}" }
        let books = (0..<count).map { "{\"_id\": \"\(prefix)b\($0)\", \"title\": \"\(prefix) \($0)\", \"shelf\": \"\(prefix)s\($0 % 10)\"}" }
        return "{\"Shelf\": [\(shelves.joined(separator: ", "))], \"Book\": [\(books.joined(separator: ", "))]}"
    }

    static let model = """
        {"format": "objectstore-model", "formatVersion": 1, "entities": [
          {"name": "Shelf", "attributes": [{"name": "name", "type": "String"}],
           "relationships": [{"name": "books", "destination": "Book", "inverse": "shelf", "toMany": true}]},
          {"name": "Book", "attributes": [{"name": "title", "type": "String"}],
           "relationships": [{"name": "shelf", "destination": "Shelf", "inverse": "books"}]}]}
        """

    @Test("two imports at once: both land, or the second is told the store is busy", arguments: durable)
    func twoWriters(_ type: String) throws {
        let workspace = try Harness()
        let model = try workspace.write(Self.model, to: "model.json")
        let store = workspace.path("two.\(type)")
        #expect(try CLI.run("import", store, try workspace.write(Self.document("base-", 10), to: "base.json"), "--model", model).status == 0)
        let big = try workspace.write(Self.document("a-", 20_000), to: "a.json")
        let small = try workspace.write(Self.document("b-", 500), to: "b.json")
        let first = try Self.start(["import", store, big])
        usleep(100_000)
        let second = try CLI.run("import", store, small)
        let firstResult = Self.finish(first)
        #expect(firstResult.status == 0, "\(firstResult.stderr)")
        #expect(second.status == 0 || second.stderr.contains("busy"), "\(second.stderr)")
        let both = second.status == 0
        let counts = try CLI.run("inspect", store).stdout
        #expect(counts.contains("  Book \(10 + 20_000 + (both ? 500 : 0))\n"), "\(counts)")
        #expect(counts.contains("  Shelf \(20 + (both ? 10 : 0))"), "\(counts)")
        #expect(try CLI.run("validate", store).status == 0)
    }

    @Test("an export while an import runs reads one moment: before it or after it, every reference whole", arguments: durable)
    func exportDuringImport(_ type: String) throws {
        let workspace = try Harness()
        let model = try workspace.write(Self.model, to: "model.json")
        let store = workspace.path("snap.\(type)")
        #expect(try CLI.run("import", store, try workspace.write(Self.document("base-", 3_000), to: "base.json"), "--model", model).status == 0)
        try Self.exportWhileImporting(store, workspace, base: 3_000, more: 20_000)
    }

    /// Exports `store` (holding `base` books) over and over while another process imports `more`:
    /// each export holds the books before the import or after it, every reference whole.
    static func exportWhileImporting(_ store: String, _ workspace: Harness, base: Int, more: Int) throws {
        let writer = try start(["import", store, try workspace.write(document("more-", more), to: "more.json")])
        var exports = 0
        while writer.0.isRunning || exports == 0 {
            let export = try CLI.run("export", store)
            exports += 1
            #expect(export.status == 0, "export \(exports): \(export.stderr)")
            let document = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [String: [[String: Any]]])
            let books = document["Book"] ?? [], shelves = document["Shelf"] ?? []
            #expect([base, base + more].contains(books.count), "export \(exports) holds \(books.count) books: half an import")
            let ids = Set((books + shelves).compactMap { $0["_id"] as? String })
            let dangling = books.compactMap { $0["shelf"] as? String }.filter { !ids.contains($0) }
                + shelves.flatMap { ($0["books"] as? [String]) ?? [] }.filter { !ids.contains($0) }
            #expect(dangling.isEmpty, "export \(exports): \(dangling.count) references to objects not in it")
            if exports > 40 { break }
        }
        #expect(finish(writer).status == 0)
    }
}
