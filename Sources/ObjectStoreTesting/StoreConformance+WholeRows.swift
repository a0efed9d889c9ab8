import Foundation
import ObjectModel
import ObjectStore
import Testing

// Batches that carry to-many lists (`RecordBatch.toMany`): what a conversion into a store that
// keeps both sides in its rows writes, each object once, whole. Every store takes them as it
// takes the same records; what the record form refuses, the batch form refuses.

extension StoreConformance {
    func batchLists(_ scope: Scope) throws {
        let url = try scope.newURL()
        var store = try scope.openStore(at: url)
        let model = store.model
        func entity(_ name: String) throws -> EntityDescription { try #require(model.entity(named: name)) }
        let list = ObjectKey("Playlist", 5), tracks = (1...3).map { ObjectKey("Track", Int64($0)) }
        let tags = [ObjectKey("Tag", 7), ObjectKey("Tag", 8)]
        // Each side as a source store holds it: the ordered list with Apple's order keys, the
        // many-to-many from both sides, the to-one inverses in the tracks' own rows.
        var playlists = RecordBatch(entity: try entity("Playlist"))
        playlists.appendRow(primaryKey: 5, version: 3)
        playlists.setToMany("tracks", [OrderedMembers(keys: [tracks[2], tracks[0], tracks[1]], orderKeys: [1024, 2048, 4096])])
        var trackBatch = RecordBatch(entity: try entity("Track"))
        let playlistSlot = try #require(trackBatch.layout.toOneSlot("playlist"))
        for key in tracks {
            let row = trackBatch.appendRow(primaryKey: key.primaryKey)
            trackBatch[row, toOne: playlistSlot] = list
        }
        trackBatch.setToMany("tags", [OrderedMembers(tags), OrderedMembers([tags[1]]), OrderedMembers([])])
        var tagBatch = RecordBatch(entity: try entity("Tag"))
        for key in tags { tagBatch.appendRow(primaryKey: key.primaryKey) }
        tagBatch.setToMany("tracks", [OrderedMembers([tracks[0]]), OrderedMembers([tracks[0], tracks[1]])])
        // A row appended after the lists were set gets empty lists.
        let spare = tagBatch.appendRow(primaryKey: 9)
        #expect(tagBatch.toMany["tracks"]?[spare] == OrderedMembers([]))
        #expect(tagBatch.record(at: 1).toMany == ["tracks": [tracks[0], tracks[1]]])
        #expect(playlists.record(at: 0).orderKeys == ["tracks": [1024, 2048, 4096]])
        // The ordered list last: a store that keeps its order with the members (a foreign key) writes it into their rows.
        for batch in [trackBatch, tagBatch, playlists] { try store.bulkInsert(batch, checkingReferences: false) }

        func matches(_ store: any PersistentStore, _ when: Comment) throws {
            #expect(try store.orderedMembers(of: list, relationship: "tracks") == OrderedMembers(keys: [tracks[2], tracks[0], tracks[1]], orderKeys: [1024, 2048, 4096]), when)
            #expect(try store.record(for: list)?.version == 3, when)
            for key in tracks { #expect(try store.relatedKeys(of: key, relationship: "playlist") == [list], when) }
            #expect(try store.relatedKeys(of: tracks[0], relationship: "tags") == tags, when)
            #expect(try store.relatedKeys(of: tracks[1], relationship: "tags") == [tags[1]], when)
            #expect(try store.relatedKeys(of: tracks[2], relationship: "tags") == [], when)
            #expect(try store.relatedKeys(of: tags[0], relationship: "tracks") == [tracks[0]], when)
            #expect(try store.relatedKeys(of: tags[1], relationship: "tracks") == [tracks[0], tracks[1]], when)
            #expect(try store.relatedKeys(of: ObjectKey("Tag", 9), relationship: "tracks") == [], when)
        }
        try matches(store, "as inserted")
        try store.close()
        store = try scope.openStore(at: url)
        try matches(store, "after a reopen")

        // A save that inserts batches takes their lists as records' (checked and completed): a
        // playlist whose list names tracks already stored.
        var more = RecordBatch(entity: try entity("Playlist"))
        more.appendRow(primaryKey: 6)
        more.setToMany("tracks", [OrderedMembers(keys: [tracks[1], tracks[0]], orderKeys: [10, 20])])
        var given = false
        try store.save(ChangeSet()) {
            defer { given = true }
            return given ? nil : more
        }
        let six = ObjectKey("Playlist", 6)
        #expect(try store.orderedMembers(of: six, relationship: "tracks") == OrderedMembers(keys: [tracks[1], tracks[0]], orderKeys: [10, 20]))
        #expect(try store.relatedKeys(of: tracks[0], relationship: "playlist") == [six], "the inverse completed")

        // What the record form refuses, the batch form refuses, and nothing of the batch lands.
        func refused(_ what: Comment, _ name: String, _ lists: [OrderedMembers], entity named: String = "Playlist") throws {
            var bad = RecordBatch(entity: try entity(named))
            bad.appendRow(primaryKey: 20)
            bad.setToMany(name, lists)
            #expect(throws: StoreError.self, what) { try store.bulkInsert(bad, checkingReferences: false) }
            #expect(try store.record(for: ObjectKey(named, 20)) == nil, what)
        }
        try refused("an attribute's name", "name", [OrderedMembers([])])
        try refused("a to-one", "playlist", [OrderedMembers([list])], entity: "Track")
        try refused("a member of another entity", "tracks", [OrderedMembers([tags[0]])])
        try refused("a member twice", "tracks", [OrderedMembers(keys: [tracks[0], tracks[0]], orderKeys: [1, 2])])
        try refused("order keys not ascending", "tracks", [OrderedMembers(keys: [tracks[0], tracks[1]], orderKeys: [2048, 1024])])
        try refused("order keys of an unordered list", "tracks", [OrderedMembers(keys: [tracks[0]], orderKeys: [5])], entity: "Tag")
        try store.close()
    }
}
