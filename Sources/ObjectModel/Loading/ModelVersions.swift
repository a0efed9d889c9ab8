import Foundation

/// An ordered history of named model versions, oldest first, and the current one.
///
/// ```swift
/// let versions = try ModelLoader.load(at: URL(filePath: "Model.xcdatamodeld"))
/// for version in versions.versions { print(version.name) }
/// let current = versions.current
/// ```
public struct ModelVersions: Sendable {
    /// One named version.
    public struct Version: Sendable, Hashable {
        /// The version's name (`Model 2`).
        public var name: String
        /// The model of that version.
        public var model: ManagedObjectModel

        /// Creates a version.
        public init(name: String, model: ManagedObjectModel) {
            self.name = name
            self.model = model
        }
    }

    /// The versions, oldest first.
    public private(set) var versions: [Version]
    /// The name of the current version.
    public private(set) var currentName: String
    /// Overrides of "which version comes after this one", to skip a broken version.
    public var nextOverrides: [String: String]

    /// Creates a history.
    ///
    /// - Throws: ``ModelError`` with ``ModelError/Code/unknownVersion`` when `current`
    ///   is not one of the versions, or when two versions share a name.
    public init(versions: [Version], current: String? = nil, nextOverrides: [String: String] = [:]) throws {
        guard let last = versions.last else {
            throw ModelError(.unreadable, problems: ["there are no model versions"])
        }
        let names = versions.map(\.name)
        guard Set(names).count == names.count else {
            throw ModelError(.inconsistentModel, problems: ["two model versions share a name"])
        }
        let currentName = current ?? last.name
        guard names.contains(currentName) else {
            throw ModelError(.unknownVersion, problems: ["current version \(currentName) is not among \(names.joined(separator: ", "))"])
        }
        self.versions = versions
        self.currentName = currentName
        self.nextOverrides = nextOverrides
    }

    /// The current version's model.
    public var current: ManagedObjectModel { versions.first { $0.name == currentName }!.model }

    /// The names of the versions, oldest first.
    public var names: [String] { versions.map(\.name) }

    /// The model of the version named `name`.
    /// - Throws: ``ModelError`` with ``ModelError/Code/unknownVersion``.
    public func model(named name: String) throws -> ManagedObjectModel {
        guard let version = versions.first(where: { $0.name == name }) else {
            throw ModelError(.unknownVersion, problems: ["no model version named \(name) (versions: \(names.joined(separator: ", ")))"])
        }
        return version.model
    }

    /// The version after `name`: the override if one is set, else the next in order.
    public func version(after name: String) -> String? {
        if let next = nextOverrides[name] { return next }
        guard let i = names.firstIndex(of: name), i + 1 < versions.count else { return nil }
        return names[i + 1]
    }

    /// The same versions in the order `names` gives (every version exactly once).
    /// - Throws: ``ModelError`` when `names` is not a permutation of the version names.
    public func reordered(_ names: [String]) throws -> ModelVersions {
        guard names.sorted() == self.names.sorted() else {
            throw ModelError(.unknownVersion, problems: ["the order \(names.joined(separator: ", ")) does not name each version once"])
        }
        let byName = Dictionary(uniqueKeysWithValues: versions.map { ($0.name, $0) })
        return try ModelVersions(versions: names.map { byName[$0]! }, current: currentName, nextOverrides: nextOverrides)
    }

    /// Orders version names the way Xcode numbers them: `Name`, `Name 2`, `Name 3`, …
    /// by base name, then numeric suffix.
    public static func xcodeOrder(_ names: [String]) -> [String] {
        func key(_ name: String) -> (String, Int) {
            if let space = name.lastIndex(of: " "), let n = Int(name[name.index(after: space)...]), n >= 0 {
                return (String(name[..<space]), n)
            }
            return (name, 1)
        }
        return names.sorted { a, b in
            let (ka, kb) = (key(a), key(b))
            return ka.0 != kb.0 ? ka.0 < kb.0 : (ka.1 != kb.1 ? ka.1 < kb.1 : a < b)
        }
    }
}
