import Foundation
import ObjectModel
import ObjectStore

/// The rows of one table kept in their binary encoding (the atomic file's rows,
/// `docs/atomic-format.md`), each decoded when it is read: a store read whole from a
/// file, or filled by batches, holds its objects in about the file's size, not in a
/// dictionary per object.
///
/// A row is its primary key and version (`svarint`s), one value per column (see
/// ``BinaryReader/value()``), and one key list per relationship: a varint `n`, `0` for
/// no value, otherwise `n − 1` keys of a name index (varint) and a primary key (`svarint`).
/// The rows must have been checked when they were indexed (the atomic reader steps over
/// each value with ``BinaryReader/skipValue()``; rows encoded from a batch are valid by
/// construction); decoding still checks every bound.
public struct PackedRows: Sendable {
    /// The bytes the rows lie in (a whole file: shared, not copied); empty for rows read from
    /// ``source``.
    public internal(set) var bytes: [UInt8]
    /// The file the rows are read from when they are needed, instead of ``bytes`` (a store
    /// opened read-only holds only the keys and offsets of its rows).
    public private(set) var source: RowFile?
    /// The primary keys, ascending.
    public internal(set) var keys: [Int64]
    /// Where each row starts in ``bytes``, and, last, where the last row ends.
    public internal(set) var offsets: RowOffsets
    /// The attribute names, in the order a row holds their values.
    public internal(set) var columns: [String]
    /// The relationship names, in the order a row holds their key lists.
    public internal(set) var relationships: [String]
    /// The entity names a key list refers to by index.
    public internal(set) var names: [String]
    /// The file named in errors.
    public let file: String

    /// Rows at `offsets` in `bytes` (one more offset than keys: the end of the last row).
    public init(bytes: [UInt8], keys: [Int64], offsets: [Int], columns: [String], relationships: [String], names: [String], file: String) {
        self.init(bytes: bytes, keys: keys, offsets: RowOffsets(offsets), columns: columns, relationships: relationships, names: names, file: file)
    }

    /// Rows at `offsets` in `bytes` (one more offset than keys: the end of the last row).
    public init(bytes: [UInt8], keys: [Int64], offsets: RowOffsets, columns: [String], relationships: [String], names: [String], file: String) {
        precondition(offsets.count == keys.count + 1, "one offset per row and one for the end")
        precondition(offsets.last! <= bytes.count, "rows within the bytes")
        self.bytes = bytes
        self.source = nil
        self.keys = keys
        self.offsets = offsets
        self.columns = columns
        self.relationships = relationships
        self.names = names
        self.file = file
    }

    /// The rows at `offsets` of `source` (one more offset than keys: the end of the last row),
    /// read from the file when they are needed.
    public init(source: RowFile, keys: [Int64], offsets: RowOffsets, columns: [String], relationships: [String], names: [String]) {
        precondition(offsets.count == keys.count + 1, "one offset per row and one for the end")
        precondition(offsets.last! <= source.size, "rows within the file")
        self.bytes = []
        self.source = source
        self.keys = keys
        self.offsets = offsets
        self.columns = columns
        self.relationships = relationships
        self.names = names
        self.file = source.path
    }

    /// Checks rows in `bytes`, the file's bytes from `origin`, as the atomic reader checks them
    /// (every value stepped over and checked, UTF-8, decimals and URIs included; every name index
    /// below `names`), from file offset `start` and at most `rows` of them, none past file offset
    /// `end`; adds each row's primary key and file offset to `keys` and `offsets` and returns the
    /// offset where the last one ends.
    ///
    /// With `partial`, the bytes are a window that stops short of the rows' end: a row the window
    /// cuts (or that fails to read) ends the rows checked here, the caller to read on from there
    /// with a larger window.
    /// - Throws: `StoreError` with code `corrupt` naming `file` and the byte offset.
    public static func index(_ bytes: UnsafeBufferPointer<UInt8>, origin: Int, from start: Int, to end: Int, rows: Int,
                             columns: Int, relationships: Int, names: Int, file: String, partial: Bool,
                             into keys: inout [Int64], _ offsets: inout RowOffsets) throws -> Int {
        var cursor = RowCursor(bytes, from: start - origin, to: Swift.min(end - origin, bytes.count), file: file, origin: origin)
        for _ in 0..<rows {
            let rowStart = cursor.at
            do {
                let key = try cursor.signed()
                _ = try cursor.signed()
                for _ in 0..<columns { try cursor.checkValue() }
                for _ in 0..<relationships {
                    let n = try cursor.count()
                    for _ in 0..<Swift.max(0, n - 1) {
                        _ = try cursor.name(below: names)
                        _ = try cursor.signed()
                    }
                }
                keys.append(key)
                offsets.append(origin + rowStart)
            } catch where partial {
                return origin + rowStart
            }
        }
        return origin + cursor.at
    }

