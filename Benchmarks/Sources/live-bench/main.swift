import BenchmarkSupport
import CSQLiteBench
import Foundation
import ObjectModel
import ObjectStore
import SQLiteStore
import Synchronization

// The figures of issue 22 (live data), in one process on one machine:
// - batch delete of half the books, and batch update of half, against sqlite3 running the same
//   DELETE and UPDATE on a copy of the same file (the C API, WAL, synchronous=NORMAL: the floor);
// - what recording history costs an insert (ObjectContext, one save) against the same insert with
//   history off;
// - the time from a commit in this process to the line `objectstore watch` prints in another
//   (median and 99th percentile).
// The model has the shapes users have: a one-to-many with its inverse (Author – Book), a
// many-to-many (Book – Tag), required attributes, inheritance (Book is a Publication).
//
// live-bench report [books] [watch saves] [objectstore binary]

SQLiteStore.register()

let model = try ManagedObjectModel(versionIdentifiers: ["live-bench"]) {
    Entity("Publication", abstract: true) {
        Attribute("title", .string, optional: false)
        Attribute("pages", .integer32, optional: false)
        Attribute("rating", .double)
    }
    Entity("Book", parent: "Publication") {
        Attribute("isbn", .string)
        Relationship("author", to: "Author", inverse: "books")
        Relationship("tags", to: "Tag", inverse: "books", toMany: true)
    }
    Entity("Author") {
        Attribute("name", .string, optional: false)
        Relationship("books", to: "Book", inverse: "author", toMany: true)
    }
    Entity("Tag") {
        Attribute("label", .string, optional: false)
        Relationship("books", to: "Book", inverse: "tags", toMany: true)
    }
    Entity("Note") {
        Attribute("text", .string, optional: false)
        Attribute("number", .integer64)
    }
}

let arguments = CommandLine.arguments
let books = arguments.count > 2 ? Int(arguments[2])! : 500_000
let watchSaves = arguments.count > 3 ? Int(arguments[3])! : 200
let binary = arguments.count > 4 ? arguments[4] : "../.build/release/objectstore"
let folder = FileManager.default.temporaryDirectory.appending(path: "live-bench-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }
let thresholds = try Thresholds(benchmark: "live-bench")

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

// MARK: The store

/// `books` books by `books / 100` authors, each with one of 50 tags; `pages` is key % 1000, so
/// `pages < 500` is half of them, spread over the table.
func build(_ url: URL) throws {
    let store = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions(recordsHistory: false))
    defer { try? store.close() }
    let authors = max(1, books / 100), tags = 50
    _ = try store.allocatePrimaryKeys(entity: "Author", count: authors)
    _ = try store.allocatePrimaryKeys(entity: "Tag", count: tags)
    try store.bulkInsert((1...authors).map { ObjectRecord(key: ObjectKey("Author", Int64($0)), attributes: ["name": .string("author \($0)")]) })
    try store.bulkInsert((1...tags).map { ObjectRecord(key: ObjectKey("Tag", Int64($0)), attributes: ["label": .string("tag \($0)")]) })
    let first = try store.allocatePrimaryKeys(entity: "Book", count: books).lowerBound
    var next = first
    while next < first + Int64(books) {
        let end = min(next + 10_000, first + Int64(books))
        try store.bulkInsert((next..<end).map { key in
            ObjectRecord(key: ObjectKey("Book", key), attributes: ["title": .string("book \(key)"), "pages": .integer(key % 1_000), "rating": .double(1)],
                         toOne: ["author": ObjectKey("Author", key % Int64(authors) + 1)], toMany: ["tags": [ObjectKey("Tag", key % Int64(tags) + 1)]])
        })
        next = end
    }
}

