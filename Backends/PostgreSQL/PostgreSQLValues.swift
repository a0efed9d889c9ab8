import Foundation
import ObjectModel
import ObjectStore

/// How attribute values are bound to and read from columns (docs/postgresql-layout.md, "Values").
enum PostgreSQLValues {
    /// The parameter that stores `value` in its attribute's column (nil for NULL).
    ///
    /// Doubles and dates go as the 8 bytes of `float8send` (binary format), so every bit,
    /// NaN, the infinities and -0.0 included, arrives as it is; `bytea` as its bytes; the
    /// rest as the text the column type parses.
    static func parameter(_ value: Value?) -> PGParameter? {
        guard let value else { return nil }
        switch value {
        case .integer(let v): return .text(String(v))
        case .boolean(let v): return .text(v ? "true" : "false")
        case .double(let v): return double(v)
        case .date(let v): return double(v.timeIntervalSinceReferenceDate)
        case .decimal(let v): return .text(ValueText.text(v))
        case .string(let v): return .text(escape(v))
        case .uri(let v): return .text(escape(v.absoluteString))
        case .data(let v): return .bytes(v)
        case .uuid(let v): return .text(v.uuidString)
        }
    }

    /// The text a column of `value`'s type parses back to exactly `value` (for `COPY`'s text
    /// format): doubles in their shortest exact form, `bytea` as `\x` and hex.
    static func text(_ value: Value) -> String {
        switch value {
        case .integer(let v): return String(v)
        case .boolean(let v): return v ? "t" : "f"
        case .double(let v): return doubleText(v)
        case .date(let v): return doubleText(v.timeIntervalSinceReferenceDate)
        case .decimal(let v): return ValueText.text(v)
        case .string(let v): return escape(v)
        case .uri(let v): return escape(v.absoluteString)
        case .uuid(let v): return v.uuidString
        case .data(let v): return "\\x" + v.hexString
        }
    }

    /// A double as `float8in` reads it back bit for bit.
    static func doubleText(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v < 0 ? "-Infinity" : "Infinity" }
        return "\(v)"
    }

    static func double(_ v: Double) -> PGParameter {
        .bytes(withUnsafeBytes(of: v.bitPattern.bigEndian) { Data($0) })
    }

    /// Reads column `column` of `row` as `type`; nil for NULL.
    /// - Throws: ``StoreError/Code/corrupt`` for text that is not a value of `type`.
    static func value(_ rows: PGRows, _ row: Int, _ column: Int, as type: AttributeType, place: @autoclosure () -> String) throws -> Value? {
        if rows.isNull(row, column) { return nil }
        let value: Value?
        switch type {
        case .binaryData, .transformable, .undefined, .objectID:
            value = rows.bytes(row, column).map(Value.data)
        default:
            let text = rows.text(row, column) ?? ""
            switch type {
            case .integer16, .integer32, .integer64:
                value = Int64(text).flatMap { type.integerRange!.contains($0) ? .integer($0) : nil }
            case .double, .float: value = double(text).map(Value.double)
            case .date: value = double(text).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
            case .decimal: value = text == "NaN" ? .decimal(.nan) : Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")).map(Value.decimal)
            case .string: value = .string(unescape(text))
            case .uri: value = ValueText.uri(unescape(text)).map(Value.uri)
            case .boolean: value = text == "t" ? .boolean(true) : text == "f" ? .boolean(false) : nil
            case .uuid: value = UUID(uuidString: text).map(Value.uuid)
            default: value = nil
            }
        }
        guard let value else {
            throw StoreError(.corrupt, "\(place()) holds \(String(reflecting: String((rows.text(row, column) ?? "").prefix(40)))), "
                             + "which is not a valid \(type.modelName)")
        }
        return value
    }

    /// A `double precision` column's text (shortest exact form, `NaN`, `Infinity`, `-Infinity`).
    static func double(_ text: String) -> Double? {
        switch text {
        case "NaN": .nan
        case "Infinity": .infinity
        case "-Infinity": -.infinity
        default: Double(text)
        }
    }

    // `text` cannot hold U+0000. A string that contains U+0000 or U+FFFF is stored marked:
    // U+FFFF, then the string with U+FFFF written U+FFFF U+FFFF and U+0000 written U+FFFF "0".
    // An unmarked string never starts with U+FFFF, so every string reads back as it was.
    private static let marker: Unicode.Scalar = "\u{FFFF}"

    static func escape(_ string: String) -> String {
        // U+0000 is the byte 0x00, U+FFFF the bytes EF BF BF: a string with neither byte is looked at no closer.
        guard anyByte(of: string, { $0 == 0x00 || $0 == 0xEF }),
              string.unicodeScalars.contains(where: { $0 == "\u{0}" || $0 == marker }) else { return string }
        var escaped = String.UnicodeScalarView()
        escaped.append(marker)
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\u{0}": escaped.append(marker); escaped.append("0")
            case marker: escaped.append(marker); escaped.append(marker)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    /// Whether some byte of the string's UTF-8 passes `test`, read from its contiguous storage.
    @inline(__always)
    static func anyByte(of string: String, _ test: (UInt8) -> Bool) -> Bool {
        string.utf8.withContiguousStorageIfAvailable { $0.contains(where: test) } ?? string.utf8.contains(where: test)
    }

    static func unescape(_ stored: String) -> String {
        guard stored.unicodeScalars.first == marker else { return stored }
        var plain = String.UnicodeScalarView()
        var scalars = stored.unicodeScalars.dropFirst().makeIterator()
        while let scalar = scalars.next() {
            if scalar == marker, let next = scalars.next() {
                plain.append(next == "0" ? "\u{0}" : next)
            } else {
                plain.append(scalar)
            }
        }
        return String(plain)
    }

    /// Whether a stored string is in the marked form (SQL comparisons on it are left to Swift).
    static let markedPrefix = String(marker)
}
