import Foundation
import ObjectModel
import ObjectStore
import StoreToolkit
import Crypto

/// Encodes and decodes the atomic store file (`docs/atomic-format.md`).
///
/// Decoding checks the whole file and indexes each table's rows, which stay encoded
/// (``PackedRows``), in memory or, for a store opened read-only, in the file: a row is
/// decoded when it is read. Encoding copies the bytes of every row that has not changed
/// since and encodes only the others.
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
                parts.append(try packed.encodedRows())
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
    /// (header, length, checksum) but never held whole: read a chunk at a time, only the
    /// metadata kept. Its rows are checked when the store is opened.
    static func readMetadata(file path: String, chunkSize: Int = 1 << 20) throws -> StoreMetadata {
        var source = try Source(checking: RowFile(path: path), chunkSize: chunkSize)
        var offset = headerSize
        return try source.read(at: &offset) { try readMetadata(&$0) }
    }

    /// The bytes of a file being decoded from its header's end to its checksum: all of them in
    /// memory, or a window of them read from the file as the decoding moves on.
    struct Source {
        /// Where the rows lie: the whole file in memory, or the file to read them from.
        enum Rows {
            case memory([UInt8])
            case file(RowFile)
        }
        let rows: Rows
        let name: String
        /// The window: the file's bytes from `start`.
        private(set) var window: [UInt8]
        private(set) var start = 0
        /// Where the checksum begins.
        let end: Int
        let chunkSize: Int

        /// The whole file in memory, checked (``verify(_:file:)``).
        init(verified data: [UInt8], file: String) throws {
            let reader = try verify(data, file: file)
            (rows, name, window, end, chunkSize) = (.memory(data), file, data, reader.end, data.count)
        }

        /// The file read a chunk at a time: its header, length and checksum checked now.
        init(checking file: RowFile, chunkSize: Int) throws {
            (rows, name, window, end, self.chunkSize) = (.file(file), file.path, [], Swift.max(0, file.size - checksumSize), Swift.max(1, chunkSize))
            let reader = BinaryReader(bytes: [], file: file.path)
            try checkHeader(try file.read(0..<Swift.min(headerSize, file.size))[...], size: file.size, reader: reader, file: file.path)
            var hash = SHA256()
            var at = 0
            while at < end {
                let chunk = try file.read(at..<Swift.min(at + self.chunkSize, end))
                chunk.withUnsafeBytes { hash.update(bufferPointer: $0) }
                at += chunk.count
            }
            guard Array(hash.finalize()) == (try file.read(end..<file.size)) else {
                throw reader.corrupt("checksum mismatch: the file was changed or damaged", at: end)
            }
        }

        /// Whether the window holds every byte up to the checksum.
        private var whole: Bool { start + window.count >= end }

        /// Moves the window to `offset`, holding at least `count` bytes from there (fewer at the end).
        private mutating func slide(to offset: Int, holding count: Int) throws {
            guard case .file(let file) = rows, offset < start || offset + count > start + window.count, !(offset >= start && whole) else { return }
            window = []   // the old window goes before the new one is read
            window = try file.read(offset..<Swift.min(end, offset + Swift.max(count, chunkSize)))
            start = offset
        }

        /// Reads what `body` reads from `offset` and moves `offset` past it. A window too short
        /// for it is grown and `body` run again (so `body` returns what it reads and changes
        /// nothing else): its errors are final once the window holds everything to the checksum
        /// (so they are the errors a whole file in memory gives).
        mutating func read<T>(at offset: inout Int, _ body: (inout BinaryReader) throws -> T) throws -> T {
            var wanted = 0
            while true {
                try slide(to: offset, holding: wanted)
                var reader = BinaryReader(bytes: window, file: name)
                reader.origin = start
                reader.offset = offset - start
                reader.end = end - start
                if reader.end > window.count { reader.end = window.count }
                do {
                    let result = try body(&reader)
                    offset = start + reader.offset
                    return result
                } catch where !whole {
                    wanted = Swift.max(1, 2 * (start + window.count - offset))
                }
            }
        }

        /// Checks and indexes `count` rows from `offset` (``PackedRows/index(_:origin:from:to:rows:columns:relationships:names:file:partial:into:_:)``)
        /// and moves `offset` past them: rows kept in memory, or read from the file when needed.
        mutating func rows(at offset: inout Int, count: Int, columns: [String], relationships: [String], names: [String]) throws -> PackedRows {
            // A row takes at least two bytes and one per column and relationship.
            let room = Swift.min(count, (end - offset) / (2 + columns.count + relationships.count) + 1)
            var keys: [Int64] = [], offsets = RowOffsets(base: offset)
            keys.reserveCapacity(room)
            offsets.reserveCapacity(room + 1)
            var wanted = 0
            while keys.count < count {
                try slide(to: offset, holding: wanted)
                let done = keys.count
                offset = try window.withUnsafeBufferPointer { all in
                    try PackedRows.index(all, origin: start, from: offset, to: end, rows: count - done, columns: columns.count,
                                         relationships: relationships.count, names: names.count, file: name, partial: !whole,
                                         into: &keys, &offsets)
                }
                // On from the first row the window cut: in a window twice as long when it held none.
                let left = start + window.count - offset
                wanted = keys.count == done ? Swift.max(1, 2 * left) : left + 1
            }
            offsets.append(offset)
            switch rows {
            case .memory(let data):
                return PackedRows(bytes: data, keys: keys, offsets: offsets, columns: columns, relationships: relationships, names: names, file: name)
            case .file(let file):
                return PackedRows(source: file, keys: keys, offsets: offsets, columns: columns, relationships: relationships, names: names)
            }
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
        var source = try Source(verified: data, file: file)
        return try decode(&source, flags: data[10])
    }

    /// Checks the whole file at `path`, a chunk at a time, and indexes its rows, which are read
    /// from the file when they are needed (``PackedRows/source``): what is held is the keys and
    /// offsets of the rows, not the rows.
    static func decode(file path: String, chunkSize: Int = 1 << 20) throws -> RecordTables {
        let file = try RowFile(path: path)
        var source = try Source(checking: file, chunkSize: chunkSize)
        return try decode(&source, flags: try file.read(10..<11)[0])
    }

    /// The tables of a checked file, read from after its header; `flags` are the header's.
    private static func decode(_ source: inout Source, flags: UInt8) throws -> RecordTables {
        let file = source.name
        var offset = headerSize
        var tables = RecordTables(metadata: try source.read(at: &offset) { try readMetadata(&$0) })
        let names = try source.read(at: &offset) { reader in try (0..<(try reader.count())).map { _ in try reader.string() } }
        func nameIndex(_ reader: inout BinaryReader) throws -> Int {
            let at = reader.offset
            let i = try reader.varint()
            guard i < UInt64(names.count) else { throw reader.corrupt("entity index \(i) out of range", at: at) }
            return Int(i)
        }
        // What a body passed to `source.read` reads it returns: a body may run again in a larger window.
        tables.lastKey = try source.read(at: &offset) { reader in
            var lastKey: [String: Int64] = [:]
            for _ in 0..<(try reader.count()) {
                let root = names[try nameIndex(&reader)]
                lastKey[root] = try reader.signed()
            }
            return lastKey
        }
        for _ in 0..<(try source.read(at: &offset) { try $0.count() }) {
            let bodyEnd = source.end
            let (entity, columns, relationships, rowCount) = try source.read(at: &offset) { reader in
                let entity = names[try nameIndex(&reader)]
                let columns = try (0..<(try reader.count())).map { _ in try reader.string() }
                let relationships = try (0..<(try reader.count())).map { _ in try reader.string() }
                // The rows follow, beyond this window: their count is bounded by the bytes to the checksum.
                let at = reader.offset
                let rows = try reader.varint()
                guard rows <= UInt64(bodyEnd - reader.origin - reader.offset) + 1 else {
                    throw reader.corrupt("count \(rows) is larger than the data could hold", at: at)
                }
                return (entity, columns, relationships, Int(rows))
            }
            let packed = try source.rows(at: &offset, count: rowCount, columns: columns, relationships: relationships, names: names)
            var ascending = true
            for (i, (a, b)) in zip(packed.keys, packed.keys.dropFirst()).enumerated() where a >= b {
                if a == b { throw corrupt(file, "primary key \(b) appears twice in \(entity)", at: packed.offsets[i + 1]) }
                ascending = false
            }
            tables.setTable(ascending ? RecordTable(packed: packed) : try unpacked(packed, entity: entity, file: file), for: entity)
        }
        if flags & UInt8(historyFlag) != 0 {
            tables = try source.read(at: &offset) { [tables] reader in
                var read = tables
                try readHistory(&reader, into: &read, file: file)
                return read
            }
        }
        if flags & UInt8(orderKeysFlag) != 0 {
            tables = try source.read(at: &offset) { [tables] reader in
                var read = tables
                try readOrderKeys(&reader, into: &read, names: names)
                return read
            }
        }
        guard offset == source.end else {
            throw corrupt(file, "\(source.end - offset) unexpected bytes after the last table", at: offset)
        }
        return tables
    }

    /// A `corrupt` error at byte `offset` of `file`.
    private static func corrupt(_ file: String, _ message: String, at offset: Int) -> StoreError {
        BinaryReader(bytes: [], file: file).corrupt(message, at: offset)
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
    private static func unpacked(_ packed: PackedRows, entity: String, file: String) throws -> RecordTable {
        var table = RecordTable()
        for (i, pk) in packed.keys.enumerated() {
            guard !table.contains(pk) else { throw corrupt(file, "primary key \(pk) appears twice in \(entity)", at: packed.offsets[i]) }
            table.insert(pk, try packed.row(at: i))
        }
        return table
    }
}
