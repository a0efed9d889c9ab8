import ArgumentParser
import Foundation
import ObjectModel
import ObjectStore

/// `objectstore create <store> --model <model> [--model-version V] [--type T]`.
struct CreateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "create", abstract: "Create an empty store with a model.")

    @Argument(help: "The store to create.") var store: String
    @OptionGroup var modelSelection: ModelSelection
    @OptionGroup var typeOption: StoreTypeOption

    func validate() throws {
        if modelSelection.model == nil { throw ValidationError("create needs --model") }
    }

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        let url = try StoreLocator.url(store)
        guard StoreLocator.isServerURL(store) || !FileManager.default.fileExists(atPath: store), !type.storeExists(at: url) else {
            throw CLIError("\(store): already exists")
        }
        guard let model = try modelSelection.modelForNewStore() else { throw ValidationError("create needs --model") }
        type.sweepAndSay(beside: try StoreLocator.resolvedURL(store))
        try type.open(at: url, model: model, options: StoreOptions()).close()
        output("created \(type.name) store \(shown(store))")
    }
}

/// `objectstore import <store> <data.json> [--model M] [--model-version V] [--type T]`.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Import a JSON document into a store, all of it or nothing (creating the store with --model).")

    @Argument(help: "The store.") var store: String
    @Argument(help: "The JSON document (see docs/json-format.md); - or /dev/stdin reads standard input.") var data: String
    @OptionGroup var modelSelection: ModelSelection
    @OptionGroup var typeOption: StoreTypeOption
    @OptionGroup var authorOption: AuthorOption
    @Flag(name: .long, help: ArgumentHelp(
        "An object whose values of a uniqueness constraint's attributes equal an existing object's updates that object.",
        discussion: "The values and relationships the document gives replace the object's; the rest are kept. Without it such an object is a constraint violation and nothing is imported."))
    var upsert = false
    @Flag(name: .long, help: ArgumentHelp(
        "A relationship may name an object the store already has by its export _id (Entity/N), when no object of the document has that _id.",
        discussion: "Without it every object a relationship names must be in the document: a partial export imported into another store does not link to whatever has those keys there."))
    var linkExisting = false

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        let url = try StoreLocator.resolvedURL(store)
        let bytes = try readInput(data)
        if type.storeExists(at: url) {
            // What a run killed after its store was moved into place left (beside a file: a server's
            // staging is swept by the runs that stage).
            if type.urlSchemes.isEmpty { type.sweepAndSay(beside: url) }
            let opened = try StoreLocator.open(store, type: type, selection: modelSelection, readOnly: false, author: authorOption.author)
            do {
                // One save, all or nothing: a signal before it stops the import with nothing imported;
                // one during it lets it finish.
                let result = try stoppingOnSignals({}) { stop in
                    var options = JSONInterchange.ImportOptions(upsert: upsert, linksExisting: linkExisting)
                    options.isCancelled = { stop.isRequested }
                    do {
                        let result = try JSONInterchange.importDocument(bytes, into: opened, file: data, options: options)
                        if stop.isRequested { printError("objectstore: \(store): the signal came as the objects were saved; the import is complete\n") }
                        return result
                    } catch is CancellationError {
                        throw CLIError("\(store): the import was stopped by a signal; nothing was imported")
                    }
                }
                try opened.close()
                // `Entity N` per entity; with --upsert, how many of them were new and how many updated.
                let counts = result.objects
                for name in counts.keys.sorted() {
                    output("\(name) \(counts[name]!)" + (upsert ? " (\(result.inserted[name] ?? 0) new, \(result.updated[name] ?? 0) updated)" : ""))
                }
            } catch var error as StoreError where error.code == .uniquenessViolated && !upsert {
                try? opened.close()
                error.message += " (nothing was imported; --upsert updates an existing object the document's equals by a constraint)"
                throw error
            } catch {
                try? opened.close()
                throw error
            }
            return
        }
        // A new store is filled under a staged name and moved into place only when complete:
        // a killed import leaves no store, and the next run starts from nothing.
        guard let model = try modelSelection.modelForNewStore() else { throw CLIError.missing(store, "store", " (give --model to create it)") }
        try type.checkNewStoreLocation(url)
        type.sweepAndSay(beside: url)
        // A signal stops the import at its next write, up to the install; the staged store is then removed.
        try stoppingOnSignals({}) { stop in
            let staging = try type.stage(beside: url, verb: "importing")
            do {
                let counts = try fill(staging.url, type: type, model: model, bytes, stop: stop)
                if stop.isRequested { throw CancellationError() }
                try type.install(staging.url, at: url, replacing: nil)
                staging.finish()
                for name in counts.keys.sorted() { output("\(name) \(counts[name]!)") }
                if stop.isRequested { printError("objectstore: \(store): the signal came as it was put in place; it is complete\n") }
            } catch is CancellationError {
                staging.discard()
                throw CLIError("\(store): the import was stopped by a signal; nothing was imported, and what was staged is removed")
            } catch {
                staging.discard()
                throw staging.failure(error, writing: store)
            }
        }
    }
}

