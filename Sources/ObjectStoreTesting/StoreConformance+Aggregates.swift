import Foundation
import ObjectModel
import ObjectStore
import Testing

extension StoreConformance {
    /// Aggregate fetches: a store's answers (from SQL, say) equal those computed from its objects,
    /// over every attribute type, groups of awkward values and predicates; on a tree of entities,
    /// they equal answers counted by hand.
    func aggregates(_ scope: Scope) throws {
        let store = try scope.openStore()
        var items: [[String: Value]] = Self.extremeValues + [Self.sampleItem, [:]]
        let names: [Value?] = [.string("a"), .string("\u{E9}"), .string("e\u{301}"), nil, .string("b"), .string("")]
        for i in 0..<60 {
            var values: [String: Value] = ["i16": .integer(Int64(i % 7) - 3), "i32": .integer(Int64(i * 1_001 % 97)), "double": .double(Double(i) / 4)]
            if let name = names[i % names.count] { values["name"] = name }
            if i % 4 != 0 { values["flag"] = .boolean(i % 3 == 0) }
            if i % 5 != 0 { values["string"] = .string(["x", "Z", "é", "e\u{301}", "zz"][i % 5]) }
            if i % 2 == 0 { values["date"] = .date(Date(timeIntervalSinceReferenceDate: Double(i) * 86_400)) }
            items.append(values)
        }
        let first = try store.allocatePrimaryKeys(entity: "Item", count: items.count).lowerBound
        try store.save(ChangeSet(inserted: items.enumerated().map { ObjectRecord(key: ObjectKey("Item", first + Int64($0.offset)), attributes: $0.element) }))

        let every: [AggregateExpression] = [
            .count(), .count("double"), .count("data"), .count("payload"), .sum("i16"), .sum("i32"), .average("i32"), .sum("double"),
            .average("float"), .min("i16"), .max("i32"), .min("string"), .max("string"), .min("name"), .max("flag"),
            .min("date"), .max("date"), .min("decimal"), .max("uuid"), .min("double"), .max("float"),
        ]
        let requests: [AggregateRequest] = [
            AggregateRequest(entity: "Item", expressions: every),
            AggregateRequest(entity: "Item", groupBy: ["flag"], expressions: every),
            AggregateRequest(entity: "Item", groupBy: ["name"], expressions: [.count(), .sum("i16"), .max("string")]),
            AggregateRequest(entity: "Item", groupBy: ["name", "flag"], expressions: [.count(), .min("i32"), .average("i16")]),
            AggregateRequest(entity: "Item", groupBy: ["string"], expressions: []),
            AggregateRequest(entity: "Item", groupBy: ["date"], expressions: [.count()]),
            AggregateRequest(entity: "Item", predicate: try ObjectPredicate("i32 > 10 AND string != 'x'"), groupBy: ["flag"],
                             expressions: [.count(), .sum("i32"), .min("name")]),
            AggregateRequest(entity: "Item", predicate: try ObjectPredicate("name CONTAINS[cd] 'e'"), expressions: [.count(), .max("i16")]),
            AggregateRequest(entity: "Item", predicate: try ObjectPredicate("FALSEPREDICATE"), groupBy: ["flag"], expressions: [.count()]),
            AggregateRequest(entity: "Item", predicate: try ObjectPredicate("FALSEPREDICATE"), expressions: [.count(), .sum("i32"), .average("i32"), .min("string")]),
        ]
        for request in requests {
            let label = "group by \(request.groupBy), where \(request.predicate.map { "\($0)" } ?? "all")"
            let expected = try store.aggregateFromObjects(request)
            let answered = try store.aggregate(request)
            #expect(Self.sameRows(answered, expected), "\(label): \(answered) against \(expected)")
        }
        // Over no objects without groups: one row, counts and sums 0, no extremes or means.
        let none = try store.aggregate(requests[requests.count - 1])
        #expect(none.count == 1)
        #expect(none.first?.values["count"] == .integer(0) && none.first?.values["sum(i32)"] == .integer(0)
                && none.first?.values["average(i32)"] == nil && none.first?.values["min(string)"] == nil)
        // Two spellings of one letter are two groups, in byte order ("e" + U+0301 before "é").
        let mine: [Value?] = [nil, .string(""), .string("a"), .string("b"), .string("e\u{301}"), .string("\u{E9}")]
        let byName = try store.aggregate(requests[2]).map { $0.group["name"] }.filter { mine.contains($0) }
        #expect(byName.map { $0.map { Array("\($0)".utf8) } } == mine.map { $0.map { Array("\($0)".utf8) } })
        // A sum is exact whatever the order of its terms: Int64.max, then 1, then -1 is Int64.max.
        let wrap = try store.allocatePrimaryKeys(entity: "Item", count: 3).lowerBound
        try store.save(ChangeSet(inserted: [Int64.max, 1, -1].enumerated().map {
            ObjectRecord(key: ObjectKey("Item", wrap + Int64($0.offset)), attributes: ["name": .string("wrap"), "i64": .integer($0.element)])
        }))
        let wrapped = try store.aggregate(AggregateRequest(entity: "Item", predicate: .compare("name", .equal, .string("wrap")), expressions: [.sum("i64")]))
        #expect(wrapped.first?.values["sum(i64)"] == .integer(Int64.max))
        // A sum past 64 bits is an error, from SQL or not (the extremes hold Int64.max and min).
        #expect(throws: StoreError.self) { try store.aggregate(AggregateRequest(entity: "Item", predicate: try ObjectPredicate("i64 > 0"), expressions: [.sum("i64")])) }
        // Requests that mean nothing are refused.
        for bad in [AggregateRequest(entity: "Nope", expressions: [.count()]), AggregateRequest(entity: "Item", expressions: [.sum("string")]),
                    AggregateRequest(entity: "Item", groupBy: ["double"], expressions: [.count()]), AggregateRequest(entity: "Item", expressions: [.min("nope")]),
                    AggregateRequest(entity: "Item", expressions: [.count(), .count()]), AggregateRequest(entity: "Item", expressions: []),
                    AggregateRequest(entity: "Item", expressions: [AggregateExpression(.max, of: nil)])] {
            #expect(throws: StoreError.self, "\(bad)") { try store.aggregate(bad) }
        }
        try aggregatesOfATree(store)
    }

    /// A tree of entities, each object's wheels known: every answer counted by hand.
    private func aggregatesOfATree(_ store: any PersistentStore) throws {
        _ = try Self.saveVehicles(30, in: store) { $0 == 29 ? nil : .integer($0 % 3 == 2 ? 6 : 4) }
        // Cars: 10 of 4 wheels; sports cars: 10 of 4; trucks: 9 of 6 and one without.
        let byWheels = try store.aggregate(AggregateRequest(entity: "Vehicle", groupBy: ["wheels"], expressions: [.count(), .count("wheels", as: "known")]))
        #expect(byWheels == [AggregateRow(group: [:], values: ["count": .integer(1), "known": .integer(0)]),
                             AggregateRow(group: ["wheels": .integer(4)], values: ["count": .integer(20), "known": .integer(20)]),
                             AggregateRow(group: ["wheels": .integer(6)], values: ["count": .integer(9), "known": .integer(9)])])
        let cars = try store.aggregate(AggregateRequest(entity: "Car", expressions: [.sum("wheels"), .average("wheels"), .min("wheels"), .max("wheels")]))
        #expect(cars == [AggregateRow(group: [:], values: ["sum(wheels)": .integer(80), "average(wheels)": .double(4), "min(wheels)": .integer(4), "max(wheels)": .integer(4)])])
        let carsOnly = try store.aggregate(AggregateRequest(entity: "Car", includesSubentities: false, expressions: [.count()]))
        #expect(carsOnly == [AggregateRow(group: [:], values: ["count": .integer(10)])])
        let all = try store.aggregate(AggregateRequest(entity: "Vehicle", expressions: [.sum("wheels"), .average("wheels")]))
        #expect(all == [AggregateRow(group: [:], values: ["sum(wheels)": .integer(134), "average(wheels)": .double(134.0 / 29)])])
    }

    /// Rows equal value for value, of the same kind, NaN equal to NaN and strings byte for byte.
    static func sameRows(_ a: [AggregateRow], _ b: [AggregateRow]) -> Bool {
        func same(_ x: [String: Value], _ y: [String: Value]) -> Bool {
            x.keys.sorted() == y.keys.sorted() && x.allSatisfy { key, value in
                let other = y[key]!
                return value.kindName == other.kindName && ValueOrdering.total(value, other) == 0
            }
        }
        return a.count == b.count && zip(a, b).allSatisfy { same($0.group, $1.group) && same($0.values, $1.values) }
    }
}
