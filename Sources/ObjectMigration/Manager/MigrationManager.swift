import Foundation
import ObjectModel
import ObjectStore
import Synchronization

/// Progress of one entity mapping in one phase.
public struct MigrationProgress: Sendable, Hashable {
    /// The entity mapping's name.
    public var mapping: String
    /// The phase.
    public var phase: MigrationError.Phase
    /// Objects done so far.
    public var completed: Int
    /// Objects in all (source objects in phases 1 and 2, destination objects in phase 3).
    public var total: Int
}

/// Migrates a store of any type to a new store of any type with a mapping
/// model, in Core Data's three phases for each entity mapping:
/// (1) destination objects from source objects, attributes only, validation off;
/// (2) relationships, through the source → destination association;
/// (3) validation of every destination object, plus custom validation.
///
/// It streams: the source is read in primary-key batches and the destination
/// written in batches, so memory stays flat however large the store is. Copy
/// and transform mappings keep each object's primary key, so their association
/// costs nothing. The source is only ever opened read-only; on failure or
/// cancellation the partial destination is removed.
///
/// ```swift
/// let manager = MigrationManager(sourceModel: v1, destinationModel: v2, mapping: try MappingInference.inferredMapping(from: v1, to: v2))
/// try manager.migrateStore(at: old, type: SQLiteStoreType(), to: new, type: SQLiteStoreType())
/// ```
public final class MigrationManager: Sendable {
    /// The model of the source store (it must match the store's hashes).
    public let sourceModel: ManagedObjectModel
    /// The model of the destination store.
    public let destinationModel: ManagedObjectModel
    /// How source objects become destination objects.
    public let mapping: MappingModel
    /// Where custom policies are looked up by name.
    public let policies: PolicyRegistry
    /// Objects read and written per batch.
    public let batchSize: Int
    /// Whether a destination that adopts `BulkCopying` copies the objects itself when every
    /// mapping moves them as they are (true by default; off, every object moves in batches).
    public let usesBulkCopy: Bool

    private let cancelled = Atomic<Bool>(false)
    private let handler: (@Sendable (MigrationProgress) -> Void)?
    private let continuation: AsyncStream<MigrationProgress>.Continuation
    /// Progress as an asynchronous sequence; it finishes when the migration ends.
    public let progressUpdates: AsyncStream<MigrationProgress>

