import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import SQLiteStore
import Testing
import TestSupport

/// The objects SQLite says may break an entity's rules are exactly those that do, as Swift's
/// validator finds them reading every object, and as counted by hand.
@Suite("SQLite narrows rule checks to the rows that may break them")
struct SQLiteRuleNarrowingTests {
    static let model = try! ManagedObjectModel {
        Entity("Item", abstract: true) {
            Attribute("name", .string, optional: false, validation: ValidationRules(minLength: 2, maxLength: 5))
        }
        Entity("Part", parent: "Item") {
            Attribute("count", .integer32, validation: ValidationRules(minValue: .integer(1), maxValue: .integer(9)))
            Attribute("weight", .double, validation: ValidationRules(minValue: .double(0.5)))
            Attribute("made", .date, validation: ValidationRules(maxValue: .date(Date(timeIntervalSinceReferenceDate: 1_000))))
            Attribute("blob", .binaryData, validation: ValidationRules(maxLength: 3))
            Attribute("free", .string)
            // A minimum of 1 and a maximum are told by the bytes alone.
            Attribute("label", .string, validation: ValidationRules(minLength: 1, maxLength: 2))
        }
        // A length that must be exact: six bytes may hold fewer characters, or more than SQLite counts.
        Entity("Book") {
            Attribute("isbn", .string, optional: false, validation: ValidationRules(minLength: 6, maxLength: 6))
        }
        Entity("Coded") {
            Attribute("code", .string, validation: ValidationRules(pattern: "[a-z]+"))
            // A quote in the pattern, an alternation, and a pattern only ICU matches (`\p{L}`).
            Attribute("quoted", .string, validation: ValidationRules(pattern: "it's|[0-9]{2,3}"))
            Attribute("letters", .string, validation: ValidationRules(maxLength: 3, pattern: "\\p{L}+"))
        }
    }

    @Test("exactly the rows that break a rule are given: lengths in characters (combining marks, CR LF), bounds, types")
    func narrowed() throws {
        let folder = try TemporaryFolder()
        let store = try SQLiteStoreType().open(at: folder.url.appending(path: "s.sqlite"), model: Self.model, options: StoreOptions())
        defer { try? store.close() }
        let names: [Value?] = [.string("ok"), .string("a"), .string("toolong"), nil, .string("e\u{301}"), .string("\r\n"), .string("ab\r\ncd"),
                               .string("héllo"), .string("日本"), .string("okay")]
        var records: [ObjectRecord] = []
        for (i, name) in names.enumerated() {
            var attributes: [String: Value] = ["free": .string("x\u{301}")]
            if let name { attributes["name"] = name }
            attributes["count"] = .integer([5, 0, 10, 1, 9][i % 5])
            attributes["weight"] = .double([0.5, 0.49, 7][i % 3])
            attributes["made"] = .date(Date(timeIntervalSinceReferenceDate: [999, 1_000, 1_000.5][i % 3]))
            attributes["blob"] = .data(Data(repeating: 1, count: [3, 4][i % 2]))
            let labels: [Value?] = [.string("a"), .string(""), .string("ab"), .string("abc"), .string("e\u{301}"), .string("日本"), nil, .string("日本語")]
            if let label = labels[i % labels.count] { attributes["label"] = label }
            records.append(ObjectRecord(key: ObjectKey("Part", Int64(i + 1)), attributes: attributes))
        }
        _ = try store.allocatePrimaryKeys(entity: "Item", count: records.count)
        try store.bulkInsert(records, checkingReferences: true)
        let entity = try #require(Self.model.entity(named: "Part"))
        let narrowing = try #require(store as? any RuleNarrowing)

        // The oracle: every object read and checked in Swift.
        let broken = Set(try store.fetch(FetchRequest(entity: "Part")).filter { record in
            entity.layout.attributes.contains { !ObjectValidator.check($0, record.attributes[$0.name]).isEmpty }
        }.map(\.key))
        var given: [ObjectKey] = []
        var after: Int64?
        while let page = try narrowing.objectsThatMayBreakRules(of: "Part", after: after, limit: 3), !page.isEmpty {
            given += page.map(\.key)
            after = page.last!.key.primaryKey
        }
        #expect(Set(given) == broken)
        #expect(given == given.sorted { $0.primaryKey < $1.primaryKey } && Set(given).count == given.count)
        #expect(broken.contains(ObjectKey("Part", 5)) && broken.contains(ObjectKey("Part", 6)), "one character each, below the minimum 2")
        #expect(!broken.isEmpty && broken.count < records.count)
        // A row that breaks nothing is not given, whatever its attributes without rules hold.
        #expect(!broken.contains(ObjectKey("Part", 1)) && !given.contains(ObjectKey("Part", 1)))
    }

