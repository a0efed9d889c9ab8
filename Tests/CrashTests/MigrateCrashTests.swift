import Foundation
import Testing
import TestSupport

/// `objectstore migrate` over a three-version chain (inferred, then a mapping file), killed with
/// SIGKILL at points spread over an uninterrupted run. After every kill the store is at its
/// original version with its original data or at the target with all of it, and the next run
/// finishes and leaves nothing behind.
///
/// `OBJECTSTORE_MIGRATE_KILLS` sets the kill points per backend (20 by default).
@Suite("migrate, killed at any moment")
struct MigrateCrashTests {
    static let kills = Int(ProcessInfo.processInfo.environment["OBJECTSTORE_MIGRATE_KILLS"] ?? "") ?? 20

    static func version(_ extra: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Shelf" syncable="YES">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="shelf" inverseEntity="Book"/>
            </entity>
            <entity name="Book" syncable="YES">
                <attribute name="title" attributeType="String"/>
                <attribute name="pages" optional="YES" attributeType="Integer 32" usesScalarValueType="YES"/>
                \(extra)
                <relationship name="shelf" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Shelf" inverseName="books" inverseEntity="Shelf"/>
            </entity>
        </model>
        """
    }

    static let note = #"<attribute name="note" optional="YES" attributeType="String"/>"#
    static let label = #"<attribute name="label" attributeType="String"/>"#
    static let mapping = """
        {"format": "objectstore-mapping", "formatVersion": 1, "sourceVersion": "Books 2", "destinationVersion": "Books 3", "entityMappings": [
          {"name": "BookToBook", "kind": "transform", "source": "Book", "destination": "Book",
           "attributes": {"title": "$source.title", "pages": "$source.pages", "note": "$source.note", "label": "uppercase($source.title)"},
           "relationships": {"shelf": "$source.shelf"}},
          {"name": "ShelfToShelf", "kind": "copy", "source": "Shelf", "destination": "Shelf",
           "attributes": {"name": "$source.name"}, "relationships": {"books": "$source.books"}}]}
        """

    /// Books by title: pages, the shelf's name, and the label (nil before the last version).
    typealias Books = [String: [String]]

    /// The books an export holds, with their shelves by name, checked against the shelves' own lists.
    static func books(_ export: String) throws -> Books {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(export.utf8)) as? [String: [[String: Any]]])
        let shelves = Dictionary(uniqueKeysWithValues: (document["Shelf"] ?? []).map { ($0["_id"] as? String ?? "", $0) })
        var books: Books = [:]
        for book in document["Book"] ?? [] {
            let id = book["_id"] as? String ?? ""
            let shelf = (book["shelf"] as? String).flatMap { shelves[$0] }
            #expect((shelf?["books"] as? [String])?.contains(id) ?? (book["shelf"] is NSNull), "both sides of \(id)'s shelf")
            books[book["title"] as? String ?? ""] = ["\(book["pages"] ?? "")", shelf?["name"] as? String ?? "", book["label"] as? String ?? "-"]
        }
        return books
    }

    /// The three-version bundle, the mapping file and the data of `count` books in `workspace`.
    static func writeInputs(_ workspace: Harness, count: Int) throws -> (bundle: String, mapping: String, data: String) {
        for (name, extra) in [("Books", ""), ("Books 2", Self.note), ("Books 3", Self.note + Self.label)] {
            let folder = workspace.url.appending(path: "Books.xcdatamodeld/\(name).xcdatamodel")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(Self.version(extra).utf8).write(to: folder.appending(path: "contents"))
        }
        let mapping = try workspace.write(Self.mapping, to: "to-3.json")
        let shelves = (0..<4).map { "{\"_id\": \"s\($0)\", \"name\": \"shelf \($0)\"}" }
        let list = (0..<count).map { "{\"_id\": \"b\($0)\", \"title\": \"book \($0) é\", \"pages\": \($0), \"shelf\": \"s\($0 % 4)\"}" }
        let data = try workspace.write("{\"Shelf\": [\(shelves.joined(separator: ", "))], \"Book\": [\(list.joined(separator: ", "))]}", to: "data.json")
        return (workspace.path("Books.xcdatamodeld"), mapping, data)
    }

    /// The books of `original` as the last version has them (a label: the title upper-cased).
    static func target(_ original: Books) -> Books {
        Dictionary(uniqueKeysWithValues: original.map { ($0.key, [$0.value[0], $0.value[1], $0.key.uppercased()]) })
    }

    /// Runs `arguments` killed at `kills` points spread over `total` seconds, each run after
    /// `prepare`; after each kill, `check` gets the label of the kill and the version the store is
    /// at (as `migrate --dry-run --json` says).
    static func afterEachKill(_ arguments: [String], total: Double, named name: String, prepare: () throws -> Void,
                              _ check: (_ label: String, _ version: String?) throws -> Void) throws {
        for delay in (0..<kills).map({ total * (Double($0) + 0.5) / Double(kills) }) {
            try prepare()
            try CrashHarnessTests.run(arguments, killingAfter: delay)
            let plan = try CLI.run(arguments + ["--dry-run", "--json"])
            let version = (try? JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any])?["from"] as? String
            let label = "\(name) killed at \(String(format: "%.3f", delay)) s of \(String(format: "%.3f", total)) s"
            #expect(["Books", "Books 3"].contains(version), "\(label): the store is at \(version ?? plan.stderr)")
            try check(label, version)
        }
    }

    @Test("migrate, killed: the store at its version with its data or at the target with all of it; the next run finishes clean",
          arguments: CLI.backends)
    func migrate(_ type: String) throws {
        let workspace = try Harness()
        let count = 400
        let (bundle, mapping, data) = try Self.writeInputs(workspace, count: count)
        // The original store, kept aside byte for byte to start every run from.
        let pristine = workspace.path("pristine.\(type)"), store = workspace.path("store.\(type)")
        #expect(try CLI.run("create", pristine, "--model", bundle, "--model-version", "Books").status == 0)
        #expect(try CLI.run("import", pristine, data, "--model", bundle, "--model-version", "Books").status == 0)
        #expect(try CLI.run("checkpoint", pristine).status == 0)
        let original = try Self.books(try CLI.run("export", pristine).stdout)
        #expect(original.count == count)
        let target = Self.target(original)
        func prepare() throws {
            workspace.remove(prefix: "store.")
            workspace.remove(prefix: ".store.")
            try FileManager.default.copyItem(atPath: pristine, toPath: store)
        }
        let arguments = ["migrate", store, "--model", bundle, "--mapping", mapping]
        let total = try CrashHarnessTests.duration(arguments, prepare: prepare)
        #expect(try Self.books(try CLI.run("export", store).stdout) == target, "an uninterrupted run")
        try Self.afterEachKill(arguments, total: total, named: type, prepare: prepare) { label, from in
            let books = try Self.books(try CLI.run("export", store).stdout)
            #expect(books == (from == "Books" ? original : target), "\(label): the data is not whole")
            let again = try CLI.run(arguments)
            #expect(again.status == 0, "\(label): the next run failed: \(again.stderr)")
            #expect(try Self.books(try CLI.run("export", store).stdout) == target, "\(label)")
            #expect(workspace.leftovers().isEmpty, "\(label): left behind \(workspace.leftovers())")
        }
    }

    @Test("migrate a PostgreSQL store, killed: at its version with its data or at the target with all of it, its UUID kept; the next run finishes and leaves no schema behind")
    func migratePostgreSQL() throws {
        let workspace = try Harness()
        let count = 2_000
        let (bundle, mapping, data) = try Self.writeInputs(workspace, count: count)
        let pristine = workspace.path("pristine.sqlite")
        #expect(try CLI.run("import", pristine, data, "--model", bundle, "--model-version", "Books").status == 0)
        let original = try Self.books(try CLI.run("export", pristine).stdout)
        let target = Self.target(original)
        let store = try PostgreSQLTestServer.location().absoluteString
        let schema = String(store[store.range(of: "schema=")!.upperBound...])
        defer { _ = try? CLI.run("destroy", store) }
        func uuid() throws -> String {
            try PostgreSQLTestServer.psql("SELECT md5(value) FROM \"\(schema)\".objectstore_metadata WHERE key = 'NSStoreUUID'")
        }
        /// Every schema of the server named after the store's (its own, and staging ones).
        func schemas() throws -> [String] {
            try PostgreSQLTestServer.psql("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, '\(schema)') ORDER BY 1").split(separator: "\n").map(String.init)
        }
        var identity = ""
        func prepare() throws {
            _ = try CLI.run("destroy", store)
            let converted = try CLI.run("convert", pristine, store)
            #expect(converted.status == 0, "\(converted.stderr)")
            identity = try uuid()
        }
        let arguments = ["migrate", store, "--model", bundle, "--mapping", mapping]
        let total = try CrashHarnessTests.duration(arguments, prepare: prepare)
        #expect(try Self.books(try CLI.run("export", store).stdout) == target, "an uninterrupted run")
        #expect(try uuid() == identity && !identity.isEmpty, "the store keeps its UUID")
        #expect(try schemas() == [schema])
        var swept = 0
        try Self.afterEachKill(arguments, total: total, named: "postgresql", prepare: prepare) { label, from in
            #expect(try Self.books(try CLI.run("export", store).stdout) == (from == "Books" ? original : target), "\(label): the data is not whole")
            #expect(try uuid() == identity, "\(label): the UUID changed")
            let left = try schemas().count - 1
            let again = try CLI.run(arguments)
            #expect(again.status == 0, "\(label): the next run failed: \(again.stderr)")
            // Each staging schema the killed run left is dropped by the next run, and said.
            #expect(again.stderr.components(separatedBy: "removed the schema ").count - 1 == left, "\(label): \(again.stderr)")
            swept += left
            #expect(try Self.books(try CLI.run("export", store).stdout) == target, "\(label)")
            #expect(try uuid() == identity, "\(label): the UUID changed")
            let remaining = try schemas()
            #expect(remaining == [schema], "\(label): left behind: \(remaining); \(again.stderr)")
        }
        // The kills fell inside the run, where it stages: at least one left a schema to sweep.
        #expect(swept > 0)
    }
}
