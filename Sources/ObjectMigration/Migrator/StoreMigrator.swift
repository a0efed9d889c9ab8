import Foundation
import ObjectModel
import ObjectStore
import Synchronization

/// Brings a store written with any version of a model to the current version (or another
/// named one), step by step along the versions, safely.
///
/// ```swift
/// let versions = try ModelLoader.load(at: URL(filePath: "App.xcdatamodeld"))
/// let migrator = StoreMigrator(versions: versions, mappings: [StepMapping(name: "v2-to-v3.json", mapping: custom)])
/// let plan = try migrator.plan(forStoreAt: url, type: SQLiteStoreType())   // nothing written
/// for step in plan.steps { print(step) }                                   // "v1 -> v2: lightweight"
/// try migrator.migrateStore(at: url, type: SQLiteStoreType())
/// ```
///
/// The store's version is found by its entity hashes. Each step runs the mapping given for it
/// (``StepMapping``), else the inferred one; a step with neither is refused before anything is
/// written, naming the step and every change that blocks inference. `ModelVersions/nextOverrides`
/// skip a broken version.
///
/// Safety: every step writes a new store beside the original (`.<name>.migrating-<id>`, same
/// folder, so same file system); the previous intermediate store is destroyed when the next is
/// complete; the original's whole file set is replaced only at the end, through
/// `StoreType/replace(at:with:)`, which leaves one whole store at every moment. After a
/// failure, a cancellation or a `kill -9` at any moment, the store is at its original version
/// with its original data or at the target with all of it. Leftovers of an interrupted run are
/// removed by the next run (``MigrationResult/removedLeftovers``). A store written by another
/// process during the migration is not replaced (``MigrationError/Code/storeChanged``): migrate
/// a store no process has open.
public final class StoreMigrator: Sendable {
    /// The model versions.
    public let versions: ModelVersions
    /// The mappings given for steps.
    public let mappings: [StepMapping]
    /// The stages declared for steps (``MigrationStage``): their closures, and lenient inference.
    public let stages: [MigrationStage]
    /// Policies custom mappings name.
    public let policies: PolicyRegistry
    /// Inference options (lossless widening).
    public let inference: MappingInference.Options
    /// Whether a step with no mapping given runs the inferred one (else it is refused).
    public let infersMappings: Bool
    /// Objects per batch in each step.
    public let batchSize: Int
    /// The author a copying step's new store records in its history (`StoreOptions/author`).
    public let author: String?
    /// Whether a step may drop data the store holds (``DataDrop``): an attribute, relationship or
    /// entity no mapping reads, objects a filter leaves out. By default such a step is refused
    /// (``MigrationError/Code/dataLoss``) before anything is written, naming every drop and its count.
    public let allowsDataLoss: Bool
    private let cancelled = Atomic<Bool>(false)
    private let running = Mutex<MigrationManager?>(nil)

    /// Creates a migrator.
    public init(versions: ModelVersions, mappings: [StepMapping] = [], stages: [MigrationStage] = [], policies: PolicyRegistry = .shared,
                inference: MappingInference.Options = [], infersMappings: Bool = true, batchSize: Int = 1_000, author: String? = nil, allowsDataLoss: Bool = false) {
        self.author = author
        self.allowsDataLoss = allowsDataLoss
        self.versions = versions
        self.mappings = mappings
        self.stages = stages
        self.policies = policies
        self.inference = inference
        self.infersMappings = infersMappings
        self.batchSize = batchSize
    }

    /// Stops a running migration between batches; it then throws ``MigrationError/Code/cancelled``
    /// and the store is as it was.
    public func cancel() {
        cancelled.store(true, ordering: .relaxed)
        running.withLock { $0?.cancel() }
    }

    // MARK: Planning

