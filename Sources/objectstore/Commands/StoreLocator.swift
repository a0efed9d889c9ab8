import ArgumentParser
import BuiltInBackends
import Foundation
import ObjectModel
import ObjectStore

/// `--type`, shared by every store command.
struct StoreTypeOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The store type: \(StoreLocator.typeNames) (default: from the file's content, else its extension).",
                                            valueName: "type"))
    var type: String?
}

/// `--author`, shared by every command that writes: who the store's history says made the change.
struct AuthorOption: ParsableArguments {
    @Option(name: .long, help: "The author the store's history records for this change (see `objectstore history`).")
    var author: String?
}

/// `--model` and `--model-version`, shared by every command that opens a store.
struct ModelSelection: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The model: a .xcdatamodeld bundle, a .xcdatamodel folder, a compiled .momd folder or .mom file, or a JSON model file.",
        discussion: "Default: the model embedded in the store, else the model a Core Data store carries (Z_MODELCACHE)."))
    var model: String?

    @Option(name: .customLong("model-version"), help: ArgumentHelp(
        "The version of a bundle to use.",
        discussion: "Default: for an existing store, the version whose entity hashes match the store's; for a new store, the bundle's current version."))
    var modelVersion: String?

    /// The old spelling of `--model-version`, caught so that it is not read as the tool's own `--version`.
    @Option(name: .customLong("version"), help: .hidden) var oldVersionOption: String?

    func validate() throws {
        if oldVersionOption != nil { throw ValidationError(ModelSelection.renamed) }
        if modelVersion != nil && model == nil { throw ValidationError("--model-version needs --model") }
    }

    static let renamed = "--version is the tool's own version; name a model version with --model-version"

    /// The model the store itself provides: the ObjectStore model embedded in its metadata,
    /// else the one it carries in its own form (a Core Data store's `Z_MODELCACHE`); nil when
    /// it has neither.
    static func storeModel(at path: String, type: any StoreType, metadata: StoreMetadata) throws -> ManagedObjectModel? {
        do {
            return try type.ownModel(at: try StoreLocator.url(path), metadata: metadata)
        } catch let error as ModelError {
            let which = metadata[StoreMetadata.Key.embeddedModel] != nil ? "the embedded model is unreadable" : "the model the store carries (Z_MODELCACHE) cannot be read"
            throw CLIError("\(path): \(which): \(error.problems.joined(separator: "; "))")
        }
    }

    /// The model for a new store: the named version, else the current one; nil without `--model`.
    func modelForNewStore() throws -> ManagedObjectModel? {
        guard let model else { return nil }
        return try ModelLoader.loadModel(at: URL(filePath: model), version: modelVersion)
    }

    /// The model to open the existing store at `path` with, and the name of the version it is
    /// (nil for the store's own model): the named version, else the version matching the store's
    /// hashes, else the store's own model (``storeModel(at:type:metadata:)``).
    func modelForStore(at path: String, type: any StoreType, metadata: StoreMetadata) throws -> (model: ManagedObjectModel, version: String?) {
        guard let model else {
            guard let own = try Self.storeModel(at: path, type: type, metadata: metadata) else {
                throw CLIError("\(path): the store has no embedded model (give --model with its .xcdatamodeld, .xcdatamodel, .momd, .mom or JSON model)")
            }
            return (own, nil)
        }
        let url = URL(filePath: model)
        let versions = try ModelLoader.load(at: url)
        if let modelVersion {
            do { return (try versions.model(named: modelVersion), modelVersion) } catch let error as ModelError { throw error.located(in: model) }
        }
        guard versions.versions.count > 1 else { return (versions.current, versions.currentName) }
        do {
            let version = try versions.version(matching: metadata)
            return (version.model, version.name)
        } catch let error as StoreError {
            throw CLIError("\(path): \(error.message) (in \(model); --model-version picks one)")
        }
    }
}

/// Finds a store's type and opens it, with its embedded model unless one is given.
enum StoreLocator {
    static let registry = StoreTypeRegistry.shared

    /// The type whose stores `path` names by its URL scheme (`postgresql://…`), nil for a file path.
    static func urlType(_ path: String) -> (any StoreType)? { registry.type(forURL: path) }

    /// Whether `path` names a store by a URL (on a server), not a file.
    static func isServerURL(_ path: String) -> Bool { urlType(path) != nil }

    /// The URL of the store `path` names: the URL as given, else the file path.
    static func url(_ path: String) throws -> URL {
        guard isServerURL(path) else { return URL(filePath: path) }
        guard let url = URL(string: path) else { throw ValidationError("\(path): not a valid URL") }
        return url
    }

    /// The URL of the store `path` names, a file's with its links resolved.
    static func resolvedURL(_ path: String) throws -> URL {
        isServerURL(path) ? try url(path) : FileOperations.resolved(URL(filePath: path))
    }

