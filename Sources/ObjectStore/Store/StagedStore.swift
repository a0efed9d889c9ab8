import Foundation

/// A store being written under a temporary name beside its destination (`.<name>.<verb>-<id>`,
/// on the same file system, so it moves into place by renames), moved into place only when it
/// is complete. A lock file (`.<name>.<verb>-<id>.lock`) shows that a live process owns it;
/// leftovers of killed runs (their lock free) are swept by the next run beside the same
/// destination (``sweep(beside:)``).
///
/// ```swift
/// _ = StagedStore.sweep(beside: url)
/// let staged = try StagedStore(beside: url, verb: "converting")
/// do {
///     try write(staged.url)
///     try StagedStore.install(staged.url, type: type, at: url, replacing: nil)
///     staged.finish()
/// } catch {
///     staged.discard(type)
///     throw error
/// }
/// ```
public final class StagedStore: Sendable {
    /// The verbs of staged stores: what a sweep recognizes as a leftover.
    public static let verbs: Set<String> = ["converting", "importing", "migrating", "recreating"]
    /// Where the staged store lives.
    public let url: URL
    private let lock: FileLock
    private let lockURL: URL

    /// Takes a new staged name beside `destination` and locks it.
    /// - Parameters:
    ///   - destination: where the store is to be installed; the staged name is in its folder.
    ///   - verb: one of ``verbs``: what the staged store is for.
    /// - Throws: ``StoreError`` when the lock file cannot be made.
    public init(beside destination: URL, verb: String) throws {
        precondition(Self.verbs.contains(verb), "a staged store's verb is one of StagedStore.verbs")
        let folder = destination.deletingLastPathComponent()
        let stem = ".\(destination.lastPathComponent).\(verb)-\(UUID().uuidString)"
        url = folder.appending(path: stem)
        lockURL = folder.appending(path: stem + ".lock")
        lock = try FileLock(url: lockURL, waiting: 0, what: destination)
    }

    /// Removes the staged store's files and the lock.
    public func discard(_ type: any StoreType) {
        try? type.destroy(at: url)
        lock.release()
        try? FileManager.default.removeItem(at: lockURL)
    }

    /// Ends the staging after the store was moved into place.
    public func finish() {
        lock.release()
        try? FileManager.default.removeItem(at: lockURL)
    }

    /// Removes what killed runs left beside `destination` (staged stores whose lock no live
    /// process holds) and returns their names, to tell the user.
    public static func sweep(beside destination: URL) -> [String] {
        let folder = destination.deletingLastPathComponent()
        let prefix = ".\(destination.lastPathComponent)."
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        var stems: Set<String> = []
        for name in names where name.hasPrefix(prefix) || name.hasPrefix("." + prefix) {
            let rest = name.dropFirst(prefix.count + (name.hasPrefix(prefix) ? 0 : 1))
            guard let dash = rest.firstIndex(of: "-"), verbs.contains(String(rest[..<dash])) else { continue }
            let id = rest[rest.index(after: dash)...].prefix(36)
            guard id.count == 36, UUID(uuidString: String(id)) != nil else { continue }
            stems.insert(prefix + rest[..<dash] + "-" + id)
        }
        var removed: [String] = []
        for stem in stems.sorted() where FileLock.isFree(folder.appending(path: stem + ".lock")) {
            // Its files, and the hidden companions named after it (`.<stem>_SUPPORT`, SQLite's external data).
            for name in names where name.hasPrefix(stem) || name.hasPrefix("." + stem) { try? FileManager.default.removeItem(at: folder.appending(path: name)) }
            removed.append(stem)
            logger.debug("removed \(stem) beside \(destination.lastPathComponent): an interrupted run left it")
        }
        return removed
    }

    /// Moves the complete store at `staged` (of `type`) to `destination`, where the store of
    /// `existing` (or nothing) is: in an order where every moment leaves one whole store, the
    /// old or the new. A destination that appears meanwhile (another process) is not replaced
    /// unless `replacing`.
    /// - Throws: ``StoreError`` when a file cannot be moved.
    public static func install(_ staged: URL, type: any StoreType, at destination: URL, replacing existing: (any StoreType)?) throws {
        logger.debug("installing \(staged.lastPathComponent) at \(destination.path)\(existing.map { ", replacing a \($0.name) store" } ?? "")")
        try type.checkNewStoreLocation(destination)
        guard let existing else {
            // The log folded in, the staged sidecars hold nothing the main file needs: they go
            // first, so a kill after the move leaves at most the staging's own lock file.
            // Folders of the set (external data the main file names) move first: a main file never
            // arrives before the files it names.
            try type.checkpoint(at: staged)
            for (sidecar, target) in zip(type.fileURLs(for: staged), type.fileURLs(for: destination)).dropFirst() {
                if FileOperations.isFolder(sidecar) { try FileOperations.mergeFolder(sidecar, into: target) } else { try? FileManager.default.removeItem(at: sidecar) }
            }
            try FileOperations.moveNew(type.fileURLs(for: staged)[0], to: destination)
            return
        }
        if existing.name == type.name {
            try type.replace(at: destination, with: staged)
            return
        }
        // Another type: the old store's log folded in, its sidecars removed, then the new main file renamed over the old one.
        do { try existing.checkpoint(at: destination) } catch let error as StoreError where error.code == .corrupt {}
        let kept = FileOperations.attributes(destination)
        // The old store's folders go after its main file (which names their files) is replaced.
        let oldFolders = existing.fileURLs(for: destination).dropFirst().filter(FileOperations.isFolder)
        for sidecar in existing.fileURLs(for: destination).dropFirst() where FileManager.default.fileExists(atPath: sidecar.path) && !oldFolders.contains(sidecar) {
            try FileManager.default.removeItem(at: sidecar)
        }
        try type.checkpoint(at: staged)
        for (sidecar, target) in zip(type.fileURLs(for: staged), type.fileURLs(for: destination)).dropFirst() where FileOperations.isFolder(sidecar) {
            try FileOperations.mergeFolder(sidecar, into: target)
        }
        try FileOperations.rename(type.fileURLs(for: staged)[0], over: destination)
        let newFolders = Set(type.fileURLs(for: destination).dropFirst().map(\.path))
        for folder in oldFolders where !newFolders.contains(folder.path) { try? FileManager.default.removeItem(at: folder) }
        try? type.destroy(at: staged)
        if let kept { try FileOperations.apply(kept, to: destination) }
    }
}
