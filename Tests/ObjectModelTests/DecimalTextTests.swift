import Foundation
import ObjectModel
import Testing
import TestSupport

@Suite("The decimal a double names")
struct DecimalTextTests {
    /// The decimal the double's shortest text names, as text is parsed: the definition.
    private func parsed(_ v: Double) -> Decimal? { ValueText.decimal(String(v)) }

    /// A decimal's bytes: the same value in another form (more trailing zeros, another exponent) is another decimal here.
    private func bytes(_ d: Decimal) -> [UInt8] { withUnsafeBytes(of: d) { Array($0) } }

    @Test("is the very decimal its shortest text parses to, byte for byte, for doubles of every kind")
    func sameAsParsingTheText() {
        var random = SeededGenerator(state: 7)
        var doubles: [Double] = [0, -0.0, 1, -1, 0.1, 19.99, 100, 1e15, 1e16, 1e22, 1e23, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 123456789012345680]
        for i in 0..<40_000 {
            switch i % 4 {
            case 0: doubles.append(Double(Int.random(in: -10_000_000...10_000_000, using: &random)) / 100)
            case 1: doubles.append(Double.random(in: -1e6...1e6, using: &random))
            case 2: doubles.append(Double(bitPattern: random.next()))
            default: doubles.append(Double(Int.random(in: 0...99_999, using: &random)) * pow(10, Double(Int.random(in: -40...40, using: &random))))
            }
        }
        for v in doubles where v.isFinite {
            let expected = parsed(v)
            let got = ValueText.decimal(v)
            #expect(expected.map(bytes) == got.map(bytes), "\(v): \(String(describing: expected)) against \(String(describing: got))")
        }
    }

    /// Decimals of every size: from text (up to 22 digits, exponents from -40 to 40, both signs)
    /// and from arithmetic (products, sums and quotients keep forms text does not give).
    private func generated() -> (texts: [String], decimals: [Decimal]) {
        var random = SeededGenerator(state: 11)
        var texts = ["0", "-0.000", "1", "19.990", "0.005", "5000", "1e30", "-1e-30", "18446744073709551615", "18446744073709551616",
                     "9007199254740993", "0.1", ".5", "5.", "007", "1E+3", "123456789012345678", "1234567890123456789"]
        for _ in 0..<20_000 {
            let digits = String((0..<Int.random(in: 1...22, using: &random)).map { _ in Character(String(Int.random(in: 0...9, using: &random))) })
            let sign = Bool.random(using: &random) ? "-" : ""
            let point = Int.random(in: 0...digits.count, using: &random)
            let body = point == digits.count ? digits : "\(digits.prefix(point)).\(digits.dropFirst(point))"
            texts.append(Bool.random(using: &random) ? "\(sign)\(body)e\(Int.random(in: -40...40, using: &random))" : sign + body)
        }
        let posix = Locale(identifier: "en_US_POSIX")
        var decimals = texts.compactMap { Decimal(string: $0, locale: posix) }
        for i in stride(from: 0, to: decimals.count - 1, by: 2) {
            decimals += [decimals[i] * decimals[i + 1], decimals[i] + decimals[i + 1], decimals[i + 1].isZero ? 0 : decimals[i] / decimals[i + 1]]
        }
        return (texts, decimals)
    }

    @Test("a decimal's text is its description, character for character")
    func textIsTheDescription() {
        for d in generated().decimals { #expect(ValueText.text(d) == d.description, "\(d)") }
        #expect(ValueText.text(.nan) == "NaN")
    }

    @Test("text parses to the very decimal Decimal(string:) gives, byte for byte, and what is not one number is refused")
    func textParsesAsDecimalDoes() {
        let posix = Locale(identifier: "en_US_POSIX")
        let (texts, decimals) = generated()
        for text in texts + decimals.map(\.description) {
            // More than 38 significant digits would be rounded: refused.
            let significand = text.prefix { $0 != "e" && $0 != "E" }.filter(\.isNumber)
            let digits = significand.drop { $0 == "0" }.reversed().drop { $0 == "0" }.count
            let expected = digits > 38 ? nil : Decimal(string: text, locale: posix)
            #expect(ValueText.decimal(text).map(bytes) == expected.map(bytes), "\(text)")
        }
        for text in ["1.2.3", "1e", "1e+", "-", ".", "", "12abc", "0x10", "1_000", " 1", "1 ", "--1", "1e100000", "1e00005", "2.5e-000001", "NaN"] {
            #expect(ValueText.decimal(text) == nil, "\(text)")
        }
    }
}
