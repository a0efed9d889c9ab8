import ArgumentParser
import Foundation
import ObjectMigration
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

/// `objectstore model show <model> [--json | --dot | --svg]`.
struct ModelShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show entities, attributes and relationships, and the model's version identifiers."
    )

    @OptionGroup var options: ModelOptions

    @Flag(name: .long, help: "Print a JSON document instead of text.")
    var json = false
    @OptionGroup var picture: PictureOptions

    func validate() throws {
        if json && picture.wanted { throw ValidationError("--json, --dot and --svg each print the model one way: give one") }
    }

    func run() throws {
        let versions = try options.loadVersions()
        let name = options.version ?? versions.currentName
        let model: ManagedObjectModel
        do { model = try versions.model(named: name) } catch let error as ModelError { throw error.located(in: options.model) }
        if picture.wanted {
            try picture.print(ModelGraph.dot(model, name: name))
        } else if json {
            output(try ModelDescription.json(model, version: name, versions: versions.names))
        } else {
            output(ModelDescription.text(model, version: name, versions: versions.names))
        }
    }
}

/// `--dot` (Graphviz DOT text) or `--svg` (the picture, drawn by Graphviz's `dot`).
struct PictureOptions: ParsableArguments {
    @Flag(name: .long, help: "Print a Graphviz DOT graph (entities with their attributes, relationships as labelled edges).")
    var dot = false
    @Flag(name: .long, help: "Print the graph as SVG, drawn by Graphviz's dot (apt-get install graphviz).")
    var svg = false

    func validate() throws {
        if dot && svg { throw ValidationError("--dot prints the graph and --svg its picture: give one") }
    }

    var wanted: Bool { dot || svg }

    /// Prints `graph` as DOT, or as the SVG `dot -Tsvg` draws of it.
    func print(_ graph: String) throws {
        guard svg else { return output(graph) }
        guard let program = Self.findDot() else {
            throw CLIError("--svg: Graphviz's dot is not installed (apt-get install graphviz), or --dot prints the graph for it", code: "notFound")
        }
        let process = Process()
        process.executableURL = program
        process.arguments = ["-Tsvg"]
        let input = Pipe(), out = Pipe(), err = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // dot reads all its input before it writes: feed it, then read what it drew.
        try input.fileHandleForWriting.write(contentsOf: Data(graph.utf8))
        try input.fileHandleForWriting.close()
        let drawn = out.fileHandleForReading.readDataToEndOfFile()
        let complaint = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CLIError("--svg: dot failed (exit \(process.terminationStatus)): \(String(decoding: complaint, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        try? FileHandle.standardOutput.write(contentsOf: drawn)
    }

    /// `dot` on the PATH.
    static func findDot() -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { URL(filePath: String($0)).appending(path: "dot") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }
}
