import Foundation
import ObjectModel
import ObjectStore
import Crypto

/// Encodes and decodes the atomic store file (`docs/atomic-format.md`).
enum AtomicFormat {
    static let magic = Data("OBJSTORE".utf8)
    static let version: UInt16 = 1
    static let headerSize = 24
    static let checksumSize = 32

    // MARK: Writing

    static func encode(_ tables: RecordTables) throws -> Data {
        var out = BinaryWriter()
        out.bytes(magic)
        out.fixed(version)
        out.fixed(UInt16(0))       // flags
        out.fixed(UInt32(0))       // reserved
        out.fixed(UInt64(0))       // total length, patched below

        let metadata = try PropertyListValue.binaryPropertyList(tables.metadata.values)
        out.varint(UInt64(metadata.count))
        out.bytes(metadata)

        // Entity names referenced by tables, counters and relationship keys.
        var names = Set(tables.tables.keys).union(tables.lastKey.keys)
        for table in tables.tables.values {
            for row in table.rows.values { for keys in row.relationships.values { for k in keys { names.insert(k.entity) } } }
        }
        let nameList = names.sorted()
        let index = Dictionary(uniqueKeysWithValues: nameList.enumerated().map { ($1, UInt64($0)) })
        out.varint(UInt64(nameList.count))
        for name in nameList { out.string(name) }

        out.varint(UInt64(tables.lastKey.count))
        for (root, last) in tables.lastKey.sorted(by: { $0.key < $1.key }) {
            out.varint(index[root]!)
            out.signed(last)
        }

        let entities = tables.tables.keys.sorted().filter { !(tables.tables[$0]!.order.isEmpty) }
        out.varint(UInt64(entities.count))
        for entity in entities {
            let table = tables.tables[entity]!
            let rows = table.order.map { table.rows[$0]! }
            let columns = Set(rows.flatMap(\.attributes.keys)).sorted()
            let relationships = Set(rows.flatMap(\.relationships.keys)).sorted()
            out.varint(index[entity]!)
            out.varint(UInt64(columns.count))
            for column in columns { out.string(column) }
            out.varint(UInt64(relationships.count))
            for relationship in relationships { out.string(relationship) }
            out.varint(UInt64(rows.count))
            for (pk, row) in zip(table.order, rows) {
                out.signed(pk)
                out.signed(row.version)
                for column in columns { out.value(row.attributes[column]) }
                for relationship in relationships {
                    let keys = row.relationships[relationship]
                    guard let keys else { out.varint(0); continue }
                    out.varint(UInt64(keys.count) + 1)
                    for key in keys {
                        out.varint(index[key.entity]!)
                        out.signed(key.primaryKey)
                    }
                }
            }
        }
        return seal(out.data)
    }

    /// Completes a header and body: writes the total length into the header and appends the checksum.
    static func seal(_ unsealed: Data) -> Data {
        var data = unsealed
        let total = UInt64(data.count + checksumSize)
        withUnsafeBytes(of: total.littleEndian) { data.replaceSubrange(16..<24, with: $0) }
        data.append(Data(SHA256.hash(data: data)))
        return data
    }

    // MARK: Reading

    /// Checks the header, length and checksum; returns a reader positioned after the header.
    static func verify(_ data: Data, file: String) throws -> BinaryReader {
        var reader = BinaryReader(data: data, file: file)
        guard data.count >= magic.count, data.prefix(magic.count) == magic else {
            throw reader.corrupt("not an ObjectStore atomic store (wrong magic)", at: 0)
        }
        guard data.count >= headerSize + checksumSize else {
            throw reader.corrupt("truncated: \(data.count) bytes is shorter than the header and checksum", at: data.count)
        }
        reader.offset = magic.count
        let version: UInt16 = try reader.fixed()
        guard version == Self.version else {
            throw reader.corrupt("unknown format version \(version) (this library reads \(Self.version))", at: 8)
        }
        let _: UInt16 = try reader.fixed()
        let _: UInt32 = try reader.fixed()
        let total: UInt64 = try reader.fixed()
        guard total == UInt64(data.count) else {
            throw reader.corrupt(total > UInt64(data.count) ? "truncated: the header says \(total) bytes, the file has \(data.count)"
                                                            : "the header says \(total) bytes, the file has \(data.count)", at: 16)
        }
        let body = data.prefix(data.count - checksumSize)
        let stored = data.suffix(checksumSize)
        guard Data(SHA256.hash(data: body)) == stored else {
            throw reader.corrupt("checksum mismatch: the file was changed or damaged", at: data.count - checksumSize)
        }
        reader.end = data.count - checksumSize
        return reader
    }

    static func readMetadata(_ reader: inout BinaryReader) throws -> StoreMetadata {
        let start = reader.offset
        let length = try reader.length()
        let bytes = try reader.bytes(length)
        guard let values = PropertyListValue.decodeDictionary(bytes) else {
            throw reader.corrupt("the metadata is not a property list dictionary", at: start)
        }
        return StoreMetadata(values)
    }

    static func decode(_ data: Data, file: String) throws -> RecordTables {
        var reader = try verify(data, file: file)
        var tables = RecordTables(metadata: try readMetadata(&reader))
        let nameCount = try reader.count()
        var names: [String] = []
        for _ in 0..<nameCount { names.append(try reader.string()) }
        func name(_ reader: inout BinaryReader) throws -> String {
            let at = reader.offset
            let i = try reader.varint()
            guard i < UInt64(names.count) else { throw reader.corrupt("entity index \(i) out of range", at: at) }
            return names[Int(i)]
        }
        for _ in 0..<(try reader.count()) {
            let root = try name(&reader)
            tables.lastKey[root] = try reader.signed()
        }
        for _ in 0..<(try reader.count()) {
            let entity = try name(&reader)
            var columns: [String] = []
            for _ in 0..<(try reader.count()) { columns.append(try reader.string()) }
            var relationships: [String] = []
            for _ in 0..<(try reader.count()) { relationships.append(try reader.string()) }
            let rowCount = try reader.count()
            var table = RecordTable()
            for _ in 0..<rowCount {
                let at = reader.offset
                let pk = try reader.signed()
                var row = StoredRow(version: try reader.signed(), attributes: [:], relationships: [:])
                for column in columns { if let v = try reader.value() { row.attributes[column] = v } }
                for relationship in relationships {
                    let n = try reader.count()
                    guard n > 0 else { continue }
                    var keys: [ObjectKey] = []
                    for _ in 0..<(n - 1) { keys.append(ObjectKey(try name(&reader), try reader.signed())) }
                    row.relationships[relationship] = keys
                }
                guard table.rows[pk] == nil else { throw reader.corrupt("primary key \(pk) appears twice in \(entity)", at: at) }
                table.insert(pk, row)
            }
            tables.setTable(table, for: entity)
        }
        guard reader.offset == reader.end else {
            throw reader.corrupt("\(reader.end - reader.offset) unexpected bytes after the last table", at: reader.offset)
        }
        return tables
    }
}

