import Foundation
import ObjectModel

/// A property-list value: what store metadata holds.
///
/// Stores keep metadata keys they do not know, so any property-list value can
/// be stored and read back unchanged.
public enum PropertyListValue: Sendable, Hashable {
    /// `<string>`.
    case string(String)
    /// `<integer>`.
    case integer(Int64)
    /// `<real>`.
    case real(Double)
    /// `<true/>` or `<false/>`.
    case boolean(Bool)
    /// `<date>`.
    case date(Date)
    /// `<data>`.
    case data(Data)
    /// `<array>`.
    case array([PropertyListValue])
    /// `<dict>`.
    case dictionary([String: PropertyListValue])

    /// The string, when this is one.
    public var stringValue: String? { if case .string(let v) = self { v } else { nil } }
    /// The integer, when this is one.
    public var integerValue: Int64? { if case .integer(let v) = self { v } else { nil } }
    /// The bytes, when this is data.
    public var dataValue: Data? { if case .data(let v) = self { v } else { nil } }
    /// The elements, when this is an array.
    public var arrayValue: [PropertyListValue]? { if case .array(let v) = self { v } else { nil } }
    /// The entries, when this is a dictionary.
    public var dictionaryValue: [String: PropertyListValue]? { if case .dictionary(let v) = self { v } else { nil } }
}

extension PropertyListValue {
    /// Encodes a dictionary as a binary property list (`bplist00`), the form Core Data uses,
    /// with the writer the model cache uses (ObjectModel's `BinaryPropertyListWriter`).
    public static func binaryPropertyList(_ dictionary: [String: PropertyListValue]) throws -> Data {
        BinaryPropertyListWriter.encode(PropertyListValue.dictionary(dictionary).node)
    }

    /// The same value as the binary property-list writer takes it.
    var node: PropertyListNode {
        switch self {
        case .string(let v): .string(v)
        case .integer(let v): .integer(v)
        case .real(let v): .real(v)
        case .boolean(let v): .boolean(v)
        case .date(let v): .date(v)
        case .data(let v): .data(v)
        case .array(let v): .array(v.map(\.node))
        case .dictionary(let v): .dictionary(v.mapValues(\.node))
        }
    }

    /// Decodes a property list (binary or XML) whose top level is a dictionary.
    ///
    /// Binary ones (`bplist00`, what stores hold) are read by `BinaryPropertyList`, which checks
    /// every offset and reference; XML ones by Foundation.
    ///
    /// - Returns: nil when `data` is not a property list or its top level is not a dictionary.
    public static func decodeDictionary(_ data: Data) -> [String: PropertyListValue]? {
        if data.starts(with: Data("bplist".utf8)) { return BinaryPropertyList.decode(data)?.dictionaryValue }
        guard let object = try? PropertyListSerialization.propertyList(from: data, format: nil) else { return nil }
        return PropertyListValue(foundationObject: object)?.dictionaryValue
    }

    init?(foundationObject object: Any) {
        switch object {
        case let v as String: self = .string(v)
        case let v as Date: self = .date(v)
        case let v as Data: self = .data(v)
        case let v as NSNumber:
            let type = String(cString: v.objCType)
            if v.isBoolean {
                self = .boolean(v.boolValue)
            } else if type == "f" || type == "d" {
                self = .real(v.doubleValue)
            } else {
                self = .integer(v.int64Value)
            }
        case let v as Bool: self = .boolean(v)
        case let v as Int: self = .integer(Int64(v))
        case let v as Double: self = .real(v)
        case let v as [Any]:
            var items: [PropertyListValue] = []
            for item in v {
                guard let converted = PropertyListValue(foundationObject: item) else { return nil }
                items.append(converted)
            }
            self = .array(items)
        case let v as [String: Any]:
            var entries: [String: PropertyListValue] = [:]
            for (key, item) in v {
                guard let converted = PropertyListValue(foundationObject: item) else { return nil }
                entries[key] = converted
            }
            self = .dictionary(entries)
        default:
            return nil
        }
    }
}

extension NSNumber {
    /// Whether Foundation made this number from a Boolean (property lists and JSON both do).
    var isBoolean: Bool {
        let type = String(cString: objCType)
        return type == "c" || type == "B"
    }
}
