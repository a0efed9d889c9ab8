import Foundation

/// A value read from a binary property list by ``BinaryPropertyListReader``.
///
/// Besides the types every property list holds, keyed archives (`NSKeyedArchiver`, what
/// compiled models and Core Data's model cache are) hold sets and `CF$UID` references.
package indirect enum PropertyListNode: Sendable, Hashable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case date(Date)
    case data(Data)
    case array([PropertyListNode])
    case set([PropertyListNode])
    case dictionary([String: PropertyListNode])
    /// A `CF$UID`: the index of an object in a keyed archive's `$objects`.
    case uid(Int)
}

/// One object of a binary property list, its children already built: what
/// ``BinaryPropertyListReader`` hands a builder, once per object however often it is referenced.
package enum PropertyListShape<Element> {
    case string(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case date(Date)
    case data(Data)
    case array([Element])
    case set([Element])
    case dictionary([String: Element])
    case uid(Int)
}

extension PropertyListNode {
    /// The node of a shape (every shape is a node).
    package init(shape: PropertyListShape<PropertyListNode>) {
        switch shape {
        case .string(let v): self = .string(v)
        case .integer(let v): self = .integer(v)
        case .real(let v): self = .real(v)
        case .boolean(let v): self = .boolean(v)
        case .date(let v): self = .date(v)
        case .data(let v): self = .data(v)
        case .array(let v): self = .array(v)
        case .set(let v): self = .set(v)
        case .dictionary(let v): self = .dictionary(v)
        case .uid(let v): self = .uid(v)
        }
    }
}

/// A strict reader of binary property lists (`bplist00`).
///
/// They come from files that may be damaged or hostile, and Foundation's reader trusts the
/// file's offsets and references: a damaged one can crash the process (a set or a dictionary
/// key holding a dictionary, for one). This one checks every offset, length and reference
/// against the file, refuses cycles, nesting deeper than 512 levels, duplicate keys, non-string
/// keys and invalid text, and reads each object once however often it is referenced. Sets and
/// UIDs are read only when `archive` is true (a keyed archive); otherwise they make the file
/// unreadable, as does null. A builder turns each object into the caller's value type, once per
/// object: a file whose objects share children (2^100 paths through 100 levels) costs its size,
/// not its paths.
///
/// The layout: the `bplist00` header, the objects, a table of their offsets, and a 32-byte
/// trailer (6 unused bytes, the size of an offset, the size of an object reference, the number
/// of objects, the top object and the table's offset, all big-endian).
package enum BinaryPropertyListReader {
    package static let magic = Data("bplist00".utf8)
    package static let maximumDepth = 512

    /// The top object of `data`, or nil when `data` is not a well-formed binary property list.
    package static func decode(_ data: Data, archive: Bool = false) -> PropertyListNode? {
        decode(data, archive: archive, build: PropertyListNode.init(shape:))
    }

    /// The top object of `data` as `build` makes it from each object's shape; nil when `data` is
    /// not a well-formed binary property list, or `build` returns nil for one of its objects.
    package static func decode<Value>(_ data: Data, archive: Bool = false, build: @escaping (PropertyListShape<Value>) -> Value?) -> Value? {
        var reader = Reader(bytes: [UInt8](data), archive: archive, build: build)
        return reader.top()
    }

    private struct Reader<Value> {
        let bytes: [UInt8]
        let archive: Bool
        let build: (PropertyListShape<Value>) -> Value?
        var offsets: [Int] = []
        var referenceSize = 0
        var tableStart = 0
        var decoded: [Int: Value] = [:]
        var open: Set<Int> = []

        init(bytes: [UInt8], archive: Bool, build: @escaping (PropertyListShape<Value>) -> Value?) {
            self.bytes = bytes
            self.archive = archive
            self.build = build
        }

        /// An unsigned big-endian integer of `size` bytes at `offset` (size 1 to 8, in bounds).
        func unsigned(at offset: Int, size: Int) -> UInt64? {
            guard size >= 1, size <= 8, offset >= 0, offset <= bytes.count - size else { return nil }
            var value: UInt64 = 0
            for byte in bytes[offset..<offset + size] { value = value << 8 | UInt64(byte) }
            return value
        }

        mutating func top() -> Value? {
            let trailerSize = 32
            guard bytes.count >= BinaryPropertyListReader.magic.count + 1 + trailerSize,
                  bytes.starts(with: BinaryPropertyListReader.magic) else { return nil }
            let trailer = bytes.count - trailerSize
            let offsetSize = Int(bytes[trailer + 6])
            referenceSize = Int(bytes[trailer + 7])
            guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
                  let count = unsigned(at: trailer + 8, size: 8), let topIndex = unsigned(at: trailer + 16, size: 8),
                  let table = unsigned(at: trailer + 24, size: 8),
                  count >= 1, topIndex < count, table >= 9, table < UInt64(trailer),
                  count <= UInt64(trailer - Int(table)) / UInt64(offsetSize) else { return nil }
            tableStart = Int(table)
            offsets.reserveCapacity(Int(count))
            for index in 0..<Int(count) {
                guard let offset = unsigned(at: tableStart + index * offsetSize, size: offsetSize),
                      offset >= 8, offset < UInt64(tableStart) else { return nil }
                offsets.append(Int(offset))
            }
            return object(Int(topIndex), depth: 0)
        }

        /// The length that follows a marker whose low nibble is `nibble`: the nibble, or for
        /// 0xF an integer object after the marker. Returns the length and where the content starts.
        func length(_ nibble: UInt8, at offset: Int) -> (Int, Int)? {
            guard nibble == 0xF else { return (Int(nibble), offset + 1) }
            guard offset + 1 < tableStart, bytes[offset + 1] >> 4 == 0x1 else { return nil }
            let size = 1 << Int(bytes[offset + 1] & 0xF)
            guard size <= 8, let value = unsigned(at: offset + 2, size: size), value <= UInt64(Int.max) else { return nil }
            return (Int(value), offset + 2 + size)
        }

        /// Whether `count` items of `size` bytes from `start` lie before the offset table.
        func fits(_ start: Int, _ count: Int, _ size: Int) -> Bool {
            count >= 0 && start <= tableStart && count <= (tableStart - start) / size
        }

        /// The object references `count` of them at `start`.
        func references(at start: Int, count: Int) -> [Int]? {
            guard fits(start, count, referenceSize) else { return nil }
            var result: [Int] = []
            result.reserveCapacity(count)
            for index in 0..<count {
                guard let reference = unsigned(at: start + index * referenceSize, size: referenceSize),
                      reference < UInt64(offsets.count) else { return nil }
                result.append(Int(reference))
            }
            return result
        }

        /// The objects `count` references at `start` point to, in order.
        mutating func elements(_ nibble: UInt8, at offset: Int, depth: Int) -> [Value]? {
            guard let (count, start) = length(nibble, at: offset), let items = references(at: start, count: count) else { return nil }
            var elements: [Value] = []
            elements.reserveCapacity(count)
            for item in items {
                guard let element = object(item, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            return elements
        }

        mutating func object(_ index: Int, depth: Int) -> Value? {
            if let value = decoded[index] { return value }
            guard depth <= BinaryPropertyListReader.maximumDepth, !open.contains(index) else { return nil }
            open.insert(index)
            defer { open.remove(index) }
            let offset = offsets[index]
            let marker = bytes[offset]
            let nibble = marker & 0xF
            let shape: PropertyListShape<Value>?
            switch marker >> 4 {
            case 0x0:
                shape = marker == 0x08 ? .boolean(false) : marker == 0x09 ? .boolean(true) : nil
            case 0x1:
                shape = integer(size: 1 << Int(nibble), at: offset + 1)
            case 0x2:
                let size = 1 << Int(nibble)
                guard fits(offset + 1, 1, size), let bits = unsigned(at: offset + 1, size: size) else { return nil }
                shape = size == 8 ? .real(Double(bitPattern: bits)) : size == 4 ? .real(Double(Float(bitPattern: UInt32(bits)))) : nil
            case 0x3:
                guard marker == 0x33, fits(offset + 1, 1, 8), let bits = unsigned(at: offset + 1, size: 8) else { return nil }
                shape = .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits)))
            case 0x4:
                guard let (count, start) = length(nibble, at: offset), fits(start, count, 1) else { return nil }
                shape = .data(Data(bytes[start..<start + count]))
            case 0x5:
                guard let (count, start) = length(nibble, at: offset), fits(start, count, 1) else { return nil }
                let text = bytes[start..<start + count]
                shape = text.allSatisfy({ $0 < 0x80 }) ? .string(String(decoding: text, as: UTF8.self)) : nil
            case 0x6:
                guard let (count, start) = length(nibble, at: offset), fits(start, count, 2) else { return nil }
                let units = (0..<count).map { UInt16(bytes[start + 2 * $0]) << 8 | UInt16(bytes[start + 2 * $0 + 1]) }
                shape = Self.text(utf16: units).map(PropertyListShape.string)
            case 0x8 where archive:
                // A UID: the low nibble is its size less one.
                let size = Int(nibble) + 1
                guard size <= 8, fits(offset + 1, 1, size), let uid = unsigned(at: offset + 1, size: size),
                      uid <= UInt64(Int32.max) else { return nil }
                shape = .uid(Int(uid))
            case 0xA:
                shape = elements(nibble, at: offset, depth: depth).map(PropertyListShape.array)
            case 0xC where archive:
                shape = elements(nibble, at: offset, depth: depth).map(PropertyListShape.set)
            case 0xD:
                guard let (count, start) = length(nibble, at: offset), count <= Int.max / 2,
                      let items = references(at: start, count: 2 * count) else { return nil }
                var entries: [String: Value] = [:]
                for position in 0..<count {
                    guard case .string(let key)? = keyText(items[position]), entries[key] == nil,
                          let entry = object(items[count + position], depth: depth + 1) else { return nil }
                    entries[key] = entry
                }
                shape = .dictionary(entries)
            default:
                shape = nil   // null, unknown markers, and outside an archive sets and UIDs
            }
            guard let shape, let value = build(shape) else { return nil }
            decoded[index] = value
            return value
        }

        /// A dictionary key: a string object (ASCII or UTF-16), read for its text, not built.
        func keyText(_ index: Int) -> PropertyListShape<Value>? {
            let offset = offsets[index]
            let marker = bytes[offset]
            guard marker >> 4 == 0x5 || marker >> 4 == 0x6, let (count, start) = length(marker & 0xF, at: offset) else { return nil }
            if marker >> 4 == 0x5 {
                guard fits(start, count, 1) else { return nil }
                let text = bytes[start..<start + count]
                return text.allSatisfy({ $0 < 0x80 }) ? .string(String(decoding: text, as: UTF8.self)) : nil
            }
            guard fits(start, count, 2) else { return nil }
            let units = (0..<count).map { UInt16(bytes[start + 2 * $0]) << 8 | UInt16(bytes[start + 2 * $0 + 1]) }
            return Self.text(utf16: units).map(PropertyListShape.string)
        }

        /// An integer of `size` bytes: 1, 2 and 4 are unsigned, 8 is signed, 16 is signed and must fit 64 bits.
        func integer(size: Int, at start: Int) -> PropertyListShape<Value>? {
            guard size <= 16, fits(start, 1, size) else { return nil }
            if size == 16 {
                guard let high = unsigned(at: start, size: 8), let low = unsigned(at: start + 8, size: 8),
                      high == (Int64(bitPattern: low) < 0 ? UInt64.max : 0) else { return nil }
                return .integer(Int64(bitPattern: low))
            }
            guard let bits = unsigned(at: start, size: size) else { return nil }
            return .integer(size == 8 ? Int64(bitPattern: bits) : Int64(bits))
        }

        /// UTF-16 text, or nil when it holds an unpaired surrogate.
        static func text(utf16 units: [UInt16]) -> String? {
            var result = ""
            var iterator = units.makeIterator()
            var decoder = UTF16()
            while true {
                switch decoder.decode(&iterator) {
                case .scalarValue(let scalar): result.unicodeScalars.append(scalar)
                case .emptyInput: return result
                case .error: return nil
                }
            }
        }
    }
}
