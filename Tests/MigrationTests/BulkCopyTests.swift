import CSQLite
import Foundation
import ObjectMigration
import Synchronization
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import SQLiteStore
import Testing
import TestSupport

/// Every row of every table of a SQLite file, as SQLite itself gives them (type and text of
/// each value), the store's own bookkeeping tables apart.
func rawRows(_ url: URL) throws -> [String: [String]] {
    var db: OpaquePointer?
    #expect(sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
    defer { sqlite3_close(db) }
    func query(_ sql: String) -> [[String]] {
        var statement: OpaquePointer?
        #expect(sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, "\(sql)")
        defer { sqlite3_finalize(statement) }
        var rows: [[String]] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            rows.append((0..<sqlite3_column_count(statement)).map { column in
                let type = sqlite3_column_type(statement, column)
                let text = sqlite3_column_text(statement, column).map { String(cString: $0) } ?? ""
                return "\(type):\(text)"
            })
        }
        return rows
    }
    var tables: [String: [String]] = [:]
    // The history is each store's own (a copy's records the copy): the object graph's rows are compared.
    for row in query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('Z_METADATA', 'Z_MODELCACHE', 'OS_TRANSACTION', 'sqlite_sequence')") {
        let name = String(row[0].dropFirst(2))
        tables[name] = query("SELECT * FROM \"\(name)\"").map { $0.joined(separator: "|") }.sorted()
    }
    return tables
}

/// Migrates with the identity mapping, bulk copy allowed or not; returns the progress it reported.
func identityMigrationLog(_ from: URL, to: URL, model: ManagedObjectModel, bulkCopy: Bool = true,
                          source: (any PersistentStore)? = nil) throws -> [MigrationProgress] {
    let log = Mutex<[MigrationProgress]>([])
    let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model), usesBulkCopy: bulkCopy) { progress in
        log.withLock { $0.append(progress) }
    }
    if let source {
        try manager.migrateStore(from: source, to: to, type: Backends.type("sqlite"))
    } else {
        try manager.migrateStore(at: from, type: Backends.type("sqlite"), to: to, type: Backends.type("sqlite"))
    }
    return log.withLock { $0 }
}

/// Migrates with the identity mapping; returns whether the objects moved in batches: only the
/// batch path reports phase 1 of an entity before its first object.
@discardableResult
func identityMigration(_ from: URL, to: URL, model: ManagedObjectModel, bulkCopy: Bool = true, source: (any PersistentStore)? = nil) throws -> Bool {
    try identityMigrationLog(from, to: to, model: model, bulkCopy: bulkCopy, source: source)
        .contains { $0.phase == .createObjects && $0.completed == 0 && $0.total > 0 }
}

/// Objects each entity mapping reported at the end of phase 1.
func phaseOneCounts(_ log: [MigrationProgress]) -> [String: Int] {
    Dictionary(log.filter { $0.phase == .createObjects }.map { ($0.mapping, $0.completed) }, uniquingKeysWith: max)
}

@Suite("Bulk copy inside SQLite")
struct BulkCopyTests {
    /// A SQLite store of the conformance data in `workspace`, and where its copy goes.
    static func conformanceSource(in workspace: Workspace) throws -> (from: URL, to: URL) {
        let from = workspace.location("source", "sqlite")
        try makeStore("sqlite", at: from, model: StoreConformance.model, json: conformanceData)
        return (from, workspace.location("copy", "sqlite"))
    }

