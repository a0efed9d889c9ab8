import Foundation
import ObjectModel
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A kind of store, and the operations that work on stores that are not open.
///
/// Each backend provides one and registers it with ``StoreTypeRegistry``.
public protocol StoreType: Sendable {
    /// The registered name (`memory`, `sqlite`, `atomic`, `lmdb`).
    var name: String { get }
    /// The file extensions that name a new store of this type, without the dot, the usual
    /// one first (`sqlite`, `sqlite3`, `db`); empty for a type whose stores are no files.
    var fileExtensions: [String] { get }
    /// Every file a store at `url` may occupy, the main file first
    /// (SQLite: `-wal`, `-shm`, `-journal` and the `.<name>_SUPPORT` folder of external
    /// data; LMDB: `-lock`). A folder in the set moves, is copied and is removed with the store.
    func fileURLs(for url: URL) -> [URL]
    /// Whether a store of this type exists at `url`.
    func storeExists(at url: URL) -> Bool
    /// Whether the bytes at the start of a file are this type's (for type detection).
    func recognizes(header: Data) -> Bool
    /// Reads a store's metadata without a model.
    /// - Throws: ``StoreError`` (``StoreError/Code/notFound``, ``StoreError/Code/corrupt``).
    func readMetadata(at url: URL) throws -> StoreMetadata
    /// Replaces a closed store's metadata.
    func writeMetadata(_ metadata: StoreMetadata, at url: URL) throws
    /// Opens (or, unless `options` say otherwise, creates) the store at `url` with `model`.
    ///
    /// A nil `url` opens a fresh anonymous store where the type supports it.
    /// - Throws: ``StoreError`` with ``StoreError/Code/incompatibleModel`` naming the
    ///   entities whose hashes differ when the store was made with another model.
    func open(at url: URL?, model: ManagedObjectModel, options: StoreOptions) throws -> any PersistentStore
    /// Removes every file of the store at `url`. This destroys the store's data.
    func destroy(at url: URL) throws
    /// Moves the whole store at `source` over the store at `destination`, leaving no
    /// stale sidecar file of the old destination behind, in an order where every moment
    /// leaves one whole store (the old or the new); the destination's permission bits
    /// and owner are kept.
    func replace(at destination: URL, with source: URL) throws
    /// Folds any write-ahead log into the main file (no-op where there is none).
    func checkpoint(at url: URL) throws
    /// Whether the type's stores may keep a write-ahead log beside the main file, which
    /// ``checkpoint(at:)`` folds in (false by default).
    var keepsWriteAheadLog: Bool { get }
    /// Runs `body` while holding the write lock of the closed store at `url`, the lock every
    /// writer of the store takes: no writer, in this process or another, commits while `body`
    /// runs (a writer that holds the lock is waited for, like writers wait for each other, or
    /// the call fails with ``StoreError/Code/busy``). What ``moveAside(at:fresh:)`` and
    /// ``recreate(at:model:unchangedSince:)`` move files under. A writer that opened the store before `body`
    /// moved or replaced its files refuses to commit afterwards
    /// (``StoreError/Code/storeReplaced``): it would write into files that are no longer the store.
    ///
    /// The default refuses (``StoreError/Code/unsupported``): a type that cannot exclude its
    /// writers cannot have its files moved safely.
    func withWriteLock<T>(at url: URL, _ body: () throws -> T) throws -> T
    /// The file of the set that writers lock for as long as they write (`flock`), if the type
    /// has one: it stays in place when the store's files move aside or are recreated under
    /// the lock, so that a writer waiting on it finds the store that is there when it gets it.
    /// Nil by default.
    func writeLockFile(for url: URL) -> URL?
    /// Refuses to put a new store at `url` when it could not be one store of its own there
    /// (SQLite: its external data folder would be another store's). Nothing by default.
    func checkNewStoreLocation(_ url: URL) throws
    /// Whether every save puts a new main file in place (renamed over the old one), so that the
    /// file's identity changes while the store stays the same. False by default.
    var replacesFileOnSave: Bool { get }

    // Where stores are, and how one takes another's place (StoreType+Staging.swift has the
    // defaults, for stores that are files).

