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

/// Binary property lists for tests: ObjectModel's writer (the one the model cache and store
/// metadata are written with), and a DEFLATE stream made without zlib.
package enum BinaryPlistWriter {
    package static func encode(_ top: PropertyListNode) -> Data {
        BinaryPropertyListWriter.encode(top)
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
