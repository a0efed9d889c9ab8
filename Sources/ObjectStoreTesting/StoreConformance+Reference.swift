import Foundation
import ObjectModel
import ObjectStore
import Synchronization
import Testing

extension StoreConformance {
    /// Predicates over every attribute type, for comparing a backend's answers
    /// (which may come from SQL) with ``PredicateEvaluator``'s.
    public static let typedPredicates: [String] = [
        "i16 == -12", "i16 < 0", "i16 >= 32767", "i32 > 100000", "i32 <= -2147483648", "i64 >= 9000000000", "i64 != 9000000000",
        "i64 == 9223372036854775807", "i64 < -1", "i64 == 0", "decimal > 1000", "decimal < 0", "decimal == 0",
        "double < 4", "double > 0", "double == 3.141592653589793", "double != 2", "double BETWEEN {3, 4}", "double == nil",
        "float == 2.5", "float < 0", "string BEGINSWITH 'hé'", "string ENDSWITH 'ld'", "string CONTAINS 'wö'", "string == ''",
        "string BEGINSWITH ''", "string > 'a'", "string < 'Z'", "string CONTAINS[c] 'HÉ'", "string LIKE '*long*'",
        "string MATCHES '.*👩.*'", "flag == YES", "flag == NO", "flag != YES", "flag == nil", "date > '2020-01-01T00:00:00Z'",
        "date < '1900-01-01T00:00:00Z'", "data == nil", "data != nil", "uuid == 'E621E1F8-C36C-495A-93FC-0C247A3E6E5F'",
        "uri == 'https://example.com/a?b=c#d'", "name IN {'sample', 'max', 'nope'}", "name IN {}", "NOT name IN {'max'}",
        "i16 IN {-12, 32767}", "double IN {0.5, 3.141592653589793}", "(i64 > 0 AND flag == YES) OR string == ''",
        "NOT (double > 0)", "i32 BETWEEN {-5, 200000}", "payload != nil", "name == nil", "TRUEPREDICATE", "FALSEPREDICATE",
        "double == 0", "double == -0.0", "double < 0.5", "double >= 0", "float <= 0", "date == '2001-01-01T00:00:00Z'",
        "date < '2001-01-01T00:00:01Z'",
        // Negations (a missing value passes them), text by order and in part, and lists.
        "string != 'héllo wörld'", "NOT string BEGINSWITH 'hé'", "NOT string CONTAINS 'nul'", "string ENDSWITH ''",
        "string CONTAINS ''", "string BETWEEN {'a', 'm'}", "string >= 'Zo'", "string CONTAINS 'nul'", "string ENDSWITH 'nul'",
        "string BEGINSWITH 'Zo'", "NOT string < 'b'", "uuid != 'E621E1F8-C36C-495A-93FC-0C247A3E6E5F'", "double != 0",
        "NOT (double <= 3)", "double > -1 AND double < 1e308", "float IN {2.5, 0}", "NOT double IN {0, 2}", "double BETWEEN {-1, 0}",
        "i16 != -12", "NOT i64 IN {0, 9000000000}", "flag IN {YES}", "flag != nil AND NOT flag == NO", "i32 > 100000.5",
        "i64 BETWEEN {0, 9223372036854775807}", "NOT (i16 < 0 OR name == 'max')", "i64 == 9.223372036854776e18",
        "NOT i64 == 9.223372036854776e18", "i64 >= 9.2e18",
    ]

    /// Predicates whose constant is a value of the attribute's own type (not text to convert), so a
    /// backend that translates comparisons may run them itself.
    static let typedValuePredicates: [ObjectPredicate] = [
        .compare("date", .greaterThan, .date(Date(timeIntervalSinceReferenceDate: 6e8))),
        .compare("date", .lessThan, .date(Date(timeIntervalSinceReferenceDate: 1))),
        .compare("date", .equal, .date(Date(timeIntervalSinceReferenceDate: -0.0))),
        .compare("double", .lessThanOrEqual, .double(-0.0)),
        // One letter spelled two ways (composed, and "e" with a combining accent): equal only to itself.
        .compare("string", .equal, .string("\u{E9}")), .compare("string", .equal, .string("e\u{301}")),
        .compare("string", .lessThan, .string("z")), .compare("string", .greaterThanOrEqual, .string("e\u{301}")),
        .compare("date", .notEqual, .date(Date(timeIntervalSinceReferenceDate: 0))),
        .comparison(Comparison(.keyPath("date"), .between, .list([.constant(.date(Date(timeIntervalSinceReferenceDate: -1))),
                                                                   .constant(.date(Date(timeIntervalSinceReferenceDate: 7e8)))]))),
        .comparison(Comparison(.keyPath("date"), .in, .list([.constant(.date(Date(timeIntervalSinceReferenceDate: 0))),
                                                              .constant(.date(Date.distantFuture))]))),
        // Text holding U+0000 or U+FFFF, which a backend may store marked.
        .compare("string", .contains, .string("\u{0}nul")), .compare("string", .endsWith, .string("\u{0}nul")),
        .compare("string", .beginsWith, .string("Zo")), .compare("string", .endsWith, .string("rtl \u{0}nul")), .compare("string", .lessThan, .string("\u{FFFF}")),
        .compare("string", .equal, .string("Zoë 👩‍👩‍👧 ∑ 日本語 \u{202E}rtl \u{0}nul")),
    ]

