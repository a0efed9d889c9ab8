import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import PostgreSQLStore
import Synchronization
import Testing
import TestSupport

/// A four-version history and a broken one beside it:
/// v1 → v2 (inferred: an optional attribute) → v3 (a mapping: a required `label` computed
/// from `title`) → v4 (inferred: an optional attribute of Folder). v2b was a broken release
/// (`priority` a string); `nextOverrides` sends v2 stores straight to v3, and v2b stores go
/// to v3 through a mapping of their own.
enum History {
    static func model(_ version: String) -> ManagedObjectModel {
        do {
            return try ManagedObjectModel(versionIdentifiers: [version]) {
                Entity("Note") {
                    Attribute("title", .string, optional: false)
                    Attribute("body", .string)
                    // "dev": a version no bundle has (a development build's model).
                    if version != "v1" { Attribute("priority", version == "v2b" ? .string : version == "dev" ? .double : .integer16) }
                    if version == "v3" || version == "v4" { Attribute("label", .string, optional: false) }
                    Relationship("folder", to: "Folder", inverse: "notes")
                }
                Entity("Folder") {
                    Attribute("name", .string)
                    if version == "v4" { Attribute("color", .string) }
                    Relationship("notes", to: "Note", inverse: "folder", toMany: true)
                }
            }
        } catch {
            preconditionFailure("\(error)")
        }
    }

    static let versions: ModelVersions = {
        do {
            return try ModelVersions(versions: ["v1", "v2", "v2b", "v3", "v4"].map { ModelVersions.Version(name: $0, model: model($0)) },
                                     nextOverrides: ["v2": "v3"])
        } catch {
            preconditionFailure("\(error)")
        }
    }()

    /// The mapping files, as a user writes them.
    static func mapping(from source: String) -> String {
        let priority = source == "v2b" ? "toInteger($source.priority)" : "$source.priority"
        return """
        {"format": "objectstore-mapping", "formatVersion": 1, "sourceVersion": "\(source)", "destinationVersion": "v3",
         "entityMappings": [
          {"name": "NoteToNote", "kind": "transform", "source": "Note", "destination": "Note",
           "attributes": {"title": "$source.title", "body": "$source.body", "priority": "\(priority)", "label": "uppercase($source.title)"},
           "relationships": {"folder": "$source.folder"}},
          {"name": "FolderToFolder", "kind": "copy", "source": "Folder", "destination": "Folder",
           "attributes": {"name": "$source.name"}, "relationships": {"notes": "$source.notes"}}]}
        """
    }

    static let mappings: [StepMapping] = ["v2", "v2b"].map { source in
        StepMapping(name: "\(source)-to-v3.json", mapping: try! MappingFormat.decode(Data(mapping(from: source).utf8)))
    }

    /// The store's data at `version`: titles, bodies, priorities (where the version has them) and folders.
    static func document(_ version: String) -> String {
        func priority(_ n: Int) -> String {
            switch version {
            case "v1": ""
            case "v2b": ", \"priority\": \"\(n)\""
            default: ", \"priority\": \(n)"
            }
        }
        let label = version == "v3" ? ", \"label\": \"FIRST\"" : ""
        let label2 = version == "v3" ? ", \"label\": \"ZOË'S\"" : ""
        let label3 = version == "v3" ? ", \"label\": \"LOOSE\"" : ""
        return """
        {"Folder": [{"_id": "f", "name": "Work"}, {"_id": "g"}],
         "Note": [{"_id": "a", "title": "first", "body": "one"\(priority(3))\(label), "folder": "f"},
                  {"_id": "b", "title": "Zoë's"\(priority(-2))\(label2), "folder": "f"},
                  {"_id": "c", "title": "loose"\(label3)}]}
        """
    }
}

@Suite("StoreMigrator: any old store to the current version")
struct StoreMigratorTests {
    /// The backends whose stores are files, compared file by file below: the server's store
    /// migrates with the same migrator and is checked through the server (PostgreSQLMigrationTests).
    static let durable = Backends.files

    /// The store at `url`, read with v4, checked against the document it was made from:
    /// every value, the computed label, both sides of every relationship.
    func checkAtV4(_ backend: String, _ url: URL, from version: String) throws {
        let type = Backends.type(backend)
        #expect(try History.versions.version(matching: type.readMetadata(at: url)).name == "v4")
        let store = try type.open(at: url, model: History.model("v4"), options: StoreOptions(readOnly: true, createIfMissing: false))
        defer { try? store.close() }
        let notes = try store.fetch(FetchRequest(entity: "Note"))
        let byTitle = Dictionary(uniqueKeysWithValues: notes.map { ($0.attributes["title"]!, $0) })
        #expect(notes.count == 3)
        let expected: [(String, String?, Int?, Bool)] = [("first", "one", 3, true), ("Zoë's", nil, -2, true), ("loose", nil, nil, false)]
        let folders = try store.fetch(FetchRequest(entity: "Folder"))
        let work = try #require(folders.first { $0.attributes["name"] == .string("Work") })
        for (title, body, priority, inWork) in expected {
            let note = try #require(byTitle[.string(title)], "\(title)")
            #expect(note.attributes["label"] == .string(title.uppercased()))
            #expect(note.attributes["body"] == body.map(Value.string))
            #expect(note.attributes["priority"] == (version == "v1" ? nil : priority.map { .integer(Int64($0)) }))
            #expect(note.toOne["folder"] == (inWork ? work.key : nil))
        }
        #expect(Set(try store.relatedKeys(of: work.key, relationship: "notes")) == Set(notes.filter { $0.toOne["folder"] != nil }.map(\.key)))
        #expect(folders.allSatisfy { $0.attributes["color"] == nil })
    }