    /// A connection to `from` that blanked the required name of the persons `keys` names,
    /// behind the store's back, and, `holdingLock`, holds the file's write lock as another writer.
    static func blankNames(_ keys: String, in from: URL, holdingLock: Bool) -> OpaquePointer? {
        var db: OpaquePointer?
        #expect(sqlite3_open(from.path, &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, "UPDATE ZPERSON SET ZNAME = NULL WHERE Z_PK IN (\(keys))", nil, nil, nil) == SQLITE_OK)
        if holdingLock { #expect(sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK) }
        return db
    }

    @Test("a convert between SQLite stores copies every row of every table as SQLite holds it, key counters included")
    func rowsAsTheyWere() throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let (from, to) = try Self.conformanceSource(in: workspace)
        let source = try Backends.type("sqlite").open(at: from, model: model, options: StoreOptions(readOnly: true))
        let snapshot = try source.snapshot()
        let probe = try Backends.type("sqlite").open(at: workspace.location("probe", "sqlite"), model: model, options: StoreOptions())
        let concrete = model.entityDescriptions.filter { !$0.isAbstract }.map(\.name)
        #expect((probe as? any BulkCopying)?.canCopyObjects(of: concrete, from: snapshot) == true)
        #expect((probe as? any BulkCopying)?.canCopyObjects(of: Array(concrete.dropFirst()), from: snapshot) == false, "only whole stores")
        let refused = try #require(throws: StoreError.self) { _ = try (probe as? any BulkCopying)?.copyObjects(of: Array(concrete.dropFirst()), from: snapshot) }
        #expect(refused.code == .invalidChange)
        #expect(try probe.count(FetchRequest(entity: "Person")) == 0, "a refused copy writes nothing")
        try probe.close()
        #expect(try identityMigration(from, to: to, model: model, source: snapshot) == false, "the objects moved in batches")
        try snapshot.close()
        try source.close()
        let expected = try rawRows(from)
        #expect(expected["ZPERSON"]?.count == 3 && expected["Z_PRIMARYKEY"] != nil)
        #expect(try rawRows(to) == expected)
        // The generic pipeline gives what the source exports, too.
        let generic = workspace.location("generic", "sqlite")
        #expect(try identityMigration(from, to: generic, model: model, bulkCopy: false), "bulk copy off: batches")
        #expect(try export("sqlite", at: generic, model: model) == export("sqlite", at: to, model: model))
    }

