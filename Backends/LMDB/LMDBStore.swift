import CLMDB
import Foundation
import ObjectModel
import ObjectStore
import StoreToolkit
import Synchronization

/// A store in an LMDB environment through the system liblmdb: one data file
/// (`MDB_NOSUBDIR`) plus its `-lock` file.
///
/// Named databases hold the metadata and the format version (`meta`), the key
/// counters (`counters`), each entity's number and value order (`schema`, see
/// ``LMDBRowFormat``) and one table of rows per entity (`rows/<Entity>`, keyed by
/// primary key in big-endian order, so a cursor walks them in key order); each row
/// holds its values in the recorded order and its relationships' keys
/// (`docs/lmdb-format.md`). Every save is one write transaction; the map grows
/// on demand when it is full (`StoreOptions.settings["map_size"]` sets the
/// first size of a new store, in bytes; 64 MiB by default).
public final class LMDBStore: RowWritingStore, IntegrityChecking, WholeRowInserting {
    /// The registered type name, `lmdb`.
    public static let typeName = "lmdb"

    /// Registers the `lmdb` store type (with `registry`, the shared one by default).
    public static func register(in registry: StoreTypeRegistry = .shared) {
        registry.register(LMDBStoreType())
    }

    public var storeType: String { Self.typeName }
    public var url: URL? { fileURL }
    public let identifier: UUID
    public let model: ManagedObjectModel
    public let isReadOnly: Bool

    let fileURL: URL
    /// Whether writes record history, and their default author.
    public let historyPolicy: HistoryPolicy
    /// Entity numbers and value order, as the store records them.
    let format: LMDBRowFormat
    /// The environment while the store is open. Calls take it out and run their transactions in
    /// it at once: reads in parallel, writes one at a time (``LMDBEnvironment``).
    private let state: StoreState<LMDBEnvironment>

    init(url: URL, model: ManagedObjectModel, options: StoreOptions) throws {
        fileURL = url
        self.model = model
        isReadOnly = options.readOnly
        historyPolicy = HistoryPolicy(options)
        let names = LMDBLayout.databaseNames(model)
        let environment: LMDBEnvironment
        let metadata: StoreMetadata
        if FileManager.default.fileExists(atPath: url.path) {
            (environment, metadata) = try LMDBStoreType.openExisting(url, readOnly: options.readOnly, deferSync: options.deferredDurability)
            do {
                try LMDBStoreType.mapping(url) { try environment.read { try LMDBRowFormat.checkVersion($0, url: url) } }
                try metadata.checkCompatible(with: model, url: url)
                format = try LMDBStoreType.mapping(url) {
                    try environment.openDatabases(names, create: !options.readOnly)
                    return try environment.read { try LMDBRowFormat(reading: $0, model: model, url: url) }
                }
            } catch {
                environment.close()
                throw error
            }
        } else {
            try options.checkCreatable("LMDB", url: url)
            do {
                let mapSize = options.settings["map_size"].flatMap(Int.init)
                environment = try LMDBStoreType.mapping(url) { try LMDBEnvironment(path: url.path, readOnly: false, mapSize: mapSize, deferSync: options.deferredDurability) }
                environment.checksummed = true   // a new store is of the current version, which has checksums
                metadata = try StoreMetadata(storeType: Self.typeName, model: model)
                let newFormat = LMDBRowFormat(model: model)
                format = newFormat
                try LMDBStoreType.mapping(url) {
                    try environment.openDatabases(names, create: true)
                    try environment.write { txn in
                        try txn.put(LMDBLayout.meta, LMDBLayout.metadataKey, try PropertyListValue.binaryPropertyList(metadata.values))
                        try newFormat.write(txn)
                    }
                }
            } catch {
                try? LMDBStoreType().destroy(at: url)
                throw error
            }
        }
        identifier = metadata.storeUUID ?? UUID()
        state = StoreState(environment, url: url, readOnly: options.readOnly)
    }

    /// The environment, or ``StoreError/Code/closed``.
    func environment() throws -> LMDBEnvironment {
        try state.open()
    }

    // MARK: Contract

    public func metadata() throws -> StoreMetadata {
        try read { txn in try LMDBStoreType.readMetadata(txn, url: fileURL) }
    }

    public func readRows<T>(_ body: (any RowSource) throws -> T) throws -> T {
        try read { try body(view($0)) }
    }

    public func lastKey(of root: String) throws -> Int64 {
        try read { try LMDBLayout.counter($0, root) }
    }

    /// One write transaction of the environment, its rows seen and written through an ``LMDBView``.
    public func writeRows<T>(_ body: (inout LMDBView) throws -> T) throws -> T {
        try write { txn in
            var view = self.view(txn)
            return try body(&view)
        }
    }

