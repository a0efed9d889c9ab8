import ArgumentParser
import Foundation
import ObjectModel
import ObjectStore

/// `objectstore inspect <store> [--model M] [--model-version V] [--json]`.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a store's type, files, UUID, model version, object counts and whether its embedded model matches.")

    @Argument(help: "The store.") var store: String
    @OptionGroup var typeOption: StoreTypeOption
    @OptionGroup var modelSelection: ModelSelection
    @Flag(name: .long, help: "Print a JSON document instead of text.") var json = false

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        try StoreLocator.requireExisting(store, type)
        let url = try StoreLocator.url(store)
        let metadata = try type.readMetadata(at: url)
        func size(_ path: String) -> Int? { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue }
        let files: [(String, Int)] = type.fileURLs(for: url).compactMap { file in
            // A folder of the set (SQLite's external data): the bytes of the files in it.
            if FileOperations.isFolder(file) {
                let inside = FileManager.default.enumerator(atPath: file.path)?.compactMap { $0 as? String } ?? []
                return (file.path, inside.compactMap { FileOperations.isFolder(file.appending(path: $0)) ? nil : size(file.appending(path: $0).path) }.reduce(0, +))
            }
            guard let bytes = size(file.path) else { return nil }
            return (file.path, bytes)
        }
        // A server store has no files: where it is instead, without a password.
        let server = StoreLocator.isServerURL(store) ? shown(store) : nil
        let embedded = try? metadata.embeddedModel()
        let matches = embedded.map { $0.versionHashes == metadata.versionHashes } ?? false
        // Counting needs a model: the one given (its version chosen by the store's hashes), else the
        // store's own (embedded, or carried in Z_MODELCACHE); one that cannot be read is not counted with.
        var selected: (model: ManagedObjectModel, version: String?)?
        if modelSelection.model != nil || embedded != nil {
            selected = try modelSelection.modelForStore(at: store, type: type, metadata: metadata)
        } else if let carried = try? ModelSelection.storeModel(at: store, type: type, metadata: metadata) {
            selected = (carried, nil)
        }
        var counts: [(String, Int)] = []
        if let model = selected?.model {
            let opened = try StoreLocator.snapshot(store, type: type, model: model)
            defer { try? opened.close() }
            for entity in model.entityDescriptions where !entity.isAbstract {
                counts.append((entity.name, try opened.count(FetchRequest(entity: entity.name, includesSubentities: false))))
            }
        }
        if json {
            let document: [String: Any] = [
                "type": type.name,
                "files": files.map { ["path": $0.0, "bytes": $0.1] },
                "server": server ?? NSNull(),
                "storeUUID": metadata.storeUUID?.uuidString ?? NSNull(),
                "modelVersion": selected?.version ?? NSNull(),
                "versionIdentifiers": metadata.versionIdentifiers,
                "entities": selected == nil ? NSNull() : Dictionary(uniqueKeysWithValues: counts),
                "embeddedModel": embedded != nil,
                "embeddedModelMatchesHashes": matches,
            ]
            let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            output(String(decoding: data, as: UTF8.self))
            return
        }
        var lines = ["type: \(type.name)", "files:"]
        lines += files.map { "  \($0.0) \($0.1) bytes" }
        if let server { lines.append("server: \(server)") }
        lines.append("store UUID: \(metadata.storeUUID?.uuidString ?? "(none)")")
        if let version = selected?.version { lines.append("model version: \(version)") }
        let identifiers = metadata.versionIdentifiers.map { $0.isEmpty ? "\"\"" : $0 }
        lines.append("model version identifiers: \(identifiers.isEmpty ? "(none)" : identifiers.joined(separator: ", "))")
        lines.append("embedded model: " + (embedded == nil ? "none" : (matches ? "matches the store's hashes" : "does NOT match the store's hashes")))
        if selected == nil {
            lines.append("objects: (no model to count them with: give --model)")
        } else {
            lines.append("objects:")
            lines += counts.map { "  \($0.0) \($0.1)" }
        }
        output(lines.joined(separator: "\n"))
    }
}
