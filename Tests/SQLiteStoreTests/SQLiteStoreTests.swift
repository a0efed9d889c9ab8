import CSQLite
import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import SQLiteStore
import Testing
import TestSupport

/// A throwaway folder for one test.
typealias Folder = TemporaryFolder

@Suite("SQLiteStore layout and files")
struct SQLiteStoreTests {
    let type = SQLiteStoreType()

    func makeStore(_ url: URL, model: ManagedObjectModel = StoreConformance.model) throws -> any PersistentStore {
        try type.open(at: url, model: model, options: StoreOptions())
    }

    @Test("the schema follows Core Data's layout, as SQLite itself sees it")
    func schema() throws {
        let folder = try Folder()
        let url = folder.file("layout.sqlite")
        try makeStore(url).close()
        let db = try RawDatabase(url)
        defer { db.close() }
        #expect(try db.strings("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT") == [
            ["1", "Item", "0", "0"], ["2", "Person", "0", "0"], ["3", "Pet", "0", "0"], ["4", "Playlist", "0", "0"],
            ["5", "Tag", "0", "0"], ["6", "Track", "0", "0"], ["7", "Vehicle", "0", "0"], ["8", "Car", "7", "0"],
            ["9", "SportsCar", "8", "0"], ["10", "Truck", "7", "0"],
        ])
        let tables = Set(try db.strings("SELECT name FROM sqlite_master WHERE type = 'table'").map { $0[0] })
        #expect(tables == ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE", "ZITEM", "ZPERSON", "ZPET", "ZPLAYLIST", "ZTAG", "ZTRACK",
                           "ZVEHICLE", "Z_2FRIENDS", "Z_5TRACKS"])
        // One table per inheritance root; sub-entities' columns live in it. Columns in Core Data's
        // order: by declared type (INTEGER, TIMESTAMP, FLOAT, DECIMAL, VARCHAR, BLOB), then by entity,
        // then attributes, to-ones and order columns, then by name.
        #expect(try db.columns("ZVEHICLE") == ["Z_PK", "Z_ENT", "Z_OPT", "ZWHEELS", "ZSEATS", "ZPAYLOAD", "ZTOPSPEED"])
        // To-one foreign keys, the ordered to-many's order column on the destination.
        #expect(try db.columns("ZTRACK") == ["Z_PK", "Z_ENT", "Z_OPT", "ZPLAYLIST", "Z_FOK_PLAYLIST", "ZTITLE"])
        #expect(try db.columns("ZPET") == ["Z_PK", "Z_ENT", "Z_OPT", "ZOWNER", "ZNAME"])
        #expect(try db.columns("ZPERSON") == ["Z_PK", "Z_ENT", "Z_OPT", "ZAGE", "ZMANAGER", "ZSPOUSE", "ZNAME", "ZNICKNAME"])
        // Many-to-many join tables, columns named by entity number and the relationship that reaches the rows.
        #expect(try db.columns("Z_5TRACKS") == ["Z_5TAGS", "Z_6TRACKS"])
        #expect(try db.columns("Z_2FRIENDS") == ["Z_2FRIENDS", "Z_2FRIENDS1"])
        let indexes = Set(try db.strings("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").map { $0[0] })
        #expect(indexes.isSuperset(of: ["ZPET_ZOWNER_INDEX", "ZTRACK_ZPLAYLIST_INDEX", "ZPERSON_ZMANAGER_INDEX", "Z_5TRACKS_Z_6TRACKS_INDEX"]))
        // The entity column of a table that holds a hierarchy is indexed; of one that holds one entity, not.
        #expect(indexes.contains("ZVEHICLE_Z_ENT_INDEX") && !indexes.contains("ZPERSON_Z_ENT_INDEX"))
        #expect(try db.strings("PRAGMA auto_vacuum") == [["2"]])
        // Vehicle is abstract, a flag whose archived form no real archive shows: no model cache rather than a wrong one.
        #expect(try db.strings("SELECT count(*) FROM Z_MODELCACHE") == [["0"]])
        #expect(try db.strings("PRAGMA journal_mode") == [["wal"]])
        // The metadata is a binary property list Core Data can read.
        let plist = try db.strings("SELECT hex(Z_PLIST), Z_UUID FROM Z_METADATA")
        let data = try #require(Data(hexString: plist[0][0]))
        #expect(data.starts(with: Data("bplist00".utf8)))
        let metadata = StoreMetadata(try #require(PropertyListValue.decodeDictionary(data)))
        #expect(metadata.storeType == "SQLite")
        // The store UUID lives in Z_UUID, and only there, as in Core Data's stores.
        #expect(metadata.storeUUID == nil)
        #expect(UUID(uuidString: plist[0][1]) != nil)
        #expect(try type.readMetadata(at: url).storeUUID?.uuidString == plist[0][1])
        #expect(metadata[StoreMetadata.Key.versionHashesVersion] == .integer(3))
        #expect(metadata.versionHashes == StoreConformance.model.versionHashes)
        // Core Data's keys, with the types it writes them in (shared/fixtures/coredata-stores).
        #expect(metadata["NSPersistenceFrameworkVersion"] == .integer(1523))
        #expect(metadata["_NSAutoVacuumLevel"] == .string("2"))
        #expect(metadata["NSStoreModelVersionIdentifiers"] == .array([.string("conformance-1")]))
        #expect(metadata["NSStoreModelVersionHashesDigest"] == .string(StoreConformance.model.versionHashesDigest))
    }

    @Test("a many-to-many is laid out as in a real Core Data store")
    func coreDataJoinTable() throws {
        // The facts of a store Core Data wrote (bignerdranch/CoreDataStack TestModel).
        let model = try ManagedObjectModel {
            Entity("Author") {
                Attribute("firstName", .string)
                Attribute("lastName", .string)
                Relationship("books", to: "Book", inverse: "authors", toMany: true)
            }
            Entity("Book") {
                Attribute("title", .string)
                Relationship("authors", to: "Author", inverse: "books", toMany: true)
            }
        }
        let folder = try Folder()
        try makeStore(folder.file("t.sqlite"), model: model).close()
        let db = try RawDatabase(folder.file("t.sqlite"))
        defer { db.close() }
        #expect(try db.columns("ZAUTHOR") == ["Z_PK", "Z_ENT", "Z_OPT", "ZFIRSTNAME", "ZLASTNAME"])
        #expect(try db.columns("Z_1BOOKS") == ["Z_1AUTHORS", "Z_2BOOKS"])
        #expect(try db.strings("SELECT sql FROM sqlite_master WHERE name = 'Z_1BOOKS_Z_2BOOKS_INDEX'").first?.first?.contains("(\"Z_2BOOKS\", \"Z_1AUTHORS\")") == true)
    }

    @Test("a decimal is a number in its DECIMAL column where that is exact, else its text as a blob; each reads back exactly")
    func decimals() throws {
        let folder = try Folder()
        let url = folder.file("decimals.sqlite")
        let texts = ["10", "-3", "1.5", "0.1", "0.07", "123.456", "0.30000000000000004", "1e22",
                     "12345678901234567890.123", "3.14159265358979323846", "99999999999999999999"]
        let store = try makeStore(url)
        let keys = try store.allocatePrimaryKeys(entity: "Item", count: texts.count).map { ObjectKey("Item", $0) }
        try store.save(ChangeSet(inserted: zip(keys, texts).map { ObjectRecord(key: $0, attributes: ["decimal": .decimal(Decimal(string: $1)!)]) }))
        try store.close()
        do {
            // SQLite's own view: the storage class of each value.
            let db = try RawDatabase(url)
            defer { db.close() }
            #expect(try db.strings("SELECT typeof(ZDECIMAL) FROM ZITEM ORDER BY Z_PK").map { $0[0] }
                    == ["integer", "integer", "real", "real", "real", "real", "real", "real", "blob", "blob", "blob"])
            #expect(try db.strings("SELECT CAST(ZDECIMAL AS TEXT) FROM ZITEM WHERE typeof(ZDECIMAL) = 'blob' ORDER BY Z_PK").map { $0[0] }
                    == ["12345678901234567890.123", "3.14159265358979323846", "99999999999999999999"])
        }
        let reopened = try makeStore(url)
        defer { try? reopened.close() }
        for (key, text) in zip(keys, texts) {
            #expect(try reopened.record(for: key)?.attributes["decimal"] == .decimal(Decimal(string: text)!), "\(text)")
        }
    }

    @Test("decimals of every size, exponent and sign are stored as their text says: an integer, else a double whose shortest text is the same decimal, else the text")
    func generatedDecimals() throws {
        // Up to 22 digits, exponents from -30 to 30, and their neighbours in ten thousandths.
        var random = SeededGenerator(state: 23)
        var texts: [String] = []
        for _ in 0..<3_000 {
            let digits = String((0..<Int.random(in: 1...22, using: &random)).map { _ in Character(String(Int.random(in: 0...9, using: &random))) })
            let sign = Bool.random(using: &random) ? "-" : ""
            texts.append(Bool.random(using: &random) ? "\(sign)\(digits)e\(Int.random(in: -30...30, using: &random))"
                                                     : "\(sign)\(Int.random(in: 0...99_999, using: &random)).\(String(format: "%04d", Int.random(in: 0...9_999, using: &random)))")
        }
        let posix = Locale(identifier: "en_US_POSIX")
        let decimals = texts.map { Decimal(string: $0, locale: posix)! }
        let folder = try Folder()
        let url = folder.file("decimals.sqlite")
        let store = try makeStore(url)
        let keys = try store.allocatePrimaryKeys(entity: "Item", count: decimals.count).map { ObjectKey("Item", $0) }
        try store.save(ChangeSet(inserted: zip(keys, decimals).map { ObjectRecord(key: $0, attributes: ["decimal": .decimal($1)]) }))
        try store.close()
        let db = try RawDatabase(url)
        defer { db.close() }
        let rows = try db.strings("SELECT typeof(ZDECIMAL), printf('%!.17g', ZDECIMAL), CAST(ZDECIMAL AS TEXT) FROM ZITEM ORDER BY Z_PK")
        #expect(rows.count == decimals.count)
        for (row, (text, decimal)) in zip(rows, zip(texts, decimals)) {
            // The rule, from the text alone.
            let integer = Int64(decimal.description)
            let double = Double(decimal.description).flatMap { Decimal(string: String($0), locale: posix) == decimal ? $0 : nil }
            if let integer {
                #expect(row[0] == "integer" && row[2] == String(integer), "\(text): \(row)")
            } else if let double {
                #expect(row[0] == "real" && Double(row[1]) == double, "\(text): \(row)")
            } else {
                #expect(row[0] == "blob" && Decimal(string: row[2], locale: posix) == decimal, "\(text): \(row)")
            }
        }
        let reopened = try makeStore(url)
        defer { try? reopened.close() }
        for (key, decimal) in zip(keys, decimals) { #expect(try reopened.record(for: key)?.attributes["decimal"] == .decimal(decimal)) }
    }

    @Test("values are stored as the spec says; Z_OPT and Z_MAX are kept")
    func storedValues() throws {
        let folder = try Folder()
        let url = folder.file("values.sqlite")
        let store = try makeStore(url)
        let item = ObjectKey("Item", try store.allocatePrimaryKeys(entity: "Item", count: 1).lowerBound)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: item, attributes: [
            "flag": .boolean(true), "date": .date(Date(timeIntervalSinceReferenceDate: 10.5)),
            "uuid": .uuid(UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!), "decimal": .decimal(Decimal(string: "1.10")!),
            "uri": .uri(URL(string: "https://a.b/c")!),
        ])]))
        try store.save(ChangeSet(updated: [ObjectUpdate(key: item, attributes: ["i16": .integer(7)])]))
        try store.close()
        let db = try RawDatabase(url)
        defer { db.close() }
        // A decimal a double holds exactly is a number in its DECIMAL column, as Core Data keeps it.
        #expect(try db.strings("SELECT ZFLAG, ZDATE, hex(ZUUID), ZDECIMAL, typeof(ZDECIMAL), ZURI, Z_OPT, Z_ENT FROM ZITEM") ==
                [["1", "10.5", "00112233445566778899AABBCCDDEEFF", "1.1", "real", "https://a.b/c", "2", "1"]])
        #expect(try db.strings("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Item'") == [["1"]])
    }

    @Test("committed WAL content that was never checkpointed survives replace")
    func walSurvivesReplace() throws {
        let folder = try Folder()
        let source = folder.file("source.sqlite"), snapshot = folder.file("snapshot.sqlite"), destination = folder.file("dest.sqlite")
        try makeStore(source).close()
        try makeStore(destination).close()
        // Write through a second connection that never checkpoints, then copy the files
        // while it is still open: a store as a crash leaves it, its last writes only in the WAL.
        let writer = try RawDatabase(source, readOnly: false)
        try writer.execute("PRAGMA wal_autocheckpoint = 0")
        try writer.execute("INSERT INTO ZPET (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 3, 1, 'only in the WAL')")
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(at: URL(filePath: source.path + suffix), to: URL(filePath: snapshot.path + suffix))
        }
        writer.close()
        #expect((try FileManager.default.attributesOfItem(atPath: snapshot.path + "-wal")[.size] as? NSNumber)?.intValue ?? 0 > 0)

        try type.replace(at: destination, with: snapshot)
        #expect(!folder.files.contains { $0.hasPrefix("snapshot") })
        #expect(!FileManager.default.fileExists(atPath: destination.path + "-wal"), "the WAL was folded in before the move")
        let store = try makeStore(destination)
        #expect(try store.fetch(FetchRequest(entity: "Pet")).first?.attributes["name"] == .string("only in the WAL"))
        try store.close()
    }

    @Test("replace leaves no stale sidecar of the old destination")
    func noStaleSidecar() throws {
        let folder = try Folder()
        let source = folder.file("a.sqlite"), destination = folder.file("b.sqlite")
        try makeStore(source).close()
        try makeStore(destination).close()
        try Data("stale".utf8).write(to: URL(filePath: destination.path + "-wal"))
        try Data("stale".utf8).write(to: URL(filePath: destination.path + "-shm"))
        try type.replace(at: destination, with: source)
        #expect(folder.files == ["b.sqlite"])
        try makeStore(destination).close()
    }

    @Test("checkpoint folds the WAL in; destroy removes every file")
    func checkpointAndDestroy() throws {
        let folder = try Folder()
        let url = folder.file("c.sqlite")
        let store = try makeStore(url)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Pet", 1), attributes: ["name": .string("Rex")])]))
        #expect(FileManager.default.fileExists(atPath: url.path + "-wal"))
        try store.close()
        let writer = try RawDatabase(url, readOnly: false)
        try writer.execute("PRAGMA wal_autocheckpoint = 0")
        try writer.execute("INSERT INTO ZPET (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (2, 3, 1, 'Tom')")
        try type.checkpoint(at: url)
        #expect((try FileManager.default.attributesOfItem(atPath: url.path + "-wal")[.size] as? NSNumber)?.intValue == 0)
        // The main file alone (immutable: no WAL read) now holds both rows.
        let reader = try RawDatabase(URL(string: "file:\(url.path)?immutable=1")!)
        #expect(try reader.strings("SELECT count(*) FROM ZPET") == [["2"]])
        reader.close()
        writer.close()
        try type.destroy(at: url)
        #expect(folder.files.isEmpty)
    }

    /// Damaged or foreign files: a typed error, the bytes unchanged, no sidecar left behind.
    static let damages: [(String, @Sendable (URL) throws -> Void)] = [
        ("a text file", { try Data("hello\n".utf8).write(to: $0) }),
        ("an empty file", { try Data().write(to: $0) }),
        ("a truncated header", { url in try Data("SQLite format 3\0abc".utf8).write(to: url) }),
        ("a store cut in the middle of a page", { url in
            let data = try Data(contentsOf: url)
            try data.prefix(data.count - 100).write(to: url)
        }),
        ("a store cut at a page boundary", { url in
            let data = try Data(contentsOf: url)
            try data.prefix(4096).write(to: url)
        }),
        ("an invalid page size", { url in
            var data = try Data(contentsOf: url)
            data[16] = 0x03; data[17] = 0x00
            try data.write(to: url)
        }),
        ("pages overwritten with garbage", { url in
            var data = try Data(contentsOf: url)
            for i in 100..<data.count { data[i] = UInt8(truncatingIfNeeded: i &* 31) }
            try data.write(to: url)
        }),
        ("a SQLite database that is not a store", { url in
            try FileManager.default.removeItem(at: url)
            let db = try RawDatabase(url, readOnly: false, create: true)
            try db.execute("PRAGMA journal_mode = WAL; CREATE TABLE notes (body TEXT)")
            db.close()
        }),
        ("a store whose metadata is not a property list", { url in
            let db = try RawDatabase(url, readOnly: false)
            try db.execute("PRAGMA journal_mode = DELETE; UPDATE Z_METADATA SET Z_PLIST = x'00010203'")
            db.close()
        }),
        ("a store with no metadata row", { url in
            let db = try RawDatabase(url, readOnly: false)
            try db.execute("PRAGMA journal_mode = DELETE; DELETE FROM Z_METADATA")
            db.close()
        }),
        ("an atomic store file", { url in
            var data = Data("OBJSTORE".utf8)
            data.append(Data(count: 100))
            try data.write(to: url)
        }),
    ]

    @Test("a damaged file is a typed error and is left untouched", arguments: 0..<damages.count)
    func damaged(_ index: Int) throws {
        let (name, damage) = Self.damages[index]
        let folder = try Folder()
        let url = folder.file("bad.sqlite")
        let store = try makeStore(url)
        try store.save(ChangeSet(inserted: (1...50).map { ObjectRecord(key: ObjectKey("Pet", $0), attributes: ["name": .string(String(repeating: "x", count: 200))]) }))
        try store.close()
        try damage(url)
        let before = try Data(contentsOf: url)
        let filesBefore = folder.files
        for attempt in ["open", "readMetadata", "checkpoint"] {
            do {
                switch attempt {
                case "open":
                    let store = try makeStore(url)
                    _ = try store.fetch(FetchRequest(entity: "Pet"))
                    try store.close()
                case "readMetadata": _ = try type.readMetadata(at: url)
                default: try type.checkpoint(at: url)
                }
                Issue.record("\(name): \(attempt) accepted it")
            } catch let error as StoreError {
                #expect(error.code == .corrupt || error.code == .incompatibleModel, "\(name): \(attempt): \(error)")
                #expect(error.url?.path == url.path, "\(name): \(error)")
            }
            #expect(try Data(contentsOf: url) == before, "\(name): \(attempt) changed the file")
            #expect(folder.files == filesBefore, "\(name): \(attempt) left \(folder.files)")
        }
    }
}

@Suite("SQLiteStore options")
struct SQLiteOptionTests {
    @Test("journal_mode picks the journal; an unknown one is refused and leaves nothing")
    func journalMode() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("rollback.sqlite")
        let store = try SQLiteStoreType().open(at: url, model: StoreConformance.model, options: StoreOptions(settings: ["journal_mode": "delete"]))
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Pet", 1), attributes: ["name": .string("Rex")])]))
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"))
        try store.close()
        let db = try RawDatabase(url)
        #expect(try db.strings("PRAGMA journal_mode") == [["delete"]])
        db.close()
        do {
            _ = try SQLiteStoreType().open(at: folder.file("bad.sqlite"), model: StoreConformance.model,
                                           options: StoreOptions(settings: ["journal_mode": "sideways"]))
            Issue.record("an unknown journal mode was accepted")
        } catch let error as StoreError {
            #expect(error.code == .invalidChange)
            #expect(error.message.contains("SIDEWAYS"))
        }
        #expect(folder.files == ["rollback.sqlite"])
    }
}