    /// The plan for the store at `url`, without changing any file: its version, the steps to
    /// `target` (default: the current version) with their kinds, and its objects per entity.
    /// - Throws: ``MigrationError`` with ``MigrationError/Code/unknownVersion`` when the store
    ///   matches no version (naming the closest and, for it, the entities that differ),
    ///   ``MigrationError/Code/noMapping`` naming every step that has no mapping and its
    ///   blocking changes, ``MigrationError/Code/store`` when the store cannot be read.
    /// - Parameters:
    ///   - url: the store.
    ///   - type: its type.
    ///   - target: the version to reach (default: the current one).
    ///   - countingObjects: whether to count the store's objects (``MigrationPlan/objectCounts``):
    ///     counting reads every object's row on some backends (SQLite counts by entity number).
    ///     What the steps drop (``DataDrop``) is counted whenever a step drops something.
    public func plan(forStoreAt url: URL, type: any StoreType, to target: String? = nil, countingObjects: Bool = true) throws -> MigrationPlan {
        let metadata: StoreMetadata
        do {
            metadata = try type.readMetadata(at: url)
        } catch {
            throw Self.storeFailure(url, error)
        }
        var plan: MigrationPlan
        do {
            plan = try self.plan(for: metadata, to: target, type: type)
        } catch let error as MigrationError where error.code == .unknownVersion {
            throw unknownVersion(error, at: url, type: type, metadata: metadata)
        }
        try count(&plan, at: url, type: type, objects: countingObjects)
        return plan
    }

    /// `error` (the store matches no version), with the attributes and relationships that differ
    /// between the closest version and the model the store carries, when it carries one.
    private func unknownVersion(_ error: MigrationError, at url: URL, type: any StoreType, metadata: StoreMetadata) -> MigrationError {
        guard !versions.versions.isEmpty, let own = try? type.ownModel(at: url, metadata: metadata) else { return error }
        let closest = versions.closestVersion(to: metadata).version
        let differences = ModelDiff(from: closest.model, to: own).entities.map { entity in
            "\(entity.entity) (\(entity.status)): " + entity.changes.joined(separator: ", ")
        }
        guard !differences.isEmpty else { return error }
        return MigrationError(.unknownVersion, error.message + "; the model the store carries differs from \(closest.name) in "
                              + differences.joined(separator: "; "), cause: error.cause)
    }

    /// Counts, in the store at `url` (at the plan's first version), its objects per concrete entity
    /// (exactly that entity) when `objects`, and what each step drops (``DataDrop``): in a later
    /// step, the values of the property the drop's came from, followed back through the copies of
    /// the steps before (none when an earlier step made it with no value of the store behind it);
    /// left uncounted when an earlier step computed it.
    private func count(_ plan: inout MigrationPlan, at url: URL, type: any StoreType, objects: Bool, drops: Bool = true) throws {
        guard objects || (drops && plan.steps.contains(where: { !$0.drops.isEmpty })) else { return }
        let model = try versions.model(named: plan.storeVersion)
        let store: any PersistentStore
        do {
            store = try type.open(at: url, model: model, options: StoreOptions(readOnly: true, createIfMissing: false))
        } catch {
            throw Self.storeFailure(url, error)
        }
        defer { try? store.close() }
        do {
            if objects {
                for entity in model.entityDescriptions where !entity.isAbstract {
                    plan.objectCounts[entity.name] = try store.objectCount(exactly: entity.name)
                }
            }
            let steps = drops ? plan.steps : []
            for index in steps.indices {
                for (position, drop) in steps[index].drops.enumerated() {
                    guard drop.kind != .filtered || index == 0 else { continue }
                    var origin = drop.origin(through: steps[..<index])
                    // A relationship a step set no expression for holds what its inverse brought: followed
                    // back from that side (nothing, without an inverse or when a step made that side too).
                    if case .unmapped = origin, let property = drop.property {
                        let relationship = try versions.model(named: steps[index].source).entity(named: drop.entity)?.relationshipsByName[property]
                        if let relationship, let inverse = relationship.inverse {
                            origin = DataDrop(kind: .relationship, entity: relationship.destination, property: inverse).origin(through: steps[..<index])
                            if case .unmapped = origin { origin = .madeByTheMigration }
                        } else {
                            origin = .madeByTheMigration
                        }
                    }
                    switch origin {
                    case .store(let origin): plan.steps[index].drops[position].count = try origin.counted(in: store, mapping: steps[0].mapping).count
                    case .madeByTheMigration: plan.steps[index].drops[position].count = 0
                    case .unknown, .unmapped: continue
                    }
                }
            }
        } catch {
            throw Self.storeFailure(url, error)
        }
    }

