import AtomicStore
import BenchmarkSupport
import CBaseline
import Foundation
import InMemoryStore
import ObjectModel
import ObjectStore

// atomic-bench report [objects] [iterations] [objectstore]
//                                             : measures everything and prints a Markdown report; with the tool's
//                                               path, also `objectstore inspect` against a C reader, whole processes
// atomic-bench load <file>                    : opens an atomic store, reads every object, prints the peak RSS in bytes
// atomic-bench idle                           : prints the peak RSS of a process that only starts (the runtime's share)
// atomic-bench memory [iterations]            : the in-memory store figures alone
// atomic-bench make <file> [objects]          : writes an atomic store of the benchmark model (for `objectstore inspect`)

let arguments = CommandLine.arguments
let folder = FileManager.default.temporaryDirectory.appending(path: "objectstore-atomic-bench")

/// The process's peak resident memory, in bytes: Linux's VmHWM (getrusage's `ru_maxrss` would do,
/// but Linux carries a parent's peak into a child it spawns, so a child would report the parent's).
func maxRSS() -> Int {
    peakResidentBytes()
}

/// The benchmark model's objects: `pairs` of A and as many of B, each A the partner of the B
/// with its primary key, with the values the C baseline (`cbaseline_atomic_make`) holds.
func benchmarkRecords(pairs: Int) -> [ObjectRecord] {
    var records: [ObjectRecord] = []
    records.reserveCapacity(pairs * 2)
    for (entity, other, p) in [("A", "B", "a"), ("B", "A", "b")] {
        for pk in 1...Int64(pairs) {
            records.append(ObjectRecord(
                key: ObjectKey(entity, pk), version: 1,
                attributes: ["\(p)1": .integer(pk * 7), "\(p)2": .double(Double(pk) / 3), "\(p)3": .string("object number \(pk)"),
                             "\(p)4": .date(Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(pk))), "\(p)5": .boolean(pk % 2 == 1)],
                toOne: ["partner": ObjectKey(other, pk)]))
        }
    }
    return records
}

/// Reads every object of every entity through the contract's batch scan; returns how many
/// objects and a sum over their values (so nothing read goes unused).
func readAll(_ store: any PersistentStore) throws -> (count: Int, digest: Double) {
    var count = 0, digest = 0.0
    for entity in store.model.entityDescriptions where !entity.isAbstract {
        var after: Int64? = nil
        while true {
            let batch = try store.scanBatch(entity: entity.name, after: after, limit: 4_096)
            if batch.isEmpty { break }
            count += batch.count
            for value in batch.values {
                switch value {
                case .integer(let v)?: digest += Double(v)
                case .double(let v)?: digest += v
                case .string(let v)?: digest += Double(v.utf8.count)
                case .date(let v)?: digest += v.timeIntervalSinceReferenceDate
                case .boolean(let v)?: digest += v ? 1 : 0
                default: break
                }
            }
            for key in batch.toOne { digest += Double(key?.primaryKey ?? 0) }
            after = batch.primaryKeys.last
        }
    }
    return (count, digest)
}

/// The median of `runs` timings of `body`.
func median(_ runs: Int, _ body: () throws -> Void) rethrows -> Double {
    var times: [Double] = []
    for _ in 0..<runs { times.append(try seconds(body)) }
    return times.sorted()[runs / 2]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("atomic-bench: \(message)\n".utf8))
    exit(1)
}

func cMessage(_ error: [CChar]) -> String {
    String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}


/// Five entities of five attributes, a to-one between each pair: the issue's "5-entity in-memory store".
let fiveEntityModel: ManagedObjectModel = {
    let names = ["A", "B", "C", "D", "E"]
    return try! ManagedObjectModel(entities: names.enumerated().map { i, name in
        let p = name.lowercased()
        let partner = names[i ^ 1 < names.count ? i ^ 1 : i]
        return Entity(name, attributes: [Attribute("\(p)1", .integer64), Attribute("\(p)2", .double), Attribute("\(p)3", .string),
                                         Attribute("\(p)4", .date), Attribute("\(p)5", .boolean)],
                      relationships: [Relationship("partner", to: partner, inverse: "partner")])
    })
}()

