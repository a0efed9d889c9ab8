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