    public func setMetadata(_ metadata: StoreMetadata) throws {
        try write { txn in try txn.put(LMDBLayout.meta, LMDBLayout.metadataKey, try PropertyListValue.binaryPropertyList(metadata.values)) }
    }

    func view(_ txn: LMDBTransaction) -> LMDBView { LMDBView(txn: txn, file: fileURL.path, format: format) }

    /// An unchecked batch laid out by the store's own model is encoded slot by slot, with the
    /// to-many lists it carries (``WholeRowInserting``), in one write transaction, appended where
    /// its keys follow the entity's last one; others take the record path.
    public func bulkInsert(_ batch: RecordBatch, checkingReferences: Bool) throws {
        if checkingReferences || model.entity(named: batch.entity.name) !== batch.entity {
            return try bulkInsert(batch.records, checkingReferences: checkingReferences)
        }
        guard !batch.isEmpty else { return }
        try write { txn in
            try view(txn).insert(batch, model: model)
            try LMDBLayout.appendHistory(historyPolicy.record(inserting: (0..<batch.count).map(batch.key(at:))), txn)
        }
    }

    public func history(after token: Int64?, limit: Int) throws -> [StoreTransaction] {
        try openHistory()
        return try read { try LMDBLayout.history($0, after: token, limit: limit, store: identifier, url: fileURL) }
    }

    public func lastHistoryToken() throws -> Int64 {
        try openHistory()
        return try read { try LMDBLayout.counter($0, LMDBLayout.historyCounter) }
    }

    /// A read-only store opened before any writer made the history database opens it once one did.
    private func openHistory() throws {
        guard isReadOnly else { return }
        let environment = try environment()
        try LMDBStoreType.mapping(fileURL) {
            if !environment.hasDatabase(LMDBLayout.history) { try environment.openDatabases([LMDBLayout.history], create: false) }
        }
    }

    /// Every page the file's current state reaches, walked again (`deep`; opening walks them too).
    public func integrityProblems(deep: Bool) throws -> [String] {
        try LMDBStoreType.integrityProblems(fileURL, deep: deep)
    }

    /// The environment's current map size in bytes (it doubles whenever a write finds it full).
    public var mapSize: Int { (try? environment().mapSize) ?? 0 }

    /// Closes the store: calls under way on other threads end first, then what was committed
    /// with deferred durability is made durable (a failure is an error). Its environment (the map
    /// and the lock file) stays open while a snapshot of it is open, and closes with the last of them.
    public func close() throws {
        guard let closing = state.take() else { return }
        closing.drain()
        try LMDBStoreType.mapping(fileURL) { try closing.sync() }
    }

    public func snapshot() throws -> any PersistentStore {
        let environment = try environment()
        let transaction = try LMDBStoreType.mapping(fileURL) { try environment.snapshot() }
        return LMDBSnapshot(of: self, transaction: transaction)
    }

    private func read<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        let environment = try environment()
        return try LMDBStoreType.mapping(fileURL) { try environment.read(body) }
    }

    private func write<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        let environment = try state.openForWriting()
        return try LMDBStoreType.mapping(fileURL) { try environment.write(body) }
    }
}

extension LMDBStore: ObjectCounting {
    /// From the entity database's own statistics (`mdb_stat`): no key is read.
    public func objectCount(of entity: String) throws -> Int {
        guard model.entity(named: entity) != nil else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        return try read { try view($0).rowCount(of: entity) }
    }
}

extension LMDBSnapshot: ObjectCounting {
    func objectCount(of entity: String) throws -> Int {
        guard model.entity(named: entity) != nil else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        return try read { try $0.rowCount(of: entity) }
    }
}

/// Names and encodings of the store's named databases.
enum LMDBLayout {
    static let meta = "meta"
    static let counters = "counters"
    static let metadataKey = Data("metadata".utf8)

    static func rows(_ entity: String) -> String { "rows/" + entity }

    /// The persistent history: each transaction's record (``HistoryRecord/encoded()``) under its token (``key(_:)``).
    static let history = "history"
    /// The key in `counters` of the last history token handed out (`#` never starts an entity's name).
    static let historyCounter = "#history"

    static func databaseNames(_ model: ManagedObjectModel) -> [String] {
        [meta, counters, LMDBRowFormat.schema, history] + model.entityNames.map(rows)
    }

