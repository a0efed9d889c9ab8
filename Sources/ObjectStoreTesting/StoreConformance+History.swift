import Foundation
import ObjectModel
import ObjectStore
import Testing

// Persistent history and batch operations: every write records one transaction, in the
// same transaction as its data, with the objects the change set names; batch update and
// delete change what they say (delete rules applied) and are recorded like any save.

extension StoreConformance {
    func history(_ scope: Scope) throws {
        let url = try scope.newURL()
        let store = try scope.openStore(at: url, options: StoreOptions(author: "default"))
        #expect(try store.lastHistoryToken() == 0)
        #expect(try store.history(after: nil, limit: 10).isEmpty)
        let ada = ObjectKey("Person", 1), bob = ObjectKey("Person", 2), rex = ObjectKey("Pet", 3)
        _ = try store.allocatePrimaryKeys(entity: "Person", count: 3)
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: bob, attributes: ["name": .string("Bob")]),
            ObjectRecord(key: ada, attributes: ["name": .string("Ada")]),
        ], author: "alice"))
        try store.save(ChangeSet(updated: [ObjectUpdate(key: ada, attributes: ["age": .integer(36)], toOne: ["spouse": bob])]))
        let before = try store.lastHistoryToken()
        // A refused save records nothing, like it writes nothing.
        #expect(throws: StoreError.self) { try store.save(ChangeSet(updated: [ObjectUpdate(key: bob, expectedVersion: 99, attributes: ["age": .integer(1)])])) }
        #expect(throws: StoreError.self) { try store.save(ChangeSet(inserted: [ObjectRecord(key: ada)])) }   // a key in use
        #expect(try store.lastHistoryToken() == before)
        try store.setMetadata(try store.metadata())
        try store.bulkInsert([ObjectRecord(key: rex, attributes: ["name": .string("Rex")], toOne: ["owner": ada])])
        try store.save(ChangeSet(deleted: [ObjectDeletion(key: bob)], author: "carol"))

        let all = try store.history(after: nil, limit: 100)
        #expect(all.map(\.author) == ["alice", "default", "default", "carol"])
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.token.value < $1.token.value })
        #expect(all.allSatisfy { $0.token.storeIdentifier == store.identifier })
        guard all.count == 4 else { return }
        #expect(all[0].inserted == [ada, bob])
        #expect(all[0].updated.isEmpty && all[0].deleted.isEmpty)
        #expect(all[1].updated == [UpdatedObject(key: ada, properties: ["age", "spouse"])])
        #expect(all[2].inserted == [rex])
        #expect(all[3].deleted == [bob])
        #expect(try store.lastHistoryToken() == all.last!.token.value)

        // Reads after a token, by author, by entity (an entity admits its sub-entities).
        #expect(try store.history(after: all[1].token.value, limit: 100).first?.token == all.first { $0.token > all[1].token }?.token)
        #expect(try store.history(HistoryQuery(author: "carol")).map(\.token) == [all[3].token])
        #expect(try store.history(HistoryQuery(entities: ["Pet"])).map(\.token) == [all[2].token])
        #expect(try store.history(HistoryQuery(limit: 2)).count == 2)

        // Deleting history: what remains starts after the token, and tokens are never handed out again.
        let last = try store.lastHistoryToken()
        #expect(try store.deleteHistory(through: all[1].token.value) == all.filter { $0.token <= all[1].token }.count)
        #expect(try store.history(after: nil, limit: 100).first?.token == all.first { $0.token > all[1].token }?.token)
        #expect(try store.deleteHistory(through: last) > 0)
        #expect(try store.history(after: nil, limit: 100).isEmpty)
        #expect(try store.lastHistoryToken() == last)
        try store.save(ChangeSet(updated: [ObjectUpdate(key: ada, attributes: ["age": .integer(37)])]))
        let next = try #require(try store.history(after: nil, limit: 10).first)
        #expect(next.token.value > last)

        // Kept across a reopen, and readable read-only.
        try store.close()
        let again = try scope.openStore(at: url, options: StoreOptions(readOnly: true))
        #expect(try again.history(after: nil, limit: 10) == [next])
        #expect(try again.lastHistoryToken() == next.token.value)
        try again.close()

        // A store told not to record history records none.
        let quiet = try scope.openStore(options: StoreOptions(recordsHistory: false))
        try quiet.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Person", 1), attributes: ["name": .string("Q")])]))
        #expect(try quiet.history(after: nil, limit: 10).isEmpty)
    }

    func batchOperations(_ scope: Scope) throws {
        let store = try scope.openStore()
        let ada = ObjectKey("Person", 1), bob = ObjectKey("Person", 2), cy = ObjectKey("Person", 3)
        let rex = ObjectKey("Pet", 4), tom = ObjectKey("Pet", 5)
        let t1 = ObjectKey("Track", 6), t2 = ObjectKey("Track", 7), jazz = ObjectKey("Tag", 8), pop = ObjectKey("Tag", 9)
        try store.bulkInsert([
            ObjectRecord(key: ada, attributes: ["name": .string("Ada"), "age": .integer(36)], toOne: ["spouse": bob],
                         toMany: ["pets": [rex, tom], "friends": [cy]]),
            ObjectRecord(key: bob, attributes: ["name": .string("Bob"), "age": .integer(40)], toOne: ["spouse": ada]),
            ObjectRecord(key: cy, attributes: ["name": .string("Cy"), "age": .integer(20)], toMany: ["friends": [ada]]),
            ObjectRecord(key: rex, attributes: ["name": .string("Rex")], toOne: ["owner": ada]),
            ObjectRecord(key: tom, attributes: ["name": .string("Tom")], toOne: ["owner": ada]),
            ObjectRecord(key: t1, attributes: ["title": .string("One")], toMany: ["tags": [jazz, pop]]),
            ObjectRecord(key: t2, attributes: ["title": .string("Two")], toMany: ["tags": [jazz]]),
            ObjectRecord(key: jazz, attributes: ["label": .string("jazz")], toMany: ["tracks": [t1, t2]]),
            ObjectRecord(key: pop, attributes: ["label": .string("pop")], toMany: ["tracks": [t1]]),
        ])
        let start = try store.lastHistoryToken()

        // Batch update: the matching objects, their versions moved, one transaction.
        let updated = try store.batchUpdate(FetchRequest(entity: "Person", predicate: try ObjectPredicate("age >= 30")),
                                            set: ["nickname": .string("senior"), "age": .integer(50)], author: "batch")
        #expect(updated == 2)
        #expect(try store.record(for: ada)?.attributes["nickname"] == .string("senior"))
        #expect(try store.record(for: ada)?.version == 2)
        #expect(try store.record(for: cy)?.attributes["nickname"] == nil)
        let update = try #require(try store.history(after: start, limit: 10).first)
        #expect(update.author == "batch")
        #expect(update.updated == [UpdatedObject(key: ada, properties: ["age", "nickname"]), UpdatedObject(key: bob, properties: ["age", "nickname"])])
        #expect(try store.batchUpdate(FetchRequest(entity: "Person", predicate: try ObjectPredicate("age > 1000")), set: ["age": .integer(1)]) == 0)


        // Refused before anything is written: not an attribute, a relationship, a rule broken.
        let refusals: [[String: Value?]] = [["height": .integer(1)], ["spouse": .integer(1)], ["name": nil], ["age": .string("old")]]
        for values in refusals {
            #expect(throws: StoreError.self) { try store.batchUpdate(FetchRequest(entity: "Person"), set: values) }
        }
        #expect(try store.history(after: update.token.value, limit: 10).isEmpty)
        // No predicate: every object of the entity.
        #expect(try store.batchUpdate(FetchRequest(entity: "Person"), set: ["nickname": .string("any")]) == 3)
        #expect(try store.fetch(FetchRequest(entity: "Person")).allSatisfy { $0.attributes["nickname"] == .string("any") })
        let afterUpdate = try store.lastHistoryToken()

        // Batch delete: cascade takes Ada's pets; nullify takes her out of Bob's spouse and Cy's friends.
        let deleted = try store.batchDelete(FetchRequest(entity: "Person", predicate: try ObjectPredicate("name == 'Ada'")), author: "cleaner")
        #expect(deleted == 3)
        #expect(try store.record(for: ada) == nil && store.record(for: rex) == nil && store.record(for: tom) == nil)
        #expect(try store.record(for: bob)?.toOne["spouse"] == nil)
        #expect(try store.relatedKeys(of: cy, relationship: "friends").isEmpty)
        let removal = try #require(try store.history(after: afterUpdate, limit: 10).first)
        #expect(removal.author == "cleaner")
        #expect(removal.deleted == [ada, rex, tom])

        // Many-to-many: the tag leaves every track's list.
        #expect(try store.batchDelete(FetchRequest(entity: "Tag", predicate: try ObjectPredicate("label == 'jazz'"))) == 1)
        #expect(try store.relatedKeys(of: t1, relationship: "tags") == [pop])
        #expect(try store.relatedKeys(of: t2, relationship: "tags").isEmpty)
        #expect(try store.batchDelete(FetchRequest(entity: "Tag", predicate: try ObjectPredicate("label == 'none'"))) == 0)

        // An ordered to-many and its inverse to-one: deleting a track takes it out of the list; deleting the
        // playlist leaves its tracks without one; each partner is recorded as updated by the relationship.
        let list = ObjectKey("Playlist", 20), s1 = ObjectKey("Track", 21), s2 = ObjectKey("Track", 22), s3 = ObjectKey("Track", 23)
        try store.bulkInsert([
            ObjectRecord(key: list, attributes: ["name": .string("mix")], toMany: ["tracks": [s1, s2, s3]]),
            ObjectRecord(key: s1, attributes: ["title": .string("s1")], toOne: ["playlist": list]),
            ObjectRecord(key: s2, attributes: ["title": .string("s2")], toOne: ["playlist": list]),
            ObjectRecord(key: s3, attributes: ["title": .string("s3")], toOne: ["playlist": list]),
        ])
        let beforeTracks = try store.lastHistoryToken()
        #expect(try store.batchDelete(FetchRequest(entity: "Track", predicate: try ObjectPredicate("title == 's2'"))) == 1)
        #expect(try store.relatedKeys(of: list, relationship: "tracks") == [s1, s3])
        let trackGone = try #require(try store.history(after: beforeTracks, limit: 10).first)
        #expect(trackGone.deleted == [s2] && trackGone.updated == [UpdatedObject(key: list, properties: ["tracks"])])
        #expect(try store.batchDelete(FetchRequest(entity: "Playlist")) == 1)
        #expect(try store.record(for: s1)?.toOne["playlist"] == nil && store.record(for: s3)?.toOne["playlist"] == nil)
        let listGone = try #require(try store.history(after: trackGone.token.value, limit: 10).first)
        #expect(listGone.deleted == [list] && Set(listGone.updated.map(\.key)) == [s1, s3])
        #expect(listGone.updated.allSatisfy { $0.properties == ["playlist"] })

        // Inheritance: a request for an abstract entity deletes and updates its sub-entities' objects.
        try store.bulkInsert([
            ObjectRecord(key: ObjectKey("Car", 30), attributes: ["wheels": .integer(4), "seats": .integer(5)]),
            ObjectRecord(key: ObjectKey("SportsCar", 31), attributes: ["wheels": .integer(4), "seats": .integer(2)]),
            ObjectRecord(key: ObjectKey("Truck", 32), attributes: ["wheels": .integer(6)]),
        ])
        #expect(try store.batchUpdate(FetchRequest(entity: "Vehicle", predicate: try ObjectPredicate("wheels == 4")), set: ["wheels": .integer(3)]) == 2)
        #expect(try store.record(for: ObjectKey("SportsCar", 31))?.attributes["wheels"] == .integer(3))
        #expect(try store.batchDelete(FetchRequest(entity: "Vehicle", predicate: try ObjectPredicate("wheels < 5"))) == 2)
        #expect(try store.count(FetchRequest(entity: "Vehicle")) == 1)
        let vehicles = try #require(try store.history(after: nil, limit: 100).last)
        #expect(vehicles.deleted == [ObjectKey("Car", 30), ObjectKey("SportsCar", 31)])

        // Deny: refused while a related object survives, naming both; nothing written.
        let guarded = try ManagedObjectModel(versionIdentifiers: ["deny"]) {
            Entity("Owner") {
                Attribute("name", .string)
                Relationship("assets", to: "Asset", inverse: "owner", toMany: true, deleteRule: .deny)
            }
            Entity("Asset") {
                Attribute("name", .string)
                Relationship("owner", to: "Owner", inverse: "assets")
            }
        }
        let strict = try scope.openStore(model: guarded)
        let owner = ObjectKey("Owner", 1), asset = ObjectKey("Asset", 2)
        try strict.bulkInsert([ObjectRecord(key: owner, attributes: ["name": .string("O")], toMany: ["assets": [asset]]),
                               ObjectRecord(key: asset, attributes: ["name": .string("A")], toOne: ["owner": owner])])
        let token = try strict.lastHistoryToken()
        do {
            try strict.batchDelete(FetchRequest(entity: "Owner"))
            Issue.record("a delete the deny rule blocks went through")
        } catch let error as StoreError {
            #expect(error.code == .deleteDenied)
            #expect(error.message.contains("Owner/1") && error.message.contains("Asset/2"), "named as export names them")
        }
        #expect(try strict.record(for: owner) != nil)
        #expect(try strict.lastHistoryToken() == token)
        // Once the asset goes, the owner can.
        #expect(try strict.batchDelete(FetchRequest(entity: "Asset")) == 1)
        #expect(try strict.batchDelete(FetchRequest(entity: "Owner")) == 1)
    }
}