    /// The index in ``keys`` of `pk`, or nil.
    public func index(of pk: Int64) -> Int? { keys.ascendingIndex(of: pk) }

    /// Runs `body` over bytes holding rows `range` (read from ``source`` for rows kept there),
    /// with the offset ``offsets`` give the buffer's first byte.
    private func withRows<T>(_ range: Range<Int>, _ body: (_ all: UnsafeBufferPointer<UInt8>, _ origin: Int) throws -> T) throws -> T {
        guard let source else { return try bytes.withUnsafeBufferPointer { try body($0, 0) } }
        let origin = offsets[range.lowerBound]
        return try source.readRows(origin..<offsets[range.upperBound]).withUnsafeBufferPointer { try body($0, origin) }
    }

    /// The encoded bytes of every row, one after another as they lie.
    /// - Throws: `StoreError` for rows in a file that cannot be read.
    public func encodedRows() throws -> ArraySlice<UInt8> {
        guard let source else { return bytes[offsets.first!..<offsets.last!] }
        return try source.read(offsets.first!..<offsets.last!)[...]
    }

    /// Decodes row `index`.
    /// - Throws: `StoreError` with code `corrupt` for bytes that are no row.
    public func row(at index: Int) throws -> StoredRow {
        try withRows(index..<(index + 1)) { all, origin in
            var cursor = RowCursor(all, from: offsets[index] - origin, to: offsets[index + 1] - origin, file: file, origin: origin)
            _ = try cursor.signed()
            var row = StoredRow(version: try cursor.signed(), attributes: [:], relationships: [:])
            row.attributes.reserveCapacity(columns.count)
            for column in columns {
                if let value = try cursor.value() { row.attributes[column] = value }
            }
            for relationship in relationships {
                let n = try cursor.count()
                guard n > 0 else { continue }
                var keys: [ObjectKey] = []
                keys.reserveCapacity(n - 1)
                for _ in 0..<(n - 1) {
                    let name = try cursor.name(below: names.count)
                    keys.append(ObjectKey(names[name], try cursor.signed()))
                }
                row.relationships[relationship] = keys
            }
            try cursor.finish()
            return row
        }
    }

    /// Decodes rows `range` into new rows of `batch`, slot by slot: column `c` into attribute
    /// slot `attributeSlots[c]` and the key of relationship `r` into to-one slot `toOneSlots[r]`
    /// (nil: not in the batch), a key only when `exists` says its object does (given the
    /// index of its entity in ``names`` and its primary key).
    /// - Throws: `StoreError` with code `corrupt` for bytes that are no row, or a to-one
    ///   that holds several objects.
    public func decode(rows range: Range<Int>, into batch: inout RecordBatch, attributeSlots: [Int?], toOneSlots: [Int?],
                       exists: (_ name: Int, _ primaryKey: Int64) -> Bool) throws {
        let width = batch.layout.attributes.count, links = batch.layout.toOne.count, entity = batch.entity.name
        guard !range.isEmpty else { return }
        try withRows(range) { all, origin in
            try batch.appendRows(count: range.count) { primaryKeys, versions, values, toOne in
                for (row, index) in range.enumerated() {
                    var cursor = RowCursor(all, from: offsets[index] - origin, to: offsets[index + 1] - origin, file: file, origin: origin)
                    let pk = try cursor.signed()
                    primaryKeys[row] = pk
                    versions[row] = try cursor.signed()
                    let base = row * width
                    for slot in attributeSlots {
                        if let slot { values[base + slot] = try cursor.value() } else { try cursor.checkValue() }
                    }
                    for (r, slot) in toOneSlots.enumerated() {
                        let n = try cursor.count()
                        guard n > 0 else { continue }
                        if slot != nil, n > 2 {
                            throw StoreError(.corrupt, "\(ObjectKey(entity, pk)).\(relationships[r]) is a to-one but holds \(n - 1) objects")
                        }
                        for _ in 0..<(n - 1) {
                            let name = try cursor.name(below: names.count)
                            let target = try cursor.signed()
                            if let slot, exists(name, target) { toOne[row * links + slot] = ObjectKey(names[name], target) }
                        }
                    }
                    try cursor.finish()
                }
            }
        }
    }
}

