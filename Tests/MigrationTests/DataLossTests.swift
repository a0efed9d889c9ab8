import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import Testing
import TestSupport

/// What a step drops (``DataDrop``), counted in the store of every file backend, and the gate
/// of ``StoreMigrator`` and ``PersistentContainer``: the oracle is the document the store was
/// made from (which values it holds) and the store's files.
@Suite("Data a migration step drops")
struct DataLossTests {
    /// v1: Author(name, born) ↔ Book(title) many-to-many, Draft(text). v2: Author(name), Book(title,
    /// authors kept only on Book's side), no Draft; a book's `writers` replaces `authors` (no
    /// renaming identifier), Author keeps `books` with the new inverse.
    static func model(_ version: Int) -> ManagedObjectModel {
        try! ManagedObjectModel(versionIdentifiers: ["v\(version)"]) {
            Entity("Author") {
                Attribute("name", .string)
                if version == 1 { Attribute("born", .integer64) }
                Relationship("books", to: "Book", inverse: version == 1 ? "authors" : "writers", toMany: true)
            }
            Entity("Book") {
                Attribute("title", .string)
                Relationship(version == 1 ? "authors" : "writers", to: "Author", inverse: "books", toMany: true)
            }
            if version == 1 { Entity("Draft") { Attribute("text", .string) } }
        }
    }

    static let versions = try! ModelVersions(versions: [1, 2].map { ModelVersions.Version(name: "v\($0)", model: model($0)) })

    static let document = """
        {"Author": [{"_id": "a", "name": "Ann", "born": 1950, "books": ["x", "y"]}, {"_id": "b", "name": "Bo"}],
         "Book": [{"_id": "x", "title": "X"}, {"_id": "y", "title": "Y"}, {"_id": "z", "title": "Z"}],
         "Draft": [{"_id": "d", "text": "d1"}, {"_id": "e"}, {"_id": "f", "text": "d3"}]}
        """

    static let durable = Backends.files

    @Test("the inferred step drops Author.born and Draft, counted as the document holds them, and not the many-to-many the inverse carries",
          arguments: durable)
    func inferredDrops(_ backend: String) throws {
        let workspace = try Workspace()
        let url = workspace.location("books", backend)
        try makeStore(backend, at: url, model: Self.model(1), json: Self.document)
        let plan = try StoreMigrator(versions: Self.versions).plan(forStoreAt: url, type: Backends.type(backend))
        let drops = try #require(plan.steps.first?.drops).map(\.description).sorted()
        #expect(drops == ["Author.born (1 value)", "entity Draft (3 objects)"], "Book.authors: Author.books, its inverse, is read")
        let before = try workspace.snapshot()
        let error = try #require(throws: MigrationError.self) { try StoreMigrator(versions: Self.versions).migrateStore(at: url, type: Backends.type(backend)) }
        #expect(error.code == .dataLoss)
        #expect(try workspace.snapshot().filter { !$0.key.hasSuffix("-lock") && !$0.key.hasSuffix("-shm") }
                == before.filter { !$0.key.hasSuffix("-lock") && !$0.key.hasSuffix("-shm") })
        try StoreMigrator(versions: Self.versions, allowsDataLoss: true).migrateStore(at: url, type: Backends.type(backend))
        let store = try Backends.type(backend).open(at: url, model: Self.model(2), options: StoreOptions(readOnly: true, createIfMissing: false))
        defer { try? store.close() }
        let ann = try #require(try store.fetch(FetchRequest(entity: "Author", predicate: .compare("name", .equal, .string("Ann")))).first)
        let titles = try store.relatedKeys(of: ann.key, relationship: "books").map { try store.record(for: $0)?.attributes["title"] }
        #expect(titles == [.string("X"), .string("Y")], "the links kept through the inverse")
    }

    @Test("a filter's left-out objects are counted; a mapping with a policy or a closure is taken to read everything")
    func filtersPoliciesClosures() throws {
        let workspace = try Workspace()
        let url = workspace.location("books", "sqlite")
        try makeStore("sqlite", at: url, model: Self.model(1), json: Self.document)
        var mapping = try MappingInference.inferredMapping(from: Self.model(1), to: Self.model(2))
        let author = try #require(mapping.entityMappings.firstIndex { $0.sourceEntity == "Author" })
        mapping.entityMappings[author].sourceFilter = try ObjectPredicate("name BEGINSWITH 'A'")
        mapping.entityMappings[author].attributeMappings["name"] = .call("join", [.constant(.string(" ")), .source("name"), .call("toString", [.source("born")])])
        let store = try Backends.type("sqlite").open(at: url, model: Self.model(1), options: StoreOptions(readOnly: true))
        defer { try? store.close() }
        let drops = DataDrop.drops(of: mapping, from: Self.model(1))
        #expect(Set(drops.map { "\($0.kind) \($0.entity).\($0.property ?? "")" }) == ["filtered Author.", "entity Draft."], "born is read")
        let filtered = try #require(drops.first { $0.kind == .filtered })
        let plan = try StoreMigrator(versions: Self.versions, mappings: [StepMapping(name: "m", mapping: mapping)])
            .plan(forStoreAt: url, type: Backends.type("sqlite"))
        #expect(plan.steps[0].drops.first { $0.kind == .filtered }?.count == 1, "Bo is left out")
        #expect(filtered.count == nil)

        mapping.entityMappings[author].sourceFilter = nil
        mapping.entityMappings[author].attributeMappings["name"] = .custom { _ in .string("?") }
        #expect(DataDrop.drops(of: mapping, from: Self.model(1)).map(\.entity) == ["Draft"])
        mapping.entityMappings[author].attributeMappings["name"] = .source("name")
        mapping.entityMappings[author].policyName = "Anything"
        #expect(DataDrop.drops(of: mapping, from: Self.model(1)).map(\.entity) == ["Draft"])
    }

    @Test("a container refuses the step and never recreates or moves aside a store it refused for data loss; allowed, it migrates")
    func container() throws {
        let workspace = try Workspace()
        let url = workspace.location("books", "sqlite")
        try makeStore("sqlite", at: url, model: Self.model(1), json: Self.document)
        for policy: PersistentContainer.IncompatibleStorePolicy in [.fail, .moveAside, .recreate] {
            let container = PersistentContainer(name: "Books", versions: Self.versions, storeURL: url, storeType: Backends.type("sqlite"),
                                                options: .init(onIncompatibleStore: policy), registry: Backends.registry)
            let error = try #require(throws: MigrationError.self) { _ = try container.load() }
            #expect(error.code == .dataLoss, "\(error)")
            #expect(try export("sqlite", at: url, model: Self.model(1)).contains("\"d3\""), "the store as it was")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.folder.path).allSatisfy { $0.hasPrefix("books.sqlite") })
        let allowed = PersistentContainer(name: "Books", versions: Self.versions, storeURL: url, storeType: Backends.type("sqlite"),
                                          options: .init(allowsDataLoss: true), registry: Backends.registry)
        #expect(try allowed.load().migration?.plan.targetVersion == "v2")
    }
}

