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
        let plist: Any
        do {
            plist = try PropertyListSerialization.propertyList(from: data, format: nil)
        } catch {
            throw StoreError(.corrupt, "not a property list (\(data.count) bytes): \((error as NSError).localizedDescription)")
        }
        guard let archive = plist as? [String: Any], let objects = archive["$objects"] as? [Any], let top = archive["$top"] as? [String: Any] else {
            throw StoreError(.corrupt, "a property list, but not a keyed archive (no $objects array and $top dictionary)")
        }
        if let archiver = archive["$archiver"] as? String, archiver != "NSKeyedArchiver" {
            throw StoreError(.corrupt, "an archive of \(archiver), not of NSKeyedArchiver")
        }
        var reader = Reader(objects: objects)
        // Archives Core Data stores have one root, `root`; others show every top key.
        if top.count == 1, let root = top["root"] { return try reader.value(root) }
        return .object(try top.map { ($0.key, try reader.value($0.value)) })
    }

    /// The object index a `CF$UID` reference names, or nil for another value. Foundation gives
    /// a UID as its own class (its `value`); an XML property list writes `{"CF$UID": n}`.
    static func uid(_ value: Any) -> Int? {
        if let dictionary = value as? [String: Any], dictionary.count == 1, let n = dictionary["CF$UID"] as? Int { return n }
        let name = String(describing: type(of: value))
        guard name.contains("KeyedArchiverUID") else { return nil }
        for child in Mirror(reflecting: value).children where child.label == "value" {
            if let n = child.value as? UInt32 { return Int(n) }
            if let n = child.value as? Int { return n }
        }
        // Where the class shows only its description: `<CFKeyedArchiverUID …>{value = 1}`.
        let text = String(describing: value)
        guard let range = text.range(of: "value = ") else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }

    private struct Reader {
        let objects: [Any]
        var visiting: [Int] = []

        mutating func value(_ raw: Any) throws -> JSONText {
            if let index = KeyedArchive.uid(raw) { return try object(index) }
            return try plain(raw)
        }

        func plain(_ raw: Any) throws -> JSONText {
            switch raw {
            case let text as String: return .string(text)
            case let date as Date: return .string(ValueText.iso8601(date))
            case let data as Data: return .string(data.base64EncodedString())
            case let number as NSNumber:
                let kind = String(cString: number.objCType)
                if kind == "c" || kind == "B" { return .bool(number.boolValue) }
                if kind == "d" || kind == "f" { return JSONText.value(.double(number.doubleValue)) }
                return .integer(number.int64Value)
            default: throw StoreError(.corrupt, "holds a \(type(of: raw)) where a value or reference belongs")
            }
        }

        mutating func object(_ index: Int) throws -> JSONText {
            guard objects.indices.contains(index) else {
                throw StoreError(.corrupt, "a reference to object \(index), but $objects has \(objects.count)")
            }
            let raw = objects[index]
            if index == 0, raw as? String == "$null" { return .null }
            guard let fields = raw as? [String: Any], let classReference = fields["$class"] else { return try plain(raw) }
            guard !visiting.contains(index) else { return .object([("$ref", .integer(Int64(index)))]) }
            guard visiting.count < 256 else { throw StoreError(.corrupt, "objects nested more than 256 deep") }
            visiting.append(index)
            defer { visiting.removeLast() }
            guard let classIndex = KeyedArchive.uid(classReference), objects.indices.contains(classIndex),
                  let description = objects[classIndex] as? [String: Any], let name = description["$classname"] as? String else {
                throw StoreError(.corrupt, "object \(index)'s $class is not a class description with a $classname")
            }
            func field(_ key: String) throws -> JSONText? { try fields[key].map { try value($0) } }
            func list(_ key: String) throws -> [JSONText] {
                guard let items = fields[key] else { return [] }
                guard let array = items as? [Any] else { throw StoreError(.corrupt, "object \(index) (\(name)): \(key) is not an array") }
                return try array.map { try value($0) }
            }
            switch name {
            case "NSString", "NSMutableString":
                if let text = fields["NS.string"] as? String { return .string(text) }
                if let bytes = fields["NS.bytes"] as? Data { return .string(String(decoding: bytes, as: UTF8.self)) }
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
                guard let time = (fields["NS.time"] as? NSNumber)?.doubleValue else { throw StoreError(.corrupt, "object \(index) (NSDate) has no NS.time") }
                return .string(ValueText.iso8601(Date(timeIntervalSinceReferenceDate: time)))
            case "NSData", "NSMutableData":
                guard let data = fields["NS.data"] as? Data else { throw StoreError(.corrupt, "object \(index) (\(name)) has no NS.data") }
                return .string(data.base64EncodedString())
            case "NSUUID":
                guard let bytes = fields["NS.uuidbytes"] as? Data, bytes.count == 16 else {
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
