import Foundation
import ObjectModel
import ObjectStore

/// How a destination property gets its value: an expression over the source object.
///
/// Written in code or as text (``init(_:)``):
///
/// ```swift
/// try MappingExpression("$source.name")
/// try MappingExpression("before($source.fullName, ' ')")
/// try MappingExpression("toString($source.identifier)")
/// MappingExpression.custom { input in .string("computed") }
/// ```
public indirect enum MappingExpression: Sendable, CustomStringConvertible {
    /// `$source.<keyPath>`: a value (or, across relationships, the objects) of the source object.
    case source(String)
    /// A literal; nil is `nil`.
    case constant(Value?)
    /// A standard-library function (see ``MappingFunctions``).
    case call(String, [MappingExpression])
    /// The destination objects made from the source objects the inner expression yields,
    /// by the entity mapping named (or, with nil, by whichever mapping made them).
    case destinations(mapping: String?, of: MappingExpression)
    /// A Swift closure, for mappings written in code.
    case custom(@Sendable (MappingInput) throws -> Value?)

    /// Parses the text form: `$source.a.b`, `'text'`, `"text"`, numbers, `nil`,
    /// `true`, `false`, and function calls `name(arg, …)`.
    /// - Throws: ``MigrationError`` with ``MigrationError/Code/expression`` naming the column.
    public init(_ text: String) throws {
        var parser = MappingExpressionParser(text)
        self = try parser.parse()
    }

    public var description: String {
        switch self {
        case .source(let path): path.isEmpty ? "$source" : "$source.\(path)"
        case .constant(nil): "nil"
        case .constant(.some(let v)):
            switch v {
            case .integer, .double: v.textForm
            case .boolean(let b): b ? "true" : "false"
            default: "'" + v.textForm.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
            }
        case .call(let name, let args): "\(name)(\(args.map(\.description).joined(separator: ", ")))"
        case .destinations(let mapping, let inner):
            "destinations(\(mapping.map { "'\($0)', " } ?? "")\(inner))"
        case .custom: "<closure>"
        }
    }
}

/// What a ``MappingExpression/custom(_:)`` closure sees.
public struct MappingInput {
    /// The source object.
    public let source: ObjectRecord
    /// Resolves a key path on the source object (attributes only).
    public let value: (String) throws -> Value?
}

/// What an expression evaluates to: a value, or objects (source or destination keys).
enum Evaluated {
    case value(Value?)
    /// Source objects (mapped through the association when they set a relationship).
    case objects([ObjectKey])
    /// Destination objects, already mapped.
    case destinationObjects([ObjectKey])

    var value: Value? {
        if case .value(let v) = self { return v }
        return nil
    }
}

/// The standard library of mapping expressions, usable in mappings written as data.
///
/// Strings: `split(s, sep, index)`, `before(s, sep)`, `after(s, sep)`,
/// `join(sep, a, b, …)`, `trim(s)`, `lowercase(s)`, `uppercase(s)`,
/// `substring(s, start, length)`, `replace(s, target, replacement)`.
/// Numbers: `toString(x)`, `toInteger(x)`, `toDouble(x)` (an error for a value
/// that does not convert). Dates: `now()`, `toISO8601(date)`,
/// `fromISO8601(text)`, `toUnixSeconds(date)`, `fromUnixSeconds(number)`.
/// Nil: `coalesce(a, b, …)`, `ifNil(a, b)`. A nil argument gives nil, except
/// in `coalesce`, `ifNil` and `join`.
public enum MappingFunctions {
    /// The function names, for documentation and checks.
    public static let names: Set<String> = [
        "split", "before", "after", "join", "trim", "lowercase", "uppercase", "substring", "replace",
        "toString", "toInteger", "toDouble", "now", "toISO8601", "fromISO8601", "toUnixSeconds", "fromUnixSeconds",
        "coalesce", "ifNil",
    ]

