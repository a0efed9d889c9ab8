import Foundation
import ObjectModel
import ObjectStore

/// A store that keeps its objects in ``RecordTables``: it supplies locked read access to them
/// (``readTables(_:)``) and write transactions over them (``RowWritingStore/writeRows(_:)``, all or
/// nothing, durable as the store's options say), and gets the whole contract's reads and writes.
///
/// The in-memory and atomic-file stores are such stores; they differ only in
/// what a write does besides changing the tables (the atomic store rewrites its file).
public protocol RecordTablesStore: RowWritingStore where Writer == RecordTables {
    /// Runs `body` on the tables, under the store's lock.
    /// - Throws: `StoreError` with code `closed` once the store is closed.
    func readTables<T>(_ body: (RecordTables) throws -> T) throws -> T
}

extension RecordTablesStore {
    public func metadata() throws -> StoreMetadata {
        try readTables { $0.metadata }
    }

    public func setMetadata(_ metadata: StoreMetadata) throws {
        try writeRows { $0.metadata = metadata }
    }

    /// The tables, under the lock: a short read (a record, a relationship, a batch) holds it
    /// rather than a copy, which a save beside it would have to duplicate.
    public func readRows<T>(_ body: (any RowSource) throws -> T) throws -> T {
        try readTables { try body($0) }
    }

    /// Evaluated on a copy of the tables (copy-on-write, so cheap) outside the lock: a long
    /// fetch does not hold saves up.
    public func fetch(_ request: FetchRequest) throws -> [ObjectRecord] {
        try readTables { $0 }.fetch(request, model: model)
    }

    /// Outside the lock, as `fetch(_:)`.
    public func count(_ request: FetchRequest) throws -> Int {
        try readTables { $0 }.count(request, model: model)
    }

    public func lastKey(of root: String) throws -> Int64 {
        try readTables { $0.lastKey(of: root) }
    }

    public func history(after token: Int64?, limit: Int) throws -> [StoreTransaction] {
        try readTables { try $0.history(after: token, limit: limit, store: identifier, place: url?.path ?? storeType) }
    }

    public func lastHistoryToken() throws -> Int64 {
        try readTables { $0.lastHistoryToken }
    }

    /// Records that fit their entities' layouts (no to-many relationships) are laid out as one
    /// batch per entity and inserted as the batch form inserts them; others are saved as a
    /// change set of inserts.
    public func bulkInsert(_ records: [ObjectRecord], checkingReferences: Bool) throws {
        guard let batches = RecordBatch.grouping(records, model: model) else {
            return try save(ChangeSet(inserted: records), checkingReferences: checkingReferences)
        }
        try writeRows { tables in
            try tables.insert(batches, model: model, checkingReferences: checkingReferences, file: url?.path ?? storeType)
            tables.appendHistory(historyPolicy.record(inserting: records.map(\.key)))
        }
    }

    /// A batch laid out by the store's own model, carrying no to-many lists, is checked and stored
    /// by slot (``RecordTables/insert(_:model:checkingReferences:file:)``); any other goes through
    /// the record form.
    public func bulkInsert(_ batch: RecordBatch, checkingReferences: Bool) throws {
        guard model.entity(named: batch.entity.name) === batch.entity, batch.toMany.isEmpty else {
            return try bulkInsert(batch.records, checkingReferences: checkingReferences)
        }
        try writeRows { tables in
            try tables.insert([batch], model: model, checkingReferences: checkingReferences, file: url?.path ?? storeType)
            tables.appendHistory(historyPolicy.record(inserting: (0..<batch.count).map(batch.key(at:))))
        }
    }
}

extension RecordTablesStore {
    /// A copy of the tables as they are now (copy-on-write: it costs nothing until the store changes).
    public func snapshot() throws -> any PersistentStore {
        try tablesSnapshot()
    }

    /// A read-only store over a copy of the tables as they are now: what ``snapshot()`` returns
    /// by default, for a store that does something first (the in-memory store writes pending metadata).
    public func tablesSnapshot() throws -> any PersistentStore {
        RecordTablesSnapshot(of: self, tables: try readTables { $0 })
    }
}

/// A read-only store over a copy of another's tables: the view ``RecordTablesStore/snapshot()`` returns.
final class RecordTablesSnapshot: RecordTablesStore {
    let storeType: String
    let url: URL?
    let identifier: UUID
    let model: ManagedObjectModel
    var isReadOnly: Bool { true }
    var historyPolicy: HistoryPolicy { HistoryPolicy(StoreOptions(readOnly: true)) }
    private let state: StoreState<RecordTables>

    init(of store: any PersistentStore, tables: RecordTables) {
        storeType = store.storeType
        url = store.url
        identifier = store.identifier
        model = store.model
        state = StoreState(tables, url: store.url, readOnly: true, snapshot: true)
    }

    func readTables<T>(_ body: (RecordTables) throws -> T) throws -> T {
        try state.withLock { try body($0) }
    }

    func writeRows<T>(_ body: (inout RecordTables) throws -> T) throws -> T {
        try state.withLockForWriting(body)
    }

    func close() throws {
        try state.close()
    }
}
