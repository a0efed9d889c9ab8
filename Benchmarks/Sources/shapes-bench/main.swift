import BenchmarkSupport
import CBaseline
import CSQLiteBench
import Foundation
import LMDBStore
import ObjectMigration
import ObjectModel
import ObjectStore
import SQLiteStore

// The figures of issue 23: whole `objectstore convert` commands on a store with the shapes users
// have, against the floors measured in the same run on the same file.
// - Publication (abstract, required title of 20–80 characters with a length rule counted in
//   characters, required pages with bounds, a summary of about 200 characters) → Book (required
//   13-character isbn with a pattern) → Textbook (required subject): a three-level inheritance in
//   one table; one word in six is not ASCII (café, Zoë, Łódź…), as in text users write;
// - Author – Book, a one-to-many with its inverse (an author per ten books, required: a book's
//   author must exist, a hundred thousand distinct ones at a million objects; a name of 2–120
//   characters);
// - Tag – Book, a many-to-many (100 tags with a label pattern, two per book: a join row each);
// - Library.featured – Book.featuredIn, an ordered to-many with its inverse (a library per hundred
//   books, ten featured each, order keys in Apple's steps of 1024).
// Floors: sqlite3's ATTACH + INSERT … SELECT of every table, and a generic C copy loop (a prepared
// SELECT and INSERT per table, one transaction), both into the same empty schema with SQLite's
// defaults (a rollback journal, synchronous=FULL: as the sqlite3 shell copies), in this process with
// SQLite's memory statistics off, as the tool runs (`configureOwnProcess`).
//
// shapes-bench report [small objects] [large objects] [objectstore binary]
// shapes-bench build <objects> <path>
// shapes-bench floors <source>                (the two C floors of one source store)
// shapes-bench peak <source> <destination>     (one conversion in this process; prints VmHWM bytes)

SQLiteStoreType().configureOwnProcess()
SQLiteStore.register()
LMDBStore.register()

let model = try ManagedObjectModel(versionIdentifiers: ["shapes-bench"]) {
    Entity("Publication", abstract: true) {
        Attribute("title", .string, optional: false, validation: ValidationRules(minLength: 2, maxLength: 200))
        Attribute("pages", .integer32, optional: false, validation: ValidationRules(minValue: .integer(1), maxValue: .integer(100_000)))
        Attribute("summary", .string)
        Attribute("published", .date)
    }
    Entity("Book", parent: "Publication") {
        Attribute("isbn", .string, optional: false, validation: ValidationRules(minLength: 13, maxLength: 13, pattern: "97[89][0-9]{10}"))
        Attribute("rating", .double)
        Relationship("author", to: "Author", inverse: "books", optional: false)
        Relationship("tags", to: "Tag", inverse: "books", toMany: true)
        Relationship("featuredIn", to: "Library", inverse: "featured")
    }
    Entity("Textbook", parent: "Book") {
        Attribute("subject", .string, optional: false)
    }
    Entity("Author") {
        Attribute("name", .string, optional: false, validation: ValidationRules(minLength: 2, maxLength: 120))
        Attribute("born", .integer16)
        Relationship("books", to: "Book", inverse: "author", toMany: true)
    }
    Entity("Tag") {
        Attribute("label", .string, optional: false, validation: ValidationRules(pattern: "[a-z]+-[0-9]+"))
        Relationship("books", to: "Book", inverse: "tags", toMany: true)
    }
    Entity("Library") {
        Attribute("name", .string, optional: false)
        Relationship("featured", to: "Book", inverse: "featuredIn", toMany: true, ordered: true)
    }
}

let words = ["river", "stone", "light", "garden", "winter", "silver", "harbour", "quiet", "empire", "letters",
             "north", "orchard", "meadow", "lantern", "copper", "café", "Łódź", "Dvořák"]
func phrase(_ seed: Int64, _ count: Int) -> String {
    var parts: [String] = []
    for i in 0..<Int64(count) {
        let mixed: Int64 = seed &* 2_654_435_761 &+ i &* 40_503
        parts.append(words[Int(mixed.magnitude % UInt64(words.count))])
    }
    return parts.joined(separator: " ")
}

