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
        BinaryPropertyListReader.decode(data) { (shape: PropertyListShape<PropertyListValue>) -> PropertyListValue? in
            switch shape {
            case .string(let v): .string(v)
            case .integer(let v): .integer(v)
            case .real(let v): .real(v)
            case .boolean(let v): .boolean(v)
            case .date(let v): .date(v)
            case .data(let v): .data(v)
            case .array(let v): .array(v)
            case .dictionary(let v): .dictionary(v)
            case .set, .uid: nil   // never in metadata (and not read outside an archive)
            }
        }
    }
}