    func files(_ workspace: Workspace) throws -> Set<String> { Set(try workspace.snapshot().keys) }

    /// Every file's bytes but LMDB's lock file (its reader table, which every reader writes by
    /// design: it holds no store data).
    func contents(_ workspace: Workspace) throws -> [String: Data] { try workspace.snapshot().filter { !$0.key.hasSuffix("-lock") } }

    @Test("every older version, on every durable backend, reaches v4 with all its data; the plan names each step and kind",
          arguments: durable, ["v1", "v2", "v2b", "v3"])
    func chain(_ backend: String, _ version: String) throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", backend)
        try makeStore(backend, at: url, model: History.model(version), json: History.document(version))
        let migrator = StoreMigrator(versions: History.versions, mappings: History.mappings)
        let plan = try migrator.plan(forStoreAt: url, type: Backends.type(backend))
        let expected: [String: [String]] = [
            "v1": ["v1 -> v2: lightweight", "v2 -> v3: mapping v2-to-v3.json", "v3 -> v4: lightweight"],
            "v2": ["v2 -> v3: mapping v2-to-v3.json", "v3 -> v4: lightweight"],
            "v2b": ["v2b -> v3: mapping v2b-to-v3.json", "v3 -> v4: lightweight"],
            "v3": ["v3 -> v4: lightweight"],
        ]
        // SQLite adds v4's optional attribute in place, after the copy steps (its own when it is the only step).
        let last = backend == "sqlite" ? "v3 -> v4: in-place" : "v3 -> v4: lightweight"
        #expect(plan.steps.map(\.description) == expected[version]!.dropLast() + [last])
        #expect(plan.storeVersion == version && plan.targetVersion == "v4")
        #expect(plan.objectCounts == ["Note": 3, "Folder": 2])
        let steps = Mutex<Set<Int>>([])
        let result = try migrator.migrateStore(at: url, type: Backends.type(backend)) { progress in steps.withLock { _ = $0.insert(progress.step) } }
        #expect(result.seconds.count == plan.steps.count)
        #expect(steps.withLock { $0 } == Set(0..<plan.steps.count), "progress from every step")
        try checkAtV4(backend, url, from: version)
        // Nothing is left beside the store but its own files.
        let left = try files(workspace)
        #expect(left.allSatisfy { !$0.hasPrefix(".") }, "\(left)")
        // At the target: nothing to do, no file touched.
        let before = try contents(workspace)
        #expect(try migrator.migrateStore(at: url, type: Backends.type(backend)).plan.steps.isEmpty)
        #expect(try contents(workspace) == before)
    }

    @Test("a store at an intermediate version can be taken to a named target, and stops there")
    func namedTarget() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", "sqlite")
        try makeStore("sqlite", at: url, model: History.model("v1"), json: History.document("v1"))
        let migrator = StoreMigrator(versions: History.versions, mappings: History.mappings)
        try migrator.migrateStore(at: url, type: Backends.type("sqlite"), to: "v2")
        #expect(try History.versions.version(matching: Backends.type("sqlite").readMetadata(at: url)).name == "v2")
    }

    @Test("a store of no known version: a typed error naming the closest version and what differs; nothing written")
    func unknownVersion() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", "sqlite")
        let stranger = try ManagedObjectModel {
            Entity("Note") {
                Attribute("title", .string, optional: false)
                Attribute("body", .string)
                Attribute("pinned", .boolean)
                Relationship("folder", to: "Folder", inverse: "notes")
            }
            Entity("Folder") {
                Attribute("name", .string)
                Relationship("notes", to: "Note", inverse: "folder", toMany: true)
            }
        }
        try makeStore("sqlite", at: url, model: stranger, json: History.document("v1"))
        let before = try contents(workspace)
        let error = try #require(throws: MigrationError.self) {
            try StoreMigrator(versions: History.versions, mappings: History.mappings).migrateStore(at: url, type: Backends.type("sqlite"))
        }
        #expect(error.code == .unknownVersion)
        // Note differs from every version, Folder from v4 only: the newest of the closest is v3.
        #expect(error.message.contains("the closest is v3: entities whose hash differs: Note"), "\(error.message)")
        #expect(try contents(workspace) == before)
    }

    @Test("a step with no mapping is refused before anything is written, naming the step and what blocks it", arguments: durable)
    func noMapping(_ backend: String) throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", backend)
        try makeStore(backend, at: url, model: History.model("v1"), json: History.document("v1"))
        let before = try contents(workspace)
        let error = try #require(throws: MigrationError.self) {
            try StoreMigrator(versions: History.versions).migrateStore(at: url, type: Backends.type(backend))
        }
        #expect(error.code == .noMapping)
        #expect(error.message.contains("v2 -> v3") && error.message.contains("label"), "\(error.message)")
        #expect(!error.message.contains("v1 -> v2"), "the inferable step is not blamed")
        #expect(try contents(workspace) == before)
    }

    @Test("a failure in a later step leaves the store at its version with its data, and no intermediate store", arguments: durable)
    func failureInLaterStep(_ backend: String) throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", backend)
        // A v2b priority that is no number: the v2b → v3 mapping fails on it.
        let document = History.document("v2b").replacingOccurrences(of: "\"priority\": \"-2\"", with: "\"priority\": \"high\"")
        try makeStore(backend, at: url, model: History.model("v2b"), json: document)
        let before = try contents(workspace)
        let error = try #require(throws: MigrationError.self) {
            try StoreMigrator(versions: History.versions, mappings: History.mappings).migrateStore(at: url, type: Backends.type(backend))
        }
        #expect(error.code == .expression, "\(error)")
        #expect(try contents(workspace) == before)
    }

    @Test("cancelled during the second step: the store is as it was, nothing left beside it")
    func cancelled() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", "sqlite")
        try makeStore("sqlite", at: url, model: History.model("v1"), json: History.document("v1"))
        let before = try contents(workspace)
        let migrator = StoreMigrator(versions: History.versions, mappings: History.mappings, batchSize: 1)
        let error = try #require(throws: MigrationError.self) {
            try migrator.migrateStore(at: url, type: Backends.type("sqlite")) { progress in
                if progress.step == 1 { migrator.cancel() }
            }
        }
        #expect(error.code == .cancelled)
        #expect(try contents(workspace) == before)
    }

    @Test("leftovers of an interrupted run are removed and reported; a live run's are not")
    func leftovers() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", "sqlite")
        try makeStore("sqlite", at: url, model: History.model("v3"), json: History.document("v3"))
        // What a killed run leaves: a staged store and its lock file, the lock free.
        let stem = ".notes.sqlite.migrating-\(UUID().uuidString)"
        try Data("half a store".utf8).write(to: workspace.folder.appending(path: stem))
        try Data().write(to: workspace.folder.appending(path: stem + "-wal"))
        try Data().write(to: workspace.folder.appending(path: stem + ".lock"))
        // A live one: its lock held.
        let live = try StagedStore(beside: url, verb: "migrating")
        try Data("in progress".utf8).write(to: live.url)
        let result = try StoreMigrator(versions: History.versions, mappings: History.mappings).migrateStore(at: url, type: Backends.type("sqlite"))
        #expect(result.removedLeftovers == [stem])
        let left = try files(workspace)
        #expect(!left.contains { $0.hasPrefix(stem) })
        #expect(left.contains(live.url.lastPathComponent))
        live.discard(Backends.type("sqlite"))
        try checkAtV4("sqlite", url, from: "v3")
    }

    // Both run from v2, so that the first step is a copy (v3 → v4 alone runs in place on SQLite).
    @Test("a store another process writes while it is migrated is not replaced: the write survives")
    func writtenMeanwhile() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", "sqlite")
        try makeStore("sqlite", at: url, model: History.model("v2"), json: History.document("v2"))
        let wrote = Mutex(false)
        let error = try #require(throws: MigrationError.self) {
            try StoreMigrator(versions: History.versions, mappings: History.mappings).migrateStore(at: url, type: Backends.type("sqlite")) { _ in
                guard !wrote.withLock({ $0 }) else { return }
                wrote.withLock { $0 = true }
                // Another writer (another connection) commits a new folder.
                let store = try! Backends.type("sqlite").open(at: url, model: History.model("v2"), options: StoreOptions())
                var changes = ChangeSet()
                changes.inserted = [ObjectRecord(key: ObjectKey("Folder", try! store.allocatePrimaryKeys(entity: "Folder", count: 1).lowerBound),
                                                 attributes: ["name": .string("late")])]
                try! store.save(changes)
                try! store.close()
            }
        }
        #expect(error.code == .storeChanged)
        let store = try Backends.type("sqlite").open(at: url, model: History.model("v2"), options: StoreOptions(readOnly: true))
        defer { try? store.close() }
        #expect(try store.fetch(FetchRequest(entity: "Folder")).contains { $0.attributes["name"] == .string("late") })
        #expect(try files(workspace).allSatisfy { !$0.hasPrefix(".") })
    }

    @Test("two migrations of one store at once: the second is refused while the first runs")
    func oneAtATime() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", "sqlite")
        try makeStore("sqlite", at: url, model: History.model("v2"), json: History.document("v2"))
        let migrator = StoreMigrator(versions: History.versions, mappings: History.mappings)
        let second = Mutex<MigrationError?>(nil)
        try migrator.migrateStore(at: url, type: Backends.type("sqlite")) { _ in
            guard second.withLock({ $0 }) == nil else { return }
            do {
                try StoreMigrator(versions: History.versions, mappings: History.mappings).migrateStore(at: url, type: Backends.type("sqlite"))
            } catch {
                second.withLock { $0 = error as? MigrationError }
            }
        }
        let refused = try #require(second.withLock { $0 })
        #expect(refused.message.contains("busy"), "\(refused.message)")
        try checkAtV4("sqlite", url, from: "v2")
    }
}

