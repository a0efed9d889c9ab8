import Foundation
import ObjectModel
import ObjectStore
import Testing

extension StoreConformance {
    /// A snapshot reads one moment: what is saved after it was taken is not in it, reads
    /// through it agree with each other, writes through it are refused, and it closes on its own.
    func snapshotIsOneMoment(_ scope: Scope) throws {
        let store = try scope.openStore()
        func new(_ entity: String) throws -> ObjectKey { ObjectKey(entity, try store.allocatePrimaryKeys(entity: entity, count: 1).lowerBound) }
        let ada = try new("Person"), bob = try new("Person"), rex = try new("Pet")
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: ada, attributes: ["name": .string("Ada")], toMany: ["pets": [rex]]),
            ObjectRecord(key: bob, attributes: ["name": .string("Bob")]),
            ObjectRecord(key: rex, attributes: ["name": .string("Rex")], toOne: ["owner": ada]),
        ]))
        let snapshot = try store.snapshot()
        #expect(snapshot.isReadOnly)
        #expect(snapshot.identifier == store.identifier)

        // Changes after the snapshot: an insert, an update moving a relationship, a delete, metadata.
        let cy = try new("Person")
        try store.save(ChangeSet(inserted: [ObjectRecord(key: cy, attributes: ["name": .string("Cy")])]))
        try store.save(ChangeSet(updated: [ObjectUpdate(key: rex, toOne: ["owner": bob]), ObjectUpdate(key: ada, attributes: ["name": .string("Ada L.")])]))
        try store.save(ChangeSet(deleted: [ObjectDeletion(key: bob)]))
        var metadata = try store.metadata()
        metadata["conformance.later"] = .string("yes")
        try store.setMetadata(metadata)

        #expect(try snapshot.count(FetchRequest(entity: "Person")) == 2)
        #expect(try snapshot.fetch(FetchRequest(entity: "Person", sortDescriptors: [ObjectSortDescriptor("name")])).map(\.key) == [ada, bob])
        #expect(try snapshot.record(for: ada)?.attributes["name"] == .string("Ada"))
        #expect(try snapshot.record(for: bob) != nil)
        #expect(try snapshot.record(for: cy) == nil)
        #expect(try snapshot.record(for: rex)?.toOne["owner"] == ada)
        #expect(try snapshot.relatedKeys(of: ada, relationship: "pets") == [rex])
        #expect(try snapshot.relatedKeys(of: bob, relationship: "pets").isEmpty)
        #expect(try snapshot.scan(entity: "Person", after: nil, limit: 10).map(\.key) == [ada, bob])
        #expect(try snapshot.metadata()["conformance.later"] == nil)
        #expect(try snapshot.lastAllocatedKey(entity: "Person") < cy.primaryKey)
        #expect(try snapshot.fetch(FetchRequest(entity: "Pet", predicate: try ObjectPredicate("owner.name == 'Ada'"))).map(\.key) == [rex])
        // A snapshot of the snapshot is the same moment.
        let again = try snapshot.snapshot()
        #expect(try again.count(FetchRequest(entity: "Person")) == 2)
        try again.close()
        #expect(try snapshot.count(FetchRequest(entity: "Person")) == 2, "closing a snapshot of it leaves it open")

        // The store itself is at the new moment.
        #expect(try store.count(FetchRequest(entity: "Person")) == 2)
        #expect(try store.record(for: cy) != nil)
        #expect(try store.record(for: rex)?.toOne["owner"] == nil, "the owner was deleted")

        // Writes through a snapshot are refused.
        #expect(throws: StoreError.self) { try snapshot.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Pet", 900))])) }
        #expect(throws: StoreError.self) { try snapshot.bulkInsert([ObjectRecord(key: ObjectKey("Pet", 901))]) }
        #expect(throws: StoreError.self) { _ = try snapshot.allocatePrimaryKeys(entity: "Pet", count: 1) }
        #expect(throws: StoreError.self) { try snapshot.setMetadata(metadata) }

        // The store can be closed while the snapshot is open; the snapshot closes on its own.
        try store.close()
        #expect(try snapshot.count(FetchRequest(entity: "Pet")) == 1)
        try snapshot.close()
        #expect(throws: StoreError.self) { _ = try snapshot.count(FetchRequest(entity: "Pet")) }
        #expect(throws: StoreError.self) { _ = try store.snapshot() }
    }
}