    /// Refuses to go on when `steps` (that run next, on the store at `url`) drop data the store
    /// holds, unless ``allowsDataLoss``: drops not counted yet are counted in that store for the
    /// first step; for a later step (of one in-place transaction) they cannot be and are refused.
    private func checkDataLoss(_ steps: ArraySlice<MigrationStep>, readingStoreAt url: URL, type: any StoreType) throws {
        guard !allowsDataLoss, steps.contains(where: { $0.drops.contains(where: \.losesData) }) else { return }
        var counted = Array(steps)
        if let first = counted.first, first.drops.contains(where: { $0.count == nil }) {
            let store = try type.open(at: url, model: try versions.model(named: first.source), options: StoreOptions(readOnly: true, createIfMissing: false))
            defer { try? store.close() }
            counted[0].drops = try first.drops.map { $0.count == nil ? try $0.counted(in: store, mapping: first.mapping) : $0 }
        }
        if let error = Self.dataLossError(counted) { throw error }
    }

    /// Refuses `plan` (unless ``allowsDataLoss``) when a drop counted so far holds data.
    private func refuseCountedLoss(_ plan: MigrationPlan) throws {
        guard !allowsDataLoss, let error = Self.dataLossError(plan.steps.map({ step in
            var known = step
            known.drops = step.drops.filter { ($0.count ?? 0) > 0 }
            return known
        })) else { return }
        throw error
    }

    /// The error that names every drop of `steps` that loses data, or nil when none does.
    private static func dataLossError(_ steps: [MigrationStep]) -> MigrationError? {
        let losing = steps.filter { $0.drops.contains(where: \.losesData) }
        guard !losing.isEmpty else { return nil }
        return MigrationError(.dataLoss, losing.map { step in
            "\(step.source) -> \(step.destination) drops " + step.drops.filter(\.losesData).map(\.description).joined(separator: ", ")
        }.joined(separator: "; ") + ". Nothing was changed: give a mapping that reads what is to be kept, or allow the loss")
    }

    /// A mapping that records neither its versions nor their hashes (an Xcode mapping model
    /// without model paths) is matched to a step by its names: one that fits several steps of the
    /// chain is an error naming them (it would be applied to each).
    private func checkNameMatchedMappings(along chain: [ModelVersions.Version]) throws {
        let steps = Array(zip(chain, chain.dropFirst()))
        for given in mappings where given.matchesByNamesOnly {
            let fitting = steps.filter { given.fits($0.0, $0.1) }
            guard fitting.count > 1 else { continue }
            throw MigrationError(.invalidMapping, "\(given.name) records no model versions and fits several steps by its names ("
                                 + fitting.map { "\($0.0.name) -> \($0.1.name)" }.joined(separator: ", ")
                                 + "): give it the paths of the two models it maps between")
        }
    }

    /// Why `given`, matched by names, does not fit the step from `source` to `next`.
    private func misfit(_ given: StepMapping, _ source: ModelVersions.Version, _ next: ModelVersions.Version) -> String {
        do {
            try given.mapping.check(from: source.model, to: next.model, policies: nil)
            return "it does not map every entity of both models"
        } catch let error as MigrationError {
            return error.description
        } catch {
            return "\(error)"
        }
    }