    @Test("patterns are judged in SQL as the validator judges them: ASCII, other text, a quote, a NULL")
    func patterns() throws {
        let folder = try TemporaryFolder()
        let store = try SQLiteStoreType().open(at: folder.url.appending(path: "s.sqlite"), model: Self.model, options: StoreOptions())
        defer { try? store.close() }
        let rows: [(code: String?, quoted: String?, letters: String?)] = [
            ("abc", "it's", "abc"),          // 1: obeys every rule
            ("Abc", "12", "ab"),             // 2: code breaks
            ("", nil, nil),                  // 3: code breaks (empty)
            ("naïve", "1234", "é"),          // 4: code (ï), quoted (four digits) break
            (nil, "it''s", "日本語"),         // 5: quoted breaks (two quotes); letters obeys
            ("z", "its", "abcd"),            // 6: quoted, letters (length 4) break
            ("ab\0c", "99", "a1"),           // 7: code (NUL), letters (digit) break
            ("ok", "123", "ëx"),             // 8: obeys every rule
            ("ok", "123", "e\u{301}x"),      // 9: letters breaks (U+0301 is a mark, not a letter, to ICU)
        ]
        let records = rows.enumerated().map { i, row in
            var attributes: [String: Value] = [:]
            if let code = row.code { attributes["code"] = .string(code) }
            if let quoted = row.quoted { attributes["quoted"] = .string(quoted) }
            if let letters = row.letters { attributes["letters"] = .string(letters) }
            return ObjectRecord(key: ObjectKey("Coded", Int64(i + 1)), attributes: attributes)
        }
        _ = try store.allocatePrimaryKeys(entity: "Coded", count: records.count)
        try store.bulkInsert(records, checkingReferences: true)
        let entity = try #require(Self.model.entity(named: "Coded"))
        let broken = Set(records.filter { record in
            entity.layout.attributes.contains { !ObjectValidator.check($0, record.attributes[$0.name]).isEmpty }
        }.map(\.key.primaryKey))
        #expect(broken == [2, 3, 4, 5, 6, 7, 9], "by hand")
        let given = try #require(try (store as? any RuleNarrowing)?.objectsThatMayBreakRules(of: "Coded", after: nil, limit: 100)).map(\.key.primaryKey)
        #expect(given == [2, 3, 4, 5, 6, 7, 9])
    }

    @Test("an exact length: six bytes of fewer characters (not ASCII, CR LF, a combining mark) are given; six characters with NUL or a lone CR are not")
    func exactLength() throws {
        let folder = try TemporaryFolder()
        let store = try SQLiteStoreType().open(at: folder.url.appending(path: "s.sqlite"), model: Self.model, options: StoreOptions())
        defer { try? store.close() }
        let isbns = ["abcdef", "日本", "ab\r\ncd", "abc\0ef", "e\u{301}abc", "abcde", "abcdefg", "ab\rcde", "zyxwvu"]
        let records = isbns.enumerated().map { ObjectRecord(key: ObjectKey("Book", Int64($0.offset + 1)), attributes: ["isbn": .string($0.element)]) }
        _ = try store.allocatePrimaryKeys(entity: "Book", count: records.count)
        try store.bulkInsert(records, checkingReferences: true)
        let attribute = try #require(Self.model.entity(named: "Book")?.layout.attributes.first { $0.name == "isbn" })
        let broken = Set(records.filter { !ObjectValidator.check(attribute, $0.attributes["isbn"]).isEmpty }.map(\.key.primaryKey))
        #expect(broken == [2, 3, 5, 6, 7], "the oracle: 日本, CR LF, e + U+0301 + abc are too short in characters")
        let given = try #require(try (store as? any RuleNarrowing)?.objectsThatMayBreakRules(of: "Book", after: nil, limit: 100)).map(\.key.primaryKey)
        #expect(given == [2, 3, 5, 6, 7], "NUL (where SQLite's length stops) and a lone CR count as one character each")
    }
}