    /// Sort keys over every sortable attribute type.
    public static let typedSorts: [[ObjectSortDescriptor]] = [
        [ObjectSortDescriptor("i64")], [ObjectSortDescriptor("i64", ascending: false)], [ObjectSortDescriptor("double")],
        [ObjectSortDescriptor("string")], [ObjectSortDescriptor("string", ascending: false)], [ObjectSortDescriptor("date")],
        [ObjectSortDescriptor("flag"), ObjectSortDescriptor("i16", ascending: false)], [ObjectSortDescriptor("uuid")],
        [ObjectSortDescriptor("data")], [ObjectSortDescriptor("decimal")], [ObjectSortDescriptor("name", ascending: false)],
    ]

    func referenceAnswers(_ scope: Scope) throws {
        // Signed zeros: equal to zero, and ordered with it, however a backend stores them.
        let zeros: [[String: Value]] = [
            ["name": .string("negative zero"), "double": .double(-0.0), "float": .double(-0.0), "date": .date(Date(timeIntervalSinceReferenceDate: -0.0))],
            ["name": .string("zero"), "double": .double(0), "float": .double(0), "date": .date(Date(timeIntervalSinceReferenceDate: 0))],
        ]
        let spellings: [[String: Value]] = [["name": .string("composed"), "string": .string("\u{E9}")], ["name": .string("combining"), "string": .string("e\u{301}")],
                                            ["name": .string("between"), "string": .string("z")], ["name": .string("composed again"), "string": .string("\u{E9}")]]
        let items = Self.extremeValues + zeros + spellings + [Self.sampleItem, [:], ["name": .string("other"), "double": .double(2), "flag": .boolean(true)]]
        let store = try scope.openStore()
        try checkReferenceAnswers(items, in: store)
        try pagesOfATree(store)
        // Again without text a backend may store marked (U+0000, U+FFFF): a backend that answers
        // text by order in SQL only where no row is marked (PostgreSQL) answers all of it here.
        let marked = { (value: Value) -> Bool in
            if case .string(let text) = value { text.unicodeScalars.contains { $0 == "\u{0}" || $0 == "\u{FFFF}" } } else { false }
        }
        let plain = items.filter { !$0.values.contains(where: marked) }
        #expect(plain.count < items.count && plain.count > items.count / 2)
        try checkReferenceAnswers(plain, in: try scope.openStore())
    }

    /// Saves one Item of each of `items` in `store`, then compares every typed predicate's fetch,
    /// count and scan of the matches, and every typed sort (whole, and a window), with the evaluator's.
    private func checkReferenceAnswers(_ items: [[String: Value]], in store: any PersistentStore) throws {
        var records: [ObjectRecord] = []
        for values in items {
            let key = ObjectKey("Item", try store.allocatePrimaryKeys(entity: "Item", count: 1).lowerBound)
            records.append(ObjectRecord(key: key, attributes: values))
        }
        try store.save(ChangeSet(inserted: records))
        let all = try store.fetch(FetchRequest(entity: "Item"))
        #expect(all.count == records.count)
        for (format, predicate) in try Self.typedPredicates.map({ ($0, try ObjectPredicate($0)) })
            + Self.typedValuePredicates.map({ ("\($0)", $0) }) {
            let expected = try all.filter { try PredicateEvaluator.evaluate(predicate, on: StoreSubject(record: $0, store: store)) }.map(\.key)
            #expect(try store.fetch(FetchRequest(entity: "Item", predicate: predicate)).map(\.key) == expected, "\(format)")
            #expect(try store.count(FetchRequest(entity: "Item", predicate: predicate)) == expected.count, "count \(format)")
            // A streaming scan of the matches, in batches small enough that some hold no match.
            var scanned: [ObjectKey] = []
            for batch in store.batches(of: "Item", matching: predicate, size: 2) { scanned += try batch.get().map(\.key) }
            #expect(scanned == expected.filter { $0.entity == "Item" }.sorted(), "scan \(format)")
        }
        for sort in Self.typedSorts {
            var subjects = all.map { StoreSubject(record: $0, store: store) }
            try PredicateEvaluator.sort(&subjects, by: sort) { $0.record.key.primaryKey < $1.record.key.primaryKey }
            let label = sort.map { "\($0.keyPath) \($0.ascending ? "asc" : "desc")" }.joined(separator: ", ")
            #expect(try store.fetch(FetchRequest(entity: "Item", sortDescriptors: sort)).map(\.key) == subjects.map(\.record.key), "\(label)")
            let window = try store.fetch(FetchRequest(entity: "Item", sortDescriptors: sort, fetchLimit: 3, fetchOffset: 2)).map(\.key)
            #expect(window == Array(subjects.map(\.record.key).dropFirst(2).prefix(3)), "window \(label)")
        }
    }