extension ImportCommand {
    /// Creates the store at `url` and imports the document into it; returns the counts. The store
    /// is staged, so it is filled as a conversion fills its destination (``JSONInterchange/ImportOptions/fillsNewStore``).
    func fill(_ url: URL, type: any StoreType, model: ManagedObjectModel, _ bytes: Data, stop: StopRequest) throws -> [String: Int] {
        let opened = try type.open(at: url, model: model, options: StoreOptions(deferredDurability: true, recordsHistory: false, author: authorOption.author))
        do {
            var options = JSONInterchange.ImportOptions(fillsNewStore: true, author: authorOption.author)
            options.isCancelled = { stop.isRequested }
            let counts = try JSONInterchange.importDocument(bytes, into: opened, file: data, options: options).objects
            try opened.close()
            return counts
        } catch {
            try? opened.close()
            throw error
        }
    }
}

/// `objectstore export <store> [--model M] [--model-version V] [--type T] [--entity E] [--where PREDICATE] [--sort KEY[:desc]]...
/// [--limit N] [--offset N] [--output F] [--decode-transformables]`.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "export", abstract: "Export a store as JSON.")

    @Argument(help: "The store.") var store: String
    @OptionGroup var modelSelection: ModelSelection
    @OptionGroup var typeOption: StoreTypeOption
    @Option(name: .long, help: "Only objects of this entity (and its sub-entities).") var entity: String?
    @Option(name: .customLong("where"), help: "Only objects matching this predicate (NSPredicate syntax).") var predicate: String?
    @Option(name: .long, help: ArgumentHelp("Sort the objects of --entity by this key path, ascending, or descending with :desc (repeatable: the first decides, the next breaks ties).",
                                            valueName: "key[:desc]"))
    var sort: [String] = []
    @Option(name: .long, help: "At most this many objects of --entity (after --offset).") var limit: Int?
    @Option(name: .long, help: "Skip this many objects of --entity first.") var offset: Int = 0
    @Option(name: .long, help: "Write to this file instead of standard output.") var output: String?

    func validate() throws {
        if entity == nil && (!sort.isEmpty || limit != nil || offset != 0) {
            throw ValidationError("--sort, --limit and --offset page the objects of one entity: give --entity")
        }
        if let limit, limit < 0 { throw ValidationError("--limit \(limit): give 0 or more") }
        if offset < 0 { throw ValidationError("--offset \(offset): give 0 or more") }
        for key in sort where key.isEmpty || key.hasPrefix(":") || (key.contains(":") && !key.hasSuffix(":desc") && !key.hasSuffix(":asc")) {
            throw ValidationError("--sort \(key): write KEY, KEY:asc or KEY:desc")
        }
    }

    /// `--sort` as sort descriptors.
    var sortDescriptors: [ObjectSortDescriptor] {
        sort.map { key in
            if key.hasSuffix(":desc") { return ObjectSortDescriptor(String(key.dropLast(5)), ascending: false) }
            return ObjectSortDescriptor(key.hasSuffix(":asc") ? String(key.dropLast(4)) : key)
        }
    }
    @Flag(name: .long, help: "Show transformable values that are keyed archives (NSKeyedArchiver) as the JSON they hold, not as base64 (for reading: import takes base64).")
    var decodeTransformables = false

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        let predicate = try parsePredicate(self.predicate)
        let opened = try StoreLocator.snapshot(store, type: type, selection: modelSelection)
        defer { try? opened.close() }
        let options = JSONInterchange.ExportOptions(entity: entity, predicate: predicate, decodeTransformables: decodeTransformables,
                                                    sortDescriptors: sortDescriptors, limit: limit, offset: offset)
        guard let output else {
            // Writes that fail (a closed pipe, a full disk) are errors, not crashes.
            try JSONInterchange.export(opened, options: options) { try FileHandle.standardOutput.write(contentsOf: Data($0.utf8)) }
            return
        }
        let target = FileOperations.resolved(URL(filePath: output))   // through a link, to the file it names
        let storeURL = FileOperations.resolved(URL(filePath: store))
        if type.fileURLs(for: storeURL).contains(where: { $0.path == target.path })
            || FileOperations.identity(target).map({ $0 == FileOperations.identity(storeURL) }) == true {
            throw CLIError("\(output): that is the store being exported; write the export somewhere else")
        }
        if FileManager.default.fileExists(atPath: target.path), (try? FileOperations.checkRegularFile(target)) == nil,
           let handle = FileHandle(forWritingAtPath: target.path) {
            // A FIFO or a device is written in place, never replaced by a file.
            defer { try? handle.close() }
            do {
                try JSONInterchange.export(opened, options: options) { try handle.write(contentsOf: Data($0.utf8)) }
            } catch let error as StoreError {
                throw error
            } catch {
                throw CLIError("\(output): cannot be written: \((error as NSError).localizedDescription)")
            }
            return
        }
        // A file is written beside its target and renamed over it when complete, with the mode it had.
        let temporary = target.deletingLastPathComponent().appending(path: ".\(target.lastPathComponent).partial-\(UUID().uuidString)")
        // A signal stops the export at its next write, and the partial file goes.
        try stoppingOnSignals({}) { stop in
            guard FileManager.default.createFile(atPath: temporary.path, contents: nil),
                  let handle = FileHandle(forWritingAtPath: temporary.path) else { throw CLIError("\(output): cannot be written") }
            do {
                try JSONInterchange.export(opened, options: options) { text in
                    if stop.isRequested { throw CancellationError() }
                    try handle.write(contentsOf: Data(text.utf8))
                }
                try handle.synchronize()
                try handle.close()
                if stop.isRequested { throw CancellationError() }
                if let kept = FileOperations.attributes(target) { try FileOperations.apply(kept, to: temporary) }
                try FileOperations.rename(temporary, over: target)
            } catch {
                try? handle.close()
                try? FileManager.default.removeItem(at: temporary)
                if let error = error as? StoreError { throw error }
                if error is CancellationError { throw CLIError("\(output): the export was stopped by a signal; nothing was written") }
                throw CLIError("\(output): cannot be written: \((error as NSError).localizedDescription)")
            }
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
        // What interrupted runs left beside the store goes with it, also when no store got in place.
        type.sweepAndSay(beside: try StoreLocator.resolvedURL(store))
        try StoreLocator.requireExisting(store, type)
        let url = try StoreLocator.url(store)
        // A file store's content must say it is one: --type never makes any file a store to remove.
        if url.isFileURL, !type.fileExtensions.isEmpty {
            let header = FileHandle(forReadingAtPath: url.path).flatMap { handle in
                defer { try? handle.close() }
                return try? handle.read(upToCount: 4_096)
            } ?? Data()
            guard type.recognizes(header: header) else {
                throw CLIError("\(store): not destroyed: its content is not that of a \(type.name) store, and destroy removes only stores")
            }
        }
        try type.destroy(at: url)
        output("destroyed \(shown(store))")
    }
}

/// `objectstore checkpoint <store> [--type T]`.
struct CheckpointCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "checkpoint", abstract: "Fold a store's write-ahead log (SQLite's WAL) into its main file.")

    @Argument(help: "The store.") var store: String
    @OptionGroup var typeOption: StoreTypeOption

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        // What interrupted runs left beside the store goes with it, also when no store got in place.
        type.sweepAndSay(beside: try StoreLocator.resolvedURL(store))
        try StoreLocator.requireExisting(store, type)
        let url = try StoreLocator.url(store)
        guard type.keepsWriteAheadLog else {
            output("\(shown(store)): nothing to checkpoint (a \(type.name) store keeps no write-ahead log)")
            return
        }
        try type.checkpoint(at: url)
        output("checkpointed \(shown(store))")
    }
}
