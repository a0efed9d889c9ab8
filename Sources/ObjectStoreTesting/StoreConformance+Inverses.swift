import Foundation
import ObjectModel
import ObjectStore
import Testing

// The contract for change sets that give one side of a relationship only: the
// store completes the other side. Change sets that give both sides must agree,
// or the save is refused and nothing changes.

extension StoreConformance {
    /// Every kind of inverse pair: one-to-many (plain and ordered), one-to-one between two
    /// entities and with itself, many-to-many (plain, ordered, with itself), and a to-one
    /// into an inheritance hierarchy.
    static let graphModel: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(versionIdentifiers: ["conformance-graph-1"]) {
                Entity("Person") {
                    Attribute("name", .string)
                    Relationship("pets", to: "Pet", inverse: "owner", toMany: true)
                    Relationship("passport", to: "Passport", inverse: "holder")
                    Relationship("spouse", to: "Person", inverse: "spouse")
                    Relationship("friends", to: "Person", inverse: "friends", toMany: true)
                    Relationship("vehicle", to: "Vehicle", inverse: "drivers")
                }
                Entity("Pet") {
                    Attribute("name", .string)
                    Relationship("owner", to: "Person", inverse: "pets")
                }
                Entity("Passport") {
                    Attribute("number", .string)
                    Relationship("holder", to: "Person", inverse: "passport")
                }
                Entity("Playlist") {
                    Attribute("name", .string)
                    Relationship("tracks", to: "Track", inverse: "playlist", toMany: true, ordered: true)
                    Relationship("featured", to: "Track", inverse: "featuredIn", toMany: true, ordered: true)
                }
                Entity("Track") {
                    Attribute("title", .string)
                    Relationship("playlist", to: "Playlist", inverse: "tracks")
                    Relationship("featuredIn", to: "Playlist", inverse: "featured", toMany: true)
                    Relationship("tags", to: "Tag", inverse: "tracks", toMany: true)
                }
                Entity("Tag") {
                    Attribute("label", .string)
                    Relationship("tracks", to: "Track", inverse: "tags", toMany: true)
                }
                Entity("Vehicle", abstract: true) {
                    Relationship("drivers", to: "Person", inverse: "vehicle", toMany: true)
                }
                Entity("Car", parent: "Vehicle") {}
                Entity("Bike", parent: "Vehicle") {}
                // A many-to-many whose two sides share a name: two relationships, not one that is its own inverse.
                Entity("Note") {
                    Relationship("links", to: "Label", inverse: "links", toMany: true)
                }
                Entity("Label") {
                    Relationship("links", to: "Note", inverse: "links", toMany: true)
                }
            }
        } catch {
            preconditionFailure("the conformance graph model is inconsistent: \(error)")
        }
    }()

    /// A change set that gives one side of a relationship is completed by the store.
    func oneSidedChanges(_ scope: Scope) throws {
        let store = try scope.openStore(model: Self.graphModel)
        func new(_ entity: String) throws -> ObjectKey { ObjectKey(entity, try store.allocatePrimaryKeys(entity: entity, count: 1).lowerBound) }
        func related(_ key: ObjectKey, _ name: String) throws -> [ObjectKey] { try store.relatedKeys(of: key, relationship: name) }
        func save(inserted: [ObjectRecord] = [], updated: [ObjectUpdate] = []) throws {
            try store.save(ChangeSet(inserted: inserted, updated: updated))
        }
        let ada = try new("Person"), bob = try new("Person"), cy = try new("Person")
        let rex = try new("Pet"), fido = try new("Pet")
        try save(inserted: [ada, bob, cy].map { ObjectRecord(key: $0) } + [ObjectRecord(key: fido)]
                 + [ObjectRecord(key: rex, toOne: ["owner": ada])])

        // One-to-many, from the to-one side: inserted, moved, cleared.
        #expect(try related(ada, "pets") == [rex], "an inserted to-one appears in its target's to-many")
        try save(updated: [ObjectUpdate(key: rex, toOne: ["owner": bob])])
        #expect(try related(ada, "pets").isEmpty, "a moved object leaves its old owner's to-many")
        #expect(try related(bob, "pets") == [rex])
        try save(updated: [ObjectUpdate(key: rex, toOne: ["owner": ObjectKey?.none])])
        #expect(try related(bob, "pets").isEmpty)

        // One-to-many, from the to-many side: members gained, stolen from another owner, dropped.
        try save(updated: [ObjectUpdate(key: ada, toMany: ["pets": [rex, fido]])])
        #expect(try store.record(for: rex)?.toOne["owner"] == ada)
        #expect(try store.record(for: fido)?.toOne["owner"] == ada)
        try save(updated: [ObjectUpdate(key: bob, toMany: ["pets": [rex]])])
        #expect(try store.record(for: rex)?.toOne["owner"] == bob)
        #expect(try related(ada, "pets") == [fido], "a member taken by another owner leaves the old owner's to-many")
        try save(updated: [ObjectUpdate(key: ada, toMany: ["pets": []])])
        #expect(try store.record(for: fido)?.toOne["owner"] == nil, "a member dropped from a to-many loses its to-one")
        #expect(try related(bob, "pets") == [rex])

        // One-to-one between two entities, from either side; a displaced partner is cleared.
        let passport = try new("Passport")
        try save(inserted: [ObjectRecord(key: passport, toOne: ["holder": ada])])
        #expect(try store.record(for: ada)?.toOne["passport"] == passport, "an inserted one-to-one names its target back")
        try save(updated: [ObjectUpdate(key: bob, toOne: ["passport": passport])])
        #expect(try store.record(for: passport)?.toOne["holder"] == bob)
        #expect(try store.record(for: ada)?.toOne["passport"] == nil, "the displaced partner is cleared")
        try save(updated: [ObjectUpdate(key: passport, toOne: ["holder": cy])])
        #expect(try store.record(for: cy)?.toOne["passport"] == passport)
        #expect(try store.record(for: bob)?.toOne["passport"] == nil)
        try save(updated: [ObjectUpdate(key: cy, toOne: ["passport": ObjectKey?.none])])
        #expect(try store.record(for: passport)?.toOne["holder"] == nil)

        // One-to-one with itself.
        try save(updated: [ObjectUpdate(key: ada, toOne: ["spouse": bob])])
        #expect(try store.record(for: bob)?.toOne["spouse"] == ada)
        try save(updated: [ObjectUpdate(key: cy, toOne: ["spouse": bob])])
        #expect(try store.record(for: bob)?.toOne["spouse"] == cy)
        #expect(try store.record(for: ada)?.toOne["spouse"] == nil)

        // Many-to-many, plain and with itself.
        let hits = try new("Tag"), live = try new("Tag")
        let t1 = try new("Track"), t2 = try new("Track"), t3 = try new("Track")
        try save(inserted: [hits, live].map { ObjectRecord(key: $0) } + [t2, t3].map { ObjectRecord(key: $0) }
                 + [ObjectRecord(key: t1, toMany: ["tags": [hits, live]])])
        #expect(try related(hits, "tracks") == [t1])
        #expect(try related(live, "tracks") == [t1])
        try save(updated: [ObjectUpdate(key: hits, toMany: ["tracks": [t2, t3]])])
        #expect(try related(t1, "tags") == [live])
        #expect(try related(t2, "tags") == [hits])
        try save(updated: [ObjectUpdate(key: ada, toMany: ["friends": [bob, cy]])])
        #expect(try related(bob, "friends") == [ada])
        #expect(try related(cy, "friends") == [ada])

        // Two updates of one object in one change set: the last wins, and no partner keeps a stale member.
        try save(updated: [ObjectUpdate(key: rex, toOne: ["owner": ada]), ObjectUpdate(key: rex, toOne: ["owner": cy])])
        #expect(try related(bob, "pets").isEmpty)
        #expect(try related(ada, "pets").isEmpty)
        #expect(try related(cy, "pets") == [rex])

        // A many-to-many whose sides share a name, both sides given: nothing but the links given.
        let n1 = try new("Note"), n2 = try new("Note"), l1 = try new("Label"), l2 = try new("Label")
        try save(inserted: [ObjectRecord(key: n1, toMany: ["links": [l2]]), ObjectRecord(key: n2), ObjectRecord(key: l1),
                            ObjectRecord(key: l2, toMany: ["links": [n1]])])
        #expect(try related(n1, "links") == [l2])
        #expect(try related(n2, "links").isEmpty)
        #expect(try related(l1, "links").isEmpty)
        #expect(try related(l2, "links") == [n1])
        try save(updated: [ObjectUpdate(key: l1, toMany: ["links": [n1, n2]])])
        #expect(try related(n1, "links") == [l1, l2])
        #expect(try related(n2, "links") == [l1])
        try save(updated: [ObjectUpdate(key: n1, toMany: ["links": []]), ObjectUpdate(key: l1, toMany: ["links": [n2]]),
                           ObjectUpdate(key: l2, toMany: ["links": []])])
        #expect(try related(l1, "links") == [n2])
        #expect(try related(n2, "links") == [l1])

        // Ordered to-many: an object a to-one moves in goes last; the order given on the to-many side is kept.
        let mix = try new("Playlist"), other = try new("Playlist")
        try save(inserted: [ObjectRecord(key: mix, toMany: ["tracks": [t3, t1], "featured": [t2, t1]]), ObjectRecord(key: other)])
        #expect(try related(mix, "tracks") == [t3, t1])
        #expect(try store.record(for: t3)?.toOne["playlist"] == mix)
        try save(updated: [ObjectUpdate(key: t2, toOne: ["playlist": mix])])
        #expect(try related(mix, "tracks") == [t3, t1, t2], "a member added through its to-one goes last")
        try save(updated: [ObjectUpdate(key: t3, toOne: ["playlist": other])])
        #expect(try related(mix, "tracks") == [t1, t2])
        #expect(try related(other, "tracks") == [t3])
        // Inserted and updated objects joining one after another go last in the order they joined.
        let t4 = try new("Track"), t5 = try new("Track")
        try save(inserted: [ObjectRecord(key: t5, toOne: ["playlist": other])])
        try save(updated: [ObjectUpdate(key: t2, toOne: ["playlist": other])])
        try save(inserted: [ObjectRecord(key: t4, toOne: ["playlist": other])])
        #expect(try related(other, "tracks") == [t3, t5, t2, t4])
        try save(updated: [ObjectUpdate(key: t2, toOne: ["playlist": mix])])
        #expect(try related(mix, "tracks") == [t1, t2])
        #expect(try related(other, "tracks") == [t3, t5, t4])
        // Ordered many-to-many, from the unordered side.
        #expect(try related(t2, "featuredIn") == [mix])
        try save(updated: [ObjectUpdate(key: t3, toMany: ["featuredIn": [mix]])])
        #expect(try related(mix, "featured") == [t2, t1, t3], "a member added from the other side goes last")

        // A to-one into an inheritance hierarchy, set from the to-many side: the target keeps its entity.
        let car = try new("Car"), bike = try new("Bike")
        try save(inserted: [ObjectRecord(key: car), ObjectRecord(key: bike, toMany: ["drivers": [ada, bob]])])
        #expect(try store.record(for: ada)?.toOne["vehicle"] == bike)
        try save(updated: [ObjectUpdate(key: car, toMany: ["drivers": [bob]])])
        #expect(try store.record(for: bob)?.toOne["vehicle"] == car)
        #expect(try related(bike, "drivers") == [ada])
        #expect(try store.fetch(FetchRequest(entity: "Person", predicate: try ObjectPredicate("vehicle == nil"))).map(\.key) == [cy])

        // Objects changed only as the other side keep their versions; objects a change set
        // updates move to the next one, unless it keeps versions.
        let before = try #require(try store.record(for: mix)).version
        try save(updated: [ObjectUpdate(key: t1, toOne: ["playlist": other])])
        #expect(try store.record(for: mix)?.version == before)
        #expect(try store.record(for: t1)?.version == 2)
        try store.save(ChangeSet(updated: [ObjectUpdate(key: t1, toOne: ["playlist": mix])], keepsVersions: true))
        #expect(try store.record(for: t1)?.version == 2)
        #expect(try related(mix, "tracks") == [t2, t1])

        // What the store completed survives closing it.
        guard let url = store.url else { return }
        try store.close()
        let again = try scope.openStore(at: url, model: Self.graphModel, options: StoreOptions(readOnly: true, createIfMissing: false))
        #expect(try again.relatedKeys(of: mix, relationship: "tracks") == [t2, t1])
        #expect(try again.record(for: bob)?.toOne["spouse"] == cy)
        #expect(try again.relatedKeys(of: hits, relationship: "tracks") == [t2, t3])
    }

    /// A change set whose two sides disagree is refused, and nothing of it lands.
    func disagreeingSides(_ scope: Scope) throws {
        let store = try scope.openStore(model: Self.graphModel)
        func new(_ entity: String) throws -> ObjectKey { ObjectKey(entity, try store.allocatePrimaryKeys(entity: entity, count: 1).lowerBound) }
        let ada = try new("Person"), bob = try new("Person"), rex = try new("Pet"), passport = try new("Passport")
        let track = try new("Track"), tag = try new("Tag")
        try store.save(ChangeSet(inserted: [ada, bob, rex, passport, track, tag].map { ObjectRecord(key: $0) }))
        let refused: [(String, ChangeSet)] = [
            ("a to-one and a to-many naming different owners",
             ChangeSet(updated: [ObjectUpdate(key: rex, toOne: ["owner": bob]), ObjectUpdate(key: ada, toMany: ["pets": [rex]])])),
            ("two objects claiming one one-to-one partner",
             ChangeSet(updated: [ObjectUpdate(key: ada, toOne: ["passport": passport]), ObjectUpdate(key: bob, toOne: ["passport": passport])])),
            ("two to-manys claiming one member with a to-one inverse",
             ChangeSet(updated: [ObjectUpdate(key: ada, toMany: ["pets": [rex]]), ObjectUpdate(key: bob, toMany: ["pets": [rex]])])),
            ("a many-to-many given on both sides differently",
             ChangeSet(updated: [ObjectUpdate(key: track, toMany: ["tags": [tag]]), ObjectUpdate(key: tag, toMany: ["tracks": []])])),
            ("an inserted object whose sides disagree",
             ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Pet", 99), toOne: ["owner": ada])], updated: [ObjectUpdate(key: ada, toMany: ["pets": []])])),
        ]
        for (what, changes) in refused {
            #expect(throws: StoreError.self, "\(what) is refused") { try store.save(changes) }
        }
        #expect(try store.record(for: rex)?.toOne["owner"] == nil)
        #expect(try store.relatedKeys(of: ada, relationship: "pets").isEmpty)
        #expect(try store.record(for: passport)?.toOne["holder"] == nil)
        #expect(try store.relatedKeys(of: track, relationship: "tags").isEmpty)
        #expect(try store.record(for: ObjectKey("Pet", 99)) == nil)
        #expect(try store.record(for: ada)?.version == 1)
    }
}