/// `objects` objects: 90 % publications (a fifth of them textbooks), then authors, libraries and 100 tags.
func build(_ url: URL, objects: Int) throws {
    try? SQLiteStoreType().destroy(at: url)
    let store = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions(recordsHistory: false))
    defer { try? store.close() }
    let books = objects * 9 / 10, tags = 100, libraries = max(1, books / 100), authors = max(1, objects - books - tags - libraries)
    _ = try store.allocatePrimaryKeys(entity: "Author", count: authors)
    _ = try store.allocatePrimaryKeys(entity: "Tag", count: tags)
    try store.bulkInsert((1...authors).map {
        ObjectRecord(key: ObjectKey("Author", Int64($0)), attributes: ["name": .string("Author \(phrase(Int64($0), 2))"), "born": .integer(Int64(1900 + $0 % 100))])
    })
    try store.bulkInsert((1...tags).map { ObjectRecord(key: ObjectKey("Tag", Int64($0)), attributes: ["label": .string("tag-\($0)")]) })
    let first = try store.allocatePrimaryKeys(entity: "Publication", count: books).lowerBound
    var next = first
    while next < first + Int64(books) {
        let end = min(next + 10_000, first + Int64(books))
        try store.bulkInsert((next..<end).map { key in
            var attributes: [String: Value] = [
                "title": .string(phrase(key, 2 + Int(key % 9)).capitalized), "pages": .integer(1 + key % 900),
                "summary": .string(phrase(key &* 3, 30)), "published": .date(Date(timeIntervalSinceReferenceDate: Double(key) * 3_600)),
                "isbn": .string(String(format: "978%010lld", key)), "rating": .double(Double(key % 50) / 10),
            ]
            let textbook = key % 5 == 0
            if textbook { attributes["subject"] = .string(phrase(key, 1)) }
            return ObjectRecord(key: ObjectKey(textbook ? "Textbook" : "Book", key), attributes: attributes,
                                toOne: ["author": ObjectKey("Author", key % Int64(authors) + 1)],
                                toMany: ["tags": [ObjectKey("Tag", key % Int64(tags) + 1), ObjectKey("Tag", (key / 7) % Int64(tags) + 1)].uniqued()])
        })
        next = end
    }
    _ = try store.allocatePrimaryKeys(entity: "Library", count: libraries)
    for start in stride(from: 1, through: libraries, by: 1_000) {
        try store.bulkInsert((start...min(libraries, start + 999)).map { n in
            let featured = (0..<10).map { i -> ObjectKey in
                let key = first + Int64((n - 1) * 100 + i * 10)
                return ObjectKey(key % 5 == 0 ? "Textbook" : "Book", key)
            }
            return ObjectRecord(key: ObjectKey("Library", Int64(n)), attributes: ["name": .string("Library of \(phrase(Int64(n), 3))")],
                                toMany: ["featured": featured], orderKeys: ["featured": (0..<10).map { Int64(2 + $0) * 1024 }])
        })
    }
}

extension Array where Element: Hashable {
    func uniqued() -> [Element] { var seen = Set<Element>(); return filter { seen.insert($0).inserted } }
}

/// The entity tables and join tables of a file.
func dataTables(_ url: URL) throws -> [String] {
    var db: OpaquePointer?
    guard sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw BenchmarkFailure("cannot open \(url.path)") }
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z%' AND name NOT IN ('Z_PRIMARYKEY', 'Z_METADATA', 'Z_MODELCACHE') ORDER BY name", -1, &statement, nil)
    defer { sqlite3_finalize(statement) }
    var names: [String] = []
    while sqlite3_step(statement) == SQLITE_ROW { names.append(String(cString: sqlite3_column_text(statement, 0))) }
    return names
}

