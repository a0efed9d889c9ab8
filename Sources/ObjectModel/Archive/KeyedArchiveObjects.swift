import Foundation

/// An `NSKeyedArchiver` archive read as data: its objects, their class names and their keys.
///
/// Nothing is instantiated. An archive is a binary property list with `$archiver`
/// (`NSKeyedArchiver`), `$version`, `$top` (`root` → a UID) and `$objects` (index 0 is
/// `$null`). Every object that is not a string or a number is a dictionary whose `$class`
/// refers to a class record (`$classname`, `$classes`); its other keys hold inline values
/// or `CF$UID` references into `$objects`, UID 0 meaning nil.
package struct KeyedArchiveObjects {
    package let objects: [PropertyListNode]
    package let root: Int

    /// Reads the archive in `data`.
    /// - Throws: ``ModelError`` (`unreadable`) when `data` is not a binary property list or
    ///   not a keyed archive.
    package init(_ data: Data) throws {
        guard data.starts(with: BinaryPropertyListReader.magic) else {
            throw ModelError(.unreadable, problems: ["not a binary property list (no bplist00 header): not a keyed archive"])
        }
        guard case .dictionary(let top)? = BinaryPropertyListReader.decode(data, archive: true) else {
            throw ModelError(.unreadable, problems: ["the binary property list is damaged (an offset, a length or a reference points outside it, or its top is not a dictionary)"])
        }
        guard top["$archiver"] == .string("NSKeyedArchiver") else {
            throw ModelError(.unsupported, problems: ["not an NSKeyedArchiver archive ($archiver is \(top["$archiver"].map(Self.describe) ?? "missing"))"])
        }
        guard case .array(let objects)? = top["$objects"], case .dictionary(let anchors)? = top["$top"],
              case .uid(let root)? = anchors["root"] else {
            throw ModelError(.unreadable, problems: ["the keyed archive has no $objects array or no $top root reference"])
        }
        guard root > 0, root < objects.count else {
            throw ModelError(.unreadable, problems: ["the archive's root refers to object #\(root) of \(objects.count)"])
        }
        self.objects = objects
        self.root = root
    }

    /// The object a UID refers to; nil for UID 0 (`$null`).
    /// - Throws: ``ModelError`` (`unreadable`) for a UID past the end of `$objects`.
    package func node(_ uid: Int, from place: @autoclosure () -> String) throws -> PropertyListNode? {
        guard uid != 0 else { return nil }
        guard uid > 0, uid < objects.count else {
            throw ModelError(.unreadable, problems: ["\(place()) refers to object #\(uid), but the archive has \(objects.count) objects"])
        }
        return objects[uid]
    }

    /// The archived object (a dictionary with a `$class`) `uid` refers to; nil for UID 0.
    package func object(_ uid: Int, from place: @autoclosure () -> String) throws -> ArchivedObject? {
        guard let node = try node(uid, from: place()) else { return nil }
        guard case .dictionary(let fields) = node, case .uid(let classUID)? = fields["$class"] else {
            throw ModelError(.unreadable, problems: ["\(place()) refers to object #\(uid), \(Self.describe(node)), where an archived object was expected"])
        }
        guard case .dictionary(let record)? = try self.node(classUID, from: "object #\(uid)'s $class"),
              case .string(let name)? = record["$classname"] else {
            throw ModelError(.unreadable, problems: ["object #\(uid)'s $class is not a class record with a $classname"])
        }
        return ArchivedObject(index: uid, className: name, fields: fields)
    }

    /// A short description of a node for messages.
    package static func describe(_ node: PropertyListNode) -> String {
        switch node {
        case .string(let v): "the string \(String(reflecting: v))"
        case .integer(let v): "the integer \(v)"
        case .real(let v): "the number \(v)"
        case .boolean(let v): v ? "true" : "false"
        case .date: "a date"
        case .data(let v): "\(v.count) bytes of data"
        case .array: "an array"
        case .set: "a set"
        case .dictionary: "a dictionary"
        case .uid(let v): "a reference to object #\(v)"
        }
    }
}

/// One archived object: its index in `$objects`, its class name and its keys (`$class` included).
package struct ArchivedObject {
    package let index: Int
    package let className: String
    package let fields: [String: PropertyListNode]

    /// `Class#index`, how messages name it.
    package var label: String { "\(className) #\(index)" }

    /// Refuses a key this reader does not know: what it means is not guessed.
    /// - Throws: ``ModelError`` (`unsupported`) naming the class and every unknown key.
    package func requireKnownKeys(_ known: Set<String>) throws {
        let unknown = fields.keys.filter { $0 != "$class" && !known.contains($0) }.sorted()
        guard unknown.isEmpty else {
            throw ModelError(.unsupported, problems: ["\(label): unknown key\(unknown.count == 1 ? "" : "s") \(unknown.joined(separator: ", ")) (not decoded: its meaning is not established)"])
        }
    }
}
