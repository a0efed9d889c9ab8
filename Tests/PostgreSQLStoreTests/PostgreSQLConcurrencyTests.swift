import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import PostgreSQLStore
import Synchronization
import Testing
import TestSupport

/// Several connections on one store, as several processes or hosts would have: each store
/// instance is a server session of its own.
@Suite("PostgreSQLStore across connections")
struct PostgreSQLConcurrencyTests {
    let model = StoreConformance.model

    /// A store filled in one go (a conversion's destination: durable at close, no history), which streams its batches.
    func openFilledInOneGo(_ url: URL) throws -> any PersistentStore {
        try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions(deferredDurability: true, recordsHistory: false))
    }

    @Test("a save over an object another connection changed fails with a conflict naming it; the other write is kept")
    func staleSaveIsAConflict() throws {
        let url = try PostgreSQLTestServer.location()
        defer { try? PostgreSQLStoreType().destroy(at: url) }
        let a = try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions())
        let b = try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions())
        defer { try? a.close(); try? b.close() }
        let key = ObjectKey("Person", try a.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound)
        try a.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["name": .string("Ada")])]))
        let seen = try #require(try b.record(for: key))
        try a.save(ChangeSet(updated: [ObjectUpdate(key: key, expectedVersion: seen.version, attributes: ["name": .string("from a")])]))
        let error = try #require(throws: StoreError.self) {
            try b.save(ChangeSet(updated: [ObjectUpdate(key: key, expectedVersion: seen.version, attributes: ["name": .string("from b")])]))
        }
        #expect(error.code == .conflict)
        #expect(error.objectID?.key == key)
        #expect(try PostgreSQLTestServer.psql("SELECT name, version FROM \"\(url.absoluteString.components(separatedBy: "schema=")[1])\".\"Person\"") == "from a|2\n")
    }

    @Test("a save that completes an object's inverse side without changing its row still conflicts with a delete of it by another connection")
    func completedRowConflictsWithDelete() throws {
        let url = try PostgreSQLTestServer.location()
        defer { try? PostgreSQLStoreType().destroy(at: url) }
        let a = try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions())
        let b = try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions())
        defer { try? a.close(); try? b.close() }
        let owner = ObjectKey("Person", try a.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound)
        let pet = ObjectKey("Pet", try a.allocatePrimaryKeys(entity: "Pet", count: 1).lowerBound)
        try a.save(ChangeSet(inserted: [ObjectRecord(key: owner, attributes: ["name": .string("Ada")])]))
        let schema = url.absoluteString.components(separatedBy: "schema=")[1]
        // The history table locked for a while: A's save (a new pet of Ada's) waits there, after its rows.
        let holder = DispatchGroup()
        DispatchQueue.global().async(group: holder) {
            _ = try? PostgreSQLTestServer.psql("BEGIN; LOCK TABLE \"\(schema)\".os_transaction IN EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT")
        }
        Thread.sleep(forTimeInterval: 0.5)
        let saved = Mutex<String?>(nil)
        let saver = DispatchGroup()
        DispatchQueue.global().async(group: saver) {
            do {
                try a.save(ChangeSet(inserted: [ObjectRecord(key: pet, toOne: ["owner": owner])]))
                saved.withLock { $0 = "saved" }
            } catch {
                saved.withLock { $0 = "\(error)" }
            }
        }
        Thread.sleep(forTimeInterval: 0.5)
        // B deletes Ada meanwhile: it waits for A, then finds Ada's row written by A, and conflicts.
        var deleting: StoreError?
        do { try b.save(ChangeSet(deleted: [ObjectDeletion(key: owner)])) } catch let error as StoreError { deleting = error }
        saver.wait()
        holder.wait()
        // One of the two conflicts (B, unless a loaded machine let B's delete in before A's rows), and
        // the store never holds a pet of an owner that is gone.
        let aSaved = saved.withLock { $0 } == "saved"
        #expect(aSaved != (deleting == nil), "exactly one save goes in: A \(saved.withLock { $0 } ?? "?"); B \(String(describing: deleting))")
        #expect(deleting == nil || deleting?.code == .conflict, "\(String(describing: deleting))")
        let rows = try PostgreSQLTestServer.psql("SELECT (SELECT count(*) FROM \"\(schema)\".\"Person\"), (SELECT count(*) FROM \"\(schema)\".\"Pet\")")
        #expect(rows == (aSaved ? "1|1\n" : "0|0\n"), "Ada with her pet, or neither: \(rows)")
    }

    @Test("a store filled in one go streams its batches: a key in use fails the next call, with nothing of the open copy kept; the next copy goes in")
    func streamedBatchRefusedLate() throws {
        let url = try PostgreSQLTestServer.location()
        defer { try? PostgreSQLStoreType().destroy(at: url) }
        let store = try openFilledInOneGo(url)
        defer { try? store.close() }
        func pets(_ keys: [Int64]) -> RecordBatch {
            var batch = RecordBatch(entity: model.entity(named: "Pet")!)
            for key in keys { batch[batch.appendRow(primaryKey: key), attribute: 0] = .string("pet \(key)") }
            return batch
        }
        try store.bulkInsert(pets([1, 2, 3]), checkingReferences: false)
        try store.bulkInsert(pets([3, 4]), checkingReferences: false)
        let error = try #require(throws: StoreError.self) { try store.count(FetchRequest(entity: "Pet")) }
        #expect(error.code == .invalidChange && error.message.contains("primary key is in use"), "\(error)")
        #expect(try store.count(FetchRequest(entity: "Pet")) == 0, "nothing of the open copy")
        try store.bulkInsert(pets([5, 6]), checkingReferences: false)
        try store.close()
        let schema = url.absoluteString.components(separatedBy: "schema=")[1]
        #expect(try PostgreSQLTestServer.psql("SELECT pk, name FROM \"\(schema)\".\"Pet\" ORDER BY pk") == "5|pet 5\n6|pet 6\n", "the close commits the last copy")
    }

    @Test("a store filled in one go keeps its batches' join rows aside until the rows' copy ends: a read then finds them; a key in use loses the rows and their join rows together")
    func streamedJoinRows() throws {
        let url = try PostgreSQLTestServer.location()
        defer { try? PostgreSQLStoreType().destroy(at: url) }
        let store = try openFilledInOneGo(url)
        defer { try? store.close() }
        var tags = RecordBatch(entity: model.entity(named: "Tag")!)
        for key in [1, 2, 3] as [Int64] { tags[tags.appendRow(primaryKey: key), attribute: 0] = .string("tag \(key)") }
        try store.bulkInsert(tags, checkingReferences: false)
        func tracks(_ lists: [Int64: [Int64]]) -> RecordBatch {
            var batch = RecordBatch(entity: model.entity(named: "Track")!)
            for (key, _) in lists.sorted(by: { $0.key < $1.key }) { batch[batch.appendRow(primaryKey: key), attribute: 0] = .string("track \(key)") }
            batch.setToMany("tags", lists.sorted(by: { $0.key < $1.key }).map { OrderedMembers($0.value.map { ObjectKey("Tag", $0) }) })
            return batch
        }
        try store.bulkInsert(tracks([1: [1, 2], 2: [], 3: [3]]), checkingReferences: false)
        try store.bulkInsert(tracks([4: [2, 3, 1]]), checkingReferences: false)
        #expect(try store.relatedKeys(of: ObjectKey("Track", 4), relationship: "tags") == [1, 2, 3].map { ObjectKey("Tag", $0) })
        #expect(try store.relatedKeys(of: ObjectKey("Track", 1), relationship: "tags") == [1, 2].map { ObjectKey("Tag", $0) })
        // Track 5 comes twice: its copy fails at the next call, and neither batch's join rows go in.
        try store.bulkInsert(tracks([5: [1]]), checkingReferences: false)
        try store.bulkInsert(tracks([5: [2], 6: [3]]), checkingReferences: false)
        let error = try #require(throws: StoreError.self) { try store.count(FetchRequest(entity: "Track")) }
        #expect(error.code == .invalidChange && error.message.contains("primary key is in use"), "\(error)")
        try store.close()
        let schema = url.absoluteString.components(separatedBy: "schema=")[1]
        #expect(try PostgreSQLTestServer.psql("SELECT owner, member FROM \"\(schema)\".\"Track__tags\" ORDER BY owner, member")
                == "1|1\n1|2\n3|3\n4|1\n4|2\n4|3\n")
        let spools = try FileManager.default.contentsOfDirectory(atPath: FileManager.default.temporaryDirectory.path).filter { $0.hasPrefix(".objectstore-join-rows-") }
        #expect(spools.isEmpty, "\(spools)")
    }

    @Test("a store filled in one go writes an ordered list's order keys into its members' rows: with the row when the owner came first, after when the member did",
          arguments: [true, false])
    func streamedOrderKeys(_ ownersFirst: Bool) throws {
        let url = try PostgreSQLTestServer.location()
        defer { try? PostgreSQLStoreType().destroy(at: url) }
        let store = try openFilledInOneGo(url)
        defer { try? store.close() }
        var playlists = RecordBatch(entity: model.entity(named: "Playlist")!)
        for key in [1, 2] as [Int64] { playlists[playlists.appendRow(primaryKey: key), attribute: 0] = .string("list \(key)") }
        playlists.setToMany("tracks", [OrderedMembers(keys: [3, 1].map { ObjectKey("Track", $0) }, orderKeys: [1024, 2048]),
                                       OrderedMembers(keys: [2].map { ObjectKey("Track", $0) }, orderKeys: [7])])
        var tracks = RecordBatch(entity: model.entity(named: "Track")!)
        let slot = try #require(tracks.entity.layout.toOne.firstIndex { $0.name == "playlist" })
        for (key, list) in [(1, 1), (2, 2), (3, 1), (4, 0)] as [(Int64, Int64)] {
            let row = tracks.appendRow(primaryKey: key)
            tracks[row, attribute: 0] = .string("track \(key)")
            if list > 0 { tracks[row, toOne: slot] = ObjectKey("Playlist", list) }
        }
        for batch in ownersFirst ? [playlists, tracks] : [tracks, playlists] { try store.bulkInsert(batch, checkingReferences: false) }
        #expect(try store.orderedMembers(of: ObjectKey("Playlist", 1), relationship: "tracks").keys == [3, 1].map { ObjectKey("Track", $0) })
        try store.close()
        let schema = url.absoluteString.components(separatedBy: "schema=")[1]
        #expect(try PostgreSQLTestServer.psql("SELECT pk, playlist, playlist_order FROM \"\(schema)\".\"Track\" ORDER BY pk")
                == "1|1|2048\n2|2|7\n3|1|1024\n4||\n")
    }

    @Test("an update that keeps versions writes a value equal to the stored one but stored otherwise (a decomposed é): the row holds the new bytes")
    func equalButOtherValuesAreWritten() throws {
        let url = try PostgreSQLTestServer.location()
        defer { try? PostgreSQLStoreType().destroy(at: url) }
        let store = try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions())
        defer { try? store.close() }
        let key = ObjectKey("Person", try store.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["name": .string("caf\u{E9}")])]))
        var changes = ChangeSet(updated: [ObjectUpdate(key: key, attributes: ["name": .string("cafe\u{301}")])])
        changes.keepsVersions = true
        try store.save(changes)
        let schema = url.absoluteString.components(separatedBy: "schema=")[1]
        #expect(try PostgreSQLTestServer.psql("SELECT encode(convert_to(name, 'UTF8'), 'hex') FROM \"\(schema)\".\"Person\"") == "63616665cc81\n")
    }

    @Test("installing a staged store where another run made one meanwhile keeps that one and fails, unless replacing; one store under two spellings has one identity")
    func installKeepsAStoreMadeMeanwhile() throws {
        let url = try PostgreSQLTestServer.location()
        let staged = try PostgreSQLStoreType.stagingURL(beside: url, verb: "importing")
        defer { try? PostgreSQLStoreType().destroy(at: url); try? PostgreSQLStoreType().destroy(at: staged) }
        // Another run's store lands first, with one person.
        let other = try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions())
        let key = ObjectKey("Person", try other.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound)
        try other.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["name": .string("first run")])]))
        try other.close()
        try PostgreSQLStoreType().open(at: staged, model: model, options: StoreOptions()).close()
        let error = try #require(throws: StoreError.self) { try PostgreSQLStoreType().install(at: url, with: staged, replacing: false) }
        #expect(error.code == .alreadyExists)
        let schema = url.absoluteString.components(separatedBy: "schema=")[1]
        #expect(try PostgreSQLTestServer.psql("SELECT name FROM \"\(schema)\".\"Person\"") == "first run\n")
        try PostgreSQLStoreType().install(at: url, with: staged, replacing: true)
        #expect(try PostgreSQLTestServer.psql("SELECT count(*) FROM \"\(schema)\".\"Person\"") == "0\n")
        // postgres:// and postgresql://, another parameter: the same store.
        let respelled = URL(string: url.absoluteString.replacingOccurrences(of: "postgresql://", with: "postgres://") + "&connect_timeout=5")!
        #expect(PostgreSQLStoreType().identity(at: url) != nil)
        #expect(PostgreSQLStoreType().identity(at: url) == PostgreSQLStoreType().identity(at: respelled))
        #expect(PostgreSQLStoreType().identity(at: url) != PostgreSQLStoreType().identity(at: staged))
    }

    @Test("eight connections incrementing one counter with optimistic locking: every increment that saved is there, none lost")
    func noLostUpdates() throws {
        let url = try PostgreSQLTestServer.location()
        defer { try? PostgreSQLStoreType().destroy(at: url) }
        let setup = try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions())
        let key = ObjectKey("Person", try setup.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound)
        try setup.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["name": .string("counter"), "age": .integer(0)])]))
        try setup.close()
        let saved = Atomic<Int>(0), conflicts = Atomic<Int>(0), failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                let store = try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions())
                defer { try? store.close() }
                for _ in 0..<15 {
                    let record = try store.record(for: key)!
                    guard case .integer(let age) = record.attributes["age"] else { throw StoreError(.corrupt, "no age") }
                    do {
                        try store.save(ChangeSet(updated: [ObjectUpdate(key: key, expectedVersion: record.version, attributes: ["age": .integer(age + 1)])]))
                        saved.add(1, ordering: .relaxed)
                    } catch let error as StoreError where error.code == .conflict {
                        conflicts.add(1, ordering: .relaxed)
                    }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let reader = try PostgreSQLStoreType().open(at: url, model: model, options: StoreOptions(readOnly: true))
        defer { try? reader.close() }
        let final = try #require(try reader.record(for: key))
        #expect(final.attributes["age"] == .integer(Int64(saved.load(ordering: .relaxed))))
        #expect(final.version == Int64(1 + saved.load(ordering: .relaxed)))
        #expect(saved.load(ordering: .relaxed) + conflicts.load(ordering: .relaxed) == 8 * 15)
    }

    @Test("one store, eight threads saving disjoint objects at once through a pool of three connections: every save goes in, with both sides of each relationship; a closed pool refuses calls; pool= is 1 to 64")
    func pooledClients() throws {
        let url = try PostgreSQLTestServer.location()
        defer { try? PostgreSQLStoreType().destroy(at: url) }
        let schema = url.absoluteString.components(separatedBy: "schema=")[1]
        let store = try PostgreSQLStoreType().open(at: URL(string: url.absoluteString + "&pool=3")!, model: model, options: StoreOptions())
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { client in
            do {
                for save in 0..<10 {
                    let person = ObjectKey("Person", try store.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound)
                    let pet = ObjectKey("Pet", try store.allocatePrimaryKeys(entity: "Pet", count: 1).lowerBound)
                    var record = ObjectRecord(key: pet, attributes: ["name": .string("pet \(client).\(save)")])
                    record.toOne["owner"] = person
                    try store.save(ChangeSet(inserted: [ObjectRecord(key: person, attributes: ["name": .string("client \(client) save \(save)")]), record]))
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(try PostgreSQLTestServer.psql("SELECT count(*) FROM \"\(schema)\".\"Person\"") == "80\n")
        #expect(try PostgreSQLTestServer.psql("SELECT count(*) FROM \"\(schema)\".\"Pet\" p JOIN \"\(schema)\".\"Person\" o ON p.owner = o.pk") == "80\n")
        for person in try store.fetch(FetchRequest(entity: "Person")) {
            #expect(try store.relatedKeys(of: person.key, relationship: "pets").count == 1)
        }
        // Eight threads giving one person new pets at once: each save completes her side, and they
        // collide on her row on the server; the store runs such a save again, so none fails.
        let owner = ObjectKey("Person", 1)
        DispatchQueue.concurrentPerform(iterations: 8) { client in
            do {
                for save in 0..<5 {
                    let pet = ObjectKey("Pet", try store.allocatePrimaryKeys(entity: "Pet", count: 1).lowerBound)
                    var record = ObjectRecord(key: pet, attributes: ["name": .string("shared \(client).\(save)")])
                    record.toOne["owner"] = owner
                    try store.save(ChangeSet(inserted: [record]))
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(try store.relatedKeys(of: owner, relationship: "pets").count == 41)
        try store.close()
        let error = try #require(throws: StoreError.self) { try store.count(FetchRequest(entity: "Person")) }
        #expect(error.code == .closed)
        for size in ["0", "65", "two"] {
            let refused = try #require(throws: StoreError.self) {
                try PostgreSQLStoreType().open(at: URL(string: url.absoluteString + "&pool=\(size)")!, model: model, options: StoreOptions())
            }
            #expect(refused.message.contains("pool="))
        }
    }
}
