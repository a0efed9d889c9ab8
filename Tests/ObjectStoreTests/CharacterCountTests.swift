import Foundation
import ObjectModel
import ObjectStore
import Testing

/// A length rule counts characters as Swift does (`String.count`); the validator counts most text
/// without building a string. Swift's own count is the oracle.
/// Deterministic draws below a bound (a 64-bit LCG, the high bits taken), so a failing case replays.
struct Draws {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next(_ bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(bound))
    }
}

@Suite struct CharacterCountTests {
    private static func count(_ text: String) -> Int {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBufferPointer { ObjectValidator.characterCount(utf8: UnsafeBufferPointer($0)) }
    }

    private static func count(bytes: [UInt8]) -> Int {
        bytes.withUnsafeBufferPointer { ObjectValidator.characterCount(utf8: $0) }
    }

    @Test func everyPairOfScalarsBelowU0300CountsAsSwiftCountsIt() {
        let scalars = (0..<0x300).compactMap(Unicode.Scalar.init)
        var differing: [String] = []
        for a in scalars {
            for b in scalars {
                var text = ""
                text.unicodeScalars.append(a)
                text.unicodeScalars.append(b)
                if Self.count(text) != text.count { differing.append(String(reflecting: text)) }
            }
        }
        #expect(differing.isEmpty, "\(differing.prefix(10))")
    }

    @Test func everyScalarCountedAloneIsACharacterOfItsOwnBesideOthers() {
        let neighbours = ["a", "\u{E9}", "\u{65E5}", "\u{AC00}", "\u{3042}", "\u{416}", "\u{5D0}", "-"]
        var differing: [String] = []
        for range in ObjectValidator.charactersAlone {
            for value in range {
                let scalar = String(Unicode.Scalar(value)!)
                for text in [scalar + scalar] + neighbours.flatMap({ [$0 + scalar, scalar + $0, $0 + scalar + $0] }) where Self.count(text) != text.count {
                    differing.append(String(reflecting: text))
                }
            }
        }
        #expect(differing.isEmpty, "\(differing.count): \(differing.prefix(10))")
    }

    /// Random texts of pieces that join and pieces that do not, against Swift's count.
    @Test func randomMixturesCountAsSwiftCountsThem() {
        let pieces = ["a", "Z", " ", "\n", "\r", "\r\n", "\u{E9}", "e\u{301}", "\u{301}", "\u{65E5}", "\u{AC00}", "\u{1100}", "\u{1161}", "\u{11A8}",
                      "\u{3042}", "\u{3099}", "\u{416}", "\u{483}", "\u{5D0}", "\u{5B4}", "\u{627}", "\u{64B}", "\u{600}", "\u{915}", "\u{94D}",
                      "\u{93F}", "\u{200D}", "\u{FE0F}", "\u{1F44D}", "\u{1F3FD}", "\u{1F468}", "\u{A9}", "\u{1F1EB}", "\u{1F1F7}", "\u{0}", "\u{85}",
                      "lorem ipsum ", "ABCDEFGHIJKLMNOPQ", "0123456\r\n89"]
        var draws = Draws(seed: 0x2545_F491_4F6C_DD1D)
        func next(_ bound: Int) -> Int { draws.next(bound) }
        var differing: [String] = []
        for _ in 0..<20_000 {
            let text = (0..<next(24)).map { _ in pieces[next(pieces.count)] }.joined()
            if Self.count(text) != text.count { differing.append(String(reflecting: text)) }
        }
        #expect(differing.isEmpty, "\(differing.count): \(differing.prefix(10))")
    }

    @Test func textBeyondTheFastPathAndBrokenUTF8CountAsSwiftCountsThem() {
        for text in ["", "abc", "\r\n", "a\r\nb", "\r", "e\u{301}", "Dvořák", "Łódź café", "日本語", "👩‍👩‍👧", "🇫🇷🇩🇪", "한국어", "a\u{0}b", "\u{85}\u{AD}x",
                     "Ελληνικά", "Русский", "עברית", "العربية", "Tiếng Việt", "カタカナ", "ｆｕｌｌ", "は\u{3099}", "Ж\u{483}", "가\u{11A8}", "\u{1100}\u{1161}", "日\u{FE0F}", "a\u{200D}b"] {
            #expect(Self.count(text) == text.count, "\(String(reflecting: text))")
        }
        // Bytes that are not UTF-8: counted as Swift decodes them (each bad sequence one U+FFFD).
        for bytes: [UInt8] in [[0x80], [0xC3], [0xC3, 0x41], [0xC0, 0x80], [0x61, 0xCB], [0xCB, 0xBF, 0xCC], [0xED, 0xA0, 0x80], [0xFF, 0x61]] {
            #expect(Self.count(bytes: bytes) == String(decoding: bytes, as: UTF8.self).count, "\(bytes)")
        }
    }
}

/// Counting only as far as a bound needs, and the UTF-8 check beside it: the same random texts,
/// against Swift's count and Swift's own UTF-8 validation.
@Suite struct BoundedCharacterCountTests {
    private static let pieces = ["a", " ", "\r", "\r\n", "\u{E9}", "e\u{301}", "\u{301}", "\u{65E5}", "\u{1100}", "\u{1161}", "\u{200D}", "\u{FE0F}",
                                 "\u{1F44D}", "\u{1F3FD}", "\u{1F468}", "\u{1F680}", "\u{2764}", "\u{1F1EB}", "\u{1F1F7}", "\u{915}", "\u{94D}",
                                 "lorem ipsum ", "0123456\r\n89"]