    /// Writes `record` (when there is one) under the next token, inside `txn`.
    static func appendHistory(_ record: HistoryRecord?, _ txn: LMDBTransaction) throws {
        guard let record else { return }
        let token = try counter(txn, historyCounter) + 1
        try txn.put(counters, Data(historyCounter.utf8), counterValue(token))
        try txn.put(history, key(token), record.encoded(), flags: .append)
    }

    static func history(_ txn: LMDBTransaction, after token: Int64?, limit: Int, store: UUID, url: URL) throws -> [StoreTransaction] {
        var found: [StoreTransaction] = []
        guard limit > 0 else { return found }
        try txn.walk(history, from: key((token ?? 0) + 1)) { keyBytes, value in
            guard let token = primaryKey(keyBytes) else { throw StoreError(.corrupt, "a history key is \(keyBytes.count) bytes, not 8", url: url) }
            let record = try HistoryRecord(decoding: value, place: "\(url.path), transaction \(token)")
            found.append(record.transaction(HistoryToken(store: store, value: token)))
            return found.count < limit
        }
        return found
    }

    static func deleteHistory(through token: Int64, _ txn: LMDBTransaction) throws -> Int {
        var doomed: [Data] = []
        try txn.walk(history, from: nil) { keyBytes, _ in
            guard let found = primaryKey(keyBytes), found <= token else { return false }
            doomed.append(Data(keyBytes))
            return true
        }
        for key in doomed { _ = try txn.delete(history, key) }
        return doomed.count
    }

    /// A primary key as 8 big-endian bytes with the sign bit flipped: byte order is key order.
    static func key(_ pk: Int64) -> Data {
        withUnsafeBytes(of: (UInt64(bitPattern: pk) ^ (1 << 63)).bigEndian) { Data($0) }
    }

    static func primaryKey<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Int64? {
        guard bytes.count == 8 else { return nil }
        let raw = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int64(bitPattern: raw ^ (1 << 63))
    }

    static func counterValue(_ value: Int64) -> Data { withUnsafeBytes(of: value.littleEndian) { Data($0) } }

    static func counter(_ txn: LMDBTransaction, _ root: String) throws -> Int64 {
        guard let data = try txn.get(counters, Data(root.utf8)) else { return 0 }
        guard data.count == 8 else { throw StoreError(.corrupt, "the key counter of \(root) is \(data.count) bytes, not 8") }
        return data.withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(as: Int64.self)) }
    }
}

/// The rows of one transaction, for the shared row-store semantics.
/// The rows of one transaction of an LMDB store: read, and in a write transaction written
/// (``LMDBStore/writeRows(_:)``, unchecked: for the store's own saves).
public struct LMDBView: RowWriter {
    let txn: LMDBTransaction
    let file: String
    let format: LMDBRowFormat

    public func putRow(_ row: StoredRow, for key: ObjectKey) throws {
        let entity = try format.format(of: key.entity, url: URL(filePath: file))
        try txn.put(LMDBLayout.rows(key.entity), LMDBLayout.key(key.primaryKey), try format.encode(row, of: entity))
    }

    public func removeRow(_ key: ObjectKey) throws {
        _ = try txn.delete(LMDBLayout.rows(key.entity), LMDBLayout.key(key.primaryKey))
    }

    public func lastKey(of root: String) throws -> Int64 {
        try LMDBLayout.counter(txn, root)
    }

    public func setLastKey(_ last: Int64, of root: String) throws {
        try txn.put(LMDBLayout.counters, Data(root.utf8), LMDBLayout.counterValue(last))
    }

    public func appendHistory(_ record: HistoryRecord?) throws {
        try LMDBLayout.appendHistory(record, txn)
    }

    public func raiseHistoryToken(to token: Int64) throws {
        if token > (try lastKey(of: LMDBLayout.historyCounter)) { try setLastKey(token, of: LMDBLayout.historyCounter) }
    }

    public func deleteHistory(through token: Int64) throws -> Int {
        try LMDBLayout.deleteHistory(through: token, txn)
    }

    public func row(_ key: ObjectKey) throws -> StoredRow? {
        let entity = try format.format(of: key.entity, url: URL(filePath: file))
        return try txn.withValue(LMDBLayout.rows(key.entity), LMDBLayout.key(key.primaryKey)) { bytes in
            try bytes.map { try format.decode($0, of: entity, file: file) }
        }
    }

    public func exists(_ key: ObjectKey) throws -> Bool {
        try txn.contains(LMDBLayout.rows(key.entity), LMDBLayout.key(key.primaryKey))
    }

