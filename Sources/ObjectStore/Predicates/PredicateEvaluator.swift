import Foundation
import ObjectModel

/// What a key resolves to on an object a predicate is evaluated against.
public enum ResolvedKey {
    /// An attribute value (nil when missing).
    case value(Value?)
    /// A to-one relationship's object (nil when empty).
    case object((any PredicateSubject)?)
    /// A to-many relationship's objects.
    case objects([any PredicateSubject])
}

/// An object predicates and sort descriptors can be evaluated against.
///
/// Stores and contexts adapt their objects to this; the evaluation rules live
/// in ``PredicateEvaluator`` alone.
public protocol PredicateSubject {
    /// The attribute or relationship named `key`, or nil when the entity has no such property.
    /// - Throws: when the objects across a relationship cannot be read.
    func resolve(_ key: String) throws -> ResolvedKey?
    /// A value standing for the object itself, for comparing objects with each other.
    var identity: Value { get }
}

/// The one definition of what predicates and sort descriptors mean.
///
/// - Comparisons with nil: `==` and `!=` compare presence; ordering operators are false.
/// - Numbers compare by value across integer, double and decimal.
/// - Strings compare by UTF-8 bytes, equality too (two spellings of "é" differ, as in SQLite and
///   in uniqueness constraints); `[c]` folds case, `[d]` folds diacritics.
/// - A string constant compared with a date, UUID, URI or decimal is read as one.
/// - A key path through a to-many yields a collection: without a quantifier the
///   comparison is true when it holds for any element (`CONTAINS` on a collection
///   of values tests membership); `ANY`, `ALL` and `NONE` quantify explicitly.
/// - Across a relationship, a key of one sub-entity of the destination is allowed: objects of
///   the other sub-entities have no value for it (`ANY items.pageCount > 100` over books and
///   magazines), as their rows have NULL in its column in SQLite.
/// - `@count` after a to-many gives its number of objects.
/// - `LIKE` takes `*` and `?` wildcards; `MATCHES` an ICU regular expression that must match the whole string.
public enum PredicateEvaluator {
    /// Whether `subject` satisfies `predicate`.
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidFetch`` for an unknown key path or an operator that does not apply.
    public static func evaluate(_ predicate: ObjectPredicate, on subject: any PredicateSubject) throws -> Bool {
        switch predicate {
        case .constant(let v): return v
        case .and(let ps):
            for p in ps where try !evaluate(p, on: subject) { return false }
            return true
        case .or(let ps):
            for p in ps where try evaluate(p, on: subject) { return true }
            return false
        case .not(let p): return try !evaluate(p, on: subject)
        case .comparison(let c): return try evaluate(c, on: subject)
        }
    }

    /// The values a key path yields on `subject`: one value, or a collection when it crosses a to-many.
    public enum Operand {
        case single(Value?)
        case many([Value?])
    }

    /// Resolves an expression on `subject`.
    public static func operand(_ expression: PredicateExpression, on subject: any PredicateSubject) throws -> Operand {
        switch expression {
        case .constant(let v): return .single(v)
        case .list(let items):
            return .many(try items.map { item -> Value? in
                guard case .single(let v) = try operand(item, on: subject) else {
                    throw StoreError(.invalidFetch, "a list may not hold a to-many key path")
                }
                return v
            })
        case .keyPath(let path): return try resolve(path, on: subject)
        }
    }

    private enum Walk {
        case object((any PredicateSubject)?)
        case objects([any PredicateSubject])
        case single(Value?)
        case many([Value?])
    }

