import Foundation
import ObjectModel
import ObjectStore

/// Translates a Foundation `Predicate` over a model into the store's predicate, so that the
/// store filters (in SQL on SQLite and PostgreSQL, with their indexes).
///
/// What translates: key paths to persisted properties, through to-one relationships (`?.`
/// and `!` included) and to the count of a to-many; constants of attribute types (and enums by
/// raw value); `==`, `!=`, `<`, `<=`, `>`, `>=`; `&&`, `||`, `!`; `== nil`, `!= nil`;
/// `String.contains`, `starts(with:)`; `array.contains(value)` of a constant array (`IN`); a
/// to-many's `contains { $0.x op constant }` and `allSatisfy { … }` with one comparison;
/// `isEmpty` of a string. A conjunction translates the parts that do; everything else is left
/// to Swift: the predicate then runs on the models the store gives (``FetchPlan``).
struct PredicateTranslator {
    /// What an expression translates to.
    enum Term {
        /// A boolean condition.
        case condition(ObjectPredicate)
        /// A key path from the fetched model (`author.name`), and whether it crosses a to-many.
        case path(String, toMany: Bool)
        /// A constant.
        case constant(Value?)
        /// A list of constants.
        case list([Value?])
    }

    /// Key paths bound to each variable of the predicate (the root is `""`).
    var variables: [PredicateExpressions.VariableID: (path: String, toMany: Bool)] = [:]

    /// The store's predicate for `predicate`, and whether it says all of it (else it selects a
    /// superset, and the predicate runs in Swift on what it selects).
    static func translate<T: PersistentModel>(_ predicate: Predicate<T>) -> (ObjectPredicate?, complete: Bool) {
        var translator = PredicateTranslator()
        translator.variables[predicate.variable.key] = ("", false)
        guard let expression = predicate.expression as? any TranslatableExpression else { return (nil, false) }
        do {
            if case .condition(let condition) = try expression.translate(&translator) { return (condition, true) }
            return (nil, false)
        } catch let partial as PartialTranslation {
            return (partial.superset, false)
        } catch {
            return (nil, false)
        }
    }

    func term(_ expression: Any) throws -> Term {
        guard let translatable = expression as? any TranslatableExpression else { throw Untranslatable() }
        var copy = self
        return try translatable.translate(&copy)
    }

    func condition(_ expression: Any) throws -> ObjectPredicate {
        guard case .condition(let condition) = try term(expression) else { throw Untranslatable() }
        return condition
    }
}

/// An expression the store cannot evaluate.
struct Untranslatable: Error {}

/// A conjunction some of whose parts translate: what they say selects a superset.
struct PartialTranslation: Error {
    let superset: ObjectPredicate?
}

/// An expression of a `Predicate` the translator knows.
protocol TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term
}

/// A value as a constant of the store's predicates.
func storedConstant(_ value: Any) throws -> Value? {
    if let attribute = value as? any PersistentAttributeValue { return attribute.storedValue }
    if let raw = value as? any RawRepresentable, let stored = raw.rawValue as? any PersistentAttributeValue { return stored.storedValue }
    throw Untranslatable()
}

extension PredicateExpressions.Variable: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        guard let bound = translator.variables[key] else { throw Untranslatable() }
        return .path(bound.path, toMany: bound.toMany)
    }
}

/// Key paths of arrays to their count.
protocol CountableCollectionType {
    static var countKeyPath: AnyKeyPath { get }
}
extension Array: CountableCollectionType {
    static var countKeyPath: AnyKeyPath { \[Element].count }
}

extension PredicateExpressions.KeyPath: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        guard case .path(let prefix, let toMany) = try translator.term(root) else { throw Untranslatable() }
        // The model type the key path starts from (an optional one through `?.`).
        let base: Any.Type = (Root.Output.self as? any OptionalType.Type)?.wrappedType ?? Root.Output.self
        if let model = base as? any PersistentModel.Type {
            guard let name = model.propertyName(keyPath) else { throw Untranslatable() }
            let crossesToMany = model.isToMany(name)
            return .path(prefix.isEmpty ? name : prefix + "." + name, toMany: toMany || crossesToMany)
        }
        if let array = base as? any CountableCollectionType.Type, keyPath == array.countKeyPath, toMany {
            return .path(prefix + ".@count", toMany: false)
        }
        throw Untranslatable()
    }
}

