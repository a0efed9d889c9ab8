import Foundation

/// Loads models from disk: Xcode `.xcdatamodeld` bundles, single `.xcdatamodel`
/// folders (or their `contents` file), compiled models (a `.momd` folder or one `.mom`
/// file, see ``ModelArchive``), and ObjectStore's JSON model format.
///
/// ```swift
/// let versions = try ModelLoader.load(at: URL(filePath: "App.xcdatamodeld"))
/// let model = versions.current
/// ```
public enum ModelLoader {
    /// Loads every model version at `url`.
    ///
    /// A bundle yields every version in Xcode's order, the current one named by
    /// `.xccurrentversion`; a `.momd` folder yields its `.mom` versions in the same order, the
    /// current one named by its `VersionInfo.plist`; a single model, `.mom` or JSON file
    /// yields one version named after the file.
    ///
    /// - Throws: ``ModelError`` naming the file, with line and column for syntax errors.
    public static func load(at url: URL) throws -> ModelVersions {
        let path = url.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ModelError(.notFound, problems: ["no such file or directory"], file: url.relativePath)
        }
        let name = url.deletingPathExtension().lastPathComponent
        if !isDirectory.boolValue {
            return try ModelVersions(versions: [.init(name: name, model: loadFile(url))])
        }
        if url.pathExtension == "momd" { return try loadCompiledBundle(url) }
        if url.pathExtension == "xcdatamodeld" || !FileManager.default.fileExists(atPath: url.appending(path: "contents").path) {
            return try loadBundle(url)
        }
        return try ModelVersions(versions: [.init(name: name, model: loadFile(url.appending(path: "contents")))])
    }

    /// Loads one model: the current version of a bundle, or `version` when given.
    /// - Throws: ``ModelError``; ``ModelError/Code/unknownVersion`` for a version not in the bundle.
    public static func loadModel(at url: URL, version: String? = nil) throws -> ManagedObjectModel {
        let versions = try load(at: url)
        guard let version else { return versions.current }
        do { return try versions.model(named: version) } catch let error as ModelError { throw error.located(in: url.path) }
    }

    /// Reads one model file: a compiled model (`.mom`, a binary property list), or XML
    /// (`contents`) or JSON by its first character.
    public static func loadFile(_ url: URL) throws -> ManagedObjectModel {
        var data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ModelError(.unreadable, problems: ["cannot be read"], file: url.path)
        }
        if data.starts(with: Data("bplist".utf8)) || url.pathExtension == "mom" {
            do { return try ModelArchive.decodeModel(data) } catch let error as ModelError { throw error.located(in: url.path) }
        }
        // A UTF-8 byte-order mark (some editors write one) is not part of the document.
        if data.starts(with: [0xEF, 0xBB, 0xBF]) { data = Data(data.dropFirst(3)) }
        let first = data.first { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0a || $0 == 0x0d) }
        switch first {
        case UInt8(ascii: "{"): return try JSONModelFormat.decode(data, file: url.path)
        case UInt8(ascii: "<"): return try XcodeModelReader.read(data, file: url.path)
        case nil: throw ModelError(.unreadable, problems: ["the model file is empty"], file: url.path)
        default:
            throw ModelError(.unsupported, problems: ["neither a Core Data model (XML) nor a JSON model"], file: url.path, line: 1, column: 1)
        }
    }

    /// An Xcode bundle (`.xcdatamodeld`): one `.xcdatamodel` folder per version, `.xccurrentversion`
    /// naming the current one (`_XCCurrentVersionName`); without it, the last in Xcode's order.
    private static func loadBundle(_ url: URL) throws -> ModelVersions {
        try loadVersionFolder(url, suffix: ".xcdatamodel", contents: "/contents", what: "the bundle",
                              marker: ".xccurrentversion", key: "_XCCurrentVersionName")
    }

    /// A compiled bundle (`.momd`): one `.mom` per version, `VersionInfo.plist` naming the current
    /// one (`NSManagedObjectModel_CurrentVersionName`); without it, the last in Xcode's order.
    private static func loadCompiledBundle(_ url: URL) throws -> ModelVersions {
        try loadVersionFolder(url, suffix: ".mom", contents: "", what: "the compiled model",
                              marker: "VersionInfo.plist", key: "NSManagedObjectModel_CurrentVersionName")
    }

    /// The versions of a folder holding one `<name><suffix>` per version (its model file at
    /// `<name><suffix><contents>`), in Xcode's order, the current one named under `key` in the
    /// property list `marker` (with or without the suffix).
    private static func loadVersionFolder(_ url: URL, suffix: String, contents: String, what: String,
                                          marker: String, key: String) throws -> ModelVersions {
        let entries: [String]
        do {
            entries = try FileManager.default.contentsOfDirectory(atPath: url.path)
        } catch {
            throw ModelError(.unreadable, problems: ["the folder cannot be read"], file: url.path)
        }
        let names = ModelVersions.xcodeOrder(entries.filter { $0.hasSuffix(suffix) }.map { String($0.dropLast(suffix.count)) })
        guard !names.isEmpty else {
            throw ModelError(.unreadable, problems: ["no \(suffix) versions in \(what)"], file: url.path)
        }
        let versions = try names.map { name in
            ModelVersions.Version(name: name, model: try loadFile(url.appending(path: "\(name)\(suffix)\(contents)")))
        }
        var current: String?
        let markerURL = url.appending(path: marker)
        if let data = try? Data(contentsOf: markerURL) {
            guard let value = currentVersionName(in: data, key: key) else {
                throw ModelError(.unsupported, problems: ["no \(key) in \(marker)"], file: markerURL.path)
            }
            current = value.hasSuffix(suffix) ? String(value.dropLast(suffix.count)) : value
        }
        do {
            return try ModelVersions(versions: versions, current: current)
        } catch let error as ModelError {
            throw error.located(in: url.path)
        }
    }

    /// The string under `key` in a property list dictionary: a binary one read by the strict
    /// reader (Foundation's trusts its offsets), an XML one (what Xcode writes) by Foundation.
    private static func currentVersionName(in data: Data, key: String) -> String? {
        if data.starts(with: Data("bplist".utf8)) {
            guard case .dictionary(let values)? = BinaryPropertyListReader.decode(data), case .string(let name)? = values[key] else { return nil }
            return name
        }
        return (try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])?[key] as? String
    }
}