    static func resolve(_ path: String, on subject: any PredicateSubject) throws -> Operand {
        var current = Walk.object(subject)
        var acrossRelationship = false
        for key in path.split(separator: ".", omittingEmptySubsequences: false).map(String.init) {
            defer { acrossRelationship = true }
            if key == "@count" {
                switch current {
                case .objects(let list): current = .single(.integer(Int64(list.count)))
                case .many(let list): current = .single(.integer(Int64(list.count)))
                default: throw StoreError(.invalidFetch, "\(path): @count needs a to-many before it")
                }
                continue
            }
            switch current {
            case .object(nil):
                current = .single(nil)
            case .object(let object?):
                guard let resolved = try object.resolve(key) else {
                    // Across a relationship, an object of a sub-entity that lacks a sibling's
                    // property has no value for it (as a column SQLite holds NULL in).
                    guard acrossRelationship else { throw StoreError(.invalidFetch, "\(path): unknown key \(key)") }
                    current = .single(nil)
                    continue
                }
                switch resolved {
                case .value(let v): current = .single(v)
                case .object(let o): current = .object(o)
                case .objects(let os): current = .objects(os)
                }
            case .objects(let list):
                var values: [Value?] = []
                var objects: [any PredicateSubject] = []
                var sawValue = false
                var lacking = 0
                for object in list {
                    guard let resolved = try object.resolve(key) else {
                        lacking += 1   // of a sub-entity without this property (see above)
                        continue
                    }
                    switch resolved {
                    case .value(let v): values.append(v); sawValue = true
                    case .object(let o): if let o { objects.append(o) }
                    case .objects(let os): objects += os
                    }
                }
                current = sawValue ? .many(values + Array(repeating: nil, count: lacking)) : .objects(objects)
            case .single(nil):
                current = .single(nil)
            case .single, .many:
                throw StoreError(.invalidFetch, "\(path): \(key) follows an attribute")
            }
        }
        switch current {
        case .object(let o): return .single(o?.identity)
        case .objects(let os): return .many(os.map(\.identity))
        case .single(let v): return .single(v)
        case .many(let vs): return .many(vs)
        }
    }

    private static func evaluate(_ c: Comparison, on subject: any PredicateSubject) throws -> Bool {
        let lhs = try operand(c.lhs, on: subject)
        let rhs = try operand(c.rhs, on: subject)
        let test: (Value?) throws -> Bool = { try compare($0, c.op, rhs, c.options) }
        switch (c.quantifier, lhs) {
        case (.direct, .single(let v)): return try test(v)
        case (.direct, .many(let vs)):
            if c.op == .contains, case .single(let needle) = rhs {
                return vs.contains { equal($0, needle, c.options) }
            }
            return try vs.contains(where: test)
        case (.any, .many(let vs)): return try vs.contains(where: test)
        case (.all, .many(let vs)): return try vs.allSatisfy(test)
        case (.none, .many(let vs)): return try !vs.contains(where: test)
        case (.any, .single(let v)), (.all, .single(let v)): return try test(v)
        case (.none, .single(let v)): return try !test(v)
        }
    }

    private static func compare(_ lhs: Value?, _ op: Comparison.Operator, _ rhs: Operand, _ options: Comparison.Options) throws -> Bool {
        switch op {
        case .in:
            switch rhs {
            case .many(let vs): return vs.contains { equal(lhs, $0, options) }
            case .single(let v):
                if case .string(let haystack)? = v, case .string(let needle)? = lhs {
                    return fold(haystack, options).contains(fold(needle, options))
                }
                return equal(lhs, v, options)
            }
        case .between:
            guard case .many(let bounds) = rhs, bounds.count == 2 else {
                throw StoreError(.invalidFetch, "BETWEEN needs a list of two values")
            }
            guard let lower = order(lhs, bounds[0], options), let upper = order(lhs, bounds[1], options) else { return false }
            return lower >= 0 && upper <= 0
        default:
            guard case .single(let r) = rhs else {
                throw StoreError(.invalidFetch, "\(op.rawValue) needs a single value on its right")
            }
            return try compare(lhs, op, r, options)
        }
    }

    /// One comparison of two single values, with the evaluator's rules (for
    /// backends that call back into them, such as a SQL function).
    public static func compare(_ lhs: Value?, _ op: Comparison.Operator, _ rhs: Value?, options: Comparison.Options) throws -> Bool {
        try compare(lhs, op, rhs, options)
    }

