import Foundation

/// One attribute value, as the model, stores, predicates and contexts see it.
///
/// A missing value is `nil` of `Value?`; there is no null case. The three
/// integer types share ``integer(_:)``, `Float` and `Double` share
/// ``double(_:)``, and a transformable attribute holds its Codable payload as
/// ``data(_:)``.
public enum Value: Sendable, Hashable {
    /// Integer 16, 32 or 64.
    case integer(Int64)
    /// Double or Float.
    case double(Double)
    /// Decimal.
    case decimal(Decimal)
    /// String.
    case string(String)
    /// Boolean.
    case boolean(Bool)
    /// Date.
    case date(Date)
    /// Binary data, or a transformable attribute's payload.
    case data(Data)
    /// UUID.
    case uuid(UUID)
    /// URI.
    case uri(URL)

    /// A short name of the value's kind, for error messages.
    public var kindName: String {
        switch self {
        case .integer: "integer"
        case .double: "double"
        case .decimal: "decimal"
        case .string: "string"
        case .boolean: "boolean"
        case .date: "date"
        case .data: "data"
        case .uuid: "UUID"
        case .uri: "URI"
        }
    }

    /// The value as a `Double` when it is a number or a Boolean.
    public var numericValue: Double? {
        switch self {
        case .integer(let v): Double(v)
        case .double(let v): v
        case .decimal(let v): NSDecimalNumber(decimal: v).doubleValue
        case .boolean(let v): v ? 1 : 0
        default: nil
        }
    }

    /// Encodes a Codable payload for a transformable attribute (JSON, sorted keys).
    public static func transformable<T: Encodable>(_ payload: T) throws -> Value {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return .data(try encoder.encode(payload))
    }

    /// Decodes the Codable payload of a transformable attribute.
    public func decodeTransformable<T: Decodable>(_ type: T.Type) throws -> T? {
        guard case .data(let bytes) = self else { return nil }
        return try JSONDecoder().decode(T.self, from: bytes)
    }
}

extension Value: CustomStringConvertible {
    public var description: String {
        switch self {
        case .integer(let v): String(v)
        case .double(let v): String(v)
        case .decimal(let v): ValueText.text(v)
        case .string(let v): String(reflecting: v)
        case .boolean(let v): v ? "true" : "false"
        case .date(let v): ValueText.iso8601(v)
        case .data(let v): "<\(v.count) bytes>"
        case .uuid(let v): v.uuidString
        case .uri(let v): v.absoluteString
        }
    }
}

extension AttributeType {
    /// Whether `value` is of the kind this type stores (and, for integers, in range).
    public func accepts(_ value: Value) -> Bool {
        switch (self, value) {
        case (.integer16, .integer(let v)), (.integer32, .integer(let v)), (.integer64, .integer(let v)):
            return integerRange!.contains(v)
        case (.double, .double), (.float, .double), (.decimal, .decimal), (.string, .string),
            (.boolean, .boolean), (.date, .date), (.binaryData, .data), (.transformable, .data),
            (.uuid, .uuid), (.uri, .uri), (.undefined, _):
            return true
        default:
            return false
        }
    }

    /// Converts `value` to this type where the conversion loses nothing
    /// (an integer to a double, a float-rounded double for `Float`), or returns nil.
    public func coerce(_ value: Value) -> Value? {
        switch (self, value) {
        case (.float, .double(let v)): return .double(Double(Float(v)))
        case (.float, .integer(let v)): return .double(Double(Float(v)))
        case (.double, .integer(let v)): return .double(Double(v))
        case (.decimal, .integer(let v)): return .decimal(Decimal(v))
        case (.decimal, .double(let v)) where v.isFinite: return ValueText.decimal(v).map(Value.decimal)
        case (.boolean, .integer(let v)) where v == 0 || v == 1: return .boolean(v == 1)
        default: return accepts(value) ? value : nil
        }
    }

