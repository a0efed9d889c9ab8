import Foundation

/// Exact text for dates: ISO 8601 that reads back to the identical `Date`.
///
/// A `Date` is a `Double` count of seconds since 2001-01-01T00:00:00Z. The text
/// written is the shortest decimal that reads back to that same `Double`,
/// converted to calendar time without rounding, with at least millisecond
/// precision: `2027-02-26T19:49:11.198Z`. Reading builds the same decimal from
/// the calendar fields and rounds it to the nearest `Double` once. So
/// `parse(format(d)) == d` for every date, and text given with millisecond
/// precision comes back unchanged (a `Double` of seconds since 2001 resolves
/// far finer than a millisecond for any year a calendar here can hold).
///
/// Dates outside the years 0000–9999, non-finite ones, -0.0 and those within a
/// nanosecond of 2001 are written as their seconds since 2001 (`-150000000000000.0`,
/// `nan`, `-0.0`, `5e-324`), which ``parse(_:)`` also reads.
enum DateText {
    /// Seconds from 1970-01-01 to 2001-01-01.
    private static let referenceOffset: Int64 = 978_307_200

    static func format(_ date: Date) -> String {
        let t = date.timeIntervalSinceReferenceDate
        guard isCalendarTime(t), let (whole, fraction) = split(t) else { return ValueText.double(t) }
        let unix = whole + referenceOffset
        let days = floorDiv(unix, 86_400)
        let secondOfDay = unix - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        guard (0...9999).contains(year) else { return ValueText.double(t) }
        var digits = fraction
        while digits.count < 3 { digits.append("0") }
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(secondOfDay / 3600, 2) + ":"
            + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2) + "." + digits + "Z"
    }

    /// Whether `t` (seconds since 2001) may be written as calendar text: finite, not beyond
    /// any year 0000–9999 can reach (``format(_:)`` checks the year), not -0.0, and not a
    /// sliver of a second so small that its digits would run on (under a nanosecond).
    private static func isCalendarTime(_ t: Double) -> Bool {
        t.isFinite && abs(t) < 1e12 && !(t == 0 && t.sign == .minus) && (t == 0 || abs(t) >= 1e-9)
    }

    /// Reads `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM|±HH)`, or seconds since 2001 as a
    /// number where ``format(_:)`` writes one (a date calendar text cannot hold). A number
    /// that calendar text could say (`"20240501"`) is refused: it is most likely a mistake.
    static func parse(_ text: String) -> Date? {
        if let date = parseISO(Array(text.utf8)) { return date }
        guard let seconds = ValueText.double(text), !format(Date(timeIntervalSinceReferenceDate: seconds)).contains("T") else { return nil }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    /// Reads ISO 8601 only.
    static func parseISO(_ s: [UInt8]) -> Date? {
        var i = 0
        func number(_ width: Int) -> Int64? {
            guard i + width <= s.count else { return nil }
            var value: Int64 = 0
            for byte in s[i..<i + width] {
                guard (48...57).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            i += width
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard i < s.count, characters.utf8.contains(s[i]) else { return false }
            i += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2), expect("Tt "),
              let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year, month), hour <= 23, minute <= 59, second <= 59 else { return nil }
        var fraction = ""
        if i < s.count, s[i] == UInt8(ascii: ".") || s[i] == UInt8(ascii: ",") {
            i += 1
            let start = i
            while i < s.count, (48...57).contains(s[i]) { i += 1 }
            guard i > start else { return nil }
            fraction = String(decoding: s[start..<i], as: UTF8.self)
        }
        guard i < s.count else { return nil }
        var offset: Int64 = 0
        if s[i] == UInt8(ascii: "Z") || s[i] == UInt8(ascii: "z") {
            i += 1
        } else if s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
            let sign: Int64 = s[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let hours = number(2), hours <= 23 else { return nil }
            var minutes: Int64 = 0
            if i < s.count {
                _ = expect(":")
                guard let m = number(2), m <= 59 else { return nil }
                minutes = m
            }
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard i == s.count else { return nil }
        let unix = days(fromCivil: year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        let whole = unix - referenceOffset
        // The exact decimal whole.fraction, rounded to a Double once.
        let fractionIsZero = fraction.utf8.allSatisfy { $0 == UInt8(ascii: "0") }
        let text: String
        if whole >= 0 || fractionIsZero {
            text = "\(whole)." + (fraction.isEmpty ? "0" : fraction)
        } else {
            text = "-\(-(whole + 1))." + complement(fraction)
        }
        return Double(text).map { Date(timeIntervalSinceReferenceDate: $0) }
    }

    /// The whole seconds (rounded down) and the fraction's decimal digits of the shortest text of `t`.
    private static func split(_ t: Double) -> (Int64, String)? {
        var text = t.description
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            guard let value = Int(text[text.index(after: e)...]) else { return nil }
            exponent = value
            text = String(text[..<e])
        }
        let negative = text.hasPrefix("-")
        if negative { text.removeFirst() }
        var integerDigits = text
        var fractionDigits = ""
        if let point = text.firstIndex(of: ".") {
            integerDigits = String(text[..<point])
            fractionDigits = String(text[text.index(after: point)...])
        }
        // Move the decimal point by the exponent.
        var digits = integerDigits + fractionDigits
        var pointAt = integerDigits.count + exponent
        if pointAt < 0 {
            digits = String(repeating: "0", count: -pointAt) + digits
            pointAt = 0
        }
        if pointAt > digits.count { digits += String(repeating: "0", count: pointAt - digits.count) }
        let integerPart = digits.prefix(pointAt)
        var fraction = String(digits.dropFirst(pointAt))
        while fraction.hasSuffix("0") { fraction.removeLast() }
        guard integerPart.count <= 18, var whole = Int64(integerPart.isEmpty ? "0" : String(integerPart)) else { return nil }
        if negative {
            whole = -whole
            if !fraction.isEmpty {
                whole -= 1
                fraction = complement(fraction)
                while fraction.hasSuffix("0") { fraction.removeLast() }
            }
        }
        return (whole, fraction)
    }

    /// 10^n − f for the n-digit decimal fraction f, as n digits: the fraction of 1 − 0.f.
    private static func complement(_ digits: String) -> String {
        var result = digits.utf8.map { Int($0) - 48 }
        var index = result.count - 1
        while index >= 0 && result[index] == 0 { index -= 1 }
        guard index >= 0 else { return digits }
        result[index] = 10 - result[index]
        index -= 1
        while index >= 0 {
            result[index] = 9 - result[index]
            index -= 1
        }
        return String(decoding: result.map { UInt8($0 + 48) }, as: UTF8.self)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

    private static func daysInMonth(_ year: Int64, _ month: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (the civil-from-days inverse).
    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a count of days since 1970-01-01.
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = floorDiv(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
