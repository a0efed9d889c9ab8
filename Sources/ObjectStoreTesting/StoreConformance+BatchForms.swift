import Foundation
import ObjectModel
import ObjectStore
import Testing

extension StoreConformance {
    /// The batch forms a context uses (``PersistentStore/fetchBatches(_:batchSize:_:)`` and
    /// ``PersistentStore/save(_:insertingBatches:)``) give what the record forms give: a save
    /// with batches stores what a save of the same objects as records stores, in a second store
    /// of the same backend, and fails as a whole; a fetch in batches gives the fetch's records in
    /// their order, each batch of one entity and within the size asked for.
    func batchForms(_ scope: Scope) throws {
        let batched = try scope.openStore(), recorded = try scope.openStore()
        let model = batched.model
        func batch(_ entity: String, _ keys: [Int64], _ fill: (inout RecordBatch, Int) throws -> Void) throws -> RecordBatch {
            var batch = RecordBatch(entity: try #require(model.entity(named: entity)))
            for key in keys { try fill(&batch, batch.appendRow(primaryKey: key)) }
            return batch
        }
        func slot(_ entity: String, _ name: String) throws -> Int { try #require(model.entity(named: entity)?.layout.attributeSlot(name)) }
        let people = [ObjectRecord(key: ObjectKey("Person", 1), attributes: ["name": .string("Ann")]),
                      ObjectRecord(key: ObjectKey("Person", 2), attributes: ["name": .string("Bob"), "age": .integer(40)])]
        let owner = try #require(model.entity(named: "Pet")?.layout.toOneSlot("owner"))
        let batches = [
            try batch("Pet", [10, 11, 12]) { batch, row in
                batch[row, attribute: try slot("Pet", "name")] = .string("pet \(row)")
                if row < 2 { batch[row, toOne: owner] = ObjectKey("Person", 1) }
            },
            try batch("Car", [20, 21]) { batch, row in
                batch[row, attribute: try slot("Car", "wheels")] = .integer(4)
                batch[row, attribute: try slot("Car", "seats")] = row == 0 ? .integer(5) : nil
            },
            try batch("SportsCar", [22]) { batch, row in batch[row, attribute: try slot("SportsCar", "topSpeed")] = .double(301.5) },
            try batch("Truck", [23]) { batch, row in batch[row, attribute: try slot("Truck", "payload")] = .integer(12_000) },
            try batch("Car", [24]) { batch, row in batch[row, attribute: try slot("Car", "wheels")] = .integer(3) },
        ]
        var pending = batches
        try batched.save(ChangeSet(inserted: people)) { pending.isEmpty ? nil : pending.removeFirst() }
        try recorded.save(ChangeSet(inserted: people + batches.flatMap(\.records)))
        let requests = [
            FetchRequest(entity: "Person"), FetchRequest(entity: "Pet"), FetchRequest(entity: "Vehicle"),
            FetchRequest(entity: "Car", includesSubentities: false),
            FetchRequest(entity: "Vehicle", sortDescriptors: [ObjectSortDescriptor("wheels", ascending: false)]),
            FetchRequest(entity: "Vehicle", predicate: try ObjectPredicate("wheels == 4"), fetchLimit: 2, fetchOffset: 1),
        ]
        for request in requests {
            let expected = try recorded.fetch(request)
            #expect(try batched.fetch(request) == expected, "\(request.entityName)")
            var rows: [ObjectRecord] = []
            try batched.fetchBatches(request, batchSize: 2) { batch in
                #expect(batch.count >= 1 && batch.count <= 2, "\(request.entityName)")
                rows += batch.records
            }
            #expect(rows == expected, "\(request.entityName) in batches")
        }
        #expect(try batched.relatedKeys(of: ObjectKey("Person", 1), relationship: "pets") == [ObjectKey("Pet", 10), ObjectKey("Pet", 11)])
        #expect(try batched.allocatePrimaryKeys(entity: "Car", count: 1).lowerBound > 24)

        // A batch row whose key is in use fails the whole save: the change set's record does not land either.
        pending = [try batch("Pet", [13, 12]) { _, _ in }]
        #expect(throws: StoreError.self) {
            try batched.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Person", 3), attributes: ["name": .string("Cy")])])) {
                pending.isEmpty ? nil : pending.removeFirst()
            }
        }
        #expect(try batched.record(for: ObjectKey("Person", 3)) == nil)
        #expect(try batched.record(for: ObjectKey("Pet", 13)) == nil)
    }
}