@Suite("PersistentContainer: load, migrate, recover")
struct PersistentContainerTests {
    func container(_ url: URL, _ policy: PersistentContainer.IncompatibleStorePolicy, mappings: [StepMapping] = History.mappings,
                   migrates: Bool = true) -> PersistentContainer {
        PersistentContainer(name: "Notes", versions: History.versions, storeURL: url, storeType: Backends.type("sqlite"),
                            options: .init(migratesAutomatically: migrates, onIncompatibleStore: policy, mappings: mappings),
                            registry: Backends.registry)
    }

    @Test("a missing store is created at the current version; an older one is migrated and its objects reach the view context")
    func createAndMigrate() throws {
        let workspace = try Workspace()
        let fresh = workspace.location("fresh", "sqlite")
        let created = try container(fresh, .fail).load()
        #expect(created.migration == nil && created.movedAside == nil)
        #expect(try History.versions.version(matching: Backends.type("sqlite").readMetadata(at: fresh)).name == "v4")
        let old = workspace.location("old", "sqlite")
        try makeStore("sqlite", at: old, model: History.model("v1"), json: History.document("v1"))
        let loaded = try container(old, .fail).load()
        #expect(loaded.migration?.plan.steps.count == 3)
        let notes = try loaded.viewContext.fetch(FetchRequest(entity: "Note"))
        #expect(Set(notes.map { $0["label"] }) == [.string("FIRST"), .string("ZOË'S"), .string("LOOSE")])
    }

