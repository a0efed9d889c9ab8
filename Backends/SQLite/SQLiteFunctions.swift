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

    static func register(on db: OpaquePointer) -> Int32 {
        sqlite3_create_function_v2(db, stringComparison, 4, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil, compareStrings, nil, nil, nil)
    }
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
