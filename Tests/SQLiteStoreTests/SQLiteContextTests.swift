import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import SQLiteStore
import Testing
import TestSupport

/// Objects in a context keep their values by slot, fetches read batches straight into them and
/// saves hand new objects to the store in batches: checked against SQLite's own view of the rows.
@Suite("ObjectContext over SQLite: values by slot, batch fetches and saves")
struct SQLiteContextTests {
    /// A hierarchy with inherited and transient attributes, defaults, and a relationship.
    static let model: ManagedObjectModel = try! ManagedObjectModel {
        Entity("Shape") {
            Attribute("name", .string)
            Attribute("sides", .integer32, default: .integer(3))
            Attribute("note", .string, transient: true)
            Attribute("area", .double)
            Attribute("flag", .boolean)
            Relationship("tag", to: "Tag", inverse: "shapes")
        }
        Entity("Circle", parent: "Shape") {
            Attribute("radius", .double)
            Attribute("label", .string, transient: true, default: .string("round"))
            Attribute("created", .date)
        }
        Entity("Tag") {
            Attribute("name", .string)
            Relationship("shapes", to: "Shape", inverse: "tag", toMany: true)
        }
    }

    let folder: TemporaryFolder
    let url: URL

    init() throws {
        SQLiteStore.register()
        folder = try TemporaryFolder()
        url = folder.file("shapes.sqlite")
    }

    func open() throws -> (StoreCoordinator, ObjectContext) {
        let coordinator = StoreCoordinator(model: Self.model)
        try coordinator.addStore(type: "sqlite", at: url)
        return (coordinator, ObjectContext(coordinator: coordinator))
    }

    /// What object `i` of `fill` holds: every fifth leaves its name unset, every seventh sets it
    /// to nil explicitly, every third circle has no date.
    struct Expected: Equatable {
        var isCircle: Bool
        var name: String?
        var sides: Int64
        var area: Double
        var flag: Bool
        var radius: Double?
        var created: Double?
    }

    static func expected(_ i: Int) -> Expected {
        // Runs of one entity longer than a batch (1,024), and short alternating ones.
        let isCircle = i < 1_500 ? false : (i / 3) % 2 == 0
        return Expected(
            isCircle: isCircle,
            name: i % 5 == 0 || i % 7 == 0 ? nil : "shape \(i)",
            sides: i % 4 == 0 ? 3 : Int64(i % 11),
            area: Double(i) / 4,
            flag: i % 2 == 1,
            radius: isCircle ? Double(i) / 8 : nil,
            created: isCircle && i % 3 != 0 ? 700_000_000 + Double(i) : nil)
    }

    static let count = 2_600

    /// Inserts `count` objects as ``expected(_:)`` says, in one save; returns their keys in order.
    func fill(_ context: ObjectContext) throws -> [Int64] {
        var keys: [Int64] = []
        for i in 0..<Self.count {
            let e = Self.expected(i)
            let object = try context.insert(e.isCircle ? "Circle" : "Shape")
            if i % 7 == 0 { try object.set("name", nil as Value?) } else if let name = e.name { try object.set("name", name) }
            if i % 4 != 0 { try object.set("sides", e.sides) }
            try object.set("area", e.area)
            try object.set("flag", e.flag)
            try object.set("note", "note \(i)")
            if let radius = e.radius { try object.set("radius", radius) }
            if let created = e.created { try object.set("created", Date(timeIntervalSinceReferenceDate: created)) }
            keys.append(object.objectID.primaryKey)
        }
        try context.save()
        return keys
    }

    /// The rows as SQLite itself reads them, by primary key.
    func rawRows() throws -> [Int64: [String]] {
        let db = try RawDatabase(url)
        defer { db.close() }
        let entities = Dictionary(uniqueKeysWithValues: try db.strings("SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY").map { ($0[0], $0[1]) })
        var rows: [Int64: [String]] = [:]
        for row in try db.strings("SELECT Z_PK, Z_ENT, Z_OPT, ZNAME, ZSIDES, printf('%.17g', ZAREA), ZFLAG, printf('%.17g', ZRADIUS), "
                                  + "printf('%.17g', ZCREATED), ZRADIUS IS NULL, ZCREATED IS NULL, ZTAG FROM ZSHAPE") {
            rows[Int64(row[0])!] = [entities[row[1]]!] + row.dropFirst(2)
        }
        return rows
    }

