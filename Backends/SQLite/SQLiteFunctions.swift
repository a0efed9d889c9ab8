import CSQLite
import Foundation
import ObjectModel
import ObjectStore

/// SQL functions that call back into Swift: into ``PredicateEvaluator``, so that string
/// comparisons with `[c]`/`[d]`, `LIKE` and `MATCHES` run inside SQLite with exactly the
/// evaluator's answers; into the validator's rules, so that a row's values are judged where they lie.
enum SQLiteFunctions {
    /// `objectstore_string(op, options, lhs, rhs)`: 1 when `lhs op[options] rhs` holds.
    static let stringComparison = "objectstore_string"

    /// `objectstore_values(plan, value…)`: 1 when each value is in the form the reader takes for
    /// its attribute and obeys the attribute's rules, as the plan says them (``ValueChecks``); 0
    /// when one may not. The plan, the JSON of one ``ValueChecks/Check`` per value, is read once
    /// per statement.
    static let values = "objectstore_values"

    static func register(on db: OpaquePointer) -> Int32 {
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC
        for (name, arguments, function) in [(stringComparison, 4, compareStrings), (values, -1, checkValues)] {
            let result = sqlite3_create_function_v2(db, name, Int32(arguments), flags, nil, function, nil, nil, nil)
            guard result == SQLITE_OK else { return result }
        }
        return SQLITE_OK
    }
}

/// The checks of `objectstore_values`, read from its first argument once per statement and
/// kept with it (`sqlite3_set_auxdata`), so a query over a million rows reads its plan and
/// compiles its patterns once.
private final class PlanBox {
    let checks: [ValueChecks.Compiled]
    /// The patterns the checks use, held for them.
    let matchers: [WholeMatch.Matcher]
    init(_ compiled: (checks: [ValueChecks.Compiled], matchers: [WholeMatch.Matcher])) { (checks, matchers) = compiled }
}

private let checkValues: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, count, arguments in
    guard count >= 1, let arguments else { return sqlite3_result_error(context, "objectstore_values: no plan", -1) }
    let box: Unmanaged<PlanBox>
    if let kept = sqlite3_get_auxdata(context, 0) {
        box = Unmanaged<PlanBox>.fromOpaque(kept)
    } else {
        guard let plan = text(arguments[0]), let compiled = ValueChecks.compiled(plan), compiled.checks.count == Int(count) - 1 else {
            return sqlite3_result_error(context, "objectstore_values: a plan that is not one for its \(count - 1) values", -1)
        }
        box = Unmanaged.passRetained(PlanBox(compiled))
        sqlite3_set_auxdata(context, 0, box.toOpaque()) { box in
            if let box { Unmanaged<PlanBox>.fromOpaque(box).release() }
        }
        // SQLite may have dropped the plan at once (no memory): it is read again at the next call.
        guard sqlite3_get_auxdata(context, 0) != nil else { return sqlite3_result_int(context, 0) }
    }
    let admitted = box._withUnsafeGuaranteedRef { plan in
        plan.checks.withUnsafeBufferPointer { checks in
            checks.indices.allSatisfy { checks[$0].admits(arguments[$0 + 1]) }
        }
    }
    sqlite3_result_int(context, admitted ? 1 : 0)
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
