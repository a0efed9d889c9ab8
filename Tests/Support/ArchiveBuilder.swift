import Foundation
import ObjectModel

/// Writes binary property lists and keyed archives by hand, so tests can make archives
/// Core Data never wrote: one small model, and damaged or unknown variations of it; and the
/// archived expressions of Xcode mapping models.
package struct ArchiveBuilder {
    /// `$objects`; index 0 is `$null`.
    package var objects: [PropertyListNode] = [.string("$null")]
    private var classes: [String: Int] = [:]

    /// An archive with only `$null` so far.
    package init() {}

    /// Appends `node` to `$objects`; returns its UID.
    @discardableResult
    package mutating func add(_ node: PropertyListNode) -> Int {
        objects.append(node)
        return objects.count - 1
    }

    /// A reference to a new string object.
    package mutating func string(_ text: String) -> PropertyListNode { .uid(add(.string(text))) }

    /// Appends an object of `className` (its class record added once) with `fields`; returns its UID.
    @discardableResult
    package mutating func object(_ className: String, _ fields: [String: PropertyListNode]) -> Int {
        let record = classes[className] ?? add(.dictionary(["$classname": .string(className), "$classes": .array([.string(className), .string("NSObject")])]))
        classes[className] = record
        return add(.dictionary(fields.merging(["$class": .uid(record)]) { $1 }))
    }

    /// Reserves a UID to fill later with ``set(_:_:_:)`` (objects that refer to each other).
    package mutating func reserve() -> Int { add(.string("reserved")) }

    /// Fills a reserved UID with an object of `className`.
    package mutating func set(_ uid: Int, _ className: String, _ fields: [String: PropertyListNode]) {
        let temporary = object(className, fields)
        objects[uid] = objects.removeLast()
        precondition(temporary == objects.count)
    }

    /// The archive: `$archiver`, `$version`, `$top` → `root`, `$objects`, as a binary property list.
    package func archive(root: Int) -> Data {
        BinaryPlistWriter.encode(.dictionary([
            "$archiver": .string("NSKeyedArchiver"), "$version": .integer(100_000),
            "$top": .dictionary(["root": .uid(root)]), "$objects": .array(objects),
        ]))
    }

    /// The archive of a model with one entity `Event`, one optional Date attribute `timeStamp`:
    /// version-hash.md's test vector. `attributeFields` are merged into the attribute's keys.
    package static func eventModel(attributeFields: [String: PropertyListNode] = [:], entityFields: [String: PropertyListNode] = [:]) -> Data {
        var builder = ArchiveBuilder()
        let root = builder.reserve()
        let entity = builder.reserve()
        let name = builder.string("Event")
        let attribute = builder.object("NSAttributeDescription", [
            "NSPropertyName": builder.string("timeStamp"), "NSEntity": .uid(entity), "NSAttributeType": .integer(900),
            "NSIsOptional": .boolean(true), "_P": .integer(243), "NSAttributeValueClassName": builder.string("NSDate"),
            "NSDefaultValue": .uid(0), "NSRenamingIdentifier": builder.string("timeStamp"), "NSFlagsKey": .integer(0),
        ].merging(attributeFields) { $1 })
        let properties = builder.object("NSMutableDictionary", ["NS.keys": .array([builder.string("timeStamp")]), "NS.objects": .array([.uid(attribute)])])
        builder.set(entity, "NSEntityDescription", [
            "NSEntityName": name, "NSClassNameForEntity": builder.string("NSManagedObject"), "NSProperties": .uid(properties),
            "NSManagedObjectModel": .uid(root), "NSSuperentity": .uid(0), "NSRenamingIdentifier": name,
        ].merging(entityFields) { $1 })
        let keys = builder.object("NSArray", ["NS.objects": .array([name])])
        let mapping = builder.object("NSKnownKeysMappingStrategy1", ["keys": .uid(keys), "length": .integer(1), "version": .integer(1)])
        let values = builder.object("NSArray", ["NS.objects": .array([.uid(entity)])])
        let entities = builder.object("NSKnownKeysDictionary1", [
            "values": .uid(values), "searchMapping": .uid(mapping), "emptyToken": builder.string("__empty__"), "version": .integer(1),
        ])
        let identifiers = builder.object("NSSet", ["NS.objects": .array([builder.string("")])])
        builder.set(root, "NSManagedObjectModel", ["NSEntities": .uid(entities), "NSVersionIdentifiers": .uid(identifiers), "NSFetchRequestTemplates": .uid(0)])
        return builder.archive(root: root)
    }
}