    /// `orderedMembers(of:relationship:)` of many objects: of each row only the list is read (the
    /// other values stepped over, none built), its members kept when they exist, as the record
    /// forms keep them.
    public func orderedMembers(of keys: [ObjectKey], relationship name: String, model: ManagedObjectModel) throws -> [OrderedMembers] {
        try keys.map { key in
            guard let relationship = model.entity(named: key.entity)?.relationshipsByName[name], relationship.isToMany,
                  let entityFormat = format.entities[key.entity], let index = entityFormat.toMany.firstIndex(of: name) else {
                return try orderedMembers(of: key, relationship: name, model: model)
            }
            guard let (members, numbers) = try txn.withValue(LMDBLayout.rows(key.entity), LMDBLayout.key(key.primaryKey), { bytes in
                try bytes.map { try format.list($0, at: index, of: entityFormat, file: file) }
            }) else { return OrderedMembers([]) }
            // The list alone as a row, read by the rule every row store reads a list by.
            var row = StoredRow(version: 0, attributes: [:], relationships: [:])
            row.setList(name, members, orderKeys: numbers)
            let kept = try row.members(name, keeping: exists)
            return relationship.isOrdered ? kept : OrderedMembers(kept.keys.sorted())
        }
    }

    /// LMDB counts a database's entries itself: a count reads no key (memory stays flat).
    public func rowCount(of entity: String) throws -> Int {
        try txn.entryCount(LMDBLayout.rows(entity))
    }

    public func primaryKeys(of entity: String, after primaryKey: Int64?, limit: Int?) throws -> [Int64] {
        var keys: [Int64] = []
        try walk(entity, after: primaryKey, limit: limit ?? Int.max) { pk, _ in keys.append(pk) }
        return keys
    }

    /// Walks `entity`'s rows above `primaryKey` with one cursor, at most `limit`.
    private func walk(_ entity: String, after primaryKey: Int64?, limit: Int,
                      _ body: (Int64, UnsafeRawBufferPointer) throws -> Void) throws {
        if primaryKey == Int64.max || limit <= 0 { return }
        var count = 0
        try txn.walk(LMDBLayout.rows(entity), from: primaryKey.map { LMDBLayout.key($0 + 1) }) { key, value in
            guard let pk = LMDBLayout.primaryKey(key) else {
                throw StoreError(.corrupt, "a key of rows/\(entity) is \(key.count) bytes, not 8", url: URL(filePath: file))
            }
            try body(pk, value)
            count += 1
            return count < limit
        }
    }

    /// A batch of a streaming scan, its rows decoded from the cursor (no second lookup).
    public func scan(entity: String, after primaryKey: Int64?, limit: Int, model: ManagedObjectModel) throws -> [ObjectRecord] {
        let entityFormat = try format.format(of: entity, url: URL(filePath: file))
        var records: [ObjectRecord] = []
        try walk(entity, after: primaryKey, limit: limit) { pk, bytes in
            let key = ObjectKey(entity, pk)
            records.append(try record(key, format.decode(bytes, of: entityFormat, file: file), model: model))
        }
        return records
    }

    /// A batch of a streaming scan, read from one cursor, each row's values decoded straight into their slots.
    public func scanBatch(_ description: EntityDescription, after primaryKey: Int64?, limit: Int, model _: ManagedObjectModel) throws -> RecordBatch {
        let entityFormat = try format.format(of: description.name, url: URL(filePath: file))
        var batch = RecordBatch(entity: description, capacity: limit)
        try walk(description.name, after: primaryKey, limit: limit) { pk, bytes in
            try format.decode(bytes, primaryKey: pk, into: &batch, of: entityFormat, file: file, exists: exists)
        }
        return batch
    }

    /// Writes a batch whose references are not checked: checked as every store checks one
    /// (``RecordBatch/checkInsertable(in:)``), every key checked free in its hierarchy, rows
    /// appended while their keys follow the entity's last one.
    func insert(_ batch: RecordBatch, model: ManagedObjectModel) throws {
        try batch.checkInsertable(in: model)
        if !batch.entity.uniquenessConstraints.isEmpty { try checkUniqueness(ChangeSet(inserted: batch.records), model: model, url: URL(filePath: file)) }
        let description = batch.entity
        let entityFormat = try format.format(of: description.name, url: URL(filePath: file))
        let table = LMDBLayout.rows(description.name)
        let root = description.rootName
        let others = model.entity(named: root)!.kindNames.filter { $0 != description.name }
        var last = try txn.lastKey(table).flatMap(LMDBLayout.primaryKey) ?? Int64.min
        var highest: Int64 = 0
        for row in 0..<batch.count {
            let key = batch.key(at: row)
            let inUse = { StoreError(.invalidChange, "cannot insert \(key): primary key \(key.primaryKey) is in use in \(root)'s hierarchy") }
            if try others.contains(where: { try exists(ObjectKey($0, key.primaryKey)) }) { throw inUse() }
            var writer = BinaryWriter()
            try format.encode(row: row, of: batch, format: entityFormat, into: &writer)
            do {
                try txn.put(table, LMDBLayout.key(key.primaryKey), writer.buffer, flags: key.primaryKey > last ? .append : .noOverwrite)
            } catch let error as LMDBError where error.code == MDB_KEYEXIST {
                throw inUse()
            }
            last = max(last, key.primaryKey)
            highest = max(highest, key.primaryKey)
        }
        if highest > (try LMDBLayout.counter(txn, root)) {
            try txn.put(LMDBLayout.counters, Data(root.utf8), LMDBLayout.counterValue(highest))
        }
    }
}

