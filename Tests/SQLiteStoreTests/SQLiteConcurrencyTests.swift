import Dispatch
import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
@testable import SQLiteStore
import Synchronization
import Testing
import TestSupport

/// Threads of one process sharing a WAL store: reads run on pooled connections, each in a read
/// transaction of its own, at once and beside a save.
@Suite("SQLite: reads in parallel")
struct SQLiteConcurrencyTests {
    @Test("a read runs while another thread's read, or save, is inside its transaction; without WAL, reads take turns")
    func readsDoNotWait() throws {
        let folder = try TemporaryFolder()
        let store = try #require(try SQLiteStoreType().open(at: folder.file("shared.sqlite"), model: StoreConformance.model, options: StoreOptions()) as? SQLiteStore)
        defer { try? store.close() }
        let keys = try store.allocatePrimaryKeys(entity: "Pet", count: 1)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Pet", keys.lowerBound), attributes: ["name": .string("Rex")])]))

        var counted = 0
        let besideRead = try overlaps({ wait in _ = try store.read { _ in wait() } }) { counted = try store.count(FetchRequest(entity: "Pet")) }
        #expect(besideRead && counted == 1, "a second read waited for the first to end")
        // A save inside its write transaction (the new row written, not committed): reads see the moment before it.
        var names: [Value?] = []
        let besideSave = try overlaps({ wait in
            let more = try store.allocatePrimaryKeys(entity: "Pet", count: 1)
            try store.write { writer in
                try writer.apply(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Pet", more.lowerBound), attributes: ["name": .string("Ace")])]))
                _ = wait()
            }
        }) { names = try store.fetch(FetchRequest(entity: "Pet")).map(\.attributes["name"]) }
        #expect(besideSave && names == [.string("Rex")], "a read waited for a save to end, or saw it half done: \(names)")
        #expect(try store.count(FetchRequest(entity: "Pet")) == 2, "the save committed")

        // A rollback journal has no readers beside a writer: the store's one connection serves every call, in turn.
        let journal = try #require(try SQLiteStoreType().open(at: folder.file("journal.sqlite"), model: StoreConformance.model,
                                                            options: StoreOptions(settings: ["journal_mode": "DELETE"])) as? SQLiteStore)
        defer { try? journal.close() }
        let taking = try overlaps(patience: 0.5, { wait in _ = try journal.read { _ in wait() } }) { _ = try journal.count(FetchRequest(entity: "Pet")) }
        #expect(!taking)
    }

    @Test("readers and writers on many threads: every save whole, none lost, the pooled connections closed with the store")
    func manyThreads() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("busy.sqlite")
        let store = try SQLiteStoreType().open(at: url, model: StoreConformance.model, options: StoreOptions())
        let writers = 3, saves = 40
        let failures = Mutex<[String]>([])
        let writing = Atomic<Int>(writers)
        DispatchQueue.concurrentPerform(iterations: writers + 4) { thread in
            do {
                if thread < writers {
                    defer { writing.subtract(1, ordering: .relaxed) }
                    for i in 0..<saves {
                        let keys = try store.allocatePrimaryKeys(entity: "Pet", count: 2)
                        try store.save(ChangeSet(inserted: keys.map { ObjectRecord(key: ObjectKey("Pet", $0), attributes: ["name": .string("t\(thread) s\(i)")]) }))
                    }
                } else {
                    while writing.load(ordering: .relaxed) > 0 {
                        let pets = try store.fetch(FetchRequest(entity: "Pet"))
                        if pets.count % 2 != 0 { failures.withLock { $0.append("half a save seen: \(pets.count) pets") } }
                    }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(try store.count(FetchRequest(entity: "Pet")) == writers * saves * 2)
        try store.close()
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"), "every connection closed: the last folded the WAL into the file")
        let raw = try RawDatabase(url, readOnly: true)
        defer { raw.close() }
        #expect(try raw.strings("SELECT count(*) FROM ZPET") == [[String(writers * saves * 2)]])
    }
}

extension SQLiteConcurrencyTests {
    @Test("a store whose file another process replaced reads the file it opened: no pooled connection opens the new one")
    func replacedFile() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("app.sqlite"), other = folder.file("other.sqlite")
        for (file, name) in [(url, "mine"), (other, "theirs")] {
            let store = try SQLiteStoreType().open(at: file, model: StoreConformance.model, options: StoreOptions())
            let key = try store.allocatePrimaryKeys(entity: "Pet", count: 1).lowerBound
            try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Pet", key), attributes: ["name": .string(name)])]))
            try store.close()
        }
        let store = try #require(try SQLiteStoreType().open(at: url, model: StoreConformance.model, options: StoreOptions()) as? SQLiteStore)
        defer { try? store.close() }
        #expect(try store.fetch(FetchRequest(entity: "Pet")).map(\.attributes["name"]) == [.string("mine")])
        // Another process puts its store in this one's place.
        _ = rename(other.path, url.path)
        // A read held open takes the pooled connection: the next read would open another, by path.
        var names: [Value?] = []
        _ = try overlaps(patience: 2, { wait in _ = try store.read { _ in wait() } }) {
            names = try store.fetch(FetchRequest(entity: "Pet")).map(\.attributes["name"])
        }
        #expect(names == [.string("mine")], "a read saw the file that replaced the store's: \(names)")
    }
}
