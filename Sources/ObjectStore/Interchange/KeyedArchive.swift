import Foundation
import ObjectModel

/// Reads an `NSKeyedArchiver` archive (a binary property list: `$archiver`, `$objects`,
/// `$top`, `CF$UID` references, `$class` names) into JSON, for looking at the transformable
/// values Core Data stores (`docs/coredata-formats.md`, "Transformable values").
///
/// Classes are mapped by name and never instantiated: strings, numbers, arrays, sets,
/// dictionaries, dates (ISO 8601 text), data (base64 text), UUIDs and URLs (text) become their
/// JSON counterparts; an object of any other class becomes `{"$class": name, key: value…}` with
/// its archived keys. An object met again inside itself is `{"$ref": n}` (its `$objects` index).
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

    static func decode(_ data: Data) throws -> JSONText {
        // The project's own strict reader: Foundation's crashes on some damaged property lists.
        let archive: KeyedArchiveObjects
        do {
            archive = try KeyedArchiveObjects(data)
        } catch let error as ModelError {
            throw StoreError(.corrupt, error.problems.joined(separator: "; "))
        }
        var reader = Reader(archive: archive)
        return try reader.object(archive.root)
    }

    private struct Reader {
        let archive: KeyedArchiveObjects
        var visiting: [Int] = []

        mutating func value(_ node: PropertyListNode) throws -> JSONText {
            switch node {
            case .uid(let index): return try object(index)
            case .string(let text): return .string(text)
            case .integer(let n): return .integer(n)
            case .real(let d): return JSONText.value(.double(d))
            case .boolean(let b): return .bool(b)
            case .date(let date): return .string(ValueText.iso8601(date))
            case .data(let data): return .string(data.base64EncodedString())
            case .array(let items), .set(let items): return .array(try items.map { try value($0) })
            case .dictionary(let fields): return .object(try fields.keys.sorted().map { ($0, try value(fields[$0]!)) })
            }
        }

        mutating func object(_ index: Int) throws -> JSONText {
            let node: PropertyListNode?
            do { node = try archive.node(index, from: "a reference") } catch let error as ModelError {
                throw StoreError(.corrupt, error.problems.joined(separator: "; "))
            }
            guard let node else { return .null }
            guard case .dictionary(let fields) = node, fields["$class"] != nil else { return try value(node) }
            guard !visiting.contains(index) else { return .object([("$ref", .integer(Int64(index)))]) }
            guard visiting.count < 256 else { throw StoreError(.corrupt, "objects nested more than 256 deep") }
            visiting.append(index)
            defer { visiting.removeLast() }
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