    @Test("a store of no version: fail leaves it untouched; move-aside moves its whole file set (the log too) and says where; recreate starts anew")
    func recovery() throws {
        for policy in PersistentContainer.IncompatibleStorePolicy.allCases {
            let workspace = try Workspace()
            let url = workspace.location("notes", "sqlite")
            try makeStore("sqlite", at: url, model: History.model("dev"), json: History.document("dev"))
            // Leave a WAL beside it: the move must carry what it holds.
            let writer = try Backends.type("sqlite").open(at: url, model: History.model("dev"), options: StoreOptions())
            var changes = ChangeSet()
            changes.inserted = [ObjectRecord(key: ObjectKey("Folder", try writer.allocatePrimaryKeys(entity: "Folder", count: 1).lowerBound),
                                             attributes: ["name": .string("in the log")])]
            try writer.save(changes)
            // SQLite's shared-memory index is written by every reader by design; it holds no data.
            func files() throws -> [String: Data] { try workspace.snapshot().filter { !$0.key.hasSuffix("-shm") } }
            let before = try files()
            let container = container(url, policy)
            switch policy {
            case .fail:
                let error = try #require(throws: MigrationError.self) { try container.load() }
                #expect(error.code == .unknownVersion)
                #expect(try files() == before)
            case .moveAside:
                let loaded = try container.load()
                let aside = try #require(loaded.movedAside)
                #expect(aside.deletingLastPathComponent().lastPathComponent == "Incompatible")
                #expect(try loaded.viewContext.fetch(FetchRequest(entity: "Note")).isEmpty)
                let old = try Backends.type("sqlite").open(at: aside, model: History.model("dev"), options: StoreOptions(readOnly: true))
                #expect(try old.fetch(FetchRequest(entity: "Note")).count == 3)
                #expect(try old.fetch(FetchRequest(entity: "Folder")).contains { $0.attributes["name"] == .string("in the log") })
                try old.close()
            case .recreate:
                let loaded = try container.load()
                #expect(loaded.movedAside == nil)
                #expect(try loaded.viewContext.fetch(FetchRequest(entity: "Note")).isEmpty)
            }
            // The writer that had the store open before it was moved or replaced does not write into the old files.
            if policy != .fail {
                let late = try #require(throws: StoreError.self) { try writer.save(changes) }
                #expect(late.code == .storeReplaced, "\(late)")
            }
            try writer.close()
        }
    }

