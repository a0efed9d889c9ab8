import Foundation

extension StoreType {
    /// Moves the whole store at `url` (every file of its set) into an `Incompatible` folder
    /// beside it, under the store's name with the time appended (`Notes-2026-11-23T12-30-00Z.sqlite`),
    /// and returns where it went. What a container or `objectstore migrate --on-incompatible
    /// move-aside` does with a store it cannot open or migrate, so that a fresh one can take its place.
    ///
    /// The store's log is folded in first where the store still allows it; then the sidecars
    /// move and the main file last, so a main file never sits beside another store's sidecar.
    /// - Throws: ``StoreError`` with ``StoreError/Code/io`` when a file cannot be moved.
    public func moveAside(at url: URL) throws -> URL {
        let folder = url.deletingLastPathComponent().appending(path: "Incompatible")
        let stamp = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withFullDate, .withFullTime])
            .replacingOccurrences(of: ":", with: "-")
        let base = url.deletingPathExtension().lastPathComponent
        let ext = url.pathExtension.isEmpty ? "" : "." + url.pathExtension
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            var destination = folder.appending(path: "\(base)-\(stamp)\(ext)")
            var n = 2
            while fileURLs(for: destination).contains(where: { FileManager.default.fileExists(atPath: $0.path) }) {
                destination = folder.appending(path: "\(base)-\(stamp)-\(n)\(ext)")
                n += 1
            }
            try? checkpoint(at: url)
            for (from, to) in zip(fileURLs(for: url), fileURLs(for: destination)).reversed() where FileManager.default.fileExists(atPath: from.path) {
                try FileManager.default.moveItem(at: from, to: to)
            }
            return destination
        } catch {
            throw StoreError(.io, "cannot move the store aside into \(folder.path)", url: url, cause: error)
        }
    }
}
