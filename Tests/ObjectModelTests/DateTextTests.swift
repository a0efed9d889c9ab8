import Foundation
import ObjectModel
import Testing
import TestSupport

@Suite("Dates as text")
struct DateTextTests {
    @Test("the date the issue reported comes back as the same text")
    func reported() throws {
        let text = "2027-02-26T19:49:11.198Z"
        let date = try #require(ValueText.parseISO8601(text))
        #expect(ValueText.iso8601(date) == text)
    }

    @Test("every date reads back bit for bit, before and after 1970 and 2001")
    func exactRoundTrip() throws {
        var generator = SeededGenerator(state: 7)
        for _ in 0..<50_000 {
            // Seconds since 2001 across years 0001–9999, with every kind of fraction.
            let seconds = Double.random(in: -63_113_904_000...252_423_993_599, using: &generator)
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            let text = ValueText.iso8601(date)
            let back = try #require(ValueText.parseISO8601(text), "\(text) does not parse")
            #expect(back.timeIntervalSinceReferenceDate.bitPattern == seconds.bitPattern, "\(seconds) → \(text) → \(back.timeIntervalSinceReferenceDate)")
        }
    }

    @Test("text with millisecond precision comes back unchanged")
    func millisecondText() throws {
        var generator = SeededGenerator(state: 11)
        for _ in 0..<50_000 {
            // From 1600: Foundation's calendar is Julian before 1582, ISO 8601 proleptic Gregorian.
            let milliseconds = Int64.random(in: -11_676_096_000_000...253_402_300_799_999, using: &generator)
            let text = Self.oracleText(milliseconds: milliseconds)
            let date = try #require(ValueText.parseISO8601(text), "\(text) does not parse")
            #expect(ValueText.iso8601(date) == text)
        }
    }

    @Test("calendar fields agree with Foundation's calendar")
    func calendarOracle() throws {
        var generator = SeededGenerator(state: 3)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for _ in 0..<5_000 {
            let seconds = Double(Int64.random(in: -3_000_000_000...8_000_000_000, using: &generator))
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
            let expected = String(format: "%04d-%02d-%02dT%02d:%02d:%02d.000Z", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
            #expect(ValueText.iso8601(date) == expected)
        }
    }

    @Test("sub-millisecond dates keep their digits", arguments: [
        (0.0001, "2001-01-01T00:00:00.0001Z"),
        (-0.0001, "2000-12-31T23:59:59.9999Z"),
        (0.5, "2001-01-01T00:00:00.500Z"),
        (-0.5, "2000-12-31T23:59:59.500Z"),
        (1e-9, "2001-01-01T00:00:00.000000001Z"),
        (-978_307_200.0, "1970-01-01T00:00:00.000Z"),
        (-978_307_200.25, "1969-12-31T23:59:59.750Z"),
        (252_423_993_599.999, "9999-12-31T23:59:59.999Z"),
        (-63_113_904_000.0, "0001-01-01T00:00:00.000Z"),
        (383_788_800.0, "2013-03-01T00:00:00.000Z"),
        (36_201_600.0, "2002-02-24T00:00:00.000Z"),
    ])
    func fixedTexts(_ seconds: Double, _ text: String) throws {
        let date = Date(timeIntervalSinceReferenceDate: seconds)
        #expect(ValueText.iso8601(date) == text)
        #expect(ValueText.parseISO8601(text)?.timeIntervalSinceReferenceDate == seconds)
    }

    @Test("offsets, commas and fractions of any length are read", arguments: [
        ("2024-02-29T12:00:00+02:00", "2024-02-29T10:00:00.000Z"),
        ("2024-02-29T01:30:00-0130", "2024-02-29T03:00:00.000Z"),
        ("2024-02-29T01:30:00+05", "2024-02-28T20:30:00.000Z"),
        ("2024-02-29t01:30:00,25z", "2024-02-29T01:30:00.250Z"),
        ("2024-02-29T01:30:00.123456789012Z", nil),
        ("2024-02-29T01:30:00Z", "2024-02-29T01:30:00.000Z"),
    ] as [(String, String?)])
    func readForms(_ text: String, _ expected: String?) throws {
        let date = try #require(ValueText.parseISO8601(text))
        if let expected { #expect(ValueText.iso8601(date) == expected) }
        #expect(ValueText.parseISO8601(ValueText.iso8601(date)) == date)
    }

    @Test("a number that calendar text could say is refused as a date; the words for infinity are read")
    func numbersAsDates() {
        #expect(ValueText.parseDate("20240501") == nil)
        #expect(ValueText.parseDate("0") == nil)
        #expect(ValueText.parseDate("-infinity")?.timeIntervalSinceReferenceDate == -.infinity)
        #expect(ValueText.parseDate("infinity")?.timeIntervalSinceReferenceDate == .infinity)
        #expect(ValueText.parseDate("-0.0")?.timeIntervalSinceReferenceDate.sign == .minus)
    }

    @Test("malformed dates are refused", arguments: [
        "", "2024-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-01T24:00:00Z",
        "2024-01-01T00:60:00Z", "2024-01-01T00:00:60Z", "2024-01-01T00:00:00", "2024-01-01T00:00:00.Z",
        "2024-1-01T00:00:00Z", "2024-01-01T00:00:00Zjunk", "2024-01-01T00:00:00+25:00", "24-01-01T00:00:00Z",
    ])
    func refused(_ text: String) {
        #expect(ValueText.parseISO8601(text) == nil)
    }

    @Test("dates beyond the calendar are written as seconds and read back", arguments: [
        1e15, -1e15, Double.infinity, -Double.infinity, Double.greatestFiniteMagnitude, -0.0, Double.leastNonzeroMagnitude, -1e-12, 3e11,
    ])
    func beyondTheCalendar(_ seconds: Double) throws {
        let text = ValueText.iso8601(Date(timeIntervalSinceReferenceDate: seconds))
        #expect(!text.contains("T"))
        #expect(ValueText.parseDate(text)?.timeIntervalSinceReferenceDate.bitPattern == seconds.bitPattern)
        #expect(AttributeType.date.parseValue(text) == .date(Date(timeIntervalSinceReferenceDate: seconds)))
    }

    @Test("a NaN date is written as nan and read back as NaN")
    func notANumber() throws {
        let text = ValueText.iso8601(Date(timeIntervalSinceReferenceDate: .nan))
        #expect(text == "nan")
        #expect(try #require(ValueText.parseDate(text)).timeIntervalSinceReferenceDate.isNaN)
    }

    /// ISO 8601 text of a count of milliseconds since 1970, computed with Foundation's
    /// calendar from whole seconds (an oracle independent of the code under test).
    static func oracleText(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : -((-milliseconds + 999) / 1000)
        let fraction = milliseconds - seconds * 1000
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second],
                                        from: Date(timeIntervalSince1970: TimeInterval(seconds)))
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!, Int(fraction))
    }
}
