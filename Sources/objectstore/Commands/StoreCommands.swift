import ArgumentParser
import Foundation
import ObjectModel
import ObjectStore

/// `--type`, shared by every store command.
struct StoreTypeOption: ParsableArguments {
    @Option(name: .long, help: "The store type: sqlite, atomic or lmdb (default: from the file's content, else its extension).")
    var type: String?
}

/// Finds a store's type and opens it, with its embedded model unless one is given.
enum StoreLocator {
    static let registry = StoreTypeRegistry.shared

    /// The type for `path`: `--type`, else the file's content, else (for a new store) its extension.
    static func type(for path: String, explicit: String?) throws -> any StoreType {
        if let explicit {
            guard registry.names.contains(explicit), explicit != "memory" else {
                throw ValidationError("unknown store type \(explicit) (use sqlite, atomic or lmdb)")
            }
            return try registry.type(named: explicit)
        }
        if FileManager.default.fileExists(atPath: path) {
            if let detected = registry.detectType(at: URL(filePath: path)) { return detected }
            throw CLIError("\(path): not a store of any known type (give --type to say which)")
        }
        return try destinationType(for: path, explicit: nil)
    }

    /// The type of a store to be written at `path`: `--type`, else its extension
    /// (an existing file's content is not consulted: it is about to be replaced).
    static func destinationType(for path: String, explicit: String?) throws -> any StoreType {
        if explicit != nil { return try type(for: path, explicit: explicit) }
        let url = URL(filePath: path)
        switch url.pathExtension.lowercased() {
        case "sqlite", "db": return try registry.type(named: "sqlite")
        case "lmdb", "mdb": return try registry.type(named: "lmdb")
        case "store", "bin": return try registry.type(named: "atomic")
        default: throw CLIError("\(path): cannot tell the store type from the extension .\(url.pathExtension) (give --type)")
        }
    }

    static func requireExisting(_ path: String, _ type: any StoreType) throws {
        guard type.storeExists(at: URL(filePath: path)) else { throw CLIError("\(path): no such store") }
    }

    /// Opens an existing store with `model`, or with the model embedded in it.
    static func open(_ path: String, type: any StoreType, model: ManagedObjectModel?, readOnly: Bool) throws -> any PersistentStore {
        let url = URL(filePath: path)
        try requireExisting(path, type)
        let model = try model ?? embeddedModel(path, type: type)
        return try type.open(at: url, model: model, options: StoreOptions(readOnly: readOnly, createIfMissing: false))
    }

    static func embeddedModel(_ path: String, type: any StoreType) throws -> ManagedObjectModel {
        let metadata = try type.readMetadata(at: URL(filePath: path))
        do {
            guard let model = try metadata.embeddedModel() else {
                throw CLIError("\(path): the store has no embedded model (give --model)")
            }
            return model
        } catch let error as ModelError {
            throw CLIError("\(path): the embedded model is unreadable: \(error.problems.joined(separator: "; "))")
        }
    }
}

/// `objectstore create <store> --model <model> [--type T]`.
struct CreateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "create", abstract: "Create an empty store with a model.")

    @Argument(help: "The store to create.") var store: String
    @Option(name: .long, help: "The model: .xcdatamodeld, .xcdatamodel or JSON.") var model: String
    @Option(name: .long, help: "The model version to use (default: the current one).") var version: String?
    @OptionGroup var typeOption: StoreTypeOption

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        guard !FileManager.default.fileExists(atPath: store), !type.storeExists(at: URL(filePath: store)) else {
            throw CLIError("\(store): already exists")
        }
        let model = try ModelLoader.loadModel(at: URL(filePath: self.model), version: version)
        try type.open(at: URL(filePath: store), model: model, options: StoreOptions()).close()
        output("created \(type.name) store \(store)")
    }
}

/// `objectstore import <store> <data.json> [--model M] [--type T]`.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Import a JSON document into a store, in one save (creating the store with --model).")

    @Argument(help: "The store.") var store: String
    @Argument(help: "The JSON document (see docs/json-format.md).") var data: String
    @Option(name: .long, help: "The model, to create the store, or instead of the store's embedded one.") var model: String?
    @Option(name: .long, help: "The model version to use (default: the current one).") var version: String?
    @OptionGroup var typeOption: StoreTypeOption

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        let url = URL(filePath: store)
        let bytes: Data
        do { bytes = try Data(contentsOf: URL(filePath: data)) } catch { throw CLIError("\(data): cannot be read") }
        let model = try self.model.map { try ModelLoader.loadModel(at: URL(filePath: $0), version: version) }
        let created = !type.storeExists(at: url)
        let opened: any PersistentStore
        if created {
            guard let model else { throw CLIError("\(store): no such store (give --model to create it)") }
            opened = try type.open(at: url, model: model, options: StoreOptions())
        } else {
            opened = try StoreLocator.open(store, type: type, model: model, readOnly: false)
        }
        do {
            let counts = try JSONInterchange.importDocument(bytes, into: opened, file: data)
            try opened.close()
            for name in counts.keys.sorted() { output("\(name) \(counts[name]!)") }
        } catch {
            try? opened.close()
            if created { try? type.destroy(at: url) }
            throw error
        }
    }
}

/// `objectstore export <store> [--type T] [--entity E] [--where PREDICATE] [--output F]`.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "export", abstract: "Export a store as JSON.")

    @Argument(help: "The store.") var store: String
    @OptionGroup var typeOption: StoreTypeOption
    @Option(name: .long, help: "Only objects of this entity (and its sub-entities).") var entity: String?
    @Option(name: .customLong("where"), help: "Only objects matching this predicate (NSPredicate syntax).") var predicate: String?
    @Option(name: .long, help: "Write to this file instead of standard output.") var output: String?

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        let predicate: ObjectPredicate?
        do { predicate = try self.predicate.map { try ObjectPredicate($0) } } catch let error as PredicateSyntaxError {
            throw ValidationError("--where: \(error)")
        }
        let opened = try StoreLocator.open(store, type: type, model: nil, readOnly: true)
        defer { try? opened.close() }
        let options = JSONInterchange.ExportOptions(entity: entity, predicate: predicate)
        if let output {
            let temporary = output + ".partial"
            guard FileManager.default.createFile(atPath: temporary, contents: nil),
                  let handle = FileHandle(forWritingAtPath: temporary) else { throw CLIError("\(output): cannot be written") }
            do {
                try JSONInterchange.export(opened, options: options) { handle.write(Data($0.utf8)) }
                try handle.close()
                try FileOperations.rename(URL(filePath: temporary), over: URL(filePath: output))
            } catch {
                try? handle.close()
                try? FileManager.default.removeItem(atPath: temporary)
                throw error
            }
        } else {
            try JSONInterchange.export(opened, options: options) { FileHandle.standardOutput.write(Data($0.utf8)) }
        }
    }
}

/// `objectstore destroy <store> [--type T]`.
struct DestroyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "destroy", abstract: "Remove every file of a store.")

    @Argument(help: "The store.") var store: String
    @OptionGroup var typeOption: StoreTypeOption

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        try StoreLocator.requireExisting(store, type)
        try type.destroy(at: URL(filePath: store))
        output("destroyed \(store)")
    }
}

/// `objectstore checkpoint <store> [--type T]`.
struct CheckpointCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "checkpoint", abstract: "Fold a SQLite store's WAL into its main file.")

    @Argument(help: "The store.") var store: String
    @OptionGroup var typeOption: StoreTypeOption

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        try StoreLocator.requireExisting(store, type)
        try type.checkpoint(at: URL(filePath: store))
        output("checkpointed \(store)")
    }
}
