import Foundation
import ObjectModel
import ObjectStore
import Testing

extension StoreConformance {
    /// The batch forms of the contract (``PersistentStore/scanBatch(entity:after:limit:)`` and
    /// the batch `bulkInsert`) give the same answers as the record forms, whether the backend
    /// implements them or takes the bridging defaults.
    func batches(_ scope: Scope) throws {
        let store = try scope.openStore()
        let model = store.model
        let item = try #require(model.entity(named: "Item"))

        // Every extreme value written as a batch reads back the same through both forms.
        let range = try store.allocatePrimaryKeys(entity: "Item", count: Self.extremeValues.count)
        var batch = RecordBatch(entity: item)
        for (pk, values) in zip(range, Self.extremeValues) { try batch.append(ObjectRecord(key: ObjectKey("Item", pk), attributes: values)) }
        #expect(batch.count == Self.extremeValues.count)
        try store.bulkInsert(batch, checkingReferences: false)
        let records = try store.scan(entity: "Item", after: nil, limit: 100)
        #expect(records.map(\.key.primaryKey) == Array(range))
        for (record, values) in zip(records, Self.extremeValues) {
            #expect(record.attributes.count == values.count, "\(values["name"]!)")
            for (name, value) in values { #expect(same(record.attributes[name], value), "\(values["name"]!) \(name)") }
        }
        let read = try store.scanBatch(entity: "Item", after: nil, limit: 100)
        #expect(read.entity.name == "Item" && read.primaryKeys == Array(range))
        for (row, record) in records.enumerated() {
            #expect(read.versions[row] == record.version)
            for (slot, attribute) in item.layout.attributes.enumerated() {
                #expect(same(read[row, attribute: slot], record.attributes[attribute.name]), "row \(row) \(attribute.name)")
            }
        }
        let window = try store.scanBatch(entity: "Item", after: range.lowerBound, limit: 2)
        #expect(window.primaryKeys == [range.lowerBound + 1, range.lowerBound + 2])
        #expect(try store.scanBatch(entity: "Item", after: range.upperBound, limit: 10).isEmpty)
        #expect(try store.allocatePrimaryKeys(entity: "Item", count: 1).lowerBound > range.upperBound)

        // To-one relationships by slot, the target written after the batch (references unchecked).
        let pet = try #require(model.entity(named: "Pet")), owner = try #require(pet.layout.toOneSlot("owner"))
        var pets = RecordBatch(entity: pet)
        for pk: Int64 in [40, 41] {
            let row = pets.appendRow(primaryKey: pk)
            pets[row, attribute: try #require(pet.layout.attributeSlot("name"))] = .string("pet \(pk)")
            if pk == 40 { pets[row, toOne: owner] = ObjectKey("Person", 30) }
        }
        try store.bulkInsert(pets, checkingReferences: false)
        try store.bulkInsert([ObjectRecord(key: ObjectKey("Person", 30), attributes: ["name": .string("Ann")],
                                           toMany: ["pets": [ObjectKey("Pet", 40)]])], checkingReferences: false)
        #expect(try store.relatedKeys(of: ObjectKey("Pet", 40), relationship: "owner") == [ObjectKey("Person", 30)])
        #expect(try store.relatedKeys(of: ObjectKey("Person", 30), relationship: "pets") == [ObjectKey("Pet", 40)])
        let readPets = try store.scanBatch(entity: "Pet", after: nil, limit: 10)
        #expect(readPets.primaryKeys == [40, 41])
        #expect(readPets[0, toOne: owner] == ObjectKey("Person", 30) && readPets[1, toOne: owner] == nil)
        #expect(readPets.records == (try store.scan(entity: "Pet", after: nil, limit: 10)))

        // What the record form refuses, the batch form refuses, and nothing of the batch lands.
        func refused(_ entity: String, _ what: Comment, _ fill: (inout RecordBatch) throws -> Void) throws {
            var bad = RecordBatch(entity: try #require(model.entity(named: entity)))
            try fill(&bad)
            #expect(throws: StoreError.self, what) { try store.bulkInsert(bad, checkingReferences: false) }
            for pk in bad.primaryKeys where pk > 41 { #expect(try store.record(for: ObjectKey(entity, pk)) == nil, what) }
        }
        try refused("Pet", "a key in use") { bad in
            bad.appendRow(primaryKey: 50)
            bad.appendRow(primaryKey: 41)
        }
        try refused("Pet", "a target of another entity") { bad in
            let row = bad.appendRow(primaryKey: 51)
            bad[row, toOne: owner] = ObjectKey("Tag", 1)
        }
        try refused("Item", "a value of another type") { bad in
            let row = bad.appendRow(primaryKey: 60)
            bad[row, attribute: try #require(item.layout.attributeSlot("i16"))] = .string("sixteen")
        }
        try refused("Vehicle", "an abstract entity") { bad in bad.appendRow(primaryKey: 70) }
        try refused("Pet", "key 0") { bad in bad.appendRow(primaryKey: 0) }
        #expect(throws: StoreError.self, "a record of another entity") {
            var mixed = RecordBatch(entity: pet)
            try mixed.append(ObjectRecord(key: ObjectKey("Person", 31)))
        }

        // A scan of an entity leaves out its sub-entities.
        var cars = RecordBatch(entity: try #require(model.entity(named: "SportsCar")))
        cars.appendRow(primaryKey: 3)
        try store.bulkInsert(cars, checkingReferences: false)
        #expect(try store.scanBatch(entity: "Car", after: nil, limit: 10).isEmpty)
        #expect(try store.scanBatch(entity: "SportsCar", after: nil, limit: 10).primaryKeys == [3])
    }
}

extension StoreConformance {
    /// What the batch `bulkInsert` checks and writes beyond one unchecked batch: targets that
    /// must exist when references are checked, inverse sides completed or refused as the record
    /// form completes and refuses them, keys in use across a hierarchy, nothing of a refused
    /// batch inserted, and batch after batch into one entity (later keys, earlier keys, new
    /// columns) reading back the same through both forms, after a reopen too.
    func batchInserts(_ scope: Scope) throws {
        let url = try scope.newURL()
        var store = try scope.openStore(at: url)
        let model = store.model
        let personEntity = try #require(model.entity(named: "Person")), petEntity = try #require(model.entity(named: "Pet"))
        let spouse = try #require(personEntity.layout.toOneSlot("spouse")), owner = try #require(petEntity.layout.toOneSlot("owner"))
        let personName = try #require(personEntity.layout.attributeSlot("name")), petName = try #require(petEntity.layout.attributeSlot("name"))
        func person(_ pk: Int64) -> ObjectKey { ObjectKey("Person", pk) }
        func pet(_ pk: Int64) -> ObjectKey { ObjectKey("Pet", pk) }
        func people(_ rows: [(Int64, Int64?)]) -> RecordBatch {
            var batch = RecordBatch(entity: personEntity)
            for (pk, partner) in rows {
                let row = batch.appendRow(primaryKey: pk)
                batch[row, attribute: personName] = .string("person \(pk)")
                batch[row, toOne: spouse] = partner.map(person)
            }
            return batch
        }
        func pets(_ rows: [(Int64, Int64?)], named: Bool = true) -> RecordBatch {
            var batch = RecordBatch(entity: petEntity)
            for (pk, ownedBy) in rows {
                let row = batch.appendRow(primaryKey: pk)
                if named { batch[row, attribute: petName] = .string("pet \(pk)") }
                batch[row, toOne: owner] = ownedBy.map(person)
            }
            return batch
        }
        func refused(_ batch: RecordBatch, checkingReferences: Bool = true, _ what: Comment) throws {
            let new = try (0..<batch.count).map(batch.key(at:)).filter { try store.record(for: $0) == nil }
            #expect(throws: StoreError.self, what) { try store.bulkInsert(batch, checkingReferences: checkingReferences) }
            for key in new { #expect(try store.record(for: key) == nil, "\(what): \(key)") }
        }

        // Records of two entities in one checked bulk insert, both sides given or one.
        try store.bulkInsert([
            ObjectRecord(key: person(1), attributes: ["name": .string("Ann")], toOne: ["spouse": person(2)]),
            ObjectRecord(key: person(2), attributes: ["name": .string("Bob")], toOne: ["spouse": person(1)]),
            ObjectRecord(key: person(3), attributes: ["name": .string("Cy")], toOne: ["manager": person(1)]),
            ObjectRecord(key: pet(9), attributes: ["name": .string("Rex")], toOne: ["owner": person(2)]),
        ], checkingReferences: true)
        #expect(try store.relatedKeys(of: person(1), relationship: "spouse") == [person(2)])
        #expect(try store.relatedKeys(of: person(2), relationship: "spouse") == [person(1)])
        #expect(try store.relatedKeys(of: person(1), relationship: "reports") == [person(3)], "the inverse side completed")
        #expect(try store.relatedKeys(of: person(2), relationship: "pets") == [pet(9)], "the inverse side completed")

        // A checked batch completes the to-many inverse sides of its targets.
        try store.bulkInsert(pets([(10, 1), (11, 3), (12, nil)]), checkingReferences: true)
        #expect(try store.relatedKeys(of: person(1), relationship: "pets") == [pet(10)])
        #expect(try store.relatedKeys(of: person(3), relationship: "pets") == [pet(11)])
        #expect(try store.relatedKeys(of: pet(12), relationship: "owner") == [])

        // Refused, with nothing of the batch inserted.
        try refused(pets([(13, 1), (14, 99)]), "a target that does not exist, references checked")
        try refused(people([(20, 21), (21, 22), (22, 21)]), "sides of a one-to-one that disagree")
        try refused(people([(23, 1), (24, 1)]), "two objects naming one object through a one-to-one")
        try refused(people([(25, nil), (26, nil), (25, nil)]), checkingReferences: false, "a key given twice")
        try refused(pets([(15, nil), (10, nil)]), checkingReferences: false, "a key in use")
        #expect(try store.relatedKeys(of: person(1), relationship: "pets") == [pet(10)], "a refused batch completes nothing")

        // A one-to-one partner the new object displaces loses it; both sides in one batch agree.
        try store.bulkInsert(people([(30, 31), (31, 30), (32, 1)]), checkingReferences: true)
        #expect(try store.relatedKeys(of: person(30), relationship: "spouse") == [person(31)])
        #expect(try store.relatedKeys(of: person(31), relationship: "spouse") == [person(30)])
        #expect(try store.relatedKeys(of: person(1), relationship: "spouse") == [person(32)])
        #expect(try store.relatedKeys(of: person(2), relationship: "spouse") == [])

        // Keys are per hierarchy: a sub-entity's batch may not reuse a key of another entity of it.
        var car = RecordBatch(entity: try #require(model.entity(named: "Car")))
        car.appendRow(primaryKey: 5)
        try store.bulkInsert(car, checkingReferences: true)
        var sports = RecordBatch(entity: try #require(model.entity(named: "SportsCar")))
        sports.appendRow(primaryKey: 6)
        sports.appendRow(primaryKey: 5)
        try refused(sports, checkingReferences: false, "a key in use by a Car")
        var truck = RecordBatch(entity: try #require(model.entity(named: "Truck")))
        truck.appendRow(primaryKey: 7)
        try store.bulkInsert(truck, checkingReferences: false)
        #expect(try store.scanBatch(entity: "Truck", after: nil, limit: 10).primaryKeys == [7])
        #expect(try store.lastAllocatedKey(entity: "Car") >= 7)

        // Batch after batch into one entity: later keys with a value in a new column, earlier
        // keys, keys between, then a change to each; both forms agree, before and after a reopen.
        try store.bulkInsert(pets([(40, nil), (41, nil)], named: false), checkingReferences: false)
        try store.bulkInsert(pets([(42, 3), (43, nil)]), checkingReferences: false)
        try store.bulkInsert(pets([(5, nil), (38, 1)]), checkingReferences: false)
        try store.save(ChangeSet(updated: [ObjectUpdate(key: pet(41), attributes: ["name": .string("renamed")]),
                                           ObjectUpdate(key: pet(5), toOne: ["owner": person(2)])],
                                 deleted: [ObjectDeletion(key: pet(43))]))
        let expected: [Int64: (String?, ObjectKey?)] = [5: ("pet 5", person(2)), 9: ("Rex", person(2)), 10: ("pet 10", person(1)),
                                                        11: ("pet 11", person(3)), 12: ("pet 12", nil), 38: ("pet 38", person(1)),
                                                        40: (nil, nil), 41: ("renamed", nil), 42: ("pet 42", person(3))]
        func matches(_ store: any PersistentStore, _ when: Comment) throws {
            let records = try store.scan(entity: "Pet", after: nil, limit: 100)
            let batch = try store.scanBatch(entity: "Pet", after: nil, limit: 100)
            #expect(batch.records == records, when)
            #expect(records.map(\.key.primaryKey) == expected.keys.sorted(), when)
            for record in records {
                let (name, ownedBy) = expected[record.key.primaryKey]!
                #expect(record.attributes["name"] == name.map(Value.string), "\(when): \(record.key)")
                #expect(record.toOne["owner"] == ownedBy, "\(when): \(record.key)")
            }
            #expect(try store.scanBatch(entity: "Pet", after: 10, limit: 3).primaryKeys == [11, 12, 38], when)
        }
        try matches(store, "open")
        try store.close()
        store = try scope.openStore(at: url)
        try matches(store, "reopened")
    }
}
