import Foundation
import ObjectModel

/// Reads an `NSKeyedArchiver` archive (a binary property list: `$archiver`, `$objects`,
/// `$top`, `CF$UID` references, `$class` names) into JSON, for looking at the transformable
/// values Core Data stores (`docs/coredata-formats.md`, "Transformable values").
///
/// Classes are mapped by name and never instantiated: strings, numbers, arrays, sets,
/// dictionaries, dates (ISO 8601 text), data (base64 text), UUIDs and URLs (text) become their
/// JSON counterparts; an object of any other class becomes `{"$class": name, key: value…}` with
/// its archived keys. An object met again inside itself (a cycle) is an error, and so is an
/// archive nested deeper than `maximumDepth` or expanding (shared objects written out at each
/// reference) beyond `maximumValues` values or 16 times its size in text.
///
/// ```swift
/// let json = try KeyedArchive.json(payload)   // "\"The Trial.file\""
/// ```
public enum KeyedArchive {
    /// The archive as JSON text (keys sorted, two-space indentation).
    /// - Throws: ``StoreError`` with ``StoreError/Code/corrupt`` saying what is wrong with it.
    public static func json(_ data: Data) throws -> String {
        var out = ""
        try decode(data).write(to: &out, indent: 0)
        return out
    }

    /// Whether `data` is a binary property list (what an archive is).
    public static func isArchive(_ data: Data) -> Bool { data.starts(with: Array("bplist00".utf8)) }

    /// The deepest nesting decoded, references and containers together (deeper would exhaust the stack).
    static let maximumDepth = 256
    /// The most values one archive may expand to: shared objects are written out at every
    /// reference, so a small archive of objects that each refer twice to the next would otherwise
    /// expand without end.
    static let maximumValues = 1_000_000

    static func decode(_ data: Data) throws -> JSONText {
        // The project's own strict reader: Foundation's crashes on some damaged property lists.
        let archive: KeyedArchiveObjects
        do {
            archive = try KeyedArchiveObjects(data)
        } catch let error as ModelError {
            throw StoreError(.corrupt, error.problems.joined(separator: "; "))
        }
        // Text out at most 16 times the archive's size (and 1 MiB): what sharing can legitimately repeat.
        var reader = Reader(archive: archive, textBudget: 16 * data.count + (1 << 20))
        return try reader.object(archive.root)
    }

    private struct Reader {
        let archive: KeyedArchiveObjects
        /// The references being expanded, outermost first: one met again is a cycle.
        var visiting: [Int] = []
        var depth = 0
        var values = 0
        var textBudget: Int

        /// Counts one value of `text` bytes against the bounds.
        mutating func count(_ text: Int = 0) throws {
            values += 1
            textBudget -= text
            guard values <= KeyedArchive.maximumValues else {
                throw StoreError(.corrupt, "the archive expands to more than \(KeyedArchive.maximumValues) values (objects shared many times over)")
            }
            guard textBudget >= 0 else {
                throw StoreError(.corrupt, "the archive expands to more than 16 times its size in text (objects shared many times over)")
            }
        }

        mutating func value(_ node: PropertyListNode) throws -> JSONText {
            depth += 1
            defer { depth -= 1 }
            guard depth <= KeyedArchive.maximumDepth else { throw StoreError(.corrupt, "the archive nests deeper than \(KeyedArchive.maximumDepth) levels") }
            switch node {
            case .uid(let index): return try object(index)
            case .string(let text): try count(text.utf8.count); return .string(text)
            case .integer(let n): try count(8); return .integer(n)
            case .real(let d): try count(8); return JSONText.value(.double(d))
            case .boolean(let b): try count(5); return .bool(b)
            case .date(let date): try count(24); return .string(ValueText.iso8601(date))
            case .data(let data): try count(data.count * 4 / 3); return .string(data.base64EncodedString())
            case .array(let items), .set(let items): try count(); return .array(try items.map { try value($0) })
            case .dictionary(let fields): try count(); return .object(try fields.keys.sorted().map { ($0, try value(fields[$0]!)) })
            }
        }

