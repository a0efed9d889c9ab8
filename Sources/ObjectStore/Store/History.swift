import Foundation
import ObjectModel

/// Where a store's persistent history stands: a transaction's place in it.
///
/// Tokens are store-scoped and monotonic: each save gets a greater one than every save
/// before it in the same store, and a deleted transaction's token is never handed out again.
/// They are `Codable`, so a reader can keep the last one it has seen and ask for what came
/// after it in a later run.
public struct HistoryToken: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The UUID of the store the token belongs to.
    public var storeIdentifier: UUID
    /// The transaction's number in the store: 1 or more, greater for every later save.
    public var value: Int64

    /// Creates a token.
    public init(store: UUID, value: Int64) {
        self.storeIdentifier = store
        self.value = value
    }

    public static func < (a: HistoryToken, b: HistoryToken) -> Bool { a.value < b.value }

    /// The number alone: what `objectstore history --since` takes.
    public var description: String { String(value) }
}

/// An object a transaction changed, and the names of the properties it changed.
public struct UpdatedObject: Sendable, Hashable, Codable {
    /// The object.
    public var key: ObjectKey
    /// The attributes and relationships the save set, sorted.
    public var properties: [String]

    /// Creates an entry.
    public init(key: ObjectKey, properties: [String]) {
        self.key = key
        self.properties = properties
    }
}

/// What one save changed, and who made it: an entry of a store's persistent history.
///
/// A store records one for every save, bulk insert, batch update and batch delete, in the
/// same transaction as the data: a change is never stored without its history, nor history
/// without its change (docs/observation.md).
public struct StoreTransaction: Sendable, Hashable, Codable {
    /// Its place in the store's history.
    public var token: HistoryToken
    /// When it was saved.
    public var timestamp: Date
    /// Who saved it (``ChangeSet/author``, a context's `transactionAuthor`, `--author`), if anyone said.
    public var author: String?
    /// The objects it inserted, in key order.
    public var inserted: [ObjectKey]
    /// The objects it updated, with the properties it set, in key order.
    public var updated: [UpdatedObject]
    /// The objects it deleted, in key order.
    public var deleted: [ObjectKey]

    /// Creates a transaction.
    public init(token: HistoryToken, timestamp: Date, author: String?, inserted: [ObjectKey] = [], updated: [UpdatedObject] = [],
                deleted: [ObjectKey] = []) {
        self.token = token
        self.timestamp = timestamp
        self.author = author
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }

    /// The entities whose objects it inserted, updated or deleted.
    public var entities: Set<String> {
        Set(inserted.map(\.entity)).union(updated.map(\.key.entity)).union(deleted.map(\.entity))
    }
}

/// Which transactions a history read returns.
public struct HistoryQuery: Sendable, Hashable {
    /// Only those after this token (all when nil).
    public var after: Int64?
    /// Only those with this author.
    public var author: String?
    /// Only those that changed an object of one of these entities (all when empty).
    public var entities: Set<String>
    /// At most this many, the oldest first.
    public var limit: Int?

    /// Creates a query.
    public init(after: Int64? = nil, author: String? = nil, entities: Set<String> = [], limit: Int? = nil) {
        self.after = after
        self.author = author
        self.entities = entities
        self.limit = limit
    }

    /// Whether `transaction` passes the author and entity filters (an entity admits its
    /// sub-entities' objects), not the token bound.
    public func admits(_ transaction: StoreTransaction, model: ManagedObjectModel) -> Bool {
        if let author, author != transaction.author { return false }
        guard !entities.isEmpty else { return true }
        return transaction.entities.contains { covers($0, in: model) }
    }

    /// Whether an object of `entity` passes the entity filter: no filter, or one of its entities
    /// is `entity` or an ancestor of it.
    public func covers(_ entity: String, in model: ManagedObjectModel) -> Bool {
        guard !entities.isEmpty else { return true }
        guard let description = model.entity(named: entity) else { return entities.contains(entity) }
        return entities.contains(where: description.isKind(of:))
    }
}

/// One transaction as a store keeps it: a compact binary form every backend stores as it is,
/// under its token (docs/observation.md, "The history record").
///
/// Keys are grouped by entity, sorted and delta-coded, so a save of many consecutive keys (an
/// import, a batch delete) costs a few bytes per object.
public struct HistoryRecord: Sendable, Hashable {
    /// When.
    public var timestamp: Date
    /// Who.
    public var author: String?
    /// Inserted objects.
    public var inserted: [ObjectKey]
    /// Updated objects and their properties.
    public var updated: [UpdatedObject]
    /// Deleted objects.
    public var deleted: [ObjectKey]