/// The held-out case that lost data with no word: a store Apple's Core Data wrote at Model 1 of
/// a three-version model, migrated to Model 3 by inference. The counts are SQLite's own.
@Suite("Data a migration step drops: a real Core Data store")
struct RealStoreDataLossTests {
    /// Model 2 and 3 of the store's model (its Model 1 ships with the fixture): Model 2 moves the
    /// author to an entity of its own and makes a book's user a to-many; Model 3 moves the file URL
    /// to a File entity and relates users to files, not books.
    static let model2 = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Author" syncable="YES">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="authors" inverseEntity="Book"/>
            </entity>
            <entity name="Book" syncable="YES">
                <attribute name="fileURL" optional="YES" attributeType="Transformable"/>
                <attribute name="title" optional="YES" attributeType="String"/>
                <relationship name="authors" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/>
                <relationship name="users" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="User" inverseName="books" inverseEntity="User"/>
            </entity>
            <entity name="User" syncable="YES">
                <attribute name="userId" optional="YES" attributeType="Integer 32" defaultValueString="0"/>
                <relationship name="books" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="Book" inverseName="users" inverseEntity="Book"/>
            </entity>
        </model>
        """
    static let model3 = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Author" syncable="YES">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="authors" inverseEntity="Book"/>
            </entity>
            <entity name="Book" syncable="YES">
                <attribute name="title" optional="YES" attributeType="String"/>
                <relationship name="authors" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/>
                <relationship name="files" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="File" inverseName="book" inverseEntity="File"/>
            </entity>
            <entity name="File" syncable="YES">
                <attribute name="fileURL" optional="YES" attributeType="Transformable"/>
                <relationship name="book" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Book" inverseName="files" inverseEntity="Book"/>
                <relationship name="user" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="User" inverseName="files" inverseEntity="User"/>
            </entity>
            <entity name="User" syncable="YES">
                <attribute name="userId" optional="YES" attributeType="Integer 32" defaultValueString="0"/>
                <relationship name="files" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="File" inverseName="user" inverseEntity="File"/>
            </entity>
        </model>
        """

