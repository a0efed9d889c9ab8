import Foundation
import ObjectModel
import ObjectStore

/// The skeleton of a store that keeps each object as one row: the backend supplies a read
/// transaction over its rows (``readRows(_:)``, a ``RowSource``) and its key counters, and gets
/// the contract's reads and key allocation, with the semantics every such store shares
/// (fetches through `PredicateEvaluator`, relationship reads, streaming scans, keys never reused).
///
/// LMDB (its stores and snapshots), PostgreSQL and the tables of the in-memory and atomic stores
/// (``RecordTablesStore``) are such stores. A backend still implements any of these calls itself
/// where it can answer better (PostgreSQL reads relationships in one statement).
public protocol TransactionalStore: PersistentStore {
    /// Runs `body` in one read transaction of the store's rows: every read `body` makes sees
    /// one moment of the store.
    /// - Throws: `StoreError` with code `closed` once the store is closed, or what `body` throws.
    func readRows<T>(_ body: (any RowSource) throws -> T) throws -> T
    /// The last primary key handed out in the hierarchy whose root is `root` (0 when none was).
    func lastKey(of root: String) throws -> Int64
    /// Runs `body` in one write transaction with the last primary key handed out in the hierarchy
    /// whose root is `root`, and records the value `body` leaves, all or nothing: the backend's
    /// part of ``allocatePrimaryKeys(entity:count:)``, which only ever raises it (a lower counter
    /// would hand out keys in use).
    /// - Throws: `StoreError` with code `readOnly` or `closed`, or what `body` throws.
    func withLastKey<T>(of root: String, _ body: (inout Int64) throws -> T) throws -> T
}

extension TransactionalStore {
    public func fetch(_ request: FetchRequest) throws -> [ObjectRecord] {
        try readRows { try $0.fetch(request, model: model) }
    }

    public func count(_ request: FetchRequest) throws -> Int {
        try readRows { try $0.count(request, model: model) }
    }

    public func record(for key: ObjectKey) throws -> ObjectRecord? {
        try readRows { try $0.record(for: key, model: model) }
    }

    public func relatedKeys(of key: ObjectKey, relationship: String) throws -> [ObjectKey] {
        try readRows { try $0.relatedKeys(of: key, relationship: relationship, model: model) }
    }

    public func orderedMembers(of key: ObjectKey, relationship: String) throws -> OrderedMembers {
        try readRows { try $0.orderedMembers(of: key, relationship: relationship, model: model) }
    }

    /// In one read transaction, through the source's own batch form.
    public func orderedMembers(of keys: [ObjectKey], relationship: String) throws -> [OrderedMembers] {
        try readRows { try $0.orderedMembers(of: keys, relationship: relationship, model: model) }
    }

    public func scan(entity: String, after primaryKey: Int64?, limit: Int) throws -> [ObjectRecord] {
        try readRows { try $0.scan(entity: entity, after: primaryKey, limit: limit, model: model) }
    }

    public func scanBatch(entity: String, after primaryKey: Int64?, limit: Int) throws -> RecordBatch {
        guard let description = model.entity(named: entity) else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        return try readRows { try $0.scanBatch(description, after: primaryKey, limit: limit, model: model) }
    }

    /// Moves the hierarchy's counter by `count` in one write transaction (``withLastKey(of:_:)``).
    public func allocatePrimaryKeys(entity: String, count: Int) throws -> ClosedRange<Int64> {
        guard let description = model.entity(named: entity) else { throw StoreError(.invalidChange, "no entity named \(entity)") }
        guard count > 0 else { throw StoreError(.invalidChange, "cannot allocate \(count) primary keys") }
        return try withLastKey(of: description.rootName) { last in
            let (end, overflow) = last.addingReportingOverflow(Int64(count))
            guard !overflow else { throw StoreError(.invalidChange, "cannot allocate \(count) primary keys after \(last) in \(description.rootName)'s hierarchy") }
            defer { last = end }
            return (last + 1)...end
        }
    }

    public func lastAllocatedKey(entity: String) throws -> Int64 {
        guard let root = model.entity(named: entity)?.rootName else { throw StoreError(.invalidFetch, "no entity named \(entity)") }
        return try lastKey(of: root)
    }
}
