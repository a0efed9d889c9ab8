import Foundation
import ObjectModel

/// One value of a uniqueness constraint's properties, compared the way SQLite's unique
/// index compares the column (`COLLATE BINARY`): strings by their UTF-8 bytes (two
/// spellings of "é" are two values), to-one relationships by the object they name.
public enum UniqueField: Sendable, Hashable, CustomStringConvertible {
    /// An attribute's value.
    case value(Value)
    /// The object a to-one relationship names.
    case object(ObjectKey)

    public static func == (a: UniqueField, b: UniqueField) -> Bool {
        switch (a, b) {
        case (.value(.string(let x)), .value(.string(let y))): x.utf8.elementsEqual(y.utf8)
        case (.value(let x), .value(let y)): x == y
        case (.object(let x), .object(let y)): x == y
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .value(.string(let text)): hasher.combine(0); hasher.combine(text.utf8.count); for byte in text.utf8 { hasher.combine(byte) }
        case .value(let value): hasher.combine(1); hasher.combine(value)
        case .object(let key): hasher.combine(2); hasher.combine(key)
        }
    }

    public var description: String {
        switch self {
        case .value(.string(let text)): String(reflecting: text)
        case .value(let value): "\(value)"
        case .object(let key): "\(key)"
        }
    }
}

/// What a save that breaks a uniqueness constraint reports: the constraint, the values
/// its objects share, and the objects (two or more; the one already stored first).
public struct UniquenessViolation: Sendable, Hashable, CustomStringConvertible {
    /// The constraint.
    public var constraint: UniquenessConstraint
    /// The values the objects share, one per constrained property.
    public var values: [UniqueField]
    /// The objects that share them.
    public var objects: [ObjectKey]

    /// Creates a report.
    public init(constraint: UniquenessConstraint, values: [UniqueField], objects: [ObjectKey]) {
        self.constraint = constraint
        self.values = values
        self.objects = objects
    }

    public var description: String {
        let shared = zip(constraint.properties, values).map { "\($0) = \($1)" }.joined(separator: ", ")
        return "uniqueness constraint \(constraint.name) is violated: \(objects.map(\.description).joined(separator: " and ")) both have \(shared)"
    }

    /// The error a store throws for it (``StoreError/Code/uniquenessViolated``).
    public func error(url: URL? = nil) -> StoreError {
        var error = StoreError(.uniquenessViolated, description, url: url)
        error.uniquenessViolation = self
        return error
    }
}

extension ChangeSet {
    /// Refuses a change set after which two objects would break a uniqueness constraint of
    /// the model (`EntityDescription/uniquenessConstraints`): two objects of the constraint's
    /// entity (or its sub-entities) with equal values (``UniqueField``) for all its properties.
    /// An object with no value for any of them is not constrained. Only objects the change set
    /// inserts, or updates in one of a constraint's properties, are checked, against each other
    /// and against the stored objects the change set neither deletes nor updates in them.
    ///
    /// Call it after ``checkShape(model:)``.
    /// - Parameters:
    ///   - model: the model whose constraints are checked.
    ///   - url: the store's location, for the error.
    ///   - stored: the stored values of the named properties of an existing object (nil in the
    ///     array for no value; nil for no such object).
    ///   - holders: the stored objects of the constraint's entity and its sub-entities whose
    ///     properties hold these values.
    /// - Throws: ``StoreError`` with ``StoreError/Code/uniquenessViolated`` and its
    ///   ``StoreError/uniquenessViolation``.
    public func checkUniqueness(model: ManagedObjectModel, url: URL? = nil,
                                stored: (ObjectKey, [String]) throws -> [UniqueField?]?,
                                holders: (UniquenessConstraint, [UniqueField]) throws -> [ObjectKey]) throws {
        var finals: [UniquenessConstraint: [(ObjectKey, [UniqueField])]] = [:]
        for record in inserted {
            guard let entity = model.entity(named: record.key.entity) else { continue }
            for constraint in entity.uniquenessConstraints {
                let fields = constraint.properties.map { name in record.attributes[name].map(UniqueField.value) ?? record.toOne[name].map(UniqueField.object) }
                if let values = complete(fields) { finals[constraint, default: []].append((record.key, values)) }
            }
        }
        // An object updated twice: the later change of a property wins.
        let deletedKeys = Set(deleted.map(\.key))
        var changes: [ObjectKey: [String: UniqueField?]] = [:]
        var order: [ObjectKey] = []
        for update in updated where !deletedKeys.contains(update.key) {
            if changes[update.key] == nil { order.append(update.key) }
            for (name, value) in update.attributes { changes[update.key, default: [:]][name] = .some(value.map(UniqueField.value)) }
            for (name, target) in update.toOne { changes[update.key, default: [:]][name] = .some(target.map(UniqueField.object)) }
        }
        for key in order {
            guard let entity = model.entity(named: key.entity), let changed = changes[key] else { continue }
            for constraint in entity.uniquenessConstraints where constraint.properties.contains(where: { changed[$0] != nil }) {
                let kept = constraint.properties.filter { changed[$0] == nil }
                guard let before = try kept.isEmpty ? [] : stored(key, kept) else { continue }
                let keptValues = Dictionary(uniqueKeysWithValues: zip(kept, before))
                let fields = constraint.properties.map { name in changed[name].map { $0 } ?? keptValues[name] ?? nil }
                if let values = complete(fields) { finals[constraint, default: []].append((key, values)) }
            }
        }
        for (constraint, objects) in finals.sorted(by: { $0.key.name < $1.key.name }) {
            var seen: [[UniqueField]: ObjectKey] = [:]
            for (key, values) in objects {
                if let other = seen.updateValue(key, forKey: values) {
                    throw UniquenessViolation(constraint: constraint, values: values, objects: [other, key]).error(url: url)
                }
            }
            // Stored objects that are deleted, or whose values this change set decides, do not count.
            let decided = Set(objects.map(\.0)).union(deletedKeys)
            for (key, values) in objects {
                if let other = try holders(constraint, values).first(where: { !decided.contains($0) }) {
                    throw UniquenessViolation(constraint: constraint, values: values, objects: [other, key]).error(url: url)
                }
            }
        }
    }

    private func complete(_ fields: [UniqueField?]) -> [UniqueField]? {
        let values = fields.compactMap { $0 }
        return values.count == fields.count ? values : nil
    }
}
