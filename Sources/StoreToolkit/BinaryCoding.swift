import Foundation
import ObjectModel
import ObjectStore

/// Writes the binary encoding the atomic format and the LMDB rows share (`docs/atomic-format.md`):
/// little-endian integers, LEB128 varints, zigzag signed varints, tagged values.
public struct BinaryWriter {
    /// An empty writer.
    public init() {}

    /// The bytes written so far, as an array (no copy).
    public internal(set) var buffer: [UInt8] = []

    /// How many bytes were written so far.
    public var count: Int { buffer.count }

    /// The bytes written so far.
    public var data: Data {
        get { Data(buffer) }
        set { buffer = [UInt8](newValue) }
    }

    /// Makes room for `count` bytes in all.
    public mutating func reserveCapacity(_ count: Int) { buffer.reserveCapacity(count) }

    public mutating func bytes(_ bytes: Data) { buffer.append(contentsOf: bytes) }
    /// Appends one byte.
    public mutating func byte(_ byte: UInt8) { buffer.append(byte) }
    /// Appends raw bytes (a run of already encoded ones).
    public mutating func bytes(_ bytes: UnsafeBufferPointer<UInt8>) { buffer.append(contentsOf: bytes) }
    /// Appends raw bytes (a run of already encoded ones).
    public mutating func bytes(_ bytes: ArraySlice<UInt8>) { buffer.append(contentsOf: bytes) }
    public mutating func fixed<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { buffer.append(contentsOf: $0) } }
    public mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 { buffer.append(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
        buffer.append(UInt8(v))
    }
    public mutating func signed(_ v: Int64) { varint(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }
    public mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            buffer.append(contentsOf: utf8)
        }
    }

    public mutating func value(_ value: Value?) {
        guard let value else { buffer.append(0); return }
        switch value {
        case .integer(let v): buffer.append(1); signed(v)
        case .double(let v): buffer.append(2); fixed(v.bitPattern)
        case .decimal(let v): buffer.append(3); string(ValueText.text(v))
        case .string(let v): buffer.append(4); string(v)
        case .boolean(let v): buffer.append(v ? 6 : 5)
        case .date(let v): buffer.append(7); fixed(v.timeIntervalSinceReferenceDate.bitPattern)
        case .data(let v): buffer.append(8); varint(UInt64(v.count)); buffer.append(contentsOf: v)
        case .uuid(let v): buffer.append(9); withUnsafeBytes(of: v.uuid) { buffer.append(contentsOf: $0) }
        case .uri(let v): buffer.append(10); string(v.absoluteString)
        }
    }
}

/// Reads what ``BinaryWriter`` writes. Bounds-checked: every length and count is
/// checked against the bytes that remain, so no allocation is sized by an
/// unchecked number, and every failure is a `StoreError` with code `corrupt`
/// naming the file and the byte offset.
public struct BinaryReader {
    let storage: [UInt8]
    let file: String
    /// The position of the next byte.
    public var offset = 0
    /// Where the readable bytes end.
    public var end: Int
    /// Where in the file the first byte lies: added to every offset an error names (for a
    /// reader over part of a file).
    public var origin = 0

    /// A reader over `data`, naming `file` in errors.
    public init(data: Data, file: String) {
        self.init(bytes: [UInt8](data), file: file)
    }

    /// A reader over `bytes` (shared, not copied), naming `file` in errors.
    public init(bytes: [UInt8], file: String) {
        self.storage = bytes
        self.file = file
        self.end = bytes.count
    }

    /// A `corrupt` error at `offset` (of these bytes) that names the file and the byte offset in it.
    public func corrupt(_ message: String, at offset: Int) -> StoreError {
        StoreError(.corrupt, "\(message) (at byte offset \(origin + offset))", url: URL(filePath: file))
    }

    private func need(_ n: Int) throws {
        guard n >= 0, n <= end - offset else {
            throw corrupt("truncated: \(n) bytes needed, \(end - offset) left", at: offset)
        }
    }

    public mutating func byte() throws -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return storage[offset]
    }

    public mutating func bytes(_ n: Int) throws -> Data {
        try need(n)
        defer { offset += n }
        return Data(storage[offset..<(offset + n)])
    }

    /// Steps over `n` bytes.
    public mutating func skip(_ n: Int) throws {
        try need(n)
        offset += n
    }

    public mutating func fixed<T: FixedWidthInteger>() throws -> T {
        let size = MemoryLayout<T>.size
        try need(size)
        let at = offset
        offset += size
        return T(littleEndian: storage.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: T.self) })
    }

    public mutating func varint() throws -> UInt64 {
        try cursor { try $0.varint() }
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
        try cursor { try $0.string(validating: true) }
    }

    public mutating func value() throws -> Value? {
        try cursor { try $0.value(validating: true) }
    }

    /// Steps over a value, checking it as ``value()`` does, without building it (except a
    /// decimal's or a URI's text, which it parses to check).
    public mutating func skipValue() throws {
        try cursor { try $0.checkValue() }
    }

    /// Runs `body` with a cursor at the next byte, then moves past what it read.
    private mutating func cursor<T>(_ body: (inout RowCursor) throws -> T) throws -> T {
        let (result, at) = try storage.withUnsafeBufferPointer { all in
            var cursor = RowCursor(all, from: offset, to: end, file: file, origin: origin)
            return (try body(&cursor), cursor.at)
        }
        offset = at
        return result
    }
}
