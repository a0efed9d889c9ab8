import Foundation

/// A JSON value exactly as a document spells it: numbers keep their text (so a
/// double is rounded once, by whoever knows the attribute's type), objects keep
/// their members in order.
///
/// ``JSONValue/parse(_:)`` reads RFC 8259 strictly: UTF-8 (a leading byte-order mark
/// is skipped), no trailing commas, no comments, no duplicate keys in an object (a
/// document that names a key twice means two things), at most 512 levels of nesting.
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number's text, as written (`-12.50e3`).
    case number(String)
    case string(String)
    case array([JSONValue])
    /// An object's members, in document order, keys unique.
    case object([Member])

    /// One member of an object.
    public struct Member: Sendable, Equatable {
        public var key: String
        public var value: JSONValue
    }

    /// A syntax error, with the 1-based line and column it was found at.
    public struct SyntaxError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var line: Int
        public var column: Int
        public var description: String { "\(message) (line \(line), column \(column))" }
    }

    /// The deepest nesting a document may have.
    public static let maximumDepth = 512

    /// Parses a whole document.
    /// - Throws: ``SyntaxError``.
    public static func parse(_ data: Data) throws -> JSONValue {
        var scanner = JSONScanner(bytes: Array(data))
        return try scanner.document()
    }

    /// The members of an object as a dictionary, or nil for another kind of value.
    public var members: [String: JSONValue]? {
        guard case .object(let members) = self else { return nil }
        return Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// A short name of the value's kind, for errors.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a Boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// The reader of ``JSONValue/parse(_:)``, byte by byte: the whole grammar as a tree
/// (``document()``), or its pieces for a reader that walks a document of a known shape without
/// building the tree (a JSON import reading objects straight into rows), with the same rules
/// and errors.
package struct JSONScanner: Sendable {
    package let bytes: [UInt8]
    package var index = 0
    var depth = 0

    package init(bytes: [UInt8]) {
        self.bytes = bytes
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
    }

    package func error(_ message: String, at position: Int? = nil) -> JSONValue.SyntaxError {
        let offset = min(position ?? index, bytes.count)
        var line = 1, column = 1
        var i = 0
        while i < offset {
            if bytes[i] == 0x0A { line += 1; column = 1 } else if bytes[i] & 0xC0 != 0x80 { column += 1 }
            i += 1
        }
        return JSONValue.SyntaxError(message: message, line: line, column: column)
    }

    package mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    package mutating func document() throws -> JSONValue {
        skipSpace()
        guard index < bytes.count else { throw error("the document is empty") }
        let value = try self.value()
        skipSpace()
        guard index == bytes.count else { throw error("unexpected text after the document") }
        return value
    }

    package mutating func value() throws -> JSONValue {
        guard index < bytes.count else { throw error("the document ends where a value was expected") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character \(describe(bytes[index])) where a value was expected")
        }
    }

    func describe(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : String(format: "0x%02X", byte)
    }

    package mutating func literal(_ word: String) throws {
        let expected = word.utf8
        guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
            throw error("unexpected text where a value was expected")
        }
        index += expected.count
    }

    mutating func enter() throws {
        depth += 1
        guard depth <= JSONValue.maximumDepth else { throw error("the document nests deeper than \(JSONValue.maximumDepth) levels") }
    }

    mutating func object() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        var members: [JSONValue.Member] = []
        var seen: Set<String> = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object([]) }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key (a string)") }
            let keyStart = index
            let key = try string()
            guard seen.insert(key).inserted else { throw error("the key \(String(reflecting: key)) appears twice in one object", at: keyStart) }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':' after a key") }
            index += 1
            skipSpace()
            members.append(JSONValue.Member(key: key, value: try value()))
            skipSpace()
            guard index < bytes.count else { throw error("the document ends inside an object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
            throw error("expected ',' or '}' in an object")
        }
    }

    mutating func array() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        var items: [JSONValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array([]) }
        while true {
            skipSpace()
            items.append(try value())
            skipSpace()
            guard index < bytes.count else { throw error("the document ends inside an array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            throw error("expected ',' or ']' in an array")
        }
    }

    package mutating func number() throws -> String {
        let start = index
        func digits() -> Int {
            let from = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - from
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        let integerDigits = digits()
        guard integerDigits > 0 else { throw error("a number needs digits") }
        guard integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { throw error("a number may not start with 0", at: integerStart) }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw error("a number needs digits after its decimal point") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw error("a number needs digits in its exponent") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    mutating func hex4() throws -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("a \\u escape needs four hex digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("a \\u escape needs four hex digits")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    package mutating func string() throws -> String {
        index += 1
        // Most strings hold no escape: their bytes are the text.
        var end = index, high: UInt8 = 0
        while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20 {
            high |= bytes[end]
            end += 1
        }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\""), let text = bytes.withUnsafeBufferPointer({ buffer -> String? in
            let run = UnsafeBufferPointer(rebasing: buffer[index..<end])
            // ASCII needs no validating.
            return high < 0x80 ? String(decoding: run, as: UTF8.self) : String(validating: run, as: UTF8.self)
        }) {
            index = end + 1
            return text
        }
        var scalars = String.UnicodeScalarView()
        var runStart = index
        func flushRun(_ end: Int) throws {
            guard runStart < end else { return }
            guard let text = String(validating: bytes[runStart..<end], as: UTF8.self) else {
                throw error("a string holds bytes that are not UTF-8", at: runStart)
            }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while true {
            guard index < bytes.count else { throw error("the document ends inside a string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                try flushRun(index)
                index += 1
                return String(scalars)
            }
            if byte < 0x20 { throw error("a control character inside a string must be escaped") }
            if byte != UInt8(ascii: "\\") { index += 1; continue }
            try flushRun(index)
            index += 1
            guard index < bytes.count else { throw error("the document ends inside a string") }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var value = try hex4()
                if (0xD800...0xDBFF).contains(value) {
                    guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw error("a \\u escape of a high surrogate must be followed by its low surrogate")
                    }
                    index += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("a high surrogate is followed by no low surrogate") }
                    value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(value) {
                    throw error("a lone low surrogate in a \\u escape")
                }
                scalars.append(Unicode.Scalar(value)!)
            default:
                throw error("unknown escape \\\(Character(Unicode.Scalar(escape)))")
            }
            runStart = index
        }
    }
}