/// Runs SQL on the file with the C API in one transaction (WAL, synchronous=NORMAL, as the store
/// opens it); returns the seconds the transaction took.
func sqlite3Floor(_ url: URL, _ sql: String) throws -> Double {
    var db: OpaquePointer?
    guard sqlite3_open(url.path, &db) == SQLITE_OK else { throw BenchmarkFailure("cannot open \(url.path)") }
    defer { sqlite3_close(db) }
    sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL", nil, nil, nil)
    return try seconds {
        guard sqlite3_exec(db, "BEGIN IMMEDIATE; \(sql); COMMIT", nil, nil, nil) == SQLITE_OK else {
            throw BenchmarkFailure("\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
    }
}

func copyStore(_ from: URL, _ name: String) throws -> URL {
    let to = folder.appending(path: name)
    try? SQLiteStoreType().destroy(at: to)
    try FileManager.default.copyItem(at: from, to: to)
    return to
}

let master = folder.appending(path: "master.sqlite")
let buildTime = try seconds { try build(master) }
let bookNumber = try {
    var db: OpaquePointer?
    sqlite3_open(master.path, &db)
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Book'", -1, &statement, nil)
    defer { sqlite3_finalize(statement) }
    guard sqlite3_step(statement) == SQLITE_ROW else { throw BenchmarkFailure("no Book entity number") }
    return sqlite3_column_int64(statement, 0)
}()
let half = try FetchRequest(entity: "Book", predicate: ObjectPredicate("pages < 500"))
/// The many-to-many's join table and its column of books, as the file names them.
let (joinTable, joinBookColumn) = try {
    var db: OpaquePointer?
    sqlite3_open(master.path, &db)
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.name LIKE 'Z\\_%TAGS' ESCAPE '\\' AND p.name LIKE '%BOOKS'", -1, &statement, nil)
    defer { sqlite3_finalize(statement) }
    guard sqlite3_step(statement) == SQLITE_ROW else { throw BenchmarkFailure("no join table of books and tags") }
    return (String(cString: sqlite3_column_text(statement, 0)), String(cString: sqlite3_column_text(statement, 1)))
}()

var ours: [String: [Double]] = [:], floor: [String: [Double]] = [:]
for round in 0..<3 {
    let a = try copyStore(master, "delete-\(round).sqlite"), b = try copyStore(master, "delete-floor-\(round).sqlite")
    let store = try SQLiteStoreType().open(at: a, model: model, options: StoreOptions())
    var deleted = 0
    ours["delete", default: []].append(try seconds { deleted = try store.batchDelete(half, author: "bench") })
    guard deleted == books / 2 else { throw BenchmarkFailure("the batch delete removed \(deleted), not \(books / 2)") }
    try store.close()
    // The floor leaves the store as the batch delete does: the books' rows and their join rows
    // with tags gone (a DELETE of the rows alone leaves join rows naming books that no longer exist).
    floor["delete", default: []].append(try sqlite3Floor(b, "DELETE FROM \(joinTable) WHERE \(joinBookColumn) IN "
        + "(SELECT Z_PK FROM ZPUBLICATION WHERE Z_ENT = \(bookNumber) AND ZPAGES < 500); DELETE FROM ZPUBLICATION WHERE Z_ENT = \(bookNumber) AND ZPAGES < 500"))
    let e = try copyStore(master, "delete-rows-\(round).sqlite")
    floor["delete rows only", default: []].append(try sqlite3Floor(e, "DELETE FROM ZPUBLICATION WHERE Z_ENT = \(bookNumber) AND ZPAGES < 500"))
    try? SQLiteStoreType().destroy(at: e)

    let c = try copyStore(master, "update-\(round).sqlite"), d = try copyStore(master, "update-floor-\(round).sqlite")
    let updating = try SQLiteStoreType().open(at: c, model: model, options: StoreOptions())
    var updated = 0
    ours["update", default: []].append(try seconds { updated = try updating.batchUpdate(half, set: ["rating": .double(5)], author: "bench") })
    guard updated == books / 2 else { throw BenchmarkFailure("the batch update changed \(updated), not \(books / 2)") }
    try updating.close()
    floor["update", default: []].append(try sqlite3Floor(d, "UPDATE ZPUBLICATION SET ZRATING = 5, Z_OPT = Z_OPT + 1 WHERE Z_ENT = \(bookNumber) AND ZPAGES < 500"))
    for url in [a, b, c, d] { try? SQLiteStoreType().destroy(at: url) }
}

// MARK: History's cost on insert

let inserts = books / 5
var insertTimes: [Bool: [Double]] = [:]
for round in 0..<6 {
    let recording = round % 2 == 0
    let url = folder.appending(path: "insert-\(round).sqlite")
    let coordinator = StoreCoordinator(model: model)
    try coordinator.addStore(type: "sqlite", at: url, options: StoreOptions(recordsHistory: recording))
    let context = ObjectContext(coordinator: coordinator)
    insertTimes[recording, default: []].append(try seconds {
        for i in 0..<inserts {
            let note = try context.insert("Note")
            try note.set("text", .string("note \(i)"))
            try note.set("number", .integer(Int64(i)))
        }
        try context.save()
    })
    for store in coordinator.stores { try store.close() }
    try? SQLiteStoreType().destroy(at: url)
}

// MARK: Observation latency, another process

var latencies: [Double] = []
do {
    let url = folder.appending(path: "watched.sqlite")
    let store = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions())
    let watcher = Process()
    watcher.executableURL = URL(filePath: binary)
    watcher.arguments = ["watch", url.path, "--json"]
    let out = Pipe(), err = Pipe()
    watcher.standardOutput = out
    watcher.standardError = err
    try watcher.run()
    defer { watcher.terminate(); if watcher.isRunning { kill(watcher.processIdentifier, SIGKILL) } }
    // Ready once it says so on stderr.
    var said = Data()
    while !String(decoding: said, as: UTF8.self).contains("watching") {
        let chunk = err.fileHandleForReading.availableData
        if chunk.isEmpty { throw BenchmarkFailure("objectstore watch ended: \(String(decoding: said, as: UTF8.self))") }
        said += chunk
    }
    let received = Mutex<[Int64: UInt64]>([:])
    let reader = Thread {
        var pending = ""
        while true {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { return }
            let now = DispatchTime.now().uptimeNanoseconds
            pending += String(decoding: chunk, as: UTF8.self)
            while let newline = pending.firstIndex(of: "\n") {
                let line = pending[..<newline]
                pending = String(pending[pending.index(after: newline)...])
                if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let token = object["token"] as? Int {
                    received.withLock { $0[Int64(token)] = now }
                }
            }
        }
    }
    reader.start()
    var committed: [Int64: UInt64] = [:]
    for i in 0..<watchSaves {
        let key = try store.allocatePrimaryKeys(entity: "Note", count: 1).lowerBound
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Note", key), attributes: ["text": .string("n \(i)"), "number": .integer(Int64(i))])]))
        committed[try store.lastHistoryToken()] = DispatchTime.now().uptimeNanoseconds
        usleep(20_000)
    }
    let deadline = Date().addingTimeInterval(10)
    while received.withLock({ $0.count }) < committed.count && Date() < deadline { usleep(10_000) }
    let arrivals = received.withLock { $0 }
    for (token, at) in committed {
        guard let seen = arrivals[token] else { throw BenchmarkFailure("transaction \(token) never reached the watch") }
        latencies.append(Double(Int64(seen) - Int64(at)) / 1e6)
    }
    try store.close()
}
latencies.sort()
let p50 = latencies[latencies.count / 2], p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]