    /// The URL schemes that name this type's stores (`postgresql`, `postgres`), lower case; empty
    /// (the default) for a type whose stores are files, named by their paths.
    var urlSchemes: [String] { get }
    /// Makes a place beside the store at `destination` for a new store, to be put in its place
    /// with ``install(_:at:replacing:)`` once complete; this process holds it until
    /// ``StagedLocation/finish()`` or ``StagedLocation/discard()``, and what a killed run leaves
    /// is removed by the next ``sweepStaged(beside:)``. Files: `.<name>.<verb>-<id>` in the
    /// destination's folder (``StagedStore``).
    /// - Parameters:
    ///   - destination: the store the new one is to replace (or the place for a new store).
    ///   - verb: one of ``StagedStore/verbs``: what the staged store is for.
    func stage(beside destination: URL, verb: String) throws -> any StagedLocation
    /// Removes what killed runs staged beside `destination` (held by no live process) and returns
    /// what was removed, as a person reads it (a file's name, `the schema <name>`).
    func sweepStaged(beside destination: URL) -> [String]
    /// Puts the complete store at `staged` in the place of `destination`, where a store of
    /// `existing` is (nil: none was when the run began), in an order where every moment leaves one
    /// whole store, the old or the new. A store that appears at `destination` meanwhile (another
    /// process's) is not replaced unless `existing` is given: that fails with
    /// ``StoreError/Code/alreadyExists``.
    func install(_ staged: URL, at destination: URL, replacing existing: (any StoreType)?) throws
    /// What names one store whatever the spelling of its URL (a link, another path to the file;
    /// another spelling of a server URL): equal for two URLs of one store; nil when there is none.
    func identity(at url: URL) -> String?
    /// Runs `body` as the only migration of the store at `url`, however many processes try: a
    /// second one fails with ``StoreError/Code/busy`` instead of touching the first's staged
    /// stores. Files: `flock` on the main file (which SQLite's and LMDB's own locks leave alone).
    func withMigrationLock<T>(at url: URL, _ body: () throws -> T) throws -> T
    /// What a commit to the store at `url` changes (files: ``FileOperations/Fingerprint``), taken
    /// before and after a migration to tell that no writer committed in between; nil for a type
    /// whose writers ``withMigrationLock(at:_:)`` itself keeps out.
    func changeToken(at url: URL) -> AnyHashable?
    /// Copies the closed store at `source` to `destination`, a place ``stage(beside:verb:)`` gave:
    /// the same store (its UUID and metadata with it), for a run that must not write to the source.
    func copyStore(at source: URL, to destination: URL) throws
    /// Process-wide settings that make this type's stores faster in a program that owns its
    /// process (the `objectstore` tool), made before any store is opened; none by default. They
    /// may change what other code in the process sees of a shared library (SQLite's memory
    /// statistics), so a library never makes them.
    func configureOwnProcess()
}

extension StoreType {
    public var fileExtensions: [String] { [] }

    public func configureOwnProcess() {}

    public func checkNewStoreLocation(_ url: URL) throws {}

    public var replacesFileOnSave: Bool { false }

    public func storeExists(at url: URL) -> Bool { FileManager.default.fileExists(atPath: url.path) }

    public func recognizes(header: Data) -> Bool { false }

    public func destroy(at given: URL) throws {
        let url = FileOperations.resolved(given)
        for file in fileURLs(for: url) where FileManager.default.fileExists(atPath: file.path) {
            do {
                try FileManager.default.removeItem(at: file)
            } catch {
                throw StoreError(.io, "cannot remove \(file.lastPathComponent)", url: url, cause: error)
            }
        }
    }

    public func replace(at destination: URL, with source: URL) throws {
        try replaceFiles(at: destination, with: source)
    }

