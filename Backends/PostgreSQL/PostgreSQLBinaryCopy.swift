import Foundation
import ObjectModel
import ObjectStore

/// `COPY`'s binary format (PostgreSQL's "Binary Format" of `COPY`): a header, then each row as
/// its field count and each field as its length (-1 for NULL) and the bytes the column type's
/// `…send` function writes, all integers big-endian; a trailer of -1 at the end.
///
/// Rows go in this format rather than as text: no value is formatted or parsed on either side
/// (a double's 8 bytes arrive as they are, NaN, the infinities and -0.0 included), no text is
/// escaped, and the server stores a row in less time (docs/postgresql-layout.md, "Bulk paths").
enum PGBinaryCopy {
    /// The statement's option that makes a `COPY … FROM STDIN` binary; ``PGConnection`` sends
    /// ``header`` after beginning a statement ending with it, and ``trailer`` before ending it.
    static let option = " (FORMAT binary)"
    /// `PGCOPY\n\377\r\n\0`, no flags, no header extension.
    static let header: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [0, 0, 0, 0] + [0, 0, 0, 0]
    /// A field count of -1.
    static let trailer: [UInt8] = [0xFF, 0xFF]

    @inline(__always)
    static func appendFieldCount(_ count: Int, to bytes: inout [UInt8]) {
        bytes.append(UInt8(truncatingIfNeeded: count >> 8))
        bytes.append(UInt8(truncatingIfNeeded: count))
    }

