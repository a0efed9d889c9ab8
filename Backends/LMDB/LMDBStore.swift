import CLMDB
import Foundation
import ObjectModel
import ObjectStore

/// A store in an LMDB environment through the system liblmdb: one data file
/// (`MDB_NOSUBDIR`) plus its `-lock` file.
///
/// Named databases hold the metadata (`meta`), the key counters (`counters`)
/// and one table of rows per entity (`rows/<Entity>`, keyed by primary key in
/// big-endian order, so a cursor walks them in key order); each row carries
/// its relationships' keys. Every save is one write transaction; the map grows
/// on demand when it is full (`StoreOptions.settings["map_size"]` sets the
/// first size of a new store, in bytes; 64 MiB by default).
public final class LMDBStore: PersistentStore, IntegrityChecking {
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
    /// Guards ``environment``.
    private let lock = NSLock()
    /// The environment. Not Sendable: only ever touched inside `lock`, one thread
    /// at a time, and never escapes a call.
    nonisolated(unsafe) private var environment: LMDBEnvironment?

    init(url: URL, model: ManagedObjectModel, options: StoreOptions) throws {
        fileURL = url
        self.model = model
        isReadOnly = options.readOnly
        let names = LMDBLayout.databaseNames(model)
        let environment: LMDBEnvironment
        let metadata: StoreMetadata
        if FileManager.default.fileExists(atPath: url.path) {
            (environment, metadata) = try LMDBStoreType.openExisting(url, readOnly: options.readOnly, deferSync: options.deferredDurability)
            let compatibility = metadata.compatibility(with: model)
            guard compatibility.isCompatible else {
                environment.close()
                throw StoreError(.incompatibleModel, "the store was made with another model: \(compatibility)",
                                 url: url, compatibility: compatibility)
            }
            try LMDBStoreType.mapping(url) { try environment.openDatabases(names, create: !options.readOnly) }
        } else {
            guard options.createIfMissing, !options.readOnly else { throw StoreError(.notFound, "no LMDB store", url: url) }
            do {
                let mapSize = options.settings["map_size"].flatMap(Int.init)
                environment = try LMDBStoreType.mapping(url) { try LMDBEnvironment(path: url.path, readOnly: false, mapSize: mapSize, deferSync: options.deferredDurability) }
                metadata = try StoreMetadata(storeType: Self.typeName, model: model)
                try LMDBStoreType.mapping(url) {
                    try environment.openDatabases(names, create: true)
                    try environment.write { txn in try txn.put(LMDBLayout.meta, LMDBLayout.metadataKey, try PropertyListValue.binaryPropertyList(metadata.values)) }
                }
            } catch {
                try? LMDBStoreType().destroy(at: url)
                throw error
            }
        }
        identifier = metadata.storeUUID ?? UUID()
        self.environment = environment
    }

    // MARK: Contract

    public func metadata() throws -> StoreMetadata {
        try read { txn in try LMDBStoreType.readMetadata(txn, url: fileURL) }
    }

    public func setMetadata(_ metadata: StoreMetadata) throws {
        try write { txn in try txn.put(LMDBLayout.meta, LMDBLayout.metadataKey, try PropertyListValue.binaryPropertyList(metadata.values)) }
    }

    public func fetch(_ request: FetchRequest) throws -> [ObjectRecord] {
        try read { try LMDBView(txn: $0, file: fileURL.path).fetch(request, model: model) }
    }

    public func count(_ request: FetchRequest) throws -> Int {
        try read { try LMDBView(txn: $0, file: fileURL.path).count(request, model: model) }
    }

    public func record(for key: ObjectKey) throws -> ObjectRecord? {
        try read { try LMDBView(txn: $0, file: fileURL.path).record(for: key, model: model) }
    }

    public func relatedKeys(of key: ObjectKey, relationship: String) throws -> [ObjectKey] {
        try read { try LMDBView(txn: $0, file: fileURL.path).relatedKeys(of: key, relationship: relationship, model: model) }
    }

