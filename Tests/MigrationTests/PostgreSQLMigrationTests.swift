import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import PostgreSQLStore
import Testing
import TestSupport

/// `StoreMigrator` on a store in a PostgreSQL schema: copy steps staged in schemas of their own
/// and moved over the store in one transaction; the migration's advisory lock keeps writers and a
/// second migration out; the store's UUID kept. Checked through the server's own catalog
/// (`psql`): no staging schema outlives a run.
@Suite("StoreMigrator on a PostgreSQL store")
struct PostgreSQLMigrationTests {
    static let type = PostgreSQLStoreType()

    static func schema(_ url: URL) -> String { String(url.absoluteString[url.absoluteString.range(of: "schema=")!.upperBound...]) }

    /// The schemas the server has whose names start with the store's (its staging schemas), and
    /// whether the store's own is there.
    static func schemas(beside url: URL) throws -> [String] {
        try PostgreSQLTestServer.psql("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, '\(schema(url))') ORDER BY 1")
            .split(separator: "\n").map(String.init)
    }

    /// The store's UUID and version hashes as the server holds them (raw metadata rows).
    static func identityRows(_ url: URL) throws -> String {
        try PostgreSQLTestServer.psql("SELECT key, md5(value) FROM \"\(schema(url))\".objectstore_metadata "
                                      + "WHERE key IN ('NSStoreUUID', 'NSStoreModelVersionHashes') ORDER BY key")
    }

