import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import Testing
import TestSupport

/// In-place steps beyond added and renamed attributes: attributes, relationships and entities
/// removed, added and renamed, checked against SQLite's own view of the file and against the
/// same step done as a copy.
@Suite("In-place SQLite migration: tables and columns added, dropped and renamed")
struct InPlaceSchemaTests {
    /// v1 → v2: Customer.nickname removed, Customer gains an optional favourite Product and a
    /// many-to-many with a new entity Tag; Order renamed Purchase; Legacy removed with its
    /// relationship from Customer; Book.title removed while its sibling Film keeps its title
    /// (the two shared a table: Film's column moves from ZTITLE1 to ZTITLE); a fetch index added.
    static func model(_ version: Int) -> ManagedObjectModel {
        do {
            return try ManagedObjectModel(versionIdentifiers: ["s\(version)"]) {
                Entity("Customer", indexes: version == 2 ? [FetchIndex(name: "byName", elements: [.init("name")])] : []) {
                    Attribute("name", .string)
                    if version == 1 { Attribute("nickname", .string) }
                    Relationship("orders", to: version == 1 ? "Order" : "Purchase", inverse: "customer", toMany: true)
                    if version == 1 { Relationship("legacy", to: "Legacy", inverse: "owner") }
                    if version == 2 {
                        Relationship("favorite", to: "Product")
                        Relationship("tags", to: "Tag", inverse: "tagged", toMany: true)
                    }
                }
                Entity(version == 1 ? "Order" : "Purchase", renamingIdentifier: version == 2 ? "Order" : nil) {
                    Attribute("total", .double)
                    Relationship("customer", to: "Customer", inverse: "orders")
                }
                if version == 1 {
                    Entity("Legacy") {
                        Attribute("code", .string)
                        Relationship("owner", to: "Customer", inverse: "legacy")
                    }
                }
                Entity("Thing") { Attribute("shelf", .integer32) }
                Entity("Book", parent: "Thing") { if version == 1 { Attribute("title", .string) } }
                Entity("Film", parent: "Thing") { Attribute("title", .string) }
                if version == 2 {
                    Entity("Product") { Attribute("sku", .string) }
                    Entity("Tag") {
                        Attribute("label", .string)
                        Relationship("tagged", to: "Customer", inverse: "tags", toMany: true)
                    }
                }
            }
        } catch {
            preconditionFailure("\(error)")
        }
    }

    static let versions = try! ModelVersions(versions: [1, 2].map { ModelVersions.Version(name: "s\($0)", model: model($0)) })

    static let data = """
        {"Customer": [{"_id": "c1", "name": "Ann", "nickname": "A", "legacy": "l1"}, {"_id": "c2", "name": "Bob", "nickname": "B"}],
         "Order": [{"_id": "o1", "total": 9.5, "customer": "c1"}, {"_id": "o2", "total": 2.25, "customer": "c1"}, {"_id": "o3", "total": 1, "customer": "c2"}],
         "Legacy": [{"_id": "l1", "code": "x"}],
         "Thing": [{"_id": "t1", "shelf": 1}],
         "Book": [{"_id": "b1", "shelf": 2, "title": "Emma"}],
         "Film": [{"_id": "f1", "shelf": 3, "title": "Heat"}, {"_id": "f2", "shelf": 4}]}
        """

    @Test("every change of the step is DDL on the file itself; SQLite's own rows and schema show it, and reading it gives what a copy gives")
    func tablesAndColumns() throws {
        let sqlite = Backends.type("sqlite")
        #expect((sqlite as! any SchemaChanging).schemaChangeBlockers(from: Self.model(1), to: Self.model(2)) == [])
        let workspace = try Workspace()
        let url = workspace.location("shop", "sqlite"), copied = workspace.location("copied", "sqlite")
        try makeStore("sqlite", at: url, model: Self.model(1), json: Self.data)
        let raw = try RawDatabase(url, readOnly: true)
        let filmNumber = try raw.strings("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Film'")[0][0]
        #expect(try raw.strings("SELECT coalesce(ZTITLE1, 'null') FROM ZTHING WHERE Z_ENT = \(filmNumber) ORDER BY Z_PK").map { $0[0] } == ["Heat", "null"],
                "Film's title begins in the second title column")
        raw.close()
        // The oracle the step must agree with: the same source moved by a copy with the inferred mapping.
        let mapping = try MappingInference.inferredMapping(from: Self.model(1), to: Self.model(2))
        try MigrationManager(sourceModel: Self.model(1), destinationModel: Self.model(2), mapping: mapping)
            .migrateStore(at: url, type: sqlite, to: copied, type: sqlite)