/// Relationship rules judged in SQL: exactly the objects the validator finds, reading every
/// object and its members, and as counted by hand.
@Suite("SQLite narrows relationship rules to the rows that break them")
struct SQLiteRelationshipNarrowingTests {
    static let model = try! ManagedObjectModel {
        Entity("Team") {
            Attribute("name", .string)
            // One-to-many (the members' foreign key): 1 to 3 players, at least one required.
            Relationship("players", to: "Player", inverse: "team", toMany: true, minCount: 1, maxCount: 3, optional: false)
            // Many-to-many (a join table): optional, but 2 at least when there are some, 3 at most.
            Relationship("sponsors", to: "Sponsor", inverse: "teams", toMany: true, minCount: 2, maxCount: 3)
        }
        Entity("Player") {
            Attribute("name", .string)
            Relationship("team", to: "Team", inverse: "players", optional: false)
        }
        Entity("Sponsor") {
            Attribute("name", .string)
            // A maximum alone: 3 teams at most.
            Relationship("teams", to: "Team", inverse: "sponsors", toMany: true, maxCount: 3)
        }
    }

    @Test("required, minimum and maximum counts through a foreign key and a join table, and a required to-one")
    func relationshipRules() throws {
        let folder = try TemporaryFolder()
        let store = try SQLiteStoreType().open(at: folder.url.appending(path: "s.sqlite"), model: Self.model, options: StoreOptions())
        // Players per team and sponsors per team, by team 1…6.
        let players = [1, 0, 3, 4, 2, 1]          // team 2 none (required), team 4 four (> 3)
        let sponsors = [0, 1, 2, 3, 4, 0]         // team 2 one (< 2 when some), team 5 four (> 3)
        _ = try store.allocatePrimaryKeys(entity: "Team", count: 6)
        _ = try store.allocatePrimaryKeys(entity: "Sponsor", count: 4)
        var records = (1...4).map { ObjectRecord(key: ObjectKey("Sponsor", Int64($0)), attributes: [:]) }
        var nextPlayer: Int64 = 1
        for team in 1...6 {
            let mine = (0..<players[team - 1]).map { _ -> ObjectKey in defer { nextPlayer += 1 }; return ObjectKey("Player", nextPlayer) }
            records.append(ObjectRecord(key: ObjectKey("Team", Int64(team)), attributes: [:], toMany: [
                "players": mine, "sponsors": (0..<sponsors[team - 1]).map { ObjectKey("Sponsor", Int64($0 + 1)) },
            ]))
            for player in mine { records.append(ObjectRecord(key: player, attributes: [:], toOne: ["team": ObjectKey("Team", Int64(team))])) }
        }
        // A player without a team breaks its required to-one.
        records.append(ObjectRecord(key: ObjectKey("Player", nextPlayer), attributes: [:]))
        _ = try store.allocatePrimaryKeys(entity: "Player", count: Int(nextPlayer))
        try store.save(ChangeSet(inserted: records))
        try store.close()
        // Sponsor 1 is in four teams (> 3); sponsor 2 in three, and named by a fourth join row whose
        // team does not exist, which the store does not read: still three.
        let url = folder.url.appending(path: "s.sqlite")
        let raw = try RawDatabase(url, readOnly: false)
        let join = try #require(try raw.strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z!_%' ESCAPE '!' AND name NOT IN ('Z_PRIMARYKEY', 'Z_METADATA', 'Z_MODELCACHE')").first?.first)
        let columns = try raw.columns(join)
        // Core Data names a join column for the relationship whose destination it holds: Team.sponsors holds sponsors.
        let sponsorColumn = try #require(columns.first { $0.hasSuffix("SPONSORS") }), teamColumn = try #require(columns.first { $0.hasSuffix("TEAMS") })
        try raw.execute("INSERT INTO \"\(join)\" (\"\(sponsorColumn)\", \"\(teamColumn)\") VALUES (2, 99)")
        raw.close()
        let reopened = try SQLiteStoreType().open(at: url, model: Self.model, options: StoreOptions())
        defer { try? reopened.close() }
        try check(reopened, nextPlayer: nextPlayer)
    }

