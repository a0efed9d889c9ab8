import Foundation
import ObjectModel
import ObjectStore
import StoreToolkit
import Crypto

/// Encodes and decodes the atomic store file (`docs/atomic-format.md`).
///
/// Decoding checks the whole file and indexes each table's rows, which stay encoded
/// (``PackedRows``): a row is decoded when it is read. Encoding copies the bytes of every
/// row that has not changed since and encodes only the others.
enum AtomicFormat {
    static let magic = Data("OBJSTORE".utf8)
    static let version: UInt16 = 1
    static let headerSize = 24
    static let checksumSize = 32
    /// The header flag of a file with a history section after its tables.
    static let historyFlag: UInt16 = 1
    /// The header flag of a file with an order-keys section (after the history section, if any).
    static let orderKeysFlag: UInt16 = 2

    // MARK: Writing

    /// The whole file as runs of bytes to write one after another: the parts it encodes and,
    /// between them, tables of packed rows in the file's shape as the bytes they lie in (not
    /// copied), the checksum last.
    static func encodeParts(_ tables: RecordTables) throws -> [ArraySlice<UInt8>] {
        var parts: [ArraySlice<UInt8>] = []
        var out = BinaryWriter()
        out.reserveCapacity(tables.tables.values.reduce(4_096) { $0 + ($1.isPackedOnly ? 64 : ($1.packed.map { $0.offsets.last! - $0.offsets.first! } ?? 0) + $1.rows.count * 64) })
        out.bytes(magic)
        out.fixed(version)
        // Order keys of the rows that keep some, by entity (index into the names), key and relationship.
        var orderKeys: [(entity: String, pk: Int64, keys: [String: [Int64]])] = []
        for (entity, table) in tables.tables.sorted(by: { $0.key < $1.key }) where !table.packedOrderKeys.isEmpty || table.rows.values.contains(where: { !$0.orderKeys.isEmpty }) {
            for pk in table.order {
                let keys = table.orderKeys(pk)
                if !keys.isEmpty { orderKeys.append((entity, pk, keys)) }
            }
        }
        out.fixed((tables.hasHistorySection ? historyFlag : 0) | (orderKeys.isEmpty ? 0 : orderKeysFlag))       // flags
        out.fixed(UInt32(0))       // reserved
        out.fixed(UInt64(0))       // total length, patched below

        let metadata = try PropertyListValue.binaryPropertyList(tables.metadata.values)
        out.varint(UInt64(metadata.count))
        out.bytes(metadata)

        // Entity names referenced by tables, counters and relationship keys (a packed table's
        // rows refer to the names of the file they came from).
        var names = Set(tables.tables.keys).union(tables.lastKey.keys)
        for table in tables.tables.values {
            if let packed = table.packed { names.formUnion(packed.names) }
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

        let entities = tables.tables.keys.sorted().filter { tables.tables[$0]!.count > 0 }
        out.varint(UInt64(entities.count))
        for entity in entities {
            let table = tables.tables[entity]!
            var columnSet = Set(table.packed?.columns ?? []), relationshipSet = Set(table.packed?.relationships ?? [])
            for row in table.rows.values {
                for name in row.attributes.keys { columnSet.insert(name) }
                for name in row.relationships.keys { relationshipSet.insert(name) }
            }
            let columns = columnSet.sorted(), relationships = relationshipSet.sorted()
            out.varint(index[entity]!)
            out.varint(UInt64(columns.count))
            for column in columns { out.string(column) }
            out.varint(UInt64(relationships.count))
            for relationship in relationships { out.string(relationship) }
            out.varint(UInt64(table.count))
            // Packed rows are copied as they are when their shape is the file's, re-encoded otherwise.
            let packed = table.packed
            let plan = packed?.transcoding(to: PackedRows.Shape(columns: columns, relationships: relationships, names: nameList))
            if let packed, let plan, plan.copies, table.isPackedOnly {
                parts.append(out.buffer[...])
                parts.append(packed.bytes[packed.offsets.first!..<packed.offsets.last!])
                out = BinaryWriter()
                continue
            }
            for pk in table.order {
                if let packed, let plan, table.rows[pk] == nil, let i = table.packedIndex(pk) {
                    try packed.write(row: i, plan, into: &out)
                    continue
                }
                guard let row = try table.row(pk) else { continue }
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
        if tables.hasHistorySection {
            out.signed(tables.lastHistoryToken)
            out.varint(UInt64(tables.history.count))
            for entry in tables.history {
                out.signed(entry.token)
                out.varint(UInt64(entry.bytes.count))
                out.bytes(entry.bytes)
            }
        }
        if !orderKeys.isEmpty {
            out.varint(UInt64(orderKeys.count))
            for (entity, pk, keys) in orderKeys {
                out.varint(index[entity]!)
                out.signed(pk)
                out.varint(UInt64(keys.count))
                for (name, numbers) in keys.sorted(by: { $0.key < $1.key }) {
                    out.string(name)
                    out.varint(UInt64(numbers.count))
                    for number in numbers { out.signed(number) }
                }
            }
        }
        parts.append(out.buffer[...])
        return seal(parts)
    }

    /// Completes a header and body: writes the total length into the header and appends the checksum.
    static func seal(_ unsealed: [UInt8]) -> [UInt8] {
        Array(seal([unsealed[...]]).joined())
    }

    /// Completes a header and body given in parts (the header in the first): writes the total
    /// length into the header and adds the checksum as a last part.
    static func seal(_ unsealed: [ArraySlice<UInt8>]) -> [ArraySlice<UInt8>] {
        var parts = unsealed
        let total = UInt64(parts.reduce(checksumSize) { $0 + $1.count })
        let start = parts[0].startIndex
        withUnsafeBytes(of: total.littleEndian) { parts[0].replaceSubrange((start + 16)..<(start + 24), with: $0) }
        var hash = SHA256()
        for part in parts { part.withUnsafeBytes { hash.update(bufferPointer: $0) } }
        parts.append(Array(hash.finalize())[...])
        return parts
    }

    // MARK: Reading

    /// Checks the header, length and checksum; returns a reader positioned after the header.
    static func verify(_ data: [UInt8], file: String) throws -> BinaryReader {
        var reader = BinaryReader(bytes: data, file: file)
        try checkHeader(data.prefix(headerSize), size: data.count, reader: reader, file: file)
        let body = data[..<(data.count - checksumSize)]
        let stored = data[(data.count - checksumSize)...]
        guard SHA256.hash(data: body).elementsEqual(stored) else {
            throw reader.corrupt("checksum mismatch: the file was changed or damaged", at: data.count - checksumSize)
        }
        reader.offset = headerSize
        reader.end = data.count - checksumSize
        return reader
    }

    /// Checks a file's first bytes (up to the header's size) against its size: magic, version,
    /// flags, the length the header gives; `reader` names the file in errors.
    private static func checkHeader(_ header: ArraySlice<UInt8>, size: Int, reader: BinaryReader, file: String) throws {
        guard header.count >= magic.count, header.prefix(magic.count).elementsEqual(magic) else {
            throw reader.corrupt("not an ObjectStore atomic store (wrong magic)", at: 0)
        }
        guard size >= headerSize + checksumSize else {
            throw reader.corrupt("truncated: \(size) bytes is shorter than the header and checksum", at: size)
        }
        var fields = BinaryReader(bytes: Array(header), file: file)
        fields.offset = magic.count
        let version: UInt16 = try fields.fixed()
        guard version == Self.version else {
            throw reader.corrupt("unknown format version \(version) (this library reads \(Self.version))", at: 8)
        }
        let flags: UInt16 = try fields.fixed()
        guard flags & ~(historyFlag | orderKeysFlag) == 0 else { throw reader.corrupt("unknown header flags \(flags)", at: 10) }
        let _: UInt32 = try fields.fixed()
        let total: UInt64 = try fields.fixed()
        guard total == UInt64(size) else {
            throw reader.corrupt(total > UInt64(size) ? "truncated: the header says \(total) bytes, the file has \(size)"
                                                      : "the header says \(total) bytes, the file has \(size)", at: 16)
        }
    }

    /// The metadata of the file at `path`, the file checked as ``verify(_:file:)`` checks it
    /// (header, length, checksum) but never held whole: read a chunk at a time, only the header
    /// and the metadata kept. Its rows are checked when the store is opened.
    static func readMetadata(file path: String, chunkSize: Int = 1 << 20) throws -> StoreMetadata {
        let reader = BinaryReader(bytes: [], file: path)
        return try withFileChunks(path, size: chunkSize) { size, chunks in
            let bodyEnd = size - checksumSize
            var hash = SHA256()
            // The file's first bytes, up to the metadata's end once its length is read; the checksum.
            var head: [UInt8] = [], headEnd: Int?, checksum: [UInt8] = [], offset = 0
            try chunks { chunk in
                if offset < bodyEnd { chunk.prefix(bodyEnd - offset).withUnsafeBytes { hash.update(bufferPointer: $0) } }
                if offset + chunk.count > bodyEnd { checksum += chunk.suffix(offset + chunk.count - Swift.max(offset, bodyEnd)) }
                if headEnd.map({ head.count < $0 }) ?? true { head += chunk.prefix((headEnd ?? .max) - head.count) }
                if headEnd == nil, head.count >= headerSize + 10 || offset + chunk.count == size {
                    try checkHeader(head.prefix(headerSize), size: size, reader: reader, file: path)
                    var length = BinaryReader(bytes: head, file: path)
                    length.offset = headerSize
                    // A length that does not read ends the head here: reading the metadata says why.
                    headEnd = (try? length.varint()).map { length.offset + Swift.min(Int(clamping: $0), size) } ?? head.count
                    head = Array(head.prefix(headEnd!))
                }
                offset += chunk.count
            }
            try checkHeader(head.prefix(headerSize), size: size, reader: reader, file: path)
            guard Array(hash.finalize()) == checksum else {
                throw reader.corrupt("checksum mismatch: the file was changed or damaged", at: size - checksumSize)
            }
            var metadata = BinaryReader(bytes: head, file: path)
            metadata.offset = headerSize
            metadata.end = Swift.min(head.count, bodyEnd)
            return try readMetadata(&metadata)
        }
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

    /// Checks the whole file and indexes its rows, which stay encoded in `data` (``PackedRows``).
    static func decode(_ data: [UInt8], file: String) throws -> RecordTables {
        var reader = try verify(data, file: file)
        var tables = RecordTables(metadata: try readMetadata(&reader))
        let nameCount = try reader.count()
        var names: [String] = []
        for _ in 0..<nameCount { names.append(try reader.string()) }
        func nameIndex(_ reader: inout BinaryReader) throws -> Int {
            let at = reader.offset
            let i = try reader.varint()
            guard i < UInt64(names.count) else { throw reader.corrupt("entity index \(i) out of range", at: at) }
            return Int(i)
        }
        for _ in 0..<(try reader.count()) {
            let root = names[try nameIndex(&reader)]
            tables.lastKey[root] = try reader.signed()
        }
        for _ in 0..<(try reader.count()) {
            let entity = names[try nameIndex(&reader)]
            var columns: [String] = []
            for _ in 0..<(try reader.count()) { columns.append(try reader.string()) }
            var relationships: [String] = []
            for _ in 0..<(try reader.count()) { relationships.append(try reader.string()) }
            let rowCount = try reader.count()
            let (keys, offsets) = try PackedRows.index(data, from: reader.offset, to: reader.end, rows: rowCount, columns: columns.count,
                                                       relationships: relationships.count, names: names.count, file: file)
            reader.offset = offsets.last!
            var ascending = true
            for (i, (a, b)) in zip(keys, keys.dropFirst()).enumerated() where a >= b {
                if a == b { throw reader.corrupt("primary key \(b) appears twice in \(entity)", at: offsets[i + 1]) }
                ascending = false
            }
            let packed = PackedRows(bytes: data, keys: keys, offsets: offsets, columns: columns,
                                    relationships: relationships, names: names, file: file)
            tables.setTable(ascending ? RecordTable(packed: packed) : try unpacked(packed, entity: entity, reader: reader), for: entity)
        }
        if data[10] & UInt8(historyFlag) != 0 { try readHistory(&reader, into: &tables, file: file) }
        if data[10] & UInt8(orderKeysFlag) != 0 { try readOrderKeys(&reader, into: &tables, names: names) }
        guard reader.offset == reader.end else {
            throw reader.corrupt("\(reader.end - reader.offset) unexpected bytes after the last table", at: reader.offset)
        }
        return tables
    }

    /// The history section: the last token handed out, then each transaction's token and record, ascending.
    private static func readHistory(_ reader: inout BinaryReader, into tables: inout RecordTables, file: String) throws {
        tables.lastHistoryToken = try reader.signed()
        var previous: Int64 = 0
        for _ in 0..<(try reader.count()) {
            let at = reader.offset
            let token = try reader.signed()
            guard token > previous, token <= tables.lastHistoryToken else {
                throw reader.corrupt("history token \(token) is out of order (after \(previous), at most \(tables.lastHistoryToken))", at: at)
            }
            previous = token
            let bytes = try reader.bytes(try reader.length())
            // Checked now, so a damaged record is found when the file is read, not when history is.
            try HistoryRecord.check(bytes, place: "\(file), transaction \(token)")
            tables.history.append(HistoryEntry(token: token, bytes: Data(bytes)))
        }
    }

    /// The order-keys section: for each row that keeps some, its entity, key, and each list's order keys.
    private static func readOrderKeys(_ reader: inout BinaryReader, into tables: inout RecordTables, names: [String]) throws {
        var found: [String: [Int64: [String: [Int64]]]] = [:]
        for _ in 0..<(try reader.count()) {
            let at = reader.offset
            let i = try reader.varint()
            guard i < UInt64(names.count) else { throw reader.corrupt("entity index \(i) out of range", at: at) }
            let entity = names[Int(i)], pk = try reader.signed()
            var keys: [String: [Int64]] = [:]
            for _ in 0..<(try reader.count()) {
                let name = try reader.string()
                keys[name] = try (0..<(try reader.count())).map { _ in try reader.signed() }
            }
            guard let row = try tables.tables[entity]?.row(pk), found[entity]?[pk] == nil else {
                throw reader.corrupt("order keys of \(entity)/\(pk), which the file does not hold once", at: at)
            }
            for (name, numbers) in keys {
                let members = (row.relationships[name] ?? []).count
                guard numbers.count == members, numbers.indices.dropFirst().allSatisfy({ numbers[$0 - 1] < numbers[$0] }) else {
                    throw reader.corrupt("\(entity)/\(pk).\(name) has \(numbers.count) order keys, not one ascending key for each of \(members) members", at: at)
                }
            }
            found[entity, default: [:]][pk] = keys
        }
        for (entity, rows) in found {
            var table = tables.tables[entity]!
            tables.setTable(RecordTable(), for: entity)
            table.setOrderKeys(rows)
            tables.setTable(table, for: entity)
        }
    }

    /// The rows of a table whose keys are not in ascending order, decoded (the format asks for
    /// ascending order; this library always wrote it).
    private static func unpacked(_ packed: PackedRows, entity: String, reader: BinaryReader) throws -> RecordTable {
        var table = RecordTable()
        for (i, pk) in packed.keys.enumerated() {
            guard !table.contains(pk) else { throw reader.corrupt("primary key \(pk) appears twice in \(entity)", at: packed.offsets[i]) }
            table.insert(pk, try packed.row(at: i))
        }
        return table
    }
}
