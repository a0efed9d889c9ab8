import Foundation
import ObjectModel
import ObjectStore
import StoreToolkit
import Synchronization

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
        // The whole file is checked, not just the metadata: a store is readable or it is not.
        // What was read is kept for the open that usually follows (the tool, and an application
        // that checks a store's model before opening it, read the metadata first).
        let url = FileOperations.resolved(given)
        let before = FileVersion(url)
        let tables = try Self.load(url)
        if let before, before == FileVersion(url) { Self.lastRead.withLock { $0 = (before, tables) } }
        return tables.metadata
    }

    /// A file's version: the same file (device and inode), unchanged since (size, modification
    /// and change times to the nanosecond). A save replaces the file, so it changes the inode.
    struct FileVersion: Hashable, Sendable {
        let device: UInt64, inode: UInt64, size: Int64
        let modified: [Int], changed: [Int]

        init?(_ url: URL) {
            var info = stat()
            guard stat(url.path, &info) == 0 else { return nil }
            (device, inode, size) = (UInt64(info.st_dev), UInt64(info.st_ino), Int64(info.st_size))
            modified = [Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec)]
            changed = [Int(info.st_ctim.tv_sec), Int(info.st_ctim.tv_nsec)]
        }
    }

    /// The tables the last ``readMetadata(at:)`` read whole, with the version of the file they are:
    /// taken by the next open (of that file unchanged; any other open drops them), so metadata
    /// then open reads and checks the file once.
    private static let lastRead = Mutex<(version: FileVersion, tables: RecordTables)?>(nil)

    /// The store's tables for an open: those ``readMetadata(at:)`` just read when the file is
    /// still that version, otherwise the file read and checked now.
    static func loadForOpen(_ url: URL) throws -> RecordTables {
        if let kept = lastRead.withLock({ kept in defer { kept = nil }; return kept }), kept.version == FileVersion(url) {
            return kept.tables
        }
        return try load(url)
    }

    public func writeMetadata(_ metadata: StoreMetadata, at given: URL) throws {
        let url = FileOperations.resolved(given)
        let lock = try FileLock(url: Self.lockURL(url), waiting: 5, what: url)
        defer { lock.release() }
        var tables = try Self.load(url)
        tables.metadata = metadata
        try Self.write(tables, to: url, fileSystem: fileSystem)
    }

    public func open(at url: URL?, model: ManagedObjectModel, options: StoreOptions) throws -> any PersistentStore {
        guard let url else { throw StoreError(.notFound, "an atomic store needs a file URL") }
        // Through a link or its real path, one store: saves replace the real file, the link stays.
        logger.debug("opening \(url.path)\(options.readOnly ? ", read-only" : ""): the file is read whole and checked")
        return try AtomicStore(url: FileOperations.resolved(url), model: model, options: options, fileSystem: fileSystem)
    }

    /// The whole file, read into one array.
    static func readFile(_ url: URL) throws -> [UInt8] {
        try FileOperations.checkRegularFile(url, kind: "atomic store")
        do {
            return try readWholeFile(url.path)
        } catch {
            throw StoreError(.io, "cannot read the store", url: url, cause: error)
        }
    }

    static func load(_ url: URL) throws -> RecordTables {
        try AtomicFormat.decode(try readFile(url), file: url.path)
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