    /// Checks an object's values against its raw row: [entity, Z_OPT, name, sides, area, flag, radius, created, radius null, created null, tag].
    func check(_ object: ManagedObject, against row: [String], _ e: Expected) {
        #expect(object.entity.name == row[0])
        #expect(row[0] == (e.isCircle ? "Circle" : "Shape"))
        #expect(row[1] == "1")
        #expect(object["name"] == (row[2] == "NULL" ? nil : .string(row[2])))
        #expect(row[2] == (e.name ?? "NULL"))
        #expect(object["sides"] == .integer(Int64(row[3])!))
        #expect(Int64(row[3]) == e.sides)
        #expect(object["area"] == .double(Double(row[4])!))
        #expect(Double(row[4]) == e.area)
        #expect(object["flag"] == .boolean(row[5] == "1"))
        #expect(row[5] == (e.flag ? "1" : "0"))
        if e.isCircle {
            #expect(object["radius"] == (row[8] == "1" ? nil : .double(Double(row[6])!)))
            #expect(object["created"] == (row[9] == "1" ? nil : .date(Date(timeIntervalSinceReferenceDate: Double(row[7])!))))
            #expect(row[8] == (e.radius == nil ? "1" : "0"))
            #expect(row[9] == (e.created == nil ? "1" : "0"))
            if let created = e.created { #expect(Double(row[7]) == created) }
        } else {
            #expect(row[8] == "1" && row[9] == "1")
        }
        #expect(row[10] == "NULL")
    }

    @Test("a save in batches writes every value exactly, nil as NULL, defaults, no transient; sub-entities in runs across batches")
    func saveMatchesRawRows() throws {
        let (coordinator, context) = try open()
        let keys = try fill(context)
        let rows = try rawRows()
        #expect(rows.count == Self.count)
        // The objects the context saved hold what SQLite holds.
        for (i, key) in keys.enumerated() {
            let id = try coordinator.store(forEntity: "Shape").objectID(for: ObjectKey(Self.expected(i).isCircle ? "Circle" : "Shape", key))
            let object = try #require(try context.object(with: id))
            check(object, against: try #require(rows[key]), Self.expected(i))
            #expect(object["note", as: String.self] == "note \(i)")   // transient: kept in memory, not stored
            #expect(object["label"] == (Self.expected(i).isCircle ? .string("round") : nil))
        }
        #expect(try RawDatabase(url).columns("ZSHAPE").contains { $0.contains("NOTE") || $0.contains("LABEL") } == false)
        // The key counter is past every key (the context reserved them in blocks).
        let db = try RawDatabase(url)
        defer { db.close() }
        #expect(try Int64(#require(db.strings("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Shape'").first?.first))! >= keys.max()!)
    }

    @Test("a fetch reads batches straight into objects: values equal the raw rows, sub-entities in key order, transients absent")
    func fetchMatchesRawRows() throws {
        let keys = try fill(try open().1)
        let rows = try rawRows()
        let (_, context) = try open()
        let objects = try context.fetch(FetchRequest(entity: "Shape"))
        #expect(objects.map(\.objectID.primaryKey) == keys.sorted())
        let index = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
        for object in objects {
            let i = try #require(index[object.objectID.primaryKey])
            check(object, against: try #require(rows[object.objectID.primaryKey]), Self.expected(i))
            #expect(object["note"] == nil)
            #expect(object["label"] == nil)   // a fetched object's transient starts empty, default or not
            #expect(object.changedPropertyNames.isEmpty && !object.isUpdated)
        }
        // Circles alone (no sub-entities of Shape's other kinds), and a second fetch gives the same objects.
        let circles = try context.fetch(FetchRequest(entity: "Circle"))
        #expect(circles.map(\.objectID.primaryKey) == rows.filter { $0.value[0] == "Circle" }.keys.sorted())
        #expect(circles.allSatisfy { circle in objects.contains { $0 === circle } })
    }

    @Test("the batch form of a fetch gives the record form's objects, in its order, for every kind of request")
    func fetchBatchesMatchRecords() throws {
        _ = try fill(try open().1)
        let store = try SQLiteStoreType().open(at: url, model: Self.model, options: StoreOptions())
        defer { try? store.close() }
        let requests = [
            FetchRequest(entity: "Shape"),
            FetchRequest(entity: "Shape", includesSubentities: false),
            FetchRequest(entity: "Shape", predicate: try ObjectPredicate("sides < 4")),
            FetchRequest(entity: "Shape", predicate: try ObjectPredicate("name ENDSWITH '1'")),
            FetchRequest(entity: "Shape", sortDescriptors: [ObjectSortDescriptor("area", ascending: false)], fetchLimit: 900, fetchOffset: 300),
        ]
        for request in requests {
            var rows: [ObjectRecord] = []
            var sizes: [Int] = []
            try store.fetchBatches(request, batchSize: 100) { batch in
                sizes.append(batch.count)
                rows += batch.records
            }
            #expect(rows == (try store.fetch(request)))
            #expect(sizes.allSatisfy { $0 >= 1 && $0 <= 100 })
        }
    }

    @Test("changes to fetched objects: changed names, rollback restores stored and transient values, a save updates one row")
    func rollbackAndUpdate() throws {
        let keys = try fill(try open().1)
        let (_, context) = try open()
        let objects = try context.fetch(FetchRequest(entity: "Circle"))
        let circle = try #require(objects.first)
        let before = (circle["name"], circle["radius"], circle["created"])
        try circle.set("radius", 99.5)
        try circle.set("note", "scratch")
        try circle.set("created", nil as Value?)
        #expect(circle.changedPropertyNames == ["radius", "note", "created"])
        #expect(circle["radius"] == .double(99.5) && circle["note"] == .string("scratch") && circle["created"] == nil)
        context.rollback()
        #expect(circle["name"] == before.0 && circle["radius"] == before.1 && circle["created"] == before.2)
        #expect(circle["note"] == nil && !circle.isUpdated && circle.changedPropertyNames.isEmpty)

        try circle.set("radius", 12.25)
        try circle.set("note", "kept in memory only")
        try context.save()
        let rows = try rawRows()
        let row = try #require(rows[circle.objectID.primaryKey])
        #expect(row[1] == "2" && Double(row[6]) == 12.25)
        // Every other row is as it was.
        for (i, key) in keys.enumerated() where key != circle.objectID.primaryKey { #expect(rows[key]?[1] == "1", "row \(i)") }
    }

    @Test("one save with related and unrelated new objects: relationships as records, the rest in batches; both sides stored")
    func mixedSave() throws {
        let (coordinator, context) = try open()
        let tag = try context.insert("Tag")
        try tag.set("name", "blue")
        var tagged: [ManagedObject] = [], plain: [ManagedObject] = []
        for i in 0..<3_000 {
            let shape = try context.insert(i % 2 == 0 ? "Shape" : "Circle")
            try shape.set("area", Double(i))
            if i % 10 == 0 {
                try shape.setObject(tag, forKey: "tag")
                tagged.append(shape)
            } else {
                plain.append(shape)
            }
        }
        try context.save()
        let db = try RawDatabase(url)
        defer { db.close() }
        let rows = try db.strings("SELECT Z_PK, ZTAG, printf('%.17g', ZAREA) FROM ZSHAPE ORDER BY Z_PK")
        #expect(rows.count == 3_000)
        let tagKey = String(tag.objectID.primaryKey)
        #expect(Set(rows.filter { $0[1] == tagKey }.map { Int64($0[0])! }) == Set(tagged.map(\.objectID.primaryKey)))
        #expect(Set(rows.filter { $0[1] == "NULL" }.map { Int64($0[0])! }) == Set(plain.map(\.objectID.primaryKey)))
        // The to-many side reads back from a fresh context.
        let fresh = ObjectContext(coordinator: coordinator)
        let readTag = try #require(try fresh.fetch(FetchRequest(entity: "Tag")).first)
        #expect(Set(try readTag.objects(forKey: "shapes").map(\.objectID)) == Set(tagged.map(\.objectID)))
    }

    @Test("the store's batch save is all or nothing, and completes the inverse of a batch row's to-one")
    func batchSaveContract() throws {
        let store = try SQLiteStoreType().open(at: url, model: Self.model, options: StoreOptions())
        defer { try? store.close() }
        let shape = Self.model.entity(named: "Shape")!
        func batch(_ keys: ClosedRange<Int64>, tag: ObjectKey? = nil) -> RecordBatch {
            var batch = RecordBatch(entity: shape)
            for key in keys {
                let row = batch.appendRow(primaryKey: key)
                batch[row, attribute: shape.layout.attributeSlot("area")!] = .double(Double(key))
                if let tag { batch[row, toOne: shape.layout.toOneSlot("tag")!] = tag }
            }
            return batch
        }
        // A key given twice (a record and a batch row) fails the whole save.
        var batches = [batch(1...10), batch(11...20)]
        let duplicate = ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Tag", 1)), ObjectRecord(key: ObjectKey("Shape", 15))])
        #expect(throws: StoreError.self) { try store.save(duplicate) { batches.isEmpty ? nil : batches.removeFirst() } }
        let db = try RawDatabase(url)
        defer { db.close() }
        #expect(try db.strings("SELECT count(*) FROM ZSHAPE") == [["0"]])
        #expect(try db.strings("SELECT count(*) FROM ZTAG") == [["0"]])

        // Rows naming a tag go in with it; the tag's to-many reads them back; the counter moves past them all.
        batches = [batch(1...5, tag: ObjectKey("Tag", 1)), batch(6...8)]
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Tag", 1))])) { batches.isEmpty ? nil : batches.removeFirst() }
        #expect(try store.relatedKeys(of: ObjectKey("Tag", 1), relationship: "shapes") == (1...5).map { ObjectKey("Shape", $0) })
        #expect(try db.strings("SELECT Z_PK, ZTAG, ZAREA FROM ZSHAPE ORDER BY Z_PK").map { $0[1] } == Array(repeating: "1", count: 5) + ["NULL", "NULL", "NULL"])
        #expect(try store.lastAllocatedKey(entity: "Circle") == 8)
        // A row naming a tag that does not exist is refused, as a record's would be.
        batches = [batch(9...9, tag: ObjectKey("Tag", 42))]
        #expect(throws: StoreError.self) { try store.save(ChangeSet()) { batches.isEmpty ? nil : batches.removeFirst() } }
        #expect(try db.strings("SELECT count(*) FROM ZSHAPE") == [["8"]])
    }
}
