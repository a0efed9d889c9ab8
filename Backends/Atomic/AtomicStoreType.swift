import Foundation
import ObjectModel
import ObjectStore

/// The `atomic` store type: one binary file plus, during a save, its temporary file.
public struct AtomicStoreType: StoreType {
    /// The file system every write goes through (replaceable to inject failures).
    public let fileSystem: any AtomicFileSystem

    /// Creates the type over the real file system, or over `fileSystem`.
    public init(fileSystem: any AtomicFileSystem = SystemFileSystem()) {
        self.fileSystem = fileSystem
    }

    public var name: String { AtomicStore.typeName }

    /// The store file and the temporary file a save writes first (`<file>-tmp`).
    public func fileURLs(for url: URL) -> [URL] {
        [url, Self.temporaryURL(url)]
    }

    static func temporaryURL(_ url: URL) -> URL {
        url.deletingLastPathComponent().appending(path: url.lastPathComponent + "-tmp")
    }

    public func recognizes(header: Data) -> Bool { header.starts(with: AtomicFormat.magic) }

    public func readMetadata(at url: URL) throws -> StoreMetadata {
        // The whole file is checked, not just the metadata: a store is readable or it is not.
        try Self.load(url).metadata
    }

    public func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws {
        var tables = try Self.load(url)
        tables.metadata = metadata
        try Self.write(tables, to: url, fileSystem: fileSystem)
    }

    public func open(at url: URL?, model: ManagedObjectModel, options: StoreOptions) throws -> any PersistentStore {
        guard let url else { throw StoreError(.notFound, "an atomic store needs a file URL") }
        return try AtomicStore(url: url, model: model, options: options, fileSystem: fileSystem)
    }

    static func readFile(_ url: URL) throws -> Data {
        guard FileManager.default.fileExists(atPath: url.path) else { throw StoreError(.notFound, "no atomic store", url: url) }
        do {
            return try Data(contentsOf: url)
        } catch {
            throw StoreError(.io, "cannot read the store", url: url, cause: error)
        }
    }

    static func load(_ url: URL) throws -> RecordTables {
        try AtomicFormat.decode(try readFile(url), file: url.path)
    }

    static func write(_ tables: RecordTables, to url: URL, fileSystem: any AtomicFileSystem) throws {
        let data = try AtomicFormat.encode(tables)
        do {
            try fileSystem.replaceAtomically(url.path, temporary: temporaryURL(url).path, with: data)
        } catch let error as FileSystemError {
            throw StoreError(.io, "cannot save: \(error)", url: url, cause: error)
        }
    }
}