    @Test("recreate leaves a store a writer changed after it was judged incompatible as written, and recreates one no one wrote",
          arguments: ["sqlite", "lmdb", "atomic"])
    func recreateAfterWrite(_ type: String) throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", type)
        try makeStore(type, at: url, model: History.model("dev"), json: History.document("dev"))
        let storeType = Backends.type(type)
        let assessed = storeType.filesState(at: url)
        // Reading changes nothing that counts.
        let reader = try storeType.open(at: url, model: History.model("dev"), options: StoreOptions(readOnly: true))
        _ = try reader.fetch(FetchRequest(entity: "Note"))
        try reader.close()
        #expect(storeType.filesState(at: url) == assessed)
        // A writer commits one folder in between.
        let writer = try storeType.open(at: url, model: History.model("dev"), options: StoreOptions())
        var changes = ChangeSet()
        changes.inserted = [ObjectRecord(key: ObjectKey("Folder", try writer.allocatePrimaryKeys(entity: "Folder", count: 1).lowerBound),
                                         attributes: ["name": .string("written meanwhile")])]
        try writer.save(changes)
        try writer.close()
        let error = try #require(throws: StoreError.self) { try storeType.recreate(at: url, model: History.model("v4"), unchangedSince: assessed) }
        #expect(error.code == .busy && error.message.contains("left as written"), "\(error)")
        let kept = try storeType.open(at: url, model: History.model("dev"), options: StoreOptions(readOnly: true))
        #expect(try kept.fetch(FetchRequest(entity: "Folder")).contains { $0.attributes["name"] == .string("written meanwhile") })
        #expect(try kept.fetch(FetchRequest(entity: "Note")).count == 3)
        try kept.close()
        // Judged again, with no writer: recreated.
        try storeType.recreate(at: url, model: History.model("v4"), unchangedSince: storeType.filesState(at: url))
        #expect(try History.versions.version(matching: storeType.readMetadata(at: url)).name == "v4")
    }

    @Test("move-aside and recreate refuse, untouched: a store at a version the model has (no mapping for a step), of another type, of another model")
    func refusals() throws {
        let workspace = try Workspace()
        // At v1, with no mapping for v2 -> v3: a version the model has.
        let known = workspace.location("known", "sqlite")
        try makeStore("sqlite", at: known, model: History.model("v1"), json: History.document("v1"))
        // An atomic store where the container expects SQLite.
        let atomic = workspace.location("other-type", "sqlite")
        try makeStore("atomic", at: atomic, model: History.model("dev"), json: History.document("dev"))
        // A store of another model (no entity in common).
        let foreign = workspace.location("foreign", "sqlite")
        let otherModel = try ManagedObjectModel { Entity("Invoice") { Attribute("total", .double) } }
        try makeStore("sqlite", at: foreign, model: otherModel, json: #"{"Invoice": [{"_id": "i", "total": 3.5}]}"#)
        let before = try workspace.snapshot()
        for policy in [PersistentContainer.IncompatibleStorePolicy.moveAside, .recreate] {
            for (url, reason) in [(known, "at version v1"), (atomic, "type atomic, not sqlite"), (foreign, "shares no entity")] {
                let error = try #require(throws: MigrationError.self) { try container(url, policy, mappings: []).load() }
                #expect(error.code == .recoveryRefused && error.message.contains(reason), "\(error)")
            }
        }
        #expect(try workspace.snapshot() == before)
        #expect(!FileManager.default.fileExists(atPath: workspace.folder.appending(path: "Incompatible").path))
    }

    @Test("a container that does not migrate automatically refuses an older store and leaves it as it was")
    func noAutomaticMigration() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", "sqlite")
        try makeStore("sqlite", at: url, model: History.model("v3"), json: History.document("v3"))
        let before = try workspace.snapshot()
        let error = try #require(throws: MigrationError.self) { try container(url, .fail, migrates: false).load() }
        #expect(error.message.contains("v3") && error.message.contains("does not migrate automatically"))
        #expect(try workspace.snapshot() == before)
    }
}

@Suite("In-place steps on SQLite")
struct InPlaceTests {
    /// v1: Note(title). v2: title renamed heading, an optional body, a flag defaulting to true.
    /// v3: the flag removed, and a length rule on the heading (no longer in place: every object must be checked).
    static func model(_ version: Int) -> ManagedObjectModel {
        do {
            return try ManagedObjectModel(versionIdentifiers: ["p\(version)"]) {
                Entity("Note") {
                    if version == 1 { Attribute("title", .string, optional: false) }
                    if version == 2 { Attribute("heading", .string, optional: false, renamingIdentifier: "title") }
                    if version == 3 { Attribute("heading", .string, optional: false, validation: ValidationRules(maxLength: 100), renamingIdentifier: "title") }
                    if version >= 2 { Attribute("body", .string) }
                    if version == 2 { Attribute("flag", .boolean, optional: false, default: .boolean(true)) }
                }
            }
        } catch {
            preconditionFailure("\(error)")
        }
    }

    static let versions = try! ModelVersions(versions: (1...3).map { ModelVersions.Version(name: "p\($0)", model: model($0)) })

