import Foundation
import ObjectModel
import ObjectStore

/// One stored object.
public struct StoredRow: Sendable, Hashable {
    /// The optimistic-locking version.
    public var version: Int64
    /// Stored attribute values.
    public var attributes: [String: Value]
    /// Every relationship's keys (a to-one holds at most one).
    public var relationships: [String: [ObjectKey]]
    /// The order keys of ordered to-many lists (`OrderKeys`), one per member of
    /// ``relationships``' list of the same name; only lists not numbered 1, 2, 3… have them.
    public var orderKeys: [String: [Int64]]

    /// Creates a row.
    public init(version: Int64, attributes: [String: Value], relationships: [String: [ObjectKey]], orderKeys: [String: [Int64]] = [:]) {
        self.version = version
        self.attributes = attributes
        self.relationships = relationships
        self.orderKeys = orderKeys
    }

    /// Sets a to-many list, with its order keys (nil or 1, 2, 3…: none kept).
    public mutating func setList(_ name: String, _ keys: [ObjectKey], orderKeys given: [Int64]?) {
        relationships[name] = keys
        orderKeys[name] = given.flatMap { OrderKeys.arePositions($0) ? nil : $0 }
    }

    /// The members of a list with their order keys.
    public func members(_ name: String) -> OrderedMembers { members(name, keeping: { _ in true }) }

    /// The members of a list with their order keys, keeping only those `keep` accepts.
    public func members(_ name: String, keeping keep: (ObjectKey) throws -> Bool) rethrows -> OrderedMembers {
        let keys = relationships[name] ?? []
        guard let order = orderKeys[name], order.count == keys.count else { return OrderedMembers(try keys.filter(keep)) }
        var kept = OrderedMembers(keys: [], orderKeys: [])
        for (key, number) in zip(keys, order) where try keep(key) {
            kept.keys.append(key)
            kept.orderKeys.append(number)
        }
        return kept
    }
}


/// The objects of one concrete entity, with their keys kept in ascending order.
///
/// A table built row by row holds every row in ``rows``. A table read from a file can
/// start over ``PackedRows`` instead, kept encoded and decoded when read; ``rows`` then
/// holds only the rows written since, and ``row(_:)`` reads either.
public struct RecordTable: Sendable {
    /// Rows by primary key: every row, or, over packed rows, the rows written since.
    public internal(set) var rows: [Int64: StoredRow] = [:]
    /// The primary keys, ascending.
    public internal(set) var order: [Int64] = []
    /// The encoded rows the table started from, if any (those in ``rows`` replace theirs).
    public private(set) var packed: PackedRows?
    /// Packed rows deleted since.
    private var deletedPacked: Set<Int64> = []
    /// The order keys of packed rows that keep some (``StoredRow/orderKeys``), by primary key:
    /// kept beside the encoded rows, joined to a row when it is decoded.
    public private(set) var packedOrderKeys: [Int64: [String: [Int64]]] = [:]

    /// The index in ``order`` of the first key greater than `pk`.
    public func firstIndex(after pk: Int64) -> Int {
        order.partitioningIndex { $0 > pk }
    }

    /// An empty table.
    public init() {}

    /// A table of the rows `packed` holds, decoded when read.
    public init(packed: PackedRows) {
        self.packed = packed
        order = packed.keys
    }

    /// How many rows.
    public var count: Int { order.count }

    /// Whether a row with `pk` exists (without decoding it).
    public func contains(_ pk: Int64) -> Bool {
        if !rows.isEmpty, rows[pk] != nil { return true }
        return packedIndex(pk) != nil
    }

    /// Whether every row is a packed one, in key order (none written or deleted since).
    public var isPackedOnly: Bool { packed != nil && rows.isEmpty && deletedPacked.isEmpty }

    /// The index in ``packed`` of the live packed row `pk` (nil when written or deleted since, or never packed).
    public func packedIndex(_ pk: Int64) -> Int? {
        guard let packed, deletedPacked.isEmpty || !deletedPacked.contains(pk) else { return nil }
        return packed.index(of: pk)
    }

    /// The row with `pk`, or nil.
    /// - Throws: `StoreError` with code `corrupt` when a packed row does not decode.
    public func row(_ pk: Int64) throws -> StoredRow? {
        if let row = rows[pk] { return row }
        guard let packed, let index = packedIndex(pk) else { return nil }
        var row = try packed.row(at: index)
        if let orderKeys = packedOrderKeys[pk] { row.orderKeys = orderKeys }
        return row
    }