// MARK: Encoding batches, re-encoding rows

extension PackedRows {
    /// What rows are laid out by: their attribute columns, relationship columns and entity
    /// names, each sorted (as the atomic writer sorts them).
    public struct Shape: Hashable, Sendable {
        /// The attribute columns.
        public var columns: [String]
        /// The relationship columns.
        public var relationships: [String]
        /// The entity names key lists refer to.
        public var names: [String]

        /// Creates a shape.
        public init(columns: [String], relationships: [String], names: [String]) {
            self.columns = columns
            self.relationships = relationships
            self.names = names
        }

        /// Both shapes' columns, relationships and names.
        func union(_ other: Shape) -> Shape {
            func merged(_ a: [String], _ b: [String]) -> [String] { a == b ? a : Set(a).union(b).sorted() }
            return Shape(columns: merged(columns, other.columns), relationships: merged(relationships, other.relationships),
                         names: merged(names, other.names))
        }
    }

    /// The shape these rows are laid out by.
    public var shape: Shape { Shape(columns: columns, relationships: relationships, names: names) }

    /// The shape of a batch's rows as the atomic writer would lay them out: the attributes and
    /// to-ones that hold a value in some row, and the entity names of the targets, with the
    /// batch's own entity and its root (names a store of those rows lists anyway).
    public static func shape(of batch: RecordBatch) -> Shape {
        let layout = batch.layout, width = layout.attributes.count, links = layout.toOne.count
        var columns: [String] = [], relationships: [String] = []
        var names: Set<String> = [batch.entity.name, batch.entity.rootName]
        for (slot, attribute) in layout.attributes.enumerated() {
            if stride(from: slot, to: batch.values.count, by: width).contains(where: { batch.values[$0] != nil }) {
                columns.append(attribute.name)
            }
        }
        for (slot, relationship) in layout.toOne.enumerated() {
            var last: String? = nil
            for i in stride(from: slot, to: batch.toOne.count, by: links) {
                guard let target = batch.toOne[i] else { continue }
                if last == nil { relationships.append(relationship.name) }
                if last != target.entity {
                    last = target.entity
                    names.insert(target.entity)
                }
            }
        }
        return Shape(columns: columns.sorted(), relationships: relationships.sorted(), names: names.sorted())
    }

    /// The rows of `batch` (keys strictly ascending), encoded in ``shape(of:)``.
    public init(batch: RecordBatch, file: String) {
        let shape = Self.shape(of: batch)
        self.init(bytes: [], keys: [], offsets: [0], columns: shape.columns, relationships: shape.relationships, names: shape.names, file: file)
        append(encoding: batch)
    }

    /// Whether the rows lie alone in bytes of their own (not in a whole file shared with other tables).
    var ownsBytes: Bool { source == nil && offsets.first == 0 && offsets.last == bytes.count }

    /// Makes the rows ready to take `batch`'s: laid out in a shape with room for its values and
    /// in bytes of their own, every row re-encoded once when either changes. The rows keep
    /// their meaning: a failure leaves them as they were.
    /// - Throws: ``StoreError`` with code `corrupt` for bytes that are no row.
    mutating func prepare(for batch: RecordBatch) throws {
        let wanted = shape.union(Self.shape(of: batch))
        guard wanted != shape || !ownsBytes else { return }
        let plan = transcoding(to: wanted)!   // a union holds every name these rows use
        var out = BinaryWriter()
        out.reserveCapacity(offsets.last! - offsets.first! + keys.count * (wanted == shape ? 0 : 4))
        var moved = RowOffsets(base: 0)
        moved.reserveCapacity(offsets.count)
        for index in keys.indices {
            moved.append(out.count)
            try write(row: index, plan, into: &out)
        }
        moved.append(out.count)
        bytes = out.buffer
        source = nil
        offsets = moved
        (columns, relationships, names) = (wanted.columns, wanted.relationships, wanted.names)
    }

