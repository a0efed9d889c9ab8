import Foundation
import ObjectModel

extension StoreType {
    /// Moves the whole store at `url` (every file of its set but the writers' lock file) into an
    /// `Incompatible` folder beside it, under the store's name with the time appended
    /// (`Notes-2026-11-23T12-30-00Z.sqlite`), and returns where it went; with `fresh`, an empty
    /// store of that model takes its place. What a container or `objectstore migrate
    /// --on-incompatible move-aside` does with a store it cannot open or migrate.
    ///
    /// The files move under the store's write lock (``withWriteLock(at:_:)``): a writer that is
    /// committing is waited for, and its commit moves with the store; a writer that opened the
    /// store before refuses to commit afterwards. The log goes with the main file (sidecars
    /// first, the main file last). The fresh store is made beside the store first and moved in
    /// under the same lock.
    /// - Throws: ``StoreError`` with ``StoreError/Code/busy`` when a writer keeps the lock,
    ///   ``StoreError/Code/io`` when a file cannot be moved; the store is then where it was.
    public func moveAside(at given: URL, fresh model: ManagedObjectModel? = nil) throws -> URL {
        let url = FileOperations.resolved(given)
        let folder = url.deletingLastPathComponent().appending(path: "Incompatible")
        let stamp = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withFullDate, .withFullTime])
            .replacingOccurrences(of: ":", with: "-")
        let base = url.deletingPathExtension().lastPathComponent
        let ext = url.pathExtension.isEmpty ? "" : "." + url.pathExtension
        let staged = try model.map { try freshStore(beside: url, model: $0) }
        do {
            // Folded in before the lock (a checkpoint needs the writers' lock itself); what is
            // committed after it moves with the log.
            try? checkpoint(at: url)
            let destination = try withWriteLock(at: url) {
                do {
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                } catch {
                    throw StoreError(.io, "cannot make the folder \(folder.path)", url: url, cause: error)
                }
                var destination = folder.appending(path: "\(base)-\(stamp)\(ext)")
                var n = 2
                while fileURLs(for: destination).contains(where: { FileManager.default.fileExists(atPath: $0.path) }) {
                    destination = folder.appending(path: "\(base)-\(stamp)-\(n)\(ext)")
                    n += 1
                }
                let kept = writeLockFile(for: url)
                for (from, to) in zip(fileURLs(for: url), fileURLs(for: destination)).reversed()
                where from != kept && FileManager.default.fileExists(atPath: from.path) {
                    do {
                        try FileManager.default.moveItem(at: from, to: to)
                    } catch {
                        throw StoreError(.io, "cannot move \(from.lastPathComponent) aside into \(folder.path)", url: url, cause: error)
                    }
                }
                if let staged { try install(fresh: staged.url, at: url) }
                return destination
            }
            staged?.finish()
            return destination
        } catch {
            staged?.discard(self)
            throw error
        }
    }

    /// Replaces the store at `url` with an empty store of `model`. This destroys the store's
    /// data. What a container or `objectstore migrate --on-incompatible recreate` does with a
    /// store it cannot open or migrate, for caches.
    ///
    /// The empty store is made beside the store first and moved in under the store's write
    /// lock (``withWriteLock(at:_:)``), the old store's sidecars removed before its main file is
    /// replaced: every moment shows one whole store. The new store keeps the old one's
    /// permission bits.
    ///
    /// With `assessed`, the store's files as they were when it was judged incompatible
    /// (``filesState(at:)``): a store written since (a writer that committed while this one
    /// waited for the lock) is left as written, and nothing is recreated.
    /// - Throws: ``StoreError`` with ``StoreError/Code/busy`` when a writer keeps the lock, or
    ///   wrote the store after `assessed`; the store is then as it was.
    public func recreate(at given: URL, model: ManagedObjectModel, unchangedSince assessed: StoreFilesState? = nil) throws {
        let url = FileOperations.resolved(given)
        let staged = try freshStore(beside: url, model: model)
        do {
            try withWriteLock(at: url) {
                if let assessed, filesState(at: url) != assessed {
                    throw StoreError(.busy, "another process wrote the store after it was found incompatible: it is left as written and "
                                     + "was not recreated (run again when no process has it open)", url: url)
                }
                let kept = FileOperations.attributes(url)
                try install(fresh: staged.url, at: url)
                if let kept { try FileOperations.apply(kept, to: url) }
            }
            staged.finish()
        } catch {
            staged.discard(self)
            throw error
        }
    }

    /// The state of the store's files (each one's identity, size and modification time, or its
    /// absence), to tell whether a writer has changed the store since: files readers and lockers
    /// change as well (lock files, SQLite's `-shm`) are left out, and an empty file counts as
    /// none (SQLite makes an empty `-wal` where there was none when a connection opens).
    public func filesState(at given: URL) -> StoreFilesState {
        let url = FileOperations.resolved(given)
        let changedByReaders = fileURLs(for: url).filter { ["-lock", "-shm"].contains(where: $0.lastPathComponent.hasSuffix) }
        return StoreFilesState(files: fileURLs(for: url).filter { !changedByReaders.contains($0) }.map { file in
            var info = stat()
            guard lstat(file.path, &info) == 0, info.st_size > 0 else { return "\(file.lastPathComponent): none" }
            return "\(file.lastPathComponent): \(info.st_dev)/\(info.st_ino) \(info.st_size) bytes, modified \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        })
    }

    /// An empty store of `model`, made and closed under a staged name beside `url`.
    private func freshStore(beside url: URL, model: ManagedObjectModel) throws -> StagedStore {
        let staged = try StagedStore(beside: url, verb: "recreating")
        do {
            try open(at: staged.url, model: model, options: StoreOptions()).close()
            return staged
        } catch {
            staged.discard(self)
            throw error
        }
    }

    /// Moves the closed store at `fresh` to `url` (the caller holds `url`'s write lock): the
    /// sidecars of whatever is at `url` replaced or removed first (the lock file stays), the
    /// main file last.
    private func install(fresh: URL, at url: URL) throws {
        let kept = writeLockFile(for: url)
        let pairs = Array(zip(fileURLs(for: fresh), fileURLs(for: url)))
        do {
            for (from, to) in pairs.dropFirst() where to != kept {
                if FileManager.default.fileExists(atPath: from.path) {
                    if FileOperations.isFolder(to) { try FileManager.default.removeItem(at: to) }
                    try FileOperations.rename(from, over: to)
                } else if FileManager.default.fileExists(atPath: to.path) {
                    try FileManager.default.removeItem(at: to)
                }
            }
            try FileOperations.rename(pairs[0].0, over: url)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.io, "cannot put the new store in place", url: url, cause: error)
        }
        // What the staged store has left (its own lock file).
        try? destroy(at: fresh)
    }

    /// The model the store at `url` itself provides: the one embedded in its metadata, else
    /// the one it carries in its own form (``CarriedModelReading``: a Core Data store's
    /// `Z_MODELCACHE`); nil when it has neither.
    /// - Throws: `ModelError` when the model it has cannot be read; ``StoreError`` when the
    ///   store cannot be read.
    public func ownModel(at url: URL, metadata: StoreMetadata) throws -> ManagedObjectModel? {
        if let embedded = try metadata.embeddedModel() { return embedded }
        guard let carrying = self as? any CarriedModelReading else { return nil }
        return try carrying.carriedModel(at: url)
    }
}

/// A store's files at one moment (``StoreType/filesState(at:)``): equal states mean no writer
/// changed the store in between.
public struct StoreFilesState: Equatable, Sendable {
    fileprivate let files: [String]
}