    @Test("a key counter left behind its keys in the source (changed behind its back) is moved past them by the bulk copy, as the batch path does: a new object gets a key not in use")
    func keyCounterBehindItsKeys() throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let (from, to) = try Self.conformanceSource(in: workspace)
        let raw = try RawDatabase(from, readOnly: false)
        let last = try raw.strings("SELECT max(Z_PK) FROM ZPERSON")[0][0]
        try raw.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Person'")
        raw.close()
        #expect(try identityMigration(from, to: to, model: model) == false, "copied in bulk")
        let copy = try RawDatabase(to)
        #expect(try copy.strings("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Person'") == [[last]])
        copy.close()
        let store = try SQLiteStoreType().open(at: to, model: model, options: StoreOptions())
        defer { try? store.close() }
        let key = try #require(try store.allocatePrimaryKeys(entity: "Person", count: 1).first)
        #expect(key > Int64(last)!)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Person", key), attributes: ["name": .string("New")])]))
    }

    @Test("a store written before external binary data was tagged is still copied in bulk when its model has no flagged attribute")
    func untaggedSource() throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        #expect(!model.entityDescriptions.contains { $0.storedAttributes.contains(where: \.allowsExternalBinaryDataStorage) })
        let (from, to) = try Self.conformanceSource(in: workspace)
        // What an earlier build wrote: the metadata without the tagging key.
        let raw = try RawDatabase(from, readOnly: false)
        let hex = try raw.strings("SELECT hex(Z_PLIST) FROM Z_METADATA")[0][0]
        let bytes = stride(from: 0, to: hex.count, by: 2).map { i -> UInt8 in
            let start = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
        var plist = try #require(PropertyListSerialization.propertyList(from: Data(bytes), format: nil) as? [String: Any])
        #expect(plist.removeValue(forKey: "ObjectStoreExternalBinaryData") != nil)
        try raw.execute("UPDATE Z_METADATA SET Z_PLIST = ?1", blob: try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0))
        raw.close()
        #expect(try identityMigration(from, to: to, model: model) == false, "copied in bulk, not in batches")
        #expect(try export("sqlite", at: to, model: model) == export("sqlite", at: from, model: model))
    }

    @Test("a store whose rules are broken is still refused after a bulk copy, and leaves nothing: narrowed beside the copy, or after it when another writer holds the source's lock",
          arguments: [false, true])
    func rulesStillChecked(writerHoldsLock: Bool) throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let (from, to) = try Self.conformanceSource(in: workspace)
        // Person.name is required: blank one out behind the store's back.
        let db = Self.blankNames("2", in: from, holdingLock: writerHoldsLock)
        defer { sqlite3_close(db) }
        let before = try Data(contentsOf: from)
        let error = try #require(throws: MigrationError.self) { try identityMigration(from, to: to, model: model) }
        #expect(error.code == .validationFailed)
        #expect(error.validationFailures.map { "\($0.objectID.entityName)/\($0.objectID.primaryKey).\($0.property)" } == ["Person/2.name"])
        #expect(!FileManager.default.fileExists(atPath: to.path))
        #expect(try Data(contentsOf: from) == before, "the source's lock was taken and given back, nothing written")
        if writerHoldsLock { #expect(sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK, "the other writer kept its lock") }
    }

    @Test("a relationship rule broken in the source (a to-many past its maximum) is refused after a bulk copy and after the batch path alike, naming the object; a store that keeps it is converted",
          arguments: [true, false])
    func relationshipRulesStillChecked(bulkCopy: Bool) throws {
        let workspace = try Workspace()
        let model = try ManagedObjectModel {
            Entity("Shelf") { Relationship("books", to: "Book", inverse: "shelf", toMany: true, maxCount: 2) }
            Entity("Book") { Relationship("shelf", to: "Shelf", inverse: "books") }
        }
        let from = workspace.location("source", "sqlite"), to = workspace.location("copy", "sqlite")
        let store = try SQLiteStoreType().open(at: from, model: model, options: StoreOptions())
        _ = try store.allocatePrimaryKeys(entity: "Shelf", count: 3)
        _ = try store.allocatePrimaryKeys(entity: "Book", count: 5)
        let shelves = [1, 1, 2, 2, 3]   // two books on shelves 1 and 2, one on 3
        try store.save(ChangeSet(inserted: (1...3).map { ObjectRecord(key: ObjectKey("Shelf", Int64($0))) }
            + shelves.enumerated().map { ObjectRecord(key: ObjectKey("Book", Int64($0.offset + 1)), toOne: ["shelf": ObjectKey("Shelf", Int64($0.element))]) }))
        try store.close()
        #expect(try identityMigration(from, to: to, model: model, bulkCopy: bulkCopy) == !bulkCopy, "the path asked for")
        try SQLiteStoreType().destroy(at: to)
        // A third book on shelf 2, behind the store's back.
        let raw = try RawDatabase(from, readOnly: false)
        try raw.execute("UPDATE ZBOOK SET ZSHELF = 2 WHERE Z_PK = 5")
        raw.close()
        let error = try #require(throws: MigrationError.self) { try identityMigration(from, to: to, model: model, bulkCopy: bulkCopy) }
        #expect(error.code == .validationFailed)
        #expect(Self.named(error) == ["Shelf/2.books maxCount"])
        #expect(!FileManager.default.fileExists(atPath: to.path))
        // Into LMDB, whose rows are written whole with their lists: the rules judged from those lists.
        let lmdb = workspace.location("copy", "lmdb")
        let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model))
        let intoLMDB = try #require(throws: MigrationError.self) { try manager.migrateStore(at: from, type: Backends.type("sqlite"), to: lmdb, type: Backends.type("lmdb")) }
        #expect(Self.named(intoLMDB) == ["Shelf/2.books maxCount"])
        #expect(!FileManager.default.fileExists(atPath: lmdb.path))
    }

    @Test("a value the reader refuses in a column without a rule, of an entity whose rules SQLite narrows, is refused by the bulk copy as by the batch path (the review found it copied)",
          arguments: ["ZN = 70000", "ZD = 'garbage'", "ZS = CAST(x'ff41' AS TEXT)", "ZS = x'ff'", "ZCODE = CAST(x'ff' AS TEXT)", "ZFLAG = 2"])
    func unreadableValuesStillRefused(_ damage: String) throws {
        let workspace = try Workspace()
        let model = try ManagedObjectModel {
            Entity("Owner") {
                Attribute("code", .string, validation: ValidationRules(pattern: ".+"))
                Attribute("n", .integer16)
                Attribute("d", .date)
                Attribute("s", .string)
                Attribute("flag", .boolean)
            }
        }
        let from = workspace.location("source", "sqlite")
        let store = try SQLiteStoreType().open(at: from, model: model, options: StoreOptions())
        _ = try store.allocatePrimaryKeys(entity: "Owner", count: 3)
        try store.save(ChangeSet(inserted: (1...3).map {
            ObjectRecord(key: ObjectKey("Owner", Int64($0)), attributes: ["code": .string("c\($0)"), "n": .integer(1), "s": .string("fine"), "flag": .boolean(true),
                                                                       "d": .date(Date(timeIntervalSinceReferenceDate: 0))])
        }))
        try store.close()
        let raw = try RawDatabase(from, readOnly: false)
        try raw.execute("UPDATE ZOWNER SET \(damage) WHERE Z_PK = 2")
        raw.close()
        for bulk in [true, false] {
            let to = workspace.location("copy-\(bulk)", "sqlite")
            let error = #expect(throws: (any Error).self, "\(damage), bulk \(bulk)") { try identityMigration(from, to: to, model: model, bulkCopy: bulk) }
            #expect(!FileManager.default.fileExists(atPath: to.path))
            if damage.contains("CAST"), !bulk {
                #expect("\(error.map { "\($0)" } ?? "")".contains("bytes that are not UTF-8 text"), "\(String(describing: error))")
            }
        }
    }

    /// A store of `shelves` shelves and `books` books, book n on shelf n % `shelves` + 1, whose
    /// shelf is required: its model and where it is.
    static func requiredShelves(_ shelves: Int, books: Int, in workspace: Workspace) throws -> (model: ManagedObjectModel, url: URL) {
        let model = try ManagedObjectModel {
            Entity("Shelf") { Relationship("books", to: "Book", inverse: "shelf", toMany: true) }
            Entity("Book") { Relationship("shelf", to: "Shelf", inverse: "books", optional: false) }
        }
        let from = workspace.location("source", "sqlite")
        let store = try SQLiteStoreType().open(at: from, model: model, options: StoreOptions())
        _ = try store.allocatePrimaryKeys(entity: "Shelf", count: shelves)
        _ = try store.allocatePrimaryKeys(entity: "Book", count: books)
        try store.save(ChangeSet(inserted: (1...shelves).map { ObjectRecord(key: ObjectKey("Shelf", Int64($0))) }
            + (1...books).map { ObjectRecord(key: ObjectKey("Book", Int64($0)), toOne: ["shelf": ObjectKey("Shelf", Int64($0 % shelves + 1))]) }))
        try store.close()
        return (model, from)
    }

    /// The objects and rules a migration's validation failures name.
    static func named(_ error: MigrationError) -> [String] {
        error.validationFailures.map { "\($0.objectID.entityName)/\($0.objectID.primaryKey).\($0.property) \($0.rule)" }
    }

    @Test("a required to-one left empty, or naming an object that is not there, behind the store's back, is refused into every backend (SQLite: bulk copy and batches; LMDB: whole rows)",
          arguments: ["NULL", "99"])
    func requiredToOneStillChecked(_ shelf: String) throws {
        let workspace = try Workspace()
        let (model, from) = try Self.requiredShelves(1, books: 3, in: workspace)
        let raw = try RawDatabase(from, readOnly: false)
        try raw.execute("UPDATE ZBOOK SET ZSHELF = \(shelf) WHERE Z_PK = 3")
        raw.close()
        for (ext, bulk) in [("sqlite", true)] + Backends.all.map({ ($0, false) }) {
            let to = workspace.location("copy-\(bulk)", ext)
            let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model), usesBulkCopy: bulk)
            do {
                try manager.migrateStore(at: from, type: Backends.type("sqlite"), to: to, type: Backends.type(ext))
                Issue.record("\(ext) \(bulk): converted")
            } catch let error as MigrationError {
                #expect(Self.named(error) == ["Book/3.shelf required"], "\(ext) \(bulk)")
            }
            #expect(!Backends.type(ext).storeExists(at: to), "\(ext) \(bulk)")
        }
    }

    @Test("required to-ones naming targets of small and huge keys convert into every backend; one naming a key that is not there, between them, is refused")
    func requiredToOnesOfEveryKey() throws {
        let workspace = try Workspace()
        let (model, from) = try Self.requiredShelves(2, books: 300, in: workspace)
        let raw = try RawDatabase(from, readOnly: false)
        try raw.execute("UPDATE ZSHELF SET Z_PK = 1099511627776 WHERE Z_PK = 2; UPDATE ZBOOK SET ZSHELF = 1099511627776 WHERE ZSHELF = 2; "
                        + "UPDATE Z_PRIMARYKEY SET Z_MAX = 1099511627776 WHERE Z_NAME = 'Shelf'")
        raw.close()
        for ext in Backends.all {
            let to = workspace.location("good-\(ext)", ext)
            let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model), usesBulkCopy: false)
            try manager.migrateStore(at: from, type: Backends.type("sqlite"), to: to, type: Backends.type(ext))
            #expect(try export(ext, at: to, model: model) == export("sqlite", at: from, model: model), "\(ext)")
        }
        let raw2 = try RawDatabase(from, readOnly: false)
        try raw2.execute("UPDATE ZBOOK SET ZSHELF = 1099511627775 WHERE Z_PK = 150")
        raw2.close()
        for ext in Backends.all {
            let to = workspace.location("bad-\(ext)", ext)
            let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model), usesBulkCopy: false)
            let error = try #require(throws: MigrationError.self, "\(ext)") { try manager.migrateStore(at: from, type: Backends.type("sqlite"), to: to, type: Backends.type(ext)) }
            #expect(Self.named(error) == ["Book/150.shelf required"], "\(ext)")
        }
    }

    @Test("a required to-one to a hierarchy whose target row lost its Z_ENT (NULL) is named by the narrowing beside the copy, as by the narrowing of the copy")
    func requiredToOneTargetWithoutEntity() throws {
        let workspace = try Workspace()
        let model = try ManagedObjectModel {
            Entity("Shelf") { Relationship("books", to: "Book", inverse: "shelf", toMany: true) }
            Entity("Bookcase", parent: "Shelf") {}
            Entity("Book") { Relationship("shelf", to: "Shelf", inverse: "books", optional: false) }
        }
        let from = workspace.location("source", "sqlite"), to = workspace.location("copy", "sqlite")
        let store = try SQLiteStoreType().open(at: from, model: model, options: StoreOptions())
        _ = try store.allocatePrimaryKeys(entity: "Shelf", count: 2)
        _ = try store.allocatePrimaryKeys(entity: "Book", count: 2)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Shelf", 1)), ObjectRecord(key: ObjectKey("Bookcase", 2))]
            + [ObjectRecord(key: ObjectKey("Book", 1), toOne: ["shelf": ObjectKey("Shelf", 1)]),
               ObjectRecord(key: ObjectKey("Book", 2), toOne: ["shelf": ObjectKey("Bookcase", 2)])]))
        try store.close()
        let raw = try RawDatabase(from, readOnly: false)
        #expect(try raw.columns("ZBOOK").contains { $0.hasSuffix("_SHELF") && $0 != "ZSHELF" }, "the to-one has an entity column")
        try raw.execute("UPDATE ZSHELF SET Z_ENT = NULL WHERE Z_PK = 2")
        raw.close()
        let source = try SQLiteStoreType().open(at: from, model: model, options: StoreOptions(readOnly: true))
        defer { try? source.close() }
        let destination = try SQLiteStoreType().open(at: to, model: model, options: StoreOptions())
        defer { try? destination.close() }
        let copier = try #require(destination as? SQLiteStore)
        let (_, mayBreak) = try copier.copyObjects(of: ["Shelf", "Bookcase", "Book"], from: source, narrowing: ["Book"])
        #expect(mayBreak["Book"] == [2])
        #expect(try copier.objectsThatMayBreakRules(of: "Book", after: nil, limit: 10)?.map(\.key.primaryKey) == [2], "the narrowing of the copy")
    }

    @Test("rows of no entity the table holds (another number, none, a fraction) are not copied, and the counts are the entities' own, as SQLite counts them in the source, into a destination that holds an object already")
    func strayRowsLeftOut() throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let (from, to) = try Self.conformanceSource(in: workspace)
        let raw = try RawDatabase(from, readOnly: false)
        let person = try raw.strings("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Person'")[0][0]
        let persons = try raw.strings("SELECT count(*) FROM ZPERSON WHERE Z_ENT = \(person)")[0][0]
        try raw.execute("INSERT INTO ZPERSON (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (9001, 99, 1, 'stray'), (9002, NULL, 1, 'stray'), (9003, \(person).5, 1, 'stray')")
        raw.close()
        // The store itself, not the manager, whose gate refuses such a source before any copy.
        let source = try SQLiteStoreType().open(at: from, model: model, options: StoreOptions(readOnly: true))
        defer { try? source.close() }
        let destination = try SQLiteStoreType().open(at: to, model: model, options: StoreOptions())
        let entities = model.entityDescriptions.filter { !$0.isAbstract }.map(\.name)
        // A destination that holds an object already: the counts are of the objects copied.
        let before = try RawDatabase(to, readOnly: false)
        try before.execute("INSERT INTO ZPERSON (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (8000, \(person), 1, 'there before')")
        before.close()
        let counts = try #require(destination as? SQLiteStore).copyObjects(of: entities, from: source)
        try destination.close()
        #expect(counts["Person"] == Int(persons))
        let copied = try RawDatabase(to, readOnly: true)
        defer { copied.close() }
        #expect(try copied.strings("SELECT count(*) FROM ZPERSON WHERE ZNAME = 'stray'") == [["0"]])
        #expect(try copied.strings("SELECT count(*) FROM ZPERSON") == [[String(Int(persons)! + 1)]])
    }

    @Test("a writer toggling a required value in the source while it is converted again and again: every conversion that succeeds holds the value, none copies it blank")
    func writerDuringCopies() throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let (from, _) = try Self.conformanceSource(in: workspace)
        let stop = Atomic<Bool>(false)
        let writer = Thread {
            var db: OpaquePointer?
            guard sqlite3_open(from.path, &db) == SQLITE_OK else { return }
            defer { sqlite3_close(db) }
            sqlite3_busy_timeout(db, 2_000)
            while !stop.load(ordering: .relaxed) {
                _ = sqlite3_exec(db, "UPDATE ZPERSON SET ZNAME = CASE WHEN ZNAME IS NULL THEN 'back' ELSE NULL END WHERE Z_PK = 2", nil, nil, nil)
            }
        }
        writer.start()
        defer { stop.store(true, ordering: .relaxed) }
        var refused = 0
        for run in 0..<24 {
            let to = workspace.location("copy\(run)", "sqlite")
            do {
                try identityMigration(from, to: to, model: model)
                let raw = try RawDatabase(to, readOnly: true)
                defer { raw.close() }
                #expect(try raw.strings("SELECT ZNAME IS NULL FROM ZPERSON WHERE Z_PK = 2") == [["0"]], "run \(run)")
            } catch let error as MigrationError where error.code == .validationFailed {
                refused += 1
                #expect(!FileManager.default.fileExists(atPath: to.path))
            }
        }
        stop.store(true, ordering: .relaxed)
        #expect(refused < 24, "some copies caught the value set")
    }

    @Test("the rule narrowing beside a bulk copy reads the source at the copy's moment: it names exactly the rows that may break a rule, as the narrowing of the copy after it does; none when another writer holds the source's lock",
          arguments: [false, true])
    func narrowedBesideTheCopy(writerHoldsLock: Bool) throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let (from, to) = try Self.conformanceSource(in: workspace)
        let db = Self.blankNames("2, 3", in: from, holdingLock: writerHoldsLock)
        defer { sqlite3_close(db) }
        let source = try SQLiteStoreType().open(at: from, model: model, options: StoreOptions(readOnly: true))
        defer { try? source.close() }
        let destination = try SQLiteStoreType().open(at: to, model: model, options: StoreOptions())
        defer { try? destination.close() }
        let copier = try #require(destination as? SQLiteStore)
        let entities = model.entityDescriptions.filter { !$0.isAbstract }.map(\.name)
        let ruled = entities.filter { ObjectValidator.hasAttributeRules(model.entity(named: $0)!) }
        #expect(ruled.contains("Person"))
        let (counts, mayBreak) = try copier.copyObjects(of: entities, from: source, narrowing: ruled)
        #expect(counts["Person"] ?? 0 >= 3)
        if writerHoldsLock {
            #expect(mayBreak.isEmpty, "left to the narrowing after the copy")
            #expect(sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK)
            return
        }
        // The oracle: the narrowing of the copy itself, page by page, after it.
        for entity in ruled {
            var after: Int64?
            var keys: [Int64] = []
            while let page = try copier.objectsThatMayBreakRules(of: entity, after: after, limit: 2), !page.isEmpty {
                keys += page.map(\.key.primaryKey)
                after = keys.last
            }
            #expect(mayBreak[entity] == keys, "\(entity)")
        }
        #expect(mayBreak["Person"] == [2, 3])
    }

    @Test("the narrowing beside a bulk copy, in parts shared with the copy's thread once the copy is done (the parts left, narrowed in the copy), names exactly what the narrowing of the copy after it names; an entity with more than 10,000 such rows across its parts is left to it",
          arguments: [false, true])
    func narrowingShared(manyBroken: Bool) throws {
        let workspace = try Workspace()
        // One large table whose narrowing takes longer than its copy, and small ones after it.
        let model = try ManagedObjectModel {
            Entity("Large") {
                for n in 0..<6 { Attribute("s\(n)", .string, optional: false, validation: ValidationRules(minLength: 2, maxLength: 40, pattern: "[a-z ]+")) }
            }
            for name in ["SmallA", "SmallB", "SmallC"] { Entity(name) { Attribute("code", .string, optional: false, validation: ValidationRules(maxLength: 3)) } }
        }
        let from = workspace.location("source", "sqlite"), to = workspace.location("copy", "sqlite")
        let store = try SQLiteStoreType().open(at: from, model: model, options: StoreOptions())
        let large = try store.allocatePrimaryKeys(entity: "Large", count: 60_000)
        try store.bulkInsert(large.map { key in
            ObjectRecord(key: ObjectKey("Large", key), attributes: Dictionary(uniqueKeysWithValues: (0..<6).map { ("s\($0)", .string("value " + String(repeating: "x", count: Int(key % 20)))) }))
        }, checkingReferences: false)
        for name in ["SmallA", "SmallB", "SmallC"] {
            let keys = try store.allocatePrimaryKeys(entity: name, count: 20)
            try store.save(ChangeSet(inserted: keys.map { ObjectRecord(key: ObjectKey(name, $0), attributes: ["code": .string("ab")]) }))
        }
        try store.close()
        // Broken behind the store's back, in every table.
        let raw = try RawDatabase(from, readOnly: false)
        // And a row whose key is near the top of the range, which breaks a rule too.
        let number = try raw.strings("SELECT Z_ENT FROM ZLARGE LIMIT 1")[0][0]
        try raw.execute("INSERT INTO ZLARGE (Z_PK, Z_ENT, Z_OPT, ZS0, ZS1, ZS2, ZS3, ZS4, ZS5) VALUES (4611686018427387904, \(number), 1, 'ab', 'ab', 'ab', 'UP', 'ab', 'ab')")
        try raw.execute("UPDATE ZLARGE SET ZS3 = 'UPPER' WHERE Z_PK % \(manyBroken ? 5 : 7919) = 0; UPDATE ZSMALLA SET ZCODE = 'long' WHERE Z_PK = 3; "
                        + "UPDATE ZSMALLB SET ZCODE = NULL WHERE Z_PK IN (1, 20); UPDATE ZSMALLC SET ZCODE = 'x' WHERE Z_PK = 5")
        raw.close()
        let source = try SQLiteStoreType().open(at: from, model: model, options: StoreOptions(readOnly: true))
        defer { try? source.close() }
        let destination = try SQLiteStoreType().open(at: to, model: model, options: StoreOptions())
        defer { try? destination.close() }
        let copier = try #require(destination as? SQLiteStore)
        let entities = ["Large", "SmallA", "SmallB", "SmallC"]
        let (_, mayBreak) = try copier.copyObjects(of: entities, from: source, narrowing: entities)
        for entity in entities where !(manyBroken && entity == "Large") {
            var after: Int64?
            var keys: [Int64] = []
            while let page = try copier.objectsThatMayBreakRules(of: entity, after: after, limit: 1_000), !page.isEmpty {
                keys += page.map(\.key.primaryKey)
                after = keys.last
            }
            #expect(mayBreak[entity]?.count == keys.count && mayBreak[entity] == keys, "\(entity): \(keys.count) keys")
        }
        #expect(mayBreak["SmallA"] == [3] && mayBreak["SmallB"] == [1, 20] && mayBreak["SmallC"] == [], "the oracle itself")
        // 12,000 rows break a rule, fewer than 10,000 in each part.
        #expect(mayBreak["Large"]?.count == (manyBroken ? nil : 8))
    }

    @Test("a bulk copy reports every entity's objects as SQLite counts them, in one-entity tables and hierarchy tables alike")
    func countsPerEntity() throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let (from, to) = try Self.conformanceSource(in: workspace)
        let reported = phaseOneCounts(try identityMigrationLog(from, to: to, model: model))
        // The oracle: SQLite's own count of each entity's rows in the source, by its Z_ENT number.
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(from.path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close(db) }
        func count(_ sql: String) -> Int {
            var statement: OpaquePointer?
            #expect(sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, "\(sql)")
            defer { sqlite3_finalize(statement) }
            return sqlite3_step(statement) == SQLITE_ROW ? Int(sqlite3_column_int64(statement, 0)) : -1
        }
        let expected: [String: (table: String, count: Int)] = [
            "Person": ("ZPERSON", 3), "Car": ("ZVEHICLE", 1), "SportsCar": ("ZVEHICLE", 1), "Truck": ("ZVEHICLE", 1), "Tag": ("ZTAG", 2),
        ]
        for (entity, (table, objects)) in expected {
            let number = count("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = '\(entity)'")
            #expect(count("SELECT count(*) FROM \(table) WHERE Z_ENT = \(number)") == objects)
            let mapping = try #require(MappingModel.identity(for: model).entityMappings.first { $0.sourceEntity == entity }?.name)
            #expect(reported[mapping] == objects, "\(entity)")
        }
    }

    /// Runs SQL on a store's file behind its back.
    func tamper(_ url: URL, _ sql: String) {
        var db: OpaquePointer?
        #expect(sqlite3_open(url.path, &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        #expect(sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK, "\(sql)")
    }

    @Test("files laid out otherwise than the store would lay them (columns in another order, extra or generated columns): the bulk copy gives exactly what the batch path gives; a file with rows no fetch sees is refused by both, never copied without them",
          arguments: ["ghost row", "ghost row in a hierarchy", "extra column", "generated column", "columns in another order"])
    func unusualFiles(_ scenario: String) throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let (from, _) = try Self.conformanceSource(in: workspace)
        switch scenario {
        case "ghost row": tamper(from, "INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZLABEL) VALUES (100, 999, 1, 'ghost')")
        case "ghost row in a hierarchy": tamper(from, "INSERT INTO ZVEHICLE (Z_PK, Z_ENT, Z_OPT) VALUES (100, 999, 1)")
        case "extra column": tamper(from, "ALTER TABLE ZTAG ADD COLUMN ZEXTRA VARCHAR; UPDATE ZTAG SET ZEXTRA = 'x'")
        case "generated column": tamper(from, "ALTER TABLE ZTAG ADD COLUMN ZGEN INTEGER GENERATED ALWAYS AS (Z_PK * 2) VIRTUAL")
        default:
            // ZPERSON rebuilt with its spouse and manager columns swapped in the file.
            let columns = ["Z_PK INTEGER PRIMARY KEY", "Z_ENT INTEGER", "Z_OPT INTEGER", "ZAGE INTEGER", "ZMANAGER INTEGER", "ZSPOUSE INTEGER",
                           "ZNAME VARCHAR", "ZNICKNAME VARCHAR"]
            let names = columns.map { String($0.split(separator: " ")[0]) }.joined(separator: ", ")
            tamper(from, "ALTER TABLE ZPERSON RENAME TO OLD; CREATE TABLE ZPERSON (\(columns.joined(separator: ", "))); "
                   + "INSERT INTO ZPERSON (\(names)) SELECT \(names) FROM OLD; DROP TABLE OLD")
        }
        if scenario.hasPrefix("ghost") {
            for bulk in [true, false] {
                let to = workspace.location("copy-\(bulk)", "sqlite")
                let error = try #require(throws: MigrationError.self) { _ = try identityMigrationLog(from, to: to, model: model, bulkCopy: bulk) }
                #expect("\(error)".contains("row 100 has Z_ENT 999"), "\(error)")
                #expect(!FileManager.default.fileExists(atPath: to.path))
            }
            return
        }
        func copy(bulk: Bool) throws -> (export: String, counts: [String: Int]) {
            let to = workspace.location("copy-\(bulk)", "sqlite")
            let counts = phaseOneCounts(try identityMigrationLog(from, to: to, model: model, bulkCopy: bulk))
            return (try export("sqlite", at: to, model: model), counts)
        }
        let (bulk, batches) = (try copy(bulk: true), try copy(bulk: false))
        #expect(bulk.export == batches.export)
        #expect(bulk.export == (try export("sqlite", at: from, model: model)), "what the source's fetches see")
        #expect(bulk.counts == batches.counts)
    }
}