    /// The plan for a store whose metadata is `metadata` (no object counts). With the store's
    /// `type`, steps the type can do in place (`SchemaChanging`) are planned in place: every
    /// step when all of them can be (they then change the store itself, in one transaction), or
    /// those after a copy step (they change the copy).
    /// - Throws: ``MigrationError`` as `plan(forStoreAt:type:to:)` does.
    public func plan(for metadata: StoreMetadata, to target: String? = nil, type: (any StoreType)? = nil) throws -> MigrationPlan {
        let from: ModelVersions.Version
        do {
            from = try versions.version(matching: metadata)
        } catch let error as StoreError {
            throw MigrationError(.unknownVersion, error.message, cause: error)
        }
        let targetName = target ?? versions.currentName
        let destination: ModelVersions.Version
        do {
            destination = try version(named: targetName)
        } catch let error as ModelError {
            throw MigrationError(.unknownVersion, error.description, cause: error)
        }
        // The chain: version after version (overrides included) until the target.
        var chain = [from]
        while chain.last!.name != destination.name {
            guard let next = versions.version(after: chain.last!.name), !chain.contains(where: { $0.name == next }),
                  let version = try? version(named: next) else {
                let walked = chain.map(\.name).joined(separator: " -> ")
                throw MigrationError(.noMapping, "no way from \(from.name) to \(destination.name) along the versions (\(walked) ends there)")
            }
            chain.append(version)
        }
        try checkNameMatchedMappings(along: chain)
        var steps: [MigrationStep] = []
        var blocked: [String] = []
        var blockedSteps: [(ModelVersions.Version, ModelVersions.Version)] = []
        var used: Set<String> = []
        for (source, next) in zip(chain, chain.dropFirst()) {
            let stage = stages.first { $0.versions == (source.name, next.name) }
            if let given = mappings.first(where: { $0.fits(source, next) }) {
                used.insert(given.name)
                do {
                    try given.mapping.check(from: source.model, to: next.model, policies: policies)
                } catch let error as MigrationError {
                    throw MigrationError(error.code, "\(given.name), for \(source.name) -> \(next.name): \(error.description)", cause: error)
                }
                steps.append(MigrationStep(source: source.name, destination: next.name, kind: .custom(given.name), mapping: given.mapping,
                                           hooks: stage?.hooks))
                continue
            }
            guard infersMappings else {
                blocked.append("\(source.name) -> \(next.name): inference is off and no mapping was given")
                blockedSteps.append((source, next))
                continue
            }
            do {
                // A declared stage vouches for attributes an earlier stage filled.
                let options = stage == nil ? inference : inference.union(.allowRequiringFilledAttributes)
                let mapping = try MappingInference.inferredMapping(from: source.model, to: next.model, options: options)
                steps.append(MigrationStep(source: source.name, destination: next.name, kind: .lightweight, mapping: mapping, hooks: stage?.hooks))
            } catch let error as InferenceError {
                blocked.append("\(source.name) -> \(next.name): " + error.blockingChanges.joined(separator: "; "))
                blockedSteps.append((source, next))
            }
        }
        guard blocked.isEmpty else {
            let unused = mappings.filter { !used.contains($0.name) }
            guard unused.isEmpty else {
                // A mapping was given and fits nowhere while a step needs one: most likely it was meant
                // for that step and is wrong. An invalid mapping, not a store that cannot be migrated
                // (which `--on-incompatible` would answer by recreating it).
                let reasons = unused.map { given in
                    given.matchesByNamesOnly
                        ? "\(given.name) (matched by names): " + blockedSteps.map { "for \($0.0.name) -> \($0.1.name), \(misfit(given, $0.0, $0.1))" }.joined(separator: "; ")
                        : "\(given.name) names or records other versions"
                }
                throw MigrationError(.invalidMapping, "no mapping fits " + blockedSteps.map { "\($0.0.name) -> \($0.1.name)" }.joined(separator: ", ")
                                     + ", and the mappings given fit no step: " + reasons.joined(separator: "; ")
                                     + " (without them: " + blocked.joined(separator: "; also ") + ")")
            }
            throw MigrationError(.noMapping, "no mapping given and none can be inferred for " + blocked.joined(separator: "; also "))
        }
        for index in steps.indices { steps[index].drops = DataDrop.drops(of: steps[index].mapping, from: chain[index].model) }
        if let changer = type as? any SchemaChanging {
            let inPlace = steps.map { step in
                step.kind == .lightweight && step.hooks == nil
                    && changer.schemaChangeBlockers(from: try! versions.model(named: step.source), to: try! versions.model(named: step.destination)).isEmpty
            }
            // Before the first copy the steps would change the original itself: only when all can.
            let firstCopy = inPlace.firstIndex(of: false) ?? steps.count
            for index in steps.indices where inPlace[index] && (firstCopy == steps.count || index > firstCopy) {
                steps[index].kind = .inPlace
            }
        }
        logger.debug("plan: the store is at \(from.name); \(steps.isEmpty ? "nothing to do" : steps.map(\.description).joined(separator: "; "))")
        return MigrationPlan(storeVersion: from.name, targetVersion: destination.name, steps: steps, objectCounts: [:],
                             unusedMappings: mappings.map(\.name).filter { !used.contains($0) })
    }

