import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import PostgreSQLStore
import Testing
import TestSupport

/// In-place steps on a server store: the step's DDL in one transaction, checked against the
/// server's own catalog and rows (`psql`) and against the same step done as a copy.
@Suite("In-place PostgreSQL migration: tables, columns, entities and indexes changed in one transaction")
struct PostgreSQLInPlaceTests {
    static let type = PostgreSQLStoreType()

    /// v1 → v2: Customer.nickname and Customer.legacy removed with the entity Legacy; Customer gains
    /// `rank` (default 7), a to-one to a new entity Product and a fetch index; Order renamed
    /// Purchase, which Customer.lastOrder (a to-one without inverse) and the many-to-many with
    /// Label name; Book.title removed while its sibling Film keeps its own (`title_2` becomes
    /// `title`); a new sub-entity Poster in Thing's table, a destination gaining sub-entities.
    static func model(_ version: Int) -> ManagedObjectModel {
        do {
            let order = version == 1 ? "Order" : "Purchase"
            return try ManagedObjectModel(versionIdentifiers: ["p\(version)"]) {
                Entity("Customer", indexes: version == 2 ? [FetchIndex(name: "byName", elements: [.init("name", ascending: false)])] : []) {
                    Attribute("name", .string)
                    if version == 1 { Attribute("nickname", .string) }
                    if version == 2 { Attribute("rank", .integer32, optional: false, default: .integer(7)) }
                    Relationship("orders", to: order, inverse: "customer", toMany: true)
                    Relationship("lastOrder", to: order)
                    if version == 1 { Relationship("legacy", to: "Legacy", inverse: "owner") }
                    if version == 2 { Relationship("favorite", to: "Product") }
                }
                Entity(order, renamingIdentifier: version == 2 ? "Order" : nil) {
                    Attribute("total", .double)
                    Relationship("customer", to: "Customer", inverse: "orders")
                    Relationship("labels", to: "Label", inverse: "orders", toMany: true)
                }
                Entity("Label") {
                    Attribute("text", .string)
                    Relationship("orders", to: order, inverse: "labels", toMany: true)
                    Relationship("shelved", to: "Film")
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
                    Entity("Poster", parent: "Film") { Attribute("size", .string) }
                    Entity("Product") { Attribute("sku", .string) }
                }
            }
        } catch {
            preconditionFailure("\(error)")
        }
    }

    static let versions = try! ModelVersions(versions: [1, 2].map { ModelVersions.Version(name: "p\($0)", model: model($0)) })

    static let data = """
        {"Customer": [{"_id": "c1", "name": "Ann", "nickname": "A", "legacy": "l1", "lastOrder": "o2"}, {"_id": "c2", "name": "Bob", "nickname": "B"}],
         "Order": [{"_id": "o1", "total": 9.5, "customer": "c1", "labels": ["x", "y"]}, {"_id": "o2", "total": 2.25, "customer": "c1"},
                   {"_id": "o3", "total": 1, "customer": "c2", "labels": ["y"]}],
         "Label": [{"_id": "x", "text": "gift", "shelved": "f1"}, {"_id": "y", "text": "rush"}],
         "Legacy": [{"_id": "l1", "code": "x"}],
         "Thing": [{"_id": "t1", "shelf": 1}],
         "Book": [{"_id": "b1", "shelf": 2, "title": "Emma"}],
         "Film": [{"_id": "f1", "shelf": 3, "title": "Heat"}, {"_id": "f2", "shelf": 4}]}
        """

    /// The indexes of `schema` (`schemaname`, `tablename`, `indexname`, `indexdef`), their
    /// definitions worked out for that schema's alone: other tests drop tables of their own at
    /// the same time, and an index definition read for one of theirs fails ("could not open
    /// relation") when a condition on it is evaluated before the schema's (`OFFSET 0` keeps them apart).
    static func indexes(in schema: String, table: String? = nil) -> String {
        "SELECT * FROM pg_indexes WHERE schemaname = '\(schema)'" + (table.map { " AND tablename = '\($0)'" } ?? "") + " OFFSET 0"
    }

    static func schema(_ url: URL) -> String { String(url.absoluteString[url.absoluteString.range(of: "schema=")!.upperBound...]) }

    /// Every `table.column` of the schema, as the server's catalog lists them.
    static func columns(_ schema: String) throws -> String {
        try PostgreSQLTestServer.psql("SELECT table_name || '.' || column_name FROM information_schema.columns WHERE table_schema = '\(schema)' ORDER BY 1")
    }