    @Test("Model 1 -> 3 names authorName, fileURL and the books' users with SQLite's counts, is refused untouched, and runs when allowed")
    func modelOneToThree() throws {
        let workspace = try Workspace()
        let url = workspace.folder.appending(path: "Model1.sqlite")
        try RealCoreDataStores.make("bookmigration-model1", at: url)
        let bundle = workspace.folder.appending(path: "Model.xcdatamodeld")
        for (name, text) in [("Model1", try String(contentsOf: try #require(RealCoreDataStores.model("bookmigration-model1")).appending(path: "contents"), encoding: .utf8)),
                             ("Model2", Self.model2), ("Model3", Self.model3)] {
            let folder = bundle.appending(path: "\(name).xcdatamodel")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: folder.appending(path: "contents"))
        }
        let versions = try ModelVersions(versions: try ["Model1", "Model2", "Model3"].map {
            ModelVersions.Version(name: $0, model: try ModelLoader.loadModel(at: bundle.appending(path: "\($0).xcdatamodel")))
        })
        // The oracle: what SQLite itself counts in Apple's file.
        let raw = try RawDatabase(url)
        let authors = try raw.strings("SELECT count(*) FROM ZBOOK WHERE ZAUTHORNAME IS NOT NULL")[0][0]
        let files = try raw.strings("SELECT count(*) FROM ZBOOK WHERE ZFILEURL IS NOT NULL")[0][0]
        let users = try raw.strings("SELECT count(*) FROM ZBOOK WHERE ZUSER IS NOT NULL")[0][0]
        let titles = try raw.strings("SELECT ZTITLE FROM ZBOOK ORDER BY ZTITLE").map { $0[0] }
        raw.close()
        #expect(authors != "0" && files != "0" && users != "0")
        let type = Backends.type("sqlite")
        let plan = try StoreMigrator(versions: versions).plan(forStoreAt: url, type: type)
        #expect(plan.steps.map(\.description) == [
            "Model1 -> Model2: lightweight; drops Book.authorName (\(authors) values)",
            "Model2 -> Model3: in-place; drops Book.fileURL (\(files) values), Book.users (\(users) links)",
        ])
        let before = try Data(contentsOf: url)
        let error = try #require(throws: MigrationError.self) { try StoreMigrator(versions: versions).migrateStore(at: url, type: type) }
        #expect(error.code == .dataLoss && error.message.contains("Book.authorName (\(authors) values)"))
        #expect(try Data(contentsOf: url) == before, "Apple's file as it was")
        try StoreMigrator(versions: versions, allowsDataLoss: true).migrateStore(at: url, type: type)
        let after = try RawDatabase(url)
        defer { after.close() }
        #expect(try after.strings("SELECT ZTITLE FROM ZBOOK ORDER BY ZTITLE").map { $0[0] } == titles, "the books themselves kept")
    }
}

@Test("an error in an intermediate store names the store being migrated, never the staged copy or its UUID")
func intermediateStoreErrorsNameTheStore() throws {
    let workspace = try Workspace()
    let url = workspace.location("notes", "sqlite")
    try makeStore("sqlite", at: url, model: History.model("v1"), json: History.document("v1"))
    let before = try Data(contentsOf: url)
    let stages: [MigrationStage] = [.custom(from: "v1", to: "v2", didMigrate: { context in
        _ = try context.insert("Note")   // no title: the save fails in the intermediate store
        try context.save()
    })]
    let migrator = StoreMigrator(versions: History.versions, stages: stages)
    let error = try #require(throws: MigrationError.self) { try migrator.migrateStore(at: url, type: Backends.type("sqlite"), to: "v2") }
    #expect(!"\(error)".contains(".migrating-") && "\(error)".contains("validation failure"), "\(error)")
    #expect(try Data(contentsOf: url) == before)
}

@Test("a relationship mapped from objects the mapping makes into another entity, into none, or from an attribute, is refused before anything runs")
func relationshipTargetsAreChecked() throws {
    let inferred = try MappingInference.inferredMapping(from: DataLossTests.model(1), to: DataLossTests.model(2))
    let book = try #require(inferred.entityMappings.firstIndex { $0.sourceEntity == "Book" })
    let bookName = inferred.entityMappings[book].name
    for (expression, says) in [(MappingExpression.destinations(mapping: bookName, of: .source("authors")), "are Book objects, not Author"),
                               (.source("title"), "gives values of an attribute, not objects")] {
        var mapping = inferred
        mapping.entityMappings[book].relationshipMappings["writers"] = expression
        let error = try #require(throws: MigrationError.self) { try mapping.check(from: DataLossTests.model(1), to: DataLossTests.model(2)) }
        #expect(error.code == .invalidMapping && error.message.contains("Book.writers: ") && error.message.contains(says), "\(error)")
    }
    var unmade = inferred
    unmade.entityMappings[book].relationshipMappings["writers"] = .source("authors")
    try unmade.check(from: DataLossTests.model(1), to: DataLossTests.model(2))
    unmade.entityMappings.removeAll { $0.sourceEntity == "Author" }
    let error = try #require(throws: MigrationError.self) { try unmade.check(from: DataLossTests.model(1), to: DataLossTests.model(2)) }
    #expect(error.message.contains("gives Author objects, which no entity mapping makes into Author objects"), "\(error)")
}
