import Foundation
import ObjectModel
import ObjectStore
import Testing

/// A plain object for evaluating predicates without a store.
struct Thing: PredicateSubject {
    var values: [String: Value] = [:]
    var one: [String: Thing] = [:]
    var many: [String: [Thing]] = [:]
    var keys: Set<String> = []
    var id = "thing"

    func resolve(_ key: String) -> ResolvedKey? {
        if let v = values[key] { return .value(v) }
        if let o = one[key] { return .object(o) }
        if let m = many[key] { return .objects(m) }
        return keys.contains(key) ? .value(nil) : nil
    }
    var identity: Value { .string(id) }
}

@Suite("Predicate semantics")
struct PredicateEvaluatorTests {
    static let subject = Thing(
        values: ["i": .integer(3), "d": .double(3.0), "dec": .decimal(Decimal(string: "3.00")!), "s": .string("Crème brûlée"),
                 "date": .date(Date(timeIntervalSinceReferenceDate: 100)), "uuid": .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!),
                 "flag": .boolean(true), "nan": .double(.nan), "path": .string("a*b?c")],
        one: ["owner": Thing(values: ["name": .string("Ada")], id: "owner")],
        many: ["pets": [Thing(values: ["name": .string("Rex"), "age": .integer(3)]), Thing(values: ["name": .string("Tom"), "age": .integer(5)])],
               "none": []],
        keys: ["missing", "nobody"])

    @Test("comparisons", arguments: [
        ("i == 3", true), ("i == 3.0", true), ("d == 3", true), ("dec == 3", true), ("dec < 3.5", true), ("i > 2.5", true),
        ("i IN {1, 3}", true), ("i IN {1, 2}", false), ("i BETWEEN {3, 4}", true), ("i BETWEEN {4, 5}", false),
        ("missing == nil", true), ("missing != nil", false), ("missing > 1", false), ("missing < 1", false), ("i == nil", false),
        ("s == 'crème brûlée'", false), ("s ==[c] 'crème brûlée'", true), ("s ==[cd] 'CREME BRULEE'", true),
        ("s BEGINSWITH 'Crè'", true), ("s ENDSWITH[d] 'brulee'", true), ("s CONTAINS 'me b'", true), ("s CONTAINS ''", true),
        ("s LIKE 'Cr*ée'", true), ("s LIKE 'Cr?me*'", true), ("s LIKE 'cr*'", false), ("s LIKE[c] 'cr*'", true),
        ("path LIKE 'a\\\\*b\\\\?c'", true), ("path LIKE 'a\\\\*bxc'", false),
        ("s MATCHES 'Cr.*'", true), ("s MATCHES 'r.*'", false), ("s MATCHES 'Crème'", false),
        ("s > 'A'", true), ("s < 'a'", true), ("s == 3", false), ("s > 3", false),
        ("date > '2001-01-01T00:00:00Z'", true), ("date == '2001-01-01T00:01:40Z'", true),
        ("uuid == 'E621E1F8-C36C-495A-93FC-0C247A3E6E5F'", true), ("flag == YES", true), ("flag == 1", false),
        ("nan == nan", false), ("nan > 0", false), ("nan < 0", false),
        ("owner.name == 'Ada'", true), ("nobody.name == nil", true), ("owner != nil", true), ("nobody == nil", true),
        ("pets.name == 'Tom'", true), ("ANY pets.age > 4", true), ("ALL pets.age > 4", false), ("ALL pets.age > 2", true),
        ("NONE pets.age > 5", true), ("pets.@count == 2", true), ("none.@count == 0", true), ("ALL none.age > 100", true),
        ("ANY none.age > 0", false), ("pets.name CONTAINS 'Rex'", true), ("'Tom' IN pets.name", true),
    ])
    func evaluate(_ format: String, _ expected: Bool) throws {
        #expect(try PredicateEvaluator.evaluate(ObjectPredicate(format), on: Self.subject) == expected, "\(format)")
    }

    @Test("unknown keys and misuse are errors, not false", arguments: [
        "nosuch == 1", "i.x == 1", "i.@count == 1", "pets.name BETWEEN 3", "s MATCHES '('",
    ])
    func errors(_ format: String) throws {
        let predicate: ObjectPredicate
        do { predicate = try ObjectPredicate(format) } catch { return }  // a syntax error is an error too
        #expect(throws: StoreError.self) { try PredicateEvaluator.evaluate(predicate, on: Self.subject) }
    }

    @Test("the sort order: nil first, numbers across types, strings by bytes")
    func ordering() {
        #expect(ValueOrdering.total(nil, .integer(1)) < 0)
        #expect(ValueOrdering.total(.integer(2), .double(2.5)) < 0)
        #expect(ValueOrdering.total(.decimal(10), .integer(9)) > 0)
        #expect(ValueOrdering.total(.string("Z"), .string("a")) < 0)
        #expect(ValueOrdering.total(.string("é"), .string("z")) > 0)
        #expect(ValueOrdering.total(.double(.nan), .double(-.infinity)) < 0)
        #expect(ValueOrdering.total(.data(Data([1])), .data(Data([1, 0]))) < 0)
    }
}
