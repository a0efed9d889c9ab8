import Foundation
import Synchronization

/// Whole-string regular-expression matching (ICU syntax, as `NSPredicate`'s MATCHES and Core
/// Data's pattern validation use), with each pattern compiled once per process and kept:
/// validating a million values against one pattern compiles it once.
public enum WholeMatch {
    /// Whether `pattern` matches all of `text`.
    /// - Throws: ``ModelError`` with ``ModelError/Code/syntax`` when `pattern` is not a regular expression.
    public static func matches(_ text: String, pattern: String, caseInsensitive: Bool = false) throws -> Bool {
        let regex = try compiled(pattern, caseInsensitive: caseInsensitive)
        let range = NSRange(text.startIndex..., in: text)
        guard let match = regex.expression.firstMatch(in: text, options: [.anchored], range: range) else { return false }
        return match.range == range
    }

    /// A compiled expression; `NSRegularExpression` is immutable and safe to share between threads.
    private struct Compiled: @unchecked Sendable {
        let expression: NSRegularExpression
    }

    private struct Key: Hashable {
        let pattern: String
        let caseInsensitive: Bool
    }

    /// At most this many patterns are kept; past it the cache starts over.
    private static let capacity = 512
    private static let cache = Mutex<[Key: Compiled]>([:])

    private static func compiled(_ pattern: String, caseInsensitive: Bool) throws -> Compiled {
        let key = Key(pattern: pattern, caseInsensitive: caseInsensitive)
        if let found = cache.withLock({ $0[key] }) { return found }
        let expression: NSRegularExpression
        do {
            expression = try NSRegularExpression(pattern: pattern, options: caseInsensitive ? [.caseInsensitive] : [])
        } catch {
            throw ModelError(.syntax, problems: ["\(String(reflecting: pattern)) is not a regular expression"])
        }
        let compiled = Compiled(expression: expression)
        cache.withLock { cache in
            if cache.count >= capacity { cache.removeAll(keepingCapacity: true) }
            cache[key] = compiled
        }
        return compiled
    }
}
