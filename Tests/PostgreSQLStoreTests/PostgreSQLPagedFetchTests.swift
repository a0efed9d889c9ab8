import Foundation
import ObjectModel
import ObjectStore
import PostgreSQLStore
import Testing
import TestSupport

/// Fetches answered by one SELECT (predicate, sort, offset and limit in SQL) give exactly what the
/// reference evaluator gives over every object: random values with the awkward ones (missing
/// values, NaN, ±0, infinities, equal keys), random predicates, sorts and windows.
@Suite("PostgreSQLStore: whole fetches in SQL")
struct PostgreSQLPagedFetchTests {
    static let model = try! ManagedObjectModel {
        Entity("Reading") {
            Attribute("n", .integer64)
            Attribute("x", .double)
            Attribute("at", .date)
            Attribute("ok", .boolean)
            Attribute("label", .string)
        }
        Entity("Alarm", parent: "Reading") { Attribute("level", .integer16) }
    }

    static func value(_ type: AttributeType, _ random: inout SeededGenerator) -> Value? {
        if Int.random(in: 0..<6, using: &random) == 0 { return nil }
        switch type {
        case .integer64, .integer16: return .integer(Int64.random(in: -3...3, using: &random))
        case .double:
            return .double([0.0, -0.0, 1.5, -2, .nan, .infinity, -.infinity, 3][Int.random(in: 0..<8, using: &random)])
        case .date: return .date(Date(timeIntervalSinceReferenceDate: [0, -1e9, 5e8, .nan, 1][Int.random(in: 0..<5, using: &random)]))
        case .boolean: return .boolean(Bool.random(using: &random))
        // Canonically equivalent spellings (é precomposed and decomposed, K and the Kelvin sign), which
        // compare as their bytes, case, and text that is no ASCII at all.
        default: return .string(["a", "B", "é", "e\u{301}", "", "K", "\u{212A}", "Zoë", "Zoe\u{308}", "日本"][Int.random(in: 0..<10, using: &random)])
        }
    }

    /// What the evaluator gives: every object of the request's kinds, filtered, sorted (ties by key), cut.
    static func expected(_ request: FetchRequest, in store: any PersistentStore) throws -> [ObjectKey] {
        var subjects: [StoreSubject] = []
        // Alarm is Reading's one sub-entity.
        for kind in request.entityName == "Reading" && request.includesSubentities ? ["Reading", "Alarm"] : [request.entityName] {
            for record in try store.scan(entity: kind, after: nil, limit: 10_000) {
                let subject = StoreSubject(record: record, store: store)
                if let predicate = request.predicate, try !PredicateEvaluator.evaluate(predicate, on: subject) { continue }
                subjects.append(subject)
            }
        }
        try PredicateEvaluator.sort(&subjects, by: request.sortDescriptors) { $0.record.key.primaryKey < $1.record.key.primaryKey }
        return subjects.dropFirst(request.fetchOffset).prefix(request.fetchLimit ?? .max).map(\.record.key)
    }

