import ArgumentParser
import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import Synchronization

/// `objectstore migrate <store> [--model <bundle>] [--to V] [--mapping FILE]... [--next FROM=TO]... [--type T] [--dry-run] [--json]
/// [--on-incompatible fail|move-aside|recreate] [--allow-widening] [--allow-data-loss]`.
struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Bring a store to the current version of its model (or another), step by step.",
        discussion: """
            Finds the store's version in the bundle by its entity hashes, plans the steps to the target \
            (one line each: "<from> -> <to>: lightweight" or "<from> -> <to>: mapping <file>", with what the step drops: \
            "; drops Post.date (120 values)"), and runs them. A step that drops data the store holds (an attribute, \
            relationship or entity no mapping reads, objects a mapping's filter leaves out) is refused unless --allow-data-loss. \
            Each step writes a new store beside the original; the original is replaced only when every step \
            is done, so a failure, an interrupt or a kill leaves it at its version with its data. Steps the store \
            can take in place ("<from> -> <to>: in-place", when every step can) change it in one transaction instead. \
            Migrate a store no process has open: a store written meanwhile is left as written and the migration fails.
            """
    )

    @Argument(help: "The store.") var store: String
    @Option(name: .long, help: ArgumentHelp(
        "The model bundle with the store's version and the target's: an .xcdatamodeld (each version's contents an Xcode model or a JSON model), a .momd, or one JSON model file (its only version).",
        discussion: "Default: the store's own model (embedded, or a Core Data store's Z_MODELCACHE), its only version."))
    var model: String?
    @Option(name: .customLong("to"), help: "The target version (default: the bundle's current version).") var target: String?
    @Option(name: .customLong("mapping"), help: ArgumentHelp(
        "A mapping for one step: a JSON mapping file (it names its versions or records their hashes) or an Xcode .xcmappingmodel (or its xcmapping.xml) (repeatable).",
        discussion: "An Xcode mapping model fits the step between the model versions it records, else the step whose models have the entities and properties it names; it fits exactly one step or is refused. A mapping that names a custom policy is refused here: only a program that registers the policy can run it."))
    var mappings: [String] = []
    @Option(name: .customLong("next"), help: "FROM=TO: after version FROM comes TO, to skip a broken version (repeatable).")
    var next: [String] = []
    @OptionGroup var typeOption: StoreTypeOption
    @OptionGroup var authorOption: AuthorOption
    @Flag(name: .long, help: "Print the plan and the store's object counts; change nothing.") var dryRun = false
    @Flag(name: .long, help: "Print one JSON document instead of text.") var json = false
    @Option(name: .customLong("on-incompatible"), help: ArgumentHelp(
        "When the store matches no version of the bundle: fail (the default; nothing touched), move-aside (its files into Incompatible/ beside it, a fresh empty store created) or recreate (destroyed, created empty).",
        discussion: "Only a readable store of the type its content says, sharing entities with the bundle and matching none of its versions, is moved aside or recreated, under the store's write lock; a store named by a URL (on a server) never is. A store at a version the bundle has, a damaged store, a wrong --type or another model's store is refused with the reason and left as it is.",
        valueName: "policy"))
    var onIncompatible: PersistentContainer.IncompatibleStorePolicy = .fail
    @Flag(name: .long, help: "Count lossless widenings (Integer 16 → 64, Float → Double, number → String) as inferable.")
    var allowWidening = false
    @Flag(name: .long, help: "Run steps that drop data the store holds (each drop is named in the plan, with its count).")
    var allowDataLoss = false

    func validate() throws {
        var from: Set<Substring> = []
        for pair in next {
            let parts = pair.split(separator: "=")
            guard parts.count == 2 else { throw ValidationError("--next takes FROM=TO, not \(pair)") }
            guard parts[0] != parts[1] else { throw ValidationError("--next \(pair): a version cannot come after itself") }
            guard from.insert(parts[0]).inserted else { throw ValidationError("--next names what comes after \(parts[0]) twice") }
        }
        if let twice = Dictionary(grouping: mappings, by: { $0 }).first(where: { $0.value.count > 1 })?.key {
            throw ValidationError("--mapping \(twice) is given twice")
        }
    }

    func run() throws {
        let type = try StoreLocator.type(for: store, explicit: typeOption.type)
        try StoreLocator.requireExisting(store, type)
        var versions = try loadVersions(type: type)
        let model = self.model ?? store
        for pair in next {
            let parts = pair.split(separator: "=").map(String.init)
            for name in parts where !versions.names.contains(name) {
                throw CLIError("--next \(pair): no version named \(name) in \(model) (versions: \(versions.names.joined(separator: ", ")))")
            }
            versions.nextOverrides[parts[0]] = parts[1]
        }
        let steps = try mappings.map { file in
            // An Xcode mapping model (a .xcmappingmodel folder or its xcmapping.xml), else a JSON mapping file.
            if XcodeMappingModel.isMappingModel(at: URL(filePath: file)) {
                return StepMapping(name: file, mapping: try XcodeMappingModel.load(at: URL(filePath: file)))
            }
            return StepMapping(name: file, mapping: try MappingFormat.decode(try readInput(file), file: file))
        }
        let migrator = StoreMigrator(versions: versions, mappings: steps, inference: allowWidening ? .allowLosslessWidening : [],
                                     author: authorOption.author, allowsDataLoss: allowDataLoss)
        let url = try StoreLocator.url(store)
        let plan: MigrationPlan
        // The store as it is judged: --on-incompatible recreate destroys nothing written after.
        let assessed = type.filesState(at: url)
        do {
            // Objects are counted for the reports that show them (counting reads every row on SQLite).
            // Under the migration lock, so that the store does not change under the count (another
            // run's migration waits, or this one is refused busy); the run plans again under it.
            plan = try type.withMigrationLock(at: url) {
                try migrator.plan(forStoreAt: url, type: type, to: target, countingObjects: dryRun || json)
            }
        } catch let error as MigrationError where Self.cannotReachTarget(error) && onIncompatible != .fail {
            // A fresh, empty store at the target takes the place of one that cannot get there: only
            // a readable store of its type and of no version of the bundle (IncompatibleStore).
            let assessment = try IncompatibleStore.assess(at: url, type: type, versions: versions, failure: error, registry: StoreLocator.registry)
            if case .damaged(let why) = assessment {
                throw CLIError("\(store): left as it is: it is damaged (\(why)); migrate never moves aside or recreates a damaged store: "
                               + "check it with objectstore validate --deep, and move it away yourself if you want a new one")
            }
            guard versions.versions.count > 1 else {
                throw CLIError("\(store): left as it is: \(model) has one version, so a store of another version of it cannot be told from "
                               + "another model's store; give the bundle (.xcdatamodeld or .momd) with every version (\(error.message))")
            }
            let version = target ?? versions.currentName
            let fresh = try versions.model(named: version)
            var report: [String: Any] = ["store": shown(store), "to": version, "reason": error.message]
            if dryRun {
                // What the run would do, nothing done.
                let moving = onIncompatible == .moveAside
                report["status"] = moving ? "would-move-aside" : "would-recreate"
                if json {
                    print(Self.jsonText(report))
                } else {
                    output(moving ? "would move \(shown(store)) aside into Incompatible/ beside it and create an empty store at \(version)"
                                  : "would destroy \(shown(store)) and create an empty store at \(version)")
                }
                printError("objectstore: \(shown(store)): \(error.message)\n")
                return
            }
            if onIncompatible == .moveAside {
                let aside = try type.moveAside(at: url, fresh: fresh)
                report["status"] = "moved-aside"
                report["movedTo"] = aside.path
                if !json { output("moved aside: \(aside.path)") }
            } else {
                try type.recreate(at: url, model: fresh, unchangedSince: assessed)
                report["status"] = "recreated"
                if !json { output("recreated \(shown(store)) at \(version)") }
            }
            if json { print(Self.jsonText(report)) }
            printError("objectstore: \(shown(store)): \(error.message)\n")
            return
        }
        if plan.steps.isEmpty {
            // Nothing to migrate, but what an interrupted run left still goes (a run killed after it
            // put its store in place leaves its lock file), as a migration sweeps it: beside the
            // store's real path, under the migration lock (another run migrating sweeps for itself).
            if !dryRun {
                let resolved = FileOperations.resolved(url)
                try? type.withMigrationLock(at: resolved) { type.sweepAndSay(beside: resolved) }
            }
            json ? print(document(plan, status: "current")) : output("already at \(plan.storeVersion)")
            return
        }
        if let unused = plan.unusedMappings.first {
            throw CLIError("\(unused): matches no step of the plan (\(plan.steps.map(\.description).joined(separator: "; ")))")
        }
        if !json { output(plan.steps.map(\.description).joined(separator: "\n")) }
        if dryRun {
            if !allowDataLoss, plan.steps.contains(where: { $0.drops.contains(where: \.losesData) }) {
                printError("objectstore: \(shown(store)): the plan drops data the store holds: migrate refuses it without --allow-data-loss\n")
            }
            json ? print(document(plan, status: "planned"))
                 : output(plan.objectCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "\n"))
            return
        }
        let bar = isatty(STDERR_FILENO) == 1 ? ProgressDisplay() : nil
        // Source objects each step read, by step: the largest count each of its mappings reached in phase 1.
        let objects = Mutex<[Int: [String: Int]]>([:])
        let result: MigrationResult
        do {
            result = try stoppingOnSignals(migrator.cancel) { _ in
                try migrator.migrateStore(at: url, type: type, to: target) { step in
                    if step.progress.phase == .createObjects {
                        objects.withLock { $0[step.step, default: [:]][step.progress.mapping] = max($0[step.step]?[step.progress.mapping] ?? 0, step.progress.completed) }
                    }
                    bar?.show(step.progress)
                }
            }
        } catch var error as MigrationError where error.code == .dataLoss {
            bar?.finish()
            error.message += " with --allow-data-loss"
            throw error
        }
        bar?.finish()
        for leftover in result.removedLeftovers { printError("objectstore: removed \(leftover), left by an interrupted run\n") }
        let perStep = objects.withLock { $0 }.mapValues { $0.values.reduce(0, +) }
        // What ran is the plan made under the migration lock: another run may have migrated the
        // store between the plan shown above and this one.
        var ran = result.plan
        // The run counts objects only where a copy reads them; the counts shown are the preview's.
        if ran.objectCounts.isEmpty, ran.storeVersion == plan.storeVersion { ran.objectCounts = plan.objectCounts }
        if ran.steps.isEmpty {
            json ? print(document(ran, status: "current")) : output("already at \(ran.storeVersion): another process migrated it meanwhile")
        } else if json {
            print(document(ran, status: "migrated", objects: perStep, seconds: result.seconds))
        } else {
            output("migrated \(shown(store)) from \(ran.storeVersion) to \(ran.targetVersion)")
        }
    }

    /// The name the store's own model goes by when no `--model` is given.
    static let storeModelName = "store model"

    /// The versions of `--model`, else the store's own model as the only version.
    private func loadVersions(type: any StoreType) throws -> ModelVersions {
        if let model { return try ModelLoader.load(at: URL(filePath: model)) }
        let metadata = try type.readMetadata(at: try StoreLocator.url(store))
        guard let own = try ModelSelection.storeModel(at: store, type: type, metadata: metadata) else {
            throw CLIError("\(store): the store has no model of its own (give --model with its .xcdatamodeld, .momd or JSON model)")
        }
        return try ModelVersions(versions: [.init(name: Self.storeModelName, model: own)])
    }

    /// Whether `error` says the store cannot reach the target at all: it matches no version, a step
    /// has no mapping, or it is damaged (not a mistake in a mapping file, nor a moment's trouble);
    /// whether something may be done about it is ``IncompatibleStore``'s to say.
    static func cannotReachTarget(_ error: MigrationError) -> Bool {
        [.unknownVersion, .noMapping].contains(error.code)
            || (error.code == .store && (error.cause as? StoreError).map { [.corrupt, .unsupportedFormat].contains($0.code) } == true)
    }

    static func jsonText(_ document: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The plan (and, after a run, objects and seconds per step) as one JSON document.
    private func document(_ plan: MigrationPlan, status: String, objects: [Int: Int] = [:], seconds: [Double] = []) -> String {
        let steps: [[String: Any]] = plan.steps.enumerated().map { index, step in
            var entry: [String: Any] = ["from": step.source, "to": step.destination]
            switch step.kind {
            case .inPlace: entry["kind"] = "in-place"
            case .lightweight: entry["kind"] = "lightweight"
            case .custom(let file): entry["kind"] = "mapping"; entry["mapping"] = file
            }
            entry["drops"] = step.drops.map { $0.jsonObject(counted: true) }
            if index < seconds.count {
                entry["seconds"] = (seconds[index] * 1000).rounded() / 1000
                // An in-place step carries every object without reading one.
                entry["objects"] = step.kind == .inPlace ? plan.objectCounts.values.reduce(0, +) : objects[index] ?? 0
            }
            return entry
        }
        let document: [String: Any] = [
            "store": shown(store), "status": status, "from": plan.storeVersion, "to": plan.targetVersion, "steps": steps, "objects": plan.objectCounts,
        ]
        return Self.jsonText(document)
    }
}

extension PersistentContainer.IncompatibleStorePolicy: ExpressibleByArgument {}

extension DataDrop {
    /// `{kind, entity, property?, count?}` as `migrate --json` and `diff --json` print a drop
    /// (`count` only where the store was read: a number, or null when it is counted as the step runs).
    func jsonObject(counted: Bool) -> [String: Any] {
        var item: [String: Any] = ["kind": kind.rawValue, "entity": entity]
        if let property { item["property"] = property }
        if counted { item["count"] = count ?? NSNull() }
        return item
    }
}
