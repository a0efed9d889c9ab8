import ArgumentParser
import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import Synchronization

/// `objectstore diff <model-a> <model-b> [--model-version-a V] [--model-version-b V] [--json | --dot | --svg]`.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Every change between two models, grouped by entity, and whether a lightweight migration can be inferred.")

    @Argument(help: "The source model.") var modelA: String
    @Argument(help: "The destination model.") var modelB: String
    @Option(name: .customLong("model-version-a"), help: "The version of model A, for a bundle.") var versionA: String?
    @Option(name: .customLong("model-version-b"), help: "The version of model B, for a bundle.") var versionB: String?
    @Option(name: .customLong("version-a"), help: .hidden) var oldVersionA: String?
    @Option(name: .customLong("version-b"), help: .hidden) var oldVersionB: String?

    func validate() throws {
        if oldVersionA != nil || oldVersionB != nil { throw ValidationError("--version-a and --version-b are now --model-version-a and --model-version-b") }
        if json && picture.wanted { throw ValidationError("--json, --dot and --svg each print the diff one way: give one") }
    }
    @Flag(name: .long, help: "Count lossless widenings (Integer 16 → 64, Float → Double, number → String) as inferable.")
    var allowWidening = false
    @Flag(name: .long, help: "Print a JSON document instead of text.") var json = false
    @OptionGroup(title: "Pictures (added parts green, removed red, renamed blue, changed orange)") var picture: PictureOptions

    func run() throws {
        let a = try ModelLoader.loadModel(at: URL(filePath: modelA), version: versionA)
        let b = try ModelLoader.loadModel(at: URL(filePath: modelB), version: versionB)
        if picture.wanted {
            return try picture.print(ModelGraph.dot(from: a, to: b, name: "\(versionA ?? modelA) -> \(versionB ?? modelB)"))
        }
        let diff = ModelDiff(from: a, to: b, options: allowWidening ? .allowLosslessWidening : [])
        if json {
            let document: [String: Any] = [
                "entities": diff.entities.map { ["entity": $0.entity, "status": $0.status, "changes": $0.changes] },
                "lightweight": diff.isLightweight,
                "blockingChanges": diff.blockingChanges,
                "drops": diff.drops.map { $0.jsonObject(counted: false) },
            ]
            let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            output(String(decoding: data, as: UTF8.self))
            return
        }
        var lines: [String] = []
        for entity in diff.entities {
            lines.append("\(entity.entity) (\(entity.status))")
            lines += diff.markedChanges(of: entity).map { "  " + $0 }
        }
        if diff.entities.isEmpty { lines.append("no changes") }
        lines.append("lightweight: \(diff.isLightweight ? "yes" : "no")")
        lines += diff.blockingChanges
        output(lines.joined(separator: "\n"))
    }
}

