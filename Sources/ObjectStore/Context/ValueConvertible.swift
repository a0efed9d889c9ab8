import Foundation
import ObjectModel

/// A Swift type that converts to and from an attribute `Value`, for typed access.
///
/// ```swift
/// person["age", as: Int.self] = 42
/// let name = person["name", as: String.self]
/// ```
public protocol ValueConvertible {
    /// The value, or nil when `value` is of another kind or out of range.
    init?(attributeValue value: Value)
    /// The attribute value.
    var attributeValue: Value { get }
}

extension Int: ValueConvertible {
    public init?(attributeValue value: Value) { guard case .integer(let v) = value, let i = Int(exactly: v) else { return nil }; self = i }
    public var attributeValue: Value { .integer(Int64(self)) }
}
extension Int16: ValueConvertible {
    public init?(attributeValue value: Value) { guard case .integer(let v) = value, let i = Int16(exactly: v) else { return nil }; self = i }
    public var attributeValue: Value { .integer(Int64(self)) }
}
extension Int32: ValueConvertible {
    public init?(attributeValue value: Value) { guard case .integer(let v) = value, let i = Int32(exactly: v) else { return nil }; self = i }
    public var attributeValue: Value { .integer(Int64(self)) }
}
extension Int64: ValueConvertible {
    public init?(attributeValue value: Value) { guard case .integer(let v) = value else { return nil }; self = v }
    public var attributeValue: Value { .integer(self) }
}
extension Double: ValueConvertible {
    public init?(attributeValue value: Value) {
        switch value {
        case .double(let v): self = v
        case .integer(let v): self = Double(v)
        default: return nil
        }
    }
    public var attributeValue: Value { .double(self) }
}
extension Float: ValueConvertible {
    public init?(attributeValue value: Value) { guard let d = Double(attributeValue: value) else { return nil }; self = Float(d) }
    public var attributeValue: Value { .double(Double(self)) }
}
extension Decimal: ValueConvertible {
    public init?(attributeValue value: Value) {
        switch value {
        case .decimal(let v): self = v
        case .integer(let v): self = Decimal(v)
        default: return nil
        }
    }
    public var attributeValue: Value { .decimal(self) }
}
extension String: ValueConvertible {
    public init?(attributeValue value: Value) { guard case .string(let v) = value else { return nil }; self = v }
    public var attributeValue: Value { .string(self) }
}
extension Bool: ValueConvertible {
    public init?(attributeValue value: Value) { guard case .boolean(let v) = value else { return nil }; self = v }
    public var attributeValue: Value { .boolean(self) }
}
extension Date: ValueConvertible {
    public init?(attributeValue value: Value) { guard case .date(let v) = value else { return nil }; self = v }
    public var attributeValue: Value { .date(self) }
}
extension Data: ValueConvertible {
    public init?(attributeValue value: Value) { guard case .data(let v) = value else { return nil }; self = v }
    public var attributeValue: Value { .data(self) }
}
extension UUID: ValueConvertible {
    public init?(attributeValue value: Value) { guard case .uuid(let v) = value else { return nil }; self = v }
    public var attributeValue: Value { .uuid(self) }
}
extension URL: ValueConvertible {
    public init?(attributeValue value: Value) { guard case .uri(let v) = value else { return nil }; self = v }
    public var attributeValue: Value { .uri(self) }
}
