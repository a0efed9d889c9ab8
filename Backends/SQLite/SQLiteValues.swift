import Foundation
import ObjectModel
import ObjectStore

/// How attribute values are stored in SQLite columns (`shared/specs/sqlite-layout.md`, "Values").
enum SQLiteValues {
    /// `value` as a column holds it; a decimal as its text when `textDecimal` (a column an
    /// earlier version of this library declared with TEXT affinity, ``SQLiteSchema/textDecimals``).
    static func sql(_ value: Value?, textDecimal: Bool = false) -> SQLValue {
        guard let value else { return .null }
        switch value {
        case .decimal(let v) where textDecimal: return .text(ValueText.text(v))
        case .integer(let v): return .integer(v)
        case .boolean(let v): return .integer(v ? 1 : 0)
        case .double(let v): return real(v)
        case .decimal(let v): return decimal(v)
        case .string(let v): return .text(v)
        case .uri(let v): return .text(v.absoluteString)
        case .date(let v): return real(v.timeIntervalSinceReferenceDate)
        case .data(let v): return .blob(v)
        case .uuid(let v): return .blob(withUnsafeBytes(of: v.uuid) { Data($0) })
        }
    }

    /// Reads a column as `type`, accepting the other storage classes Core Data might have used;
    /// nil for NULL.
    /// - Throws: ``StoreError`` with ``StoreError/Code/corrupt`` for a value that is not one of
    ///   `type` in any of those forms (a value is never read as nil because it is unreadable).
    static func value(_ sql: SQLValue, as type: AttributeType, at place: @autoclosure () -> String, in file: String) throws -> Value? {
        if let value = value(sql, as: type) { return value }
        if case .null = sql { return nil }
        let shown: String = switch sql {
        case .integer(let v): "the integer \(v)"
        case .real(let v): "the real \(v)"
        case .text(let t): "the text \(String(reflecting: String(t.prefix(40))))"
        // Text that is not UTF-8 reaches here as its bytes (``SQLiteConnection/column(_:)``).
        case .blob(let b) where type == .string || type == .uri: "\(b.count) bytes that are not UTF-8 text"
        case .blob(let b): "a \(b.count)-byte blob"
        case .null: "NULL"
        }
        throw StoreError(.corrupt, "\(place()) holds \(shown), which is not a valid \(type.modelName)", url: URL(filePath: file))
    }

    /// A double as a column keeps it bit for bit. SQLite stores a bound NaN as NULL, so NaN
    /// is the text `NaN`; a REAL column stores -0.0 as the integer 0 (and turns numeric text
    /// back into a number), so -0.0 is its 8 bytes, big-endian, as a blob.
    private static func real(_ v: Double) -> SQLValue {
        if v.isNaN { return .text("NaN") }
        if v == 0 && v.sign == .minus { return .blob(withUnsafeBytes(of: v.bitPattern.bigEndian) { Data($0) }) }
        return .real(v)
    }

    /// A decimal as Core Data keeps it in a `DECIMAL` column, a number, where that is exact: an
    /// integer when it is one that fits, else a double when the double reads back as the same
    /// decimal. Any other decimal (more digits than a double holds) is its text as a blob: the
    /// column's NUMERIC affinity would turn text into a rounded double, and leaves blobs alone.
    private static func decimal(_ v: Decimal) -> SQLValue {
        if let number = smallNumber(v) { return number }
        let text = ValueText.text(v)
        if let integer = Int64(text) { return .integer(integer) }
        if let double = Double(text), ValueText.decimal(double) == v { return .real(double) }
        return .blob(Data(text.utf8))
    }

