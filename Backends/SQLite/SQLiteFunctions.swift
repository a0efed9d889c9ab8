import CSQLite
import Foundation
import ObjectModel
import ObjectStore

/// SQL functions that call back into ``PredicateEvaluator``, so that string
/// comparisons with `[c]`/`[d]`, `LIKE` and `MATCHES` run inside SQLite with
/// exactly the evaluator's answers.
enum SQLiteFunctions {
    /// `objectstore_string(op, options, lhs, rhs)`: 1 when `lhs op[options] rhs` holds.
    static let stringComparison = "objectstore_string"

    /// `objectstore_matches(text, pattern)`: 1 when the pattern matches all of the text, as a
    /// pattern rule says (``WholeMatch``); NULL for a NULL or a value that is not text, or a
    /// pattern that is not a regular expression (which no value obeys: the caller checks).
    static let patternMatch = "objectstore_matches"

    /// `objectstore_length(text)`: the text's length in characters, as a length rule counts it
    /// (grapheme clusters, `ObjectValidator`); NULL for a NULL or a value that is not text.
    static let characterCount = "objectstore_length"

    /// `objectstore_utf8(text)`: 1 when the text's bytes are UTF-8, 0 when not (the reader refuses
    /// such text); NULL for a NULL or a value that is not text.
    static let validUTF8 = "objectstore_utf8"

    static func register(on db: OpaquePointer) -> Int32 {
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC
        for (name, arguments, function) in [(stringComparison, 4, compareStrings), (patternMatch, 2, matchPattern), (characterCount, 1, countCharacters),
                                            (validUTF8, 1, checkUTF8)] {
            let result = sqlite3_create_function_v2(db, name, Int32(arguments), flags, nil, function, nil, nil, nil)
            guard result == SQLITE_OK else { return result }
        }
        return SQLITE_OK
    }
}

/// The UTF-8 of a text value, for the length of the call; nil for anything else.
private func withText<R>(_ value: OpaquePointer?, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R? {
    guard sqlite3_value_type(value) == SQLITE_TEXT else { return nil }
    // `sqlite3_value_text` first, then the byte count of that text (SQLite's documented order).
    let bytes = sqlite3_value_text(value)
    let count = Int(sqlite3_value_bytes(value))
    guard let bytes else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
    return body(UnsafeBufferPointer(start: bytes, count: count))
}

/// A compiled pattern kept with the statement (`sqlite3_set_auxdata`), so a query over a million
/// rows compiles and looks up its pattern once.
private final class MatcherBox {
    let matcher: WholeMatch.Matcher
    init(_ matcher: WholeMatch.Matcher) { self.matcher = matcher }
}

private let matchPattern: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, count, arguments in
    guard count == 2, let arguments else { return sqlite3_result_error(context, "objectstore_matches: bad arguments", -1) }
    let matcher: WholeMatch.Matcher
    if let kept = sqlite3_get_auxdata(context, 1) {
        matcher = Unmanaged<MatcherBox>.fromOpaque(kept).takeUnretainedValue().matcher
    } else {
        guard let pattern = text(arguments[1]), let compiled = try? WholeMatch.matcher(for: pattern) else { return sqlite3_result_null(context) }
        matcher = compiled
        sqlite3_set_auxdata(context, 1, Unmanaged.passRetained(MatcherBox(compiled)).toOpaque()) { box in
            if let box { Unmanaged<MatcherBox>.fromOpaque(box).release() }
        }
    }
    guard let matches = withText(arguments[0], matcher.matches(utf8:)) else { return sqlite3_result_null(context) }
    sqlite3_result_int(context, matches ? 1 : 0)
}

private let countCharacters: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, count, arguments in
    guard count == 1, let arguments, let length = withText(arguments[0], ObjectValidator.characterCount(utf8:)) else {
        return sqlite3_result_null(context)
    }
    sqlite3_result_int64(context, Int64(length))
}

private func text(_ value: OpaquePointer?) -> String? {
    guard sqlite3_value_type(value) != SQLITE_NULL, let bytes = sqlite3_value_text(value) else { return nil }
    return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
}

private let compareStrings: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, count, arguments in
    guard count == 4, let arguments, let opText = text(arguments[0]), let op = Comparison.Operator(rawValue: opText) else {
        sqlite3_result_error(context, "objectstore_string: bad arguments", -1)
        return
    }
    let options = Comparison.Options(rawValue: Int(sqlite3_value_int64(arguments[1])))
    // A NULL column is nil; anything else is compared as the text SQLite holds.
    let lhs = text(arguments[2]).map(Value.string)
    let rhs = text(arguments[3]).map(Value.string)
    do {
        sqlite3_result_int(context, try PredicateEvaluator.compare(lhs, op, rhs, options: options) ? 1 : 0)
    } catch {
        sqlite3_result_error(context, "\(error)", -1)
    }
}

private let checkUTF8: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, count, arguments in
    guard count == 1, let arguments, let valid = withText(arguments[0], ObjectValidator.isUTF8) else {
        return sqlite3_result_null(context)
    }
    sqlite3_result_int(context, valid ? 1 : 0)
}
