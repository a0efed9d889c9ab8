import ArgumentParser
import Foundation
import ObjectModel

/// `objectstore model …`: look at models.
struct ModelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "model",
        abstract: "Show a model and its version hashes; extract the model a store carries.",
        subcommands: [ModelShowCommand.self, ModelHashesCommand.self, ModelExtractCommand.self]
    )
}

/// The `<model> [--model-version NAME]` arguments every model command takes.
struct ModelOptions: ParsableArguments {
    @Argument(help: "A .xcdatamodeld bundle, a .xcdatamodel folder, a compiled .momd folder or .mom file, or a JSON model file.")
    var model: String

    @Option(name: .customLong("model-version"), help: "The model version to use (default: the bundle's current version).")
    var version: String?

    /// The old spelling of `--model-version`, caught so that it is not read as the tool's own `--version`.
    @Option(name: .customLong("version"), help: .hidden) var oldVersionOption: String?

    func validate() throws {
        if oldVersionOption != nil { throw ValidationError(ModelSelection.renamed) }
    }

    func load() throws -> ManagedObjectModel {
        try ModelLoader.loadModel(at: URL(filePath: model), version: version)
    }

    func loadVersions() throws -> ModelVersions {
        try ModelLoader.load(at: URL(filePath: model))
    }
}

/// `objectstore model hashes <model>`: one line per entity, `<Entity> <hex>`.
struct ModelHashesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hashes",
        abstract: "Print each entity's version hash, in ascending order of entity name."
    )

    @OptionGroup var options: ModelOptions

    func run() throws {
        output(Self.lines(try options.load()))
    }

    /// `<Entity> <hex>` per entity, in ascending order of entity name.
    static func lines(_ model: ManagedObjectModel) -> String {
        let hashes = model.versionHashes
        return hashes.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { "\($0) \(hashes[$0]!.hexString)" }.joined(separator: "\n")
    }
}

/// `objectstore model show <model> [--json]`.
struct ModelShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show entities, attributes and relationships, and the model's version identifiers."
    )

    @OptionGroup var options: ModelOptions

    @Flag(name: .long, help: "Print a JSON document instead of text.")
    var json = false

    func run() throws {
        let versions = try options.loadVersions()
        let name = options.version ?? versions.currentName
        let model: ManagedObjectModel
        do { model = try versions.model(named: name) } catch let error as ModelError { throw error.located(in: options.model) }
        if json {
            output(try ModelDescription.json(model, version: name, versions: versions.names))
        } else {
            output(ModelDescription.text(model, version: name, versions: versions.names))
        }
    }
}
