import Dispatch
import Foundation
@testable import LMDBStore
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import Synchronization
import Testing

/// Threads of one process sharing an LMDB store: reads run at once and beside a write, as
/// liblmdb allows; the map grows under readers and writers without a read seeing half a save.
@Suite("LMDB: reads in parallel")
struct LMDBConcurrencyTests {
    @Test("a read runs while another thread's read, or write, is inside its transaction")
    func readsDoNotWait() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("shared.lmdb")
        let store = try LMDBStoreType().open(at: url, model: StoreConformance.model, options: StoreOptions())
        defer { try? store.close() }
        let keys = try store.allocatePrimaryKeys(entity: "Pet", count: 1)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Pet", keys.lowerBound), attributes: ["name": .string("Rex")])]))
        // The store's own environment, its transactions held open on another thread.
        let environment = try #require(store as? LMDBStore).environment()

        var counted = 0
        let readBesideRead = try overlaps({ wait in try environment.read { _ in _ = wait() } }) {
            counted = try store.count(FetchRequest(entity: "Pet"))
        }
        #expect(readBesideRead && counted == 1, "a second read waited for the first to end")
        var names: [Value?] = []
        let readBesideWrite = try overlaps({ wait in try environment.write { _ in _ = wait() } }) {
            names = try store.fetch(FetchRequest(entity: "Pet")).map(\.attributes["name"])
        }
        #expect(readBesideWrite && names == [.string("Rex")], "a read waited for a write to end")
    }

    @Test("readers and writers on many threads while the map grows: every save whole, none lost")
    func growthUnderLoad() throws {
        let folder = try TemporaryFolder()
        let store = try LMDBStoreType().open(at: folder.file("busy.lmdb"), model: StoreConformance.model,
                                             options: StoreOptions(settings: ["map_size": "\(1 << 20)"]))
        defer { try? store.close() }
        let before = try #require(store as? LMDBStore).mapSize
        let writers = 3, saves = 40
        // A snapshot read all along: the map moves under it between its reads, never during one.
        let early = try store.allocatePrimaryKeys(entity: "Item", count: 2)
        try store.save(ChangeSet(inserted: early.map { ObjectRecord(key: ObjectKey("Item", $0), attributes: ["i64": .integer(-1)]) }))
        let snapshot = try store.snapshot()
        defer { try? snapshot.close() }
        let failures = Mutex<[String]>([])
        let writing = Atomic<Int>(writers)
        let payload = Data(repeating: 9, count: 3_000)
        DispatchQueue.concurrentPerform(iterations: writers + 4) { thread in
            do {
                if thread < writers {
                    defer { writing.subtract(1, ordering: .relaxed) }
                    for i in 0..<saves {
                        let keys = try store.allocatePrimaryKeys(entity: "Item", count: 2)
                        try store.save(ChangeSet(inserted: keys.map {
                            ObjectRecord(key: ObjectKey("Item", $0), attributes: ["data": .data(payload), "i64": .integer(Int64(thread * 1_000 + i))])
                        }))
                    }
                } else if thread == writers {
                    while writing.load(ordering: .relaxed) > 0 {
                        let seen = try snapshot.fetch(FetchRequest(entity: "Item")).map(\.attributes["i64"])
                        if seen != [.integer(-1), .integer(-1)] { failures.withLock { $0.append("the snapshot saw \(seen.count) items") } }
                    }
                } else {
                    while writing.load(ordering: .relaxed) > 0 {
                        let items = try store.fetch(FetchRequest(entity: "Item", predicate: try ObjectPredicate("i64 >= 0")))
                        if items.count % 2 != 0 { failures.withLock { $0.append("half a save seen: \(items.count) items") } }
                        if items.contains(where: { $0.attributes["data"] != .data(payload) }) { failures.withLock { $0.append("a value read wrong") } }
                    }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(try store.count(FetchRequest(entity: "Item")) == writers * saves * 2 + 2)
        #expect(try #require(store as? LMDBStore).mapSize > before, "the map grew")
    }
}

extension LMDBConcurrencyTests {
    @Test("close waits for a write under way on another thread, which commits: nothing is written after close returns")
    func closeWaitsForWrites() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("closing.lmdb")
        let store = try #require(try LMDBStoreType().open(at: url, model: StoreConformance.model, options: StoreOptions()) as? LMDBStore)
        let key = try store.allocatePrimaryKeys(entity: "Pet", count: 1).lowerBound
        let environment = try store.environment()
        let closedMeanwhile = try overlaps(patience: 0.5, { wait in
            try environment.write { txn in
                _ = wait()
                try txn.put(LMDBLayout.counters, Data("marker".utf8), LMDBLayout.counterValue(key))
            }
        }) { try store.close() }
        #expect(!closedMeanwhile, "close returned while a write was under way")
        let reopened = try #require(try LMDBStoreType().open(at: url, model: StoreConformance.model, options: StoreOptions(readOnly: true, createIfMissing: false)) as? LMDBStore)
        defer { try? reopened.close() }
        #expect(try reopened.environment().read { try $0.get(LMDBLayout.counters, Data("marker".utf8)) } == LMDBLayout.counterValue(key),
                "the write under way at close committed")
    }
}