        mutating func object(_ index: Int) throws -> JSONText {
            let node: PropertyListNode?
            do { node = try archive.node(index, from: "a reference") } catch let error as ModelError {
                throw StoreError(.corrupt, error.problems.joined(separator: "; "))
            }
            guard let node else { return .null }
            if let at = visiting.firstIndex(of: index) {
                let path = (visiting[at...] + [index]).map { "#\($0)" }.joined(separator: " -> ")
                throw StoreError(.corrupt, "object #\(index) contains itself (\(path)): a cycle")
            }
            visiting.append(index)
            defer { visiting.removeLast() }
            guard case .dictionary(let fields) = node, fields["$class"] != nil else { return try value(node) }
            depth += 1
            defer { depth -= 1 }
            guard depth <= KeyedArchive.maximumDepth else { throw StoreError(.corrupt, "the archive nests deeper than \(KeyedArchive.maximumDepth) levels") }
            let result = try classObject(index, fields)
            // The text a class maps to (a string, a date, data as base64) counts like a plain one.
            if case .string(let text) = result { try count(text.utf8.count) } else { try count() }
            return result
        }

        /// An object of a class, mapped by the class's name.
        mutating func classObject(_ index: Int, _ fields: [String: PropertyListNode]) throws -> JSONText {
            let name: String
            do { name = try archive.object(index, from: "object \(index)")!.className } catch let error as ModelError {
                throw StoreError(.corrupt, error.problems.joined(separator: "; "))
            }
            func field(_ key: String) throws -> JSONText? { try fields[key].map { try value($0) } }
            func list(_ key: String) throws -> [JSONText] {
                guard let items = fields[key] else { return [] }
                guard case .array(let array) = items else { throw StoreError(.corrupt, "object \(index) (\(name)): \(key) is not an array") }
                return try array.map { try value($0) }
            }
            func number(_ key: String) -> Double? {
                switch fields[key] {
                case .real(let d)?: d
                case .integer(let n)?: Double(n)
                default: nil
                }
            }
            switch name {
            case "NSString", "NSMutableString":
                if case .string(let text)? = fields["NS.string"] { return .string(text) }
                if case .data(let bytes)? = fields["NS.bytes"] { return .string(String(decoding: bytes, as: UTF8.self)) }
                throw StoreError(.corrupt, "object \(index) (\(name)) has no NS.string")
            case "NSArray", "NSMutableArray", "NSSet", "NSMutableSet", "NSOrderedSet", "NSMutableOrderedSet":
                return .array(try list("NS.objects"))
            case "NSDictionary", "NSMutableDictionary":
                let keys = try list("NS.keys"), values = try list("NS.objects")
                guard keys.count == values.count else {
                    throw StoreError(.corrupt, "object \(index) (\(name)) has \(keys.count) keys and \(values.count) values")
                }
                return .object(zip(keys, values).map { key, value in
                    if case .string(let text) = key { return (text, value) }
                    var shown = ""
                    key.write(to: &shown, indent: 0)
                    return (shown, value)
                })
            case "NSDate":
                guard let time = number("NS.time") else { throw StoreError(.corrupt, "object \(index) (NSDate) has no NS.time") }
                return .string(ValueText.iso8601(Date(timeIntervalSinceReferenceDate: time)))
            case "NSData", "NSMutableData":
                guard case .data(let data)? = fields["NS.data"] else { throw StoreError(.corrupt, "object \(index) (\(name)) has no NS.data") }
                return .string(data.base64EncodedString())
            case "NSUUID":
                guard case .data(let bytes)? = fields["NS.uuidbytes"], bytes.count == 16 else {
                    throw StoreError(.corrupt, "object \(index) (NSUUID) has no 16-byte NS.uuidbytes")
                }
                return .string(bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }.uuidString)
            case "NSURL":
                guard case .string(let relative)? = try field("NS.relative") else { throw StoreError(.corrupt, "object \(index) (NSURL) has no NS.relative") }
                if case .string(let base)? = try field("NS.base"), let url = URL(string: relative, relativeTo: URL(string: base)) {
                    return .string(url.absoluteString)
                }
                return .string(relative)
            default:
                var entries: [(String, JSONText)] = [("$class", .string(name))]
                for key in fields.keys.sorted() where key != "$class" { entries.append((key, try value(fields[key]!))) }
                return .object(entries)
            }
        }
    }
}