    @Test("added and renamed attributes change the file itself in one transaction: SQLite's own rows show the rename and the default, no copy is made")
    func addAndRename() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", "sqlite")
        try makeStore("sqlite", at: url, model: Self.model(1), json: #"{"Note": [{"_id": "a", "title": "one"}, {"_id": "b", "title": "two"}]}"#)
        let before = try #require(FileOperations.identity(url))
        let migrator = StoreMigrator(versions: Self.versions)
        let plan = try migrator.plan(forStoreAt: url, type: Backends.type("sqlite"), to: "p2")
        #expect(plan.steps.map(\.description) == ["p1 -> p2: in-place"])
        try migrator.migrateStore(at: url, type: Backends.type("sqlite"), to: "p2")
        #expect(FileOperations.identity(url) == before, "the same file, changed in place")
        #expect(try Set(workspace.snapshot().keys).allSatisfy { !$0.hasPrefix(".") })
        // The oracle: SQLite's own view of the rows.
        let rows = try RawDatabase(url, readOnly: true)
        defer { rows.close() }
        #expect(try rows.strings("SELECT ZHEADING || '|' || ZFLAG || '|' || coalesce(ZBODY, 'null') FROM ZNOTE ORDER BY Z_PK").map { $0[0] }
                 == ["one|1|null", "two|1|null"])
        #expect(try Self.versions.version(matching: Backends.type("sqlite").readMetadata(at: url)).name == "p2")
        let store = try Backends.type("sqlite").open(at: url, model: Self.model(2), options: StoreOptions(readOnly: true))
        defer { try? store.close() }
        #expect(try store.fetch(FetchRequest(entity: "Note")).map { $0.attributes } == [
            ["heading": .string("one"), "flag": .boolean(true)], ["heading": .string("two"), "flag": .boolean(true)],
        ])
    }

    @Test("a tightened rule is a copy step; in-place steps before a copy are copies too, so the original changes only at the end")
    func fallback() throws {
        let blockers = (Backends.type("sqlite") as! any SchemaChanging).schemaChangeBlockers(from: Self.model(2), to: Self.model(3))
        #expect(blockers == ["Note.heading: its rules changed, so every object must be checked"])
        let workspace = try Workspace()
        let url = workspace.location("notes", "sqlite")
        try makeStore("sqlite", at: url, model: Self.model(1), json: #"{"Note": [{"_id": "a", "title": "one"}]}"#)
        let migrator = StoreMigrator(versions: Self.versions)
        #expect(try migrator.plan(forStoreAt: url, type: Backends.type("sqlite")).steps.map(\.description) == ["p1 -> p2: lightweight", "p2 -> p3: lightweight"])
        try migrator.migrateStore(at: url, type: Backends.type("sqlite"))
        let store = try Backends.type("sqlite").open(at: url, model: Self.model(3), options: StoreOptions(readOnly: true))
        defer { try? store.close() }
        #expect(try store.fetch(FetchRequest(entity: "Note")).map { $0.attributes } == [["heading": .string("one")]])
    }
}

@Suite("An attribute becomes a related object, one per value (uniqueBy)")
struct UniqueByTests {
    static func model(_ version: Int) -> ManagedObjectModel {
        do {
            return try ManagedObjectModel(versionIdentifiers: ["c\(version)"]) {
                Entity("Post") {
                    Attribute("title", .string)
                    if version == 1 { Attribute("hex", .string) }
                    if version == 2 { Relationship("color", to: "Color", inverse: "posts") }
                }
                if version == 2 {
                    Entity("Color") {
                        Attribute("hex", .string, optional: false)
                        Relationship("posts", to: "Post", inverse: "color", toMany: true)
                    }
                }
            }
        } catch {
            preconditionFailure("\(error)")
        }
    }

    static let mapping = """
        {"format": "objectstore-mapping", "formatVersion": 1, "sourceVersion": "c1", "destinationVersion": "c2", "entityMappings": [
          {"name": "PostToColor", "kind": "transform", "source": "Post", "destination": "Color", "filter": "hex != nil",
           "attributes": {"hex": "lowercase($source.hex)"}, "uniqueBy": ["hex"]},
          {"name": "PostToPost", "kind": "transform", "source": "Post", "destination": "Post",
           "attributes": {"title": "$source.title"}, "relationships": {"color": "destinations('PostToColor', $source)"}}]}
        """

