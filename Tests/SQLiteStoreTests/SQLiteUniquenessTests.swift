import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import SQLiteStore
import Testing
import TestSupport

/// Uniqueness constraints in SQLite: the unique index Core Data creates, and the save-time
/// check, for stores we make and stores Core Data made.
@Suite("SQLiteStore uniqueness constraints")
struct SQLiteUniquenessTests {
    let type = SQLiteStoreType()

    /// A model shaped like CoreDataPlus's SampleModel (an Apple-written store of it has
    /// `Z_Car_UNIQUE_numberPlate` and `Z_Person_UNIQUE_firstName_lastName`), with a constraint
    /// declared below the root too (`SportCar`).
    static let xml = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="21754" systemVersion="22E261" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="">
            <entity name="Car" representedClassName="Car" syncable="YES">
                <attribute name="maker" optional="YES" attributeType="String"/>
                <attribute name="numberPlate" attributeType="String"/>
                <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person" inverseName="cars" inverseEntity="Person"/>
                <uniquenessConstraints>
                    <uniquenessConstraint>
                        <constraint value="numberPlate"/>
                    </uniquenessConstraint>
                </uniquenessConstraints>
            </entity>
            <entity name="SportCar" representedClassName="SportCar" parentEntity="Car" syncable="YES">
                <attribute name="racingNumber" optional="YES" attributeType="Integer 16" defaultValueString="0" usesScalarValueType="YES"/>
                <uniquenessConstraints>
                    <uniquenessConstraint>
                        <constraint value="racingNumber"/>
                    </uniquenessConstraint>
                </uniquenessConstraints>
            </entity>
            <entity name="Person" representedClassName="Person" syncable="YES">
                <attribute name="firstName" optional="YES" attributeType="String"/>
                <attribute name="lastName" optional="YES" attributeType="String"/>
                <relationship name="cars" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Car" inverseName="owner" inverseEntity="Car"/>
                <uniquenessConstraints>
                    <uniquenessConstraint>
                        <constraint value="firstName"/>
                        <constraint value="lastName"/>
                    </uniquenessConstraint>
                </uniquenessConstraints>
            </entity>
        </model>
        """

    static func model(in folder: TemporaryFolder) throws -> ManagedObjectModel {
        let file = folder.file("Sample.xcdatamodel/contents")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(xml.utf8).write(to: file)
        return try ModelLoader.loadModel(at: file.deletingLastPathComponent())
    }

    @Test("constraints are read from Xcode XML, inherited by sub-entities, and kept by the JSON model format")
    func parsed() throws {
        let folder = try TemporaryFolder()
        let model = try Self.model(in: folder)
        #expect(model.entity(named: "Car")?.declaration.uniquenessConstraints == [["numberPlate"]])
        #expect(model.entity(named: "Person")?.declaration.uniquenessConstraints == [["firstName", "lastName"]])
        #expect(model.entity(named: "SportCar")?.uniquenessConstraints.map(\.name) == ["Car(numberPlate)", "SportCar(racingNumber)"])
        #expect(model.entity(named: "Person")?.uniquenessConstraints.map(\.indexName) == ["Z_Person_UNIQUE_firstName_lastName"])
        let again = try JSONModelFormat.decode(JSONModelFormat.encode(model), file: "round trip")
        #expect(again.entity(named: "Person")?.declaration.uniquenessConstraints == [["firstName", "lastName"]])
        #expect(again.versionHashes == model.versionHashes)
    }

    @Test("a new store has the unique indexes Core Data creates, as SQLite sees them")
    func indexes() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("cars.sqlite")
        try type.open(at: url, model: try Self.model(in: folder), options: StoreOptions()).close()
        let db = try RawDatabase(url)
        defer { db.close() }
        let unique = try db.strings("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND name LIKE '%UNIQUE%' ORDER BY name")
        #expect(unique == [["Z_Car_UNIQUE_numberPlate", "ZCAR"], ["Z_Person_UNIQUE_firstName_lastName", "ZPERSON"],
                           ["Z_SportCar_UNIQUE_racingNumber", "ZCAR"]])
        // Unique, over the constrained columns in order, binary collation, ascending (PRAGMA index_xinfo: seqno, cid, name, desc, coll, key).
        for (index, columns) in [("Z_Car_UNIQUE_numberPlate", ["ZNUMBERPLATE"]), ("Z_Person_UNIQUE_firstName_lastName", ["ZFIRSTNAME", "ZLASTNAME"])] {
            let info = try db.strings("PRAGMA index_xinfo(\"\(index)\")").filter { $0[5] == "1" }
            #expect(info.map { $0[2] } == columns, "\(index)")
            #expect(info.allSatisfy { $0[3] == "0" && $0[4] == "BINARY" }, "\(index): \(info)")
            let table = index.contains("Person") ? "ZPERSON" : "ZCAR"
            #expect(try db.strings("PRAGMA index_list(\(table))").contains { $0[1] == index && $0[2] == "1" }, "\(index) is unique")
        }
        // A constraint declared below the root holds among that entity's rows only.
        let partial = try db.strings("SELECT sql FROM sqlite_master WHERE name = 'Z_SportCar_UNIQUE_racingNumber'").first?.first ?? ""
        #expect(partial.hasSuffix("WHERE Z_ENT IN (2)"), "\(partial)")
    }

    /// Saves `changes` and returns the violation it is refused with.
    func violation(_ store: any PersistentStore, _ changes: ChangeSet) -> UniquenessViolation? {
        do {
            try store.save(changes)
            return nil
        } catch let error as StoreError {
            #expect(error.code == .uniquenessViolated, "\(error)")
            return error.uniquenessViolation
        } catch {
            Issue.record("\(error)")
            return nil
        }
    }

    @Test("a store Core Data wrote: its unique index's rows are checked at save, the error names the constraint and both objects")
    func coreDataStore() throws {
        let folder = try TemporaryFolder()
        let model = try Self.model(in: folder)
        let url = folder.file("Sample.sqlite")
        let hashes = model.versionHashes
        try CoreDataStoreFile.write(to: url, statements: [
            "CREATE TABLE ZCAR ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZRACINGNUMBER INTEGER, ZOWNER INTEGER, ZMAKER VARCHAR, ZNUMBERPLATE VARCHAR )",
            "CREATE TABLE ZPERSON ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZFIRSTNAME VARCHAR, ZLASTNAME VARCHAR )",
            "CREATE INDEX ZCAR_ZOWNER_INDEX ON ZCAR (ZOWNER)",
            "CREATE UNIQUE INDEX Z_Car_UNIQUE_numberPlate ON ZCAR (ZNUMBERPLATE COLLATE BINARY ASC)",
            "CREATE UNIQUE INDEX Z_Person_UNIQUE_firstName_lastName ON ZPERSON (ZFIRSTNAME COLLATE BINARY ASC, ZLASTNAME COLLATE BINARY ASC)",
            "INSERT INTO Z_PRIMARYKEY VALUES (1, 'Car', 0, 8), (2, 'SportCar', 1, 0), (3, 'Person', 0, 3)",
            "INSERT INTO ZPERSON VALUES (3, 3, 1, 'Ada', 'Lovelace')",
            "INSERT INTO ZCAR VALUES (7, 1, 1, NULL, 3, 'Fiat', 'AB-1'), (8, 2, 1, 44, NULL, 'Porsche', 'CD-2')",
        ], journalMode: "delete", uuid: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0", metadata: CoreDataStoreFile.metadata(hashes: hashes))
        let store = try type.open(at: url, model: model, options: StoreOptions())
        defer { try? store.close() }
        let found = violation(store, ChangeSet(inserted: [ObjectRecord(key: ObjectKey("SportCar", 9), attributes: ["numberPlate": .string("AB-1")])]))
        #expect(found?.constraint == UniquenessConstraint(entity: "Car", properties: ["numberPlate"]))
        #expect(found?.objects == [ObjectKey("Car", 7), ObjectKey("SportCar", 9)])
        #expect(found?.values == [.value(.string("AB-1"))])
        let person = violation(store, ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Person", 4), attributes: ["firstName": .string("Ada"), "lastName": .string("Lovelace")])]))
        #expect(person?.constraint.name == "Person(firstName, lastName)")
        #expect(person?.objects == [ObjectKey("Person", 3), ObjectKey("Person", 4)])
        // A person with no last name is not constrained (as in the index: NULLs are distinct).
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Person", 4), attributes: ["firstName": .string("Ada")]),
                                            ObjectRecord(key: ObjectKey("Person", 5), attributes: ["firstName": .string("Ada")])]))
        // A constraint declared on a sub-entity.
        let racing = violation(store, ChangeSet(inserted: [ObjectRecord(key: ObjectKey("SportCar", 10), attributes: ["numberPlate": .string("EF-3"), "racingNumber": .integer(44)])]))
        #expect(racing?.objects == [ObjectKey("SportCar", 8), ObjectKey("SportCar", 10)])
        try store.close()
        // What SQLite holds: the refused rows are not there.
        let db = try RawDatabase(url)
        defer { db.close() }
        #expect(try db.strings("SELECT Z_PK, ZNUMBERPLATE, ifnull(ZRACINGNUMBER, '-') FROM ZCAR ORDER BY Z_PK") == [["7", "AB-1", "-"], ["8", "CD-2", "44"]])
        #expect(try db.strings("SELECT count(*) FROM ZPERSON") == [["3"]])
    }

    @Test("a store without the unique index (written before it was created) is checked all the same")
    func withoutIndex() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("old.sqlite")
        let model = try Self.model(in: folder)
        try type.open(at: url, model: model, options: StoreOptions()).close()
        let raw = try RawDatabase(url, readOnly: false)
        try raw.execute("DROP INDEX Z_Car_UNIQUE_numberPlate")
        raw.close()
        let store = try type.open(at: url, model: model, options: StoreOptions())
        defer { try? store.close() }
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Car", 1), attributes: ["numberPlate": .string("X")])]))
        let found = violation(store, ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Car", 2), attributes: ["numberPlate": .string("X")])]))
        #expect(found?.objects == [ObjectKey("Car", 1), ObjectKey("Car", 2)])
    }
}
