import Foundation
import ObjectModel
import ObjectStore
import StoreToolkit

/// The `atomic` store type: one binary file plus, during a save, its temporary file.
public struct AtomicStoreType: StoreType {
    /// The file system every write goes through (replaceable to inject failures).
    public let fileSystem: any AtomicFileSystem

    /// Creates the type over the real file system, or over `fileSystem`.
    public init(fileSystem: any AtomicFileSystem = SystemFileSystem()) {
        self.fileSystem = fileSystem
    }

    public var name: String { AtomicStore.typeName }
    public var fileExtensions: [String] { ["atomic", "store", "bin"] }

    /// The store file and its lock file (`<file>-lock`), which a writer holds while the store is open.
    public func fileURLs(for url: URL) -> [URL] {
        [url, Self.lockURL(url)]
    }

    /// Every save writes the whole store to a new file and renames it into place.
    public var replacesFileOnSave: Bool { true }

    static func lockURL(_ url: URL) -> URL {
        url.deletingLastPathComponent().appending(path: url.lastPathComponent + "-lock")
    }

    /// A fresh temporary file name beside the store, for one save: `<file>-tmp-<random>`.
    static func temporaryURL(_ url: URL) -> URL {
        url.deletingLastPathComponent().appending(path: url.lastPathComponent + "-tmp-" + UUID().uuidString)
    }

    /// Temporary files of saves that never finished (a killed process): only the writer,
    /// which holds the lock, may call this.
    static func staleTemporaries(_ url: URL) -> [URL] {
        let folder = url.deletingLastPathComponent()
        let prefix = url.lastPathComponent + "-tmp"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0 == prefix || $0.hasPrefix(prefix + "-") }.map { folder.appending(path: $0) }
    }

    /// Removes the store file, its lock file and any temporary file a killed save left.
    public func destroy(at given: URL) throws {
        let url = FileOperations.resolved(given)
        for file in fileURLs(for: url) + Self.staleTemporaries(url) where FileManager.default.fileExists(atPath: file.path) {
            do {
                try FileManager.default.removeItem(at: file)
            } catch {
                throw StoreError(.io, "cannot remove \(file.lastPathComponent)", url: url, cause: error)
            }
        }
    }

    public func recognizes(header: Data) -> Bool { header.starts(with: AtomicFormat.magic) }

    /// Holds the writers' lock (`flock` on `<file>-lock`), waiting up to 5 s for a writer to close.
    public func withWriteLock<T>(at given: URL, _ body: () throws -> T) throws -> T {
        let url = FileOperations.resolved(given)
        let lock = try FileLock(url: Self.lockURL(url), waiting: 5, what: url)
        defer { lock.release() }
        return try body()
    }

    /// `<file>-lock`: it stays in place when the store is moved aside or recreated.
    public func writeLockFile(for url: URL) -> URL? { Self.lockURL(url) }

    public func readMetadata(at given: URL) throws -> StoreMetadata {
        // The file is checked (header, length, checksum) as it is read, a chunk at a time, so a
        // store that is not readable says so; its rows are checked when it is opened.
        let url = FileOperations.resolved(given)
        try FileOperations.checkRegularFile(url, kind: "atomic store")
        return try AtomicFormat.readMetadata(file: url.path)
    }

    public func writeMetadata(_ metadata: StoreMetadata, at given: URL) throws {
        let url = FileOperations.resolved(given)
        let lock = try FileLock(url: Self.lockURL(url), waiting: 5, what: url)
        defer { lock.release() }
        // The rows are copied from the file as it is written (the descriptor keeps the old file).
        var tables = try Self.load(url, inMemory: false)
        tables.metadata = metadata
        try Self.write(tables, to: url, fileSystem: fileSystem)
    }

    public func open(at url: URL?, model: ManagedObjectModel, options: StoreOptions) throws -> any PersistentStore {
        guard let url else { throw StoreError(.notFound, "an atomic store needs a file URL") }
        // Through a link or its real path, one store: saves replace the real file, the link stays.
        logger.debug("opening \(url.path)\(options.readOnly ? ", read-only: the file is checked and its rows read when needed" : ": the file is read whole and checked")")
        return try AtomicStore(url: FileOperations.resolved(url), model: model, options: options, fileSystem: fileSystem)
    }

    /// The tables of the file at `url`, checked whole: `inMemory`, the file's bytes held (a
    /// writer rewrites them with every save); otherwise its rows read from the file when they
    /// are needed, so that what is held is their keys and offsets.
    static func load(_ url: URL, inMemory: Bool) throws -> RecordTables {
        try FileOperations.checkRegularFile(url, kind: "atomic store")
        if !inMemory { return try AtomicFormat.decode(file: url.path) }
        let file = try RowFile(path: url.path)
        return try AtomicFormat.decode(try file.read(0..<file.size), file: url.path)
    }

    static func write(_ tables: RecordTables, to url: URL, fileSystem: any AtomicFileSystem) throws {
        let parts = try AtomicFormat.encodeParts(tables)
        do {
            try fileSystem.replaceAtomically(url.path, temporary: temporaryURL(url).path, with: parts)
        } catch let error as FileSystemError {
            throw StoreError(.io, "cannot save: \(error)", url: url, cause: error)
        }
    }
}