/// A C floor into a fresh, empty store of the model (its schema made before the clock starts).
func floor(attach: Bool, from source: URL, to destination: URL) throws -> Double {
    try? SQLiteStoreType().destroy(at: destination)
    try SQLiteStoreType().open(at: destination, model: model, options: StoreOptions()).close()
    let names = try dataTables(source)
    let tables: [UnsafePointer<CChar>?] = names.map { UnsafePointer(strdup($0)) }
    defer { tables.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
    var error = [CChar](repeating: 0, count: 512)
    var rows: Int64 = 0
    let time = seconds {
        rows = attach
            ? cbaseline_attach_copy(source.path, destination.path, tables, Int32(tables.count), nil, &error, Int32(error.count))
            : cbaseline_copy_loop(source.path, destination.path, tables, Int32(tables.count), nil, &error, Int32(error.count))
    }
    guard rows >= 0 else { throw BenchmarkFailure(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) }
    return time
}

/// Seconds of one whole command.
func command(_ binary: String, _ arguments: [String]) throws -> Double {
    let process = Process()
    process.executableURL = URL(filePath: binary)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    let error = Pipe()
    process.standardError = error
    let time = try seconds {
        try process.run()
        process.waitUntilExit()
    }
    let said = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    guard process.terminationStatus == 0 else { throw BenchmarkFailure("objectstore \(arguments.joined(separator: " ")): \(said)") }
    return time
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

let arguments = CommandLine.arguments
let folder = FileManager.default.temporaryDirectory.appending(path: "shapes-bench")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)

switch arguments.dropFirst().first {
case "build":
    try build(URL(filePath: arguments[3]), objects: Int(arguments[2])!)
case "floors":
    let source = URL(filePath: arguments[2])
    let attach = median(try (0..<3).map { _ in try floor(attach: true, from: source, to: folder.appending(path: "floor.sqlite")) })
    let loop = median(try (0..<3).map { _ in try floor(attach: false, from: source, to: folder.appending(path: "floor.sqlite")) })
    print(String(format: "ATTACH %.3f s, C loop %.3f s", attach, loop))
case "trace":
    // What `objectstore convert` does, step by step, with the seconds each takes.
    let source = URL(filePath: arguments[2]), destination = URL(filePath: arguments[3])
    let type = { (url: URL) in url.pathExtension == "lmdb" ? LMDBStoreType() as any StoreType : SQLiteStoreType() }
    try? type(destination).destroy(at: destination)
    final class Clock: @unchecked Sendable {   // one thread: the migration's
        var last = DispatchTime.now().uptimeNanoseconds
        func mark(_ what: String) {
            let now = DispatchTime.now().uptimeNanoseconds
            FileHandle.standardError.write(Data(String(format: "%8.3f s  %@\n", Double(now - last) / 1e9, what).utf8))
            last = now
        }
    }
    let clock = Clock()
    let mark = clock.mark
    let opened = try type(source).open(at: source, model: model, options: StoreOptions(readOnly: true, createIfMissing: false))
    let snapshot = try opened.snapshot()
    mark("open and snapshot")
    if let checking = snapshot as? any IntegrityChecking { _ = try checking.rowsNoReadSees(limit: 1) }
    mark("rows no read sees")
    final class Phase: @unchecked Sendable { var label = "" }
    let phase = Phase()
    let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model),
                                   usesBulkCopy: !arguments.contains("--no-bulk-copy")) { p in
        let label = "\(p.mapping) \(p.phase.rawValue)"
        if label != phase.label { clock.mark("→ " + label); phase.label = label }
    }
    _ = try manager.migrateStore(from: snapshot, to: destination, type: type(destination))
    mark("the rest of the migration (metadata, close)")
    for entity in model.entityDescriptions where !entity.isAbstract { _ = try snapshot.objectCount(exactly: entity.name) }
    mark("source counts")
case "peak":
    let source = URL(filePath: arguments[2]), destination = URL(filePath: arguments[3])
    let type = { (url: URL) in url.pathExtension == "lmdb" ? LMDBStoreType() as any StoreType : SQLiteStoreType() }
    try? type(destination).destroy(at: destination)
    let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model))
    try manager.migrateStore(at: source, type: type(source), to: destination, type: type(destination))
    print(peakResidentBytes())
