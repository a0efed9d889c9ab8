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
}