    /// Creates a manager.
    /// - Parameters:
    ///   - sourceModel: the model of the stores it reads.
    ///   - destinationModel: the model of the stores it writes.
    ///   - mapping: how source objects become destination objects.
    ///   - policies: where the custom policies the mapping names are found.
    ///   - batchSize: source objects read, and destination objects written, at a time.
    ///   - usesBulkCopy: whether a destination that can copy a source store itself
    ///     (`BulkCopying`) does, when the mapping moves every object as it is.
    ///   - progress: called for each batch of each entity mapping and phase.
    public init(sourceModel: ManagedObjectModel, destinationModel: ManagedObjectModel, mapping: MappingModel,
                policies: PolicyRegistry = .shared, batchSize: Int = 1_000, usesBulkCopy: Bool = true,
                progress: (@Sendable (MigrationProgress) -> Void)? = nil) {
        self.usesBulkCopy = usesBulkCopy
        self.sourceModel = sourceModel
        self.destinationModel = destinationModel
        self.mapping = mapping
        self.policies = policies
        self.batchSize = max(1, batchSize)
        self.handler = progress
        (progressUpdates, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1_024))
    }

    /// Stops the migration within one batch; it then throws ``MigrationError/Code/cancelled``.
    public func cancel() { cancelled.store(true, ordering: .relaxed) }

    /// Migrates the store at `sourceURL` into a new store at `destinationURL`.
    ///
    /// - Returns: the destination's objects per concrete entity (``migrateStore(from:to:type:destinationOptions:)``).
    /// - Throws: ``MigrationError`` naming the entity mapping, the phase and the
    ///   source object. Nothing is left at `destinationURL` after a failure, and
    ///   the source is never written.
    @discardableResult
    public func migrateStore(at sourceURL: URL, type sourceType: any StoreType, to destinationURL: URL,
                             type destinationType: any StoreType, destinationOptions: StoreOptions = StoreOptions()) throws -> [String: Int] {
        let snapshot: any PersistentStore
        do {
            let source = try sourceType.open(at: sourceURL, model: sourceModel, options: StoreOptions(readOnly: true, createIfMissing: false))
            defer { try? source.close() }
            snapshot = try source.snapshot()
            // Rows every read passes by would be left out of the new store without a word.
            if let checking = snapshot as? any IntegrityChecking, let row = try checking.rowsNoReadSees(limit: 1).first {
                try? snapshot.close()
                throw StoreError(.corrupt, "the store is damaged: \(row); the migration would leave it out (objectstore validate lists every such row)",
                                 url: sourceURL)
            }
        } catch let error as StoreError {
            defer { continuation.finish() }
            throw MigrationError(error.code == .incompatibleModel ? .incompatibleSource : .store, "the source: \(error)", cause: error)
        }
        defer { try? snapshot.close() }
        return try migrateStore(from: snapshot, to: destinationURL, type: destinationType, destinationOptions: destinationOptions)
    }

    /// Migrates an open store (opened with ``sourceModel``) into a new store at `destinationURL`.
    ///
    /// Every read goes through `source`: give it a snapshot (`PersistentStore/snapshot()`)
    /// so the migration reads one moment of the store while others write to it.
    /// - Returns: the destination's objects per concrete entity, as the destination gave them
    ///   when phase 3 read it, or as it reported them when it copied them itself (`BulkCopying`).
    /// - Throws: ``MigrationError``; nothing is left at `destinationURL` after a failure.
    @discardableResult
    public func migrateStore(from source: any PersistentStore, to destinationURL: URL, type destinationType: any StoreType,
                             destinationOptions: StoreOptions = StoreOptions()) throws -> [String: Int] {
        defer { continuation.finish() }
        guard !destinationType.storeExists(at: destinationURL) else {
            throw MigrationError(.destinationExists, "\(destinationURL.path) already exists")
        }
        guard source.model.versionHashes == sourceModel.versionHashes else {
            throw MigrationError(.incompatibleSource, "the source store is open with another model than the manager's source model")
        }
        try checkMapping(source)
        var options = destinationOptions
        options.readOnly = false
        options.createIfMissing = true
        // The destination is thrown away unless the migration finishes: it is made durable once, at close.
        options.deferredDurability = true
        // Its batches are the migration's work, not its users' saves: the history gets one
        // transaction for the whole of it, below.
        options.recordsHistory = false
        let destination: any PersistentStore
        do {
            destination = try destinationType.open(at: destinationURL, model: destinationModel, options: options)
        } catch let error as StoreError {
            throw MigrationError(.store, "the destination: \(error)", cause: error)
        }
        do {
            let (keepsIdentity, counts) = try run(source: source, destination: destination)
            // A cancel that came during a step that reads no batch (a bulk copy) still stops it.
            if cancelled.load(ordering: .relaxed) { throw MigrationError(.cancelled, "the migration was cancelled") }
            var metadata = try destination.metadata()
            let sourceMetadata = try source.metadata()
            // The application's own metadata keys travel with the data; the store's own keys
            // (Core Data's `NS…` and `_NS…`, and ours) describe the new store, which writes its own.
            for (key, value) in sourceMetadata.values where !StoreMetadata.isStoreKey(key) { metadata[key] = value }
            // The store keeps its identity when every object keeps its key, so object URIs stay valid;
            // otherwise an old URI could name another object, so the store gets a new UUID.
            if keepsIdentity, let uuid = sourceMetadata.storeUUID { metadata[StoreMetadata.Key.storeUUID] = .string(uuid.uuidString) }
            try metadata.setModel(destinationModel)
            try destination.setMetadata(metadata)
            // One transaction, listing no object (any may have changed), its tokens going on from the
            // source's: an observer of the store that this one replaces never sees a token twice.
            try destination.continueHistory(after: source.lastHistoryToken(), recording: HistoryRecord(author: destinationOptions.author))
            try destination.close()
            return counts
        } catch {
            try? destination.close()
            try? destinationType.destroy(at: destinationURL)
            if let error = error as? MigrationError { throw error }
            if let error = error as? StoreError { throw MigrationError(.store, "\(error)", cause: error) }
            throw MigrationError(.policy, "\(error)")
        }
    }

    private func checkMapping(_ source: any PersistentStore) throws {
        try mapping.check(from: sourceModel, to: destinationModel, policies: policies)
        let hashes = try source.metadata().versionHashes
        for m in mapping.entityMappings {
            if let s = m.sourceEntity, let expected = m.sourceVersionHash, hashes[s] != expected {
                throw MigrationError(.incompatibleSource, "the store's \(s) hash differs from the mapping's: the store was made with another model", mapping: m.name)
            }
        }
    }

    private func policy(_ m: EntityMapping) -> any EntityMigrationPolicy {
        m.policyName.flatMap { policies.policy(named: $0) } ?? DefaultMigrationPolicy()
    }

    private func checkCancelled(_ m: EntityMapping, _ phase: MigrationError.Phase) throws {
        if cancelled.load(ordering: .relaxed) || Task.isCancelled {
            throw MigrationError(.cancelled, "the migration was cancelled", mapping: m.name, phase: phase)
        }
    }

    private func report(_ progress: MigrationProgress) {
        handler?(progress)
        continuation.yield(progress)
    }

    /// Wraps whatever a step throws with the mapping, phase and source object.
    private func step<T>(_ m: EntityMapping, _ phase: MigrationError.Phase, _ key: ObjectKey?, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch var error as MigrationError {
            if error.mapping == nil { error.mapping = m.name }
            if error.phase == nil { error.phase = phase }
            if error.sourceObject == nil { error.sourceObject = key }
            throw error
        } catch let error as StoreError {
            throw MigrationError(.store, error.message, mapping: m.name, phase: phase, sourceObject: key, cause: error)
        } catch {
            throw MigrationError(.policy, "\(error)", mapping: m.name, phase: phase, sourceObject: key)
        }
    }

    /// Source objects of a mapping, batch by batch, filtered.
    private func forEachSource(_ m: EntityMapping, _ phase: MigrationError.Phase, _ context: MigrationContext,
                               _ body: (ObjectRecord) throws -> Void) throws {
        // Phase 2 reads the records' to-many lists a group at a time (``ListGroup``).
        var group = ListGroup(batchSize: phase == .createRelationships ? batchSize : nil)
        let (source, batchSize) = (context.sourceStore, batchSize)
        // The lists of a batch's first group are read with the batch, while the batch before is written.
        let prefetch = phase == .createRelationships ? context.prefetchRead(mapping: m) : nil
        let firstGroup = Atomic<Int>(group.size)
        try forEachBatch(m, phase, context, read: { entity, after in
            let records = try source.scan(entity: entity, after: after, limit: batchSize)
            guard let prefetch else { return Prefetched<[ObjectRecord], MigrationContext.PrefetchedLists>(batch: records, first: nil) }
            let count = Swift.min(records.count, firstGroup.load(ordering: .relaxed))
            return Prefetched(batch: records, first: (count, try prefetch(records[..<count].map(\.key))))
        }, bounds: { ($0.batch.count, $0.batch.last?.key.primaryKey) }) { read in
            let records = read.batch
            defer { firstGroup.store(group.size, ordering: .relaxed) }
            try step(m, phase, nil) {
                try group.forEachGroup(of: records.count, first: read.first, reading: prefetch.map { prefetch in
                    { range in let keys = records[range].map(\.key); return { try prefetch(keys) } }
                }, members: \.members) { range, lists in
                    if phase == .createRelationships { context.usePrefetched(lists ?? MigrationContext.PrefetchedLists()) }
                    try write(records[range])
                }
            }
            try step(m, phase, nil) { try context.flush() }
        }

        func write(_ part: ArraySlice<ObjectRecord>) throws {
            for record in part {
                if let filter = m.sourceFilter {
                    let keep = try step(m, phase, record.key) {
                        try PredicateEvaluator.evaluate(filter, on: StoreSubject(record: record, store: context.sourceStore))
                    }
                    if !keep { continue }
                }
                try step(m, phase, record.key) { try body(record) }
            }
        }
    }

    /// How many objects' to-many lists are read at once: it grows while their lists are short and
    /// shrinks to about 20 × the batch size of members when they are long, so memory is bounded by
    /// the batch and not by the store (a tag with a million books). Without a batch size, a whole batch.
    struct ListGroup {
        private(set) var size: Int
        private let batchSize: Int?

        init(batchSize: Int?) {
            self.batchSize = batchSize
            size = batchSize == nil ? Int.max : 16
        }

        /// Goes through `0..<count` a group at a time: `reading` gives, for a group, the read of its
        /// lists, which runs on a thread of its own (``ReadAhead``) while `write` handles the group
        /// before; the next group's size follows from the members (``read(rows:members:)``). No read
        /// is left running when a write fails. `first`: the lists of the first rows, read already
        /// (beside the batch: ``createObjects(_:_:wholeRows:)``).
        mutating func forEachGroup<Lists: Sendable>(of count: Int, first: (count: Int, lists: Lists)? = nil,
                                                    reading: ((Range<Int>) -> @Sendable () throws -> Lists)?,
                                                    members: (Lists) -> Int, _ write: (Range<Int>, Lists?) throws -> Void) throws {
            func start(_ lower: Int) -> (range: Range<Int>, lists: ReadAhead<Lists>?) {
                let range = lower..<(lower + Swift.min(count - lower, size))
                return (range, reading.map { ReadAhead($0(range)) })
            }
            var next: (range: Range<Int>, lists: ReadAhead<Lists>?)?
            if let first, first.count > 0, first.count <= count {
                next = (0..<first.count, ReadAhead(done: first.lists))
            } else if count > 0 {
                next = start(0)
            }
            defer { _ = try? next?.lists?.value() }
            while let (range, reading) = next {
                let lists = try reading?.value()
                read(rows: range.count, members: lists.map(members) ?? 0)
                next = range.upperBound < count ? start(range.upperBound) : nil
                try write(range, lists)
            }
        }

        /// Sets the next size from the last group's rows and the members their lists held.
        mutating func read(rows: Int, members: Int) {
            guard let batchSize else { return }
            // In floating point: a batch size of Int.max (no batches) must not overflow.
            let fitting = members == 0 ? Double(Int.max) : Double(rows) * 20 * Double(batchSize) / Double(members)
            size = Swift.max(1, Swift.min(batchSize, rows.multipliedReportingOverflow(by: 4).overflow ? Int.max : rows * 4,
                                          fitting >= Double(Int.max) ? Int.max : Int(fitting)))
        }
    }

    /// Phase 1 of a compiled mapping: batches of source objects become batches of destination
    /// objects; with `wholeRows`, written with their source objects' to-many lists
    /// (``insertWhole(_:_:group:failures:)``), so the objects are written whole. Returns the rules their
    /// attributes break (and, written whole, their relationships).
    private func createObjects(_ program: SlotProgram, _ context: MigrationContext, wholeRows: Bool) throws -> [ValidationFailure] {
        let m = program.mapping
        var failures: [ValidationFailure] = []
        // Rows written at a time with their lists (``insertWhole(_:_:group:failures:)``), carried from batch to batch.
        var group = ListGroup(batchSize: batchSize)
        try step(m, .createObjects, nil) { try context.flush() }
        let (source, batchSize) = (context.sourceStore, batchSize)
        // Written whole, the lists of a batch's first group are read with the batch, while the
        // batch before is written: the objects keep their keys and their relationships' names.
        let lists = wholeRows ? program.destination.storedRelationships.filter(\.isToMany).map(\.name) : []
        // And the objects its required to-ones name, looked up in the source (the store serves one
        // read at a time: on this thread they would wait for the next batch's read).
        let required = wholeRows ? program.destination.ruledToOnes.map(\.name) : []
        let firstGroup = Atomic<Int>(group.size)
        // The order keys written with the rows, so far: those every batch made carries.
        let writesOrderKeys = !wholeRows && (context.destinationStore as? any ForeignKeyRelationships)?.writesInverseOrderKeys == true
            && context.destinationStore.model.entity(named: program.destination.name) === program.destination
        context.inverseOrderKeysWritten[m.name] = writesOrderKeys ? Set(program.toOneNames.map(\.destination)) : []
        // Objects of entities read whole before are known without a lookup (their keys were marked).
        let known = context.sourceEntitiesRead
        try forEachBatch(m, .createObjects, context, read: { entity, after in
            let batch = try source.scanBatch(entity: entity, after: after, limit: batchSize)
            let named = required.compactMap(batch.layout.toOneSlot).flatMap { slot in
                (0..<batch.count).compactMap { batch[$0, toOne: slot] }.filter { !known.contains($0.entity) || !ExistingKeys.holdsAsBits($0.primaryKey) }
            }
            let existing = named.isEmpty ? [] : try source.existingKeys(among: named)
            guard !lists.isEmpty else { return Prefetched<RecordBatch, (keys: [ObjectKey], lists: [[OrderedMembers]])>(batch: batch, existing: existing, first: nil) }
            let keys = (0..<Swift.min(batch.count, firstGroup.load(ordering: .relaxed))).map(batch.key(at:))
            return Prefetched(batch: batch, existing: existing, first: (keys.count, (keys, try lists.map { try source.orderedMembers(of: keys, relationship: $0) })))
        }, bounds: { ($0.batch.count, $0.batch.primaryKeys.last) }) { read in
            context.sourceKeys.add(read.existing)
            if wholeRows { context.sourceKeys.add(entity: read.batch.entity.name, primaryKeys: read.batch.primaryKeys) }
            let batch = read.batch
            let made: RecordBatch
            do {
                made = try program.run(batch, context: context, failures: &failures)
            } catch let failure as SlotProgram.ObjectFailure {
                made = try step(m, .createObjects, failure.source) { () -> RecordBatch in throw failure.error }
            }
            if wholeRows {
                // The lists read with the batch, for the rows made of its first objects.
                let first = read.first.flatMap { count, read in
                    count <= made.count && read.keys.indices.allSatisfy { made.key(at: $0) == read.keys[$0] } ? (count, read.lists) : nil
                }
                try step(m, .createObjects, nil) { try insertWhole(made, context, group: &group, first: first, failures: &failures) }
                firstGroup.store(group.size, ordering: .relaxed)
            } else {
                // Unchecked, as the record path's: to-one targets keep their keys and are written by their own mappings.
                try step(m, .createObjects, nil) { try context.destinationStore.bulkInsert(made, checkingReferences: false) }
                context.inverseOrderKeysWritten[m.name]!.formIntersection(made.inverseOrderKeys.keys)
            }
        }
        // Every object of the source entity was read, and its key marked.
        if wholeRows, let entity = m.sourceEntity { context.sourceEntitiesRead.insert(entity) }
        return failures
    }

    /// A batch of source objects, with the to-many lists of its first `count` objects when they were read with it.
    private struct Prefetched<Batch: Sendable, Lists: Sendable>: Sendable {
        let batch: Batch
        /// The objects the batch's required to-ones name that the source has.
        var existing: Set<ObjectKey> = []
        let first: (count: Int, lists: Lists)?
    }

    /// Inserts the objects of `made`, copies as they are of source objects with the same keys, each
    /// with its source object's to-many lists, a ``ListGroup`` of rows at a time. The relationship
    /// rules they break are added to `failures`, judged from the very lists and keys written (phase 3
    /// then reads none of them again: ``relationshipsCheckedWhole(_:)``).
    private func insertWhole(_ made: RecordBatch, _ context: MigrationContext, group: inout ListGroup,
                             first: (count: Int, lists: [[OrderedMembers]])? = nil, failures: inout [ValidationFailure]) throws {
        let relationships = made.entity.storedRelationships.filter(\.isToMany)
        let destination = context.destinationStore
        // Required to-ones, from the keys each row carries, each naming an object the source has.
        for relationship in made.entity.ruledToOnes {
            guard let slot = made.layout.toOneSlot(relationship.name) else { continue }
            for row in 0..<made.count {
                let present = try made[row, toOne: slot].map { try context.sourceKeys.contains($0) } ?? false
                for (rule, message) in ObjectValidator.check(relationship, count: present ? 1 : 0) {
                    failures.append(ValidationFailure(objectID: destination.objectID(for: made.key(at: row)), property: relationship.name, rule: rule, message: message))
                }
            }
        }
        guard !relationships.isEmpty else { return try destination.bulkInsert(made, checkingReferences: false) }
        let source = context.sourceStore
        let names = relationships.map(\.name)
        try group.forEachGroup(of: made.count, first: first, reading: { range in
            let keys = range.map(made.key(at:))
            return { try names.map { try source.orderedMembers(of: keys, relationship: $0) } }
        }, members: { $0.reduce(0) { $0 + $1.reduce(0) { $0 + $1.keys.count } } }) { range, lists in
            var part = made.rows(range)
            for (relationship, lists) in zip(relationships, lists ?? []) { part.setToMany(relationship.name, lists) }
            // A row whose lists were not read counts as having no members: refused, never let through.
            for (index, relationship) in relationships.enumerated() where ObjectValidator.hasRule(relationship) {
                for row in 0..<part.count {
                    for (rule, message) in ObjectValidator.check(relationship, count: lists?[index][row].keys.count ?? 0) {
                        failures.append(ValidationFailure(objectID: destination.objectID(for: part.key(at: row)), property: relationship.name,
                                                          rule: rule, message: message))
                    }
                }
            }
            // Unchecked, as the record path's: the members keep their keys and are written by their own mappings.
            try destination.bulkInsert(part, checkingReferences: false)
        }
    }

    /// The destination entities whose relationship rules a whole-row conversion judged as it wrote
    /// them (``insertWhole(_:_:group:failures:)``): each made by one mapping that compiles to a program.
    private func relationshipsCheckedWhole(_ mappings: [EntityMapping], _ context: MigrationContext) -> Set<String> {
        Set(mappings.filter { SlotProgram($0, context: context) != nil }.compactMap(\.destinationEntity))
    }

    /// The source entity of a mapping read in primary-key batches, with progress and
    /// cancellation; `bounds` gives a batch's size and last key. Each batch is read while `body`
    /// handles the one before (``ReadAhead``).
    private func forEachBatch<Batch: Sendable>(_ m: EntityMapping, _ phase: MigrationError.Phase, _ context: MigrationContext,
                                               read: @escaping @Sendable (String, Int64?) throws -> Batch,
                                               bounds: (Batch) -> (count: Int, last: Int64?),
                                               _ body: (Batch) throws -> Void) throws {
        guard let entity = m.sourceEntity, sourceModel.entity(named: entity)?.isAbstract == false else { return }
        let total = try step(m, phase, nil) { try context.sourceStore.objectCount(exactly: entity) }
        var done = 0
        report(MigrationProgress(mapping: m.name, phase: phase, completed: 0, total: total))
        var next: ReadAhead<Batch>? = ReadAhead { try read(entity, nil) }
        // However the loop ends (a failure, a cancellation), no read is left running on the source.
        defer { _ = try? next?.value() }
        while let reading = next {
            try checkCancelled(m, phase)
            let batch = try step(m, phase, nil) { try reading.value() }
            let (count, last) = bounds(batch)
            next = count < batchSize ? nil : ReadAhead { try read(entity, last) }
            try body(batch)
            guard count > 0 else { break }
            done += count
            report(MigrationProgress(mapping: m.name, phase: phase, completed: done, total: total))
        }
    }

    /// Runs the three phases; returns whether every object kept its key, and the destination's objects per entity.
    private func run(source: any PersistentStore, destination: any PersistentStore) throws -> (keepsKeys: Bool, counts: [String: Int]) {
        let context = MigrationContext(source: source, destination: destination, mapping: mapping, batchSize: batchSize)
        let mappings = mapping.entityMappings.filter { $0.kind != .remove && $0.kind != .add }
        try context.reserveKeptKeys()
        for m in mappings { try step(m, .createObjects, nil) { try policy(m).beginEntityMapping(m, context: context) } }
        // Attribute rules broken by objects of compiled mappings, by destination entity: checked in phase 1.
        var attributeFailures: [String: [ValidationFailure]] = [:]
        let copiesAsIs = copiesEveryObjectAsIs(mappings, context)
        if let (copied, mayBreakRules) = try bulkCopy(mappings, context, copiesAsIs: copiesAsIs) {
            // Phases 1 and 2 in one step; the objects are the source's, so only entities with
            // rules need checking again: those the copy narrowed beside it read only the objects
            // it named, the others are narrowed now. Where the destination narrows relationship
            // rules too, the objects it names are checked whole and their entity is done.
            let coversRelationships = (destination as? any RuleNarrowing)?.narrowsRelationshipRules == true
            var relationshipsChecked: Set<String> = []
            let targets = ExistingKeys(destination)
            for m in mappings {
                let done = m.sourceEntity.flatMap { copied[$0] } ?? 0
                for phase in [MigrationError.Phase.createObjects, .createRelationships] {
                    report(MigrationProgress(mapping: m.name, phase: phase, completed: done, total: done))
                }
                guard let d = m.destinationEntity, attributeFailures[d] == nil, let entity = destinationModel.entity(named: d) else { continue }
                let whole = coversRelationships && ObjectValidator.hasRelationshipRules(entity)
                if !ObjectValidator.hasAttributeRules(entity) && !whole {
                    attributeFailures[d] = []
                } else if let keys = mayBreakRules[d] {
                    attributeFailures[d] = try step(m, .validate, nil) {
                        try keys.compactMap { try destination.record(for: ObjectKey(d, $0)) }.flatMap {
                            try brokenRules(of: $0, entity, in: destination, relationships: whole, targets: targets)
                        }
                    }
                    if whole { relationshipsChecked.insert(d) }
                } else if let narrowed = try step(m, .validate, nil, {
                    try narrowedFailures(entity, in: destination) { try brokenRules(of: $0, entity, in: destination, relationships: whole, targets: targets) }
                }) {
                    attributeFailures[d] = narrowed
                    if whole { relationshipsChecked.insert(d) }
                }
            }
            return try validate(mappings, context, destination: destination, attributeFailures: attributeFailures,
                                relationshipsChecked: relationshipsChecked, counts: copied)
        }
        // Objects copied as they are into a store that keeps both sides in its rows are written
        // whole in phase 1, each side as the source holds it: nothing is left for phase 2.
        let wholeRows = copiesAsIs && (destination as? any WholeRowInserting)?.insertsWholeRows == true
        if wholeRows { logger.debug("whole rows: every object is written once, with its to-many lists; no phase 2") }
        // Phase 1: mappings that keep keys go first, then those that allocate new ones. Written whole,
        // the owners of ordered lists their members hold the inverse of go before the rest, so that
        // a store keeping a member's order key in its row has it when the member comes.
        func ownsOrderedList(_ m: EntityMapping) -> Bool {
            m.destinationEntity.flatMap { destinationModel.entity(named: $0) }?.storedRelationships.contains { r in
                r.isToMany && r.isOrdered && r.inverse.flatMap { destinationModel.entity(named: r.destination)?.relationshipsByName[$0] }?.isToMany == false
            } == true
        }
        let ordered = wholeRows ? Self.targetsFirst(mappings.filter(ownsOrderedList), sourceModel) + Self.targetsFirst(mappings.filter { !ownsOrderedList($0) }, sourceModel)
                                : mappings
        for m in ordered.filter({ context.keepsKeys($0) }) + ordered.filter({ !context.keepsKeys($0) }) {
            let policy = policy(m)
            if let program = SlotProgram(m, context: context) {
                attributeFailures[program.destination.name, default: []] += try createObjects(program, context, wholeRows: wholeRows)
            } else {
                try forEachSource(m, .createObjects, context) { record in
                    try policy.createDestinationInstances(for: record, mapping: m, context: context)
                }
            }
            try step(m, .createObjects, nil) { try policy.endInstanceCreation(m, context: context); try context.flush() }
        }
        // Phase 2 (for mappings whose relationships were not all written with their objects, or are not
        // written from their other side).
        if wholeRows {
            for m in mappings {
                guard let entity = m.sourceEntity, sourceModel.entity(named: entity)?.isAbstract == false else { continue }
                let total = try step(m, .createRelationships, nil) { try source.objectCount(exactly: entity) }
                report(MigrationProgress(mapping: m.name, phase: .createRelationships, completed: total, total: total))
            }
            return try validate(mappings, context, destination: destination, attributeFailures: attributeFailures,
                                relationshipsChecked: relationshipsCheckedWhole(mappings, context))
        }
        if let first = mappings.first {
            try step(first, .createRelationships, nil) { try context.planPhaseTwo(foreignKeys: destination is any ForeignKeyRelationships,
                                                                     sharedManyToMany: (destination as? any ForeignKeyRelationships)?.sharesManyToManyTables ?? true) }
        }
        for m in mappings {
            if context.hasNothingForPhaseTwo(m) {
                if let entity = m.sourceEntity, sourceModel.entity(named: entity)?.isAbstract == false {
                    let total = try step(m, .createRelationships, nil) { try source.objectCount(exactly: entity) }
                    report(MigrationProgress(mapping: m.name, phase: .createRelationships, completed: total, total: total))
                }
                continue
            }
            let policy = policy(m)
            try forEachSource(m, .createRelationships, context) { record in
                for destination in context.destinationKeys(for: record.key, mapping: m.name) {
                    try policy.createRelationships(forDestination: destination, source: record, mapping: m, context: context)
                }
            }
            try step(m, .createRelationships, nil) { try policy.endRelationshipCreation(m, context: context); try context.flush() }
        }
        return try validate(mappings, context, destination: destination, attributeFailures: attributeFailures)
    }

    /// The rules `check` finds broken, read only from the objects of `entity` the destination says
    /// may break one (``RuleNarrowing``); nil when it cannot say.
    private func narrowedFailures(_ entity: EntityDescription, in destination: any PersistentStore, relationshipsOnly: Bool = false,
                                  check: (ObjectRecord) throws -> [ValidationFailure]) throws -> [ValidationFailure]? {
        guard let narrowing = destination as? any RuleNarrowing else { return nil }
        var failures: [ValidationFailure] = []
        var after: Int64?
        while true {
            let page = relationshipsOnly ? try narrowing.objectsThatMayBreakRelationshipRules(of: entity.name, after: after, limit: batchSize)
                : try narrowing.objectsThatMayBreakRules(of: entity.name, after: after, limit: batchSize)
            guard let page else { return nil }
            failures += try page.flatMap(check)
            guard page.count == batchSize, let last = page.last else { return failures }
            after = last.key.primaryKey
        }
    }

    /// The rules `record`, an object of `entity` in `destination`, breaks: its attributes' (with
    /// `checkingAttributes`) and, with `relationships`, its relationships', a to-many counted by
    /// `members` (nil: read from the store), a to-one counting only when the object it names is
    /// there (`targets`: a store may keep a key whose object is gone).
    private func brokenRules(of record: ObjectRecord, _ entity: EntityDescription, in destination: any PersistentStore,
                             checkingAttributes: Bool = true, relationships: Bool, targets: ExistingKeys,
                             members: (Relationship) -> Int? = { _ in nil }) throws -> [ValidationFailure] {
        if relationships {
            return try ObjectValidator.failures(of: record, entity: entity, id: destination.objectID(for: record.key),
                                                checkingAttributes: checkingAttributes) { relationship in
                if relationship.isToMany { return try members(relationship) ?? destination.relatedKeys(of: record.key, relationship: relationship.name).count }
                guard let target = record.toOne[relationship.name] else { return 0 }
                return try targets.contains(target) ? 1 : 0
            }
        }
        return entity.layout.attributes.flatMap { attribute in
            ObjectValidator.check(attribute, record.attributes[attribute.name]).map { rule, message in
                ValidationFailure(objectID: destination.objectID(for: record.key), property: attribute.name, rule: rule, message: message)
            }
        }
    }

    /// Whether the mappings move every object of one model as it is, keeping its key: each
    /// concrete entity mapped once, by a copy (a conversion, an identity migration).
    private func copiesEveryObjectAsIs(_ mappings: [EntityMapping], _ context: MigrationContext) -> Bool {
        guard sourceModel.versionHashes == destinationModel.versionHashes else { return false }
        let entities = sourceModel.entityDescriptions.filter { !$0.isAbstract }.map(\.name)
        return Set(mappings.compactMap(\.sourceEntity)) == Set(entities) && mappings.count == entities.count
            && mappings.allSatisfy { m in context.keepsKeys(m) && SlotProgram(m, context: context)?.copiesAsIs == true }
    }

    /// Phases 1 and 2 by the destination itself (``BulkCopying``), when the mappings copy every
    /// object as it is (`copiesAsIs`, ``copiesEveryObjectAsIs(_:_:)``) and the destination can copy
    /// from the source; the destination narrows the rule checks of entities with attribute rules
    /// beside the copy where it can. Returns the objects copied per entity and the keys of the
    /// objects that may break a rule by the entities narrowed, or nil (nothing written).
    private func bulkCopy(_ mappings: [EntityMapping], _ context: MigrationContext,
                          copiesAsIs: Bool) throws -> (counts: [String: Int], mayBreakRules: [String: [Int64]])? {
        let entities = sourceModel.entityDescriptions.filter { !$0.isAbstract }.map(\.name)
        guard usesBulkCopy, copiesAsIs, let copier = context.destinationStore as? any BulkCopying,
              copier.canCopyObjects(of: entities, from: context.sourceStore) else {
            logger.debug("bulk copy: not used (\(usesBulkCopy ? "the mapping changes objects, or the destination cannot copy from this source" : "turned off")); objects move in batches of \(batchSize)")
            return nil
        }
        logger.debug("bulk copy: the destination copies every object of \(entities.count) entities itself")
        let relationships = (copier as? any RuleNarrowing)?.narrowsRelationshipRules == true
        let narrowing = entities.filter { name in
            destinationModel.entity(named: name).map { ObjectValidator.hasAttributeRules($0) || (relationships && ObjectValidator.hasRelationshipRules($0)) } == true
        }
        return try step(mappings[0], .createObjects, nil) { try copier.copyObjects(of: entities, from: context.sourceStore, narrowing: narrowing) }
    }

    /// Phase 3: every destination object, whichever mapping or policy made it; an entity in
    /// `attributeFailures` had its attributes checked already (those are the rules broken);
    /// `counts` are destination objects per entity already known (progress totals). Returns
    /// whether every object kept its key, and the destination's objects per concrete entity.
    private func validate(_ mappings: [EntityMapping], _ context: MigrationContext, destination: any PersistentStore,
                          attributeFailures: [String: [ValidationFailure]], relationshipsChecked: Set<String> = [],
                          counts known: [String: Int] = [:]) throws -> (keepsKeys: Bool, counts: [String: Int]) {
        var failures: [ValidationFailure] = []
        var validated: Set<String> = []
        var counts = known
        // An entity whose every object came from compiled mappings had its attributes checked in phase 1.
        func entityFailures(_ entity: String, _ m: EntityMapping) throws -> [ValidationFailure] {
            guard let description = destinationModel.entity(named: entity), !description.isAbstract else { return [] }
            let total = try counts[entity] ?? step(m, .validate, nil) { try destination.objectCount(exactly: entity) }
            counts[entity] = total
            guard let checked = attributeFailures[entity], !context.insertedOneByOne.contains(entity) else {
                return try validate(description, mapping: m, destination: destination, checkingAttributes: true, total: total)
            }
            if relationshipsChecked.contains(entity) {
                report(MigrationProgress(mapping: m.name, phase: .validate, completed: total, total: total))
                return checked
            }
            return try checked + validate(description, mapping: m, destination: destination, checkingAttributes: false, total: total)
        }
        for m in mappings {
            if let d = m.destinationEntity, validated.insert(d).inserted { failures += try entityFailures(d, m) }
            failures += try step(m, .validate, nil) { try policy(m).performCustomValidation(m, context: context) }
        }
        if let last = mappings.last {
            for entity in destinationModel.entityNames where validated.insert(entity).inserted {
                failures += try entityFailures(entity, last)
            }
        }
        guard failures.isEmpty else {
            let shown = failures.prefix(5).map(\.description).joined(separator: "; ")
            throw MigrationError(.validationFailed, "\(failures.count) destination object\(failures.count == 1 ? "" : "s") failed validation: \(shown)",
                                 phase: .validate, validationFailures: failures)
        }
        for m in mappings { try step(m, .validate, nil) { try policy(m).endEntityMapping(m, context: context) } }
        return (context.keepsEveryKey, counts)
    }

    /// Phase 3 for one entity's `total` objects. With `checkingAttributes` false only relationships
    /// are checked, and an entity none of whose relationships has a rule is not read at all.
    private func validate(_ description: EntityDescription, mapping m: EntityMapping, destination: any PersistentStore,
                          checkingAttributes: Bool, total: Int) throws -> [ValidationFailure] {
        let entity = description.name
        guard checkingAttributes || ObjectValidator.hasRelationshipRules(description) else {
            report(MigrationProgress(mapping: m.name, phase: .validate, completed: total, total: total))
            return []
        }
        let targets = ExistingKeys(destination)
        // Relationships alone, in a store that narrows their rules: only the objects it names are read.
        if !checkingAttributes, (destination as? any RuleNarrowing)?.narrowsRelationshipRules == true,
           let narrowed = try step(m, .validate, nil, {
               try narrowedFailures(description, in: destination, relationshipsOnly: true) {
                   try brokenRules(of: $0, description, in: destination, checkingAttributes: false, relationships: true, targets: targets)
               }
           }) {
            report(MigrationProgress(mapping: m.name, phase: .validate, completed: total, total: total))
            return narrowed
        }
        var failures: [ValidationFailure] = []
        var done = 0
        // The to-many relationships with a rule are counted a batch at a time (one read per
        // relationship per batch where the store can), not object by object.
        let counted = description.storedRelationships.filter { $0.isToMany && ObjectValidator.hasRule($0) }
        for batch in destination.batches(of: entity, size: batchSize) {
            try checkCancelled(m, .validate)
            let records = try step(m, .validate, nil) { try batch.get() }
            var counts: [String: [Int]] = [:]
            for relationship in counted {
                counts[relationship.name] = try step(m, .validate, nil) {
                    try destination.orderedMembers(of: records.map(\.key), relationship: relationship.name).map(\.keys.count)
                }
            }
            for (row, record) in records.enumerated() {
                failures += try brokenRules(of: record, description, in: destination, checkingAttributes: checkingAttributes, relationships: true,
                                            targets: targets) { counts[$0.name]?[row] ?? 0 }
            }
            done += records.count
            report(MigrationProgress(mapping: m.name, phase: .validate, completed: done, total: total))
        }
        return failures
    }
}