    public func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord] {
        try read { try LMDBView(txn: $0, file: fileURL.path).scan(entity: entity, after: primaryKey, limit: limit, model: model) }
    }

    public func save(_ changes: ChangeSet) throws {
        try save(changes, checkingReferences: true)
    }

    private func save(_ changes: ChangeSet, checkingReferences: Bool) throws {
        try write { txn in
            let view = LMDBView(txn: txn, file: fileURL.path)
            try view.validate(changes, model: model, storeID: identifier, checkingReferences: checkingReferences)
            let writes = try view.writes(for: changes, model: model, completing: checkingReferences)
            for key in writes.deleted { try txn.delete(LMDBLayout.rows(key.entity), LMDBLayout.key(key.primaryKey)) }
            for (key, row) in writes.put {
                var writer = BinaryWriter()
                writer.row(row)
                try txn.put(LMDBLayout.rows(key.entity), LMDBLayout.key(key.primaryKey), writer.data)
            }
            for (root, last) in writes.lastKeys where last > (try LMDBLayout.counter(txn, root)) {
                try txn.put(LMDBLayout.counters, Data(root.utf8), LMDBLayout.counterValue(last))
            }
        }
    }

    public func allocatePrimaryKeys(entity: String, count: Int) throws -> ClosedRange<Int64> {
        guard let description = model.entity(named: entity) else { throw StoreError(.invalidChange, "no entity named \(entity)") }
        guard count > 0 else { throw StoreError(.invalidChange, "cannot allocate \(count) primary keys") }
        let root = description.rootName
        return try write { txn in
            let first = try LMDBLayout.counter(txn, root) + 1
            let last = first + Int64(count) - 1
            try txn.put(LMDBLayout.counters, Data(root.utf8), LMDBLayout.counterValue(last))
            return first...last
        }
    }

    public func lastAllocatedKey(entity: String) throws -> Int64 {
        guard let root = model.entity(named: entity)?.rootName else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        return try read { try LMDBLayout.counter($0, root) }
    }

    public func bulkInsert(_ records: [ObjectRecord], checkingReferences: Bool) throws {
        try save(ChangeSet(inserted: records), checkingReferences: checkingReferences)
    }

    /// Every page the file's current state reaches, walked again (`deep`; opening walks them too).
    public func integrityProblems(deep: Bool) throws -> [String] {
        try LMDBStoreType.integrityProblems(fileURL, deep: deep)
    }

    /// The environment's current map size in bytes (it doubles whenever a write finds it full).
    public var mapSize: Int { lock.withLock { environment?.mapSize ?? 0 } }

    /// Closes the store. Its environment (the map and the lock file) stays open while a
    /// snapshot of it is open, and closes with the last of them.
    public func close() throws {
        let closing = lock.withLock { () -> LMDBEnvironment? in
            defer { environment = nil }
            return environment
        }
        try LMDBStoreType.mapping(fileURL) { try closing?.sync() }
    }

    public func snapshot() throws -> any PersistentStore {
        let transaction = try LMDBStoreType.mapping(fileURL) {
            try lock.withLock {
                guard let environment else { throw StoreError(.closed, "the store is closed", url: fileURL) }
                return try environment.snapshot()
            }
        }
        return LMDBSnapshot(of: self, transaction: transaction)
    }

    private func read<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        try LMDBStoreType.mapping(fileURL) {
            try lock.withLock {
                guard let environment else { throw StoreError(.closed, "the store is closed", url: fileURL) }
                return try environment.read(body)
            }
        }
    }

    private func write<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        if isReadOnly { throw StoreError(.readOnly, "the store was opened read-only", url: fileURL) }
        return try LMDBStoreType.mapping(fileURL) {
            try lock.withLock {
                guard let environment else { throw StoreError(.closed, "the store is closed", url: fileURL) }
                return try environment.write(body)
            }
        }
    }
}

/// Names and encodings of the store's named databases.
enum LMDBLayout {
    static let meta = "meta"
    static let counters = "counters"
    static let metadataKey = Data("metadata".utf8)

    static func rows(_ entity: String) -> String { "rows/" + entity }

    static func databaseNames(_ model: ManagedObjectModel) -> [String] {
        [meta, counters] + model.entityNames.map(rows)
    }

    /// A primary key as 8 big-endian bytes with the sign bit flipped: byte order is key order.
    static func key(_ pk: Int64) -> Data {
        withUnsafeBytes(of: (UInt64(bitPattern: pk) ^ (1 << 63)).bigEndian) { Data($0) }
    }