    /// Calls the function `name` with `args`.
    /// - Throws: ``MigrationError`` with ``MigrationError/Code/expression`` for an unknown function, a wrong argument or a value that does not convert.
    public static func call(_ name: String, _ args: [Value?]) throws -> Value? {
        func fail(_ message: String) -> MigrationError { MigrationError(.expression, "\(name): \(message)") }
        func arity(_ n: Int) throws { guard args.count == n else { throw fail("takes \(n) argument\(n == 1 ? "" : "s"), got \(args.count)") } }
        func string(_ i: Int) throws -> String? {
            guard let v = args[i] else { return nil }
            guard case .string(let s) = v else { throw fail("argument \(i + 1) must be a string, got \(v.kindName) \(v)") }
            return s
        }
        func integer(_ i: Int) throws -> Int? {
            guard let v = args[i] else { return nil }
            guard case .integer(let n) = v, let n = Int(exactly: n) else { throw fail("argument \(i + 1) must be an integer, got \(v)") }
            return n
        }
        switch name {
        case "coalesce": return args.first { $0 != nil } ?? nil
        case "ifNil": try arity(2); return args[0] ?? args[1]
        case "now": try arity(0); return .date(Date())
        case "join":
            guard let separator = try args.isEmpty ? nil : string(0) else { throw fail("needs a separator") }
            return .string(try (1..<args.count).compactMap { try string($0) }.joined(separator: separator))
        default: break
        }
        guard args.allSatisfy({ $0 != nil }) else {
            // Nil in, nil out: a missing source value stays missing.
            guard names.contains(name) else { throw fail("unknown function (known: \(names.sorted().joined(separator: ", ")))") }
            return nil
        }
        switch name {
        case "split":
            try arity(3)
            let parts = try string(0)!.components(separatedBy: try string(1)!)
            let index = try integer(2)!
            return parts.indices.contains(index) ? .string(parts[index]) : nil
        case "before":
            try arity(2)
            let s = try string(0)!
            guard let range = s.range(of: try string(1)!) else { return .string(s) }
            return .string(String(s[..<range.lowerBound]))
        case "after":
            try arity(2)
            let s = try string(0)!
            guard let range = s.range(of: try string(1)!) else { return nil }
            return .string(String(s[range.upperBound...]))
        case "trim": try arity(1); return .string(try string(0)!.trimmingCharacters(in: .whitespacesAndNewlines))
        case "lowercase": try arity(1); return .string(try string(0)!.lowercased())
        case "uppercase": try arity(1); return .string(try string(0)!.uppercased())
        case "substring":
            try arity(3)
            let chars = Array(try string(0)!)
            let start = max(0, try integer(1)!), length = max(0, try integer(2)!)
            guard start < chars.count else { return .string("") }
            // No start + length: a length up to Int.max must not overflow.
            return .string(String(chars[start..<(start + min(length, chars.count - start))]))
        case "replace":
            try arity(3)
            return .string(try string(0)!.replacingOccurrences(of: try string(1)!, with: try string(2)!))
        case "toString":
            try arity(1)
            switch args[0]! {
            case .string(let s): return .string(s)
            case .double(let d): return .string(ValueText.double(d))
            case let v: return .string(v.textForm)
            }
        case "toInteger":
            try arity(1)
            switch args[0]! {
            case .integer(let n): return .integer(n)
            case .boolean(let b): return .integer(b ? 1 : 0)
            case .string(let s):
                guard let n = Int64(s.trimmingCharacters(in: .whitespaces)) else { throw fail("\(String(reflecting: s)) is not an integer") }
                return .integer(n)
            case .double(let d):
                guard let n = Int64(exactly: d) else { throw fail("\(d) is not a whole number in range") }
                return .integer(n)
            case .decimal(let d):
                guard let n = Int64(exactly: NSDecimalNumber(decimal: d).doubleValue), Decimal(n) == d else { throw fail("\(d) is not a whole number in range") }
                return .integer(n)
            case let v: throw fail("a \(v.kindName) does not convert to an integer")
            }
        case "toDouble":
            try arity(1)
            switch args[0]! {
            case .string(let s):
                guard let d = ValueText.double(s.trimmingCharacters(in: .whitespaces)) else { throw fail("\(String(reflecting: s)) is not a number") }
                return .double(d)
            case let v:
                guard let d = v.numericValue else { throw fail("a \(v.kindName) does not convert to a number") }
                return .double(d)
            }
        case "toISO8601":
            try arity(1)
            guard case .date(let d) = args[0]! else { throw fail("argument 1 must be a date") }
            let text = ValueText.iso8601(d)
            guard text.contains("T") else { throw fail("\(text) seconds since 2001 has no ISO 8601 form (years 0000–9999)") }
            return .string(text)
        case "fromISO8601":
            try arity(1)
            guard let d = ValueText.parseISO8601(try string(0)!) else { throw fail("\(String(reflecting: try string(0)!)) is not an ISO 8601 date") }
            return .date(d)
        case "toUnixSeconds":
            try arity(1)
            guard case .date(let d) = args[0]! else { throw fail("argument 1 must be a date") }
            return .double(d.timeIntervalSince1970)
        case "fromUnixSeconds":
            try arity(1)
            guard let seconds = args[0]!.numericValue else { throw fail("argument 1 must be a number") }
            return .date(Date(timeIntervalSince1970: seconds))
        default:
            throw fail("unknown function (known: \(names.sorted().joined(separator: ", ")))")
        }
    }
}

