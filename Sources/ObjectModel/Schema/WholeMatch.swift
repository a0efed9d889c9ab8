import Foundation
import Synchronization

/// Whole-string regular-expression matching (ICU syntax, as `NSPredicate`'s MATCHES and Core
/// Data's pattern validation use): a text matches when the pattern can match all of it, as
/// ICU's `matches` says (`a|ab` matches `ab`). Each pattern is compiled once per process and
/// kept: validating a million values against one pattern compiles it once.
///
/// Patterns of a common part of the syntax (character classes, quantifiers, groups,
/// alternation: `[a-z_]+`, `[A-Z]{3}-[0-9]{4}`) are matched against ASCII text by an automaton
/// in one pass, with ICU's own answer for each character class; anything else goes to ICU.
public enum WholeMatch {
    /// Whether `pattern` matches all of `text`.
    /// - Throws: ``ModelError`` with ``ModelError/Code/syntax`` when `pattern` is not a regular expression.
    public static func matches(_ text: String, pattern: String, caseInsensitive: Bool = false) throws -> Bool {
        try matcher(for: pattern, caseInsensitive: caseInsensitive).matches(text)
    }

    /// The compiled form of `pattern`, kept for the process.
    /// - Throws: ``ModelError`` with ``ModelError/Code/syntax`` when `pattern` is not a regular expression.
    public static func matcher(for pattern: String, caseInsensitive: Bool = false) throws -> Matcher {
        let key = Key(pattern: pattern, caseInsensitive: caseInsensitive)
        if let found = cache.withLock({ $0[key] }) { return found }
        let matcher = try Matcher(pattern, caseInsensitive: caseInsensitive)
        cache.withLock { cache in
            if cache.count >= capacity { cache.removeAll(keepingCapacity: true) }
            cache[key] = matcher
        }
        return matcher
    }

    /// A compiled pattern. `NSRegularExpression` is immutable and safe to share between threads.
    public final class Matcher: @unchecked Sendable {
        /// `(?:pattern)\z`, so that an anchored first match is a match of the whole text if there
        /// is one; the pattern itself when that does not compile (a comment to the end in `(?x)`).
        private let expression: NSRegularExpression
        private let wrapped: Bool
        private let automaton: ASCIIPattern?

        fileprivate init(_ pattern: String, caseInsensitive: Bool) throws {
            let options: NSRegularExpression.Options = caseInsensitive ? [.caseInsensitive] : []
            let plain: NSRegularExpression
            do {
                plain = try NSRegularExpression(pattern: pattern, options: options)
            } catch {
                throw ModelError(.syntax, problems: ["\(String(reflecting: pattern)) is not a regular expression"])
            }
            if let whole = try? NSRegularExpression(pattern: "(?:\(pattern))\\z", options: options) {
                (expression, wrapped) = (whole, true)
            } else {
                (expression, wrapped) = (plain, false)
            }
            automaton = ASCIIPattern(pattern) { item in
                // The ASCII characters ICU says the item matches alone.
                guard let single = try? NSRegularExpression(pattern: item, options: options) else { return nil }
                var set = ASCIIPattern.CharacterSet()
                for byte in UInt8(0)..<0x80 {
                    let text = String(UnicodeScalar(byte))
                    if single.firstMatch(in: text, options: [.anchored], range: NSRange(location: 0, length: 1))?.range.length == 1 {
                        set.insert(byte)
                    }
                }
                return set
            }
        }

        /// Whether the pattern matches all of `text`.
        public func matches(_ text: String) -> Bool {
            if let automaton, let answer = text.utf8.withContiguousStorageIfAvailable({ automaton.matches($0) }), let answer {
                return answer
            }
            let range = NSRange(text.startIndex..., in: text)
            guard let match = expression.firstMatch(in: text, options: [.anchored], range: range) else { return false }
            return wrapped || match.range == range
        }

        /// Whether the pattern matches all of the text whose UTF-8 is `utf8`.
        public func matches(utf8: UnsafeBufferPointer<UInt8>) -> Bool {
            if let automaton, let answer = automaton.matches(utf8) { return answer }
            return matches(String(decoding: utf8, as: UTF8.self))
        }
    }

    private struct Key: Hashable {
        let pattern: String
        let caseInsensitive: Bool
    }

    /// At most this many patterns are kept; past it the cache starts over.
    private static let capacity = 512
    private static let cache = Mutex<[Key: Matcher]>([:])
}
