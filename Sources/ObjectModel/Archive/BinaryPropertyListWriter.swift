import Foundation

/// Writes a binary property list (`bplist00`), UIDs included: the form of an
/// `NSKeyedArchiver` archive, which ``BinaryPropertyListReader`` reads back.
///
/// Every node becomes one object of the list (equal strings are written once); object
/// references and offsets take the fewest bytes that hold them.
package struct BinaryPropertyListWriter {
    private var objects: [Data] = []
    private var strings: [String: Int] = [:]
    private var pending: [(index: Int, references: [Int])] = []

    /// The property list of `root`.
    package static func encode(_ root: PropertyListNode) -> Data {
        var writer = BinaryPropertyListWriter()
        let top = writer.add(root)
        return writer.finish(top: top)
    }

    /// Adds `node` and its children; returns its object number.
    private mutating func add(_ node: PropertyListNode) -> Int {
        if case .string(let text) = node, let known = strings[text] { return known }
        let index = objects.count
        objects.append(Data())
        var bytes = Data()
        switch node {
        case .boolean(let v): bytes.append(v ? 0x09 : 0x08)
        case .integer(let v): bytes.append(contentsOf: Self.integer(v))
        case .real(let v):
            bytes.append(0x23)
            bytes.append(contentsOf: Self.bigEndian(v.bitPattern, 8))
        case .date(let v):
            bytes.append(0x33)
            bytes.append(contentsOf: Self.bigEndian(v.timeIntervalSinceReferenceDate.bitPattern, 8))
        case .data(let v):
            bytes.append(contentsOf: Self.marker(0x40, v.count))
            bytes.append(v)
        case .string(let v):
            strings[v] = index
            if v.utf8.allSatisfy({ $0 < 0x80 }) {
                bytes.append(contentsOf: Self.marker(0x50, v.utf8.count))
                bytes.append(contentsOf: v.utf8)
            } else {
                let units = Array(v.utf16)
                bytes.append(contentsOf: Self.marker(0x60, units.count))
                for unit in units { bytes.append(contentsOf: Self.bigEndian(UInt64(unit), 2)) }
            }
        case .uid(let v):
            let width = Self.width(UInt64(v))
            bytes.append(0x80 | UInt8(width - 1))
            bytes.append(contentsOf: Self.bigEndian(UInt64(v), width))
        case .array(let items), .set(let items):
            if case .set = node { bytes.append(contentsOf: Self.marker(0xC0, items.count)) } else { bytes.append(contentsOf: Self.marker(0xA0, items.count)) }
            let references = items.map { add($0) }
            pending.append((index, references))
        case .dictionary(let entries):
            bytes.append(contentsOf: Self.marker(0xD0, entries.count))
            let keys = entries.keys.sorted()
            let references = keys.map { add(.string($0)) } + keys.map { add(entries[$0]!) }
            pending.append((index, references))
        }
        objects[index] = bytes
        return index
    }

    /// The objects with their references, the offset table and the trailer.
    private mutating func finish(top: Int) -> Data {
        let referenceSize = Self.width(UInt64(max(objects.count - 1, 0)))
        for (index, references) in pending {
            for reference in references { objects[index].append(contentsOf: Self.bigEndian(UInt64(reference), referenceSize)) }
        }
        var data = Data("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(data.count)
            data.append(object)
        }
        let tableOffset = data.count
        let offsetSize = Self.width(UInt64(tableOffset))
        for offset in offsets { data.append(contentsOf: Self.bigEndian(UInt64(offset), offsetSize)) }
        data.append(contentsOf: [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)])
        data.append(contentsOf: Self.bigEndian(UInt64(objects.count), 8))
        data.append(contentsOf: Self.bigEndian(UInt64(top), 8))
        data.append(contentsOf: Self.bigEndian(UInt64(tableOffset), 8))
        return data
    }

    /// An integer object: 1, 2, 4 or 8 bytes (negative numbers take 8).
    private static func integer(_ v: Int64) -> [UInt8] {
        let size = v < 0 ? 8 : [1, 2, 4, 8].first { UInt64(v) < (1 << (8 * UInt64($0))) || $0 == 8 }!
        return [0x10 | UInt8(size.trailingZeroBitCount)] + bigEndian(UInt64(bitPattern: v), size)
    }

    /// A marker byte with a count: in its low nibble below 15, else 0xF and an integer object.
    private static func marker(_ kind: UInt8, _ count: Int) -> [UInt8] {
        count < 15 ? [kind | UInt8(count)] : [kind | 0x0F] + integer(Int64(count))
    }

    /// The fewest bytes (1, 2, 4 or 8) that hold `v`.
    private static func width(_ v: UInt64) -> Int {
        v < 1 << 8 ? 1 : v < 1 << 16 ? 2 : v < 1 << 32 ? 4 : 8
    }

    private static func bigEndian(_ v: UInt64, _ size: Int) -> [UInt8] {
        (0..<size).reversed().map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) }
    }
}
