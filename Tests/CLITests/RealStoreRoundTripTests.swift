import Foundation
import Testing
import TestSupport

/// Apple's stores through every backend and back: nothing renumbered.
@Suite("objectstore: real Core Data stores through every backend")
struct RealStoreRoundTripTests {
    /// The ways to the other backend and back: `convert` to that type (through batches on SQLite
    /// itself, and through SQLite's bulk copy), then back to SQLite.
    static let ways = ["sqlite --no-bulk-copy", "sqlite", "lmdb", "atomic", "postgresql"]

    @Test("every row of every table comes back as SQLite read it in the store Apple wrote: keys, Z_OPT, Z_FOK order keys, Z_MAX; the UUID kept",
          arguments: RealCoreDataStores.names, ways)
    func roundTrip(_ name: String, _ way: String) throws {
        let workspace = try Workspace()
        let source = workspace.url.appending(path: "\(name).sqlite")
        try RealCoreDataStores.make(name, at: source)
        let parts = way.split(separator: " ").map(String.init)
        let type = parts[0], flags = Array(parts.dropFirst())
        let middle: String
        if type == "postgresql" {
            middle = try PostgreSQLTestServer.location().absoluteString
        } else {
            middle = workspace.url.appending(path: "middle.\(type == "sqlite" ? "db" : type)").path
        }
        defer { if type == "postgresql" { _ = try? CLI.run("destroy", middle) } }
        let back = workspace.url.appending(path: "back.sqlite")
        let model = RealCoreDataStores.model(name).map { ["--model", $0.path] } ?? []
        let there = try CLI.run(["convert", source.path, middle, "--type", type] + flags + model)
        try #require(there.status == 0, "\(there.stderr)")
        let again = try CLI.run(["convert", middle, back.path, "--type", "sqlite"] + flags)
        try #require(again.status == 0, "\(again.stderr)")

        // Written without a journal while it was made, the new store is a WAL store once in place, with no journal left.
        let db = try RawDatabase(back)
        #expect(try db.strings("PRAGMA journal_mode") == [["wal"]])
        db.close()
        #expect(!FileManager.default.fileExists(atPath: back.path + "-journal"))
        let tables = try RealCoreDataStores.dataTables(source)
        #expect(try RealCoreDataStores.dataTables(back) == tables)
        for table in tables {
            // A new store names each entity as its model does; one of Apple's stores (coredataplus-samplemodel-v2)
            // still names a renamed entity (LuxuryCar) by its old name in Z_PRIMARYKEY. Numbers, parents, counters: exactly.
            let leaving: Set<String> = table == "Z_PRIMARYKEY" ? ["Z_NAME"] : []
            let expected = try RealCoreDataStores.rows(source, table: table, leaving: leaving)
            let found = try RealCoreDataStores.rows(back, table: table, leaving: leaving)
            #expect(found == expected, "\(table): \(Set(expected).subtracting(found).sorted().prefix(3)) became \(Set(found).subtracting(expected).sorted().prefix(3))")
        }
        func uuid(_ store: String) throws -> String? {
            try CLI.run("inspect", store).stdout.split(separator: "\n").first { $0.hasPrefix("store UUID:") }.map(String.init)
        }
        let original = try uuid(source.path)
        #expect(original != nil)
        #expect(try uuid(middle) == original)
        #expect(try uuid(back.path) == original)
    }
}
