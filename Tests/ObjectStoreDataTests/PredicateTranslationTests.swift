import Foundation
@testable import ObjectStoreData
import Testing

/// `#Predicate` fetches give what Swift itself says of every model, whether the store filters
/// (the predicate translated) or Swift does (what does not translate): the conformance check
/// compares both ways on every backend, sorted and windowed.
@Suite("Typed predicates: the same answers in the store as in Swift")
struct PredicateTranslationTests {
    /// Predicates over the test library: translated ones, partly translated ones, untranslatable
    /// ones (constants a predicate cannot name itself are captured, as SwiftData code does).
    static func predicates() -> [(String, Predicate<Book>)] {
        let poetry = Genre.poetry
        let past = Date.distantPast
        let year = Date(timeIntervalSince1970: 1.5e9)
        let titles = ["Ada 1", "Borges 3", "nope"]
        return [
            ("==", #Predicate { $0.title == "Zoë 2" }),
            ("!=", #Predicate { $0.pages != 164 }),
            ("<, >= together", #Predicate { $0.pages < 150 && $0.rating >= 1.5 }),
            ("||", #Predicate { $0.pages > 250 || $0.title.starts(with: "Ada") }),
            ("!", #Predicate { !($0.pages > 100) }),
            ("nil", #Predicate { $0.subtitle == nil }),
            ("not nil", #Predicate { $0.subtitle != nil && $0.isbn != nil }),
            ("contains", #Predicate { $0.title.contains("ł") }),
            ("localizedStandardContains", #Predicate { $0.title.localizedStandardContains("ZOE") || $0.title.localizedStandardContains("STANISŁ") }),
            ("enum", #Predicate { $0.genre == poetry }),
            ("IN", #Predicate { titles.contains($0.title) }),
            ("to-one path", #Predicate { $0.author?.name == "Ursula" }),
            ("to-one nil", #Predicate { $0.author == nil }),
            ("to-many count", #Predicate { $0.tags.count > 0 }),
            ("to-many any", #Predicate { $0.tags.contains { $0.label == "t1" } }),
            ("date through to-one", #Predicate { ($0.author?.born ?? past) > year }),
            ("half translated", #Predicate { $0.pages > 100 && $0.title.count > 8 }),
            ("not translated", #Predicate { $0.title.count == 6 }),
            ("arithmetic", #Predicate { $0.pages * 2 > 400 }),
            ("no match", #Predicate { $0.pages > 100_000 }),
        ]
    }

    static let sorts: [(String, [SortDescriptor<Book>])] = [
        ("none", []),
        ("pages down", [SortDescriptor(\.pages, order: .reverse)]),
        ("rating then title", [SortDescriptor(\.rating), SortDescriptor(\.title, order: .reverse)]),
    ]

    @Test("every predicate, sort and window: the store's answer is Swift's", arguments: TypedBackends.all)
    func sameAnswers(_ backend: String) throws {
        let place = try TypedBackends.Place()
        let container = try place.container(backend)
        let context = ModelContext(container)
        TypedConformanceTests.library(context)
        try context.save()
        let reader = ModelContext(container)
        let everything = try reader.fetch(FetchDescriptor<Book>())
        #expect(everything.count == 20)
        for (name, predicate) in Self.predicates() {
            for (sortName, sort) in Self.sorts {
                for (offset, limit) in [(0, nil), (2, 3)] as [(Int, Int?)] {
                    var descriptor = FetchDescriptor<Book>(predicate: predicate, sortBy: sort)
                    descriptor.fetchOffset = offset
                    descriptor.fetchLimit = limit
                    // Swift's own answer: every book, filtered, sorted (ties by insertion order), windowed.
                    var expected = try everything.filter { try predicate.evaluate($0) }
                    if !sort.isEmpty { expected.sort(using: sort) }
                    expected = Array(expected.dropFirst(offset).prefix(limit ?? Int.max))
                    let fetched = try reader.fetch(descriptor)
                    #expect(fetched.map(\.title) == expected.map(\.title), "\(backend): \(name), sorted by \(sortName), \(offset)/\(limit.map(String.init) ?? "-")")
                    if offset == 0 && limit == nil {
                        #expect(try reader.fetchCount(descriptor) == expected.count, "\(backend): \(name) count")
                    }
                }
            }
        }
    }

    @Test("what translates becomes the store's predicate, in the NSPredicate syntax it prints; what does not is left to Swift")
    func translations() throws {
        let expected: [String: String?] = [
            "==": #"title == "Zoë 2""#,
            "!=": "pages != 164",
            "<, >= together": "(pages < 150 AND rating >= 1.5)",
            "||": #"(pages > 250 OR title BEGINSWITH "Ada")"#,
            "!": "NOT pages > 100",
            "nil": "subtitle == nil",
            "contains": #"title CONTAINS "ł""#,
            "localizedStandardContains": #"(title CONTAINS[cd] "ZOE" OR title CONTAINS[cd] "STANISŁ")"#,
            "enum": #"genre == "poetry""#,
            "IN": #"title IN {"Ada 1", "Borges 3", "nope"}"#,
            "to-one path": #"author.name == "Ursula""#,
            "to-one nil": "author == nil",
            "to-many count": "tags.@count > 0",
            "to-many any": #"ANY tags.label == "t1""#,
            "not translated": nil,
            "arithmetic": nil,
        ]
        for (name, predicate) in Self.predicates() {
            guard let want = expected[name] else { continue }
            let (translated, complete) = PredicateTranslator.translate(predicate)
            if let want {
                #expect(complete && translated?.description == want, "\(name): \(translated?.description ?? "nil")")
            } else {
                #expect(!complete && translated == nil, "\(name)")
            }
        }
        // Half translated: the store narrows (pages > 100), Swift says the rest.
        let half = try #require(Self.predicates().first { $0.0 == "half translated" }?.1)
        let (narrowing, complete) = PredicateTranslator.translate(half)
        #expect(!complete && narrowing?.description == "pages > 100")
    }

    @Test("a predicate on an indexed attribute runs in SQLite on the index")
    func usesIndex() throws {
        let place = try TypedBackends.Place()
        let context = ModelContext(try place.container("sqlite"))
        TypedConformanceTests.library(context)
        try context.save()
        let plan = try context.queryPlan(FetchDescriptor<Book>(predicate: #Predicate { $0.pages == 164 }))
        #expect(plan.contains { $0.contains("USING INDEX") && $0.contains("pages") }, "\(plan)")
        #expect(try context.fetch(FetchDescriptor<Book>(predicate: #Predicate { $0.pages == 164 })).map(\.title) == ["Zoë 2"])
    }

    @Test("on PostgreSQL too, #Index makes an index the translated predicate's SELECT can use")
    func usesIndexOnPostgreSQL() throws {
        let place = try TypedBackends.Place()
        let context = ModelContext(try place.container("postgresql"))
        TypedConformanceTests.library(context)
        // Enough books that reading the table whole costs more than the index.
        for number in 0..<5_000 { context.insert(Book(title: "filler \(number)", pages: 1_000 + number)) }
        try context.save()
        let plan = try context.queryPlan(FetchDescriptor<Book>(predicate: #Predicate { $0.pages == 164 }))
        #expect(plan.contains { $0.contains("Index") && $0.contains("pages") }, "\(plan)")
        #expect(try context.fetch(FetchDescriptor<Book>(predicate: #Predicate { $0.pages == 164 })).map(\.title) == ["Zoë 2"])
    }
}