    private func check(_ store: any PersistentStore, nextPlayer: Int64) throws {
        let narrowing = try #require(store as? any RuleNarrowing)
        #expect(narrowing.narrowsRelationshipRules)
        let expected: [(String, [Int64])] = [("Team", [2, 4, 5]), ("Player", [nextPlayer]), ("Sponsor", [1])]
        for (entity, byHand) in expected {
            let broken = try store.fetch(FetchRequest(entity: entity)).filter { try !ObjectValidator.failures(of: $0, in: store).isEmpty }.map(\.key.primaryKey)
            #expect(broken == byHand, "\(entity): the oracle")
            let given = try #require(try narrowing.objectsThatMayBreakRules(of: entity, after: nil, limit: 100)).map(\.key.primaryKey)
            #expect(given == broken, "\(entity)")
            let byRelationships = try #require(try narrowing.objectsThatMayBreakRelationshipRules(of: entity, after: nil, limit: 100)).map(\.key.primaryKey)
            #expect(byRelationships == broken, "\(entity), the relationship rules alone")
        }
    }
}

/// Aggregates over values SQLite holds in another form than it writes: answered from the objects.
@Suite("SQLite aggregates decline what SQL would count otherwise than the reader")
struct SQLiteAggregateDeclineTests {
    @Test("a string kept as a blob is one group with the same text; an Integer 16 out of range is refused, not summed")
    func declined() throws {
        let model = try ManagedObjectModel {
            Entity("Note") {
                Attribute("tag", .string)
                Attribute("n", .integer16)
            }
        }
        let folder = try TemporaryFolder()
        let url = folder.url.appending(path: "s.sqlite")
        let store = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions())
        _ = try store.allocatePrimaryKeys(entity: "Note", count: 2)
        try store.save(ChangeSet(inserted: (1...2).map { ObjectRecord(key: ObjectKey("Note", Int64($0)), attributes: ["tag": .string("abc"), "n": .integer(1)]) }))
        let request = AggregateRequest(entity: "Note", groupBy: ["tag"], expressions: [.count()])
        #expect(try store.aggregate(request) == [AggregateRow(group: ["tag": .string("abc")], values: ["count": .integer(2)])])
        try store.close()
        let raw = try RawDatabase(url, readOnly: false)
        try raw.execute("UPDATE ZNOTE SET ZTAG = CAST('abc' AS BLOB) WHERE Z_PK = 2")
        raw.close()
        let reopened = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions())
        #expect(try reopened.aggregate(request) == [AggregateRow(group: ["tag": .string("abc")], values: ["count": .integer(2)])], "the reader reads the blob as the text")
        try reopened.close()
        let again = try RawDatabase(url, readOnly: false)
        try again.execute("UPDATE ZNOTE SET ZN = 70000 WHERE Z_PK = 1")
        again.close()
        let damaged = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions())
        defer { try? damaged.close() }
        let error = try #require(throws: StoreError.self) { try damaged.aggregate(AggregateRequest(entity: "Note", expressions: [.sum("n")])) }
        #expect(error.code == .corrupt)
    }
}