    private static func compare(_ lhs: Value?, _ op: Comparison.Operator, _ rhs: Value?, _ options: Comparison.Options) throws -> Bool {
        switch op {
        case .equal: return equal(lhs, rhs, options)
        case .notEqual: return !equal(lhs, rhs, options)
        case .lessThan: return order(lhs, rhs, options).map { $0 < 0 } ?? false
        case .lessThanOrEqual: return order(lhs, rhs, options).map { $0 <= 0 } ?? false
        case .greaterThan: return order(lhs, rhs, options).map { $0 > 0 } ?? false
        case .greaterThanOrEqual: return order(lhs, rhs, options).map { $0 >= 0 } ?? false
        case .beginsWith, .endsWith, .contains, .like, .matches:
            guard case .string(let a)? = lhs, case .string(let b)? = rhs else { return false }
            let (fa, fb) = (fold(a, options), fold(b, options))
            switch op {
            case .beginsWith: return fa.unicodeScalars.starts(with: fb.unicodeScalars)
            case .endsWith: return fa.unicodeScalars.reversed().starts(with: fb.unicodeScalars.reversed())
            case .contains: return fb.isEmpty || fa.range(of: fb, options: .literal) != nil
            case .like: return like(Array(fa.unicodeScalars), Array(fb.unicodeScalars))
            default: return try matches(a, pattern: b, options)
            }
        case .in, .between:
            return try compare(lhs, op, .single(rhs), options)
        }
    }

    /// Whether two values are equal under the predicate rules.
    public static func equal(_ a: Value?, _ b: Value?, _ options: Comparison.Options = []) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (nil, _), (_, nil): return false
        default: return order(a, b, options) == 0
        }
    }

    /// The order of two values (-1, 0, 1), or nil when they do not compare.
    public static func order(_ a: Value?, _ b: Value?, _ options: Comparison.Options = []) -> Int? {
        guard let a, let b else { return nil }
        switch (a, b) {
        case (.string(let x), .string(let y)):
            return ValueOrdering.bytes(fold(x, options), fold(y, options))
        case (.string(let s), _):
            return coerced(s, like: b).flatMap { order($0, b, options) }
        case (_, .string(let s)):
            return coerced(s, like: a).flatMap { order(a, $0, options) }
        default:
            return ValueOrdering.compare(a, b)
        }
    }

    private static func coerced(_ text: String, like other: Value) -> Value? {
        switch other {
        case .date: AttributeType.date.parseValue(text)
        case .uuid: AttributeType.uuid.parseValue(text)
        case .uri: AttributeType.uri.parseValue(text)
        case .decimal: AttributeType.decimal.parseValue(text)
        default: nil
        }
    }


    static func fold(_ s: String, _ options: Comparison.Options) -> String {
        var fold: String.CompareOptions = []
        if options.contains(.caseInsensitive) { fold.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { fold.insert(.diacriticInsensitive) }
        return fold.isEmpty ? s : s.folding(options: fold, locale: nil)
    }

    private static func like(_ s: [Unicode.Scalar], _ p: [Unicode.Scalar]) -> Bool {
        // Iterative wildcard match with backtracking on the last `*`.
        var (si, pi) = (0, 0)
        var star = -1
        var mark = 0
        while si < s.count {
            if pi < p.count && p[pi] == "\\" && pi + 1 < p.count && p[pi + 1] == s[si] {
                si += 1; pi += 2
            } else if pi < p.count && (p[pi] == "?" || (p[pi] != "*" && p[pi] == s[si])) {
                si += 1; pi += 1
            } else if pi < p.count && p[pi] == "*" {
                star = pi; mark = si; pi += 1
            } else if star >= 0 {
                pi = star + 1; mark += 1; si = mark
            } else {
                return false
            }
        }
        while pi < p.count && p[pi] == "*" { pi += 1 }
        return pi == p.count
    }

    static func matches(_ s: String, pattern: String, _ options: Comparison.Options) throws -> Bool {
        let subject = options.contains(.diacriticInsensitive) ? fold(s, .diacriticInsensitive) : s
        do {
            return try WholeMatch.matches(subject, pattern: pattern, caseInsensitive: options.contains(.caseInsensitive))
        } catch {
            throw StoreError(.invalidFetch, "MATCHES: \(String(reflecting: pattern)) is not a regular expression")
        }
    }

    /// Orders subjects by sort descriptors (missing values first when ascending).
    public static func sortOrder(_ a: any PredicateSubject, _ b: any PredicateSubject,
                                 by descriptors: [ObjectSortDescriptor]) throws -> Int {
        for descriptor in descriptors {
            let x = try sortValue(descriptor.keyPath, on: a)
            let y = try sortValue(descriptor.keyPath, on: b)
            let result = ValueOrdering.total(x, y)
            if result != 0 { return descriptor.ascending ? result : -result }
        }
        return 0
    }

    /// Sorts subjects by sort descriptors; subjects that sort equal keep the order `tieBreak` gives.
    public static func sort<S: PredicateSubject>(_ subjects: inout [S], by descriptors: [ObjectSortDescriptor],
                                                 tieBreak: (S, S) -> Bool) throws {
        var failure: (any Error)?
        subjects.sort { a, b in
            if failure == nil, !descriptors.isEmpty {
                do {
                    let order = try sortOrder(a, b, by: descriptors)
                    if order != 0 { return order < 0 }
                } catch {
                    failure = error
                }
            }
            return tieBreak(a, b)
        }
        if let failure { throw failure }
    }

    private static func sortValue(_ path: String, on subject: any PredicateSubject) throws -> Value? {
        guard case .single(let v) = try resolve(path, on: subject) else {
            throw StoreError(.invalidFetch, "cannot sort by \(path): it crosses a to-many relationship")
        }
        return v
    }
}

