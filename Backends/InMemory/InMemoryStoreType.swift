import Foundation
import ObjectModel
import ObjectStore
import Synchronization

/// The `memory` store type: named in-memory databases addressed by URL.
///
/// A URL names a database that lives until it is destroyed or the process
/// ends; it never touches the file system.
public struct InMemoryStoreType: StoreType {
    /// Creates the type (register it with ``InMemoryStore/register(in:)``).
    public init() {}

    public var name: String { InMemoryStore.typeName }

    public func fileURLs(for url: URL) -> [URL] { [] }

    public func storeExists(at url: URL) -> Bool { NamedDatabases.shared.get(url) != nil }

    public func readMetadata(at url: URL) throws -> StoreMetadata {
        guard let database = NamedDatabases.shared.get(url) else {
            throw StoreError(.notFound, "no in-memory store", url: url)
        }
        return try database.withTables { $0.metadata }
    }

    public func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws {
        guard let database = NamedDatabases.shared.get(url) else {
            throw StoreError(.notFound, "no in-memory store", url: url)
        }
        database.tables.withLock {
            $0.metadata = metadata
            database.dropPendingMetadata()
        }
    }

    public func open(at url: URL?, model: ManagedObjectModel, options: StoreOptions) throws -> any PersistentStore {
        guard let url else {
            if options.readOnly { throw StoreError(.readOnly, "an anonymous in-memory store cannot be read-only") }
            return try InMemoryStore(model: model)
        }
        let database = try NamedDatabases.shared.getOrCreate(url) {
            try options.checkCreatable("in-memory", url: url)
            return MemoryDatabase(model: model)
        }
        return try InMemoryStore(database: database, url: url, model: model, options: options)
    }

    public func destroy(at url: URL) throws {
        NamedDatabases.shared.remove(url)
    }

    public func replace(at destination: URL, with source: URL) throws {
        guard let database = NamedDatabases.shared.remove(source) else {
            throw StoreError(.notFound, "no in-memory store to move", url: source)
        }
        NamedDatabases.shared.set(destination, database)
    }
}

/// The process-wide table of named in-memory databases.
final class NamedDatabases: Sendable {
    static let shared = NamedDatabases()
    private let databases = Mutex<[String: MemoryDatabase]>([:])

    private func name(_ url: URL) -> String { url.isFileURL ? url.standardizedFileURL.path : url.absoluteString }

    func get(_ url: URL) -> MemoryDatabase? { databases.withLock { $0[name(url)] } }

    func set(_ url: URL, _ database: MemoryDatabase) { databases.withLock { $0[name(url)] = database } }

    @discardableResult
    func remove(_ url: URL) -> MemoryDatabase? { databases.withLock { $0.removeValue(forKey: name(url)) } }

    func getOrCreate(_ url: URL, _ make: () throws -> MemoryDatabase) throws -> MemoryDatabase {
        try databases.withLock { table in
            if let existing = table[name(url)] { return existing }
            let database = try make()
            table[name(url)] = database
            return database
        }
    }
}
