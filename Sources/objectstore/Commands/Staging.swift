import Foundation
import ObjectStore

/// A store being written under a temporary name beside its destination (`.<name>.<verb>-<id>`),
/// moved into place only when it is complete. A lock file (`.<name>.<verb>-<id>.lock`) shows
/// that a live process owns it; leftovers of killed runs (their lock free) are swept by the
/// next run beside the same destination.
final class Staging {
    /// Where the staged store lives.
    let url: URL
    private let lock: FileLock
    private let lockURL: URL

    init(beside destination: URL, verb: String) throws {
        let folder = destination.deletingLastPathComponent()
        let stem = ".\(destination.lastPathComponent).\(verb)-\(UUID().uuidString)"
        url = folder.appending(path: stem)
        lockURL = folder.appending(path: stem + ".lock")
        lock = try FileLock(url: lockURL, waiting: 0, what: destination)
    }

    /// Removes the staged store's files and the lock.
    func discard(_ type: any StoreType) {
        try? type.destroy(at: url)
        lock.release()
        try? FileManager.default.removeItem(at: lockURL)
    }

    /// The error to report when writing `destination` failed with `error`: it names the
    /// destination, and the staged name in its text is the destination's.
    func failure(_ error: any Error, writing destination: String) -> any Error {
        guard let message = ObjectStoreCommand.message(for: error)?.replacingOccurrences(of: url.path, with: destination) else { return error }
        return CLIError(message.hasPrefix(destination + ":") ? message : "\(destination): not written: " + message)
    }

    /// Ends the staging after the store was moved into place.
    func finish() {
        lock.release()
        try? FileManager.default.removeItem(at: lockURL)
    }

    /// Removes what killed runs left beside `destination` (staged stores whose lock no live
    /// process holds) and returns their names, to tell the user.
    static func sweep(beside destination: URL) -> [String] {
        let folder = destination.deletingLastPathComponent()
        let prefix = ".\(destination.lastPathComponent)."
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        var stems: Set<String> = []
        for name in names where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count)
            guard let dash = rest.firstIndex(of: "-"), ["converting", "importing"].contains(String(rest[..<dash])) else { continue }
            let id = rest[rest.index(after: dash)...].prefix(36)
            guard id.count == 36, UUID(uuidString: String(id)) != nil else { continue }
            stems.insert(prefix + rest[..<dash] + "-" + id)
        }
        var removed: [String] = []
        for stem in stems.sorted() where FileLock.isFree(folder.appending(path: stem + ".lock")) {
            for name in names where name.hasPrefix(stem) { try? FileManager.default.removeItem(at: folder.appending(path: name)) }
            removed.append(stem)
        }
        return removed
    }

    /// Sweeps, telling the user on stderr what was removed.
    static func sweepAndSay(beside destination: URL) {
        for stem in sweep(beside: destination) {
            printError("objectstore: removed \(stem), left by an interrupted run\n")
        }
    }

    /// Moves the complete store at `staged` (of `type`) to `destination`, where the store of
    /// `existing` (or nothing) is: in an order where every moment leaves one whole store, the
    /// old or the new. A destination that appears meanwhile (another process) is not replaced
    /// unless `replacing`.
    static func install(_ staged: URL, type: any StoreType, at destination: URL, replacing existing: (any StoreType)?) throws {
        guard let existing else {
            // The log folded in, the staged sidecars hold nothing the main file needs: they go
            // first, so a kill after the move leaves at most the staging's own lock file.
            try type.checkpoint(at: staged)
            for sidecar in type.fileURLs(for: staged).dropFirst() { try? FileManager.default.removeItem(at: sidecar) }
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
        for sidecar in existing.fileURLs(for: destination).dropFirst() where FileManager.default.fileExists(atPath: sidecar.path) {
            try FileManager.default.removeItem(at: sidecar)
        }
        try type.checkpoint(at: staged)
        try FileOperations.rename(type.fileURLs(for: staged)[0], over: destination)
        try? type.destroy(at: staged)
        if let kept { try FileOperations.apply(kept, to: destination) }
    }
}
