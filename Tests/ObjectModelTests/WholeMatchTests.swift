import Foundation
@testable import ObjectModel
import Testing

/// `WholeMatch` against ICU itself: `NSRegularExpression` asked whether the pattern, followed by
/// the end of the text, matches from its start (what ICU's `matches` answers).
@Suite struct WholeMatchTests {
    /// ICU's answer, by backtracking.
    private static func icu(_ text: String, _ pattern: String, caseInsensitive: Bool = false) throws -> Bool {
        let expression = try NSRegularExpression(pattern: "(?:\(pattern))\\z", options: caseInsensitive ? [.caseInsensitive] : [])
        return expression.firstMatch(in: text, options: [.anchored], range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// Whether the automaton takes the pattern (nothing is asked of ICU for the tables here).
    private static func compiles(_ pattern: String) -> Bool {
        ASCIIPattern(pattern) { _ in ASCIIPattern.CharacterSet() } != nil
    }

    @Test func aWholeMatchIsAnyMatchOfTheWholeText() throws {
        // ICU's first match of `a|ab` in "ab" is "a"; the whole text still matches.
        #expect(try WholeMatch.matches("ab", pattern: "a|ab"))
        #expect(try WholeMatch.matches("ab", pattern: "(?:a|ab)(?#comment)"))
        #expect(try !WholeMatch.matches("abc", pattern: "a|ab"))
        #expect(try WholeMatch.matches("", pattern: "a*"))
        #expect(try !WholeMatch.matches("", pattern: "a+"))
        // Lazy loops over what can match nothing: ICU's own answers (the review found the automaton's differed).
        for (text, pattern) in [("abc", "(\\w*?)+?"), ("a", "(a??)+?"), ("ab", "([a-z]??)+?"), ("12", "(-?[0-9]*?)+?")] {
            #expect(try WholeMatch.matches(text, pattern: pattern) == Self.icu(text, pattern), "\(pattern) on \(text)")
        }
    }

    @Test func theAutomatonTakesCommonPatternsAndDeclinesTheRest() {
        for pattern in ["[a-z_]+", "[A-Z]{3}-[0-9]{4}", "^[^@ ]+@[^@ ]+\\.[a-z]{2,}$", "(?:ab|c)*d", "\\d+(\\.\\d{1,2})?", "a{0}", "x|", "()", "(a|)?"] {
            #expect(Self.compiles(pattern), "\(pattern)")
        }
        // Possessive and atomic forms, look-around, back references, set operations, nesting,
        // named escapes, a `$` before the end, Unicode, counts past the automaton's size.
        for pattern in ["a*+a", "(?>a*)a", "(?=a)a", "(a)\\1", "[a-z&&[^x]]", "[[:alpha:]]", "\\p{L}", "\\x41",
                        "a$b", "é+", "[a-z]{1,900}", "a**", ")", "(", "[a", "a{2,1}", "\\b", "(?i)a", "\\",
                        "a*?", "(ab)+?", "(\\w*?)+?", "(a*)*", "(a|)+"] {
            #expect(!Self.compiles(pattern), "\(pattern)")
        }
    }

    @Test func agreesWithICUOnChosenCases() throws {
        let cases: [(String, [String])] = [
            (".*", ["", "abc", "a\nb", "a\rb", "\r\n", "a\u{0B}b", "a\u{0C}b", "tab\there", "nul\u{0}nul"]),
            ("\\s+", [" ", "\t\n", "\u{0B}", "\u{0C}", "\r", "\u{1C}", "\u{1F}", "\u{85}", "\u{A0}"]),
            ("\\w+", ["abc_09", "a-b", "é", "Ω", "a\u{301}"]),
            ("\\d{2}", ["12", "1a", "١٢", "１２"]),
            ("[^a]", ["\n", "\u{0}", "a", "é", "\u{1F600}"]),
            ("colou?r$", ["color", "colour", "colour\n", "colr"]),
            ("^a|b$", ["a", "b", "ab"]),
            ("[a-z_]+", ["snake_case", "Snake", "", "naïve", "end\u{0}"]),
            ("(a|b)*c", ["abababc", "abca", "c"]),
            ("\\.\\-\\\\\\$", [".-\\$", "x-\\$"]),
        ]
        for (pattern, texts) in cases {
            #expect(Self.compiles(pattern), "\(pattern)")
            for text in texts {
                #expect(try WholeMatch.matches(text, pattern: pattern) == Self.icu(text, pattern), "\(pattern) on \(String(reflecting: text))")
                var utf8 = Array(text.utf8)
                let viaBytes = try utf8.withUnsafeMutableBufferPointer { try WholeMatch.matcher(for: pattern).matches(utf8: UnsafeBufferPointer($0)) }
                #expect(viaBytes == (try Self.icu(text, pattern)), "bytes: \(pattern) on \(String(reflecting: text))")
            }
        }
        for text in ["ABC", "abc", "aBc", "ab"] {
            #expect(try WholeMatch.matches(text, pattern: "[a-c]{3}", caseInsensitive: true) == Self.icu(text, "[a-c]{3}", caseInsensitive: true))
            #expect(try WholeMatch.matches(text, pattern: "abc", caseInsensitive: true) == Self.icu(text, "abc", caseInsensitive: true))
        }
    }

    /// Random patterns of the automaton's part, and random texts over their alphabet, against ICU.
    @Test func agreesWithICUOnRandomPatterns() throws {
        var random = SplitMix(seed: 0x5EED)
        let atoms = ["a", "b", "c", "-", ".", "[ab]", "[^a]", "[a-c_]", "\\d", "\\w", "\\s", "\\.", "[0-9]", " "]
        func atom() -> String { atoms[random.next(atoms.count)] }
        func quantified(_ depth: Int) -> String {
            let base = depth > 0 && random.next(4) == 0 ? "(" + expression(depth - 1) + ")" : atom()
            switch random.next(8) {
            case 0: return base + "*"
            case 1: return base + "+"
            case 2: return base + "?"
            case 3: return base + "{\(random.next(3))}"
            case 4: let m = random.next(3); return base + "{\(m),\(m + random.next(3))}" + (random.next(2) == 0 ? "?" : "")
            case 5: return base + "{\(random.next(3)),}"
            default: return base
            }
        }
        func sequence(_ depth: Int) -> String { (0..<(1 + random.next(3))).map { _ in quantified(depth) }.joined() }
        func expression(_ depth: Int) -> String { (0..<(1 + random.next(2))).map { _ in sequence(depth) }.joined(separator: "|") }
        let alphabet = Array("abc-. 1_\n\tZ")
        var compared = 0, compiled = 0
        for _ in 0..<300 {
            var pattern = expression(2)
            if random.next(5) == 0 { pattern = "^" + pattern }
            if random.next(5) == 0 { pattern += "$" }
            // Lazy forms and loops over what can match nothing are left to ICU; the rest is the automaton's.
            if Self.compiles(pattern) { compiled += 1 }
            let matcher = try WholeMatch.matcher(for: pattern)
            for _ in 0..<20 {
                let text = String((0..<random.next(7)).map { _ in alphabet[random.next(alphabet.count)] })
                #expect(matcher.matches(text) == (try Self.icu(text, pattern)), "\(pattern) on \(String(reflecting: text))")
                compared += 1
            }
        }
        #expect(compared == 6000)
        #expect(compiled > 100, "the automaton took \(compiled) of 300 patterns")
    }
}

/// A small seeded generator, so a failure can be run again.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