    private func version(named name: String) throws -> ModelVersions.Version {
        ModelVersions.Version(name: name, model: try versions.model(named: name))
    }

    // MARK: Running

    /// Migrates the store at `url` (of `type`) to `target` (default: the current version) and
    /// puts it in the original's place; nothing happens to a store already there.
    ///
    /// Leftovers of an interrupted migration beside the store are removed first, and the
    /// store's write-ahead log is folded into its main file, so rows that live only in the log
    /// are migrated.
    /// - Throws: ``MigrationError``; the store is then as it was (its log aside).
    @discardableResult
    public func migrateStore(at url: URL, type: any StoreType, to target: String? = nil,
                             progress: (@Sendable (StepProgress) -> Void)? = nil) throws -> MigrationResult {
        let url = FileOperations.resolved(url)
        cancelled.store(false, ordering: .relaxed)
        // One migration of a store at a time (StoreType.withMigrationLock), so a second run never
        // sweeps the first's intermediates.
        do {
            return try type.withMigrationLock(at: url) { try migrateLocked(at: url, type: type, to: target, progress: progress) }
        } catch let error as StoreError {
            throw Self.storeFailure(url, error)
        }
    }

    /// ``migrateStore(at:type:to:progress:)`` under the store's migration lock.
    private func migrateLocked(at url: URL, type: any StoreType, to target: String?,
                               progress: (@Sendable (StepProgress) -> Void)?) throws -> MigrationResult {
        let removed = type.sweepStaged(beside: url)
        logger.debug("migrating \(Self.shown(url)) (\(type.name)): the lock is held; leftovers removed: \(removed.isEmpty ? "none" : removed.joined(separator: ", "))")
        // Objects are counted only when a copy step will read every object anyway: an in-place
        // plan reads none. What the steps drop is counted with the plan.
        var planned = try self.plan(forStoreAt: url, type: type, to: target, countingObjects: false)
        if !planned.steps.allSatisfy({ $0.kind == .inPlace }) { try count(&planned, at: url, type: type, objects: true, drops: false) }
        let plan = planned
        // Every drop counted so far refuses the plan before anything is written — the log not
        // even folded in; the rest are counted in the store each step reads, before it runs.
        try refuseCountedLoss(plan)
        do {
            try type.checkpoint(at: url)
        } catch {
            throw Self.storeFailure(url, error)
        }
        let before = type.changeToken(at: url)
        // Counted again on the files the run starts from (a write may have come between), so that
        // what is checked is what the fingerprint guards from here on.
        if !allowsDataLoss, plan.steps.contains(where: { !$0.drops.isEmpty }) {
            var recounted = plan
            try count(&recounted, at: url, type: type, objects: false)
            try refuseCountedLoss(recounted)
        }
        var result = MigrationResult(plan: plan, removedLeftovers: removed, seconds: [])
        guard !plan.steps.isEmpty else { return result }
        // The store the last copy step made (nil: none yet, the steps read the original).
        var latest: (any StagedLocation)?
        // Every place this run staged a store in, so that an error names the store instead.
        var staging: [URL] = []
        func stage() throws -> any StagedLocation {
            let staged = try type.stage(beside: url, verb: "migrating")
            staging.append(staged.url)
            return staged
        }
        do {
            // A stage's closures write to the store: to a copy of the original, never to the original itself.
            if plan.steps.contains(where: { $0.hooks != nil }) {
                let copy = try stage()
                latest = copy
                try type.copyStore(at: url, to: copy.url)
            }
            var index = 0
            while index < plan.steps.count {
                let step = plan.steps[index]
                try checkCancelled(step)
                let started = Date()
                if step.kind == .inPlace, let changer = type as? any SchemaChanging {
                    // A run of in-place steps: one transaction on the store the last copy made, or on the original.
                    let run = plan.steps[index...].prefix { $0.kind == .inPlace }
                    // In place on the original: what was planned and counted must be what is changed.
                    if latest == nil, type.changeToken(at: url) != before {
                        throw MigrationError(.storeChanged, "\(Self.shown(url)) was written by another process after its migration was planned; "
                                             + "it was left as that process wrote it: migrate it again when no process has it open")
                    }
                    try checkDataLoss(run, readingStoreAt: latest?.url ?? url, type: type)
                    let models = try [versions.model(named: step.source)] + run.map { try versions.model(named: $0.destination) }
                    logger.debug("steps \(run.map { "\($0.source) -> \($0.destination)" }.joined(separator: ", ")): in place, one transaction on \((latest?.url ?? url).path)")
                    // On the original, the history records the migration in its transaction; a staged
                    // store is given its history when it is installed.
                    try changer.changeSchema(at: latest?.url ?? url, through: models, recording: latest == nil ? HistoryRecord(author: author) : nil)
                    // Fused steps share their time; every object went through each without being read
                    // (counted when the plan counted them).
                    let seconds = Date().timeIntervalSince(started) / Double(run.count)
                    let objects = plan.objectCounts.values.reduce(0, +)
                    for (offset, done) in run.enumerated() {
                        result.seconds.append(seconds)
                        progress?(StepProgress(step: index + offset, steps: plan.steps.count, description: done.description,
                                               progress: MigrationProgress(mapping: done.description, phase: .createObjects, completed: objects, total: objects)))
                    }
                    index += run.count
                    continue
                }
                try checkDataLoss([step], readingStoreAt: latest?.url ?? url, type: type)
                if let willMigrate = step.hooks?.willMigrate, let latest {
                    try Self.run(willMigrate, on: latest.url, type: type, model: try versions.model(named: step.source), step: step)
                }
                let staged = try stage()
                logger.debug("step \(index + 1) of \(plan.steps.count), \(step.source) -> \(step.destination): from \(Self.shown(latest?.url ?? url)) into \(Self.shown(staged.url))")
                let position = index
                let manager = MigrationManager(sourceModel: try versions.model(named: step.source),
                                               destinationModel: try versions.model(named: step.destination),
                                               mapping: step.mapping, policies: policies, batchSize: batchSize) { p in
                    progress?(StepProgress(step: position, steps: plan.steps.count, description: step.description, progress: p))
                }
                running.withLock { $0 = manager }
                defer { running.withLock { $0 = nil } }
                do {
                    if cancelled.load(ordering: .relaxed) { manager.cancel() }
                    try manager.migrateStore(at: latest?.url ?? url, type: type, to: staged.url, type: type,
                                             destinationOptions: StoreOptions(author: author))
                } catch {
                    staged.discard()
                    throw error
                }
                latest?.discard()
                latest = staged
                if let didMigrate = step.hooks?.didMigrate {
                    try Self.run(didMigrate, on: staged.url, type: type, model: try versions.model(named: step.destination), step: step)
                }
                result.seconds.append(Date().timeIntervalSince(started))
                logger.debug("step \(index + 1) done in \(String(format: "%.3f", result.seconds.last!)) s")
                index += 1
            }
            // Every step in place: the original itself changed, in one transaction that also
            // recorded the migration in its history as a copy's install does: one transaction, by
            // the author, listing no object (any may have changed).
            guard let latest else { return result }
            guard type.changeToken(at: url) == before else {
                throw MigrationError(.storeChanged, "\(Self.shown(url)) was written by another process while it was migrated; "
                                     + "it was left as that process wrote it: migrate it again when no process has it open")
            }
            try checkCancelled(plan.steps.last!)
            try type.install(latest.url, at: url, replacing: type)
            latest.finish()
            logger.debug("installed the migrated store at \(Self.shown(url))")
            return result
        } catch {
            latest?.discard()
            let staged = url.deletingLastPathComponent().appending(path: ".\(url.lastPathComponent).migrating-").path
            throw Self.storeFailure(url, Self.naming(error, staged: url.isFileURL ? staged : nil, urls: staging, as: url))
        }
    }