    @Test("posts with equal colours share one Color object, both sides of every relationship agree", arguments: StoreMigratorTests.durable)
    func colors(_ backend: String) throws {
        let workspace = try Workspace()
        let url = workspace.location("posts", backend)
        try makeStore(backend, at: url, model: Self.model(1), json: """
            {"Post": [{"_id": "a", "title": "A", "hex": "#F00"}, {"_id": "b", "title": "B", "hex": "#f00"},
                      {"_id": "c", "title": "C", "hex": "#0f0"}, {"_id": "d", "title": "D"}]}
            """)
        let versions = try ModelVersions(versions: [.init(name: "c1", model: Self.model(1)), .init(name: "c2", model: Self.model(2))])
        let mapping = try MappingFormat.decode(Data(Self.mapping.utf8))
        #expect(mapping.entityMappings.first?.uniqueBy == ["hex"])
        let before = try Backends.type(backend).readMetadata(at: url).storeUUID
        let postKeys = try {
            let store = try Backends.type(backend).open(at: url, model: Self.model(1), options: StoreOptions(readOnly: true))
            defer { try? store.close() }
            return Dictionary(uniqueKeysWithValues: try store.fetch(FetchRequest(entity: "Post")).map { ($0.attributes["title"]!, $0.key) })
        }()
        try StoreMigrator(versions: versions, mappings: [StepMapping(name: "colors.json", mapping: mapping)]).migrateStore(at: url, type: Backends.type(backend))
        let store = try Backends.type(backend).open(at: url, model: Self.model(2), options: StoreOptions(readOnly: true))
        defer { try? store.close() }
        let colors = try store.fetch(FetchRequest(entity: "Color"))
        #expect(colors.map { $0.attributes["hex"] }.sorted { "\($0!)" < "\($1!)" } == [.string("#0f0"), .string("#f00")])
        let posts = Dictionary(uniqueKeysWithValues: try store.fetch(FetchRequest(entity: "Post")).map { ($0.attributes["title"]!, $0) })
        let red = try #require(colors.first { $0.attributes["hex"] == .string("#f00") })
        #expect(posts[.string("A")]?.toOne["color"] == red.key && posts[.string("B")]?.toOne["color"] == red.key)
        #expect(posts[.string("C")]?.toOne["color"] != nil && posts[.string("C")]?.toOne["color"] != red.key)
        #expect(posts[.string("D")]?.toOne["color"] == nil)
        // Every post keeps its key, and the Colors are of an entity no old URI names: the store keeps its UUID.
        #expect(posts.mapValues(\.key) == postKeys)
        let after = try store.metadata().storeUUID
        #expect(before != nil && after == before)
        #expect(Set(try store.relatedKeys(of: red.key, relationship: "posts")) == [posts[.string("A")]!.key, posts[.string("B")]!.key])
        // Written back as data, the mapping keeps its uniqueBy.
        #expect(try MappingFormat.decode(MappingFormat.encode(mapping)).entityMappings.first?.uniqueBy == ["hex"])
    }
}

@Suite("Staged migration: a required attribute computed from others")
struct StagedMigrationTests {
    /// v1: first and last names. v2: fullName added, optional. v3: fullName required.
    static func model(_ version: Int) -> ManagedObjectModel {
        do {
            return try ManagedObjectModel(versionIdentifiers: ["s\(version)"]) {
                Entity("Person") {
                    Attribute("first", .string)
                    Attribute("last", .string)
                    if version >= 2 { Attribute("fullName", .string, optional: version == 2) }
                }
            }
        } catch {
            preconditionFailure("\(error)")
        }
    }

    static let versions = try! ModelVersions(versions: (1...3).map { ModelVersions.Version(name: "s\($0)", model: model($0)) })
    static let people = #"{"Person": [{"_id": "a", "first": "Ada", "last": "Lovelace"}, {"_id": "d", "first": "dup", "last": "x"}, {"_id": "g", "first": "Grace", "last": "Hopper"}]}"#

    static let stages: [MigrationStage] = [
        .custom(from: "s1", to: "s2", willMigrate: { context in
            // At the source version: duplicates go before the step.
            for person in try context.fetch(FetchRequest(entity: "Person")) where person["first"] == .string("dup") { context.delete(person) }
            try context.save()
        }, didMigrate: { context in
            // At the destination version: the new attribute computed from the others.
            for person in try context.fetch(FetchRequest(entity: "Person")) {
                try person.set("fullName", .string("\(person["first", as: String.self] ?? "") \(person["last", as: String.self] ?? "")"))
            }
            try context.save()
        }),
        .lightweight(from: "s2", to: "s3"),
    ]

