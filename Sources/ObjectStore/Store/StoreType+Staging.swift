import Foundation

/// A place beside a store where a new one is written, to be put in its place only when complete
/// (``StoreType/stage(beside:verb:)``): this process holds it until ``finish()`` or ``discard()``;
/// what a killed run leaves is swept by the next run beside the same store.
public protocol StagedLocation: AnyObject {
    /// Where the staged store is: a path beside the destination, or the destination's URL with
    /// a schema of its own.
    var url: URL { get }
    /// Ends the staging after the store was installed (moved into place).
    func finish()
    /// Removes the staged store and ends the staging.
    func discard()
}

/// A staged store of files: a ``StagedStore`` and the type that removes it.
final class StagedFiles: StagedLocation {
    let staged: StagedStore
    let type: any StoreType

    init(_ staged: StagedStore, type: any StoreType) {
        self.staged = staged
        self.type = type
    }

    var url: URL { staged.url }
    func finish() { staged.finish() }
    func discard() { staged.discard(type) }
}

/// The defaults, for a type whose stores are files.
extension StoreType {
    public var urlSchemes: [String] { [] }

    public func stage(beside destination: URL, verb: String) throws -> any StagedLocation {
        StagedFiles(try StagedStore(beside: destination, verb: verb), type: self)
    }

    public func sweepStaged(beside destination: URL) -> [String] {
        StagedStore.sweep(beside: destination)
    }

    public func install(_ staged: URL, at destination: URL, replacing existing: (any StoreType)?) throws {
        try StagedStore.install(staged, type: self, at: destination, replacing: existing)
    }

    public func identity(at url: URL) -> String? {
        FileOperations.identity(url).map { "\($0.device):\($0.inode)" }
    }

    public func withMigrationLock<T>(at url: URL, _ body: () throws -> T) throws -> T {
        guard let main = fileURLs(for: url).first else {
            throw StoreError(.unsupported, "a \(name) store has no files to lock for a migration", url: url)
        }
        let lock = try FileLock(existing: main, what: url)
        defer { lock.release() }
        return try body()
    }

    public func changeToken(at url: URL) -> AnyHashable? {
        AnyHashable(FileOperations.Fingerprint(of: fileURLs(for: url)))
    }

    public func copyStore(at source: URL, to destination: URL) throws {
        guard let main = fileURLs(for: source).first else {
            throw StoreError(.unsupported, "a \(name) store has no files to copy", url: source)
        }
        do {
            try FileManager.default.copyItem(at: main, to: destination)
        } catch {
            throw StoreError(.io, "cannot copy \(main.lastPathComponent)", url: source, cause: error)
        }
        try FileOperations.copyFolders(of: fileURLs(for: source), to: fileURLs(for: destination))
    }
}