/// Numbers are compared with their bounds as SQLite orders them, exactly: an integer against a
/// fractional bound or one beyond a double's precision, a double against an integer bound.
@Suite("SQLite narrows number bounds exactly")
struct SQLiteNumberBoundNarrowingTests {
    @Test("integers and doubles at, inside and beyond bounds of the other kind; a stored form the reader may refuse is given")
    func exactBounds() throws {
        let twoTo53 = Int64(1) << 53, twoTo60 = Int64(1) << 60
        let model = try ManagedObjectModel {
            Entity("Gauge") {
                Attribute("level", .integer64, validation: ValidationRules(minValue: .double(2.5), maxValue: .integer(twoTo60 + 100)))
                Attribute("ratio", .double, validation: ValidationRules(minValue: .integer(1), maxValue: .integer(twoTo53 + 1)))
            }
        }
        let folder = try TemporaryFolder()
        let url = folder.url.appending(path: "s.sqlite")
        // (level, ratio) as SQL literals, one row each: an integer in the Double column stays an integer.
        let rows: [(String, String)] = [("3", "1.0"), ("2", "1.0"), (String(twoTo60 + 100), "1.0"), (String(twoTo60 + 101), "1.0"),
                                        ("3", "0.9999999"), ("3", "9007199254740992.0"), ("3", String(twoTo53 + 1)), ("3", String(twoTo53 + 2)),
                                        ("3.5", "2"), ("'three'", "2"), ("3", "x'0102'"), ("NULL", "NULL")]
        try SQLiteStoreType().open(at: url, model: model, options: StoreOptions()).close()
        let raw = try RawDatabase(url, readOnly: false)
        let number = try #require(try raw.strings("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Gauge'").first?.first)
        for (key, (level, ratio)) in rows.enumerated() {
            try raw.execute("INSERT INTO ZGAUGE (Z_PK, Z_ENT, Z_OPT, ZLEVEL, ZRATIO) VALUES (\(key + 1), \(number), 1, \(level), \(ratio))")
        }
        raw.close()
        let store = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions())
        defer { try? store.close() }
        let narrowing = try #require(store as? any RuleNarrowing)
        // Rows 1–8 hold forms the reader takes: the first four given are all there are among them.
        let given = Set(try #require(try narrowing.objectsThatMayBreakRules(of: "Gauge", after: nil, limit: 4)).map(\.key.primaryKey))
        // The oracle: each row the reader takes, read and checked in Swift.
        let entity = try #require(model.entity(named: "Gauge"))
        let broken = Set((1...rows.count).compactMap { try? store.record(for: ObjectKey("Gauge", Int64($0))) }.filter { record in
            entity.layout.attributes.contains { !ObjectValidator.check($0, record.attributes[$0.name]).isEmpty }
        }.map(\.key.primaryKey))
        #expect(broken.isSubset(of: given), "every broken row is given: \(broken.sorted()) of \(given.sorted())")
        // 2 < 2.5, 2^60 + 101 above its maximum, 0.9999999 below 1, the integer 2^53 + 2 above 2^53 + 1.
        #expect(given.isSuperset(of: [2, 4, 5, 8]), "\(given.sorted())")
        // At or inside every bound, in the storage classes the reader takes as written: not given.
        #expect(given.isDisjoint(with: [1, 3, 6, 7]), "\(given.sorted())")
        // A fraction in the integer column, text in it, a blob in the double column: given, and the
        // reader refuses each; NULL where no value is required is not given.
        for key in Int64(9)...11 {
            let refused = try #require(throws: StoreError.self) { try narrowing.objectsThatMayBreakRules(of: "Gauge", after: key - 1, limit: 1) }
            #expect(refused.message.contains("row \(key)"), "\(refused.message)")
        }
        #expect(try narrowing.objectsThatMayBreakRules(of: "Gauge", after: 11, limit: 10)?.isEmpty == true)
    }
}