/// Microseconds per in-memory store created and opened (and closed), averaged over `iterations`.
func inMemoryFigures(iterations: Int) throws -> [(String, Double)] {
    let type = InMemoryStoreType()
    func perStore(_ body: (Int) throws -> Void) throws -> Double {
        for i in 0..<min(1_000, iterations) { try body(i) }   // warm up
        var best = Double.infinity
        for _ in 0..<3 {
            let time = try seconds { for i in 0..<iterations { try body(i) } }
            best = min(best, time)
        }
        return best / Double(iterations) * 1e6
    }
    var figures: [(String, Double)] = []
    for (label, model) in [("2 entities", benchmarkModel), ("5 entities", fiveEntityModel)] {
        figures.append(("anonymous, \(label): `open(at: nil)` + close", try perStore { _ in
            try type.open(at: nil, model: model, options: StoreOptions()).close()
        }))
        figures.append(("named, \(label): `open(at: url)` (creates) + close + destroy", try perStore { i in
            let url = URL(string: "memory://bench/\(i)")!
            try type.open(at: url, model: model, options: StoreOptions()).close()
            try type.destroy(at: url)
        }))
    }
    return figures
}

switch arguments.dropFirst().first {
case "make":
    let url = URL(filePath: arguments[2])
    try AtomicStoreType().destroy(at: url)
    let store = try AtomicStoreType().open(at: url, model: benchmarkModel, options: StoreOptions())
    try store.bulkInsert(benchmarkRecords(pairs: Int(arguments.count > 3 ? arguments[3] : "200000")! / 2), checkingReferences: true)
    try store.close()
case "idle":
    print(maxRSS())
case "load":
    let url = URL(filePath: arguments[2])
    let store = try AtomicStoreType().open(at: url, model: benchmarkModel, options: StoreOptions(readOnly: true, createIfMissing: false))
    let (count, _) = try readAll(store)
    guard count > 0 else { fail("no objects in \(url.path)") }
    try store.close()
    print(maxRSS())
case "memory":
    let iterations = Int(arguments.count > 2 ? arguments[2] : "20000")!
    for (label, micros) in try inMemoryFigures(iterations: iterations) { print(String(format: "%@: %.2f µs", label, micros)) }
case "report":
    let objects = Int(arguments.count > 2 ? arguments[2] : "200000")!
    let iterations = Int(arguments.count > 3 ? arguments[3] : "20000")!
    let pairs = objects / 2
    try? FileManager.default.removeItem(at: folder)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let cFile = folder.appending(path: "c.atomic"), ourFile = folder.appending(path: "ours.atomic")
    let type = AtomicStoreType()
    var error = [CChar](repeating: 0, count: 512)

    // The C floor: the objects in structs, written and read in the same layout.
    FileHandle.standardError.write(Data("C save and load of \(objects) objects…\n".utf8))
    let metadata = try PropertyListValue.binaryPropertyList(StoreMetadata(storeType: AtomicStore.typeName, model: benchmarkModel).values)
    let cStore = cbaseline_atomic_make(Int64(pairs))
    defer { cbaseline_atomic_free(cStore) }
    let cSave = median(5) {
        let size = metadata.withUnsafeBytes { cbaseline_atomic_save(cStore, cFile.path, $0.baseAddress, Int64($0.count), &error, Int32(error.count)) }
        if size < 0 { fail(cMessage(error)) }
    }
    var cDigest = 0.0
    let cLoad = median(5) {
        guard let loaded = cbaseline_atomic_load(cFile.path, &error, Int32(error.count)) else { fail(cMessage(error)) }
        cDigest = cbaseline_atomic_digest(loaded)
        if cbaseline_atomic_count(loaded) != objects { fail("C read \(cbaseline_atomic_count(loaded)) objects") }
        cbaseline_atomic_free(loaded)
    }
    // The C file is an atomic store this library opens.
    let check = try type.open(at: cFile, model: benchmarkModel, options: StoreOptions(readOnly: true))
    guard try readAll(check).count == objects else { fail("the C file does not read back") }
    try check.close()

    // Ours: a new store filled by one bulk insert and closed, then a save of one change
    // to the open store (the whole file rewritten), then open and read everything.
    FileHandle.standardError.write(Data("our save and load…\n".utf8))
    let records = benchmarkRecords(pairs: pairs)
    let fill = try median(3) {
        try type.destroy(at: ourFile)
        let store = try type.open(at: ourFile, model: benchmarkModel, options: StoreOptions())
        try store.bulkInsert(records, checkingReferences: true)
        try store.close()
    }
    // The batch form, as a migration fills its destination: one batch per entity, references
    // not checked (each names the other entity), written once at close.
    let batches = try benchmarkModel.entityDescriptions.map { entity in
        var batch = RecordBatch(entity: entity)
        for record in records where record.key.entity == entity.name { try batch.append(record) }
        return batch
    }
    let fillBatches = try median(3) {
        try type.destroy(at: ourFile)
        let store = try type.open(at: ourFile, model: benchmarkModel, options: StoreOptions(deferredDurability: true))
        for batch in batches { try store.bulkInsert(batch, checkingReferences: false) }
        try store.close()
    }
    let fileSize = (try FileManager.default.attributesOfItem(atPath: ourFile.path)[.size] as? NSNumber)?.intValue ?? 0
    let open = try type.open(at: ourFile, model: benchmarkModel, options: StoreOptions())
    var version: Int64 = 1
    let resave = try median(5) {
        try open.save(ChangeSet(updated: [ObjectUpdate(key: ObjectKey("A", 1), attributes: ["a1": .integer(version)])]))
        version += 1
    }
    try open.close()
    var ourDigest = (count: 0, digest: 0.0)
    let openOnly = try median(3) {
        try type.open(at: ourFile, model: benchmarkModel, options: StoreOptions(readOnly: true)).close()
    }
    let load = try median(3) {
        let store = try type.open(at: ourFile, model: benchmarkModel, options: StoreOptions(readOnly: true))
        ourDigest = try readAll(store)
        try store.close()
    }
    guard ourDigest.count == objects else { fail("read back \(ourDigest.count) objects") }
    // C reads our file too (not timed): same layout.
    guard let ours = cbaseline_atomic_load(ourFile.path, &error, Int32(error.count)) else { fail("C cannot read ours: \(cMessage(error))") }
    cbaseline_atomic_free(ours)

    FileHandle.standardError.write(Data("peak memory of a load (separate processes)…\n".utf8))
    let idle = try runChild(["idle"])
    let peak = try runChild(["load", ourFile.path])

    // Whole processes, each started by `measure` (its own peak resident memory, from wait4): the tool
    // opening the store (`inspect`: read whole, SHA-256, every value checked, counts) against C's reader.
    var wholeCommands: (c: (Double, Int), tool: (Double, Int))?
    if arguments.count > 4 {
        FileHandle.standardError.write(Data("whole commands: objectstore inspect and the C reader…\n".utf8))
        let here = URL(filePath: arguments[0]).deletingLastPathComponent()
        func measured(_ command: [String]) throws -> (Double, Int) {
            let process = Process()
            process.executableURL = here.appending(path: "measure")
            process.arguments = command
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let said = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: " ")
            process.waitUntilExit()
            guard process.terminationStatus == 0, said.count == 2, let time = Double(said[0]),
                  let kib = Int(said[1].trimmingCharacters(in: .whitespacesAndNewlines)) else {
                fail("measure \(command.joined(separator: " ")) failed")
            }
            return (time, kib * 1024)
        }
        func median5(_ command: [String]) throws -> (Double, Int) {
            let runs = try (0..<5).map { _ in try measured(command) }
            return (runs.map(\.0).sorted()[2], runs.map(\.1).sorted()[2])
        }
        wholeCommands = (try median5([here.appending(path: "atomic-reader").path, ourFile.path]),
                         try median5([arguments[4], "inspect", ourFile.path]))
    }

    FileHandle.standardError.write(Data("in-memory stores, \(iterations) iterations…\n".utf8))
    let memory = try inMemoryFigures(iterations: iterations)

    let ms = { (s: Double) in String(format: "%.1f ms", s * 1000) }
    let ratio = { (a: Double, b: Double) in String(format: "%.2f×", a / b) }
    let mib = { (bytes: Int) in String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
    print("""
    | atomic file, \(objects) objects (\(pairs) A + \(pairs) B, one to-one each), \(mib(fileSize)) | time | against C | target |
    |---|---|---|---|
    | C: serialize + SHA-256 + write + fsync + rename (the floor) | \(ms(cSave)) | 1× | |
    | save: a change to the open store (whole file rewritten) | \(ms(resave)) | \(ratio(resave, cSave)) | ≤ 3× |
    | save: new store (deferred durability), one batch `bulkInsert` per entity (slots, as C's structs), close | \(ms(fillBatches)) | \(ratio(fillBatches, cSave)) | ≤ 3× |
    | save: new store, one record-form `bulkInsert` of every object (a dictionary each), close | \(ms(fill)) | \(ratio(fill, cSave)) | — |
    | C: read + check + parse into structs (the floor) | \(ms(cLoad)) | 1× | |
    | load: open (read whole, SHA-256, every record parsed and every value checked, rows indexed; what `inspect` does) | \(ms(openOnly)) | \(ratio(openOnly, cLoad)) | ≤ 3× |
    | open + every value decoded into the contract's `Value`s (`scanBatch`) | \(ms(load)) | \(ratio(load, cLoad)) | — |

    | peak resident memory | bytes | against the file | target |
    |---|---|---|---|
    | the file | \(mib(fileSize)) | 1× | |
    | the open store: a process that opens it and reads every object, less an idle process's \(mib(idle)) | \(mib(peak - idle)) | \(ratio(Double(peak - idle), Double(fileSize))) | ≤ 3× |
    | the whole process (the Swift runtime and Foundation alone are \(ratio(Double(idle), Double(fileSize))) this file) | \(mib(peak)) | \(ratio(Double(peak), Double(fileSize))) | — |

    """)
    if let (c, tool) = wholeCommands {
        print("""
        | whole processes (median of 5; peak resident memory from wait4) | time | against C | peak memory | against the file |
        |---|---|---|---|---|
        | C: read, check, parse into structs (`atomic-reader`) | \(ms(c.0)) | 1× | \(mib(c.1)) | \(ratio(Double(c.1), Double(fileSize))) |
        | `objectstore inspect` | \(ms(tool.0)) | \(ratio(tool.0, c.0)) | \(mib(tool.1)) | \(ratio(Double(tool.1), Double(fileSize))) |

        """)
    }
    print("""
    | in-memory store, create + open (release build, best of 3 × \(iterations)) | per store | target |
    |---|---|---|
    """)
    for (label, micros) in memory { print("| \(label) | \(String(format: "%.2f µs", micros)) | ≤ 20 µs |") }
    print()
    let thresholds = try Thresholds(benchmark: "atomic-bench")
    thresholds.record("save of the open store / C save", resave / cSave)
    thresholds.record("new store, batch bulkInsert / C save", fillBatches / cSave)
    thresholds.record("load (open: read, checked, parsed, indexed) / C read and parse", openOnly / cLoad)
    thresholds.record("peak memory of the open store (process less idle) / file size", Double(peak - idle) / Double(fileSize))
    if let (c, tool) = wholeCommands {
        thresholds.record("objectstore inspect / C reader, whole processes", tool.0 / c.0)
        thresholds.record("objectstore inspect peak memory / file size", Double(tool.1) / Double(fileSize))
    }
    thresholds.record("in-memory store create + open, slowest case, microseconds", memory.map(\.1).max() ?? .infinity)
    thresholds.finish()
    _ = (cDigest, ourDigest.digest)
    try? FileManager.default.removeItem(at: folder)
default:
    print("usage: atomic-bench report [objects] [iterations] [objectstore] | load <file> | idle | memory [iterations] | make <file> [objects]")
}