// MARK: Report

let deleteRatio = median(ours["delete"]!) / median(floor["delete"]!)
let updateRatio = median(ours["update"]!) / median(floor["update"]!)
let historyRatio = median(insertTimes[true]!) / median(insertTimes[false]!)
print("## Live data (issue 22): \(books) books by \(books / 100) authors, 50 tags; medians of 3 rounds")
print("")
print("(store built in \(String(format: "%.1f", buildTime)) s)")
print("")
print("| figure | ours | baseline | ratio |")
print("|---|---|---|---|")
print(String(format: "| batch delete of half (%d books, nullify across both relationships, history) vs sqlite3 deleting the rows and their join rows | %.1f ms | %.1f ms | %.2f× |",
             books / 2, median(ours["delete"]!) * 1000, median(floor["delete"]!) * 1000, deleteRatio))
print(String(format: "| the same vs sqlite3 deleting the rows alone (join rows left behind) | %.1f ms | %.1f ms | %.2f× |",
             median(ours["delete"]!) * 1000, median(floor["delete rows only"]!) * 1000, median(ours["delete"]!) / median(floor["delete rows only"]!)))
print(String(format: "| batch update of half vs sqlite3 UPDATE | %.1f ms | %.1f ms | %.2f× |",
             median(ours["update"]!) * 1000, median(floor["update"]!) * 1000, updateRatio))
print(String(format: "| insert %d objects, one save: history on vs off | %.1f ms | %.1f ms | %.2f× |",
             inserts, median(insertTimes[true]!) * 1000, median(insertTimes[false]!) * 1000, historyRatio))
print(String(format: "| commit → `objectstore watch` line, another process (%d saves) | p50 %.2f ms | p99 %.2f ms | |", latencies.count, p50, p99))
print("")
thresholds.record("batch delete of half: ours / sqlite3", deleteRatio)
thresholds.record("batch update of half: ours / sqlite3", updateRatio)
thresholds.record("insert with history / without", historyRatio)
thresholds.record("watch latency p99 (µs)", p99 * 1000)
thresholds.finish()
