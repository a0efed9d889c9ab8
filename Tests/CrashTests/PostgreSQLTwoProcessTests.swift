import Foundation
import Testing
import TestSupport

/// Two real processes on one PostgreSQL store (the test process's private server): no write is
/// lost, no reader sees half of one.
@Suite("Two processes on one PostgreSQL store")
struct PostgreSQLTwoProcessTests {
    /// The server's own count of `entity`'s rows in the store's schema.
    static func serverCount(_ url: String, _ entity: String) throws -> Int {
        let schema = url[url.range(of: "schema=")!.upperBound...]
        let text = try PostgreSQLTestServer.psql("SELECT count(*) FROM \"\(schema)\".\"\(entity)\" WHERE entity = '\(entity)'")
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @Test("two imports at once into one PostgreSQL store: both kept (keys from its sequences), or a conflict error; never a lost write")
    func twoWriters() throws {
        let workspace = try Harness()
        let model = try workspace.write(TwoProcessTests.model, to: "model.json")
        let store = try PostgreSQLTestServer.location().absoluteString
        let base = try CLI.run("import", store, try workspace.write(TwoProcessTests.document("base-", 10), to: "base.json"), "--model", model)
        #expect(base.status == 0, "\(base.stderr)")
        let big = try workspace.write(TwoProcessTests.document("a-", 3_000), to: "a.json")
        let small = try workspace.write(TwoProcessTests.document("b-", 500), to: "b.json")
        let first = try TwoProcessTests.start(["import", store, big])
        usleep(100_000)
        let second = try CLI.run("import", store, small)
        let firstResult = TwoProcessTests.finish(first)
        #expect(firstResult.status == 0 || firstResult.stderr.contains("changed by another process"), "\(firstResult.stderr)")
        #expect(second.status == 0 || second.stderr.contains("changed by another process"), "\(second.stderr)")
        let books = 10 + (firstResult.status == 0 ? 3_000 : 0) + (second.status == 0 ? 500 : 0)
        let shelves = 10 + (firstResult.status == 0 ? 10 : 0) + (second.status == 0 ? 10 : 0)
        #expect(try Self.serverCount(store, "Book") == books)
        #expect(try Self.serverCount(store, "Shelf") == shelves)
        let counts = try CLI.run("inspect", store).stdout
        #expect(counts.contains("  Book \(books)\n"), "\(counts)")
        let validate = try CLI.run("validate", store)
        #expect(validate.status == 0, "\(validate.stdout)\(validate.stderr)")
        _ = try CLI.run("destroy", store)
    }

    @Test("an export while an import runs reads one moment of the PostgreSQL store: before it or after it, every reference whole")
    func exportDuringImport() throws {
        let workspace = try Harness()
        let model = try workspace.write(TwoProcessTests.model, to: "model.json")
        let store = try PostgreSQLTestServer.location().absoluteString
        #expect(try CLI.run("import", store, try workspace.write(TwoProcessTests.document("base-", 1_000), to: "base.json"), "--model", model).status == 0)
        try TwoProcessTests.exportWhileImporting(store, workspace, base: 1_000, more: 4_000)
        _ = try CLI.run("destroy", store)
    }

    /// The staging schemas on the test server beside the store in `schema`, by their mark.
    static func stagingSchemas(_ schema: String) throws -> [String] {
        try PostgreSQLTestServer.psql("SELECT nspname FROM pg_namespace WHERE obj_description(oid, 'pg_namespace') = 'objectstore staging for \(schema)' ORDER BY 1")
            .split(separator: "\n").map(String.init)
    }

    @Test("a convert or import into PostgreSQL killed at any moment leaves a staging schema that the next run (or destroy) sweeps and names; the store is absent or complete",
          arguments: ["convert", "import"])
    func killedStagingSwept(_ command: String) throws {
        let workspace = try Harness()
        let (model, data, _) = try CrashHarnessTests.writeData(in: workspace)
        let source = workspace.path("source.sqlite")
        #expect(try CLI.run("import", source, data, "--model", model).status == 0)
        let store = try PostgreSQLTestServer.location().absoluteString
        let schema = String(store[store.range(of: "schema=")!.upperBound...])
        defer { _ = try? CLI.run("destroy", store) }
        let arguments = command == "convert" ? ["convert", source, store] : ["import", store, data, "--model", model]
        let whole = try CrashHarnessTests.duration(arguments) { _ = try CLI.run("destroy", store) }
        for point in 1...CrashHarnessTests.kills {
            _ = try CLI.run("destroy", store)
            let (killed, _) = try CrashHarnessTests.run(arguments, killingAfter: whole * Double(point) / Double(CrashHarnessTests.kills + 1))
            let left = try Self.stagingSchemas(schema)
            // Absent, or complete with every book.
            let inspect = try CLI.run("inspect", store)
            #expect(inspect.status != 0 || inspect.stdout.contains("  Book \(CrashHarnessTests.size)\n"), "kill \(point): \(inspect.stdout)")
            // The destroy that clears the way for the next run sweeps what the killed one left, and names it.
            let destroyed = try CLI.run("destroy", store)
            for name in left { #expect(destroyed.stderr.contains("removed the schema \(name), left by an interrupted run"), "kill \(point): \(destroyed.stderr)") }
            let next = try CLI.run(arguments)
            #expect(next.status == 0, "kill \(point): \(next.stderr)")
            #expect(try Self.stagingSchemas(schema).isEmpty, "kill \(point) (killed: \(killed)): staging schemas left after the next run")
            #expect(try CLI.run("inspect", store).stdout.contains("  Book \(CrashHarnessTests.size)\n"))
        }
    }
}
