import Foundation
import ObjectModel
import ObjectStore

/// The accessors `@Model` makes call these: one overload per kind of property, chosen by the
/// property's type when the model compiles (the getter passes the type, so that the most
/// specific overload wins: an optional attribute is an attribute, an enum its raw value, only
/// what is neither is JSON).
extension ModelStorage {
    // MARK: Attributes (optionals included: `Optional` is one when its wrapped type is)

    public func value<T: PersistentAttributeValue>(forKey key: String, as type: T.Type) -> T { T.fromStored(attribute(key)) }
    public mutating func setValue<T: PersistentAttributeValue>(_ value: T, forKey key: String) { setAttribute(value.storedValue, key) }

    // MARK: Raw values

    public func value<T: RawRepresentable & Codable>(forKey key: String, as type: T.Type) -> T where T.RawValue: PersistentAttributeValue {
        if let value = T(rawValue: T.RawValue.fromStored(attribute(key))) { return value }
        if let first = (T.self as? any CaseIterable.Type)?.allCases.first as? T { return first }
        preconditionFailure("\(key) holds \(String(describing: attribute(key))), which is no \(T.self)")
    }
    public func value<T: RawRepresentable & Codable>(forKey key: String, as type: T?.Type) -> T? where T.RawValue: PersistentAttributeValue {
        attribute(key).flatMap { T(rawValue: T.RawValue.fromStored($0)) }
    }
    public mutating func setValue<T: RawRepresentable & Codable>(_ value: T, forKey key: String) where T.RawValue: PersistentAttributeValue {
        setAttribute(value.rawValue.storedValue, key)
    }
    public mutating func setValue<T: RawRepresentable & Codable>(_ value: T?, forKey key: String) where T.RawValue: PersistentAttributeValue {
        setAttribute(value?.rawValue.storedValue, key)
    }

    // MARK: Codable values (JSON in a Transformable attribute; nil, for an optional, is no value)

    public func value<T: Codable>(forKey key: String, as type: T.Type) -> T {
        let stored = attribute(key)
        if stored == nil, let none = (T.self as? any ExpressibleByNilLiteral.Type)?.init(nilLiteral: ()) as? T { return none }
        guard let value = TransformableCoding.decode(stored, as: T.self) else { preconditionFailure("\(key) holds no JSON of a \(T.self)") }
        return value
    }
    public mutating func setValue<T: Codable>(_ value: T, forKey key: String) {
        if let optional = value as? any OptionalValue, optional.isNil {
            setAttribute(nil, key)
        } else {
            setAttribute(TransformableCoding.encode(value), key)
        }
    }

    // MARK: Relationships

    public func value<T: PersistentModel>(forKey key: String, as type: T.Type) -> T {
        guard let model = toOne(key, as: T.self) else { preconditionFailure("the required relationship \(key) has no \(T.self)") }
        return model
    }
    public func value<T: PersistentModel>(forKey key: String, as type: T?.Type) -> T? { toOne(key, as: T.self) }
    public func value<T: PersistentModel>(forKey key: String, as type: [T].Type) -> [T] { toMany(key, as: T.self) }
    public func value<T: PersistentModel>(forKey key: String, as type: [T]?.Type) -> [T]? { toMany(key, as: T.self) }
    public mutating func setValue<T: PersistentModel>(_ value: T, forKey key: String) { setToOne(value, key) }
    public mutating func setValue<T: PersistentModel>(_ value: T?, forKey key: String) { setToOne(value, key) }
    public mutating func setValue<T: PersistentModel>(_ value: [T], forKey key: String) { setToMany(value, key) }
    public mutating func setValue<T: PersistentModel>(_ value: [T]?, forKey key: String) { setToMany(value ?? [], key) }
}