    /// `error` with the intermediate stores it names (`<folder>/.<name>.migrating-<uuid>…`, staged
    /// by this run and gone with it) named as the store being migrated: a person never reads a
    /// staging store's name or UUID.
    static func naming(_ error: any Error, staged prefix: String?, urls: [URL] = [], as url: URL) -> any Error {
        func renamed(_ text: String) -> String {
            var text = text
            for staged in urls where !staged.isFileURL { text = text.replacingOccurrences(of: staged.absoluteString, with: shown(url)) }
            guard let prefix else { return text }
            var rest = Substring(text), result = ""
            while let found = rest.range(of: prefix) {
                result += rest[..<found.lowerBound] + url.path
                rest = rest[found.upperBound...].drop { !$0.isWhitespace && $0 != ":" }
            }
            return result + rest
        }
        switch error {
        case var error as StoreError:
            if let staged = error.url, urls.contains(staged) || prefix.map({ staged.path.hasPrefix($0) }) == true { error.url = url }
            error.message = renamed(error.message)
            return error
        case var error as MigrationError:
            error.message = renamed(error.message)
            if let cause = error.cause { error.cause = naming(cause, staged: prefix, urls: urls, as: url) }
            return error
        default:
            return error
        }
    }

    /// Runs a stage's closure on a context of the (intermediate) store at `url`, opened with `model`.
    private static func run(_ body: @Sendable (ObjectContext) throws -> Void, on url: URL, type: any StoreType,
                            model: ManagedObjectModel, step: MigrationStep) throws {
        let store = try type.open(at: url, model: model, options: StoreOptions(createIfMissing: false))
        defer { try? store.close() }
        let coordinator = StoreCoordinator(model: model)
        try coordinator.addStore(store)
        do {
            try body(ObjectContext(coordinator: coordinator))
        } catch let error as MigrationError {
            throw error
        } catch {
            throw MigrationError(.policy, "the stage \(step.source) -> \(step.destination) failed: \(error)", cause: error)
        }
    }

    /// A store's error as the migration's, naming the store.
    private static func storeFailure(_ url: URL, _ error: any Error) -> MigrationError {
        if let error = error as? MigrationError { return error }
        if let error = error as? StoreError, error.url != nil { return MigrationError(.store, "\(error)", cause: error) }
        return MigrationError(.store, "\(shown(url)): \(error)", cause: error)
    }

    /// A store as messages name it: a file's path, else its URL with any password masked.
    static func shown(_ url: URL) -> String {
        guard !url.isFileURL else { return url.path }
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false), parts.password != nil else { return url.absoluteString }
        parts.password = "********"
        return parts.string ?? url.absoluteString
    }

    private func checkCancelled(_ step: MigrationStep) throws {
        if cancelled.load(ordering: .relaxed) { throw MigrationError(.cancelled, "the migration was cancelled before \(step)") }
    }
}

/// What a migration did.
public struct MigrationResult: Sendable {
    /// The plan it ran.
    public var plan: MigrationPlan
    /// Intermediate stores of interrupted runs that were removed first.
    public var removedLeftovers: [String]
    /// Seconds each step took.
    public var seconds: [Double]
}