    /// Parses the text form of a value of this type: the form Xcode writes for
    /// default and limit values (`defaultValueString`) and the JSON formats use.
    ///
    /// Integers and numbers in decimal notation; Booleans as `YES`/`NO`/`true`/
    /// `false`/`1`/`0`; dates as ISO 8601 or as seconds since 2001-01-01 (what
    /// Xcode writes); binary and transformable as base64; UUIDs and URIs as text.
    public func parseValue(_ text: String) -> Value? {
        if self == .string { return .string(text) }
        // Most text has no space around it to trim (and trimming is costly).
        let spaced = text.unicodeScalars.first.map(CharacterSet.whitespaces.contains) == true
            || text.unicodeScalars.last.map(CharacterSet.whitespaces.contains) == true
        let trimmed = spaced ? text.trimmingCharacters(in: .whitespaces) : text
        switch self {
        case .integer16, .integer32, .integer64:
            if let v = Int64(trimmed), integerRange!.contains(v) { return .integer(v) }
            if let d = Double(trimmed), d.rounded() == d, let v = Int64(exactly: d), integerRange!.contains(v) {
                return .integer(v)
            }
            return nil
        case .double:
            return ValueText.double(trimmed).map(Value.double)
        case .float:
            return ValueText.float(trimmed).map(Value.double)
        case .decimal:
            return ValueText.decimal(trimmed).map(Value.decimal)
        case .string:
            return .string(text)
        case .boolean:
            switch trimmed.lowercased() {
            case "yes", "true", "1": return .boolean(true)
            case "no", "false", "0": return .boolean(false)
            default: return nil
            }
        case .date:
            return ValueText.parseDate(trimmed).map(Value.date)
        case .binaryData, .transformable:
            // Base64 as `base64EncodedString()` writes it: padded, unused bits zero. The decoder
            // also takes extra padding (`AP9c=`) and unused bits set (`AP9=` for `AP8=`), which
            // would make several texts one value: those are refused.
            guard let data = Data(base64Encoded: trimmed), data.base64EncodedString() == trimmed else { return nil }
            return .data(data)
        case .uuid:
            return UUID(uuidString: trimmed).map(Value.uuid)
        case .uri:
            return ValueText.uri(trimmed).map(Value.uri)
        case .undefined, .objectID:
            return nil
        }
    }
}

extension Value {
    /// The text form ``AttributeType/parseValue(_:)`` reads back to an equal value.
    public var textForm: String {
        switch self {
        case .integer(let v): String(v)
        case .double(let v): ValueText.double(v)
        case .decimal(let v): ValueText.text(v)
        case .string(let v): v
        case .boolean(let v): v ? "true" : "false"
        case .date(let v): ValueText.iso8601(v)
        case .data(let v): v.base64EncodedString()
        case .uuid(let v): v.uuidString
        case .uri(let v): v.absoluteString
        }
    }
}

/// Text conversions shared by the model formats and the interchange formats.
public enum ValueText {
    /// ISO 8601 in UTC that reads back to the identical date: `2024-05-01T12:00:00.000Z`,
    /// with millisecond digits and more only where the date has them (see `docs/json-format.md`).
    /// A date outside the years 0000–9999 (or not finite) is written as its seconds since 2001.
    public static func iso8601(_ date: Date) -> String {
        DateText.format(date)
    }

    /// Parses ISO 8601 (`YYYY-MM-DDTHH:MM:SS`, an optional fraction of any length, and `Z` or
    /// an offset) exactly: the decimal the text names, rounded once to the nearest date.
    public static func parseISO8601(_ text: String) -> Date? {
        DateText.parseISO(Array(text.utf8))
    }

    /// Parses what ``iso8601(_:)`` writes: ISO 8601, or seconds since 2001-01-01 as a number.
    public static func parseDate(_ text: String) -> Date? {
        DateText.parse(text)
    }