    /// A record; keys are sorted here.
    public init(timestamp: Date = Date(), author: String?, inserted: [ObjectKey] = [], updated: [UpdatedObject] = [], deleted: [ObjectKey] = []) {
        self.timestamp = timestamp
        self.author = author
        // A batch gives its keys in order already: checked in one pass, sorted only when not.
        func ordered(_ keys: [ObjectKey]) -> [ObjectKey] { zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 } ? keys : keys.sorted() }
        self.inserted = ordered(inserted)
        self.updated = zip(updated, updated.dropFirst()).allSatisfy { $0.key < $1.key } ? updated : updated.sorted { $0.key < $1.key }
        self.deleted = ordered(deleted)
    }

    /// What a change set records: its inserts, its updates with the names each sets, its deletes.
    public init(_ changes: ChangeSet, inserting batchKeys: [ObjectKey] = [], timestamp: Date = Date()) {
        var updated: [ObjectKey: Set<String>] = [:]
        for update in changes.updated {
            updated[update.key, default: []].formUnion(update.attributes.keys)
            updated[update.key]!.formUnion(update.toOne.keys)
            updated[update.key]!.formUnion(update.toMany.keys)
        }
        self.init(timestamp: timestamp, author: changes.author, inserted: changes.inserted.map(\.key) + batchKeys,
                  updated: updated.map { UpdatedObject(key: $0.key, properties: $0.value.sorted()) }, deleted: changes.deleted.map(\.key))
    }

    /// Whether it records no object.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }

    /// The transaction it is, under `token`.
    public func transaction(_ token: HistoryToken) -> StoreTransaction {
        StoreTransaction(token: token, timestamp: timestamp, author: author, inserted: inserted, updated: updated, deleted: deleted)
    }

    // MARK: Encoding

    private static let magic: [UInt8] = Array("OSH1".utf8)

    /// The record's bytes: `OSH1`, the timestamp (seconds since 1970 as a little-endian
    /// IEEE double), the author (varint length + 1, 0 for none, then UTF-8), the property
    /// names (varint count, each a varint length and UTF-8), then each entity (varint count):
    /// its name, its inserted keys, its deleted keys (each a varint count and ascending keys
    /// as varint deltas from the previous, the first from 0), its updated objects (a varint
    /// count, each a key delta, a varint name count and varint indexes into the names).
    public func encoded() -> Data {
        var out = Self.magic
        withUnsafeBytes(of: timestamp.timeIntervalSince1970.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        if let author { Self.put(string: author, into: &out, offset: 1) } else { Self.put(0, into: &out) }
        var names: [String: Int] = [:]
        var nameList: [String] = []
        for entry in updated { for name in entry.properties where names[name] == nil { names[name] = nameList.count; nameList.append(name) } }
        Self.put(UInt64(nameList.count), into: &out)
        for name in nameList { Self.put(string: name, into: &out) }
        // Each list is in (entity, key) order, so an entity's keys are one run of it.
        func runs<T>(_ items: [T], _ entity: (T) -> String) -> [String: Range<Int>] {
            var found: [String: Range<Int>] = [:]
            var start = 0
            for index in items.indices.dropFirst() where entity(items[index]) != entity(items[index - 1]) {
                found[entity(items[start])] = start..<index
                start = index
            }
            if !items.isEmpty { found[entity(items[start])] = start..<items.count }
            return found
        }
        let insertedRuns = runs(inserted, \.entity), deletedRuns = runs(deleted, \.entity), updatedRuns = runs(updated, \.key.entity)
        let entities = Set(insertedRuns.keys).union(deletedRuns.keys).union(updatedRuns.keys).sorted()
        Self.put(UInt64(entities.count), into: &out)
        for entity in entities {
            Self.put(string: entity, into: &out)
            for (keys, run) in [(inserted, insertedRuns[entity]), (deleted, deletedRuns[entity])] {
                let mine = keys[run ?? 0..<0]
                Self.put(UInt64(mine.count), into: &out)
                var last: Int64 = 0
                for key in mine { Self.put(UInt64(bitPattern: key.primaryKey &- last), into: &out); last = key.primaryKey }
            }
            let mine = updated[updatedRuns[entity] ?? 0..<0]
            Self.put(UInt64(mine.count), into: &out)
            var last: Int64 = 0
            // A batch update gives every object the same names: their bytes are made once.
            var previous: (names: [String], bytes: [UInt8])?
            for entry in mine {
                Self.put(UInt64(bitPattern: entry.key.primaryKey &- last), into: &out)
                last = entry.key.primaryKey
                if previous?.names != entry.properties {
                    var bytes: [UInt8] = []
                    Self.put(UInt64(entry.properties.count), into: &bytes)
                    for name in entry.properties { Self.put(UInt64(names[name]!), into: &bytes) }
                    previous = (entry.properties, bytes)
                }
                out.append(contentsOf: previous!.bytes)
            }
        }
        return Data(out)
    }

    /// Decodes ``encoded()``'s bytes.
    /// - Throws: ``StoreError`` with ``StoreError/Code/corrupt`` naming `place` for bytes it did not write.
    public init<Bytes: Collection<UInt8>>(decoding bytes: Bytes, place: String) throws {
        self = try Self.read(bytes, place: place, keeping: true)!
    }

    /// Checks ``encoded()``'s bytes as ``init(decoding:place:)`` does, without building the
    /// record: a store that keeps its history as bytes checks it when read without holding
    /// every key of every transaction at once.
    /// - Throws: ``StoreError`` with ``StoreError/Code/corrupt`` naming `place` for bytes it did not write.
    public static func check<Bytes: Collection<UInt8>>(_ bytes: Bytes, place: String) throws {
        _ = try read(bytes, place: place, keeping: false)
    }

    /// Reads a record's bytes, checking every part; with `keeping`, builds the record.
    private static func read<Bytes: Collection<UInt8>>(_ bytes: Bytes, place: String, keeping: Bool) throws -> HistoryRecord? {
        let bytes = Array(bytes)
        var at = 0
        func fail(_ why: String) -> StoreError { StoreError(.corrupt, "\(place): history record \(why) at byte \(at)") }
        func varint() throws -> UInt64 {
            var value: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard at < bytes.count else { throw fail("ends early") }
                let byte = bytes[at]
                at += 1
                guard shift < 64 else { throw fail("has an overlong number") }
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
        }
        func count() throws -> Int {
            let n = try varint()
            guard n <= UInt64(bytes.count - at) else { throw fail("counts \(n) items where \(bytes.count - at) bytes remain") }
            return Int(n)
        }
        func string(length: Int) throws -> String {
            guard length <= bytes.count - at else { throw fail("ends early") }
            defer { at += length }
            guard let text = String(validating: bytes[at..<at + length], as: UTF8.self) else { throw fail("holds text that is not UTF-8") }
            return text
        }
        guard bytes.count >= 12, Array(bytes[0..<4]) == Self.magic else { throw fail("does not start with OSH1") }
        at = 4
        var bits: UInt64 = 0
        for i in 0..<8 { bits |= UInt64(bytes[at + i]) << (8 * UInt64(i)) }
        at += 8
        let seconds = Double(bitPattern: bits)
        guard seconds.isFinite else { throw fail("has a timestamp that is not a number") }
        let authorLength = try count()
        let author = authorLength == 0 ? nil : try string(length: authorLength - 1)
        var nameList: [String] = []
        for _ in 0..<(try count()) { nameList.append(try string(length: try count())) }
        var inserted: [ObjectKey] = [], deleted: [ObjectKey] = [], updated: [UpdatedObject] = []
        func keys(_ entity: String, into list: inout [ObjectKey]) throws {
            var last: Int64 = 0
            for _ in 0..<(try count()) {
                last = last &+ Int64(bitPattern: try varint())
                if keeping { list.append(ObjectKey(entity, last)) }
            }
        }
        for _ in 0..<(try count()) {
            let entity = try string(length: try count())
            try keys(entity, into: &inserted)
            try keys(entity, into: &deleted)
            var last: Int64 = 0
            for _ in 0..<(try count()) {
                last = last &+ Int64(bitPattern: try varint())
                var names: [String] = []
                for _ in 0..<(try count()) {
                    let index = try varint()
                    guard index < UInt64(nameList.count) else { throw fail("names property \(index) of \(nameList.count)") }
                    if keeping { names.append(nameList[Int(index)]) }
                }
                if keeping { updated.append(UpdatedObject(key: ObjectKey(entity, last), properties: names)) }
            }
        }
        guard at == bytes.count else { throw fail("has \(bytes.count - at) bytes after its end") }
        guard keeping else { return nil }
        var record = HistoryRecord(timestamp: Date(timeIntervalSince1970: seconds), author: author)
        record.inserted = inserted
        record.updated = updated
        record.deleted = deleted
        return record
    }

    private static func put(_ value: UInt64, into out: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            out.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
    }

    private static func put(string: String, into out: inout [UInt8], offset: UInt64 = 0) {
        let utf8 = Array(string.utf8)
        put(UInt64(utf8.count) + offset, into: &out)
        out.append(contentsOf: utf8)
    }
}

/// What a store does about history, from its ``StoreOptions``: whether it records it, and the
/// author of writes that name none. Every backend asks it for the record of each write.
public struct HistoryPolicy: Sendable, Hashable {
    /// Whether writes record history.
    public var records: Bool
    /// The author of writes that name none.
    public var author: String?

    /// The policy `options` give.
    public init(_ options: StoreOptions) {
        records = options.recordsHistory && !options.readOnly
        author = options.author
    }

    /// The record a change set's save writes, or nil when none is written (history off, or the
    /// change set changes no object).
    public func record(for changes: ChangeSet, inserting batchKeys: [ObjectKey] = []) -> HistoryRecord? {
        guard records else { return nil }
        var record = HistoryRecord(changes, inserting: batchKeys)
        if record.author == nil { record.author = author }
        return record.isEmpty ? nil : record
    }

    /// The record a bulk insert of `keys` writes, or nil.
    public func record(inserting keys: [ObjectKey]) -> HistoryRecord? {
        guard records, !keys.isEmpty else { return nil }
        return HistoryRecord(author: author, inserted: keys)
    }
}