/// A read-only view of an LMDB store at one moment: one read transaction, held until closed.
final class LMDBSnapshot: TransactionalStore, IntegrityChecking {
    var storeType: String { LMDBStore.typeName }
    var url: URL? { fileURL }
    let identifier: UUID
    let model: ManagedObjectModel
    var isReadOnly: Bool { true }

    private let fileURL: URL
    private let format: LMDBRowFormat
    /// The read transaction, shared with the snapshots taken of this one, until it is closed.
    private let shared: StoreState<SharedRead>

    /// One read transaction and the lock of every snapshot that reads through it (a snapshot
    /// and the snapshots taken of it): LMDB lets a read transaction move between threads (the
    /// environment is opened with `MDB_NOTLS`), not serve two at once.
    private final class SharedRead: Sendable {
        let transaction: Mutex<LMDBSnapshotTransaction>
        let environment: LMDBEnvironment
        init(_ transaction: LMDBSnapshotTransaction) {
            environment = transaction.environment
            self.transaction = Mutex(transaction)
        }
    }

    init(of store: LMDBStore, transaction: LMDBSnapshotTransaction) {
        fileURL = store.fileURL
        format = store.format
        identifier = store.identifier
        model = store.model
        shared = StoreState(SharedRead(transaction), url: store.fileURL, readOnly: true, snapshot: true)
    }

    /// The shared transaction, or ``StoreError/Code/closed``.
    private func current() throws -> SharedRead {
        try shared.open()
    }

    private func read<T>(_ body: (LMDBView) throws -> T) throws -> T {
        let read = try current()
        return try LMDBStoreType.mapping(fileURL) {
            // The map does not move while the transaction reads it.
            try read.environment.reading {
                try read.transaction.withLock { transaction in
                    try body(LMDBView(txn: transaction.transaction, file: fileURL.path, format: format))
                }
            }
        }
    }

    private func refuse() -> StoreError { StoreError.readOnly(fileURL, snapshot: true) }

    func readRows<T>(_ body: (any RowSource) throws -> T) throws -> T { try read { try body($0) } }
    func lastKey(of root: String) throws -> Int64 { try read { try LMDBLayout.counter($0.txn, root) } }
    func withLastKey<T>(of root: String, _ body: (inout Int64) throws -> T) throws -> T { throw refuse() }
    func metadata() throws -> StoreMetadata { try read { try LMDBStoreType.readMetadata($0.txn, url: fileURL) } }
    func setMetadata(_ metadata: StoreMetadata) throws { throw refuse() }
    func save(_ changes: ChangeSet) throws { throw refuse() }
    func bulkInsert(_ records: [ObjectRecord], checkingReferences: Bool) throws { throw refuse() }
    func history(after token: Int64?, limit: Int) throws -> [StoreTransaction] {
        try read { try LMDBLayout.history($0.txn, after: token, limit: limit, store: identifier, url: fileURL) }
    }
    func lastHistoryToken() throws -> Int64 { try read { try LMDBLayout.counter($0.txn, LMDBLayout.historyCounter) } }
    func deleteHistory(through token: Int64) throws -> Int { throw refuse() }
    func continueHistory(after token: Int64, recording record: HistoryRecord?) throws { throw refuse() }

    func integrityProblems(deep: Bool) throws -> [String] {
        try LMDBStoreType.integrityProblems(fileURL, deep: deep)
    }

    /// Another view of the same moment.
    func snapshot() throws -> any PersistentStore {
        LMDBSnapshot(of: self, sharing: try current())
    }

    private init(of snapshot: LMDBSnapshot, sharing read: SharedRead) {
        fileURL = snapshot.fileURL
        format = snapshot.format
        identifier = snapshot.identifier
        model = snapshot.model
        shared = StoreState(read, url: snapshot.fileURL, readOnly: true, snapshot: true)
    }

    func close() throws { try shared.close() }
}