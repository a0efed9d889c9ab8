import Foundation
import ObjectModel

extension PredicateEvaluator {
    /// Checks `predicate` against the model before any object is read: every key path names
    /// properties that exist (on `entity`, and across relationships on their destination or one
    /// of its sub-entities), `@count` follows a to-many, nothing follows an attribute, lists hold
    /// single values, `BETWEEN` has a list of two, the other operators a single value on their
    /// right, and a constant `MATCHES` pattern compiles. What evaluating would refuse at the
    /// first object it reaches is refused here at once, so a command fails before it writes.
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidFetch``, naming the entity.
    public static func check(_ predicate: ObjectPredicate, on entity: EntityDescription, in model: ManagedObjectModel) throws {
        switch predicate {
        case .constant: return
        case .and(let operands), .or(let operands): for operand in operands { try check(operand, on: entity, in: model) }
        case .not(let operand): try check(operand, on: entity, in: model)
        case .comparison(let c):
            let left = try shape(c.lhs, entity, model)
            let right = try shape(c.rhs, entity, model)
            try checkKinds(c, left.attribute ?? right.attribute, path: left.attribute != nil ? c.lhs : c.rhs, entity)
            switch c.op {
            case .in: break
            case .between:
                guard case .list(let bounds) = c.rhs, bounds.count == 2 else {
                    throw StoreError(.invalidFetch, "\(entity.name): BETWEEN needs a list of two values")
                }
            default:
                guard right.shape == .single else { throw StoreError(.invalidFetch, "\(entity.name): \(c.op.rawValue) needs a single value on its right") }
                if c.op == .matches, case .constant(.string(let pattern)?) = c.rhs {
                    _ = try matches("", pattern: pattern, c.options)
                }
            }
        }
    }

    /// A constant compared with an attribute must be of a kind the attribute's values compare
    /// with (a number with a number, a string with a string, a date or a string that reads as
    /// one with a date, ...): otherwise the comparison is false for every object, and a
    /// predicate such as `age == "3"` would quietly match nothing.
    private static func checkKinds(_ c: Comparison, _ attribute: Attribute?, path: PredicateExpression,
                                   _ entity: EntityDescription) throws {
        guard let attribute, let sample = sample(of: attribute.type) else { return }
        let constants: [Value]
        switch (c.op, c.lhs, c.rhs) {
        case (.equal, _, _), (.notEqual, _, _), (.lessThan, _, _), (.lessThanOrEqual, _, _), (.greaterThan, _, _), (.greaterThanOrEqual, _, _):
            guard case .keyPath = c.lhs, case .keyPath = c.rhs else {
                constants = [c.lhs, c.rhs].compactMap { if case .constant(let value?) = $0 { value } else { nil } }
                break
            }
            return
        case (.between, .keyPath, .list(let items)), (.in, .keyPath, .list(let items)):
            constants = items.compactMap { if case .constant(let value?) = $0 { value } else { nil } }
        default:
            return
        }
        for constant in constants where order(sample, constant) == nil {
            guard case .keyPath(let name) = path else { return }
            func article(_ word: String) -> String { "aeiouAEIOU".contains(word.first ?? "x") ? "an \(word)" : "a \(word)" }
            throw StoreError(.invalidFetch, "\(entity.name): \(name) is \(article(attribute.type.modelName)) attribute, "
                             + "and \(PredicateExpression.constant(constant).description) (\(article(constant.kindName))) never compares with its values"
                             + (attribute.type == .date ? " (a date is written as a string such as \"2024-05-01T12:00:00Z\")" : ""))
        }
    }

    /// A value of an attribute type, to ask ``order(_:_:_:)`` whether a constant compares with its values.
    private static func sample(of type: AttributeType) -> Value? {
        switch type {
        case .integer16, .integer32, .integer64: .integer(0)
        case .double, .float: .double(0)
        case .decimal: .decimal(0)
        case .string: .string("")
        case .boolean: .boolean(false)
        case .date: .date(Date(timeIntervalSinceReferenceDate: 0))
        case .binaryData: .data(Data())
        case .uuid: .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        case .uri: .uri(URL(filePath: "/"))
        case .undefined, .transformable, .objectID: nil
        }
    }

    private enum Shape { case single, many }

    /// What an expression yields, and the attribute it ends at (when the key path ends at one).
    private static func shape(_ expression: PredicateExpression, _ entity: EntityDescription,
                              _ model: ManagedObjectModel) throws -> (shape: Shape, attribute: Attribute?) {
        switch expression {
        case .constant: return (.single, nil)
        case .list(let items):
            for item in items where try shape(item, entity, model).shape != .single {
                throw StoreError(.invalidFetch, "\(entity.name): a list may not hold a to-many key path")
            }
            return (.many, nil)
        case .keyPath(let path): return try shape(of: path, from: entity, model)
        }
    }

    /// What a key path yields, walked over the model as ``resolve(_:on:)`` walks objects.
    private static func shape(of path: String, from entity: EntityDescription,
                              _ model: ManagedObjectModel) throws -> (shape: Shape, attribute: Attribute?) {
        enum Walk { case object([EntityDescription]), objects([EntityDescription]), single, many }
        var current = Walk.object([entity])
        var attribute: Attribute?
        for key in path.split(separator: ".", omittingEmptySubsequences: false).map(String.init) {
            if key == "@count" {
                switch current {
                case .objects, .many: current = .single; attribute = nil
                default: throw StoreError(.invalidFetch, "\(entity.name): \(path): @count needs a to-many before it")
                }
                continue
            }
            let (kinds, throughMany): ([EntityDescription], Bool)
            switch current {
            case .object(let entities): (kinds, throughMany) = (entities, false)
            case .objects(let entities): (kinds, throughMany) = (entities, true)
            case .single, .many: throw StoreError(.invalidFetch, "\(entity.name): \(path): \(key) follows an attribute")
            }
            let attributes = kinds.compactMap { $0.attributesByName[key] }
            if let first = attributes.first {
                current = throughMany ? .many : .single
                // Sub-entities may give one name different types: then no one type is checked.
                attribute = attributes.allSatisfy { $0.type == first.type } ? first : nil
            } else if let relationship = kinds.lazy.compactMap({ $0.relationshipsByName[key] }).first,
                      let destination = model.entity(named: relationship.destination) {
                // An object across a relationship may be of any sub-entity of its destination.
                let reachable = destination.kindNames.compactMap { model.entity(named: $0) }
                current = relationship.isToMany || throughMany ? .objects(reachable) : .object(reachable)
            } else {
                throw StoreError(.invalidFetch, "\(entity.name): \(path): unknown key \(key)")
            }
        }
        switch current {
        case .object: return (.single, nil)
        case .objects: return (.many, nil)
        case .single: return (.single, attribute)
        case .many: return (.many, attribute)
        }
    }
}
