import Foundation
import ObjectModel

/// A predicate format string that does not parse, and where.
public struct PredicateSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    /// The 1-based column (in characters) of the problem.
    public var column: Int

    /// Creates an error.
    public init(_ message: String, column: Int) {
        self.message = message
        self.column = column
    }

    public var description: String { "column \(column): \(message)" }
}

/// Parses the NSPredicate format syntax into a ``ObjectPredicate``.
///
/// Supported: `AND`/`&&`, `OR`/`||`, `NOT`/`!`, parentheses, `TRUEPREDICATE`,
/// `FALSEPREDICATE`; `=`, `==`, `!=`, `<>`, `<`, `<=`, `=<`, `>`, `>=`, `=>`,
/// `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`, `MATCHES`, `IN`, `BETWEEN` with
/// `[c]`, `[d]`, `[cd]`; `ANY`/`SOME`, `ALL`, `NONE`; key paths with `@count`;
/// strings in single or double quotes, numbers, `TRUE`/`YES`, `FALSE`/`NO`,
/// `NIL`/`NULL`, and lists `{a, b}`. A key path that is a keyword is written with `#`.
struct PredicateParser {
    private enum Token: Equatable {
        case word(String)        // identifiers and keywords
        case string(String)
        case number(Value)
        case symbol(String)      // punctuation and symbolic operators
        case end
    }

    private var tokens: [(Token, Int)] = []
    private var position = 0
    /// How deep the parentheses, NOTs and lists are nested here.
    private var depth = 0
    /// The deepest nesting a predicate may have (deeper would exhaust the stack).
    static let maximumDepth = 500
    private let source: String
    private var lexError: PredicateSyntaxError?

    init(_ source: String) {
        self.source = source
        do { tokens = try Self.tokenize(source) } catch let error as PredicateSyntaxError { lexError = error } catch {}
    }

    mutating func parse() throws -> ObjectPredicate {
        if let lexError { throw lexError }
        let predicate = try parseOr()
        guard case .end = current else { throw error("unexpected \(describe(current)) after a complete predicate") }
        return predicate
    }

    // MARK: Grammar

    private mutating func parseOr() throws -> ObjectPredicate {
        var operands = [try parseAnd()]
        while isKeyword("OR") || current == .symbol("||") {
            advance()
            operands.append(try parseAnd())
        }
        return operands.count == 1 ? operands[0] : .or(operands)
    }

    private mutating func parseAnd() throws -> ObjectPredicate {
        var operands = [try parseUnary()]
        while isKeyword("AND") || current == .symbol("&&") {
            advance()
            operands.append(try parseUnary())
        }
        return operands.count == 1 ? operands[0] : .and(operands)
    }

    private mutating func enter() throws {
        depth += 1
        guard depth <= Self.maximumDepth else { throw error("the predicate nests deeper than \(Self.maximumDepth) levels") }
    }

    private mutating func parseUnary() throws -> ObjectPredicate {
        try enter()
        defer { depth -= 1 }
        if isKeyword("NOT") || current == .symbol("!") {
            advance()
            return .not(try parseUnary())
        }
        if current == .symbol("(") {
            advance()
            let inner = try parseOr()
            try expect(")")
            return inner
        }
        if isKeyword("TRUEPREDICATE") { advance(); return .constant(true) }
        if isKeyword("FALSEPREDICATE") { advance(); return .constant(false) }
        return try parseComparison()
    }

