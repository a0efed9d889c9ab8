import Foundation
import ObjectModel
import ObjectStore
import Testing

@Suite("Predicate parser")
struct PredicateParserTests {
    @Test("every operator parses to its tree", arguments: [
        ("a == 1", ObjectPredicate.compare("a", .equal, .integer(1))),
        ("a = 1", .compare("a", .equal, .integer(1))),
        ("a != 'x'", .compare("a", .notEqual, .string("x"))),
        ("a <> \"x\"", .compare("a", .notEqual, .string("x"))),
        ("a < 1.5", .compare("a", .lessThan, .double(1.5))),
        ("a <= -2", .compare("a", .lessThanOrEqual, .integer(-2))),
        ("a =< 2", .compare("a", .lessThanOrEqual, .integer(2))),
        ("a > 2e3", .compare("a", .greaterThan, .double(2000))),
        ("a >= 2", .compare("a", .greaterThanOrEqual, .integer(2))),
        ("a => 2", .compare("a", .greaterThanOrEqual, .integer(2))),
        ("name BEGINSWITH 'a'", .compare("name", .beginsWith, .string("a"))),
        ("name beginswith[c] 'a'", .compare("name", .beginsWith, .string("a"), [.caseInsensitive])),
        ("name ENDSWITH[d] 'a'", .compare("name", .endsWith, .string("a"), [.diacriticInsensitive])),
        ("name CONTAINS[cd] 'a'", .compare("name", .contains, .string("a"), [.caseInsensitive, .diacriticInsensitive])),
        ("name LIKE 'a*'", .compare("name", .like, .string("a*"))),
        ("name MATCHES '[a-z]+'", .compare("name", .matches, .string("[a-z]+"))),
        ("flag == YES", .compare("flag", .equal, .boolean(true))),
        ("flag == false", .compare("flag", .equal, .boolean(false))),
        ("x == nil", .compare("x", .equal, nil)),
        ("x != NULL", .compare("x", .notEqual, nil)),
        ("owner.name == 'a'", .compare("owner.name", .equal, .string("a"))),
        ("pets.@count > 2", .compare("pets.@count", .greaterThan, .integer(2))),
        ("#in == 1", .compare("in", .equal, .integer(1))),
        ("TRUEPREDICATE", .constant(true)),
        ("FALSEPREDICATE", .constant(false)),
    ])
    func operators(_ format: String, _ expected: ObjectPredicate) throws {
        #expect(try ObjectPredicate(format) == expected)
    }

    @Test("IN, BETWEEN, quantifiers and compound predicates")
    func structure() throws {
        #expect(try ObjectPredicate("a IN {1, 2}") == .comparison(Comparison(.keyPath("a"), .in, .list([.constant(.integer(1)), .constant(.integer(2))]))))
        #expect(try ObjectPredicate("a BETWEEN {1, 5}") == .comparison(Comparison(.keyPath("a"), .between, .list([.constant(.integer(1)), .constant(.integer(5))]))))
        #expect(try ObjectPredicate("ANY pets.name == 'x'") == .comparison(Comparison(.keyPath("pets.name"), .equal, .constant(.string("x")), quantifier: .any)))
        #expect(try ObjectPredicate("SOME pets.name == 'x'") == .comparison(Comparison(.keyPath("pets.name"), .equal, .constant(.string("x")), quantifier: .any)))
        #expect(try ObjectPredicate("ALL pets.age > 1") == .comparison(Comparison(.keyPath("pets.age"), .greaterThan, .constant(.integer(1)), quantifier: .all)))
        #expect(try ObjectPredicate("NONE pets.age > 1") == .comparison(Comparison(.keyPath("pets.age"), .greaterThan, .constant(.integer(1)), quantifier: .none)))
        #expect(try ObjectPredicate("a NOT IN {1}") == .not(.comparison(Comparison(.keyPath("a"), .in, .list([.constant(.integer(1))])))))
        let a = ObjectPredicate.compare("a", .equal, .integer(1))
        let b = ObjectPredicate.compare("b", .equal, .integer(2))
        let c = ObjectPredicate.compare("c", .equal, .integer(3))
        #expect(try ObjectPredicate("a == 1 AND b == 2 OR c == 3") == .or([.and([a, b]), c]))
        #expect(try ObjectPredicate("a == 1 AND (b == 2 OR c == 3)") == .and([a, .or([b, c])]))
        #expect(try ObjectPredicate("a == 1 && b == 2 || c == 3") == .or([.and([a, b]), c]))
        #expect(try ObjectPredicate("NOT a == 1 AND !(b == 2)") == .and([.not(a), .not(b)]))
        #expect(try ObjectPredicate("name == 'say \\\"hi\\\"'") == .compare("name", .equal, .string("say \"hi\"")))
    }

    @Test("a predicate's description parses back to the same predicate", arguments: [
        "age > 30 AND name BEGINSWITH[c] \"a\"", "ANY pets.name IN {\"a\", \"b\"} OR NOT x == nil",
        "a BETWEEN {1, 2.5}", "ALL tags.label MATCHES[cd] \"[a-z]+\"", "TRUEPREDICATE", "flag == TRUE",
    ])
    func descriptionRoundTrip(_ format: String) throws {
        let predicate = try ObjectPredicate(format)
        #expect(try ObjectPredicate(predicate.description) == predicate)
    }

    @Test("errors give the column of the problem", arguments: [
        ("age >", 6, "expected a key path or a value"),
        ("age 30", 5, "expected a comparison operator"),
        ("name == 'open", 9, "unterminated string"),
        ("(age > 3", 9, "expected )"),
        ("age > 3 extra", 9, "after a complete predicate"),
        ("name ==[x] 'a'", 9, "unknown comparison option"),
        ("age BETWEEN 3", 5, "BETWEEN needs a list of two values"),
        ("age ~ 3", 5, "unexpected character"),
        ("AND age > 3", 1, "found keyword AND"),
        ("", 1, "expected a key path or a value"),
        ("a.b. == 1", 1, "not a key path"),
        ("age > 1 AND", 12, "expected a key path or a value"),
    ])
    func errors(_ format: String, _ column: Int, _ message: String) {
        do {
            _ = try ObjectPredicate(format)
            Issue.record("parsed: \(format)")
        } catch let error as PredicateSyntaxError {
            #expect(error.column == column, "\(format): \(error)")
            #expect(error.message.contains(message), "\(format): \(error)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("nesting is limited with a syntax error, never a stack overflow")
    func nesting() throws {
        let deep = String(repeating: "(", count: 450) + "a == 1" + String(repeating: ")", count: 450)
        #expect(throws: Never.self) { _ = try ObjectPredicate(deep) }
        for text in [String(repeating: "(", count: 35_000) + "a == 1" + String(repeating: ")", count: 35_000),
                     String(repeating: "NOT ", count: 35_000) + "a == 1", "a IN " + String(repeating: "{", count: 35_000)] {
            let error = try #require(throws: PredicateSyntaxError.self) { _ = try ObjectPredicate(text) }
            #expect("\(error)".contains("nests deeper than 500 levels"), "\(error)")
        }
    }
}