    /// Gives rows their order keys (as a file keeps them beside its rows).
    public mutating func setOrderKeys(_ keys: [Int64: [String: [Int64]]]) {
        for (pk, orderKeys) in keys {
            if rows[pk] != nil { rows[pk]!.orderKeys = orderKeys } else { packedOrderKeys[pk] = orderKeys }
        }
    }

    /// The order keys of row `pk` (none for a row without any, or no row).
    public func orderKeys(_ pk: Int64) -> [String: [Int64]] {
        if let row = rows[pk] { return row.orderKeys }
        return packedIndex(pk) != nil ? packedOrderKeys[pk] ?? [:] : [:]
    }

    /// Adds or replaces a row.
    public mutating func insert(_ pk: Int64, _ row: StoredRow) {
        let exists = contains(pk)
        rows[pk] = row
        if exists { return }
        if packed != nil { deletedPacked.remove(pk) }
        if let last = order.last, last >= pk {
            order.insert(pk, at: firstIndex(after: pk))
        } else {
            order.append(pk)
        }
    }

    /// Whether `batch`'s rows can join the packed rows: keys strictly ascending, above every key here.
    func canPack(_ batch: RecordBatch) -> Bool {
        guard let first = batch.primaryKeys.first, order.last.map({ $0 < first }) ?? true else { return false }
        return zip(batch.primaryKeys, batch.primaryKeys.dropFirst()).allSatisfy { $0 < $1 }
    }

    /// Readies the packed rows to take `batch`'s (``PackedRows/prepare(for:)``): every row
    /// keeps its meaning, so a failure changes nothing.
    /// - Throws: ``StoreError`` with code `corrupt` for a packed row that does not decode.
    mutating func prepare(for batch: RecordBatch) throws {
        guard packed != nil, canPack(batch) else { return }
        try packed!.prepare(for: batch)
    }

    /// Adds the rows of `batch`, none of whose keys is here: encoded after the packed rows when
    /// they can join them (readied by ``prepare(for:)``), as decoded rows otherwise.
    mutating func insert(_ batch: RecordBatch, file: String) {
        guard canPack(batch) else {
            for row in 0..<batch.count { insert(batch.primaryKeys[row], batch.storedRow(row)) }
            return
        }
        guard var appended = packed else {
            packed = PackedRows(batch: batch, file: file)
            if order.isEmpty { order = packed!.keys } else { order.append(contentsOf: batch.primaryKeys) }
            return
        }
        guard appended.ownsBytes, appended.shape.union(PackedRows.shape(of: batch)) == appended.shape else {
            for row in 0..<batch.count { insert(batch.primaryKeys[row], batch.storedRow(row)) }
            return
        }
        // Appended in place: the table lets go of its references to the bytes and keys first.
        let sharesKeys = isPackedOnly
        packed = nil
        if sharesKeys { order = [] }
        appended.append(encoding: batch)
        if sharesKeys { order = appended.keys } else { order.append(contentsOf: batch.primaryKeys) }
        packed = appended
    }

    mutating func remove(_ pk: Int64) {
        var removed = rows.removeValue(forKey: pk) != nil
        if packedIndex(pk) != nil {
            deletedPacked.insert(pk)
            removed = true
        }
        guard removed else { return }
        let index = firstIndex(after: pk) - 1
        if index >= 0 && order[index] == pk { order.remove(at: index) }
    }
}

/// A whole store's objects held in memory, with the contract's semantics:
/// validation of change sets before anything is applied, fetches through the
/// shared predicate evaluator, per-hierarchy key allocation.
///
/// The in-memory and atomic-file backends keep their data in one; a backend
/// that reads a whole store into memory can too.
public struct RecordTables: Sendable, RowWriter {
    /// The store's metadata.
    public var metadata: StoreMetadata
    /// The tables, by concrete entity.
    public internal(set) var tables: [String: RecordTable] = [:]
    /// The last primary key handed out, by root entity.
    public var lastKey: [String: Int64] = [:]
    /// The persistent history: each transaction's record (`HistoryRecord.encoded()`) by token, ascending.
    public var history: [HistoryEntry] = []
    /// The greatest history token handed out (0 when none was): kept when history is deleted,
    /// so no token is handed out twice.
    public var lastHistoryToken: Int64 = 0

    /// Empty tables with `metadata`.
    public init(metadata: StoreMetadata) {
        self.metadata = metadata
    }

    public func row(_ key: ObjectKey) throws -> StoredRow? { try tables[key.entity]?.row(key.primaryKey) }

