import Foundation
import ObjectModel
import ObjectStore
import Testing

// Order keys: an ordered to-many keeps the numbers it is given (Core Data's `Z_FOK_…`), so a
// store converted through any backend holds the very numbers it held.

extension StoreConformance {
    func orderKeys(_ scope: Scope) throws {
        let url = try scope.newURL()
        var store = try scope.openStore(at: url)
        let list = try newKey(store, "Playlist")
        let t1 = try newKey(store, "Track"), t2 = try newKey(store, "Track"), t3 = try newKey(store, "Track"), t4 = try newKey(store, "Track")
        func track(_ key: ObjectKey, _ title: String) -> ObjectRecord {
            ObjectRecord(key: key, attributes: ["title": .string(title)], toOne: ["playlist": list])
        }
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: list, attributes: ["name": .string("mix")], toMany: ["tracks": [t3, t1, t2]], orderKeys: ["tracks": [2048, 3072, 6144]]),
            track(t1, "one"), track(t2, "two"), track(t3, "three"),
        ]))
        #expect(try store.orderedMembers(of: list, relationship: "tracks") == OrderedMembers(keys: [t3, t1, t2], orderKeys: [2048, 3072, 6144]))
        #expect(try store.relatedKeys(of: list, relationship: "tracks") == [t3, t1, t2])

        // Kept across a reopen; a member added from the other side is numbered on from the last.
        try store.close()
        store = try scope.openStore(at: url)
        #expect(try store.orderedMembers(of: list, relationship: "tracks").orderKeys == [2048, 3072, 6144])
        try store.save(ChangeSet(inserted: [track(t4, "four")]))
        let grown = try store.orderedMembers(of: list, relationship: "tracks")
        #expect(grown.keys == [t3, t1, t2, t4])
        #expect(grown.orderKeys.count == 4 && Array(grown.orderKeys.prefix(3)) == [2048, 3072, 6144] && grown.orderKeys[3] > 6144)

        // A member deleted leaves the others' numbers as they were.
        try store.save(ChangeSet(deleted: [ObjectDeletion(key: t1)]))
        let shrunk = try store.orderedMembers(of: list, relationship: "tracks")
        #expect(shrunk.keys == [t3, t2, t4] && Array(shrunk.orderKeys.prefix(2)) == [2048, 6144])

        // Order keys that are not one ascending number per member, or given for a list that is not
        // ordered or not given, are refused before anything is written.
        for wrong in [
            ObjectUpdate(key: list, toMany: ["tracks": [t2, t3]], orderKeys: ["tracks": [5, 5]]),
            ObjectUpdate(key: list, toMany: ["tracks": [t2, t3]], orderKeys: ["tracks": [9, 2]]),
            ObjectUpdate(key: list, toMany: ["tracks": [t2, t3]], orderKeys: ["tracks": [1]]),
            ObjectUpdate(key: list, orderKeys: ["tracks": [1, 2]]),
        ] {
            #expect(throws: StoreError.self) { try store.save(ChangeSet(updated: [wrong])) }
        }
        let tag = try newKey(store, "Tag")
        #expect(throws: StoreError.self) {
            try store.save(ChangeSet(inserted: [ObjectRecord(key: tag, toMany: ["tracks": [t2]], orderKeys: ["tracks": [7]])]))
        }
        #expect(try store.orderedMembers(of: list, relationship: "tracks") == shrunk)

        // A list rewritten without order keys is numbered 1, 2, 3…
        try store.save(ChangeSet(updated: [ObjectUpdate(key: list, toMany: ["tracks": [t4, t2, t3]])]))
        #expect(try store.orderedMembers(of: list, relationship: "tracks") == OrderedMembers(keys: [t4, t2, t3], orderKeys: [1, 2, 3]))
        try store.save(ChangeSet(updated: [ObjectUpdate(key: list, toMany: ["tracks": [t2, t3, t4]], orderKeys: ["tracks": [-5, 0, 1 << 40]])]))
        try store.close()
        store = try scope.openStore(at: url)
        #expect(try store.orderedMembers(of: list, relationship: "tracks") == OrderedMembers(keys: [t2, t3, t4], orderKeys: [-5, 0, 1 << 40]))
        // A batch delete takes the object out of the list, the others keeping their numbers.
        #expect(try store.batchDelete(FetchRequest(entity: "Track", predicate: try ObjectPredicate("title == 'three'")), author: nil) == 1)
        #expect(try store.orderedMembers(of: list, relationship: "tracks") == OrderedMembers(keys: [t2, t4], orderKeys: [-5, 1 << 40]))
        // An unordered to-many answers 1, 2, 3… in key order.
        #expect(try store.orderedMembers(of: t2, relationship: "tags") == OrderedMembers([]))

        // The batch form gives what the form for one object gives, object by object, in the order
        // asked: an ordered side, a many-to-many, an object that does not exist, a member deleted.
        let other = try newKey(store, "Playlist"), rock = try newKey(store, "Tag"), jazz = try newKey(store, "Tag")
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: other, attributes: ["name": .string("other")]),
            ObjectRecord(key: rock, attributes: ["label": .string("rock")], toMany: ["tracks": [t4, t2]]),
            ObjectRecord(key: jazz, attributes: ["label": .string("jazz")], toMany: ["tracks": [t2]]),
        ]))
        try store.save(ChangeSet(deleted: [ObjectDeletion(key: t4)]))
        let missing = ObjectKey("Playlist", 1 << 40)
        for (keys, name) in [([other, list, missing], "tracks"), ([jazz, rock, ObjectKey("Tag", 1 << 40)], "tracks"), ([t2, t3], "tags")] {
            #expect(try store.orderedMembers(of: keys, relationship: name) == keys.map { try store.orderedMembers(of: $0, relationship: name) },
                    "\(keys).\(name)")
            // Its members are what `relatedKeys` gives, in its order (key order for an unordered side).
            let existing = try keys.filter { try store.record(for: $0) != nil }
            #expect(try store.orderedMembers(of: existing, relationship: name).map(\.keys) == existing.map { try store.relatedKeys(of: $0, relationship: name) })
        }
        #expect(try store.orderedMembers(of: [rock], relationship: "tracks") == [OrderedMembers([t2])])
    }
}