/// The order of values, shared by predicates and sorting.
public enum ValueOrdering {
    /// -1, 0 or 1 for values of comparable kinds; nil otherwise (or when a NaN is involved).
    public static func compare(_ a: Value, _ b: Value) -> Int? {
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.decimal(let x), .decimal(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.decimal(let x), .integer(let y)): return compare(.decimal(x), .decimal(Decimal(y)))
        case (.integer(let x), .decimal(let y)): return compare(.decimal(Decimal(x)), .decimal(y))
        case (.boolean(let x), .boolean(let y)): return x == y ? 0 : (!x ? -1 : 1)
        case (.string(let x), .string(let y)): return bytes(x, y)
        case (.date(let x), .date(let y)):
            let (a, b) = (x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
            guard !a.isNaN, !b.isNaN else { return nil }
            return a == b ? 0 : (a < b ? -1 : 1)
        case (.data(let x), .data(let y)): return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        case (.uuid(let x), .uuid(let y)):
            return compare(.data(withUnsafeBytes(of: x.uuid) { Data($0) }), .data(withUnsafeBytes(of: y.uuid) { Data($0) }))
        case (.uri(let x), .uri(let y)): return compare(.string(x.absoluteString), .string(y.absoluteString))
        default:
            guard let x = a.numericValue, let y = b.numericValue, !x.isNaN, !y.isNaN else { return nil }
            if case .boolean = a { return nil }
            if case .boolean = b { return nil }
            return x == y ? 0 : (x < y ? -1 : 1)
        }
    }

    /// -1, 0 or 1 as `x` orders before, with or after `y` by their UTF-8 bytes, equality too (as
    /// SQLite and PostgreSQL's "C" collation compare). Swift's `==` holds canonically equivalent
    /// spellings equal ("é" and "e" + U+0301), which byte order puts apart: no consistent order.
    public static func bytes(_ x: String, _ y: String) -> Int {
        var i = x.utf8.makeIterator(), j = y.utf8.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let a?, let b?): if a != b { return a < b ? -1 : 1 }
            }
        }
    }

    /// A total order for sorting: nil first, then values by ``compare(_:_:)``,
    /// NaN before other numbers (and NaN dates before other dates), and unlike kinds by kind.
    public static func total(_ a: Value?, _ b: Value?) -> Int {
        switch (a, b) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case (let x?, let y?):
            if let c = compare(x, y) { return c }
            func isNaN(_ v: Value) -> Bool {
                if case .date(let d) = v { return d.timeIntervalSinceReferenceDate.isNaN }
                return v.numericValue?.isNaN == true
            }
            let (nx, ny) = (isNaN(x), isNaN(y))
            if nx || ny { return nx == ny ? 0 : (nx ? -1 : 1) }
            let (rx, ry) = (rank(x), rank(y))
            return rx == ry ? 0 : (rx < ry ? -1 : 1)
        }
    }

    private static func rank(_ v: Value) -> Int {
        switch v {
        case .boolean: 0
        case .integer, .double, .decimal: 1
        case .string: 2
        case .date: 3
        case .data: 4
        case .uuid: 5
        case .uri: 6
        }
    }
}