    /// The type for `path`: `--type`, else for a URL its scheme's, else the file's
    /// content, else (for a new store) its extension.
    static func type(for path: String, explicit: String?) throws -> any StoreType {
        if let type = urlType(path) {
            if let explicit, explicit != type.name {
                guard (try? registry.type(named: explicit)) != nil else { throw ValidationError("unknown store type \(explicit) (use \(typeNames))") }
                throw ValidationError("\(path) names a \(type.name) store by its URL: --type \(explicit) does not fit it (leave --type out)")
            }
            return type
        }
        if let explicit {
            guard let type = fileTypes.first(where: { $0.name == explicit }) else {
                if (try? registry.type(named: explicit)) != nil {
                    throw ValidationError("--type \(explicit): a \(explicit) store is named by its URL, not a file path (\(path))")
                }
                throw ValidationError("unknown store type \(explicit) (use \(fileTypes.map(\.name).joined(separator: ", ")))")
            }
            // A store whose content says another type is a usage mistake, never read or written as this one.
            if let found = registry.detectType(at: URL(filePath: path)), found.name != type.name {
                throw ValidationError("\(path): its content says it is a store of type \(found.name), not \(explicit) (leave out --type, or give --type \(found.name))")
            }
            return type
        }
        if FileManager.default.fileExists(atPath: path) {
            // A folder, a FIFO, a device, a file this user may not read: said as such.
            try FileOperations.checkRegularFile(URL(filePath: path), kind: "store")
            if let detected = registry.detectType(at: URL(filePath: path)) { return detected }
            let empty = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) == 0
            throw CLIError("\(path): \(empty ? "an empty file, " : "")not a store of any known type (give --type to say which)")
        }
        return try destinationType(for: path, explicit: nil)
    }

    /// The type of a store to be written at `path`: `--type`, else its extension
    /// (an existing file's content is not consulted: it is about to be replaced).
    static func destinationType(for path: String, explicit: String?) throws -> any StoreType {
        if explicit != nil || isServerURL(path) { return try type(for: path, explicit: explicit) }
        let url = URL(filePath: path)
        guard let type = registry.type(forExtension: url.pathExtension) else {
            // Not there, and no extension to tell a new store's type by: both said.
            if !FileManager.default.fileExists(atPath: path) {
                throw CLIError.missing(path, "store", url.pathExtension.isEmpty ? BuiltInBackends.defaultType.fileExtensions.first.map { " (to make one, give it an extension such as .\($0), or --type)" } ?? " (to make one, give --type)"
                                                                               : " (to make one, .\(url.pathExtension) names no store type: give --type)")
            }
            throw CLIError("\(path): cannot tell the store type from the extension .\(url.pathExtension) (give --type)")
        }
        return type
    }

    /// Every registered type's name, as help text lists them (`sqlite, atomic, lmdb or postgresql`).
    static var typeNames: String {
        let names = BuiltInBackends.namedTypes.map(\.name)
        return names.dropLast().joined(separator: ", ") + (names.count > 1 ? " or " : "") + (names.last ?? "")
    }

    /// The registered types whose stores are files: the ones the tool works with.
    static var fileTypes: [any StoreType] { BuiltInBackends.namedTypes.filter { !$0.fileExtensions.isEmpty } }

    static func requireExisting(_ path: String, _ type: any StoreType) throws {
        let url = try url(path)
        guard type.storeExists(at: url) else {
            // A server that cannot be reached is not a store that does not exist: its metadata read says why.
            if isServerURL(path) { _ = try type.readMetadata(at: url) }
            throw CLIError.missing(path, "store")
        }
    }

    /// The model an existing store opens with (see ``ModelSelection/modelForStore(at:metadata:)``).
    static func model(for path: String, type: any StoreType, selection: ModelSelection) throws -> (model: ManagedObjectModel, version: String?) {
        try requireExisting(path, type)
        return try selection.modelForStore(at: path, type: type, metadata: try type.readMetadata(at: try url(path)))
    }

    /// Opens an existing store with the model `selection` gives.
    static func open(_ path: String, type: any StoreType, selection: ModelSelection, readOnly: Bool, author: String? = nil) throws -> any PersistentStore {
        let (model, _) = try model(for: path, type: type, selection: selection)
        return try open(path, type: type, model: model, readOnly: readOnly, author: author)
    }

    /// Opens an existing store with `model`; its writes record `author` in its history.
    static func open(_ path: String, type: any StoreType, model: ManagedObjectModel, readOnly: Bool, author: String? = nil) throws -> any PersistentStore {
        try type.open(at: try url(path), model: model, options: StoreOptions(readOnly: readOnly, createIfMissing: false, author: author))
    }

    /// A snapshot of an existing store: every read of one command (an export, a validation,
    /// a count) sees one moment of it, whatever another process writes meanwhile.
    ///
    /// Unless `checkingRows` is false (validate, which lists them), a store with rows no read
    /// sees (``IntegrityChecking/rowsNoReadSees(limit:)``) is refused: an export or a conversion
    /// would leave those objects out without a word.
    static func snapshot(_ path: String, type: any StoreType, model: ManagedObjectModel, checkingRows: Bool = true) throws -> any PersistentStore {
        let store = try open(path, type: type, model: model, readOnly: true)
        defer { try? store.close() }
        let snapshot = try store.snapshot()
        if checkingRows, let checking = snapshot as? any IntegrityChecking, let row = try checking.rowsNoReadSees(limit: 1).first {
            try? snapshot.close()
            throw StoreError(.corrupt, "the store is damaged: \(row); it would be left out without a word, so nothing is read "
                             + "(objectstore validate lists every such row)", url: store.url)
        }
        return snapshot
    }

    /// A snapshot of an existing store, with the model `selection` gives.
    static func snapshot(_ path: String, type: any StoreType, selection: ModelSelection, checkingRows: Bool = true) throws -> any PersistentStore {
        try snapshot(path, type: type, model: try model(for: path, type: type, selection: selection).model, checkingRows: checkingRows)
    }
}