    @Test("every change is DDL in the store's own schema, in one transaction: the server's catalog and rows show it, and reading it gives what a copy gives")
    func tablesColumnsEntities() throws {
        #expect(Self.type.schemaChangeBlockers(from: Self.model(1), to: Self.model(2)) == [])
        #expect(Backends.type("sqlite").name == "sqlite")
        let sqliteBlockers = (Backends.type("sqlite") as! any SchemaChanging).schemaChangeBlockers(from: Self.model(1), to: Self.model(2))
        #expect(sqliteBlockers == ["Label.shelved: its destination gained sub-entities, so each row must record its target's entity"],
                "Core Data's layout records a to-one's entity only where its destination has sub-entities; this one always does")
        let workspace = try Workspace()
        let url = workspace.location("shop", PostgreSQLStore.typeName), copied = workspace.location("copied", "sqlite")
        try makeStore(PostgreSQLStore.typeName, at: url, model: Self.model(1), json: Self.data)
        let schema = Self.schema(url)
        func psql(_ sql: String) throws -> [String] {
            try PostgreSQLTestServer.psql(sql).split(separator: "\n").map(String.init)
        }
        #expect(try psql("SELECT coalesce(title_2, '-') FROM \"\(schema)\".\"Thing\" WHERE entity = 'Film' ORDER BY pk") == ["Heat", "-"],
                "Film's title begins in the second title column")
        let uuid = try Self.type.readMetadata(at: url).storeUUID
        let tokens = try psql("SELECT count(*) FROM \"\(schema)\".os_transaction")
        // The oracle the step must agree with: the same source moved by a copy with the inferred mapping.
        let mapping = try MappingInference.inferredMapping(from: Self.model(1), to: Self.model(2))
        try MigrationManager(sourceModel: Self.model(1), destinationModel: Self.model(2), mapping: mapping)
            .migrateStore(at: url, type: Self.type, to: copied, type: Backends.type("sqlite"))

        let migrator = StoreMigrator(versions: Self.versions, allowsDataLoss: true)
        let plan = try migrator.plan(forStoreAt: url, type: Self.type)
        #expect(plan.steps.map(\.kind) == [.inPlace], "\(plan.steps.map(\.description))")
        try migrator.migrateStore(at: url, type: Self.type)

        func columns(_ table: String) throws -> [String] {
            try psql("SELECT column_name FROM information_schema.columns WHERE table_schema = '\(schema)' AND table_name = '\(table)' ORDER BY 1")
        }
        #expect(try psql("SELECT relname || ' ' || relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                         + "WHERE nspname = '\(schema)' AND relkind IN ('r', 'S') ORDER BY 1")
                == ["Customer r", "Customer__pk S", "Label r", "Label__orders r", "Label__pk S", "Product r", "Product__pk S", "Purchase r",
                    "Purchase__labels r", "Purchase__pk S", "Thing r", "Thing__pk S", "objectstore_metadata r", "objectstore_relations r",
                    "os_transaction r", "os_transaction__token S"])
        #expect(try psql("SELECT name || ' ' || kind FROM \"\(schema)\".objectstore_relations ORDER BY 1").count == 14)
        #expect(try columns("Customer") == ["entity", "favorite", "favorite_entity", "lastOrder", "lastOrder_entity", "name", "pk", "rank", "version"])
        #expect(try columns("Thing") == ["entity", "pk", "shelf", "size", "title", "version"])
        #expect(try psql("SELECT name || ' ' || rank || ' ' || coalesce(\"lastOrder\" || \"lastOrder_entity\", '-') FROM \"\(schema)\".\"Customer\" ORDER BY pk")
                == ["Ann 7 2Purchase", "Bob 7 -"], "the added attribute's default in old rows; the renamed target's name in the reference")
        #expect(try psql("SELECT DISTINCT entity FROM \"\(schema)\".\"Purchase\"") == ["Purchase"])
        #expect(try psql("SELECT DISTINCT member_entity FROM \"\(schema)\".\"Label__orders\"") == ["Purchase"])
        #expect(try psql("SELECT count(*) FROM \"\(schema)\".\"Purchase__labels\"") == ["3"])
        let things = try psql("SELECT entity || ' ' || coalesce(title, '-') FROM \"\(schema)\".\"Thing\" ORDER BY 1")
        #expect(things == ["Book -", "Film -", "Film Heat", "Thing -"], "\(things)")
        #expect(try psql("SELECT indexdef FROM (\(Self.indexes(in: schema, table: "Customer"))) i WHERE indexdef LIKE '%(name DESC)%'").count == 1,
                "the fetch index added")
        #expect(try psql("SELECT count(*) FROM (\(Self.indexes(in: schema))) i WHERE indexdef LIKE '%legacy%'") == ["0"])
        #expect(try Self.type.readMetadata(at: url).storeUUID == uuid, "the store keeps its UUID")
        #expect(try psql("SELECT count(*) FROM \"\(schema)\".os_transaction") == [String(Int(tokens[0])! + 1)], "the migration is in the history")

        let inPlace = try export(PostgreSQLStore.typeName, at: url, model: Self.model(2)), copy = try export("sqlite", at: copied, model: Self.model(2))
        #expect(try JSONSerialization.jsonObject(with: Data(inPlace.utf8)) as? NSDictionary == JSONSerialization.jsonObject(with: Data(copy.utf8)) as? NSDictionary)
        #expect(inPlace.contains("\"Heat\"") && !inPlace.contains("Emma") && !inPlace.contains("nickname"))

        // The store takes new objects in new and renamed entities, keys after the old ones.
        let store = try Self.type.open(at: url, model: Self.model(2), options: StoreOptions())
        defer { try? store.close() }
        let purchase = ObjectKey("Purchase", try store.allocatePrimaryKeys(entity: "Purchase", count: 1).lowerBound)
        #expect(purchase.primaryKey > 3, "the renamed entity's key sequence went with it")
        let poster = ObjectKey("Poster", try store.allocatePrimaryKeys(entity: "Poster", count: 1).lowerBound)
        let bob = try #require(try store.fetch(FetchRequest(entity: "Customer", predicate: try ObjectPredicate("name == 'Bob'"))).first)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: purchase, attributes: ["total": .double(4)], toOne: ["customer": bob.key]),
                                            ObjectRecord(key: poster, attributes: ["shelf": .integer(5), "title": .string("Alien"), "size": .string("A1")])]))
        #expect(Set(try store.relatedKeys(of: bob.key, relationship: "orders")).contains(purchase))
        #expect(try psql("SELECT entity || ' ' || title || ' ' || size FROM \"\(schema)\".\"Thing\" WHERE pk = \(poster.primaryKey)") == ["Poster Alien A1"])
    }

    @Test("a relation the step would create that the schema already has (another program's) stops the step; the store is as it was")
    func occupiedName() throws {
        let workspace = try Workspace()
        let url = workspace.location("shop", PostgreSQLStore.typeName)
        try makeStore(PostgreSQLStore.typeName, at: url, model: Self.model(1), json: Self.data)
        let schema = Self.schema(url)
        _ = try PostgreSQLTestServer.psql("CREATE TABLE \"\(schema)\".\"Product\" (sku text)")
        let before = try Self.columns(schema)
        let metadata = try PostgreSQLTestServer.psql("SELECT key, md5(value) FROM \"\(schema)\".objectstore_metadata ORDER BY key")
        let error = try #require(throws: StoreError.self) { try Self.type.changeSchema(at: url, through: [Self.model(1), Self.model(2)]) }
        #expect(error.code == .invalidChange && error.message.contains("already has a relation Product"), "\(error.message)")
        #expect(try Self.columns(schema) == before)
        #expect(try PostgreSQLTestServer.psql("SELECT key, md5(value) FROM \"\(schema)\".objectstore_metadata ORDER BY key") == metadata)
        #expect(try export(PostgreSQLStore.typeName, at: url, model: Self.model(1)).contains("\"nickname\""))
    }
}

