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

    /// Two versions of the books model, neither of them the one the store was made with (each
    /// adds an attribute): the store is of no version of this bundle, so `--on-incompatible` acts.
    static func bundle(_ workspace: Harness) throws -> String {
        for (name, extra) in [("Books", "isbn"), ("Books 2", "subtitle")] {
            try FileManager.default.createDirectory(at: workspace.url.appending(path: "Books.xcdatamodeld/\(name).xcdatamodel"),
                                                    withIntermediateDirectories: true)
            _ = try workspace.write("""
                <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
                <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                    <entity name="Shelf"><attribute name="name" optional="YES" attributeType="String"/>
                        <relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="shelf" inverseEntity="Book"/></entity>
                    <entity name="Book"><attribute name="title" optional="YES" attributeType="String"/><attribute name="\(extra)" optional="YES" attributeType="String"/>
                        <relationship name="shelf" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Shelf" inverseName="books" inverseEntity="Shelf"/></entity>
                </model>
                """, to: "Books.xcdatamodeld/\(name).xcdatamodel/contents")
        }
        return workspace.path("Books.xcdatamodeld")
    }

    /// Rounds of the move-aside race per backend (`OBJECTSTORE_RACES`, default 2).
    static let races = ProcessInfo.processInfo.environment["OBJECTSTORE_RACES"].flatMap(Int.init) ?? 2

    @Test("move-aside while an import runs: the import's books are in the moved-aside store or in the new one, or the import fails saying why; never lost with exit 0",
          arguments: durable)
    func moveAsideDuringImport(_ type: String) throws {
        let workspace = try Harness()
        let model = try workspace.write(Self.model, to: "model.json")
        let bundle = try Self.bundle(workspace)
        let big = try workspace.write(Self.document("a-", 20_000), to: "a.json")
        let base = try workspace.write(Self.document("base-", 10), to: "base.json")
        for round in 0..<Self.races {
            let store = workspace.path("race\(round).\(type)")
            #expect(try CLI.run("import", store, base, "--model", model).status == 0)
            let importing = try Self.start(["import", store, big])
            // From the start of the import to well into it, round by round.
            usleep(UInt32(50_000 + 400_000 * round / max(1, Self.races - 1)))
            let moved = try CLI.run("migrate", store, "--model", bundle, "--on-incompatible", "move-aside")
            let imported = Self.finish(importing)
            #expect(!moved.signaled && !imported.signaled)
            #expect(moved.status == 0 || moved.stderr.contains("busy"), "round \(round): \(moved.stderr)")
            #expect(imported.status == 0 || imported.stderr.contains("moved this store aside") || imported.stderr.contains("another model"),
                    "round \(round): \(imported.stderr)")
            // Where the import's books are: the store at the path, or the one moved aside.
            let aside = moved.stdout.split(separator: "\n").first { $0.hasPrefix("moved aside: ") }.map { String($0.dropFirst("moved aside: ".count)) }
            var found = 0
            for place in [store] + (aside.map { [$0] } ?? []) {
                let counts = try CLI.run("inspect", place).stdout
                if counts.contains("  Book \(10 + 20_000)\n") || counts.contains("  Book 20000\n") { found += 1 }
                #expect(try CLI.run("validate", place).status == 0, "round \(round): \(place)")
            }
            if imported.status == 0 {
                #expect(found == 1, "round \(round): the import said it wrote 20,000 books, and \(found) stores hold them")
            } else {
                #expect(found == 0, "round \(round): the import failed, and \(found) stores hold its books")
            }
        }
    }
}
