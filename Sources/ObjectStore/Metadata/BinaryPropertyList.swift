import Foundation
import ObjectModel

/// A strict reader of binary property lists (`bplist00`), the form of Core Data's store metadata.
///
/// Store metadata comes from files that may be damaged or hostile, and Foundation's reader
/// trusts the file's offsets and references (a damaged one can crash the process). The reader
/// (ObjectModel's `BinaryPropertyListReader`, shared with the keyed-archive decoder) checks every
/// offset, length and reference against the file, refuses cycles, nesting deeper than 512
/// levels, duplicate keys, non-string keys, invalid text and the types metadata never holds
/// (sets, UIDs, null), and reads each object once however often it is referenced.
enum BinaryPropertyList {
    static let magic = BinaryPropertyListReader.magic
    static let maximumDepth = BinaryPropertyListReader.maximumDepth

    /// The top object of `data`, or nil when `data` is not a well-formed binary property list.
    static func decode(_ data: Data) -> PropertyListValue? {
        BinaryPropertyListReader.decode(data).flatMap(PropertyListValue.init(node:))
    }
}

extension PropertyListValue {
    /// The value of a node read outside an archive (nil for sets and UIDs, which it never holds).
    init?(node: PropertyListNode) {
        switch node {
        case .string(let v): self = .string(v)
        case .integer(let v): self = .integer(v)
        case .real(let v): self = .real(v)
        case .boolean(let v): self = .boolean(v)
        case .date(let v): self = .date(v)
        case .data(let v): self = .data(v)
        case .array(let items):
            var values: [PropertyListValue] = []
            values.reserveCapacity(items.count)
            for item in items {
                guard let value = PropertyListValue(node: item) else { return nil }
                values.append(value)
            }
            self = .array(values)
        case .dictionary(let entries):
            var values: [String: PropertyListValue] = [:]
            for (key, entry) in entries {
                guard let value = PropertyListValue(node: entry) else { return nil }
                values[key] = value
            }
            self = .dictionary(values)
        case .set, .uid: return nil
        }
    }
}
