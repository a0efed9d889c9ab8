import AtomicStore
import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import StoreToolkit
import Testing

@Suite("AtomicStore batches")
struct AtomicBatchTests {
    func signed(_ v: Int64) -> Data { varint(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }

    /// A row source with only what a backend must give (`row`, `primaryKeys`): the rest is `RowSource`'s defaults.
    struct MinimalSource: RowSource {
        let tables: RecordTables
        func row(_ key: ObjectKey) throws -> StoredRow? { try tables.row(key) }
        func primaryKeys(of entity: String, after primaryKey: Int64?, limit: Int?) throws -> [Int64] {
            tables.primaryKeys(of: entity, after: primaryKey, limit: limit)
        }
    }

    @Test("a row source giving only rows and keys scans, in records and in slots, what the tables' own slot decoder reads: to-ones to no object left out, pages that split the rows")
    func rowSourceDefaults() throws {
        let folder = try Folder()
        let store = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions())
        defer { try? store.close() }
        let pet = try #require(store.model.entity(named: "Pet")), person = try #require(store.model.entity(named: "Person"))
        var people = RecordBatch(entity: person)
        people[people.appendRow(primaryKey: 7), attribute: try #require(person.layout.attributeSlot("name"))] = .string("ann")
        try store.bulkInsert(people, checkingReferences: false)
        var pets = RecordBatch(entity: pet)
        for pk in Int64(1)...5 {
            let row = pets.appendRow(primaryKey: pk, version: pk)
            pets[row, attribute: try #require(pet.layout.attributeSlot("name"))] = .string("pet \(pk)")
            // Owners 7 (stored) and 8 (no such object: left out of what is read).
            if pk != 3 { pets[row, toOne: try #require(pet.layout.toOneSlot("owner"))] = ObjectKey("Person", pk % 2 == 0 ? 7 : 8) }
        }
        try store.bulkInsert(pets, checkingReferences: false)
        let tables = try #require(store as? any RecordTablesStore).readTables { $0 }
        let minimal = MinimalSource(tables: tables)
        for (after, limit) in [(nil, 10), (nil, 2), (Int64(2), 2), (Int64(5), 3)] as [(Int64?, Int)] {
            let slots = try tables.scanBatch(pet, after: after, limit: limit, model: store.model).records
            #expect(try minimal.scanBatch(pet, after: after, limit: limit, model: store.model).records == slots, "after \(after as Any), \(limit)")
            #expect(try minimal.scan(entity: "Pet", after: after, limit: limit, model: store.model) == slots, "after \(after as Any), \(limit)")
        }
        let all = try minimal.scan(entity: "Pet", after: nil, limit: 10, model: store.model)
        #expect(all.map(\.key.primaryKey) == [1, 2, 3, 4, 5])
        #expect(all.map { $0.toOne["owner"] } == [nil, ObjectKey("Person", 7), nil, ObjectKey("Person", 7), nil])
    }

    @Test("batches are written as docs/atomic-format.md lays rows out, byte for byte")
    func bytesOfBatches() throws {
        let folder = try Folder()
        let store = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions())
        let model = store.model
        let pet = try #require(model.entity(named: "Pet")), person = try #require(model.entity(named: "Person"))
        var pets = RecordBatch(entity: pet)
        var row = pets.appendRow(primaryKey: 1)
        pets[row, attribute: try #require(pet.layout.attributeSlot("name"))] = .string("rex")
        pets[row, toOne: try #require(pet.layout.toOneSlot("owner"))] = ObjectKey("Person", 7)
        pets.appendRow(primaryKey: 2)
        try store.bulkInsert(pets, checkingReferences: false)
        var people = RecordBatch(entity: person)
        row = people.appendRow(primaryKey: 7, version: 3)
        people[row, attribute: try #require(person.layout.attributeSlot("name"))] = .string("ann")
        try store.bulkInsert(people, checkingReferences: false)
        try store.close()
        let file = try Data(contentsOf: folder.store)
        // The metadata block as the file holds it (a property list's bytes need not repeat).
        var length = 0, shift = 0, at = 24
        while true {
            let byte = file[at]
            length |= Int(byte & 0x7f) << shift
            at += 1
            shift += 7
            if byte < 0x80 { break }
        }
        let plist = file[at..<(at + length)]

        // Names sorted, counters by root name, tables by entity name; columns and relationships
        // are those with a value in some row, sorted; a key is a name index and a primary key.
        var body = varint(UInt64(plist.count)) + plist
        body += varint(2) + string("Person") + string("Pet")
        body += varint(2) + varint(0) + signed(7) + varint(1) + signed(2)
        body += varint(2)
        body += varint(0) + varint(1) + string("name") + varint(0) + varint(1)
        body += signed(7) + signed(3) + Data([4]) + string("ann")
        body += varint(1) + varint(1) + string("name") + varint(1) + string("owner") + varint(2)
        body += signed(1) + signed(1) + Data([4]) + string("rex") + varint(2) + varint(0) + signed(7)
        body += signed(2) + signed(1) + Data([0]) + varint(0)
        // The history section (header flag 1): the last token, then each transaction's token and record.
        let history = try AtomicStoreType().open(at: folder.store, model: model, options: StoreOptions(readOnly: true)).history(after: nil, limit: 10)
        #expect(history.map(\.inserted) == [[ObjectKey("Pet", 1), ObjectKey("Pet", 2)], [ObjectKey("Person", 7)]])
        body += signed(2) + varint(2)
        for transaction in history {
            let record = HistoryRecord(timestamp: transaction.timestamp, author: nil, inserted: transaction.inserted).encoded()
            body += signed(transaction.token.value) + varint(UInt64(record.count)) + record
        }
        #expect(file == frame(body, flags: 1))
    }

    @Test("the tables' batch insert, which lays rows out by slot, refuses a batch carrying to-many lists (its store sends such batches as records) and changes nothing")
    func tablesRefuseLists() throws {
        let model = StoreConformance.model
        var tables = RecordTables(metadata: try StoreMetadata(storeType: "atomic", model: model))
        var batch = RecordBatch(entity: try #require(model.entity(named: "Tag")))
        batch.appendRow(primaryKey: 1)
        batch.setToMany("tracks", [OrderedMembers([ObjectKey("Track", 2)])])
        #expect(throws: StoreError.self) { try tables.insert([batch], model: model, checkingReferences: false, file: "t") }
        #expect(try tables.row(ObjectKey("Tag", 1)) == nil)
    }

    @Test("row offsets take four bytes until the rows span 4 GiB, then eight")
    func offsets() {
        var offsets = RowOffsets(base: 100)
        offsets.append(100)
        offsets.append(4_000)
        #expect(Array(offsets) == [100, 4_000])
        let far = 100 + Int(UInt32.max) + 1
        offsets.append(far)
        offsets.append(5)
        #expect(Array(offsets) == [100, 4_000, far, 5])
        #expect(Array(RowOffsets([9, 7, 8])) == [9, 7, 8])
    }
}
