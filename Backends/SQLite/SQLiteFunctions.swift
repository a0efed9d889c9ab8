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

    /// `objectstore_text(text, minLength, maxLength, pattern)`: 1 when the text is UTF-8 (as the
    /// reader takes it), its length in characters lies within the bounds (grapheme clusters, as a
    /// length rule counts them: `ObjectValidator`) and the pattern matches all of it (as a pattern
    /// rule says: ``WholeMatch``); 0 when not, and for a value of another storage class. A NULL
    /// bound or pattern is no rule. NULL for a NULL, or a pattern that is not a regular expression
    /// (which no value obeys: the caller checks).
    static let text = "objectstore_text"

    static func register(on db: OpaquePointer) -> Int32 {
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC
        for (name, arguments, function) in [(stringComparison, 4, compareStrings), (text, 4, checkText)] {
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

private let checkText: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, count, arguments in
    guard count == 4, let arguments else { return sqlite3_result_error(context, "objectstore_text: bad arguments", -1) }
    func bound(_ value: OpaquePointer?) -> Int? { sqlite3_value_type(value) == SQLITE_NULL ? nil : Int(sqlite3_value_int64(value)) }
    var matcher: WholeMatch.Matcher?
    if sqlite3_value_type(arguments[3]) != SQLITE_NULL {
        if let kept = sqlite3_get_auxdata(context, 3) {
            matcher = Unmanaged<MatcherBox>.fromOpaque(kept).takeUnretainedValue().matcher
        } else {
            guard let pattern = text(arguments[3]), let compiled = try? WholeMatch.matcher(for: pattern) else { return sqlite3_result_null(context) }
            matcher = compiled
            sqlite3_set_auxdata(context, 3, Unmanaged.passRetained(MatcherBox(compiled)).toOpaque()) { box in
                if let box { Unmanaged<MatcherBox>.fromOpaque(box).release() }
            }
        }
    }
    let minimum = bound(arguments[1]), maximum = bound(arguments[2])
    if sqlite3_value_type(arguments[0]) == SQLITE_NULL { return sqlite3_result_null(context) }
    let obeys = withText(arguments[0]) { utf8 in
        ObjectValidator.isText(utf8, lengthFrom: minimum, to: maximum) && matcher?.matches(utf8: utf8) != false
    }
    sqlite3_result_int(context, obeys == true ? 1 : 0)
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
