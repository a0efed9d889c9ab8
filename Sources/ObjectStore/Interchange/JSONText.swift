import Foundation
import ObjectModel

/// A JSON value as the interchange format writes it: deterministic text, keys sorted.
indirect enum JSONText {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONText])
    case object([(String, JSONText)])

    /// Writes the value; objects one member per line at `indent`, or all on one line when `indent` is negative.
    func write(to out: inout String, indent: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .integer(let i): out += String(i)
        case .double(let d): out += String(d)
        case .string(let s): JSONText.quote(s, into: &out)
        case .array(let items):
            if items.isEmpty { out += "[]"; return }
            out += "["
            for (i, item) in items.enumerated() {
                out += i == 0 ? "" : ", "
                item.write(to: &out, indent: indent)
            }
            out += "]"
        case .object(let entries):
            if entries.isEmpty { out += "{}"; return }
            if indent < 0 {
                // On one line (a negative indent).
                out += "{"
                for (i, (key, value)) in entries.sorted(by: { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }).enumerated() {
                    if i > 0 { out += ", " }
                    JSONText.quote(key, into: &out)
                    out += ": "
                    value.write(to: &out, indent: indent)
                }
                out += "}"
                return
            }
            let pad = String(repeating: "  ", count: indent + 1)
            out += "{\n"
            for (i, (key, value)) in entries.sorted(by: { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }).enumerated() {
                out += pad
                JSONText.quote(key, into: &out)
                out += ": "
                value.write(to: &out, indent: indent + 1)
                out += i == entries.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: "  ", count: indent) + "}"
        }
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// The interchange form of an attribute value.
    static func value(_ value: Value?) -> JSONText {
        guard let value else { return .null }
        switch value {
        case .integer(let v): return .integer(v)
        case .double(let v): return v.isFinite ? .double(v) : .string(ValueText.double(v))
        case .boolean(let v): return .bool(v)
        case .date(let v): return .string(ValueText.iso8601(v))
        case .decimal, .string, .data, .uuid, .uri: return .string(value.textForm)
        }
    }
}