/// Decimal bounds narrowed in SQL: every value beyond a bound is given, as Swift's validator finds
/// it; values far inside are not; text SQLite holds for a decimal is given for the reader to judge.
@Suite("SQLite narrows decimal bounds")
struct SQLiteDecimalNarrowingTests {
    /// A new store at `url` holding one object of `entity` per value of `attribute`, keys 1, 2, …
    static func store(_ model: ManagedObjectModel, at url: URL, _ entity: String, _ attribute: String, _ values: [Decimal]) throws -> any PersistentStore {
        let store = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions())
        _ = try store.allocatePrimaryKeys(entity: entity, count: values.count + 1)
        try store.save(ChangeSet(inserted: values.enumerated().map { ObjectRecord(key: ObjectKey(entity, Int64($0 + 1)), attributes: [attribute: .decimal($1)]) }))
        return store
    }

    /// A decimal an integer holds is stored as one, and compared with the bound exactly: a bound
    /// above 2^53 rounded to its nearest double would let 2^60 + 50 pass a minimum of 2^60 + 100.
    @Test("integers beyond a double's precision below a minimum or above a maximum are given")
    func largeIntegers() throws {
        let big = Decimal(string: "1152921504606846976")!   // 2^60
        let model = try ManagedObjectModel {
            Entity("Ledger") {
                Attribute("total", .decimal, validation: ValidationRules(minValue: .decimal(big + 100), maxValue: .decimal(big + 200)))
            }
        }
        let folder = try TemporaryFolder()
        let store = try Self.store(model, at: folder.url.appending(path: "s.sqlite"), "Ledger", "total", [big + 50, big + 100, big + 150, big + 200, big + 250])
        defer { try? store.close() }
        let given = Set(try #require(try (store as? any RuleNarrowing)?.objectsThatMayBreakRules(of: "Ledger", after: nil, limit: 100)).map(\.key.primaryKey))
        #expect(given.isSuperset(of: [1, 5]), "2^60 + 50 and 2^60 + 250 are given: \(given.sorted())")
    }

    @Test("prices below 0 or above 100, a decimal too long for a double, and text in the column are given; 50 and 0.5 are not")
    func decimals() throws {
        let model = try ManagedObjectModel {
            Entity("Offer") {
                Attribute("price", .decimal, validation: ValidationRules(minValue: .decimal(Decimal(0)), maxValue: .decimal(Decimal(100))))
            }
        }
        let folder = try TemporaryFolder()
        let url = folder.url.appending(path: "s.sqlite")
        let prices = ["-0.01", "0", "0.5", "50", "100", "100.01", "12345678901234567890.123456789", "-1e-30"].map { Decimal(string: $0)! }
        let store = try Self.store(model, at: url, "Offer", "price", prices)
        let entity = try #require(model.entity(named: "Offer"))
        let readable = try (1...prices.count).compactMap { try store.record(for: ObjectKey("Offer", Int64($0))) }
        let broken = Set(readable.filter { !ObjectValidator.check(entity.attributesByName["price"]!, $0.attributes["price"]).isEmpty }.map(\.key.primaryKey))
        #expect(broken == [1, 6, 7, 8], "the oracle: below 0 or above 100")
        let narrowing = try #require(store as? any RuleNarrowing)
        let given = Set(try #require(try narrowing.objectsThatMayBreakRules(of: "Offer", after: nil, limit: 100)).map(\.key.primaryKey))
        #expect(broken.isSubset(of: given), "every broken price is given: \(given.sorted())")
        #expect(!given.contains(3) && !given.contains(4), "0.5 and 50 are not: \(given.sorted())")
        try store.close()
        // Text SQLite holds for a decimal is given too: reading it refuses it, naming the row.
        let raw = try RawDatabase(url, readOnly: false)
        try raw.execute("INSERT INTO ZOFFER (Z_PK, Z_ENT, Z_OPT, ZPRICE) SELECT \(prices.count + 1), Z_ENT, 1, 'cheap' FROM ZOFFER LIMIT 1")
        raw.close()
        let reopened = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions())
        defer { try? reopened.close() }
        let refused = try #require(throws: StoreError.self) { try (reopened as? any RuleNarrowing)?.objectsThatMayBreakRules(of: "Offer", after: 8, limit: 100) }
        #expect(refused.message.contains("row 9") && refused.message.contains("cheap"), "\(refused.message)")
    }
}
