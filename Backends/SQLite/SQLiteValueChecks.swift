import CSQLite
import Foundation
import ObjectModel
import ObjectStore

/// What `objectstore_values` (``SQLiteFunctions/values``) asks of each of its values: that it be
/// in a form the reader takes for its attribute (``SQLiteValues``), and, for a rule check, that it
/// obey the attribute's rules as the validator says them (``ObjectValidator/check(_:_:)``).
///
/// A superset of what breaks: a value is refused wherever SQL's view of it and the reader's may
/// differ (a number stored as text, a string kept as a blob), and the row is then read and judged
/// in Swift. A row's values are judged in one call, not one SQL term per rule.
enum ValueChecks {
    /// One value's check; its text (JSON) is the plan's part for that value.
    struct Check: Codable, Hashable, Sendable {
        /// The storage classes the reader is taken to accept.
        enum Form: String, Codable, Sendable {
            /// Any: a form of the type's own (URIs, transformables, external data) only a read judges.
            case any
            /// An integer, within `range` when given (Integer 16 and 32, a Boolean's 0…1).
            case integer
            /// An integer or a double (Double, Float, Date).
            case real
            /// An integer or a finite double; text and blobs (decimals of more digits) are the reader's to judge.
            case decimal
            /// UTF-8 text.
            case text
            /// A blob.
            case blob
            /// A blob of 16 bytes.
            case uuid
        }

        /// A bound, exact: an integer, or a double by its bits.
        enum Bound: Codable, Hashable, Sendable {
            case integer(Int64)
            case real(bits: UInt64)
        }

        var form: Form
        var required = false
        /// The integers the type holds.
        var range: ClosedRange<Int64>?
        var lower: Bound?
        var upper: Bound?
        /// Whether a value at a bound may break it (a decimal's bounds, moved outwards to doubles).
        var boundsNamed = false
        /// Characters of text, bytes of a blob.
        var minLength: Int?
        var maxLength: Int?
        var pattern: String?

        /// The check of a value of `attribute` the reader takes, whatever its rules.
        init(readable attribute: Attribute) {
            switch attribute.type {
            case .integer16, .integer32: (form, range) = (.integer, attribute.type.integerRange)
            case .integer64: form = .integer
            case .boolean: (form, range) = (.integer, 0...1)
            case .double, .float, .date: form = .real
            case .string: form = .text
            case .binaryData where !attribute.allowsExternalBinaryDataStorage: form = .blob
            case .uuid: form = .uuid
            default: form = .any
            }
        }

        /// The check of a value of `attribute` the reader takes that obeys the attribute's rules,
        /// or nil when the rules cannot be put so (a pattern that is not a regular expression,
        /// which every value breaks; bounds on text or data; a pattern on what is not text; rules
        /// on a value of a form of its own: a UUID, a URI, a transformable, external data).
        init?(_ attribute: Attribute) {
            self.init(readable: attribute)
            required = !attribute.isOptional
            let rules = attribute.validation
            if attribute.type == .decimal {
                // A decimal is stored as an integer where one holds it, else as a double where one
                // holds it exactly (`SQLiteValues`), else as its text. Each bound is compared as its
                // nearest double moved one step outwards, a value at it named: a double below the
                // minimum rounds to no more than the minimum's double, and an integer below it is
                // below that double and half a step, so every value beyond a bound is named.
                guard rules.minLength == nil, rules.maxLength == nil, rules.pattern == nil else { return nil }
                form = .decimal
                boundsNamed = true
                for (bound, lower) in [(rules.minValue, true), (rules.maxValue, false)] {
                    guard let bound else { continue }
                    let number: Double? = switch bound {
                    case .decimal(let d): Double(d.description)
                    case .integer(let i): Double(i)
                    case .double(let d): d
                    default: nil
                    }
                    guard let looser = number.map({ lower ? $0.nextUp : $0.nextDown }), looser.isFinite else { return nil }
                    if lower { self.lower = .real(bits: looser.bitPattern) } else { upper = .real(bits: looser.bitPattern) }
                }
                return
            }
            switch form {
            case .text:
                if let pattern = rules.pattern {
                    guard !pattern.contains("\0"), (try? WholeMatch.matcher(for: pattern)) != nil else { return nil }
                }
                guard rules.minValue == nil, rules.maxValue == nil else { return nil }
                (minLength, maxLength, pattern) = (rules.minLength, rules.maxLength, rules.pattern)
            case .integer, .real:
                guard rules.pattern == nil else { return nil }
                for (bound, isLower) in [(rules.minValue, true), (rules.maxValue, false)] {
                    guard let bound else { continue }
                    let exact: Bound? = switch bound {
                    case .integer(let v): .integer(v)
                    case .double(let v) where v.isFinite: .real(bits: v.bitPattern)
                    case .date(let d) where d.timeIntervalSinceReferenceDate.isFinite: .real(bits: d.timeIntervalSinceReferenceDate.bitPattern)
                    default: nil
                    }
                    guard let exact else { return nil }
                    if isLower { lower = exact } else { upper = exact }
                }
            case .blob:
                guard rules.minValue == nil, rules.maxValue == nil, rules.pattern == nil else { return nil }
                (minLength, maxLength) = (rules.minLength, rules.maxLength)
            case .uuid, .any, .decimal:
                guard rules == ValidationRules() else { return nil }
            }
        }

        /// Whether the check asks anything of a value.
        var asksAnything: Bool { form != .any || required }
    }

    /// The most values of one call: SQLite takes at most 127 arguments to a function.
    static let valuesPerCall = 100