    public func exists(_ key: ObjectKey) -> Bool { tables[key.entity]?.contains(key.primaryKey) ?? false }

    public func primaryKeys(of entity: String, after primaryKey: Int64?, limit: Int?) -> [Int64] {
        guard let table = tables[entity] else { return [] }
        let start = primaryKey.map { table.firstIndex(after: $0) } ?? 0
        let end = limit.map { Swift.min(table.order.count, start + $0) } ?? table.order.count
        return start < end ? Array(table.order[start..<end]) : []
    }

    public func rowCount(of entity: String) -> Int { tables[entity]?.count ?? 0 }

    /// Replaces the table of `entity` (for backends that load a whole store).
    public mutating func setTable(_ table: RecordTable, for entity: String) {
        tables[entity] = table
    }

    public mutating func putRow(_ row: StoredRow, for key: ObjectKey) {
        tables[key.entity, default: RecordTable()].insert(key.primaryKey, row)
    }

    public mutating func removeRow(_ key: ObjectKey) {
        tables[key.entity]?.remove(key.primaryKey)
    }

    public func lastKey(of root: String) -> Int64 { lastKey[root] ?? 0 }

    public mutating func setLastKey(_ last: Int64, of root: String) {
        lastKey[root] = last
    }
}

/// One transaction of a store's history as it is kept: its token and its record's bytes.
public struct HistoryEntry: Sendable, Hashable {
    /// The token.
    public var token: Int64
    /// `HistoryRecord.encoded()`.
    public var bytes: Data

    /// Creates an entry.
    public init(token: Int64, bytes: Data) {
        self.token = token
        self.bytes = bytes
    }
}

extension RecordTables {
    /// Appends `record` (when there is one) under the next token.
    public mutating func appendHistory(_ record: HistoryRecord?) {
        guard let record else { return }
        lastHistoryToken += 1
        history.append(HistoryEntry(token: lastHistoryToken, bytes: record.encoded()))
    }

    /// The transactions after `token`, at most `limit`.
    /// - Throws: `StoreError` with code `corrupt` for a record that does not decode.
    public func history(after token: Int64?, limit: Int, store: UUID, place: String) throws -> [StoreTransaction] {
        let start = token.map { after in history.partitioningIndex(where: { $0.token > after }) } ?? 0
        return try history[start...].prefix(Swift.max(0, limit)).map { entry in
            try HistoryRecord(decoding: entry.bytes, place: "\(place), transaction \(entry.token)").transaction(HistoryToken(store: store, value: entry.token))
        }
    }

    /// Whether a file of these tables needs a history section (the atomic store's): once history was recorded.
    public var hasHistorySection: Bool { lastHistoryToken > 0 }

    public mutating func raiseHistoryToken(to token: Int64) {
        lastHistoryToken = Swift.max(lastHistoryToken, token)
    }

    /// Deletes the history through `token`; returns how many transactions went.
    public mutating func deleteHistory(through token: Int64) -> Int {
        let end = history.partitioningIndex(where: { $0.token > token })
        history.removeFirst(end)
        return end
    }
}

extension Array {
    /// The index of the first element of a partitioned array for which `belongs` holds.
    func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var (low, high) = (0, count)
        while low < high {
            let mid = (low + high) / 2
            if belongs(self[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}

extension RecordBatch {
    /// Row `row` as a stored row: its values, its to-ones as one-key lists, version 1 or more.
    func storedRow(_ row: Int) -> StoredRow {
        var stored = StoredRow(version: Swift.max(1, versions[row]), attributes: [:], relationships: [:])
        let width = layout.attributes.count, links = layout.toOne.count
        for (slot, attribute) in layout.attributes.enumerated() {
            if let value = values[row * width + slot] { stored.attributes[attribute.name] = value }
        }
        for (slot, relationship) in layout.toOne.enumerated() {
            if let target = toOne[row * links + slot] { stored.relationships[relationship.name] = [target] }
        }
        return stored
    }
}

extension StoredRow {
    /// Applies an update's changes and, unless told not to, moves to the next version.
    public mutating func apply(_ update: ObjectUpdate, bumpingVersion: Bool = true) {
        for (name, value) in update.attributes { attributes[name] = value }
        for (name, target) in update.toOne { relationships[name] = target.map { [$0] } }
        for (name, targets) in update.toMany { setList(name, targets, orderKeys: update.orderKeys[name]) }
        if bumpingVersion { version += 1 }
    }
}