    /// What ``replace(at:with:)`` does by default, for a type that does more around it: the
    /// whole file set moved in an order where every moment leaves one whole store, folders merged.
    public func replaceFiles(at givenDestination: URL, with givenSource: URL) throws {
        let (destination, source) = (FileOperations.resolved(givenDestination), FileOperations.resolved(givenSource))
        guard storeExists(at: source) else { throw StoreError(.notFound, "no \(name) store to move", url: source) }
        try checkpoint(at: source)
        // The old store's log folded into its main file first: its sidecars then hold nothing a
        // main file needs, so removing them before the new main file arrives loses no commit.
        if storeExists(at: destination) {
            do {
                try checkpoint(at: destination)
            } catch let error as StoreError where error.code == .corrupt {
                // A damaged store being replaced has nothing to keep.
            }
        }
        let kept = FileOperations.attributes(destination)
        let sources = fileURLs(for: source)
        let destinations = fileURLs(for: destination)
        let fm = FileManager.default
        // Sidecars first and the main file last, so a main file never sits beside a
        // sidecar that belongs to another store; every moment leaves one whole store.
        // A folder of the set (SQLite's external data) is merged, its files uniquely named:
        // until the main file moves, the old one still finds every file it names.
        var stale: [URL] = []
        for (from, to) in zip(sources, destinations).reversed() {
            do {
                if FileOperations.isFolder(from) {
                    try FileOperations.mergeFolder(from, into: to)
                } else if fm.fileExists(atPath: from.path) {
                    try FileOperations.rename(from, over: to)
                } else if FileOperations.isFolder(to) {
                    stale.append(to)
                } else if fm.fileExists(atPath: to.path) {
                    try fm.removeItem(at: to)
                }
            } catch {
                throw StoreError(.io, "cannot move \(from.lastPathComponent) to \(to.path)", url: destination, cause: error)
            }
        }
        // A folder only the old store had goes once the new main file is in place.
        for folder in stale { try? fm.removeItem(at: folder) }
        // The store it replaced keeps who may read it.
        if let kept { try FileOperations.apply(kept, to: destination) }
    }

    public func checkpoint(at url: URL) throws {}

    public var keepsWriteAheadLog: Bool { false }

    public func withWriteLock<T>(at url: URL, _ body: () throws -> T) throws -> T {
        throw StoreError(.unsupported, "a \(name) store cannot be locked against its writers, so its files are not moved", url: url)
    }

    public func writeLockFile(for url: URL) -> URL? { nil }
}

/// The store types this process knows, by name.
///
/// Backends register themselves with one call (`InMemoryStore.register()`).
///
/// ```swift
/// let store = try StoreTypeRegistry.shared.type(named: "memory").open(at: nil, model: model, options: .init())
/// ```
public final class StoreTypeRegistry: Sendable {
    /// The registry the coordinator and the CLI use by default.
    public static let shared = StoreTypeRegistry()

    private let byName = Mutex<[String: any StoreType]>([:])

    /// An empty registry.
    public init() {}

    /// Adds (or replaces) a store type under its name.
    public func register(_ type: any StoreType) {
        byName.withLock { $0[type.name] = type }
    }

    /// The store type named `name`.
    /// - Throws: ``StoreError`` with ``StoreError/Code/unknownStoreType``.
    public func type(named name: String) throws -> any StoreType {
        guard let type = byName.withLock({ $0[name] }) else {
            throw StoreError(.unknownStoreType, "no store type named \(name) is registered (known: \(names.joined(separator: ", ")))")
        }
        return type
    }

    /// The registered names, in ascending order.
    public var names: [String] { byName.withLock { $0.keys.sorted() } }

    /// The registered types, in ascending order of name: what the tool, the conformance
    /// suite and the migration tests run over, so that a new backend is one registration.
    public var types: [any StoreType] { byName.withLock { types in types.keys.sorted().map { types[$0]! } } }

    /// The registered type that names its stores with `fileExtension` (case ignored), if any.
    public func type(forExtension fileExtension: String) -> (any StoreType)? {
        let wanted = fileExtension.lowercased()
        return types.first { $0.fileExtensions.contains(wanted) }
    }

    /// The registered type whose stores are named by URLs of `scheme` (case ignored), if any.
    public func type(forScheme scheme: String) -> (any StoreType)? {
        let wanted = scheme.lowercased()
        return types.first { $0.urlSchemes.contains(wanted) }
    }

    /// The registered type whose stores `location` names by its URL scheme (`postgresql://…`), if
    /// any: nil for a file path.
    public func type(forURL location: String) -> (any StoreType)? {
        guard let end = location.range(of: "://") else { return nil }
        let scheme = location[..<end.lowerBound]
        guard scheme.first?.isLetter == true, scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) else { return nil }
        return type(forScheme: String(scheme))
    }

    /// The registered type whose file header `url` starts with, if any.
    public func detectType(at url: URL) -> (any StoreType)? {
        // Only a regular file is read (opening a FIFO would wait for a writer).
        guard (try? FileOperations.checkRegularFile(url)) != nil, let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 4096), !header.isEmpty else { return nil }
        return types.first { $0.recognizes(header: header) }
    }
}