/// An optional's wrapped type, seen through `Any.Type`.
protocol OptionalType {
    static var wrappedType: Any.Type { get }
}
extension Optional: OptionalType {
    static var wrappedType: Any.Type { Wrapped.self }
}

extension PredicateExpressions.Value: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        if let optional = value as? any OptionalValue, optional.isNil { return .constant(nil) }
        if let list = value as? any Sequence, !(value is String), !(value is Data) {
            return .list(try list.map { try storedConstant($0) })
        }
        return .constant(try storedConstant(value))
    }
}

/// Whether an optional held as `Any` is nil.
protocol OptionalValue {
    var isNil: Bool { get }
}
extension Optional: OptionalValue {
    var isNil: Bool { self == nil }
}

extension PredicateExpressions.NilLiteral: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term { .constant(nil) }
}

extension PredicateExpressions.ForcedUnwrap: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term { try translator.term(inner) }
}

extension PredicateExpressions.OptionalFlatMap: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        // `a?.b`: the key path on, with the variable standing for `a`. Only paths: a flatMap
        // whose result is a condition means something else for nil.
        guard case .path(let prefix, let toMany) = try translator.term(wrapped) else { throw Untranslatable() }
        var inner = translator
        inner.variables[variable.key] = (prefix, toMany)
        guard case .path(let path, let crosses) = try inner.term(transform) else { throw Untranslatable() }
        return .path(path, toMany: crosses)
    }
}

/// A comparison of two terms, one of them a key path.
func comparison(_ lhs: PredicateTranslator.Term, _ op: Comparison.Operator, _ rhs: PredicateTranslator.Term) throws -> ObjectPredicate {
    switch (lhs, rhs) {
    case (.path(let path, let toMany), .constant(let value)):
        // A to-many's values compared with a constant: true when any is (as Swift cannot write it otherwise).
        guard !toMany else { throw Untranslatable() }
        return .compare(path, op, value)
    case (.constant(let value), .path(let path, let toMany)):
        guard !toMany else { throw Untranslatable() }
        let flipped: Comparison.Operator = switch op {
        case .lessThan: .greaterThan
        case .lessThanOrEqual: .greaterThanOrEqual
        case .greaterThan: .lessThan
        case .greaterThanOrEqual: .lessThanOrEqual
        default: op
        }
        return .compare(path, flipped, value)
    default:
        throw Untranslatable()
    }
}

extension PredicateExpressions.Equal: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        .condition(try comparison(translator.term(lhs), .equal, translator.term(rhs)))
    }
}

extension PredicateExpressions.NotEqual: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        .condition(try comparison(translator.term(lhs), .notEqual, translator.term(rhs)))
    }
}

extension PredicateExpressions.Comparison: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        let operation: Comparison.Operator = switch op {
        case .lessThan: .lessThan
        case .lessThanOrEqual: .lessThanOrEqual
        case .greaterThan: .greaterThan
        case .greaterThanOrEqual: .greaterThanOrEqual
        @unknown default: throw Untranslatable()
        }
        let (left, right) = (try translator.term(lhs), try translator.term(rhs))
        // Swift orders strings by their scalars; the store by UTF-8 bytes: the same order.
        if case .constant(let value) = right, value == nil { throw Untranslatable() }
        if case .constant(let value) = left, value == nil { throw Untranslatable() }
        return .condition(try comparison(left, operation, right))
    }
}

extension PredicateExpressions.Conjunction: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        // Each side that translates narrows the store's selection; a side that does not is left to Swift.
        func side(_ expression: Any) -> (ObjectPredicate?, complete: Bool) {
            do {
                return (try translator.condition(expression), true)
            } catch let partial as PartialTranslation {
                return (partial.superset, false)
            } catch {
                return (nil, false)
            }
        }
        let (left, right) = (side(lhs), side(rhs))
        let parts = [left.0, right.0].compactMap { $0 }
        let combined: ObjectPredicate? = parts.isEmpty ? nil : parts.count == 1 ? parts[0] : .and(parts)
        guard left.complete && right.complete, let combined else { throw PartialTranslation(superset: combined) }
        return .condition(combined)
    }
}