        let before = try #require(FileOperations.identity(url))
        // The step drops what model 2 no longer has: refused, the file untouched, unless allowed.
        let drops = "drops entity Legacy (1 object), Book.title (1 value), Customer.nickname (2 values), Customer.legacy (1 link)"
        let refused = try #require(throws: MigrationError.self) { try StoreMigrator(versions: Self.versions).migrateStore(at: url, type: sqlite) }
        #expect(refused.code == .dataLoss && refused.message.contains("s1 -> s2 " + drops), "\(refused)")
        let migrator = StoreMigrator(versions: Self.versions, allowsDataLoss: true)
        #expect(try migrator.plan(forStoreAt: url, type: sqlite).steps.map(\.description) == ["s1 -> s2: in-place; " + drops])
        try migrator.migrateStore(at: url, type: sqlite)
        #expect(FileOperations.identity(url) == before, "the same file, changed in place")

        let rows = try RawDatabase(url, readOnly: true)
        defer { rows.close() }
        func columns(_ table: String) throws -> Set<String> { Set(try rows.strings("SELECT name FROM pragma_table_info('\(table)')").map { $0[0] }) }
        let tables = Set(try rows.strings("SELECT name FROM sqlite_master WHERE type = 'table'").map { $0[0] })
        #expect(!tables.contains("ZORDER") && !tables.contains("ZLEGACY") && tables.isSuperset(of: ["ZPURCHASE", "ZPRODUCT", "ZTAG"]))
        #expect(tables.contains { $0.hasPrefix("Z_") && $0.hasSuffix("TAGS") || $0.hasSuffix("TAGGED") }, "the join table: \(tables)")
        #expect(try columns("ZCUSTOMER") == ["Z_PK", "Z_ENT", "Z_OPT", "ZNAME", "ZFAVORITE"])
        #expect(try columns("ZTHING") == ["Z_PK", "Z_ENT", "Z_OPT", "ZSHELF", "ZTITLE"])
        #expect(try rows.strings("SELECT coalesce(ZTITLE, 'null') FROM ZTHING WHERE Z_ENT = \(filmNumber) ORDER BY Z_PK").map { $0[0] } == ["Heat", "null"],
                "Film's titles moved into the one title column left")
        #expect(try rows.strings("SELECT ZTOTAL || '@' || ZCUSTOMER FROM ZPURCHASE ORDER BY Z_PK").map { $0[0] } == ["9.5@1", "2.25@1", "1.0@2"])
        #expect(try rows.strings("SELECT Z_NAME FROM Z_PRIMARYKEY ORDER BY Z_NAME").map { $0[0] }
                == ["Book", "Customer", "Film", "Product", "Purchase", "Tag", "Thing"])
        #expect(try rows.strings("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'Z_Customer_byName'") == [["1"]])

        let inPlace = try export("sqlite", at: url, model: Self.model(2)), copy = try export("sqlite", at: copied, model: Self.model(2))
        #expect(try JSONSerialization.jsonObject(with: Data(inPlace.utf8)) as? NSDictionary == JSONSerialization.jsonObject(with: Data(copy.utf8)) as? NSDictionary)
        #expect(inPlace.contains("\"Heat\"") && !inPlace.contains("Emma") && !inPlace.contains("nickname"))

        // The new tables take objects and relationships, both sides.
        let store = try sqlite.open(at: url, model: Self.model(2), options: StoreOptions())
        defer { try? store.close() }
        let tag = ObjectKey("Tag", try store.allocatePrimaryKeys(entity: "Tag", count: 1).lowerBound)
        let ann = try #require(try store.fetch(FetchRequest(entity: "Customer", predicate: try ObjectPredicate("name == 'Ann'"))).first?.key)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: tag, attributes: ["label": .string("vip")], toMany: ["tagged": [ann]])]))
        #expect(try store.relatedKeys(of: ann, relationship: "tags") == [tag])
        #expect(try store.relatedKeys(of: tag, relationship: "tagged") == [ann])
    }

    @Test("a table or column the step would create that the file already has (another program's) stops the step, the file as it was", arguments: [
        ("CREATE TABLE ZTAG (Z_PK INTEGER PRIMARY KEY, ZLABEL VARCHAR)", "the store already has a table ZTAG"),
        ("ALTER TABLE ZCUSTOMER ADD COLUMN ZFAVORITE INTEGER", "table ZCUSTOMER already has a column ZFAVORITE"),
    ])
    func occupiedNames(_ sql: String, _ expected: String) throws {
        let workspace = try Workspace()
        let url = workspace.location("shop", "sqlite")
        try makeStore("sqlite", at: url, model: Self.model(1), json: Self.data)
        let raw = try RawDatabase(url, readOnly: false)
        try raw.execute(sql)
        raw.close()
        let before = try workspace.snapshot().filter { !$0.key.hasSuffix("-shm") }
        let changer = try #require(Backends.type("sqlite") as? any SchemaChanging)
        let error = try #require(throws: StoreError.self) { try changer.changeSchema(at: url, through: [Self.model(1), Self.model(2)]) }
        #expect(error.code == .invalidChange && error.message.contains(expected), "\(error.message)")
        #expect(try workspace.snapshot().filter { !$0.key.hasSuffix("-shm") } == before)
    }

    @Test("what needs every object read stays a copy step, each named")
    func blockers() throws {
        let changer = Backends.type("sqlite") as! any SchemaChanging
        func blockers(_ old: () -> [Entity], _ new: () -> [Entity]) throws -> [String] {
            changer.schemaChangeBlockers(from: try ManagedObjectModel(entities: old()), to: try ManagedObjectModel(entities: new()))
        }
        #expect(try blockers({ [Entity("A") { Attribute("x", .string) }, Entity("B") { Attribute("y", .string) }] },
                             { [Entity("A") { Attribute("x", .string); Relationship("b", to: "B", optional: false) }, Entity("B") { Attribute("y", .string) }] })
                == ["A.b: a required relationship added, which no object has"])
        #expect(try blockers({ [Entity("A") { Attribute("x", .string) }, Entity("S", parent: "A") { Attribute("y", .string) }] },
                             { [Entity("A") { Attribute("x", .string) }] })
                == ["S: removed while its hierarchy stays, so its objects must be deleted one by one"])
        #expect(try blockers({ [Entity("A") { Relationship("bs", to: "B", toMany: true) }, Entity("B") { Attribute("y", .string) }] },
                             { [Entity("A") { Relationship("bs", to: "B", inverse: "a", toMany: true) }, Entity("B") { Attribute("y", .string); Relationship("a", to: "A", inverse: "bs") }] })
                == ["A.bs: its inverse changed, so it is stored elsewhere"])
        #expect(try blockers({ [Entity("A") { Relationship("b", to: "B") }, Entity("B") { Attribute("y", .string) }] },
                             { [Entity("A") { Relationship("b", to: "B") }, Entity("B") { Attribute("y", .string) }, Entity("C", parent: "B") { Attribute("z", .string) }] })
                == ["A.b: its destination gained sub-entities, so each row must record its target's entity"])
        #expect(try blockers({ [Entity("A") { Attribute("x", .string) }, Entity("B") { Attribute("y", .string) }] },
                             { [Entity("A") { Attribute("x", .string) }, Entity("B", parent: "A") { Attribute("y", .string) }] })
                == ["B: its place in the hierarchy changed"])
        // An attribute moved up to the parent: in place it would be dropped from the sub-entity's rows.
        for changer in [changer, Backends.type("postgresql") as! any SchemaChanging] {
            #expect(changer.schemaChangeBlockers(from: try ManagedObjectModel(entities: [Entity("P") { Attribute("x", .string) }, Entity("C", parent: "P") { Attribute("title", .string) }]),
                                                 to: try ManagedObjectModel(entities: [Entity("P") { Attribute("x", .string); Attribute("title", .string) }, Entity("C", parent: "P") {}]))
                    == ["C.title: now declared by another entity of its hierarchy, so its values must be copied"])
        }
    }
}