/// Parses the text form of mapping expressions.
struct MappingExpressionParser {
    private let chars: [Character]
    private var i = 0
    private var depth = 0
    /// The deepest nesting of calls an expression may have (deeper would exhaust the stack).
    static let maximumDepth = 500

    init(_ text: String) { chars = Array(text) }

    private func fail(_ message: String) -> MigrationError {
        MigrationError(.expression, "\(message) at column \(i + 1) of \(String(reflecting: String(chars)))")
    }

    private mutating func skipSpace() { while i < chars.count && chars[i].isWhitespace { i += 1 } }

    mutating func parse() throws -> MappingExpression {
        let expression = try parseExpression()
        skipSpace()
        guard i == chars.count else { throw fail("unexpected \(String(chars[i]))") }
        return expression
    }

    private mutating func parseExpression() throws -> MappingExpression {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw fail("the expression nests deeper than \(Self.maximumDepth) levels") }
        skipSpace()
        guard i < chars.count else { throw fail("expected an expression") }
        let c = chars[i]
        if c == "'" || c == "\"" {
            i += 1
            var text = ""
            while i < chars.count && chars[i] != c {
                if chars[i] == "\\" && i + 1 < chars.count { i += 1 }
                text.append(chars[i])
                i += 1
            }
            guard i < chars.count else { throw fail("unterminated string") }
            i += 1
            return .constant(.string(text))
        }
        if c.isNumber || (c == "-" && i + 1 < chars.count && chars[i + 1].isNumber) {
            let start = i
            i += 1
            while i < chars.count && (chars[i].isNumber || chars[i] == "." || chars[i] == "e" || chars[i] == "E") { i += 1 }
            let text = String(chars[start..<i])
            if let n = Int64(text) { return .constant(.integer(n)) }
            if let d = Double(text) { return .constant(.double(d)) }
            i = start
            throw fail("\(text) is not a number")
        }
        guard c.isLetter || c == "$" || c == "_" else { throw fail("unexpected \(String(c))") }
        let start = i
        while i < chars.count && (chars[i].isLetter || chars[i].isNumber || chars[i] == "_" || chars[i] == "$" || chars[i] == "." || chars[i] == "@") { i += 1 }
        let word = String(chars[start..<i])
        if word == "$source" { return .source("") }
        if word.hasPrefix("$source.") { return .source(String(word.dropFirst("$source.".count))) }
        if word.hasPrefix("$") { i = start; throw fail("unknown variable \(word) (use $source)") }
        switch word {
        case "nil", "null": return .constant(nil)
        case "true": return .constant(.boolean(true))
        case "false": return .constant(.boolean(false))
        default: break
        }
        skipSpace()
        guard i < chars.count, chars[i] == "(" else { i = start; throw fail("\(word) is not a function call, a literal or $source") }
        i += 1
        var args: [MappingExpression] = []
        skipSpace()
        if i < chars.count, chars[i] == ")" { i += 1 } else {
            while true {
                args.append(try parseExpression())
                skipSpace()
                guard i < chars.count else { throw fail("expected ) after the arguments of \(word)") }
                if chars[i] == "," { i += 1; continue }
                if chars[i] == ")" { i += 1; break }
                throw fail("expected , or )")
            }
        }
        if word == "destinations" {
            switch args.count {
            case 1: return .destinations(mapping: nil, of: args[0])
            case 2:
                guard case .constant(.string(let name)?) = args[0] else { throw fail("destinations: the first argument names an entity mapping") }
                return .destinations(mapping: name, of: args[1])
            default: throw fail("destinations takes (mapping name, objects) or (objects)")
            }
        }
        guard MappingFunctions.names.contains(word) else {
            i = start
            throw fail("unknown function \(word) (known: \(MappingFunctions.names.sorted().joined(separator: ", ")))")
        }
        return .call(word, args)
    }
}
