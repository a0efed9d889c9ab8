import Foundation
import ObjectModel

/// What an aggregate fetch computes over the values of one attribute (or over the objects).
public enum AggregateFunction: String, Sendable, Hashable, CaseIterable {
    /// How many objects (without an attribute), or how many have a value for the attribute.
    case count
    /// The sum of a numeric attribute's values: an integer for integer attributes, exact (an error
    /// only where the total leaves 64 bits, whatever the order of its terms), a double for
    /// floating-point ones; 0 over no values.
    case sum
    /// The smallest value, in the order sorting uses (``ValueOrdering/total(_:_:)``: strings by
    /// their UTF-8 bytes, NaN before other numbers); none over no values.
    case min
    /// The largest value; none over no values.
    case max
    /// The mean of a numeric attribute's values, a double; none over no values.
    case average
}

/// One value an aggregate fetch answers with: a function, its attribute, and the name the answer
/// carries it under.
///
/// ```swift
/// let request = AggregateRequest(entity: "Book", groupBy: ["genre"],
///                                expressions: [.count(), .sum("pages"), .average("rating", as: "mean")])
/// for row in try store.aggregate(request) { print(row.group["genre"], row.values["count"], row.values["mean"]) }
/// ```
public struct AggregateExpression: Sendable, Hashable {
    /// The function.
    public var function: AggregateFunction
    /// The attribute it reads; nil only with ``AggregateFunction/count``, to count objects.
    public var attribute: String?
    /// The key of its value in ``AggregateRow/values``.
    public var name: String

    /// An expression; `name` defaults to `count` for objects, else `function(attribute)` (`sum(pages)`).
    public init(_ function: AggregateFunction, of attribute: String?, as name: String? = nil) {
        self.function = function
        self.attribute = attribute
        self.name = name ?? attribute.map { "\(function.rawValue)(\($0))" } ?? function.rawValue
    }

    /// How many objects, or how many have a value for `attribute`.
    public static func count(_ attribute: String? = nil, as name: String? = nil) -> Self { Self(.count, of: attribute, as: name) }
    /// The sum of `attribute`'s values.
    public static func sum(_ attribute: String, as name: String? = nil) -> Self { Self(.sum, of: attribute, as: name) }
    /// The smallest of `attribute`'s values.
    public static func min(_ attribute: String, as name: String? = nil) -> Self { Self(.min, of: attribute, as: name) }
    /// The largest of `attribute`'s values.
    public static func max(_ attribute: String, as name: String? = nil) -> Self { Self(.max, of: attribute, as: name) }
    /// The mean of `attribute`'s values.
    public static func average(_ attribute: String, as name: String? = nil) -> Self { Self(.average, of: attribute, as: name) }
}

/// An aggregate fetch: the objects of an entity a predicate selects, put in groups by the values
/// of some attributes, and for each group the values of some expressions (Core Data's dictionary
/// fetch with `propertiesToGroupBy` and expression descriptions).
///
/// The answer has one row per group, in ascending order of the group's values (no value first,
/// strings by their UTF-8 bytes, so that two spellings of one letter are two groups); without
/// `groupBy`, exactly one row, also over no objects. Values are compared as predicates compare them.
public struct AggregateRequest: Sendable, Hashable {
    /// The entity.
    public var entityName: String
    /// The objects counted; nil for all.
    public var predicate: ObjectPredicate?
    /// Whether instances of sub-entities are included (the default).
    public var includesSubentities: Bool
    /// The attributes whose values make the groups (integers, booleans, strings, dates, UUIDs).
    public var groupBy: [String]
    /// What each row answers, under each expression's name (names must differ from one another).
    public var expressions: [AggregateExpression]

    /// Creates a request.
    public init(entity: String, predicate: ObjectPredicate? = nil, includesSubentities: Bool = true,
                groupBy: [String] = [], expressions: [AggregateExpression]) {
        self.entityName = entity
        self.predicate = predicate
        self.includesSubentities = includesSubentities
        self.groupBy = groupBy
        self.expressions = expressions
    }
}

/// One group of an aggregate fetch's answer.
public struct AggregateRow: Sendable, Hashable {
    /// The group's values by attribute; an attribute the group's objects have no value for is absent.
    public var group: [String: Value]
    /// Each expression's value by its name; absent where there is none (the minimum of no values).
    public var values: [String: Value]

    /// Creates a row.
    public init(group: [String: Value], values: [String: Value]) {
        self.group = group
        self.values = values
    }
}

/// A store that computes aggregate fetches where the data is (SQLite: one `SELECT … GROUP BY`).
/// ``PersistentStore/aggregate(_:)`` asks it first; when it declines, the objects are read and
/// the answer computed from them.
public protocol AggregateFetching: PersistentStore {
    /// The answer to a checked `request` (``AggregateRequest``'s semantics exactly), or nil when
    /// this store cannot compute it itself (a predicate it cannot translate, a type it keeps in a
    /// form of its own).
    func aggregateWhereStored(_ request: AggregateRequest) throws -> [AggregateRow]?
}

