import Foundation
import ObjectModel
import ObjectStore

/// A Swift type a model attribute can have, with the attribute type it is stored as.
///
/// | Swift | attribute type |
/// |---|---|
/// | `String` | String |
/// | `Bool` | Boolean |
/// | `Int`, `Int64`, `UInt`, `UInt64` (bit pattern), `UInt32` | Integer 64 |
/// | `Int32`, `UInt16` | Integer 32 |
/// | `Int16`, `Int8`, `UInt8` | Integer 16 |
/// | `Double` | Double |
/// | `Float` | Float |
/// | `Decimal` | Decimal |
/// | `Date` | Date |
/// | `Data` | Binary |
/// | `UUID` | UUID |
/// | `URL` | URI |
/// | `T?` | T's type, optional |
///
/// Besides these: a `RawRepresentable` `Codable` type is stored as its raw value, any other
/// `Codable` type as its JSON in a Transformable attribute (docs/typed-models.md).
public protocol PersistentAttributeValue: Codable {
    /// The attribute type values are stored as.
    static var attributeType: AttributeType { get }
    /// Whether nil is a value (an optional).
    static var isOptional: Bool { get }
    /// The value as stored.
    var storedValue: Value? { get }
    /// The value a stored value stands for; a value of no such kind (or none, for a type that
    /// has no nil) gives ``ConvertibleAttributeValue/placeholder``.
    static func fromStored(_ value: Value?) -> Self
}

extension PersistentAttributeValue {
    public static var isOptional: Bool { false }
}

/// A type whose stored form is one `ValueConvertible` value, with a value for "nothing stored".
public protocol ConvertibleAttributeValue: PersistentAttributeValue, ValueConvertible {
    /// What a property reads when the store holds no value of its kind: zero, empty, the reference date.
    static var placeholder: Self { get }
}

extension ConvertibleAttributeValue {
    public var storedValue: Value? { attributeValue }
    public static func fromStored(_ value: Value?) -> Self { value.flatMap(Self.init(attributeValue:)) ?? placeholder }
}

extension String: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .string }
    public static var placeholder: String { "" }
}
extension Bool: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .boolean }
    public static var placeholder: Bool { false }
}
extension Int: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .integer64 }
    public static var placeholder: Int { 0 }
}
extension Int64: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .integer64 }
    public static var placeholder: Int64 { 0 }
}
extension Int32: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .integer32 }
    public static var placeholder: Int32 { 0 }
}
extension Int16: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .integer16 }
    public static var placeholder: Int16 { 0 }
}
extension Double: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .double }
    public static var placeholder: Double { 0 }
}
extension Float: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .float }
    public static var placeholder: Float { 0 }
}
extension Decimal: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .decimal }
    public static var placeholder: Decimal { 0 }
}
extension Date: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .date }
    public static var placeholder: Date { Date(timeIntervalSinceReferenceDate: 0) }
}
extension Data: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .binaryData }
    public static var placeholder: Data { Data() }
}
extension UUID: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .uuid }
    public static var placeholder: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
}
extension URL: ConvertibleAttributeValue {
    public static var attributeType: AttributeType { .uri }
    public static var placeholder: URL { URL(string: "about:blank")! }
}

/// Integers stored in a wider (or, for the 64-bit unsigned ones, the same) signed attribute.
extension Int8: PersistentAttributeValue {
    public static var attributeType: AttributeType { .integer16 }
    public var storedValue: Value? { .integer(Int64(self)) }
    public static func fromStored(_ value: Value?) -> Int8 { value.flatMap(Int64.init(attributeValue:)).flatMap(Int8.init(exactly:)) ?? 0 }
}
extension UInt8: PersistentAttributeValue {
    public static var attributeType: AttributeType { .integer16 }
    public var storedValue: Value? { .integer(Int64(self)) }
    public static func fromStored(_ value: Value?) -> UInt8 { value.flatMap(Int64.init(attributeValue:)).flatMap(UInt8.init(exactly:)) ?? 0 }
}
extension UInt16: PersistentAttributeValue {
    public static var attributeType: AttributeType { .integer32 }
    public var storedValue: Value? { .integer(Int64(self)) }
    public static func fromStored(_ value: Value?) -> UInt16 { value.flatMap(Int64.init(attributeValue:)).flatMap(UInt16.init(exactly:)) ?? 0 }
}
extension UInt32: PersistentAttributeValue {
    public static var attributeType: AttributeType { .integer64 }
    public var storedValue: Value? { .integer(Int64(self)) }
    public static func fromStored(_ value: Value?) -> UInt32 { value.flatMap(Int64.init(attributeValue:)).flatMap(UInt32.init(exactly:)) ?? 0 }
}
/// Stored as the signed integer of the same bits: every value round-trips, values above
/// `Int64.max` sort below zero in the store.
extension UInt64: PersistentAttributeValue {
    public static var attributeType: AttributeType { .integer64 }
    public var storedValue: Value? { .integer(Int64(bitPattern: self)) }
    public static func fromStored(_ value: Value?) -> UInt64 { value.flatMap(Int64.init(attributeValue:)).map(UInt64.init(bitPattern:)) ?? 0 }
}
/// As `UInt64`.
extension UInt: PersistentAttributeValue {
    public static var attributeType: AttributeType { .integer64 }
    public var storedValue: Value? { .integer(Int64(bitPattern: UInt64(self))) }
    public static func fromStored(_ value: Value?) -> UInt { UInt(UInt64.fromStored(value)) }
}

extension Optional: PersistentAttributeValue where Wrapped: PersistentAttributeValue {
    public static var attributeType: AttributeType { Wrapped.attributeType }
    public static var isOptional: Bool { true }
    public var storedValue: Value? { self?.storedValue }
    public static func fromStored(_ value: Value?) -> Wrapped? { value.map { Wrapped.fromStored($0) } }
}

/// The JSON of a `Codable` value kept in a Transformable attribute.
enum TransformableCoding {
    static func encode(_ value: some Encodable) -> Value? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return (try? encoder.encode(value)).map(Value.data)
    }

    static func decode<T: Decodable>(_ value: Value?, as type: T.Type) -> T? {
        guard case .data(let data)? = value else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(T.self, from: data)
    }
}