extension InPlaceSchemaTests {
    @Test("an added attribute whose default SQL cannot write (infinity, text with U+0000) is a copy step on SQLite, and old objects get the default")
    func defaultsWithoutLiteral() throws {
        let workspace = try Workspace()
        func model(_ version: Int) throws -> ManagedObjectModel {
            try ManagedObjectModel(versionIdentifiers: ["d\(version)"]) {
                Entity("Item") {
                    Attribute("name", .string)
                    if version == 2 {
                        Attribute("limit", .double, optional: false, default: .double(-.infinity))
                        Attribute("tag", .string, optional: false, default: .string("a\u{0}b"))
                    }
                }
            }
        }
        let sqlite = Backends.type("sqlite")
        #expect((sqlite as! any SchemaChanging).schemaChangeBlockers(from: try model(1), to: try model(2))
                == ["Item.limit: its default has no SQL literal, so old rows must be given it one by one",
                    "Item.tag: its default has no SQL literal, so old rows must be given it one by one"])
        let url = workspace.location("items", "sqlite")
        try makeStore("sqlite", at: url, model: try model(1), json: #"{"Item": [{"_id": "i", "name": "one"}]}"#)
        let versions = try ModelVersions(versions: [1, 2].map { ModelVersions.Version(name: "d\($0)", model: try model($0)) })
        let migrator = StoreMigrator(versions: versions)
        #expect(try migrator.plan(forStoreAt: url, type: sqlite).steps.map(\.kind) == [.lightweight])
        try migrator.migrateStore(at: url, type: sqlite)
        let store = try sqlite.open(at: url, model: try model(2), options: StoreOptions(readOnly: true, createIfMissing: false))
        defer { try? store.close() }
        let item = try #require(try store.fetch(FetchRequest(entity: "Item")).first)
        #expect(item.attributes["limit"] == .double(-.infinity) && item.attributes["tag"] == .string("a\u{0}b"))
    }
}

