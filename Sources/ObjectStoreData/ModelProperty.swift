import Foundation
import ObjectModel

/// One persisted property of a model, as `@Model` describes it: its name, key path, what it is
/// stored as, and the options its `@Attribute` or `@Relationship` gave.
public struct ModelProperty {
    /// The property's name (the attribute's or relationship's).
    public let name: String
    /// The property's key path (from the model's class).
    public let keyPath: AnyKeyPath
    let kind: Kind
    let attribute: Schema.Attribute?
    let relationship: Schema.Relationship?
    /// The value of the property's initial value, as stored: the attribute's default (what a
    /// migration gives the objects a new attribute appears on).
    let defaultValue: Value?

    enum Kind {
        /// An attribute of this type; `transformable` for JSON of a Codable value.
        case attribute(AttributeType, optional: Bool)
        /// A relationship to models of `destination`.
        case relationship(destination: any PersistentModel.Type, toMany: Bool, optional: Bool)
    }

    private init(_ name: String, _ keyPath: AnyKeyPath, _ kind: Kind, _ attribute: Schema.Attribute?, _ relationship: Schema.Relationship?,
                 default defaultValue: Value? = nil) {
        self.name = name
        self.keyPath = keyPath
        self.kind = kind
        self.attribute = attribute
        self.relationship = relationship
        self.defaultValue = defaultValue
    }

    // One overload per kind of property, as for the accessors (ModelStorage+Access.swift).

    public static func describe<Root: PersistentModel, T: PersistentAttributeValue>(_ name: String, _ keyPath: KeyPath<Root, T>, attribute: Schema.Attribute? = nil,
                                                             relationship: Schema.Relationship? = nil, initial: (() -> T)? = nil) -> Self {
        Self(name, keyPath, .attribute(T.attributeType, optional: T.isOptional), attribute, relationship, default: initial?().storedValue)
    }
    public static func describe<Root: PersistentModel, T: RawRepresentable & Codable>(_ name: String, _ keyPath: KeyPath<Root, T>, attribute: Schema.Attribute? = nil,
                                                               relationship: Schema.Relationship? = nil, initial: (() -> T)? = nil) -> Self
    where T.RawValue: PersistentAttributeValue {
        Self(name, keyPath, .attribute(T.RawValue.attributeType, optional: T.RawValue.isOptional), attribute, relationship,
             default: initial?().rawValue.storedValue)
    }
    public static func describe<Root: PersistentModel, T: RawRepresentable & Codable>(_ name: String, _ keyPath: KeyPath<Root, T?>, attribute: Schema.Attribute? = nil,
                                                               relationship: Schema.Relationship? = nil, initial: (() -> T?)? = nil) -> Self
    where T.RawValue: PersistentAttributeValue {
        Self(name, keyPath, .attribute(T.RawValue.attributeType, optional: true), attribute, relationship, default: initial?()?.rawValue.storedValue)
    }
    public static func describe<Root: PersistentModel, T: Codable>(_ name: String, _ keyPath: KeyPath<Root, T>, attribute: Schema.Attribute? = nil,
                                            relationship: Schema.Relationship? = nil, initial: (() -> T)? = nil) -> Self {
        let value = initial?()
        let stored = value.flatMap { ($0 as? any OptionalValue)?.isNil == true ? nil : TransformableCoding.encode($0) }
        return Self(name, keyPath, .attribute(.transformable, optional: T.self is any OptionalValue.Type), attribute, relationship, default: stored)
    }
    public static func describe<Root: PersistentModel, T: PersistentModel>(_ name: String, _ keyPath: KeyPath<Root, T>,
                                                    attribute: Schema.Attribute? = nil, relationship: Schema.Relationship? = nil, initial: (() -> T)? = nil) -> Self {
        Self(name, keyPath, .relationship(destination: T.self, toMany: false, optional: false), attribute, relationship)
    }
    public static func describe<Root: PersistentModel, T: PersistentModel>(_ name: String, _ keyPath: KeyPath<Root, T?>,
                                                    attribute: Schema.Attribute? = nil, relationship: Schema.Relationship? = nil, initial: (() -> T?)? = nil) -> Self {
        Self(name, keyPath, .relationship(destination: T.self, toMany: false, optional: true), attribute, relationship)
    }
    public static func describe<Root: PersistentModel, T: PersistentModel>(_ name: String, _ keyPath: KeyPath<Root, [T]>,
                                                    attribute: Schema.Attribute? = nil, relationship: Schema.Relationship? = nil, initial: (() -> [T])? = nil) -> Self {
        Self(name, keyPath, .relationship(destination: T.self, toMany: true, optional: true), attribute, relationship)
    }
    public static func describe<Root: PersistentModel, T: PersistentModel>(_ name: String, _ keyPath: KeyPath<Root, [T]?>,
                                                    attribute: Schema.Attribute? = nil, relationship: Schema.Relationship? = nil, initial: (() -> [T]?)? = nil) -> Self {
        Self(name, keyPath, .relationship(destination: T.self, toMany: true, optional: true), attribute, relationship)
    }
}

extension PersistentModel {
    /// The name of the persisted property at `keyPath`, or nil when it is none.
    static func propertyName(_ keyPath: AnyKeyPath) -> String? {
        _$properties.first { $0.keyPath == keyPath }?.name
    }
}