/// Encodes a ``PropertyListNode`` as `bplist00`: every node its own object (no sharing),
/// 2-byte references, 4-byte offsets.
package enum BinaryPlistWriter {
    package static func encode(_ top: PropertyListNode) -> Data {
        var body = [UInt8]("bplist00".utf8)
        var offsets: [Int] = []
        // Objects are numbered depth first; a container's references are known once its children are numbered.
        func write(_ node: PropertyListNode) -> Int {
            let index = offsets.count
            offsets.append(0)
            var children: [Int] = []
            switch node {
            case .array(let items), .set(let items): children = items.map(write)
            case .dictionary(let entries):
                let sorted = entries.sorted { $0.key < $1.key }
                children = sorted.map { write(.string($0.key)) } + sorted.map { write($0.value) }
            default: break
            }
            offsets[index] = body.count
            switch node {
            case .string(let text):
                if text.utf8.allSatisfy({ $0 < 0x80 }) {
                    header(0x5, text.utf8.count)
                    body += text.utf8
                } else {
                    header(0x6, text.utf16.count)
                    for unit in text.utf16 { body += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
                }
            case .integer(let v): body.append(0x13); body += bigEndian(UInt64(bitPattern: v), 8)
            case .real(let v): body.append(0x23); body += bigEndian(v.bitPattern, 8)
            case .boolean(let v): body.append(v ? 0x09 : 0x08)
            case .date(let d): body.append(0x33); body += bigEndian(d.timeIntervalSinceReferenceDate.bitPattern, 8)
            case .data(let d): header(0x4, d.count); body += d
            case .uid(let v): body.append(0x81); body += bigEndian(UInt64(v), 2)
            case .array(let items): header(0xA, items.count); for child in children { body += bigEndian(UInt64(child), 2) }
            case .set(let items): header(0xC, items.count); for child in children { body += bigEndian(UInt64(child), 2) }
            case .dictionary(let entries): header(0xD, entries.count); for child in children { body += bigEndian(UInt64(child), 2) }
            }
            return index
        }
        func header(_ kind: UInt8, _ count: Int) {
            if count < 15 { body.append(kind << 4 | UInt8(count)); return }
            body.append(kind << 4 | 0xF)
            body.append(0x13)
            body += bigEndian(UInt64(count), 8)
        }
        let top = write(top)
        let table = body.count
        for offset in offsets { body += bigEndian(UInt64(offset), 4) }
        body += [0, 0, 0, 0, 0, 0, 4, 2] + bigEndian(UInt64(offsets.count), 8) + bigEndian(UInt64(top), 8) + bigEndian(UInt64(table), 8)
        return Data(body)
    }

    package static func bigEndian(_ value: UInt64, _ size: Int) -> [UInt8] {
        (0..<size).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    /// A raw DEFLATE stream of stored (uncompressed) blocks: valid input for any inflater.
    package static func storedDeflate(_ data: Data) -> Data {
        var out: [UInt8] = []
        let bytes = [UInt8](data)
        var start = 0
        repeat {
            let count = min(65_535, bytes.count - start)
            let final: UInt8 = start + count == bytes.count ? 1 : 0
            out.append(final)
            out += [UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            out += bytes[start..<start + count]
            start += count
        } while start < bytes.count
        return Data(out)
    }
}