    @Test("every older version reaches v4 with all its data and its UUID; the plan counts the server's objects; no schema is left",
          arguments: ["v1", "v2", "v2b", "v3"])
    func chain(_ version: String) throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", PostgreSQLStore.typeName)
        try makeStore(PostgreSQLStore.typeName, at: url, model: History.model(version), json: History.document(version))
        let uuid = try Self.type.readMetadata(at: url).storeUUID
        #expect(uuid != nil)
        let migrator = StoreMigrator(versions: History.versions, mappings: History.mappings)
        let plan = try migrator.plan(forStoreAt: url, type: Self.type)
        #expect(plan.storeVersion == version && plan.objectCounts == ["Note": 3, "Folder": 2])
        let result = try migrator.migrateStore(at: url, type: Self.type)
        #expect(result.seconds.count == plan.steps.count && !plan.steps.isEmpty)
        try StoreMigratorTests().checkAtV4(PostgreSQLStore.typeName, url, from: version)
        #expect(try Self.type.readMetadata(at: url).storeUUID == uuid, "the store keeps its UUID")
        #expect(try Self.schemas(beside: url) == [Self.schema(url)], "only the store's own schema")
        #expect(try migrator.migrateStore(at: url, type: Self.type).plan.steps.isEmpty, "at the target: nothing to do")
    }

    @Test("a failure in a later step leaves the server store as it was (rows and metadata), and no staging schema")
    func failureInLaterStep() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", PostgreSQLStore.typeName)
        let document = History.document("v2b").replacingOccurrences(of: "\"priority\": \"-2\"", with: "\"priority\": \"high\"")
        try makeStore(PostgreSQLStore.typeName, at: url, model: History.model("v2b"), json: document)
        let rows = try PostgreSQLTestServer.psql("SELECT pk, title, body, priority FROM \"\(Self.schema(url))\".\"Note\" ORDER BY pk")
        let metadata = try Self.identityRows(url)
        let error = try #require(throws: MigrationError.self) {
            try StoreMigrator(versions: History.versions, mappings: History.mappings).migrateStore(at: url, type: Self.type)
        }
        #expect(error.code == .expression, "\(error)")
        #expect(!error.message.contains("_migrating_"), "the staging schema is not named: \(error.message)")
        #expect(try PostgreSQLTestServer.psql("SELECT pk, title, body, priority FROM \"\(Self.schema(url))\".\"Note\" ORDER BY pk") == rows)
        #expect(try Self.identityRows(url) == metadata)
        #expect(try Self.schemas(beside: url) == [Self.schema(url)])
    }

    @Test("while a migration holds the store, a save and a second migration are refused busy; after it, a store opened before refuses to save into the migrated one")
    func writersKeptOut() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", PostgreSQLStore.typeName)
        try makeStore(PostgreSQLStore.typeName, at: url, model: History.model("v3"), json: History.document("v3"))
        let writer = try Self.type.open(at: url, model: History.model("v3"), options: StoreOptions(createIfMissing: false))
        defer { try? writer.close() }
        let note = try #require(try writer.fetch(FetchRequest(entity: "Note")).first)
        var changed = ObjectUpdate(key: note.key, attributes: ["body": .string("changed while migrating")])
        let migrator = StoreMigrator(versions: History.versions, mappings: History.mappings)
        try Self.type.withMigrationLock(at: url) {
            let save = try #require(throws: StoreError.self) { try writer.save(ChangeSet(updated: [changed])) }
            #expect(save.code == .busy && save.message.contains("being migrated"), "\(save)")
            let second = try #require(throws: MigrationError.self) { try migrator.migrateStore(at: url, type: Self.type) }
            #expect((second.cause as? StoreError)?.code == .busy, "\(second)")
        }
        #expect(try History.versions.version(matching: Self.type.readMetadata(at: url)).name == "v3", "the refused migration changed nothing")
        // A save between migrations goes in; after the migration the old store's model is not the store's.
        try writer.save(ChangeSet(updated: [changed]))
        try migrator.migrateStore(at: url, type: Self.type)
        changed = ObjectUpdate(key: note.key, attributes: ["body": .string("after the migration")])
        let stale = try #require(throws: StoreError.self) { try writer.save(ChangeSet(updated: [changed])) }
        #expect(stale.code == .storeReplaced, "\(stale)")
        let migrated = try Self.type.open(at: url, model: History.model("v4"), options: StoreOptions(readOnly: true, createIfMissing: false))
        defer { try? migrated.close() }
        let bodies = try migrated.fetch(FetchRequest(entity: "Note")).compactMap { $0.attributes["body"] }
        #expect(bodies.contains(.string("changed while migrating")) && !bodies.contains(.string("after the migration")))
    }

    @Test("a staging schema a killed run left is dropped and reported by the next run; a live run's is not touched")
    func leftovers() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", PostgreSQLStore.typeName)
        try makeStore(PostgreSQLStore.typeName, at: url, model: History.model("v1"), json: History.document("v1"))
        let schema = Self.schema(url)
        // What a killed run leaves: a schema marked as staging for the store, held by no connection.
        let dead = "\(schema)_migrating_0123456789ab"
        _ = try PostgreSQLTestServer.psql("CREATE SCHEMA \"\(dead)\"; CREATE TABLE \"\(dead)\".half (x int); "
                                          + "COMMENT ON SCHEMA \"\(dead)\" IS 'objectstore staging for \(schema)'")
        let live = try Self.type.stage(beside: url, verb: "converting")
        defer { live.discard() }
        let result = try StoreMigrator(versions: History.versions, mappings: History.mappings).migrateStore(at: url, type: Self.type)
        #expect(result.removedLeftovers == ["the schema \(dead)"])
        #expect(try Self.schemas(beside: url) == [schema, Self.schema(live.url)].sorted(), "the live staging is kept")
        try StoreMigratorTests().checkAtV4(PostgreSQLStore.typeName, url, from: "v1")
    }
}

extension PostgreSQLMigrationTests {
    @Test("a copy step does not drop another program's view on the store's tables: the install is refused, naming it, and the store stays as it was")
    func othersViewKept() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", PostgreSQLStore.typeName)
        try makeStore(PostgreSQLStore.typeName, at: url, model: History.model("v2"), json: History.document("v2"))
        let schema = Self.schema(url)
        _ = try PostgreSQLTestServer.psql("CREATE VIEW \"\(schema)\".titles AS SELECT title FROM \"\(schema)\".\"Note\"")
        let rows = try PostgreSQLTestServer.psql("SELECT * FROM \"\(schema)\".titles ORDER BY 1")
        let metadata = try Self.identityRows(url)
        let error = try #require(throws: MigrationError.self) {
            try StoreMigrator(versions: History.versions, mappings: History.mappings).migrateStore(at: url, type: Self.type)
        }
        #expect("\(error)".contains("was not replaced") && "\(error)".contains("depend"), "\(error)")
        #expect(try PostgreSQLTestServer.psql("SELECT * FROM \"\(schema)\".titles ORDER BY 1") == rows, "the view is there, over the old rows")
        #expect(try Self.identityRows(url) == metadata)
        #expect(try Self.schemas(beside: url) == [schema], "no staging schema left")
        _ = try PostgreSQLTestServer.psql("DROP VIEW \"\(schema)\".titles")
    }
}