    @Test("300 random requests over 400 objects: the SQL answer is the evaluator's (strings compared and sorted too, by their bytes: two spellings of one letter differ), and the plan shows one SELECT with the window")
    func randomRequests() throws {
        let url = try PostgreSQLTestServer.location()
        defer { try? PostgreSQLStoreType().destroy(at: url) }
        let store = try PostgreSQLStoreType().open(at: url, model: Self.model, options: StoreOptions())
        defer { try? store.close() }
        var random = SeededGenerator(state: 23)
        var records: [ObjectRecord] = []
        for pk in 1...400 {
            let entity = pk % 5 == 0 ? "Alarm" : "Reading"
            var attributes: [String: Value] = [:]
            for (name, type) in [("n", AttributeType.integer64), ("x", .double), ("at", .date), ("ok", .boolean), ("label", .string)] {
                attributes[name] = Self.value(type, &random)
            }
            if entity == "Alarm" { attributes["level"] = Self.value(.integer16, &random) }
            records.append(ObjectRecord(key: ObjectKey(entity, Int64(pk)), attributes: attributes.compactMapValues { $0 }))
        }
        _ = try store.allocatePrimaryKeys(entity: "Reading", count: 400)
        try store.bulkInsert(records)
        let comparisons: [(String, [Comparison.Operator])] = [("n", [.equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual]),
                                                              ("ok", [.equal, .notEqual]), ("x", [.lessThan, .greaterThanOrEqual]),
                                                              ("at", [.greaterThan, .lessThanOrEqual]),
                                                              ("label", [.equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual])]
        func predicate(_ depth: Int) -> ObjectPredicate {
            switch Int.random(in: 0..<(depth > 1 ? 1 : 5), using: &random) {
            case 1: return .and([predicate(depth + 1), predicate(depth + 1)])
            case 2: return .or([predicate(depth + 1), predicate(depth + 1)])
            case 3: return .not(predicate(depth + 1))
            default:
                let (name, operators) = comparisons.randomElement(using: &random)!
                let type: AttributeType = name == "n" ? .integer64 : name == "ok" ? .boolean : name == "x" ? .double : name == "label" ? .string : .date
                var constant = Self.value(type, &random)
                // A NaN is no constant a predicate takes (the evaluator refuses it).
                if case .date(let d)? = constant, d.timeIntervalSinceReferenceDate.isNaN { constant = .date(Date(timeIntervalSinceReferenceDate: 7)) }
                if case .double(let v)? = constant, v.isNaN { constant = .double(0.5) }
                return .compare(name, operators.randomElement(using: &random)!, constant)
            }
        }
        var inSQL = 0
        for _ in 0..<300 {
            let sorts = (0..<Int.random(in: 0...2, using: &random)).map { _ in
                // Strings are compared here, and sorted by `sortedText`: the evaluator's sort of two spellings of one
                // text (equal to it, yet each ordered by its bytes against others) is no order SQL can give.
                ObjectSortDescriptor(["n", "x", "at", "ok"].randomElement(using: &random)!, ascending: Bool.random(using: &random))
            }
            let request = FetchRequest(entity: Bool.random(using: &random) ? "Reading" : "Alarm",
                                       predicate: Bool.random(using: &random) ? predicate(0) : nil, sortDescriptors: sorts,
                                       fetchLimit: Bool.random(using: &random) ? Int.random(in: 0...30, using: &random) : nil,
                                       fetchOffset: Int.random(in: 0...2, using: &random) * 7, includesSubentities: Bool.random(using: &random))
            let expected = try Self.expected(request, in: store)
            #expect(try store.fetch(request).map(\.key) == expected, "\(request)")
            #expect(try store.count(request) == expected.count, "\(request)")
            let plan = try (store as! PostgreSQLStore).queryPlan(request).joined(separator: "\n")
            if request.fetchLimit != nil && plan.contains("Limit") { inSQL += 1 }
        }
        #expect(inSQL > 50, "requests with a limit were answered in SQL: \(inSQL)")
    }

    @Test("strings sort in SQL by their bytes, as the evaluator sorts them, missing values first; a page of them is one SELECT")
    func sortedText() throws {
        let url = try PostgreSQLTestServer.location()
        defer { try? PostgreSQLStoreType().destroy(at: url) }
        let store = try PostgreSQLStoreType().open(at: url, model: Self.model, options: StoreOptions())
        defer { try? store.close() }
        let labels: [String?] = ["b", "B", "é", "Zoë", nil, "", "日本", "a", "e", "z", "É", "😀", "b"]
        _ = try store.allocatePrimaryKeys(entity: "Reading", count: labels.count)
        try store.bulkInsert(labels.enumerated().map { i, label in
            ObjectRecord(key: ObjectKey("Reading", Int64(i + 1)), attributes: label.map { ["label": .string($0)] } ?? [:])
        })
        for ascending in [true, false] {
            for limit in [nil, 5] {
                let request = FetchRequest(entity: "Reading", predicate: .compare("label", .greaterThanOrEqual, .string("B")),
                                           sortDescriptors: [ObjectSortDescriptor("label", ascending: ascending)], fetchLimit: limit)
                #expect(try store.fetch(request).map(\.key) == Self.expected(request, in: store))
                // The page is the server's: its plan has the LIMIT.
                if limit != nil { #expect(try (store as! PostgreSQLStore).queryPlan(request).joined(separator: "\n").contains("Limit")) }
                let whole = FetchRequest(entity: "Reading", sortDescriptors: [ObjectSortDescriptor("label", ascending: ascending)], fetchLimit: limit)
                #expect(try store.fetch(whole).map(\.key) == Self.expected(whole, in: store))
            }
        }
    }
}
