import Dispatch
import Foundation
import LMDBStore
import ObjectModel
import ObjectStore
import SQLiteStore
import Synchronization

// Threads of one process reading one store at once, against one thread making the same reads one
// after another (issue 24: reads that may run in parallel do — SQLite's WAL readers, LMDB's read
// transactions), with and without a writer saving meanwhile.
//
// Usage: readers-bench [objects] [reads per thread] [threads]
// Prints a Markdown table. Every read is checked: it must see whole saves only.

let arguments = CommandLine.arguments
let objects = arguments.count > 1 ? Int(arguments[1]) ?? 20_000 : 20_000
let reads = arguments.count > 2 ? Int(arguments[2]) ?? 400 : 400
let threads = arguments.count > 3 ? Int(arguments[3]) ?? 2 : 2

let model = try! JSONModelFormat.decode(Data("""
{"format": "objectstore-model", "formatVersion": 1, "entities": [
 {"name": "Owner", "attributes": [{"name": "name", "type": "String", "optional": false}],
  "relationships": [{"name": "items", "destination": "Item", "inverse": "owner", "toMany": true}]},
 {"name": "Item", "attributes": [{"name": "title", "type": "String", "optional": false},
                                 {"name": "amount", "type": "Double"}, {"name": "rank", "type": "Integer 64"}],
  "relationships": [{"name": "owner", "destination": "Owner", "inverse": "items"}]}]}
""".utf8), file: "readers model")

/// One read: a page of 50 items of one rank range, sorted, and a count.
@Sendable func read(_ store: any PersistentStore, _ n: Int) throws {
    let low = Int64((n * 7_919) % max(1, objects - 200))
    let request = FetchRequest(entity: "Item", predicate: try ObjectPredicate("rank >= \(low) AND rank < \(low + 200)"),
                               sortDescriptors: [ObjectSortDescriptor("amount", ascending: false)], fetchLimit: 50)
    let page = try store.fetch(request)
    guard page.count == 50 else { throw StoreError(.corrupt, "a page of \(page.count) items") }
    _ = try store.count(FetchRequest(entity: "Owner"))
}

func fill(_ store: any PersistentStore) throws {
    let owners = try store.allocatePrimaryKeys(entity: "Owner", count: objects / 10)
    let items = try store.allocatePrimaryKeys(entity: "Item", count: objects)
    var records = owners.map { ObjectRecord(key: ObjectKey("Owner", $0), attributes: ["name": .string("owner \($0)")]) }
    for pk in items {
        var item = ObjectRecord(key: ObjectKey("Item", pk), attributes: ["title": .string("item \(pk)"), "amount": .double(Double(pk % 977)), "rank": .integer(pk)])
        item.toOne["owner"] = ObjectKey("Owner", owners.lowerBound + (pk % Int64(owners.count)))
        records.append(item)
    }
    try store.bulkInsert(records, checkingReferences: true)
}

/// Seconds for `count` threads to make `reads` reads each, while `writing` saves go on beside them.
func run(_ store: any PersistentStore, threads count: Int, writing: Bool) throws -> Double {
    let failures = Mutex<[String]>([])
    let done = Atomic<Bool>(false)
    let writer = Thread {
        var n = 0
        while writing && !done.load(ordering: .relaxed) {
            do {
                let key = try store.allocatePrimaryKeys(entity: "Owner", count: 1).lowerBound
                try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Owner", key), attributes: ["name": .string("new \(n)")])]))
            } catch { failures.withLock { $0.append("\(error)") } }
            n += 1
        }
    }
    writer.start()
    let start = Date()
    DispatchQueue.concurrentPerform(iterations: count) { thread in
        for n in 0..<(reads * threads / count) {
            do { try read(store, thread * 100_003 + n) } catch { failures.withLock { $0.append("\(error)") } }
        }
    }
    let seconds = Date().timeIntervalSince(start)
    done.store(true, ordering: .relaxed)
    while writer.isExecuting { usleep(1_000) }
    let problems = failures.withLock { $0 }
    if !problems.isEmpty { fatalError("\(problems.count) reads or saves failed: \(problems[0])") }
    return seconds
}

let folder = FileManager.default.temporaryDirectory.appending(path: "readers-bench-\(getpid())")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }
print("| \(objects) items, \(reads * threads) reads (a sorted page of 50 and a count) | 1 thread | \(threads) threads | speed-up |")
print("|---|---|---|---|")
for (name, type, file) in [("SQLite (WAL)", SQLiteStoreType() as any StoreType, "r.sqlite"), ("LMDB", LMDBStoreType(), "r.lmdb")] {
    let store = try type.open(at: folder.appending(path: file), model: model, options: StoreOptions(recordsHistory: false))
    try fill(store)
    for writing in [false, true] {
        let one = try run(store, threads: 1, writing: writing)
        let many = try run(store, threads: threads, writing: writing)
        print("| \(name)\(writing ? ", a writer saving meanwhile" : "") | \(String(format: "%.2f", one)) s | \(String(format: "%.2f", many)) s | \(String(format: "%.2f", one / many))× |")
    }
    try store.close()
}
