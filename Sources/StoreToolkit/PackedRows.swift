import Foundation
import ObjectModel
import ObjectStore

/// The rows of one table kept in their binary encoding (the atomic file's rows,
/// `docs/atomic-format.md`), each decoded when it is read: a store read whole from a
/// file holds its objects in about the file's size, not in a dictionary per object.
///
/// A row is its primary key and version (`svarint`s), one value per column (see
/// ``BinaryReader/value()``), and one key list per relationship: a varint `n`, `0` for
/// no value, otherwise `n − 1` keys of a name index (varint) and a primary key (`svarint`).
/// The rows must have been checked when they were indexed (the atomic reader steps over
/// each value with ``BinaryReader/skipValue()``); decoding still checks every bound.
public struct PackedRows: Sendable {
    /// The bytes the rows lie in (a whole file: shared, not copied).
    public let bytes: [UInt8]
    /// The primary keys, ascending.
    public let keys: [Int64]
    /// Where each row starts in ``bytes``, and, last, where the last row ends.
    public let offsets: [Int]
    /// The attribute names, in the order a row holds their values.
    public let columns: [String]
    /// The relationship names, in the order a row holds their key lists.
    public let relationships: [String]
    /// The entity names a key list refers to by index.
    public let names: [String]
    /// The file named in errors.
    public let file: String

    /// Rows at `offsets` in `bytes` (one more offset than keys: the end of the last row).
    public init(bytes: [UInt8], keys: [Int64], offsets: [Int], columns: [String], relationships: [String], names: [String], file: String) {
        precondition(offsets.count == keys.count + 1, "one offset per row and one for the end")
        self.bytes = bytes
        self.keys = keys
        self.offsets = offsets
        self.columns = columns
        self.relationships = relationships
        self.names = names
        self.file = file
    }

    /// The index in ``keys`` of `pk`, or nil.
    public func index(of pk: Int64) -> Int? {
        var (low, high) = (0, keys.count)
        while low < high {
            let mid = (low + high) / 2
            if keys[mid] < pk { low = mid + 1 } else { high = mid }
        }
        return low < keys.count && keys[low] == pk ? low : nil
    }

    /// The encoded bytes of row `index`.
    public func encoded(at index: Int) -> ArraySlice<UInt8> { bytes[offsets[index]..<offsets[index + 1]] }

    /// Decodes row `index`.
    /// - Throws: ``StoreError`` with code `corrupt` for bytes that are no row.
    public func row(at index: Int) throws -> StoredRow {
        var reader = BinaryReader(bytes: bytes, file: file)
        reader.offset = offsets[index]
        reader.end = offsets[index + 1]
        _ = try reader.signed()
        var row = StoredRow(version: try reader.signed(), attributes: [:], relationships: [:])
        row.attributes.reserveCapacity(columns.count)
        for column in columns {
            if let value = try reader.value() { row.attributes[column] = value }
        }
        for relationship in relationships {
            let n = try reader.count()
            guard n > 0 else { continue }
            var keys: [ObjectKey] = []
            keys.reserveCapacity(n - 1)
            for _ in 0..<(n - 1) { keys.append(try key(&reader)) }
            row.relationships[relationship] = keys
        }
        guard reader.offset == reader.end else { throw reader.corrupt("\(reader.end - reader.offset) unexpected bytes after a row", at: reader.offset) }
        return row
    }

    /// Decodes row `index` into a new row of `batch`, slot by slot: column `c` into attribute
    /// slot `attributeSlots[c]` and the key of relationship `r` into to-one slot `toOneSlots[r]`
    /// (nil: not in the batch), a key only when `exists` says its object does.
    /// - Throws: ``StoreError`` with code `corrupt` for bytes that are no row, or a to-one
    ///   that holds several objects.
    public func decode(at index: Int, into batch: inout RecordBatch, attributeSlots: [Int?], toOneSlots: [Int?],
                       exists: (ObjectKey) -> Bool) throws {
        var reader = BinaryReader(bytes: bytes, file: file)
        reader.offset = offsets[index]
        reader.end = offsets[index + 1]
        let pk = try reader.signed()
        let row = batch.appendRow(primaryKey: pk, version: try reader.signed())
        for slot in attributeSlots {
            if let slot { batch[row, attribute: slot] = try reader.value() } else { try reader.skipValue() }
        }
        for (r, slot) in toOneSlots.enumerated() {
            let n = try reader.count()
            guard n > 0 else { continue }
            if slot != nil, n > 2 {
                throw StoreError(.corrupt, "\(ObjectKey(batch.entity.name, pk)).\(relationships[r]) is a to-one but holds \(n - 1) objects")
            }
            for _ in 0..<(n - 1) {
                let target = try key(&reader)
                if let slot, exists(target) { batch[row, toOne: slot] = target }
            }
        }
        guard reader.offset == reader.end else { throw reader.corrupt("\(reader.end - reader.offset) unexpected bytes after a row", at: reader.offset) }
    }

    /// A key of a key list: a name index and a primary key.
    private func key(_ reader: inout BinaryReader) throws -> ObjectKey {
        let at = reader.offset
        let name = try reader.varint()
        guard name < UInt64(names.count) else { throw reader.corrupt("entity index \(name) out of range", at: at) }
        return ObjectKey(names[Int(name)], try reader.signed())
    }
}