extension StoreCoordinator {
    /// Converts the store at `url` to a new store of another type at
    /// `destination`, like Core Data's `migratePersistentStore`: a migration
    /// with the identity mapping, streamed, the source untouched.
    ///
    /// - Throws: ``MigrationError``.
    public func migrateStore(at url: URL, type: String, to destination: URL, type destinationType: String,
                             progress: (@Sendable (MigrationProgress) -> Void)? = nil) throws {
        let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model), progress: progress)
        try manager.migrateStore(at: url, type: try registry.type(named: type), to: destination, type: try registry.type(named: destinationType))
    }
}

extension EntityDescription {
    /// The to-one relationships with a rule (required): each object's must name an object there is.
    fileprivate var ruledToOnes: [Relationship] { storedRelationships.filter { !$0.isToMany && ObjectValidator.hasRule($0) } }
}

extension MigrationManager {
    /// `mappings` in their order, except that a mapping whose source objects' required to-ones
    /// name objects another of them reads comes after that one where it can (not around a
    /// cycle): a required to-one is then checked against the keys read, without a lookup.
    static func targetsFirst(_ mappings: [EntityMapping], _ model: ManagedObjectModel) -> [EntityMapping] {
        // The source entities each mapping's required to-ones name, but its own.
        let needed = Dictionary(mappings.map { m -> (String, Set<String>) in
            guard let entity = m.sourceEntity.flatMap({ model.entity(named: $0) }) else { return (m.name, []) }
            let targets = entity.ruledToOnes.flatMap { model.entity(named: $0.destination)?.kindNames ?? [] }
            return (m.name, Set(targets).subtracting([entity.name]))
        }, uniquingKeysWith: { a, _ in a })
        var left = mappings, placed: [EntityMapping] = []
        while !left.isEmpty {
            let next = left.firstIndex { m in
                !left.contains { $0.name != m.name && $0.sourceEntity.map(needed[m.name]!.contains) == true }
            } ?? 0
            placed.append(left.remove(at: next))
        }
        return placed
    }
}