    @inline(__always)
    static func appendNull(to bytes: inout [UInt8]) {
        bytes.append(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF])
    }

    @inline(__always)
    private static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: Int32(length).bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `bigint` field.
    @inline(__always)
    static func appendBigint(_ value: Int64, to bytes: inout [UInt8]) {
        appendLength(8, to: &bytes)
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `text` field: the string's UTF-8 (stored marked when it holds U+0000 or U+FFFF, ``PostgreSQLValues/escape(_:)``).
    @inline(__always)
    static func appendText(_ text: String, to bytes: inout [UInt8]) throws {
        try appendVariable(PostgreSQLValues.escape(text).utf8, to: &bytes)
    }

    /// A field of `field`'s bytes.
    /// - Throws: `StoreError` with code `invalidChange` past a field's largest length (PostgreSQL
    ///   takes no field over 1 GiB: it refuses the copy, naming the row).
    @inline(__always)
    private static func appendVariable<Bytes: Collection<UInt8>>(_ field: Bytes, to bytes: inout [UInt8]) throws {
        guard field.count <= Int(Int32.max) else {
            throw StoreError(.invalidChange, "a value of \(field.count) bytes is longer than a PostgreSQL field can be")
        }
        appendLength(field.count, to: &bytes)
        bytes.append(contentsOf: field)
    }

    /// An entity name or other text known to need no marking.
    @inline(__always)
    static func appendPlainText(_ utf8: [UInt8], to bytes: inout [UInt8]) {
        appendLength(utf8.count, to: &bytes)
        bytes.append(contentsOf: utf8)
    }

    /// The field of `value` in the column its attribute's type has (``PostgreSQLLayout/columnType(_:)``):
    /// the value is one the type accepts (`RecordBatch.checkInsertable(in:)` made sure of it; an
    /// `undefined` attribute is transient, never stored).
    /// - Throws: `StoreError` with code `invalidChange` for a value longer than a field can be.
    static func appendValue(_ value: Value, to bytes: inout [UInt8]) throws {
        switch value {
        case .data(let v):
            try appendVariable(v, to: &bytes)
        case .integer(let v):
            appendBigint(v, to: &bytes)
        case .double(let v):
            appendDouble(v, to: &bytes)
        case .date(let v):
            appendDouble(v.timeIntervalSinceReferenceDate, to: &bytes)
        case .boolean(let v):
            appendLength(1, to: &bytes)
            bytes.append(v ? 1 : 0)
        case .string(let v):
            try appendText(v, to: &bytes)
        case .uri(let v):
            try appendText(v.absoluteString, to: &bytes)
        case .uuid(let v):
            appendLength(16, to: &bytes)
            withUnsafeBytes(of: v.uuid) { bytes.append(contentsOf: $0) }
        case .decimal(let v):
            try appendNumeric(ValueText.text(v), to: &bytes)
        }
    }

    /// A `double precision` field: `float8send`'s 8 bytes, the bits as they are.
    @inline(__always)
    static func appendDouble(_ value: Double, to bytes: inout [UInt8]) {
        appendLength(8, to: &bytes)
        withUnsafeBytes(of: value.bitPattern.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `numeric` field of the number `text` writes (`-0.005`, `19.990`, `1E+5`, `NaN`), as
    /// `numeric_send` writes the value `numeric_in` reads from that text: its digits in base
    /// 10,000 without leading or trailing zero groups, the weight of the first group, the sign,
    /// and the display scale (the fraction's digits as written, so `19.990` keeps three).
    /// - Throws: `StoreError` with code `invalidChange` for text that is not such a number.
    static func appendNumeric(_ text: String, to bytes: inout [UInt8]) throws {
        guard let number = NumericParts(text) else {
            throw StoreError(.invalidChange, "the decimal \(String(reflecting: text)) cannot be written as a PostgreSQL numeric")
        }
        appendLength(8 + 2 * number.groups.count, to: &bytes)
        for word in [number.groups.count, number.weight, number.sign, number.scale] {
            bytes.append(UInt8(truncatingIfNeeded: word >> 8))
            bytes.append(UInt8(truncatingIfNeeded: word))
        }
        for group in number.groups {
            bytes.append(UInt8(truncatingIfNeeded: group >> 8))
            bytes.append(UInt8(truncatingIfNeeded: group))
        }
    }

    /// A number's base-10,000 form, as PostgreSQL's `numeric` holds it.
    struct NumericParts: Equatable {
        /// The digit groups, most significant first, none zero at either end.
        var groups: [Int]
        /// The power of 10,000 of the first group.
        var weight: Int
        /// `0x0000` positive, `0x4000` negative, `0xC000` NaN.
        var sign: Int
        /// The digits after the decimal point as written.
        var scale: Int

        init(groups: [Int], weight: Int, sign: Int, scale: Int) {
            (self.groups, self.weight, self.sign, self.scale) = (groups, weight, sign, scale)
        }

        /// Parses `[-+]digits[.digits][(e|E)[-+]digits]` or `NaN`; nil for anything else.
        init?(_ text: String) {
            if text == "NaN" {
                self.init(groups: [], weight: 0, sign: 0xC000, scale: 0)
                return
            }
            var utf8 = Substring(text).utf8[...]
            var negative = false
            if let first = utf8.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
                negative = first == UInt8(ascii: "-")
                utf8 = utf8.dropFirst()
            }
            var digits: [UInt8] = []
            var fraction = 0, seenPoint = false, exponent = 0
            while let byte = utf8.first {
                if byte >= 0x30 && byte <= 0x39 {
                    digits.append(byte - 0x30)
                    if seenPoint { fraction += 1 }
                } else if byte == UInt8(ascii: "."), !seenPoint {
                    seenPoint = true
                } else {
                    break
                }
                utf8 = utf8.dropFirst()
            }
            guard !digits.isEmpty else { return nil }
            if let byte = utf8.first, byte | 0x20 == UInt8(ascii: "e") {
                guard let value = Int(String(decoding: utf8.dropFirst(), as: UTF8.self)), abs(value) <= 100_000 else { return nil }
                exponent = value
                utf8 = utf8[utf8.endIndex...]
            }
            guard utf8.isEmpty else { return nil }
            // The value is digits × 10^(exponent − fraction); numeric_in's scale is the fraction's
            // digits less the exponent, at least 0.
            let scale = max(0, fraction - exponent)
            // Where the decimal point falls in `digits` (may be before the first or past the last).
            let point = digits.count - fraction + exponent
            // Groups of four aligned on the point: pad the front to a multiple of four before the
            // point, the back to a multiple of four after it.
            let front = ((4 - point % 4) % 4 + 4) % 4
            let integerGroups = (point + front) / 4
            // (Zero groups between the point and the digits, either side, are in the weight.)
            var padded = [UInt8](repeating: 0, count: front) + digits
            padded += [UInt8](repeating: 0, count: (4 - padded.count % 4) % 4)
            var groups: [Int] = stride(from: 0, to: padded.count, by: 4).map { start in
                padded[start..<start + 4].reduce(0) { $0 * 10 + Int($1) }
            }
            var weight = integerGroups - 1
            while let first = groups.first, first == 0 { groups.removeFirst(); weight -= 1 }
            while let last = groups.last, last == 0 { groups.removeLast() }
            if groups.isEmpty { weight = 0 }
            // What numeric_recv takes: a display scale up to 0x3FFF, a weight that fits 16 bits.
            guard scale <= 0x3FFF, weight >= Int(Int16.min), weight <= Int(Int16.max), groups.count <= Int(Int16.max) else { return nil }
            self.init(groups: groups, weight: weight, sign: negative && !groups.isEmpty ? 0x4000 : 0, scale: scale)
        }
    }
}