    private mutating func parseComparison() throws -> ObjectPredicate {
        var quantifier = Comparison.Quantifier.direct
        if isKeyword("ANY") || isKeyword("SOME") { quantifier = .any; advance() }
        else if isKeyword("ALL") { quantifier = .all; advance() }
        else if isKeyword("NONE") { quantifier = .none; advance() }
        let lhs = try parseExpression()
        var negated = false
        if isKeyword("NOT") { negated = true; advance() }
        let opColumn = column
        guard let op = comparisonOperator() else {
            throw error("expected a comparison operator, found \(describe(current))")
        }
        advance()
        if negated && op != .in && op != .contains && op != .like && op != .matches && op != .beginsWith && op != .endsWith && op != .between {
            throw PredicateSyntaxError("NOT cannot precede \(op.rawValue)", column: opColumn)
        }
        let options = try parseOptions()
        let rhs = try parseExpression()
        if op == .between {
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                throw PredicateSyntaxError("BETWEEN needs a list of two values, like {1, 5}", column: opColumn)
            }
        }
        let comparison = ObjectPredicate.comparison(Comparison(lhs, op, rhs, quantifier: quantifier, options: options))
        return negated ? .not(comparison) : comparison
    }

    private func comparisonOperator() -> Comparison.Operator? {
        switch current {
        case .symbol("="), .symbol("=="): return .equal
        case .symbol("!="), .symbol("<>"): return .notEqual
        case .symbol("<"): return .lessThan
        case .symbol("<="), .symbol("=<"): return .lessThanOrEqual
        case .symbol(">"): return .greaterThan
        case .symbol(">="), .symbol("=>"): return .greaterThanOrEqual
        case .word(let w):
            switch w.uppercased() {
            case "BEGINSWITH": return .beginsWith
            case "ENDSWITH": return .endsWith
            case "CONTAINS": return .contains
            case "LIKE": return .like
            case "MATCHES": return .matches
            case "IN": return .in
            case "BETWEEN": return .between
            default: return nil
            }
        default: return nil
        }
    }

    private mutating func parseOptions() throws -> Comparison.Options {
        guard current == .symbol("[") else { return [] }
        advance()
        guard case .word(let letters) = current else { throw error("expected c, d or cd inside [ ]") }
        var options: Comparison.Options = []
        for letter in letters.lowercased() {
            switch letter {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            case "n": break  // normalized: a hint with no effect on results
            default: throw error("unknown comparison option \(letter) (use c, d or cd)")
            }
        }
        advance()
        try expect("]")
        return options
    }

    private mutating func parseExpression() throws -> PredicateExpression {
        try enter()
        defer { depth -= 1 }
        switch current {
        case .string(let s): advance(); return .constant(.string(s))
        case .number(let v): advance(); return .constant(v)
        case .symbol("-"):
            advance()
            guard case .number(let v) = current else { throw error("expected a number after -") }
            advance()
            switch v {
            case .integer(let i): return .constant(.integer(-i))
            case .double(let d): return .constant(.double(-d))
            default: return .constant(v)
            }
        case .symbol("{"):
            advance()
            var items: [PredicateExpression] = []
            if current != .symbol("}") {
                items.append(try parseExpression())
                while current == .symbol(",") {
                    advance()
                    items.append(try parseExpression())
                }
            }
            try expect("}")
            return .list(items)
        case .word(let w):
            switch w.uppercased() {
            case "TRUE", "YES": advance(); return .constant(.boolean(true))
            case "FALSE", "NO": advance(); return .constant(.boolean(false))
            case "NIL", "NULL": advance(); return .constant(nil)
            default:
                if Self.keywords.contains(w.uppercased()) {
                    throw error("expected a key path or a value, found keyword \(w)")
                }
                advance()
                return .keyPath(w.hasPrefix("#") ? String(w.dropFirst()) : w)
            }
        default:
            throw error("expected a key path or a value, found \(describe(current))")
        }
    }

    // MARK: Tokens

    private static let keywords: Set<String> = [
        "AND", "OR", "NOT", "IN", "BETWEEN", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES",
        "ANY", "SOME", "ALL", "NONE", "TRUEPREDICATE", "FALSEPREDICATE",
    ]

    private var current: Token { tokens[position].0 }
    private var column: Int { tokens[position].1 }
    private mutating func advance() { if position < tokens.count - 1 { position += 1 } }
    private func isKeyword(_ k: String) -> Bool { if case .word(let w) = current { w.uppercased() == k } else { false } }
    private func error(_ message: String) -> PredicateSyntaxError { PredicateSyntaxError(message, column: column) }

    private mutating func expect(_ symbol: String) throws {
        guard current == .symbol(symbol) else { throw error("expected \(symbol), found \(describe(current))") }
        advance()
    }

    private func describe(_ token: Token) -> String {
        switch token {
        case .word(let w): w
        case .string(let s): String(reflecting: s)
        case .number(let v): v.description
        case .symbol(let s): s
        case .end: "the end of the predicate"
        }
    }

    private static func tokenize(_ source: String) throws -> [(Token, Int)] {
        let chars = Array(source)
        var tokens: [(Token, Int)] = []
        var i = 0
        func isWordStart(_ c: Character) -> Bool { c.isLetter || c == "_" || c == "@" || c == "#" || c == "$" }
        func isWord(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == "@" || c == "." || c == "#" || c == "$" }
        while i < chars.count {
            let c = chars[i]
            let column = i + 1
            if c.isWhitespace { i += 1; continue }
            if c == "\"" || c == "'" {
                var text = ""
                var j = i + 1
                var closed = false
                while j < chars.count {
                    let d = chars[j]
                    if d == "\\" && j + 1 < chars.count {
                        let e = chars[j + 1]
                        switch e {
                        case "n": text.append("\n")
                        case "t": text.append("\t")
                        case "r": text.append("\r")
                        default: text.append(e)
                        }
                        j += 2
                        continue
                    }
                    if d == c { closed = true; break }
                    text.append(d)
                    j += 1
                }
                guard closed else { throw PredicateSyntaxError("unterminated string", column: column) }
                tokens.append((.string(text), column))
                i = j + 1
                continue
            }
            if c.isNumber {
                var j = i
                while j < chars.count && (chars[j].isNumber || chars[j] == "." || chars[j] == "e" || chars[j] == "E"
                    || ((chars[j] == "-" || chars[j] == "+") && (chars[j - 1] == "e" || chars[j - 1] == "E"))) { j += 1 }
                let text = String(chars[i..<j])
                if let v = Int64(text) { tokens.append((.number(.integer(v)), column)) }
                else if let v = Double(text) { tokens.append((.number(.double(v)), column)) }
                else { throw PredicateSyntaxError("\(text) is not a number", column: column) }
                i = j
                continue
            }
            if isWordStart(c) {
                var j = i
                while j < chars.count && isWord(chars[j]) { j += 1 }
                let word = String(chars[i..<j])
                if word.hasSuffix(".") || word.contains("..") {
                    throw PredicateSyntaxError("\(word) is not a key path", column: column)
                }
                tokens.append((.word(word), column))
                i = j
                continue
            }
            let two = i + 1 < chars.count ? String(chars[i...i + 1]) : ""
            if ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||"].contains(two) {
                tokens.append((.symbol(two), column))
                i += 2
                continue
            }
            if "=<>!(){}[],-".contains(c) {
                tokens.append((.symbol(String(c)), column))
                i += 1
                continue
            }
            throw PredicateSyntaxError("unexpected character \(String(reflecting: String(c)))", column: column)
        }
        tokens.append((.end, chars.count + 1))
        return tokens
    }
}