    static func primaryKey(_ data: Data) -> Int64? {
        guard data.count == 8 else { return nil }
        let raw = data.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
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
struct LMDBView: RowSource {
    let txn: LMDBTransaction
    let file: String

    func row(_ key: ObjectKey) throws -> StoredRow? {
        guard let data = try txn.get(LMDBLayout.rows(key.entity), LMDBLayout.key(key.primaryKey)) else { return nil }
        var reader = BinaryReader(data: data, file: file)
        return try reader.row()
    }

    func exists(_ key: ObjectKey) throws -> Bool {
        try txn.contains(LMDBLayout.rows(key.entity), LMDBLayout.key(key.primaryKey))
    }

    /// LMDB counts a database's entries itself: a count reads no key (memory stays flat).
    func rowCount(of entity: String) throws -> Int {
        try txn.entryCount(LMDBLayout.rows(entity))
    }

    func primaryKeys(of entity: String, after primaryKey: Int64?, limit: Int?) throws -> [Int64] {
        if primaryKey == Int64.max { return [] }
        let start = primaryKey.map { LMDBLayout.key($0 + 1) }
        return try txn.keys(LMDBLayout.rows(entity), from: start, limit: limit).map { data in
            guard let pk = LMDBLayout.primaryKey(data) else {
                throw StoreError(.corrupt, "a key of rows/\(entity) is \(data.count) bytes, not 8", url: URL(filePath: file))
            }
            return pk
        }
    }
}

/// A read-only view of an LMDB store at one moment: one read transaction, held until closed.
final class LMDBSnapshot: PersistentStore, IntegrityChecking {
    var storeType: String { LMDBStore.typeName }
    var url: URL? { fileURL }
    let identifier: UUID
    let model: ManagedObjectModel
    var isReadOnly: Bool { true }

    private let fileURL: URL
    private let lock = NSLock()
    /// The transaction. Not Sendable: only ever touched inside `lock`, one thread at a time
    /// (the environment is opened with MDB_NOTLS, so a read transaction may move between threads).
    nonisolated(unsafe) private var transaction: LMDBSnapshotTransaction?

    init(of store: LMDBStore, transaction: LMDBSnapshotTransaction) {
        fileURL = store.fileURL
        identifier = store.identifier
        model = store.model
        self.transaction = transaction
    }

    private func read<T>(_ body: (LMDBView) throws -> T) throws -> T {
        try LMDBStoreType.mapping(fileURL) {
            try lock.withLock {
                guard let transaction else { throw StoreError(.closed, "the snapshot is closed", url: fileURL) }
                return try body(LMDBView(txn: transaction.transaction, file: fileURL.path))
            }
        }
    }

    private func refuse() -> StoreError { StoreError(.readOnly, "a snapshot is read-only", url: fileURL) }

    func metadata() throws -> StoreMetadata { try read { try LMDBStoreType.readMetadata($0.txn, url: fileURL) } }
    func setMetadata(_ metadata: StoreMetadata) throws { throw refuse() }
    func fetch(_ request: FetchRequest) throws -> [ObjectRecord] { try read { try $0.fetch(request, model: model) } }
    func count(_ request: FetchRequest) throws -> Int { try read { try $0.count(request, model: model) } }
    func record(for key: ObjectKey) throws -> ObjectRecord? { try read { try $0.record(for: key, model: model) } }
    func relatedKeys(of key: ObjectKey, relationship: String) throws -> [ObjectKey] {
        try read { try $0.relatedKeys(of: key, relationship: relationship, model: model) }
    }
    func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord] {
        try read { try $0.scan(entity: entity, after: primaryKey, limit: limit, model: model) }
    }
    func save(_ changes: ChangeSet) throws { throw refuse() }
    func allocatePrimaryKeys(entity: String, count: Int) throws -> ClosedRange<Int64> { throw refuse() }
    func lastAllocatedKey(entity: String) throws -> Int64 {
        guard let root = model.entity(named: entity)?.rootName else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        return try read { try LMDBLayout.counter($0.txn, root) }
    }
    func bulkInsert(_ records: [ObjectRecord], checkingReferences: Bool) throws { throw refuse() }

    func integrityProblems(deep: Bool) throws -> [String] {
        try LMDBStoreType.integrityProblems(fileURL, deep: deep)
    }

    /// Another view of the same moment.
    func snapshot() throws -> any PersistentStore {
        try lock.withLock {
            guard let transaction else { throw StoreError(.closed, "the snapshot is closed", url: fileURL) }
            return LMDBSnapshot(of: self, sharing: transaction)
        }
    }

    private init(of snapshot: LMDBSnapshot, sharing transaction: LMDBSnapshotTransaction) {
        fileURL = snapshot.fileURL
        identifier = snapshot.identifier
        model = snapshot.model
        self.transaction = transaction
    }

    func close() throws { lock.withLock { transaction = nil } }
}