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
            _ = try shape(c.lhs, entity, model)
            let right = try shape(c.rhs, entity, model)
            switch c.op {
            case .in: break
            case .between:
                guard case .list(let bounds) = c.rhs, bounds.count == 2 else {
                    throw StoreError(.invalidFetch, "\(entity.name): BETWEEN needs a list of two values")
                }
            default:
                guard right == .single else { throw StoreError(.invalidFetch, "\(entity.name): \(c.op.rawValue) needs a single value on its right") }
                if c.op == .matches, case .constant(.string(let pattern)?) = c.rhs {
                    _ = try matches("", pattern: pattern, c.options)
                }
            }
        }
    }

    private enum Shape { case single, many }

    private static func shape(_ expression: PredicateExpression, _ entity: EntityDescription, _ model: ManagedObjectModel) throws -> Shape {
        switch expression {
        case .constant: return .single
        case .list(let items):
            for item in items where try shape(item, entity, model) != .single {
                throw StoreError(.invalidFetch, "\(entity.name): a list may not hold a to-many key path")
            }
            return .many
        case .keyPath(let path): return try shape(of: path, from: entity, model)
        }
    }

    /// What a key path yields, walked over the model as ``resolve(_:on:)`` walks objects.
    private static func shape(of path: String, from entity: EntityDescription, _ model: ManagedObjectModel) throws -> Shape {
        enum Walk { case object([EntityDescription]), objects([EntityDescription]), single, many }
        var current = Walk.object([entity])
        for key in path.split(separator: ".", omittingEmptySubsequences: false).map(String.init) {
            if key == "@count" {
                switch current {
                case .objects, .many: current = .single
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
            if kinds.contains(where: { $0.attributesByName[key] != nil }) {
                current = throughMany ? .many : .single
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
        case .object, .single: return .single
        case .objects, .many: return .many
        }
    }
}