    /// Appends the rows of `batch` (keys strictly ascending, above every key here), encoded in
    /// this shape, which must hold every value they have (see ``prepare(for:)``).
    mutating func append(encoding batch: RecordBatch) {
        precondition(ownsBytes, "rows are appended to bytes of their own")
        let layout = batch.layout, width = layout.attributes.count, links = layout.toOne.count
        let attributeSlots = columns.map { layout.attributeSlot($0) }
        let toOneSlots = relationships.map { layout.toOneSlot($0) }
        let nameIndex = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, UInt64($0)) })
        var out = BinaryWriter()
        swap(&out.buffer, &bytes)
        defer { swap(&out.buffer, &bytes) }
        let perRow = keys.isEmpty ? 4 + 9 * (columns.count + relationships.count) : (out.count / keys.count + 1)
        out.reserveCapacity(out.count + perRow * batch.count)
        keys.reserveCapacity(keys.count + batch.count)
        offsets.reserveCapacity(offsets.count + batch.count)
        var lastName = "", lastIndex: UInt64 = 0
        for row in 0..<batch.count {
            let pk = batch.primaryKeys[row]
            out.signed(pk)
            out.signed(Swift.max(1, batch.versions[row]))
            for slot in attributeSlots { out.value(slot.flatMap { batch.values[row * width + $0] }) }
            for slot in toOneSlots {
                guard let slot, let target = batch.toOne[row * links + slot] else { out.byte(0); continue }
                if target.entity != lastName { (lastName, lastIndex) = (target.entity, nameIndex[target.entity]!) }
                out.byte(2)
                out.varint(lastIndex)
                out.signed(target.primaryKey)
            }
            keys.append(pk)
            offsets.append(out.count)
        }
    }

    /// How rows are re-encoded in another shape: for each of its columns and relationships the
    /// one here that fills it (nil: none, no value), and for each name here its index there.
    public struct Transcoding: Sendable {
        let columns: [Int?]
        let relationships: [Int?]
        let names: [UInt64]
        /// The shapes are the same: a row is copied as it is.
        public let copies: Bool
        /// The columns are the same: a row's values are copied as they are.
        let copiesValues: Bool
    }

    /// How to re-encode these rows in `shape`, or nil when it lacks a column, relationship or
    /// name they use (it would lose values).
    public func transcoding(to shape: Shape) -> Transcoding? {
        let columnAt = Dictionary(uniqueKeysWithValues: columns.enumerated().map { ($1, $0) })
        let relationshipAt = Dictionary(uniqueKeysWithValues: relationships.enumerated().map { ($1, $0) })
        let nameAt = Dictionary(uniqueKeysWithValues: shape.names.enumerated().map { ($1, UInt64($0)) })
        guard Set(columns).isSubset(of: shape.columns), Set(relationships).isSubset(of: shape.relationships) else { return nil }
        var names: [UInt64] = []
        for name in self.names {
            guard let index = nameAt[name] else { return nil }
            names.append(index)
        }
        return Transcoding(columns: shape.columns.map { columnAt[$0] }, relationships: shape.relationships.map { relationshipAt[$0] },
                           names: names, copies: shape == self.shape, copiesValues: shape.columns == columns)
    }

    /// Writes row `index` re-encoded as `plan` says (copied as it is when the shapes are the same).
    /// - Throws: `StoreError` with code `corrupt` for bytes that are no row.
    public func write(row index: Int, _ plan: Transcoding, into out: inout BinaryWriter) throws {
        try withRows(index..<(index + 1)) { all, origin in
            let start = offsets[index] - origin, end = offsets[index + 1] - origin
            if plan.copies { return out.bytes(UnsafeBufferPointer(rebasing: all[start..<end])) }
            var cursor = RowCursor(all, from: start, to: end, file: file, origin: origin)
            _ = try cursor.signed()
            _ = try cursor.signed()
            if plan.copiesValues {
                for _ in columns { try cursor.checkValue() }
                out.bytes(UnsafeBufferPointer(rebasing: all[start..<cursor.at]))
            } else {
                let head = cursor.at
                out.bytes(UnsafeBufferPointer(rebasing: all[start..<head]))
                var values: [Range<Int>] = []
                values.reserveCapacity(columns.count)
                for _ in columns {
                    let from = cursor.at
                    try cursor.checkValue()
                    values.append(from..<cursor.at)
                }
                for source in plan.columns {
                    if let source { out.bytes(UnsafeBufferPointer(rebasing: all[values[source]])) } else { out.byte(0) }
                }
            }
            var lists: [Int] = []
            lists.reserveCapacity(relationships.count)
            for _ in relationships {
                lists.append(cursor.at)
                let n = try cursor.count()
                for _ in 0..<Swift.max(0, n - 1) {
                    _ = try cursor.name(below: names.count)
                    _ = try cursor.signed()
                }
            }
            try cursor.finish()
            for source in plan.relationships {
                guard let source else { out.byte(0); continue }
                var list = RowCursor(all, from: lists[source], to: end, file: file, origin: origin)
                let n = try list.count()
                out.varint(UInt64(n))
                for _ in 0..<Swift.max(0, n - 1) {
                    out.varint(plan.names[try list.name(below: names.count)])
                    out.signed(try list.signed())
                }
            }
        }
    }
}