extension PredicateExpressions.Disjunction: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        .condition(.or([try translator.condition(lhs), try translator.condition(rhs)]))
    }
}

extension PredicateExpressions.Negation: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        .condition(.not(try translator.condition(wrapped)))
    }
}

extension PredicateExpressions.CollectionContainsCollection: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        // `string.contains(other)`: only strings (a collection's contains(collection) is something else).
        guard Base.Output.self == String.self else { throw Untranslatable() }
        return .condition(try comparison(translator.term(base), .contains, translator.term(other)))
    }
}

extension PredicateExpressions.SequenceStartsWith: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        guard Base.Output.self == String.self else { throw Untranslatable() }
        return .condition(try comparison(translator.term(base), .beginsWith, translator.term(prefix)))
    }
}

extension PredicateExpressions.SequenceContains: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        // A constant list holding the property's value: IN.
        guard case .list(let values) = try translator.term(sequence), case .path(let path, false) = try translator.term(element) else {
            throw Untranslatable()
        }
        return .condition(.comparison(Comparison(.keyPath(path), .in, .list(values.map { .constant($0) }))))
    }
}

/// A quantified comparison over a to-many: `contains { $0.x op c }` (ANY) or `allSatisfy` (ALL).
func quantified(_ translator: PredicateTranslator, sequence: Any, variable: PredicateExpressions.VariableID, test: Any,
                _ quantifier: Comparison.Quantifier) throws -> PredicateTranslator.Term {
    guard case .path(let path, true) = try translator.term(sequence) else { throw Untranslatable() }
    var inner = translator
    inner.variables[variable] = (path, false)
    guard case .condition(.comparison(var single)) = try inner.term(test) else { throw Untranslatable() }
    single.quantifier = quantifier
    return .condition(.comparison(single))
}

extension PredicateExpressions.SequenceContainsWhere: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        try quantified(translator, sequence: sequence, variable: variable.key, test: test, .any)
    }
}

extension PredicateExpressions.SequenceAllSatisfy: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        try quantified(translator, sequence: sequence, variable: variable.key, test: test, .all)
    }
}

extension PersistentModel {
    /// Whether the persisted property `name` is a to-many relationship.
    static func isToMany(_ name: String) -> Bool {
        guard let property = _$properties.first(where: { $0.name == name }), case .relationship(_, let toMany, _) = property.kind else { return false }
        return toMany
    }
}

// MARK: Lookups by identity

/// The identifiers a predicate that only asks for models by identity names:
/// `$0.persistentModelID == id` (either way round) or `ids.contains($0.persistentModelID)`.
/// Such a fetch reads those models, not every model of the type (``FetchPlan``).
enum IdentityLookup {
    typealias Identity<T: PersistentModel> = PredicateExpressions.KeyPath<PredicateExpressions.Variable<T>, PersistentIdentifier>
    typealias Constant<C> = PredicateExpressions.Value<C>

    static func identifiers<T: PersistentModel>(_ predicate: Predicate<T>) -> [PersistentIdentifier]? {
        let expression = predicate.expression
        func isIdentity(_ keyPath: Identity<T>) -> Bool { keyPath.keyPath == \T.persistentModelID && keyPath.root.key == predicate.variable.key }
        if let equal = expression as? PredicateExpressions.Equal<Identity<T>, Constant<PersistentIdentifier>>, isIdentity(equal.lhs) {
            return [equal.rhs.value]
        }
        if let equal = expression as? PredicateExpressions.Equal<Constant<PersistentIdentifier>, Identity<T>>, isIdentity(equal.rhs) {
            return [equal.lhs.value]
        }
        if let contains = expression as? PredicateExpressions.SequenceContains<Constant<[PersistentIdentifier]>, Identity<T>>, isIdentity(contains.element) {
            return contains.sequence.value
        }
        if let contains = expression as? PredicateExpressions.SequenceContains<Constant<Set<PersistentIdentifier>>, Identity<T>>, isIdentity(contains.element) {
            return contains.sequence.value.sorted()
        }
        return nil
    }
}
