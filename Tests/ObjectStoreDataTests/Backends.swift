import BuiltInBackends
import Foundation
import ObjectStoreData
import PostgreSQLStore
import TestSupport

/// The backends every typed test runs on, and a container of the test models on each.
enum TypedBackends {
    static let all = BuiltInBackends.types.map(\.name)

    /// A folder (and, on the test server, schemas) of the test's own, removed when it goes.
    final class Place {
        let folder: URL
        private let token = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        private var servers: [URL] = []

        init() throws {
            folder = FileManager.default.temporaryDirectory.appending(path: "objectstore-data-\(token)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }

        deinit {
            try? FileManager.default.removeItem(at: folder)
            for url in servers { try? PostgreSQLStoreType().destroy(at: url) }
        }

        /// The configuration of a store of `backend` named `name` here (the same store each time).
        func configuration(_ backend: String, _ name: String = "store") throws -> ModelConfiguration {
            switch backend {
            case "memory":
                return ModelConfiguration(isStoredInMemoryOnly: true)
            case "postgresql":
                let url = try PostgreSQLTestServer.location(schema: "td_\(token)_\(name.lowercased())")
                servers.append(url)
                return ModelConfiguration(url: url)
            default:
                return ModelConfiguration(url: folder.appending(path: "\(name).\(backend == "sqlite" ? "store" : backend)"))
            }
        }

        /// A container of the test models in the store `name` of `backend`.
        func container(_ backend: String, _ name: String = "store") throws -> ModelContainer {
            try ModelContainer(for: Author.self, Book.self, Tag.self, configurations: try configuration(backend, name))
        }
    }
}