    /// The SQL condition that one of `columns` (each with its check) holds a value its check
    /// refuses, or nil when no check asks anything.
    static func refused(_ columns: [(check: Check, column: String)]) -> String? {
        let asked = columns.filter(\.check.asksAnything)
        guard !asked.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return stride(from: 0, to: asked.count, by: valuesPerCall).map { start in
            let part = asked[start..<min(start + valuesPerCall, asked.count)]
            let plan = String(decoding: try! encoder.encode(part.map(\.check)), as: UTF8.self)
            return "\(SQLiteFunctions.values)('\(plan.replacingOccurrences(of: "'", with: "''"))', \(part.map(\.column).joined(separator: ", "))) = 0"
        }.joined(separator: " OR ")
    }

    /// A check read from a plan, its pattern compiled and its bounds decoded: every field a plain
    /// value (the matcher is held by the plan), so that judging a row copies and counts nothing.
    struct Compiled {
        private let form: Check.Form
        private let required: Bool, boundsNamed: Bool
        private let range: ClosedRange<Int64>?
        private let lower: Number?, upper: Number?
        private let minLength: Int?, maxLength: Int?
        private let matcher: Unmanaged<WholeMatch.Matcher>?

        /// A number as SQLite holds it.
        private enum Number {
            case integer(Int64)
            case real(Double)

            init(_ bound: Check.Bound) {
                switch bound {
                case .integer(let v): self = .integer(v)
                case .real(let bits): self = .real(Double(bitPattern: bits))
                }
            }

            /// How `self` orders against `other` as SQLite orders numbers: exactly, an integer
            /// against a double too (< 0, 0, > 0). Neither is NaN (SQLite holds none).
            func order(_ other: Number) -> Int {
                switch (self, other) {
                case let (.integer(a), .integer(b)): a < b ? -1 : a == b ? 0 : 1
                case let (.real(a), .real(b)): a < b ? -1 : a == b ? 0 : 1
                case let (.integer(a), .real(b)): Self.order(a, b)
                case let (.real(a), .integer(b)): -Self.order(b, a)
                }
            }

            private static func order(_ i: Int64, _ d: Double) -> Int {
                if d >= 0x1p63 { return -1 }
                if d < -0x1p63 { return 1 }
                let floor = d.rounded(.down), whole = Int64(floor)
                if i != whole { return i < whole ? -1 : 1 }
                return floor == d ? 0 : -1
            }
        }

        /// `matcher`: the check's pattern compiled, kept alive by the caller as long as this is used.
        init(_ check: Check, matcher: WholeMatch.Matcher?) {
            (form, required, boundsNamed, range) = (check.form, check.required, check.boundsNamed, check.range)
            lower = check.lower.map(Number.init)
            upper = check.upper.map(Number.init)
            (minLength, maxLength) = (check.minLength, check.maxLength)
            self.matcher = matcher.map(Unmanaged.passUnretained)
        }

        /// Whether `value` (an argument of the call) passes the check.
        func admits(_ value: OpaquePointer?) -> Bool {
            let type = sqlite3_value_type(value)
            if type == SQLITE_NULL { return !required }
            switch form {
            case .any:
                return true
            case .integer:
                guard type == SQLITE_INTEGER else { return false }
                let v = sqlite3_value_int64(value)
                if let range, !range.contains(v) { return false }
                return within(.integer(v))
            case .real, .decimal:
                switch type {
                case SQLITE_INTEGER: return within(.integer(sqlite3_value_int64(value)))
                case SQLITE_FLOAT:
                    let v = sqlite3_value_double(value)
                    return (form == .real || v.isFinite) && within(.real(v))
                default: return false
                }
            case .text:
                guard type == SQLITE_TEXT else { return false }
                // `sqlite3_value_text` first, then the byte count of that text (SQLite's documented order).
                let bytes = sqlite3_value_text(value)
                let utf8 = UnsafeBufferPointer(start: bytes, count: bytes == nil ? 0 : Int(sqlite3_value_bytes(value)))
                return ObjectValidator.isText(utf8, lengthFrom: minLength, to: maxLength) && matcher?._withUnsafeGuaranteedRef { $0.matches(utf8: utf8) } != false
            case .blob:
                guard type == SQLITE_BLOB else { return false }
                let count = Int(sqlite3_value_bytes(value))
                return count >= (minLength ?? 0) && count <= (maxLength ?? .max)
            case .uuid:
                return type == SQLITE_BLOB && sqlite3_value_bytes(value) == 16
            }
        }

        private func within(_ v: Number) -> Bool {
            if let lower {
                let order = v.order(lower)
                if order < 0 || (order == 0 && boundsNamed) { return false }
            }
            if let upper {
                let order = v.order(upper)
                if order > 0 || (order == 0 && boundsNamed) { return false }
            }
            return true
        }
    }

    /// The checks of a plan's text, compiled, with the patterns they use (which must outlive
    /// them); nil when it is not a plan.
    static func compiled(_ plan: String) -> (checks: [Compiled], matchers: [WholeMatch.Matcher])? {
        guard let checks = try? JSONDecoder().decode([Check].self, from: Data(plan.utf8)) else { return nil }
        var compiled: [Compiled] = [], matchers: [WholeMatch.Matcher] = []
        for check in checks {
            let matcher = try? check.pattern.map { try WholeMatch.matcher(for: $0) }
            guard check.pattern == nil || matcher != nil else { return nil }
            if let matcher = matcher ?? nil { matchers.append(matcher) }
            compiled.append(Compiled(check, matcher: matcher ?? nil))
        }
        return (compiled, matchers)
    }
}
