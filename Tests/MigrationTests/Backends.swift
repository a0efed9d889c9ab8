import BuiltInBackends
import Foundation
import InMemoryStore
import LMDBStore
import ObjectModel
import ObjectStore
import PostgreSQLStore
import SQLiteStore
import TestSupport

/// Every backend, from the one list (`BuiltInBackends`): a new backend joins every migration test
/// by being on it.
enum Backends {
    static let registry: StoreTypeRegistry = {
        let registry = StoreTypeRegistry()
        BuiltInBackends.register(in: registry)
        return registry
    }()

    static let all = registry.names
    /// The backends whose stores are files.
    static let files = all.filter { !type($0).fileExtensions.isEmpty }

    static func type(_ name: String) -> any StoreType {
        guard let type = try? registry.type(named: name) else { fatalError("no backend named \(name) in the test registry") }
        return type
    }

    static var pairs: [(String, String)] { all.flatMap { s in all.map { (s, $0) } } }
}

/// A temporary folder, and store locations in it (in-memory stores get a memory:// URL).
final class Workspace {
    let folder: URL
    private var memory: [URL] = []
    private var postgreSQL: [URL] = []

    init() throws {
        folder = FileManager.default.temporaryDirectory.appending(path: "migration-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    deinit {
        for url in memory { try? InMemoryStoreType().destroy(at: url) }
        for url in postgreSQL { try? PostgreSQLStoreType().destroy(at: url) }
        try? FileManager.default.removeItem(at: folder)
    }

    func location(_ name: String, _ backend: String) -> URL {
        if backend == "memory" {
            let url = URL(string: "memory://migration-tests/\(UUID().uuidString)/\(name)")!
            memory.append(url)
            return url
        }
        if backend == PostgreSQLStore.typeName { return postgreSQLLocation() }
        guard let fileExtension = Backends.type(backend).fileExtensions.first else {
            preconditionFailure("the \(backend) backend names its stores by URL: say here where the migration tests make one, as for PostgreSQL")
        }
        return folder.appending(path: "\(name).\(fileExtension)")
    }

    /// A PostgreSQL store in a schema of its own on the test process's private server (the
    /// harness reports why when no server can start; the test then fails).
    private func postgreSQLLocation() -> URL {
        do {
            let url = try PostgreSQLTestServer.location()
            postgreSQL.append(url)
            return url
        } catch {
            // A URL no server answers: the test using it fails, naming the reason.
            return URL(string: "postgresql://postgres@/postgres?host=/nonexistent-no-server&schema=\(String(describing: error).prefix(40).filter(\.isLetter))")!
        }
    }

    /// Every file in the folder with its bytes.
    func snapshot() throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            files[name] = try Data(contentsOf: folder.appending(path: name))
        }
        return files
    }
}

/// Creates a store of `backend` at `url` and imports `json` into it.
func makeStore(_ backend: String, at url: URL, model: ManagedObjectModel, json: String) throws {
    let store = try Backends.type(backend).open(at: url, model: model, options: StoreOptions())
    defer { try? store.close() }
    try JSONInterchange.importDocument(Data(json.utf8), into: store)
}

/// The export of the store at `url`.
func export(_ backend: String, at url: URL, model: ManagedObjectModel) throws -> String {
    let store = try Backends.type(backend).open(at: url, model: model, options: StoreOptions(readOnly: true, createIfMissing: false))
    defer { try? store.close() }
    return try JSONInterchange.exportString(store)
}