extension PersistentStore {
    /// The answer to an aggregate fetch: computed by the store where it can (``AggregateFetching``),
    /// else from the objects, read a batch at a time.
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidFetch`` for an unknown entity or
    ///   attribute, a function the attribute's type has no meaning for, two expressions of one
    ///   name, or an integer sum that leaves 64 bits.
    public func aggregate(_ request: AggregateRequest) throws -> [AggregateRow] {
        let plan = try AggregatePlan(request, model: model)
        if let store = self as? any AggregateFetching, let rows = try store.aggregateWhereStored(request) { return rows }
        return try aggregateFromObjects(plan)
    }

    /// The answer computed from the objects the request selects, read a batch at a time: the
    /// reference a store's own computation is held to.
    package func aggregateFromObjects(_ request: AggregateRequest) throws -> [AggregateRow] {
        try aggregateFromObjects(AggregatePlan(request, model: model))
    }

    private func aggregateFromObjects(_ plan: AggregatePlan) throws -> [AggregateRow] {
        let request = plan.request
        var accumulator = AggregateAccumulator(plan)
        let fetch = FetchRequest(entity: request.entityName, predicate: request.predicate, includesSubentities: request.includesSubentities)
        try fetchBatches(fetch, batchSize: 1_000) { try accumulator.add($0) }
        return try accumulator.rows()
    }
}

/// A checked aggregate request: its attributes, found in the model.
package struct AggregatePlan: Sendable {
    package let request: AggregateRequest
    /// The attribute of each `groupBy` name and each expression (nil: objects counted).
    package let groupAttributes: [Attribute]
    package let expressionAttributes: [Attribute?]

    package init(_ request: AggregateRequest, model: ManagedObjectModel) throws {
        guard let entity = model.entity(named: request.entityName) else {
            throw StoreError(.invalidFetch, "no entity named \(request.entityName)")
        }
        func attribute(_ name: String, for use: String) throws -> Attribute {
            guard let found = entity.layout.attributes.first(where: { $0.name == name }) else {
                throw StoreError(.invalidFetch, "\(entity.name) has no stored attribute \(name) to \(use)")
            }
            return found
        }
        groupAttributes = try request.groupBy.map { name in
            let found = try attribute(name, for: "group by")
            switch found.type {
            case .integer16, .integer32, .integer64, .boolean, .string, .date, .uuid: return found
            default: throw StoreError(.invalidFetch, "\(entity.name).\(name): cannot group by a \(found.type.modelName) attribute")
            }
        }
        guard Set(request.groupBy).count == request.groupBy.count else {
            throw StoreError(.invalidFetch, "\(entity.name): an attribute is named twice in groupBy")
        }
        guard !request.expressions.isEmpty || !request.groupBy.isEmpty else {
            throw StoreError(.invalidFetch, "\(entity.name): an aggregate fetch needs an expression or a group")
        }
        guard Set(request.expressions.map(\.name)).count == request.expressions.count else {
            throw StoreError(.invalidFetch, "\(entity.name): two aggregate expressions have one name")
        }
        expressionAttributes = try request.expressions.map { expression in
            guard let name = expression.attribute else {
                guard expression.function == .count else {
                    throw StoreError(.invalidFetch, "\(entity.name): \(expression.function.rawValue) needs an attribute")
                }
                return nil
            }
            let found = try attribute(name, for: expression.function.rawValue)
            let numeric: Set<AttributeType> = [.integer16, .integer32, .integer64, .double, .float]
            let ordered: Set<AttributeType> = numeric.union([.boolean, .string, .date, .decimal, .uuid])
            switch expression.function {
            case .count: break
            case .sum, .average:
                guard numeric.contains(found.type) else {
                    throw StoreError(.invalidFetch, "\(entity.name).\(name): cannot \(expression.function.rawValue) a \(found.type.modelName) attribute")
                }
            case .min, .max:
                guard ordered.contains(found.type) else {
                    throw StoreError(.invalidFetch, "\(entity.name).\(name): a \(found.type.modelName) attribute has no \(expression.function.rawValue)")
                }
            }
            return found
        }
        if let predicate = request.predicate { try PredicateEvaluator.check(predicate, on: entity, in: model) }
        self.request = request
    }

    /// Whether the attribute's values are integers (sums are exact).
    package static func isInteger(_ attribute: Attribute) -> Bool {
        [.integer16, .integer32, .integer64].contains(attribute.type)
    }
}