extension [Int64] {
    /// The index of `pk` in these ascending keys, or nil: found at once where the keys have no
    /// gaps (1, 2, 3…: the usual table), by bisection otherwise.
    func ascendingIndex(of pk: Int64) -> Int? {
        guard let first else { return nil }
        let (guess, overflow) = pk.subtractingReportingOverflow(first)
        if !overflow, guess >= 0, guess < Int64(count), self[Int(guess)] == pk { return Int(guess) }
        var (low, high) = (0, count)
        while low < high {
            let mid = (low + high) / 2
            if self[mid] < pk { low = mid + 1 } else { high = mid }
        }
        return low < count && self[low] == pk ? low : nil
    }
}

/// Where rows start in their bytes: 4 bytes a row from a base while the rows span less
/// than 4 GiB (a table's rows always have, short of a file that large), 8 otherwise.
public struct RowOffsets: RandomAccessCollection, Sendable {
    private var base: Int
    private var narrow: [UInt32] = []
    private var wide: [Int]? = nil

    /// No offsets; those appended are kept from `base`.
    public init(base: Int) { self.base = base }

    /// These offsets.
    public init(_ offsets: [Int]) {
        self.init(base: offsets.min() ?? 0)
        reserveCapacity(offsets.count)
        for offset in offsets { append(offset) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { wide?.count ?? narrow.count }

    public subscript(index: Int) -> Int {
        if let wide { return wide[index] }
        return base + Int(narrow[index])
    }

    /// Makes room for `count` offsets in all.
    public mutating func reserveCapacity(_ count: Int) {
        if wide != nil { wide!.reserveCapacity(count) } else { narrow.reserveCapacity(count) }
    }

    /// Adds an offset.
    public mutating func append(_ offset: Int) {
        if wide == nil, offset >= base, let narrowed = UInt32(exactly: offset - base) { return narrow.append(narrowed) }
        if wide == nil {
            wide = narrow.map { base + Int($0) }
            narrow = []
        }
        wide!.append(offset)
    }
}

/// Reads encoded values in place over a buffer the caller holds, every bound checked: what
/// ``BinaryReader`` reads values with. Decoding rows, strings are not checked for UTF-8 again
/// (the rows were when they were indexed; anything else would be repaired, never read out of bounds).
struct RowCursor {
    let bytes: UnsafeBufferPointer<UInt8>
    var at: Int
    let end: Int
    let file: String
    /// Where in the file `bytes` start (added to the offsets errors name).
    let origin: Int

    init(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, file: String, origin: Int = 0) {
        precondition(0 <= start && start <= end && end <= bytes.count, "a row within its bytes")
        self.bytes = bytes
        self.at = start
        self.end = end
        self.file = file
        self.origin = origin
    }

    func corrupt(_ message: String, at offset: Int) -> StoreError {
        StoreError(.corrupt, "\(message) (at byte offset \(origin + offset))", url: URL(filePath: file))
    }

    private func truncated(_ n: Int) -> StoreError { corrupt("truncated: \(n) bytes needed, \(end - at) left", at: at) }

    @inline(__always) mutating func byte() throws -> UInt8 {
        guard at < end else { throw truncated(1) }
        defer { at += 1 }
        return bytes[at]
    }

    @inline(__always) mutating func skip(_ n: Int) throws {
        guard n >= 0, n <= end - at else { throw truncated(n) }
        at += n
    }

    @inline(__always) mutating func fixed64() throws -> UInt64 {
        guard 8 <= end - at else { throw truncated(8) }
        defer { at += 8 }
        return UInt64(littleEndian: UnsafeRawPointer(bytes.baseAddress! + at).loadUnaligned(as: UInt64.self))
    }

    @inline(__always) mutating func varint() throws -> UInt64 {
        if at < end, bytes[at] < 0x80 {
            defer { at += 1 }
            return UInt64(bytes[at])
        }
        return try longVarint()
    }

    private mutating func longVarint() throws -> UInt64 {
        let start = at
        var result: UInt64 = 0, shift: UInt64 = 0
        while at < end {
            let b = bytes[at]
            at += 1
            if shift == 63 && b > 1 { throw corrupt("varint overflows 64 bits", at: start) }
            result |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw corrupt("varint longer than 10 bytes", at: start) }
        }
        throw truncated(1)
    }

    @inline(__always) mutating func signed() throws -> Int64 {
        let v = try varint()
        return Int64(bitPattern: (v >> 1) ^ (0 &- (v & 1)))
    }

    /// A byte length: at most what remains.
    @inline(__always) mutating func length() throws -> Int {
        let from = at
        let v = try varint()
        guard v <= UInt64(end - at) else { throw corrupt("length \(v) runs past the end of the data", at: from) }
        return Int(v)
    }

    /// An element count: each element takes at least one byte, so at most what remains.
    @inline(__always) mutating func count() throws -> Int {
        let from = at
        let v = try varint()
        guard v <= UInt64(end - at) + 1 else { throw corrupt("count \(v) is larger than the data could hold", at: from) }
        return Int(v)
    }

    /// A name index below `count`.
    @inline(__always) mutating func name(below count: Int) throws -> Int {
        let from = at
        let i = try varint()
        guard i < UInt64(count) else { throw corrupt("entity index \(i) out of range", at: from) }
        return Int(i)
    }

    /// A string; with `validating`, one that is not UTF-8 is an error (otherwise it is repaired).
    @inline(__always) mutating func string(validating: Bool = false) throws -> String {
        let from = at
        let n = try length()
        let utf8 = UnsafeBufferPointer(rebasing: bytes[at..<(at + n)])
        // Checked and made in one pass: no string is decoded twice.
        guard let text = validating ? String(validating: utf8, as: UTF8.self) : String(decoding: utf8, as: UTF8.self) else {
            throw corrupt("a string is not valid UTF-8", at: from)
        }
        at += n
        return text
    }

    /// A value (see ``BinaryReader/value()``); with `validating`, strings are checked for UTF-8.
    mutating func value(validating: Bool = false) throws -> Value? {
        let from = at
        switch try byte() {
        case 0: return nil
        case 1: return .integer(try signed())
        case 2: return .double(Double(bitPattern: try fixed64()))
        case 3:
            let text = try string(validating: validating)
            guard let d = ValueText.decimal(text) else { throw corrupt("bad decimal \(text)", at: from) }
            return .decimal(d)
        case 4: return .string(try string(validating: validating))
        case 5: return .boolean(false)
        case 6: return .boolean(true)
        case 7: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try fixed64())))
        case 8:
            let n = try length()
            defer { at += n }
            return .data(Data(UnsafeBufferPointer(rebasing: bytes[at..<(at + n)])))
        case 9:
            try skip(16)
            return .uuid(UUID(uuid: UnsafeRawPointer(bytes.baseAddress! + at - 16).loadUnaligned(as: uuid_t.self)))
        case 10:
            let text = try string(validating: validating)
            guard let url = ValueText.uri(text) else { throw corrupt("bad URI \(text)", at: from) }
            return .uri(url)
        case let tag: throw corrupt("unknown value tag \(tag)", at: from)
        }
    }

    /// Steps over a value, checking it as ``BinaryReader/skipValue()`` does: strings are UTF-8,
    /// decimals and URIs parse.
    mutating func checkValue() throws {
        let from = at
        switch try byte() {
        case 0, 5, 6: return
        case 1: _ = try varint()
        case 2, 7: try skip(8)
        case 4:
            let n = try length()
            guard ObjectValidator.isUTF8(UnsafeBufferPointer(rebasing: bytes[at..<(at + n)])) else { throw corrupt("a string is not valid UTF-8", at: from + 1) }
            at += n
        case 8: try skip(try length())
        case 9: try skip(16)
        default:
            at = from
            _ = try value(validating: true)
        }
    }

    /// Checks that the row ended where its bytes do.
    mutating func finish() throws {
        guard at == end else { throw corrupt("\(end - at) unexpected bytes after a row", at: at) }
    }
}
