import Foundation
import Testing
import TestSupport

/// Core Data stores opened with the model they carry (`Z_MODELCACHE`), no model file given.
/// The store is built here around a real cache blob (TestSupport's fixtures); the oracle is the
/// rows written and the hashes Core Data wrote beside the blob.
@Suite("Core Data stores with no model file: the model from Z_MODELCACHE")
struct ModelCacheCLITests {
    /// `SampleModel3`: one entity `User`, `name` required, `petName` optional.
    static let fixture = "coredataplus-samplemodel3-v1"

    /// Writes the store, its cache row holding `cache` (the fixture's blob unless given), its rows in the `-wal`.
    func writeStore(in workspace: Workspace, cache: Data? = nil, rows: Bool = true) throws -> String {
        let blob = try cache ?? ModelCacheFixtures.blob(Self.fixture)
        let hashes = try ModelCacheFixtures.expectedHashes(Self.fixture)
        let store = workspace.url.appending(path: "Users.sqlite")
        let users = [(1, "Ada", "Rex"), (2, "Brendan", nil), (3, "Chloé", "Tom")]
        try CoreDataStoreFile.write(
            to: store,
            statements: [
                "CREATE TABLE ZUSER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR, ZPETNAME VARCHAR )",
                "INSERT INTO Z_PRIMARYKEY VALUES (1, 'User', 0, \(rows ? users.count : 0))",
                "INSERT INTO Z_MODELCACHE VALUES (X'\(blob.map { String(format: "%02X", $0) }.joined())')",
            ],
            walStatements: rows ? users.map { "INSERT INTO ZUSER VALUES (\($0.0), 1, 1, '\($0.1)', \($0.2.map { "'\($0)'" } ?? "NULL"))" } : [],
            uuid: "6A1F3A4E-7B0C-4D2E-9F10-2B3C4D5E6F70",
            metadata: CoreDataStoreFile.metadata(hashes: hashes, identifiers: ["1"]), keepsSharedMemory: false)
        return store.path
    }

    @Test("inspect, export, convert, migrate and model extract work with no --model, and change nothing in the store")
    func noModelFile() throws {
        let workspace = try Workspace()
        let store = try writeStore(in: workspace)
        let before = CoreDataStoreFile.digests(URL(filePath: store))
        let expectedHashes = try ModelCacheFixtures.expectedHashes(Self.fixture)
        let hashLines = expectedHashes.keys.sorted().map { "\($0) \(expectedHashes[$0]!.map { String(format: "%02x", $0) }.joined())" }.joined(separator: "\n") + "\n"

        let inspect = try CLI.run("inspect", store)
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(inspect.stdout.contains("\n  User 3"), "\(inspect.stdout)")

        let export = try CLI.run("export", store)
        #expect(export.status == 0, "\(export.stderr)")
        let expected: [String: [[String: any Sendable]]] = ["User": [
            ["_id": "User/1", "name": "Ada", "petName": "Rex"],
            ["_id": "User/2", "name": "Brendan", "petName": NSNull()],
            ["_id": "User/3", "name": "Chloé", "petName": "Tom"],
        ]]
        let differences = JSONComparison.differences(export.stdout, expected)
        #expect(differences.isEmpty, "\(differences.prefix(10))")

        for backend in CLI.backends {
            let converted = workspace.url.appending(path: "converted.\(backend)").path
            let convert = try CLI.run("convert", store, converted)
            #expect(convert.status == 0, "\(backend): \(convert.stderr)")
            #expect(try CLI.run("export", converted).stdout == export.stdout, "\(backend)")
        }

        let extracted = workspace.url.appending(path: "Extracted.xcdatamodel").path
        let extract = try CLI.run("model", "extract", store, "--output", extracted)
        #expect(extract.status == 0, "\(extract.stderr)")
        #expect(extract.stdout == hashLines)
        #expect(try CLI.run("model", "hashes", extracted).stdout == hashLines)
        #expect(try CLI.run("export", store, "--model", extracted).stdout == export.stdout)

        let migrate = try CLI.run("migrate", store)
        #expect(migrate.status == 0, "\(migrate.stderr)")
        #expect(migrate.stdout.contains("already at"), "\(migrate.stdout)")

        #expect(CoreDataStoreFile.digests(URL(filePath: store)) == before, "the store's files changed")
    }

    @Test("compiled models (.mom, .momd) are accepted wherever a model is, and extract like a store")
    func compiledModel() throws {
        let workspace = try Workspace()
        let store = try writeStore(in: workspace)
        let export = try CLI.run("export", store)
        // A .mom is the archive the cache compresses.
        let mom = workspace.url.appending(path: "SampleModel3.mom")
        try ModelCacheFixtures.archive(Self.fixture).write(to: mom)
        let momd = workspace.url.appending(path: "SampleModel3.momd")
        try FileManager.default.createDirectory(at: momd, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: mom, to: momd.appending(path: "SampleModel3.mom"))
        try ModelCacheFixtures.archive("wibosco-revised-v3").write(to: momd.appending(path: "SampleModel3 2.mom"))
        let info = try PropertyListSerialization.data(fromPropertyList: ["NSManagedObjectModel_CurrentVersionName": "SampleModel3 2"], format: .xml, options: 0)
        try info.write(to: momd.appending(path: "VersionInfo.plist"))

        let hashes = try CLI.run("model", "hashes", mom.path)
        #expect(hashes.status == 0, "\(hashes.stderr)")
        #expect(try CLI.run("export", store, "--model", mom.path).stdout == export.stdout)
        // The bundle's current version is not the store's: the version is found by the store's hashes.
        let inspect = try CLI.run("inspect", store, "--model", momd.path)
        #expect(inspect.stdout.contains("\nmodel version: SampleModel3\n"), "\(inspect.stdout) \(inspect.stderr)")
        #expect(try CLI.run("export", store, "--model", momd.path).stdout == export.stdout)
        let extracted = workspace.url.appending(path: "FromMomd.xcdatamodel").path
        let extract = try CLI.run("model", "extract", momd.path, "--model-version", "SampleModel3", "--output", extracted)
        #expect(extract.status == 0, "\(extract.stderr)")
        #expect(extract.stdout == hashes.stdout)
        #expect(try CLI.run("model", "hashes", extracted).stdout == hashes.stdout)
    }

    @Test("a damaged cache is an error naming Z_MODELCACHE, never a crash; --model still opens the store")
    func damagedCache() throws {
        let workspace = try Workspace()
        let good = try ModelCacheFixtures.blob(Self.fixture)
        let store = try writeStore(in: workspace, cache: good.prefix(good.count / 2))
        for arguments in [["export", store], ["inspect", store, "--json"], ["convert", store, workspace.url.appending(path: "x.lmdb").path], ["migrate", store]] {
            let result = try CLI.run(arguments)
            #expect(!result.signaled, "\(arguments)")
            if arguments[0] == "inspect" {
                #expect(result.status == 0 && result.stdout.contains("\"entities\" : null"), "\(result.stdout) \(result.stderr)")
            } else {
                #expect(result.status != 0, "\(arguments)")
                #expect(result.stderr.contains("Z_MODELCACHE") && result.stderr.contains("truncated"), "\(arguments): \(result.stderr)")
            }
        }
        // The model the cache should have held, given as a file, still opens it.
        let folder = try Workspace()
        let intact = try writeStore(in: folder)
        let model = folder.url.appending(path: "Model.xcdatamodel").path
        #expect(try CLI.run("model", "extract", intact, "--output", model).status == 0)
        #expect(try CLI.run("export", store, "--model", model).status == 0)
    }
}
