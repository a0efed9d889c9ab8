import Foundation

/// A fresh folder in the temporary directory, removed with everything in it when released.
///
/// ```swift
/// let folder = try TemporaryFolder()
/// let url = folder.file("store.sqlite")
/// ```
public final class TemporaryFolder {
    /// The folder.
    public let url: URL

    /// Creates the folder (`<tmp>/<prefix>-<uuid>`).
    public init(prefix: String = "objectstore-tests") throws {
        url = FileManager.default.temporaryDirectory.appending(path: "\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// A file name inside the folder.
    public func file(_ name: String) -> URL { url.appending(path: name) }

    /// The names of the files in the folder, sorted.
    public var files: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted() }
}