/// History written before an in-place step, read after it: by the names the model has now.
@Suite("In-place steps rename what history recorded")
struct InPlaceHistoryTests {
    /// v1 → v2: Person renamed Member (its `name` renamed `fullName`, `age` kept); Note unchanged.
    static func model(_ version: Int) throws -> ManagedObjectModel {
        try ManagedObjectModel(versionIdentifiers: ["h\(version)"]) {
            Entity(version == 1 ? "Person" : "Member", renamingIdentifier: version == 2 ? "Person" : nil) {
                Attribute(version == 1 ? "name" : "fullName", .string, renamingIdentifier: version == 2 ? "name" : nil)
                Attribute("age", .integer32)
            }
            Entity("Note") { Attribute("text", .string) }
        }
    }

    @Test("entities and properties the step renames are named anew in every earlier transaction; the rest as they were",
          arguments: Backends.all.filter { Backends.type($0) is any SchemaChanging })
    func renamed(_ backend: String) throws {
        let type = Backends.type(backend)
        let workspace = try Workspace()
        let url = workspace.location("people", backend)
        let store = try type.open(at: url, model: try Self.model(1), options: StoreOptions())
        let person = ObjectKey("Person", try store.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound)
        let note = ObjectKey("Note", try store.allocatePrimaryKeys(entity: "Note", count: 1).lowerBound)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: person, attributes: ["name": .string("Ann"), "age": .integer(30)]),
                                            ObjectRecord(key: note, attributes: ["text": .string("hi")])]))
        try store.save(ChangeSet(updated: [ObjectUpdate(key: person, attributes: ["name": .string("Anna"), "age": .integer(31)])]))
        try store.save(ChangeSet(updated: [ObjectUpdate(key: note, attributes: ["text": .string("hello")])]))
        let tokens = try store.history(after: nil, limit: 10).map(\.token)
        try store.close()

        try #require(type as? any SchemaChanging).changeSchema(at: url, through: [try Self.model(1), try Self.model(2)])

        let reopened = try type.open(at: url, model: try Self.model(2), options: StoreOptions())
        defer { try? reopened.close() }
        let history = try reopened.history(after: nil, limit: 10)
        let member = ObjectKey("Member", person.primaryKey)
        #expect(history.map(\.token) == tokens, "the same transactions under the same tokens")
        #expect(history.map(\.inserted) == [[member, note], [], []])
        #expect(history.map(\.updated) == [[], [UpdatedObject(key: member, properties: ["age", "fullName"])], [UpdatedObject(key: note, properties: ["text"])]])
        #expect(try reopened.record(for: member)?.attributes["fullName"] == .string("Anna"), "a key history names is one the store reads")
    }
}

extension InPlaceHistoryTests {
    @Test("a history record that cannot be read is left as it is by the step, which renames the others and goes through")
    func unreadableRecordLeft() throws {
        let workspace = try Workspace()
        let url = workspace.location("people", "sqlite")
        let type = Backends.type("sqlite")
        let store = try type.open(at: url, model: try Self.model(1), options: StoreOptions())
        let keys = try store.allocatePrimaryKeys(entity: "Person", count: 2)
        for pk in keys { try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Person", pk), attributes: ["name": .string("P\(pk)")])])) }
        try store.close()
        let raw = try RawDatabase(url, readOnly: false)
        try raw.execute("UPDATE OS_TRANSACTION SET ZRECORD = x'00' WHERE Z_PK = 1")
        raw.close()

        try #require(type as? any SchemaChanging).changeSchema(at: url, through: [try Self.model(1), try Self.model(2)])

        let rows = try RawDatabase(url, readOnly: true)
        #expect(try rows.strings("SELECT hex(ZRECORD) FROM OS_TRANSACTION WHERE Z_PK = 1") == [["00"]], "left as it was")
        rows.close()
        let reopened = try type.open(at: url, model: try Self.model(2), options: StoreOptions())
        defer { try? reopened.close() }
        #expect(try reopened.history(after: 1, limit: 10).map(\.inserted) == [[ObjectKey("Member", keys.upperBound)]])
    }
}
