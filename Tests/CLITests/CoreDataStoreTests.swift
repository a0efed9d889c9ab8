import Foundation
import ObjectModel
import Testing
import TestSupport

/// Stores laid out as Apple's Core Data writes them (tables, Z_UUID, WAL content never
/// checkpointed, Z_FOK order numbers, a join table named by either side, inheritance in
/// one table, a hidden foreign key), read through the CLI with the app's model bundle.
/// The oracle is the rows written, spelled out by hand in each case's expected export.
@Suite("Core Data stores through the CLI")
struct CoreDataStoreTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        /// Version name → `contents` XML; the current version is the last.
        let versions: [(String, String)]
        /// The version the store was written with.
        let writtenWith: String
        let statements: [String]
        let walStatements: [String]
        let journalMode: String
        let keepsSharedMemory: Bool
        let uuid: String
        /// Objects per concrete entity.
        let counts: [String: Int]
        /// The export, as JSON values.
        let expected: [String: [[String: any Sendable]]]

        var testDescription: String { name }
        var storeName: String { "\(name).sqlite" }
    }

    static let cases: [Case] = [bookmarks, garage, blog, fleet]

    @Test("inspect, export, convert to LMDB and back, validate: nothing changes, the store's files least of all", arguments: cases)
    func throughTheCLI(_ c: Case) throws {
        let workspace = try Workspace()
        let (bundle, store) = try write(c, in: workspace)
        let before = CoreDataStoreFile.digests(URL(filePath: store))

        let inspect = try CLI.run("inspect", store, "--model", bundle)
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(inspect.stdout.contains("\nmodel version: \(c.writtenWith)\n"), "\(inspect.stdout)")
        #expect(inspect.stdout.contains("\nstore UUID: \(c.uuid)\n"))
        for (entity, count) in c.counts { #expect(inspect.stdout.contains("\n  \(entity) \(count)"), "\(entity) \(count): \(inspect.stdout)") }

        let export = try CLI.run("export", store, "--model", bundle)
        #expect(export.status == 0, "\(export.stderr)")
        let differences = JSONComparison.differences(export.stdout, c.expected)
        #expect(differences.isEmpty, "\(differences.prefix(10))")

        let lmdb = workspace.url.appending(path: "\(c.name).lmdb").path
        let back = workspace.url.appending(path: "\(c.name)-back.sqlite").path
        let toLMDB = try CLI.run("convert", store, lmdb, "--model", bundle)
        #expect(toLMDB.status == 0, "\(toLMDB.stderr)")
        let toSQLite = try CLI.run("convert", lmdb, back)
        #expect(toSQLite.status == 0, "\(toSQLite.stderr)")
        #expect(try CLI.run("export", lmdb).stdout == export.stdout)
        #expect(try CLI.run("export", back).stdout == export.stdout)
        for converted in [lmdb, back] {
            let validate = try CLI.run("validate", converted)
            #expect(validate.status == 0, "\(converted): \(validate.stdout) \(validate.stderr)")
            let inspected = try CLI.run("inspect", converted)
            #expect(inspected.stdout.contains("\nstore UUID: \(c.uuid)\n"), "a conversion keeps the store UUID")
        }
        #expect(try CLI.run("validate", store, "--model", bundle).status == 0)

        // The converted stores carry the app's own metadata, not Core Data's stale keys.
        let raw = try RawDatabase(URL(filePath: back))
        defer { raw.close() }
        #expect(try raw.strings("SELECT Z_UUID FROM Z_METADATA") == [[c.uuid]])
        let plist = try #require(try raw.strings("SELECT hex(Z_PLIST) FROM Z_METADATA").first?.first)
        let metadata = try #require(try PropertyListSerialization.propertyList(from: Data(hex: plist), format: nil) as? [String: Any])
        #expect(metadata["app.lastSync"] as? String == "yesterday")
        // Core Data's keys are the new store's own (this library's framework version), not the source's.
        #expect(metadata["NSPersistenceFrameworkVersion"] as? Int == 1523, "the source's framework version was carried over")
        #expect(metadata["NSPersistenceMaximumFrameworkVersion"] as? Int == 1523)

        #expect(CoreDataStoreFile.digests(URL(filePath: store)) == before, "the store's files changed")
    }

    @Test("a bundle without the store's version: the error names the closest version and what differs")
    func noMatchingVersion() throws {
        let workspace = try Workspace()
        let c = Self.blog
        var missing = c.versions
        missing.removeAll { $0.0 == c.writtenWith }
        let (bundle, store) = try write(c, in: workspace, versions: missing)
        let result = try CLI.run("inspect", store, "--model", bundle)
        #expect(result.status == 1)
        #expect(result.stderr.contains("no model version matches the store's entity hashes"), "\(result.stderr)")
        #expect(result.stderr.contains("the closest is Blog 3"), "\(result.stderr)")
        #expect(result.stderr.contains("entities whose hash differs: Post"), "\(result.stderr)")
        // Naming a version by hand that is not the store's: refused, naming the entities.
        let named = try CLI.run("export", store, "--model", bundle, "--model-version", "Blog")
        #expect(named.status == 1)
        #expect(named.stderr.contains("entities only in the store: Tag"), "\(named.stderr)")
        // --model-version without --model is a usage error.
        #expect(try CLI.run("export", store, "--model-version", "Blog").status == 64)
        // Without --model, a Core Data store has no model to open it with.
        let bare = try CLI.run("export", store)
        #expect(bare.status == 1)
        #expect(bare.stderr.contains("no embedded model (give --model"), "\(bare.stderr)")
    }

    @Test("a store whose tables do not fit the model is refused, naming the entity, table or column")
    func layoutMismatch() throws {
        let c = Self.fleet
        let broken: [(String, [String], String)] = [
            ("no column", c.statements.map { $0.replacingOccurrences(of: "ZLOAD FLOAT", with: "ZWEIGHT FLOAT") },
             "table ZVEHICLE has no column ZLOAD, which the model needs for Truck.load"),
            ("no table", c.statements.filter { !$0.contains("Z_4MEMBERS") },
             "the store has no table Z_4MEMBERS, which its model needs"),
            ("no entity row", c.statements.map { $0.replacingOccurrences(of: "(4, 'Club', 0, 1)", with: "(4, 'Society', 5, 1)") },
             "Z_PRIMARYKEY has no row for entity Club, which the model has"),
            ("another parent", c.statements.map { $0.replacingOccurrences(of: "(2, 'Truck', 1, 0)", with: "(2, 'Truck', 3, 0)") },
             "Z_PRIMARYKEY gives entity Truck the parent entity number 3, but its model parent is Vehicle (1)"),
        ]
        for (what, statements, message) in broken {
            let workspace = try Workspace()
            let variant = Case(name: c.name, versions: c.versions, writtenWith: c.writtenWith, statements: statements,
                               walStatements: c.walStatements, journalMode: c.journalMode, keepsSharedMemory: c.keepsSharedMemory,
                               uuid: c.uuid, counts: c.counts, expected: c.expected)
            let (bundle, store) = try write(variant, in: workspace)
            for command in ["inspect", "export", "validate"] {
                let result = try CLI.run(command, store, "--model", bundle)
                #expect(result.status == 1 && result.stderr.contains(message), "\(what), \(command): \(result.stderr)")
            }
        }
    }

    @Test("an entity Z_PRIMARYKEY knows by an older name is found by its renaming identifier, or as the one left under its parent")
    func renamedEntity() throws {
        let c = Self.fleet
        let renamed = c.versions.map { ($0.0, $0.1.replacingOccurrences(of: #"<entity name="Truck" "#, with: #"<entity name="Truck" elementID="Lorry" "#)) }
        for (what, versions, oldName) in [("renaming identifier", renamed, "Lorry"), ("place", c.versions, "Wagon")] {
            let workspace = try Workspace()
            let variant = Case(name: c.name, versions: versions, writtenWith: c.writtenWith,
                               statements: c.statements.map { $0.replacingOccurrences(of: "'Truck'", with: "'\(oldName)'") },
                               walStatements: c.walStatements, journalMode: c.journalMode, keepsSharedMemory: c.keepsSharedMemory,
                               uuid: c.uuid, counts: c.counts, expected: c.expected)
            let (bundle, store) = try write(variant, in: workspace)
            let export = try CLI.run("export", store, "--model", bundle)
            #expect(export.status == 0, "\(what): \(export.stderr)")
            let differences = JSONComparison.differences(export.stdout, c.expected)
            #expect(differences.isEmpty, "\(what): \(differences.prefix(5))")
        }
    }

    // MARK: Writing a case

    func write(_ c: Case, in workspace: Workspace, versions: [(String, String)]? = nil) throws -> (bundle: String, store: String) {
        let bundleName = "\(c.name).xcdatamodeld"
        for (name, contents) in versions ?? c.versions {
            _ = try workspace.write(contents, to: "\(bundleName)/\(name).xcdatamodel/contents")
        }
        _ = try workspace.write("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>\((versions ?? c.versions).last!.0).xcdatamodel</string></dict></plist>
            """, to: "\(bundleName)/.xccurrentversion")
        let written = try ModelLoader.loadFile(workspace.url.appending(path: "\(c.name)-written.xml"), writing: c.versions.first { $0.0 == c.writtenWith }!.1)
        let store = workspace.url.appending(path: c.storeName)
        try CoreDataStoreFile.write(
            to: store, statements: c.statements, walStatements: c.walStatements, journalMode: c.journalMode, uuid: c.uuid,
            metadata: CoreDataStoreFile.metadata(hashes: written.versionHashes, extra: ["app.lastSync": "yesterday"]),
            keepsSharedMemory: c.keepsSharedMemory)
        return (workspace.url.appending(path: bundleName).path, store.path)
    }
}

extension ModelLoader {
    /// Loads a model from XML text, by way of a file.
    static func loadFile(_ url: URL, writing contents: String) throws -> ManagedObjectModel {
        try Data(contents.utf8).write(to: url)
        return try loadFile(url)
    }
}

extension Data {
    init(hex: String) {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        self.init(bytes)
    }
}

// MARK: The cases

private let header = """
    <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
    <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="21754" systemVersion="22E261" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="">
    """

extension CoreDataStoreTests {
    /// A self-referential entity: an ordered to-many with a to-one inverse (Z_FOK_PARENT) and an
    /// ordered many-to-many with itself (Z_1FAVORITES); every row only in the WAL; written with
    /// the first of two versions that differ only by a hash modifier.
    static let bookmarks: Case = {
        func model(_ modifier: String) -> String {
            header + """
                <entity name="BookmarkEntity" representedClassName="BookmarkEntity" syncable="YES">
                    <attribute name="isFolder" attributeType="Boolean" usesScalarValueType="YES"/>
                    <attribute name="isPendingDeletion" optional="YES" attributeType="Boolean" defaultValueString="NO" usesScalarValueType="YES"/>
                    <attribute name="modifiedAt" optional="YES" attributeType="Date" usesScalarValueType="NO"/>
                    <attribute name="title" optional="YES" attributeType="String"\(modifier)/>
                    <attribute name="url" optional="YES" attributeType="String"/>
                    <attribute name="uuid" attributeType="String"/>
                    <relationship name="children" optional="YES" toMany="YES" deletionRule="Cascade" ordered="YES" destinationEntity="BookmarkEntity" inverseName="parent" inverseEntity="BookmarkEntity"/>
                    <relationship name="favoriteFolders" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="BookmarkEntity" inverseName="favorites" inverseEntity="BookmarkEntity"/>
                    <relationship name="favorites" optional="YES" toMany="YES" deletionRule="Nullify" ordered="YES" destinationEntity="BookmarkEntity" inverseName="favoriteFolders" inverseEntity="BookmarkEntity"/>
                    <relationship name="parent" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="BookmarkEntity" inverseName="children" inverseEntity="BookmarkEntity"/>
                </entity>
            </model>
            """
        }
        func bookmark(_ pk: Int, children: [Int] = [], favoriteFolders: [Int] = [], favorites: [Int] = [], folder: Bool, pending: Bool?,
                      modified: String?, parent: Int?, title: String?, url: String?, uuid: String) -> [String: any Sendable] {
            ["_id": "BookmarkEntity/\(pk)", "children": children.map { "BookmarkEntity/\($0)" },
             "favoriteFolders": favoriteFolders.map { "BookmarkEntity/\($0)" }, "favorites": favorites.map { "BookmarkEntity/\($0)" },
             "isFolder": folder, "isPendingDeletion": pending.map { $0 as any Sendable } ?? NSNull(),
             "modifiedAt": modified.map { $0 as any Sendable } ?? NSNull(), "parent": parent.map { "BookmarkEntity/\($0)" as any Sendable } ?? NSNull(),
             "title": title.map { $0 as any Sendable } ?? NSNull(), "url": url.map { $0 as any Sendable } ?? NSNull(), "uuid": uuid]
        }
        return Case(
            name: "Bookmarks",
            versions: [("Bookmarks", model("")), ("Bookmarks 2", model(#" versionHashModifier="2""#))],
            writtenWith: "Bookmarks",
            statements: [
                "CREATE TABLE ZBOOKMARKENTITY ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZISFOLDER INTEGER, ZISPENDINGDELETION INTEGER, ZPARENT INTEGER, Z_FOK_PARENT INTEGER, ZMODIFIEDAT TIMESTAMP, ZTITLE VARCHAR, ZURL VARCHAR, ZUUID VARCHAR )",
                "CREATE TABLE Z_1FAVORITES ( Z_1FAVORITEFOLDERS INTEGER, Z_1FAVORITES INTEGER, Z_FOK_1FAVORITES INTEGER, PRIMARY KEY (Z_1FAVORITEFOLDERS, Z_1FAVORITES) )",
                "CREATE INDEX ZBOOKMARKENTITY_ZPARENT_INDEX ON ZBOOKMARKENTITY (ZPARENT)",
                "CREATE INDEX Z_1FAVORITES_Z_1FAVORITES_INDEX ON Z_1FAVORITES (Z_1FAVORITES, Z_1FAVORITEFOLDERS)",
                "INSERT INTO Z_PRIMARYKEY VALUES (1, 'BookmarkEntity', 0, 0)",
            ],
            walStatements: [
                "INSERT INTO ZBOOKMARKENTITY VALUES (1, 1, 1, 1, 0, NULL, NULL, 731947175.405005, 'root', NULL, 'u1')",
                "INSERT INTO ZBOOKMARKENTITY VALUES (2, 1, 1, 1, 0, 1, 2048, NULL, 'folder', NULL, 'u2')",
                "INSERT INTO ZBOOKMARKENTITY VALUES (3, 1, 1, 0, NULL, 1, 3072, 731947175.4, 'a', 'https://a.example', 'u3')",
                "INSERT INTO ZBOOKMARKENTITY VALUES (4, 1, 3, 0, 1, 2, 2048, 731947175.404992, 'b', 'https://b.example', 'u4')",
                "INSERT INTO ZBOOKMARKENTITY VALUES (5, 1, 1, 0, 0, 1, 1024, NULL, NULL, NULL, 'u5')",
                "INSERT INTO Z_1FAVORITES VALUES (2, 4, 2048)",
                "INSERT INTO Z_1FAVORITES VALUES (2, 3, 1024)",
                "INSERT INTO Z_1FAVORITES VALUES (1, 5, 2048)",
                "UPDATE Z_PRIMARYKEY SET Z_MAX = 5 WHERE Z_ENT = 1",
            ],
            journalMode: "wal", keepsSharedMemory: true, uuid: "8E430534-5F59-49DB-9479-C3290AE2713E",
            counts: ["BookmarkEntity": 5],
            expected: ["BookmarkEntity": [
                bookmark(1, children: [5, 2, 3], favorites: [5], folder: true, pending: false, modified: "2024-03-12T14:39:35.405005Z",
                         parent: nil, title: "root", url: nil, uuid: "u1"),
                bookmark(2, children: [4], favorites: [3, 4], folder: true, pending: false, modified: nil, parent: 1, title: "folder", url: nil, uuid: "u2"),
                bookmark(3, favoriteFolders: [2], folder: false, pending: nil, modified: "2024-03-12T14:39:35.400Z", parent: 1, title: "a",
                         url: "https://a.example", uuid: "u3"),
                bookmark(4, favoriteFolders: [2], folder: false, pending: true, modified: "2024-03-12T14:39:35.404992Z", parent: 2, title: "b",
                         url: "https://b.example", uuid: "u4"),
                bookmark(5, favoriteFolders: [1], folder: false, pending: false, modified: nil, parent: 1, title: nil, url: nil, uuid: "u5"),
            ]])
    }()

    /// Inheritance three deep in one table, a to-many without inverse (Core Data's hidden
    /// foreign key), decimals stored as REAL and INTEGER, a UUID blob, a transformable blob,
    /// a date before 2001, keys not starting at 1, versions above 1, a rollback journal.
    static let garage: Case = {
        let model = header + """
                <entity name="Car" representedClassName="Car" syncable="YES">
                    <attribute name="added" optional="YES" attributeType="Date" usesScalarValueType="NO"/>
                    <attribute name="color" optional="YES" attributeType="Transformable" valueTransformerName="ColorTransformer"/>
                    <attribute name="maker" optional="YES" attributeType="String"/>
                    <attribute name="numberPlate" attributeType="String"/>
                    <attribute name="uuid" optional="YES" attributeType="UUID" usesScalarValueType="NO"/>
                    <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person" inverseName="cars" inverseEntity="Person"/>
                    <uniquenessConstraints><uniquenessConstraint><constraint value="numberPlate"/></uniquenessConstraint></uniquenessConstraints>
                </entity>
                <entity name="ExpensiveSportCar" representedClassName="ExpensiveSportCar" parentEntity="SportCar" syncable="YES">
                    <attribute name="price" optional="YES" attributeType="Decimal" defaultValueString="0.0"/>
                </entity>
                <entity name="Person" representedClassName="Person" syncable="YES">
                    <attribute name="firstName" attributeType="String"/>
                    <attribute name="isDriving" optional="YES" transient="YES" attributeType="Boolean" usesScalarValueType="YES"/>
                    <attribute name="lastName" optional="YES" attributeType="String"/>
                    <relationship name="cars" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Car" inverseName="owner" inverseEntity="Car"/>
                    <relationship name="visits" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Car"/>
                </entity>
                <entity name="SportCar" representedClassName="SportCar" parentEntity="Car" syncable="YES">
                    <attribute name="topSpeed" optional="YES" attributeType="Double" defaultValueString="0.0" usesScalarValueType="YES"/>
                </entity>
            </model>
            """
        func car(_ entity: String, _ pk: Int, plate: String, maker: String?, added: String?, uuid: String?, color: String?, owner: Int?,
                 extra: [String: any Sendable] = [:]) -> [String: any Sendable] {
            var object: [String: any Sendable] = [
                "_id": "\(entity)/\(pk)", "numberPlate": plate, "maker": maker.map { $0 as any Sendable } ?? NSNull(),
                "added": added.map { $0 as any Sendable } ?? NSNull(), "uuid": uuid.map { $0 as any Sendable } ?? NSNull(),
                "color": color.map { $0 as any Sendable } ?? NSNull(), "owner": owner.map { "Person/\($0)" as any Sendable } ?? NSNull(),
            ]
            for (key, value) in extra { object[key] = value }
            return object
        }
        return Case(
            name: "Garage",
            versions: [("Garage", model)],
            writtenWith: "Garage",
            statements: [
                "CREATE TABLE ZCAR ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZOWNER INTEGER, Z4VISITS INTEGER, ZADDED TIMESTAMP, ZTOPSPEED FLOAT, ZPRICE DECIMAL, ZMAKER VARCHAR, ZNUMBERPLATE VARCHAR, ZCOLOR BLOB, ZUUID BLOB )",
                "CREATE TABLE ZPERSON ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZFIRSTNAME VARCHAR, ZLASTNAME VARCHAR )",
                "CREATE INDEX ZCAR_ZOWNER_INDEX ON ZCAR (ZOWNER)",
                "CREATE INDEX ZCAR_Z4VISITS_INDEX ON ZCAR (Z4VISITS)",
                "CREATE INDEX ZCAR_Z_ENT_INDEX ON ZCAR (Z_ENT)",
                "CREATE UNIQUE INDEX Z_Car_UNIQUE_numberPlate ON ZCAR (ZNUMBERPLATE COLLATE BINARY ASC)",
                "INSERT INTO Z_PRIMARYKEY VALUES (1, 'Car', 0, 13), (2, 'SportCar', 1, 0), (3, 'ExpensiveSportCar', 2, 0), (4, 'Person', 0, 4)",
                "INSERT INTO ZPERSON VALUES (3, 4, 2, 'Ada', 'Lovelace'), (4, 4, 3, 'Bob', NULL)",
                "INSERT INTO ZCAR VALUES (9, 1, 1, 3, 4, -31536000.5, NULL, NULL, 'Fiat', 'AB-1', NULL, X'00112233445566778899AABBCCDDEEFF')",
                "INSERT INTO ZCAR VALUES (10, 2, 2, 3, NULL, 500000000.125, 301.5, NULL, 'Porsche', 'CD-2', X'0102', NULL)",
                "INSERT INTO ZCAR VALUES (11, 3, 1, 4, 4, NULL, 350.0, 19.99, NULL, 'EF-3', NULL, NULL)",
                "INSERT INTO ZCAR VALUES (12, 3, 1, NULL, NULL, NULL, NULL, 250000, 'Bugatti', 'GH-4', NULL, NULL)",
                "INSERT INTO ZCAR VALUES (13, 1, 1, NULL, NULL, 86400.25, NULL, NULL, NULL, 'IJ-5', NULL, NULL)",
            ],
            walStatements: [], journalMode: "delete", keepsSharedMemory: false, uuid: "753753D3-A961-4901-AB05-8CC48B1D3853",
            counts: ["Car": 2, "SportCar": 1, "ExpensiveSportCar": 2, "Person": 2],
            expected: [
                "Car": [
                    car("Car", 9, plate: "AB-1", maker: "Fiat", added: "2000-01-01T23:59:59.500Z", uuid: "00112233-4455-6677-8899-AABBCCDDEEFF",
                        color: nil, owner: 3),
                    car("Car", 13, plate: "IJ-5", maker: nil, added: "2001-01-02T00:00:00.250Z", uuid: nil, color: nil, owner: nil),
                ],
                "SportCar": [
                    car("SportCar", 10, plate: "CD-2", maker: "Porsche", added: "2016-11-05T00:53:20.125Z", uuid: nil, color: "AQI=", owner: 3,
                        extra: ["topSpeed": 301.5]),
                ],
                "ExpensiveSportCar": [
                    car("ExpensiveSportCar", 11, plate: "EF-3", maker: nil, added: nil, uuid: nil, color: nil, owner: 4,
                        extra: ["topSpeed": 350.0, "price": "19.99"]),
                    car("ExpensiveSportCar", 12, plate: "GH-4", maker: "Bugatti", added: nil, uuid: nil, color: nil, owner: nil,
                        extra: ["topSpeed": NSNull(), "price": "250000"]),
                ],
                "Person": [
                    ["_id": "Person/3", "firstName": "Ada", "lastName": "Lovelace", "cars": ["Car/9", "SportCar/10"], "visits": [String]()],
                    ["_id": "Person/4", "firstName": "Bob", "lastName": NSNull(), "cars": ["ExpensiveSportCar/11"],
                     "visits": ["Car/9", "ExpensiveSportCar/11"]],
                ],
            ])
    }()

    /// Entity numbers other than the ones this library gives a new store of the model (roots
    /// by name would make Club 1, Driver 2, Vehicle 3, Truck 4): every name that holds a number
    /// follows the file's, the hidden foreign key (Z3VISITED), the entity column of a to-one to
    /// an entity with sub-entities (Z1_FAVORITE) and the join table's (Z_4MEMBERS).
    static let fleet: Case = {
        let model = header + """
                <entity name="Club" representedClassName="Club" syncable="YES">
                    <attribute name="title" attributeType="String"/>
                    <relationship name="members" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Driver" inverseName="clubs" inverseEntity="Driver"/>
                </entity>
                <entity name="Driver" representedClassName="Driver" syncable="YES">
                    <attribute name="name" attributeType="String"/>
                    <relationship name="clubs" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Club" inverseName="members" inverseEntity="Club"/>
                    <relationship name="favorite" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Vehicle"/>
                    <relationship name="vehicles" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Vehicle" inverseName="owner" inverseEntity="Vehicle"/>
                    <relationship name="visited" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Vehicle"/>
                </entity>
                <entity name="Truck" representedClassName="Truck" parentEntity="Vehicle" syncable="YES">
                    <attribute name="load" optional="YES" attributeType="Double" usesScalarValueType="YES"/>
                </entity>
                <entity name="Vehicle" representedClassName="Vehicle" syncable="YES">
                    <attribute name="plate" attributeType="String"/>
                    <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Driver" inverseName="vehicles" inverseEntity="Driver"/>
                </entity>
            </model>
            """
        return Case(
            name: "Fleet",
            versions: [("Fleet", model)],
            writtenWith: "Fleet",
            statements: [
                "CREATE TABLE ZVEHICLE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZPLATE VARCHAR, ZOWNER INTEGER, ZLOAD FLOAT, Z3VISITED INTEGER )",
                "CREATE TABLE ZDRIVER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR, ZFAVORITE INTEGER, Z1_FAVORITE INTEGER )",
                "CREATE TABLE ZCLUB ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR )",
                "CREATE TABLE Z_4MEMBERS ( Z_4CLUBS INTEGER, Z_3MEMBERS INTEGER, PRIMARY KEY (Z_4CLUBS, Z_3MEMBERS) )",
                "INSERT INTO Z_PRIMARYKEY VALUES (1, 'Vehicle', 0, 3), (2, 'Truck', 1, 0), (3, 'Driver', 0, 2), (4, 'Club', 0, 1)",
                "INSERT INTO ZVEHICLE VALUES (1, 1, 1, 'V-1', 1, NULL, NULL), (2, 2, 1, 'T-2', 1, 12.5, 2), (3, 1, 1, 'V-3', NULL, NULL, 2)",
                "INSERT INTO ZDRIVER VALUES (1, 3, 1, 'Ann', 2, 2), (2, 3, 1, 'Ben', NULL, NULL)",
                "INSERT INTO ZCLUB VALUES (1, 4, 1, 'Chess')",
                "INSERT INTO Z_4MEMBERS VALUES (1, 1), (1, 2)",
            ],
            walStatements: [], journalMode: "wal", keepsSharedMemory: true, uuid: "0B5C1E52-2A43-4C39-9E0C-3E4A2A9F7D11",
            counts: ["Vehicle": 2, "Truck": 1, "Driver": 2, "Club": 1],
            expected: [
                "Vehicle": [
                    ["_id": "Vehicle/1", "plate": "V-1", "owner": "Driver/1"],
                    ["_id": "Vehicle/3", "plate": "V-3", "owner": NSNull()],
                ],
                "Truck": [["_id": "Truck/2", "plate": "T-2", "load": 12.5, "owner": "Driver/1"]],
                "Driver": [
                    ["_id": "Driver/1", "name": "Ann", "clubs": ["Club/1"], "favorite": "Truck/2", "vehicles": ["Truck/2", "Vehicle/1"],
                     "visited": [String]()],
                    ["_id": "Driver/2", "name": "Ben", "clubs": ["Club/1"], "favorite": NSNull(), "vehicles": [String](),
                     "visited": ["Truck/2", "Vehicle/3"]],
                ],
                "Club": [["_id": "Club/1", "title": "Chess", "members": ["Driver/1", "Driver/2"]]],
            ])
    }()

    /// Three versions, the store at the middle one; a one-to-one with a foreign key on each
    /// table; a many-to-many whose join table is named by the side this library would not
    /// pick; an Integer 16; a string long enough for overflow pages; rows only in a WAL
    /// that has no -shm beside it.
    static let blog: Case = {
        let long = String(repeating: "Lorem ipsum dolor sit amet. ", count: 400)
        func model(version: Int) -> String {
            header + """
                <entity name="Color" representedClassName="Color" syncable="YES">
                    <attribute name="hex" attributeType="String"/>
                    <relationship name="post" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Post" inverseName="color" inverseEntity="Post"/>
                </entity>
                <entity name="Post" representedClassName="Post" syncable="YES">
                    <attribute name="body" optional="YES" attributeType="String"/>
                    <attribute name="index" optional="YES" attributeType="Integer 16" defaultValueString="0" usesScalarValueType="YES"/>
                    \(version >= 3 ? #"<attribute name="subtitle" optional="YES" attributeType="String"/>"# : "")
                    <relationship name="color" optional="YES" maxCount="1" deletionRule="Cascade" destinationEntity="Color" inverseName="post" inverseEntity="Color"/>
                    \(version >= 2 ? #"<relationship name="tags" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Tag" inverseName="posts" inverseEntity="Tag"/>"# : "")
                </entity>
                \(version >= 2 ? """
                <entity name="Tag" representedClassName="Tag" syncable="YES">
                    <attribute name="label" attributeType="String"/>
                    <relationship name="posts" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Post" inverseName="tags" inverseEntity="Post"/>
                </entity>
                """ : "")
            </model>
            """
        }
        return Case(
            name: "Blog",
            versions: [("Blog", model(version: 1)), ("Blog 2", model(version: 2)), ("Blog 3", model(version: 3))],
            writtenWith: "Blog 2",
            statements: [
                "CREATE TABLE ZCOLOR ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZPOST INTEGER, ZHEX VARCHAR )",
                "CREATE TABLE ZPOST ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZINDEX INTEGER, ZCOLOR INTEGER, ZBODY VARCHAR )",
                "CREATE TABLE ZTAG ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZLABEL VARCHAR )",
                "CREATE TABLE Z_3POSTS ( Z_2POSTS INTEGER, Z_3TAGS INTEGER, PRIMARY KEY (Z_2POSTS, Z_3TAGS) )",
                "CREATE INDEX ZCOLOR_ZPOST_INDEX ON ZCOLOR (ZPOST)",
                "CREATE INDEX ZPOST_ZCOLOR_INDEX ON ZPOST (ZCOLOR)",
                "CREATE INDEX Z_3POSTS_Z_3TAGS_INDEX ON Z_3POSTS (Z_3TAGS, Z_2POSTS)",
                "INSERT INTO Z_PRIMARYKEY VALUES (1, 'Color', 0, 0), (2, 'Post', 0, 0), (3, 'Tag', 0, 0)",
            ],
            walStatements: [
                "INSERT INTO ZCOLOR VALUES (1, 1, 1, 2, '#ff0000'), (2, 1, 1, NULL, '#00ff00')",
                "INSERT INTO ZPOST VALUES (1, 2, 1, -32768, NULL, '\(long)'), (2, 2, 1, 32767, 1, NULL), (3, 2, 1, NULL, NULL, '')",
                "INSERT INTO ZTAG VALUES (1, 3, 1, 'swift'), (2, 3, 1, 'sql')",
                "INSERT INTO Z_3POSTS VALUES (1, 1), (1, 2), (3, 2)",
                "UPDATE Z_PRIMARYKEY SET Z_MAX = 2 WHERE Z_ENT = 1",
                "UPDATE Z_PRIMARYKEY SET Z_MAX = 3 WHERE Z_ENT = 2",
                "UPDATE Z_PRIMARYKEY SET Z_MAX = 2 WHERE Z_ENT = 3",
            ],
            journalMode: "wal", keepsSharedMemory: false, uuid: "95E4B0A1-CBFB-4257-B10B-EE64F7558656",
            counts: ["Color": 2, "Post": 3, "Tag": 2],
            expected: [
                "Color": [
                    ["_id": "Color/1", "hex": "#ff0000", "post": "Post/2"],
                    ["_id": "Color/2", "hex": "#00ff00", "post": NSNull()],
                ],
                "Post": [
                    ["_id": "Post/1", "body": long, "index": -32768, "color": NSNull(), "tags": ["Tag/1", "Tag/2"]],
                    ["_id": "Post/2", "body": NSNull(), "index": 32767, "color": "Color/1", "tags": [String]()],
                    ["_id": "Post/3", "body": "", "index": NSNull(), "color": NSNull(), "tags": ["Tag/2"]],
                ],
                "Tag": [
                    ["_id": "Tag/1", "label": "swift", "posts": ["Post/1"]],
                    ["_id": "Tag/2", "label": "sql", "posts": ["Post/1", "Post/3"]],
                ],
            ])
    }()
}
