import Foundation
import ObjectModel

/// Writes the binary encoding the atomic format and the LMDB rows share (`docs/atomic-format.md`):
/// little-endian integers, LEB128 varints, zigzag signed varints, tagged values.
public struct BinaryWriter {
    /// An empty writer.
    public init() {}

    /// The bytes written so far.
    public var data = Data()

    public mutating func bytes(_ bytes: Data) { data.append(bytes) }
    public mutating func fixed<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
    public mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 { data.append(UInt8(v & 0x7f) | 0x80); v >>= 7 }
        data.append(UInt8(v))
    }
    public mutating func signed(_ v: Int64) { varint(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }
    public mutating func string(_ s: String) { let u = Data(s.utf8); varint(UInt64(u.count)); data.append(u) }

    public mutating func value(_ value: Value?) {
        guard let value else { data.append(0); return }
        switch value {
        case .integer(let v): data.append(1); signed(v)
        case .double(let v): data.append(2); fixed(v.bitPattern)
        case .decimal(let v): data.append(3); string(v.description)
        case .string(let v): data.append(4); string(v)
        case .boolean(let v): data.append(v ? 6 : 5)
        case .date(let v): data.append(7); fixed(v.timeIntervalSinceReferenceDate.bitPattern)
        case .data(let v): data.append(8); varint(UInt64(v.count)); data.append(v)
        case .uuid(let v): data.append(9); withUnsafeBytes(of: v.uuid) { data.append(contentsOf: $0) }
        case .uri(let v): data.append(10); string(v.absoluteString)
        }
    }
}

/// Reads what ``BinaryWriter`` writes. Bounds-checked: every length and count is
/// checked against the bytes that remain, so no allocation is sized by an
/// unchecked number, and every failure is a ``StoreError`` with code `corrupt`
/// naming the file and the byte offset.
public struct BinaryReader {
    let data: Data
    let file: String
    /// The position of the next byte.
    public var offset = 0
    /// Where the readable bytes end.
    public var end: Int

    /// A reader over `data`, naming `file` in errors.
    public init(data: Data, file: String) {
        self.data = data
        self.file = file
        self.end = data.count
    }

    public func corrupt(_ message: String, at offset: Int) -> StoreError {
        StoreError(.corrupt, "\(message) (at byte offset \(offset))", url: URL(filePath: file))
    }

    private func need(_ n: Int) throws {
        guard n >= 0, n <= end - offset else {
            throw corrupt("truncated: \(n) bytes needed, \(end - offset) left", at: offset)
        }
    }

    public mutating func byte() throws -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return data[data.startIndex + offset]
    }

    public mutating func bytes(_ n: Int) throws -> Data {
        try need(n)
        defer { offset += n }
        return data.subdata(in: (data.startIndex + offset)..<(data.startIndex + offset + n))
    }

    public mutating func fixed<T: FixedWidthInteger>() throws -> T {
        let raw = try bytes(MemoryLayout<T>.size)
        var v: T = 0
        for (i, b) in raw.enumerated() { v |= T(b) << (8 * i) }
        return v
    }

    public mutating func varint() throws -> UInt64 {
        let start = offset
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            if shift == 63 && b > 1 { throw corrupt("varint overflows 64 bits", at: start) }
            result |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw corrupt("varint longer than 10 bytes", at: start) }
        }
    }

    public mutating func signed() throws -> Int64 {
        let v = try varint()
        return Int64(bitPattern: (v >> 1) ^ (0 &- (v & 1)))
    }

    /// A byte length: at most what remains.
    public mutating func length() throws -> Int {
        let at = offset
        let v = try varint()
        guard v <= UInt64(end - offset) else { throw corrupt("length \(v) runs past the end of the data", at: at) }
        return Int(v)
    }

    /// An element count: each element takes at least one byte, so at most what remains.
    public mutating func count() throws -> Int {
        let at = offset
        let v = try varint()
        guard v <= UInt64(end - offset) + 1 else { throw corrupt("count \(v) is larger than the data could hold", at: at) }
        return Int(v)
    }

    public mutating func string() throws -> String {
        let at = offset
        let raw = try bytes(try length())
        guard let s = String(data: raw, encoding: .utf8) else { throw corrupt("a string is not valid UTF-8", at: at) }
        return s
    }

    public mutating func value() throws -> Value? {
        let at = offset
        switch try byte() {
        case 0: return nil
        case 1: return .integer(try signed())
        case 2: return .double(Double(bitPattern: try fixed()))
        case 3:
            let text = try string()
            guard let d = ValueText.decimal(text) else { throw corrupt("bad decimal \(text)", at: at) }
            return .decimal(d)
        case 4: return .string(try string())
        case 5: return .boolean(false)
        case 6: return .boolean(true)
        case 7: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try fixed())))
        case 8: return .data(try bytes(try length()))
        case 9:
            let raw = try bytes(16)
            return .uuid(raw.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) })
        case 10:
            let text = try string()
            guard let url = ValueText.uri(text) else { throw corrupt("bad URI \(text)", at: at) }
            return .uri(url)
        case let tag: throw corrupt("unknown value tag \(tag)", at: at)
        }
    }
}