extension PostgreSQLInPlaceTests {
    /// A root entity renamed to a name longer than PostgreSQL keeps (its table and key sequence each
    /// cut and hashed), beside a table another program made a view on and an index of its own.
    static func longModel(_ version: Int) throws -> ManagedObjectModel {
        let long = "ItemWithAVeryLongNameThatPostgreSQLMustCutAndHashBecauseItIsOver63Bytes"
        return try ManagedObjectModel(versionIdentifiers: ["l\(version)"]) {
            Entity(version == 1 ? "Item" : long, renamingIdentifier: version == 2 ? "Item" : nil) { Attribute("name", .string) }
            Entity("Shelf") { Attribute("label", .string) }
            if version == 1 { Entity("Crate") { Attribute("code", .string) } }
        }
    }

    @Test("a root renamed to a name PostgreSQL cuts keeps its key sequence; another program's index is kept, its view on a dropped table stops the step")
    func longNamesAndOthersObjects() throws {
        let workspace = try Workspace()
        let url = workspace.location("long", PostgreSQLStore.typeName)
        try makeStore(PostgreSQLStore.typeName, at: url, model: try Self.longModel(1),
                      json: #"{"Item": [{"_id": "a", "name": "one"}, {"_id": "b", "name": "two"}], "Shelf": [{"_id": "s", "label": "top"}], "Crate": [{"_id": "c", "code": "x"}]}"#)
        let schema = Self.schema(url)
        func psql(_ sql: String) throws -> [String] { try PostgreSQLTestServer.psql(sql).split(separator: "\n").map(String.init) }
        _ = try psql("CREATE INDEX others_shelf_label ON \"\(schema)\".\"Shelf\" (label); CREATE VIEW \"\(schema)\".crates AS SELECT code FROM \"\(schema)\".\"Crate\"")
        let tables = try psql("SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = '\(schema)' ORDER BY 1")

        // The view depends on a table the step drops: refused, typed, nothing changed.
        let refused = try #require(throws: StoreError.self) { try Self.type.changeSchema(at: url, through: [try Self.longModel(1), try Self.longModel(2)]) }
        #expect(refused.code == .invalidChange && refused.message.contains("depend"), "\(refused.message)")
        #expect(try psql("SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = '\(schema)' ORDER BY 1") == tables)
        #expect(try Self.type.readMetadata(at: url).compatibility(with: try Self.longModel(1)).isCompatible, "still at the first version")

        _ = try psql("DROP VIEW \"\(schema)\".crates")
        try Self.type.changeSchema(at: url, through: [try Self.longModel(1), try Self.longModel(2)])
        let sequences = try psql("SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = '\(schema)' AND relkind = 'S' ORDER BY 1")
        let listed = try psql("SELECT name FROM \"\(schema)\".objectstore_relations WHERE kind = 'sequence' ORDER BY 1")
        #expect(sequences == listed && sequences.count == 3, "one sequence per root and the history's, each listed: \(sequences) against \(listed)")
        #expect(try psql("SELECT indexname FROM pg_indexes WHERE schemaname = '\(schema)' AND indexname = 'others_shelf_label'") == ["others_shelf_label"])

        let model = try Self.longModel(2), long = model.entityDescriptions.first { $0.name.hasPrefix("ItemWith") }!.name
        let store = try Self.type.open(at: url, model: model, options: StoreOptions())
        defer { try? store.close() }
        let next = try store.allocatePrimaryKeys(entity: long, count: 1).lowerBound
        #expect(next > 2, "the renamed root's keys go on after its objects'")
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey(long, next), attributes: ["name": .string("three")])]))
        #expect(try store.fetch(FetchRequest(entity: long)).compactMap { $0.attributes["name"] } == [.string("one"), .string("two"), .string("three")])
        try store.close()
        try Self.type.destroy(at: url)
        #expect(try psql("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = '\(schema)' AND relkind IN ('r', 'S')") == ["0"],
                "destroy leaves no table or sequence of the store")
    }
}

extension PostgreSQLInPlaceTests {
    @Test("a table another session holds (an export's snapshot) is waited for 10 s, then the step gives up busy, nothing of it committed")
    func heldTableIsBusy() throws {
        let workspace = try Workspace()
        let url = workspace.location("held", PostgreSQLStore.typeName)
        try makeStore(PostgreSQLStore.typeName, at: url, model: Self.model(1), json: Self.data)
        let schema = Self.schema(url)
        let columns = try Self.columns(schema)
        let store = try Self.type.open(at: url, model: Self.model(1), options: StoreOptions(readOnly: true, createIfMissing: false))
        defer { try? store.close() }
        let snapshot = try store.snapshot()
        #expect(try snapshot.count(FetchRequest(entity: "Customer")) == 2, "the snapshot's transaction now holds the table")
        let error = try #require(throws: StoreError.self) { try Self.type.changeSchema(at: url, through: [Self.model(1), Self.model(2)]) }
        #expect(error.code == .busy && error.message.contains("another session"), "\(error.message)")
        try snapshot.close()
        #expect(try Self.columns(schema) == columns)
        #expect(try Self.type.readMetadata(at: url).compatibility(with: Self.model(1)).isCompatible)
    }
}
