import Foundation
import ObjectModel
import ObjectStore

/// One write transaction over a store's rows: what it reads (``RowSource``) and the few writes
/// every change comes down to (rows put and removed, key counters, history). A
/// ``RowWritingStore`` runs its saves through one.
public protocol RowWriter: RowSource {
    /// Puts `row` as the row of `key`, replacing any.
    mutating func putRow(_ row: StoredRow, for key: ObjectKey) throws
    /// Removes the row of `key` (nothing when there is none).
    mutating func removeRow(_ key: ObjectKey) throws
    /// The last primary key handed out in the hierarchy whose root is `root` (0 when none was).
    func lastKey(of root: String) throws -> Int64
    /// Records `last` as the last primary key handed out in `root`'s hierarchy.
    mutating func setLastKey(_ last: Int64, of root: String) throws
    /// Appends `record`, when there is one, to the store's history under the next token.
    mutating func appendHistory(_ record: HistoryRecord?) throws
    /// Raises the last history token handed out to `token` (nothing when it is already there or beyond).
    mutating func raiseHistoryToken(to token: Int64) throws
    /// Deletes the history through `token`; returns how many transactions went.
    mutating func deleteHistory(through token: Int64) throws -> Int
}

extension RowWriter {
    /// Writes a validated change set (``RowSource/writes(for:model:completing:)``): its rows,
    /// its inverse sides completed when `completing`, and the key counters raised to its keys.
    public mutating func apply(_ changes: ChangeSet, model: ManagedObjectModel, completing: Bool = true) throws {
        let writes = try writes(for: changes, model: model, completing: completing)
        for key in writes.deleted { try removeRow(key) }
        for (key, row) in writes.put { try putRow(row, for: key) }
        for (root, last) in writes.lastKeys where last > (try lastKey(of: root)) { try setLastKey(last, of: root) }
    }
}

/// A ``TransactionalStore`` whose writes go through a ``RowWriter``: the backend supplies the
/// write transaction (``writeRows(_:)``) and gets saves (checked, inverse sides completed,
/// history recorded), key allocation's write and the history's writes, all alike.
///
/// LMDB's stores and the in-memory and atomic stores (``RecordTablesStore``) are such stores.
public protocol RowWritingStore: TransactionalStore {
    /// The write transaction a backend gives.
    associatedtype Writer: RowWriter
    /// Runs `body` in one write transaction of the store's rows, all or nothing, and makes
    /// what it wrote durable as the store's options say. The backend's part of the skeleton: what
    /// `body` writes is not checked (a lowered key counter hands out keys in use), so an
    /// application saves through `PersistentStore.save(_:)` instead.
    /// - Throws: `StoreError` with code `readOnly` or `closed`, or what `body` throws.
    func writeRows<T>(_ body: (inout Writer) throws -> T) throws -> T
    /// Whether writes record history, and their default author.
    var historyPolicy: HistoryPolicy { get }
}

extension RowWritingStore {
    public func save(_ changes: ChangeSet) throws {
        try save(changes, checkingReferences: true)
    }

    /// Inserted as a change set of inserts, checked against other objects with `checkingReferences`.
    public func bulkInsert(_ records: [ObjectRecord], checkingReferences: Bool) throws {
        try save(ChangeSet(inserted: records), checkingReferences: checkingReferences)
    }

    /// Saves `changes` in one write transaction: checked against the rows
    /// (``RowSource/validate(_:model:storeID:checkingReferences:)``), written, and recorded in the
    /// history. Without `checkingReferences` (a migration's inserts, `bulkInsert`) nothing is
    /// checked against other objects and no inverse side is completed: not for applications'
    /// updates and deletes, so not public.
    func save(_ changes: ChangeSet, checkingReferences: Bool) throws {
        try writeRows { rows in
            try rows.validate(changes, model: model, storeID: identifier, checkingReferences: checkingReferences)
            try rows.apply(changes, model: model, completing: checkingReferences)
            try rows.appendHistory(historyPolicy.record(for: changes))
        }
    }

    public func withLastKey<T>(of root: String, _ body: (inout Int64) throws -> T) throws -> T {
        try writeRows { rows in
            var last = try rows.lastKey(of: root)
            let result = try body(&last)
            try rows.setLastKey(last, of: root)
            return result
        }
    }

    @discardableResult
    public func deleteHistory(through token: Int64) throws -> Int {
        try writeRows { try $0.deleteHistory(through: token) }
    }

    public func continueHistory(after token: Int64, recording record: HistoryRecord?) throws {
        try writeRows { rows in
            try rows.raiseHistoryToken(to: token)
            try rows.appendHistory(record)
        }
    }
}