/// `objectstore convert <source> <destination> [--type T] [--model M] [--model-version V] [--force]`.
struct ConvertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Copy a store into a new store of any type, streaming, without writing to the source.")

    @Argument(help: "The source store (its type is read from its content).") var source: String
    @Argument(help: "The destination store.") var destination: String
    @Option(name: .long, help: ArgumentHelp("The destination's type: \(StoreLocator.typeNames) (default: from its extension).", valueName: "type"))
    var type: String?
    @Option(name: .long, help: "The source's type, when its content does not tell.") var sourceType: String?
    @OptionGroup var modelSelection: ModelSelection
    @Flag(name: .long, help: "Replace an existing destination.") var force = false
    @OptionGroup var authorOption: AuthorOption
    @Flag(name: .long, help: "Move every object through the batch pipeline, even where the destination could copy the store itself (SQLite to SQLite).")
    var noBulkCopy = false

    func run() throws {
        let fromType = try StoreLocator.type(for: source, explicit: sourceType)
        try StoreLocator.requireExisting(source, fromType)
        let toType = try StoreLocator.destinationType(for: destination, explicit: type)
        let onServer = StoreLocator.isServerURL(destination)
        let sourceURL = try StoreLocator.resolvedURL(source)
        let destinationURL = try StoreLocator.resolvedURL(destination)
        // One store under two spellings (a link, a trailing slash, a hard link; another spelling of a
        // server URL: the same cluster, database and schema): never convert it onto itself.
        let sourceFiles = Set(fromType.fileURLs(for: sourceURL).map(\.path))
        if sourceURL == destinationURL || sourceFiles.contains(destinationURL.path)
            || toType.fileURLs(for: destinationURL).contains(where: { sourceFiles.contains($0.path) })
            || fromType.identity(at: sourceURL).map({ $0 == toType.identity(at: destinationURL) }) == true {
            throw CLIError("\(destination): the destination is the source")
        }
        var existing: (any StoreType)?
        if toType.storeExists(at: destinationURL) || (!onServer && FileManager.default.fileExists(atPath: destinationURL.path)) {
            guard force else { throw CLIError("\(destination): already exists (use --force to replace it)") }
            if onServer {
                existing = toType
            } else {
                // --force replaces a store, nothing else: a folder, a device, a file of no store type, or
                // one that only begins like a store (another program's SQLite database, a file that
                // starts with a store's magic) is refused before anything is converted. A store is what
                // its type reads the metadata of.
                do {
                    let type = try StoreLocator.type(for: destinationURL.path, explicit: nil)
                    _ = try type.readMetadata(at: destinationURL)
                    existing = type
                } catch {
                    let why = (error as? StoreError)?.message ?? "its content is no store type's"
                    throw CLIError("\(destination): not replaced: --force replaces only a store this tool can read, and this is not one (\(why)); "
                                   + "remove it yourself if it is to go")
                }
            }
        }
        let (model, _) = try StoreLocator.model(for: source, type: fromType, selection: modelSelection)
        try toType.checkNewStoreLocation(destinationURL)
        // One snapshot of the source for the conversion and the counts checked after it, opened
        // before anything is made beside the destination: a source that cannot be read leaves nothing.
        let from = try StoreLocator.snapshot(source, type: fromType, model: model)
        defer { try? from.close() }
        // Into a staged store beside the destination (a file beside it, or a schema of its own in
        // the same database), then moved over it: a failure never costs the old destination.
        toType.sweepAndSay(beside: destinationURL)
        let bar = ProgressDisplay()
        let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model),
                                       usesBulkCopy: !noBulkCopy) { bar.show($0) }
        // A signal stops the work up to the install; the staged store is then removed.
        try stoppingOnSignals(manager.cancel) { stop in
            let staging = try toType.stage(beside: destinationURL, verb: "converting")
            let stagedURL = staging.url
            do {
                // The destination's counts as it gives them (read in phase 3, or reported by SQLite
                // when it copied the tables itself), checked against the source's before the
                // destination is put in place.
                let written = try manager.migrateStore(from: from, to: stagedURL, type: toType, destinationOptions: StoreOptions(author: authorOption.author))
                bar.finish()
                var lines: [String] = []
                var mismatch: [String] = []
                for entity in model.entityDescriptions where !entity.isAbstract {
                    let (a, b) = (try from.objectCount(exactly: entity.name), written[entity.name] ?? 0)
                    lines.append("\(entity.name) \(b)")
                    if a != b { mismatch.append("\(entity.name): \(a) in the source, \(b) in the destination") }
                }
                guard mismatch.isEmpty else {
                    throw CLIError("\(destination): object counts differ after conversion: " + mismatch.joined(separator: "; "))
                }
                if stop.isRequested { throw MigrationError(.cancelled, "the conversion was stopped by a signal; what was staged is removed") }
                try toType.install(stagedURL, at: destinationURL, replacing: force ? existing : nil)
                staging.finish()
                output(lines.joined(separator: "\n"))
                if stop.isRequested { printError("objectstore: \(destination): the signal came as it was put in place; it is complete\n") }
            } catch {
                bar.finish()
                staging.discard()
                throw staging.failure(error, writing: destination)
            }
        }
    }
}

/// `objectstore validate <store> [--model M] [--model-version V] [--deep]`.
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check every validation rule on every object, and both sides of every relationship; one line per failure, exit 1 if there is any.")

    @Argument(help: "The store.") var store: String
    @OptionGroup var typeOption: StoreTypeOption
    @OptionGroup var modelSelection: ModelSelection
    @Flag(name: .long, help: "Also check every page of the file: SQLite's integrity_check, LMDB's page walk.") var deep = false

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        let opened = try StoreLocator.snapshot(store, type: type, selection: modelSelection, checkingRows: false)
        defer { try? opened.close() }
        var failures = 0
        if let checking = opened as? any IntegrityChecking {
            let problems = try checking.integrityProblems(deep: deep)
            for problem in problems { output(problem) }
            failures += problems.count
        }
        let graph = InverseChecker(store: opened)
        for entity in opened.model.entityDescriptions where !entity.isAbstract {
            for batch in opened.batches(of: entity.name) {
                for record in try batch.get() {
                    let problems = try ObjectValidator.failures(of: record, in: opened).map(\.description)
                        + graph.disagreements(of: record).map(\.description)
                    for problem in problems { output(problem) }
                    failures += problems.count
                }
            }
        }
        if failures > 0 { throw ExitCode(1) }
    }
}

/// A progress bar on stderr when it is a terminal, a plain line per entity mapping and phase otherwise.
final class ProgressDisplay: Sendable {
    private let terminal = isatty(STDERR_FILENO) == 1
    /// The mapping and phase last written as a line. The migration calls `show` from the thread
    /// that runs it, one call at a time; the lock makes that explicit rather than assumed.
    private let last = Mutex<(String, MigrationError.Phase)?>(nil)

    func show(_ progress: MigrationProgress) {
        last.withLock { last in
            let key = (progress.mapping, progress.phase)
            if terminal {
                let width = 30
                let filled = progress.total == 0 ? width : min(width, progress.completed * width / max(1, progress.total))
                let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
                printError("\r\(progress.mapping) \(progress.phase.rawValue) [\(bar)] \(progress.completed)/\(progress.total)\u{1B}[K")
            } else if progress.completed == progress.total, last.map({ $0.0 != key.0 || $0.1 != key.1 }) ?? true {
                printError("\(progress.mapping): \(progress.phase.rawValue) \(progress.completed)/\(progress.total)\n")
                last = key
            }
        }
    }

    func finish() {
        if terminal { last.withLock { _ in printError("\r\u{1B}[K") } }
    }
}