    /// ``decimal(_:)`` of a decimal of at most 15 significant digits and a small exponent, from
    /// its digits, without its text (which costs about 1.4 µs): an integer when it is one that
    /// fits; else the double of the digits divided by a power of ten (both exact, the quotient
    /// rounded once, as the text would be), whose shortest text reads back as the same decimal
    /// (two numbers of 15 digits are further apart than a double's rounding). Nil for any other.
    private static func smallNumber(_ v: Decimal) -> SQLValue? {
        guard let significand = ValueText.significand(of: v), significand < 1 << 53 else { return nil }
        var (digits, exponent) = (significand, v.exponent)
        while digits % 10 == 0 { digits /= 10; exponent += 1 }
        let sign: Int64 = v.sign == .minus ? -1 : 1
        if exponent >= 0 {
            guard exponent <= 18 else { return nil }
            let (integer, overflow) = Int64(digits).multipliedReportingOverflow(by: powersOfTen[exponent])
            return overflow ? nil : .integer(sign * integer)
        }
        guard digits < 1_000_000_000_000_000, exponent >= -18 else { return nil }
        return .real(Double(sign) * (Double(digits) / Double(powersOfTen[-exponent])))
    }

    /// 10⁰ through 10¹⁸ (each exact as a double too).
    private static let powersOfTen: [Int64] = (0...18).map { (0..<$0).reduce(Int64(1)) { r, _ in r * 10 } }

    /// What ``real(_:)`` wrote as a blob.
    private static func real(_ blob: Data) -> Double? {
        guard blob.count == 8 else { return nil }
        return Double(bitPattern: blob.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    /// The value in one of the forms `type` may take in a column; nil for any other. Nothing
    /// is rounded or reinterpreted: 183.6 is no Integer, 2 no Boolean, 70000 no Integer 16.
    private static func value(_ sql: SQLValue, as type: AttributeType) -> Value? {
        switch (type, sql) {
        case (_, .null): return nil
        case (.integer16, .integer(let v)), (.integer32, .integer(let v)), (.integer64, .integer(let v)):
            return type.integerRange!.contains(v) ? .integer(v) : nil
        case (.integer16, .real(let v)), (.integer32, .real(let v)), (.integer64, .real(let v)):
            guard let exact = Int64(exactly: v), type.integerRange!.contains(exact) else { return nil }
            return .integer(exact)
        case (.boolean, .integer(let v)) where v == 0 || v == 1: return .boolean(v == 1)
        case (.boolean, .real(let v)) where v == 0 || v == 1: return .boolean(v == 1)
        case (.double, .real(let v)), (.float, .real(let v)): return .double(v)
        case (.double, .integer(let v)), (.float, .integer(let v)): return .double(Double(v))
        case (.double, .text(let t)), (.float, .text(let t)): return ValueText.double(t).map(Value.double)
        case (.double, .blob(let b)), (.float, .blob(let b)): return real(b).map(Value.double)
        case (.date, .blob(let b)): return real(b).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case (.decimal, .text(let t)): return ValueText.decimal(t).map(Value.decimal)
        case (.decimal, .real(let v)): return ValueText.decimal(v).map(Value.decimal)
        case (.decimal, .integer(let v)): return .decimal(Decimal(v))
        case (.decimal, .blob(let b)): return String(validating: b, as: UTF8.self).flatMap(ValueText.decimal).map(Value.decimal)
        case (.string, .text(let t)): return .string(t)
        case (.string, .blob(let b)): return String(validating: b, as: UTF8.self).map(Value.string)
        case (.uri, .text(let t)): return ValueText.uri(t).map(Value.uri)
        case (.date, .real(let v)): return .date(Date(timeIntervalSinceReferenceDate: v))
        case (.date, .integer(let v)): return .date(Date(timeIntervalSinceReferenceDate: Double(v)))
        case (.date, .text(let t)): return ValueText.double(t).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case (.binaryData, .blob(let b)), (.transformable, .blob(let b)): return .data(b)
        case (.binaryData, .text(let t)), (.transformable, .text(let t)): return .data(Data(t.utf8))
        case (.uuid, .blob(let b)) where b.count == 16:
            return .uuid(b.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) })
        case (.uuid, .text(let t)): return UUID(uuidString: t).map(Value.uuid)
        default: return nil
        }
    }
}