/// The reference computation of aggregate fetches: objects added a batch at a time, rows at the end.
package struct AggregateAccumulator {
    /// A group's values as they compare: strings by their bytes, dates with -0 as 0.
    private enum Part: Hashable {
        case none, integer(Int64), bytes([UInt8]), seconds(Double), notANumber, uuid(UUID), other(Value)

        init(_ value: Value?) {
            switch value {
            case nil: self = .none
            case .integer(let v)?: self = .integer(v)
            case .boolean(let v)?: self = .integer(v ? 1 : 0)
            case .string(let s)?: self = .bytes(Array(s.utf8))
            case .date(let d)?:
                let seconds = d.timeIntervalSinceReferenceDate
                self = seconds.isNaN ? .notANumber : .seconds(seconds + 0)
            case .uuid(let u)?: self = .uuid(u)
            case let value?: self = .other(value)
            }
        }
    }

    private struct State {
        var group: [Value?]
        var count: [Int]
        var integerSum: [Int64]
        /// How many times each integer sum wrapped past 2^63 upwards (less downwards): the exact sum
        /// is `integerSum + wraps × 2^64`, a value only when `wraps` is 0 at the end.
        var wraps: [Int]
        var doubleSum: [Double]
        var extreme: [Value?]
    }

    private let plan: AggregatePlan
    private var groups: [[Part]: State] = [:]

    package init(_ plan: AggregatePlan) { self.plan = plan }

    package mutating func add(_ batch: RecordBatch) throws {
        let layout = batch.layout
        let groupSlots = plan.groupAttributes.map { layout.attributeSlot($0.name) }
        let slots = plan.expressionAttributes.map { $0.flatMap { layout.attributeSlot($0.name) } }
        let expressions = plan.request.expressions
        for row in 0..<batch.count {
            let values = groupSlots.map { $0.flatMap { batch[row, attribute: $0] } }
            let key = values.map(Part.init)
            var state = groups[key] ?? State(group: values, count: Array(repeating: 0, count: expressions.count),
                                             integerSum: Array(repeating: 0, count: expressions.count),
                                             wraps: Array(repeating: 0, count: expressions.count),
                                             doubleSum: Array(repeating: 0, count: expressions.count),
                                             extreme: Array(repeating: nil, count: expressions.count))
            for (i, expression) in expressions.enumerated() {
                guard let attribute = plan.expressionAttributes[i] else {
                    state.count[i] += 1
                    continue
                }
                guard let slot = slots[i], let value = batch[row, attribute: slot] else { continue }
                state.count[i] += 1
                switch expression.function {
                case .count: break
                case .sum, .average:
                    if AggregatePlan.isInteger(attribute), case .integer(let v) = value {
                        let (sum, overflow) = state.integerSum[i].addingReportingOverflow(v)
                        if overflow { state.wraps[i] += v > 0 ? 1 : -1 }
                        state.integerSum[i] = sum
                    } else {
                        state.doubleSum[i] += value.numericValue ?? .nan
                    }
                case .min, .max:
                    if let current = state.extreme[i] {
                        let order = ValueOrdering.total(value, current)
                        if expression.function == .min ? order < 0 : order > 0 { state.extreme[i] = value }
                    } else {
                        state.extreme[i] = value
                    }
                }
            }
            groups[key] = state
        }
    }

    /// The rows, one per group in ascending order of the groups' values (one row without groups).
    package func rows() throws -> [AggregateRow] {
        var states = Array(groups.values)
        if plan.request.groupBy.isEmpty && states.isEmpty {
            let n = plan.request.expressions.count
            states = [State(group: [], count: Array(repeating: 0, count: n), integerSum: Array(repeating: 0, count: n),
                            wraps: Array(repeating: 0, count: n), doubleSum: Array(repeating: 0, count: n), extreme: Array(repeating: nil, count: n))]
        }
        states.sort { a, b in
            for (x, y) in zip(a.group, b.group) {
                let order = ValueOrdering.total(x, y)
                if order != 0 { return order < 0 }
            }
            return false
        }
        return try states.map { state in
            // A sum is exact, whatever the order of its terms: an error only where the total leaves 64 bits.
            for (i, attribute) in plan.expressionAttributes.enumerated() where state.wraps[i] != 0 {
                throw StoreError(.invalidFetch, "\(plan.request.entityName).\(attribute?.name ?? ""): the sum leaves 64 bits")
            }
            var group: [String: Value] = [:]
            for (attribute, value) in zip(plan.groupAttributes, state.group) { group[attribute.name] = value }
            var values: [String: Value] = [:]
            for (i, expression) in plan.request.expressions.enumerated() {
                let integer = plan.expressionAttributes[i].map(AggregatePlan.isInteger) ?? false
                switch expression.function {
                case .count: values[expression.name] = .integer(Int64(state.count[i]))
                case .sum: values[expression.name] = integer ? .integer(state.integerSum[i]) : .double(state.doubleSum[i])
                case .average:
                    guard state.count[i] > 0 else { continue }
                    let total = integer ? Double(state.integerSum[i]) : state.doubleSum[i]
                    values[expression.name] = .double(total / Double(state.count[i]))
                case .min, .max: values[expression.name] = state.extreme[i]
                }
            }
            return AggregateRow(group: group, values: values)
        }
    }
}