    /// Saves `count` vehicles, cars, sports cars and trucks in turn, the `i`th with `wheels(i)` wheels.
    static func saveVehicles(_ count: Int, in store: any PersistentStore, wheels: (Int) -> Value?) throws -> [ObjectRecord] {
        var vehicles: [ObjectRecord] = []
        for i in 0..<count {
            let entity = ["Car", "SportsCar", "Truck"][i % 3]
            let key = ObjectKey(entity, try store.allocatePrimaryKeys(entity: entity, count: 1).lowerBound)
            vehicles.append(ObjectRecord(key: key, attributes: wheels(i).map { ["wheels": $0] } ?? [:]))
        }
        try store.save(ChangeSet(inserted: vehicles))
        return vehicles
    }

    /// Pages of an entity tree (three kinds) many times larger than a page, with and without a
    /// predicate and sort keys, against the objects saved, filtered and sorted by the evaluator:
    /// more matches than a row store keeps at once for a page (1,024), so it cuts as it goes.
    private func pagesOfATree(_ store: any PersistentStore) throws {
        let vehicles = try Self.saveVehicles(1_500, in: store) { .integer(Int64($0 * 7 % 5)) }
        let requests: [(ObjectPredicate?, [ObjectSortDescriptor])] = [
            (nil, []), (.compare("wheels", .greaterThan, .integer(1)), []), (nil, [ObjectSortDescriptor("wheels")]),
            (.compare("wheels", .notEqual, .integer(3)), [ObjectSortDescriptor("wheels", ascending: false)]),
        ]
        for (predicate, sort) in requests {
            var subjects = try vehicles.map { StoreSubject(record: $0, store: store) }.filter { subject in
                try predicate.map { try PredicateEvaluator.evaluate($0, on: subject) } ?? true
            }
            try PredicateEvaluator.sort(&subjects, by: sort) { $0.record.key.primaryKey < $1.record.key.primaryKey }
            let expected = subjects.map(\.record.key)
            for (offset, limit) in [(0, 1), (0, 20), (5, 40), (100, 50), (590, 100), (1_499, 5), (0, 0), (0, 2_000), (0, Int.max), (Int.max, 1), (3, Int.max - 1)] {
                let page = try store.fetch(FetchRequest(entity: "Vehicle", predicate: predicate, sortDescriptors: sort,
                                                        fetchLimit: limit, fetchOffset: offset)).map(\.key)
                #expect(page == Array(expected.dropFirst(offset).prefix(limit)), "\(String(describing: predicate)) \(sort) \(offset)+\(limit)")
            }
        }
    }
}

extension StoreConformance {
    /// Stores are `Sendable`: several threads saving and reading at once lose nothing and see consistent data.
    func concurrentUse(_ scope: Scope) throws {
        let store = try scope.openStore()
        let threads = 4, saves = 25
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            do {
                for i in 0..<saves {
                    let keys = try store.allocatePrimaryKeys(entity: "Pet", count: 2)
                    try store.save(ChangeSet(inserted: keys.map {
                        ObjectRecord(key: ObjectKey("Pet", $0), attributes: ["name": .string("t\(thread) s\(i)")])
                    }))
                    let seen = try store.count(FetchRequest(entity: "Pet"))
                    if seen % 2 != 0 { failures.withLock { $0.append("a save was seen half done: \(seen) pets") } }
                    _ = try store.fetch(FetchRequest(entity: "Pet", predicate: .compare("name", .beginsWith, .string("t\(thread)"))))
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let all = try store.fetch(FetchRequest(entity: "Pet"))
        #expect(all.count == threads * saves * 2)
        #expect(Set(all.map(\.key.primaryKey)).count == all.count, "no key handed out twice")
    }
}