case "report":
    let sizes = [Int(arguments.count > 2 ? arguments[2] : "100000")!, Int(arguments.count > 3 ? arguments[3] : "1000000")!]
    let binary = arguments.count > 4 ? arguments[4] : "../.build/release/objectstore"
    let thresholds = try Thresholds(benchmark: "shapes-bench")
    print("| objects | figure | ours (median of 3) | floor (median of 3) | ratio | target |")
    print("|---|---|---|---|---|---|")
    for size in sizes {
        let source = folder.appending(path: "source-\(size).sqlite")
        FileHandle.standardError.write(Data("building \(size) objects…\n".utf8))
        try build(source, objects: size)
        let attach = median(try (0..<3).map { _ in try floor(attach: true, from: source, to: folder.appending(path: "floor.sqlite")) })
        let loop = median(try (0..<3).map { _ in try floor(attach: false, from: source, to: folder.appending(path: "floor.sqlite")) })
        func ours(_ destination: String, _ flags: [String] = []) throws -> Double {
            let url = folder.appending(path: destination)
            return median(try (0..<3).map { _ in
                try? (url.pathExtension == "lmdb" ? LMDBStoreType() as any StoreType : SQLiteStoreType()).destroy(at: url)
                return try command(binary, ["convert", source.path, url.path] + flags)
            })
        }
        let bulk = try ours("bulk.sqlite"), batches = try ours("batches.sqlite", ["--no-bulk-copy"]), lmdb = try ours("out.lmdb")
        let rows: [(String, Double, Double, String, String)] = [
            ("`convert a.sqlite b.sqlite` (bulk copy) / sqlite3 ATTACH + INSERT … SELECT", bulk, attach, "≤ 1.25×", "bulk copy / ATTACH"),
            ("`convert --no-bulk-copy` / C copy loop", batches, loop, "≤ 2×", "batches / C loop"),
            ("`convert a.sqlite b.lmdb` / C copy loop", lmdb, loop, "≤ 1.5×", "to LMDB / C loop"),
        ]
        for (name, ours, floor, target, key) in rows {
            print("| \(size) | \(name) | \(String(format: "%.3f", ours)) s | \(String(format: "%.3f", floor)) s | \(String(format: "%.2f", ours / floor))× | \(target) |")
            thresholds.record("\(key), \(size) objects", ours / floor)
        }
    }
    // Memory at 10× the objects, in processes of their own: SQLite → LMDB, LMDB → LMDB, LMDB → SQLite.
    print("\n| peak resident memory, one conversion per process | \(sizes[0] / 10) objects | \(sizes[0]) objects | ratio | target |")
    print("|---|---|---|---|---|")
    var lmdbSources: [URL] = []
    for size in [sizes[0] / 10, sizes[0]] {
        let source = folder.appending(path: "mem-\(size).sqlite"), lmdb = folder.appending(path: "mem-\(size).lmdb")
        try build(source, objects: size)
        _ = try runChild(["peak", source.path, lmdb.path])
        lmdbSources.append(lmdb)
    }
    for (name, from, to) in [("SQLite → LMDB", "sqlite", "lmdb"), ("LMDB → LMDB", "lmdb", "lmdb"), ("LMDB → SQLite", "lmdb", "sqlite")] {
        let peaks = try [sizes[0] / 10, sizes[0]].map { size -> Int in
            let source = folder.appending(path: "mem-\(size).\(from)"), destination = folder.appending(path: "peak-out-\(size).\(to)")
            return try runChild(["peak", source.path, destination.path])
        }
        let ratio = Double(peaks[1]) / Double(peaks[0])
        print("| \(name) | \(peaks[0] / 1_048_576) MiB | \(peaks[1] / 1_048_576) MiB | \(String(format: "%.2f", ratio)) | ≤ 1.2 |")
        thresholds.record("peak memory \(name), 10× the objects", ratio)
    }
    try? FileManager.default.removeItem(at: folder)
    print()
    thresholds.finish()
default:
    print("usage: shapes-bench report [small objects] [large objects] [objectstore binary] | build <objects> <path> | peak <source> <destination>")
}