    @Test("the classic decomposition: add it optional and fill it (a custom stage), then make it required (a lightweight stage)",
          arguments: StoreMigratorTests.durable + [PostgreSQLStore.typeName])
    func decomposition(_ backend: String) throws {
        let workspace = try Workspace()
        let url = workspace.location("people", backend)
        try makeStore(backend, at: url, model: Self.model(1), json: Self.people)
        // Core Data's rules alone cannot infer s2 → s3.
        #expect(throws: MigrationError.self) { try StoreMigrator(versions: Self.versions).plan(forStoreAt: url, type: Backends.type(backend)) }
        let migrator = StoreMigrator(versions: Self.versions, stages: Self.stages)
        let plan = try migrator.plan(forStoreAt: url, type: Backends.type(backend))
        #expect(plan.steps.map(\.description) == ["s1 -> s2: willMigrate, then lightweight, then didMigrate", "s2 -> s3: lightweight"])
        try migrator.migrateStore(at: url, type: Backends.type(backend))
        let store = try Backends.type(backend).open(at: url, model: Self.model(3), options: StoreOptions(readOnly: true))
        defer { try? store.close() }
        #expect(Set(try store.fetch(FetchRequest(entity: "Person")).map { $0.attributes["fullName"] }) == [.string("Ada Lovelace"), .string("Grace Hopper")])
        let left = try Set(workspace.snapshot().keys)
        #expect(left.allSatisfy { !$0.hasPrefix(".") }, "\(left)")
        // On a server: the copy the stage wrote to and the step's store were schemas of their own, gone.
        if backend == PostgreSQLStore.typeName { #expect(try PostgreSQLMigrationTests.schemas(beside: url) == [PostgreSQLMigrationTests.schema(url)]) }
    }

    @Test("a stage that leaves the attribute unfilled: the required step refuses, the original store is as it was")
    func unfilled() throws {
        let workspace = try Workspace()
        let url = workspace.location("people", "sqlite")
        try makeStore("sqlite", at: url, model: Self.model(1), json: Self.people)
        let before = try workspace.snapshot().filter { !$0.key.hasSuffix("-shm") }
        let stages: [MigrationStage] = [.custom(from: "s1", to: "s2", didMigrate: { context in
            let first = try context.fetch(FetchRequest(entity: "Person"))[0]
            try first.set("fullName", .string("only one"))
            try context.save()
        }), .lightweight(from: "s2", to: "s3")]
        let error = try #require(throws: MigrationError.self) {
            try StoreMigrator(versions: Self.versions, stages: stages).migrateStore(at: url, type: Backends.type("sqlite"))
        }
        #expect(error.code == .validationFailed, "\(error)")
        #expect(try workspace.snapshot().filter { !$0.key.hasSuffix("-shm") } == before)
    }
}

@Suite("Refusals before anything is written")
struct MigratorRefusalTests {
    @Test("a mapping that does not fit its models is refused by MappingModel.check, naming the mapping and what is wrong",
          arguments: [
            (#""uniqueBy": ["shade"]"#, "uniqueBy: Color has no attribute named shade"),
            (#""attributes": {"hex": "$source.colour"}"#, "$source.colour: Post has no property named colour"),
            (#""attributes": {"tint": "$source.hex"}"#, "Color has no attribute named tint"),
            (#""relationships": {"posts": "destinations('Nope', $source)"}"#, "destinations: no entity mapping named Nope"),
          ])
    func mappingChecked(_ fault: String, _ expected: String) throws {
        let text = """
            {"format": "objectstore-mapping", "formatVersion": 1, "entityMappings": [
              {"name": "PostToColor", "kind": "transform", "source": "Post", "destination": "Color", \(fault)}]}
            """
        let mapping = try MappingFormat.decode(Data(text.utf8))
        let error = try #require(throws: MigrationError.self) { try mapping.check(from: UniqueByTests.model(1), to: UniqueByTests.model(2)) }
        #expect(error.code == .invalidMapping && error.mapping == "PostToColor")
        #expect(error.message.contains(expected), "\(error.message)")
    }

    @Test("SQLite refuses a schema change it cannot do in place, or from another model, and leaves the file as it was")
    func schemaChangeRefused() throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", "sqlite")
        try makeStore("sqlite", at: url, model: InPlaceTests.model(1), json: #"{"Note": [{"_id": "a", "title": "one"}]}"#)
        let changer = try #require(Backends.type("sqlite") as? any SchemaChanging)
        let before = try workspace.snapshot().filter { !$0.key.hasSuffix("-shm") }
        let blocked = try #require(throws: StoreError.self) {
            try changer.changeSchema(at: url, through: [InPlaceTests.model(1), InPlaceTests.model(2), InPlaceTests.model(3)])
        }
        #expect(blocked.code == .invalidChange && blocked.message.contains("Note.heading: its rules changed"), "\(blocked.message)")
        let other = try #require(throws: StoreError.self) { try changer.changeSchema(at: url, through: [InPlaceTests.model(2), InPlaceTests.model(3)]) }
        #expect(other.code == .incompatibleModel)
        #expect(try workspace.snapshot().filter { !$0.key.hasSuffix("-shm") } == before)
    }

    @Test("a container moves a damaged store aside and starts a fresh one, with recreate too: a damaged store is never deleted",
          arguments: [PersistentContainer.IncompatibleStorePolicy.moveAside, .recreate])
    func damagedStoreMovedAside(_ policy: PersistentContainer.IncompatibleStorePolicy) throws {
        let workspace = try Workspace()
        let url = workspace.location("notes", "sqlite")
        let junk = Data("SQLite format 3\u{0}".utf8) + Data(repeating: 0x78, count: 200)
        try junk.write(to: url)
        let container = PersistentContainer(name: "Notes", versions: History.versions, storeURL: url, storeType: Backends.type("sqlite"),
                                            options: .init(onIncompatibleStore: policy), registry: Backends.registry)
        let loaded = try container.load()
        let aside = try #require(loaded.movedAside)
        #expect(try Data(contentsOf: aside) == junk)
        #expect(try loaded.viewContext.fetch(FetchRequest(entity: "Note")).isEmpty)
    }
}