    private static func texts(_ count: Int) -> [String] {
        var draws = Draws(seed: 0x9E37_79B9_7F4A_7C15)
        func next(_ bound: Int) -> Int { draws.next(bound) }
        return (0..<count).map { _ in (0..<next(16)).map { _ in pieces[next(pieces.count)] }.joined() }
    }

    @Test func aCappedCountIsExactBelowItsCapAndAtLeastTheCapOtherwise() {
        var differing: [String] = []
        for text in Self.texts(5_000) {
            let bytes = Array(text.utf8)
            for cap in [0, 1, 2, 3, 5, 8, 13, 40] {
                let capped = bytes.withUnsafeBufferPointer { ObjectValidator.characterCount(utf8: $0, upTo: cap) }
                let right = text.count < cap ? capped == text.count : (capped.map { $0 >= cap && $0 <= text.count } ?? false)
                if !right { differing.append("\(String(reflecting: text)) cap \(cap): \(String(describing: capped)), Swift \(text.count)") }
            }
        }
        #expect(differing.isEmpty, "\(differing.count): \(differing.prefix(5))")
    }

    @Test func isTextJudgesLengthsAsTheValidatorDoes() {
        var differing: [String] = []
        let bounds: [Int?] = [nil, 0, 1, 2, 4, 7, 12, 30]
        for text in Self.texts(2_000) {
            let bytes = Array(text.utf8)
            for minimum in bounds {
                for maximum in bounds {
                    let judged = bytes.withUnsafeBufferPointer { ObjectValidator.isText($0, lengthFrom: minimum, to: maximum) }
                    let expected = text.count >= (minimum ?? 0) && text.count <= (maximum ?? .max)
                    if judged != expected { differing.append("\(String(reflecting: text)) \(String(describing: minimum))...\(String(describing: maximum))") }
                }
            }
        }
        #expect(differing.isEmpty, "\(differing.count): \(differing.prefix(5))")
    }

    /// Whether Swift's validation takes `bytes`, and whether the UTF-8 check and the capped count
    /// (which checks the rest) say the same.
    static func judged(_ bytes: [UInt8]) -> (swift: Bool, agree: Bool) {
        let swift = String(validating: bytes, as: UTF8.self) != nil
        let ours = bytes.withUnsafeBufferPointer { ObjectValidator.isUTF8($0) }
        let counted = bytes.withUnsafeBufferPointer { ObjectValidator.characterCount(utf8: $0, upTo: 1) } != nil
        return (swift, ours == swift && counted == swift)
    }

    /// Bytes cut out of valid text at random, with bytes no UTF-8 has put in: judged as Swift's validation judges them.
    @Test func bytesThatAreNotUTF8AreRefusedAsSwiftRefusesThem() {
        var draws = Draws(seed: 0x1234_5678_9ABC_DEF1)
        func next(_ bound: Int) -> Int { draws.next(bound) }
        let strays: [UInt8] = [0x80, 0xBF, 0xC0, 0xC1, 0xC3, 0xE0, 0xED, 0xF0, 0xF4, 0xF5, 0xFF]
        var differing: [[UInt8]] = []
        var refused = 0
        for text in Self.texts(5_000) {
            var bytes = Array(text.utf8)
            switch next(3) {
            case 0 where !bytes.isEmpty: bytes.removeSubrange(next(bytes.count)..<bytes.count)
            case 1: bytes.insert(strays[next(strays.count)], at: next(bytes.count + 1))
            default: break
            }
            let (swift, agree) = Self.judged(bytes)
            if !swift { refused += 1 }
            if !agree { differing.append(bytes) }
        }
        #expect(refused > 500)
        #expect(differing.isEmpty, "\(differing.count): \(differing.prefix(5))")
    }

    /// Pieces that are UTF-8 (ASCII, two-, three- and four-byte scalars) and pieces that are not
    /// (stray continuations, overlong leads, a lead cut short, a surrogate), put together at every
    /// offset of the eight-byte words the check reads: judged as Swift's validation judges them.
    @Test func everyAlignmentOfTwoByteAndLongerSequences() {
        let good: [[UInt8]] = [[0x41], [0x7A, 0x20], [0xC3, 0xA9], [0xC2, 0x80], [0xDF, 0xBF], [0xD0, 0x96],
                               [0xE2, 0x82, 0xAC], [0xE0, 0xA0, 0x80], [0xF0, 0x9F, 0x98, 0x80], [0x0D, 0x0A]]
        let bad: [[UInt8]] = [[0x80], [0xBF], [0xC0, 0x80], [0xC1, 0xBF], [0xC3], [0xC3, 0x41], [0xE2, 0x82],
                              [0xED, 0xA0, 0x80], [0xE0, 0x80, 0x80], [0xF8], [0xF0, 0x9F, 0x98]]
        var draws = Draws(seed: 0x0DDB_A11C_0FFE_E123)
        func next(_ bound: Int) -> Int { draws.next(bound) }
        var differing: [[UInt8]] = []
        var refused = 0
        for _ in 0..<40_000 {
            var bytes: [UInt8] = Array(repeating: 0x61, count: next(9))
            for _ in 0..<next(12) { bytes += good[next(good.count)] }
            if next(2) == 0 { bytes.insert(contentsOf: bad[next(bad.count)], at: next(bytes.count + 1)) }
            for _ in 0..<next(4) { bytes += good[next(good.count)] }
            let (swift, agree) = Self.judged(bytes)
            if !swift { refused += 1 }
            if !agree { differing.append(bytes) }
        }
        #expect(refused > 10_000)
        #expect(differing.count == 0, "\(differing.count), the first: \(differing.prefix(3))")
    }
}