/// Whether the objects keys name exist in a store (``PersistentStore/existingKeys(among:)``), each
/// looked up once: the keys found are kept, a bit per primary key of each entity up to 2²⁴ (2 MiB
/// an entity at most; 25 KiB for 200,000 keys), and beyond in a set of up to 100,000 (then
/// forgotten and found again), so a batch naming a few targets many times reads each once, in
/// memory that hardly grows with the store. A class: a copy of its keys, made by any access that
/// copies a value (a `lazy` property's getter and setter), would cost them all at every key found.
final class ExistingKeys {
    let store: any PersistentStore
    /// By entity, bit `k % 64` of word `k / 64` for primary key `k`.
    private var bits: [String: [UInt64]] = [:]
    private var others: Set<ObjectKey> = []
    private static let bitLimit: Int64 = 1 << 24

    init(_ store: any PersistentStore) { self.store = store }

    /// Keys found to exist in the store by a lookup made elsewhere, so that ``contains(_:)`` takes
    /// them without one.
    func add(_ keys: Set<ObjectKey>) {
        let outside = keys.filter { !Self.holdsAsBits($0.primaryKey) }
        if others.count + outside.count > 100_000 { others.removeAll(keepingCapacity: true) }
        others.formUnion(outside)
        for (entity, held) in Dictionary(grouping: keys.filter { Self.holdsAsBits($0.primaryKey) }, by: \.entity) {
            setBits(entity, held.map(\.primaryKey))
        }
    }