    /// Parses decimal notation exactly (`-12.50`, `1e-7`, `.5`), or returns nil: for text
    /// that is not one decimal number as a whole (`12abc`, `1.2.3`, `0x10`, `1_000`), and
    /// for numbers a `Decimal` cannot hold without rounding (more than 38 significant
    /// digits, or an exponent beyond its range). Never a prefix of the text.
    public static func decimal(_ text: String) -> Decimal? {
        if let small = smallDecimal(text) { return small }
        let bytes = Array(text.utf8)
        var i = 0
        if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
        var significand: [UInt8] = []
        var pointSeen = false
        var anyDigit = false
        while i < bytes.count {
            let byte = bytes[i]
            if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                significand.append(byte)
                anyDigit = true
            } else if byte == UInt8(ascii: "."), !pointSeen {
                pointSeen = true
            } else {
                break
            }
            i += 1
        }
        guard anyDigit else { return nil }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            let start = i
            while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
            guard i > start, i - start <= 4 else { return nil }
        }
        guard i == bytes.count else { return nil }
        // Significant digits: without leading and trailing zeros.
        let digits = significand.drop { $0 == UInt8(ascii: "0") }.reversed().drop { $0 == UInt8(ascii: "0") }
        guard digits.count <= 38, let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), !value.isNaN else { return nil }
        // A value the exponent range cannot hold comes back as something else: check it reads back.
        if !digits.isEmpty, value.isZero { return nil }
        return value
    }

    /// The decimal a double's shortest round-tripping text names (`19.99`, not the binary
    /// expansion `19.98999999999999488` that `Decimal(Double)` gives), or nil when not finite.
    public static func decimal(_ v: Double) -> Decimal? {
        guard v.isFinite else { return nil }
        return decimal(String(v))
    }

    /// ``decimal(_:)-(String)`` of plain decimal text (`-12.50`, `1e-05`, `1.5e+20`, what
    /// `String(Double)` and ``text(_:)`` write) with at most 18 significant digits, not zero and
    /// an exponent well inside a `Decimal`'s, built from its digits: the very value
    /// `Decimal(string:)` gives (which costs about 0.5 µs). Nil for any other text.
    private static func smallDecimal(_ text: String) -> Decimal? {
        var utf8 = text.utf8.makeIterator()
        var byte = utf8.next()
        let negative = byte == UInt8(ascii: "-")
        if negative { byte = utf8.next() }
        var significand: UInt64 = 0, digits = 0, fraction = 0, point = false
        while let b = byte, b == UInt8(ascii: ".") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) {
            if b == UInt8(ascii: ".") {
                guard !point else { return nil }
                point = true
            } else {
                if significand > 0 || b != UInt8(ascii: "0") { digits += 1 }
                guard digits <= 18 else { return nil }
                significand = significand * 10 + UInt64(b - UInt8(ascii: "0"))
                if point { fraction += 1 }
            }
            byte = utf8.next()
        }
        var exponent = 0
        if byte == UInt8(ascii: "e") {
            byte = utf8.next()
            let negativeExponent = byte == UInt8(ascii: "-")
            if byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") { byte = utf8.next() }
            var count = 0
            while let b = byte {
                // At most four digits, as the text's parser takes.
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b), count < 4 else { return nil }
                exponent = exponent * 10 + Int(b - UInt8(ascii: "0"))
                count += 1
                byte = utf8.next()
            }
            guard count > 0 else { return nil }
            if negativeExponent { exponent = -exponent }
        }
        guard byte == nil, significand > 0, (-100...100).contains(exponent - fraction) else { return nil }
        return Decimal(sign: negative ? .minus : .plus, exponent: exponent - fraction, significand: Decimal(significand))
    }

    /// A decimal's text, as its `description` writes it (`-0.005`, `19.990`, `5000`, `NaN`):
    /// from its digits when its significand fits 64 bits (`description` costs about 1.4 µs).
    public static func text(_ v: Decimal) -> String {
        guard (-64...64).contains(v.exponent), let significand = significand(of: v) else { return v.description }
        var digits = Array(String(significand).utf8)
        if v.exponent >= 0 {
            digits.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: v.exponent))
        } else {
            let fraction = -v.exponent
            if digits.count <= fraction { digits.insert(contentsOf: repeatElement(UInt8(ascii: "0"), count: fraction - digits.count + 1), at: 0) }
            digits.insert(UInt8(ascii: "."), at: digits.count - fraction)
        }
        if v.sign == .minus { digits.insert(UInt8(ascii: "-"), at: 0) }
        return String(decoding: digits, as: UTF8.self)
    }

    /// A decimal's significand (its digits, without sign or exponent: `v` is ±significand ×
    /// 10^`v.exponent`) when it is not zero and fits 64 bits; nil for any other (and NaN).
    public static func significand(of v: Decimal) -> UInt64? {
        guard !v.isNaN, !v.isZero else { return nil }
        let significand = (v.significand as NSDecimalNumber).uint64Value
        return significand > 0 && Decimal(significand) == v.significand ? significand : nil
    }

    /// A double's shortest round-tripping text, with `nan`, `inf` and `-inf`.
    public static func double(_ v: Double) -> String {
        if v.isNaN { return "nan" }
        if v.isInfinite { return v < 0 ? "-inf" : "inf" }
        return String(v)
    }

    /// Parses what ``double(_:)->String`` writes, and plain decimal notation,
    /// rounded once to the nearest double. A finite number too large for a double is
    /// refused (nil), not made infinite.
    public static func double(_ text: String) -> Double? {
        // Only the names of NaN and infinity hold an n or an i (lowercasing every number costs).
        guard text.utf8.contains(where: { $0 | 0x20 == UInt8(ascii: "n") || $0 | 0x20 == UInt8(ascii: "i") }) else {
            guard let v = Double(text), v.isFinite else { return nil }
            return v
        }
        switch text.lowercased() {
        case "nan": return .nan
        case "inf", "+inf", "infinity", "+infinity": return .infinity
        case "-inf", "-infinity": return -.infinity
        default:
            guard let first = text.utf8.first, first != UInt8(ascii: "n"), first != UInt8(ascii: "i"),
                  let v = Double(text), v.isFinite else { return nil }
            return v
        }
    }

    /// Like ``double(_:)->Double?``, rounded once to the nearest `Float` (given
    /// back as the `Double` holding it). A finite number too large for a `Float` is refused.
    public static func float(_ text: String) -> Double? {
        guard let wide = double(text) else { return nil }
        guard wide.isFinite else { return wide }
        guard let narrow = Float(text), narrow.isFinite else { return nil }
        return Double(narrow)
    }

    /// Parses a URI as written: text that is not a valid URI as it stands (a space, a
    /// character that must be percent-encoded) is refused, never encoded on the way in.
    public static func uri(_ text: String) -> URL? {
        URL(string: text, encodingInvalidCharacters: false)
    }
}