    /// Objects of `entity` read from the store: they exist.
    func add(entity: String, primaryKeys: [Int64]) {
        guard primaryKeys.allSatisfy(Self.holdsAsBits) else { return add(Set(primaryKeys.map { ObjectKey(entity, $0) })) }
        setBits(entity, primaryKeys)
    }

    /// Whether a key found is kept as a bit (else in the set, which forgets).
    static func holdsAsBits(_ primaryKey: Int64) -> Bool { (1..<bitLimit).contains(primaryKey) }

    /// Sets the bits of `primaryKeys` (each held as a bit) of `entity`'s objects.
    private func setBits(_ entity: String, _ primaryKeys: [Int64]) {
        guard let last = primaryKeys.max() else { return }
        let count = bits[entity, default: []].count, words = Int(last >> 6) + 1
        if count < words {
            // Grown by half at least, never past the bits for 2²⁴ keys.
            let grown = Swift.min(Swift.max(words, count + count / 2), Int(Self.bitLimit >> 6))
            bits[entity, default: []].append(contentsOf: repeatElement(0, count: grown - count))
        }
        bits[entity, default: []].withUnsafeMutableBufferPointer { bits in
            for key in primaryKeys { bits[Int(key >> 6)] |= 1 << UInt64(key & 63) }
        }
    }

    func contains(_ key: ObjectKey) throws -> Bool {
        if Self.holdsAsBits(key.primaryKey) {
            if let words = bits[key.entity], Int(key.primaryKey >> 6) < words.count,
               words[Int(key.primaryKey >> 6)] & (1 << UInt64(key.primaryKey & 63)) != 0 { return true }
        } else if others.contains(key) {
            return true
        }
        let existing = try store.existingKeys(among: [key])
        add(existing)
        return !existing.isEmpty
    }
}
