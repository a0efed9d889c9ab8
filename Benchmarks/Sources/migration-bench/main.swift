import BenchmarkSupport
import Foundation
import LMDBStore
import ObjectStore
import SQLiteStore

// migration-bench report <objects> [<small objects>] : measures everything and prints a Markdown report
// migration-bench migrate <source> <destination>        : one migration, then prints the peak resident bytes
// migration-bench copy [objects]                       : the copy figures alone (default 200,000 objects)
// migration-bench phases [objects]                     : seconds per migration phase, to SQLite and to LMDB
// migration-bench source <objects> <path>               : builds a source store (for `migrate` by hand)
// migration-bench bulk|attach <source> <destination>   : one bulk copy, or the C ATTACH floor, timed (for profiling)
// migration-bench inplace [objects]                    : an optional attribute added in place, at 10,000 and [objects]

let arguments = CommandLine.arguments
let folder = FileManager.default.temporaryDirectory.appending(path: "objectstore-bench")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)

/// The peak resident memory of one migration run in a child process (`migrate`), by the destination's extension.
func childPeak(_ source: URL, _ destination: URL) throws -> Int {
    try runChild(["migrate", source.path, destination.path])
}

/// Seconds of each copy of one source store: the two C floors and the manager's four workloads.
struct CopyTimes {
    var loop = 0.0, attached = 0.0, managed = 0.0, lmdb = 0.0, bulk = 0.0, transformed = 0.0

    init(of source: URL) throws {
        // Every figure at its best of three, floors and ours alike: the first run also pays for the
        // pages the source build left dirty, and the shared machine's speed drifts between runs.
        func best(_ work: () throws -> Void) throws -> Double { try (0..<3).map { _ in try seconds(work) }.min()! }
        loop = try best { try plainCopy(from: source, to: folder.appending(path: "loop.sqlite")) }
        attached = try best { try attachCopy(from: source, to: folder.appending(path: "attach.sqlite")) }
        managed = try best { try migrate(from: source, to: folder.appending(path: "manager.sqlite"), type: SQLiteStoreType()) }
        lmdb = try best { try migrate(from: source, to: folder.appending(path: "manager.lmdb"), type: LMDBStoreType()) }
        bulk = try best { try migrate(from: source, to: folder.appending(path: "bulk.sqlite"), type: SQLiteStoreType(), bulkCopy: true) }
        transformed = try best { try transform(from: source, to: folder.appending(path: "transformed.sqlite")) }
    }
}

/// The in-place add-attribute step at two sizes, each at its best of three (a fresh copy of the store each time).
func inPlaceTimes(small: Int, large: Int) throws -> (small: Double, large: Double) {
    func time(_ count: Int) throws -> Double {
        let pristine = folder.appending(path: "inplace-\(count).sqlite"), store = folder.appending(path: "inplace.sqlite")
        try buildSourceStore(at: pristine, count: count)
        return try (0..<3).map { _ in
            try? SQLiteStoreType().destroy(at: store)
            try FileManager.default.copyItem(at: pristine, to: store)
            // On disk before the clock starts, as a user's store is: else the first fsync pays for the copy.
            let handle = try FileHandle(forUpdating: store)
            try handle.synchronize()
            try handle.close()
            return try addAttributeInPlace(at: store)
        }.min()!
    }
    return (try time(small), try time(large))
}

switch arguments.dropFirst().first {
case "migrate":
    let source = URL(filePath: arguments[2]), destination = URL(filePath: arguments[3])
    let type = { (url: URL) in url.pathExtension == "lmdb" ? LMDBStoreType() as any StoreType : SQLiteStoreType() }
    try migrate(from: source, sourceType: type(source), to: destination, type: type(destination))
    print(peakResidentBytes())
    if ProcessInfo.processInfo.environment["BENCH_SMAPS"] != nil, let smaps = try? String(contentsOfFile: "/proc/self/smaps", encoding: .utf8) {
        var header = ""
        for line in smaps.split(separator: "\n") {
            if line.first?.isHexDigit == true && line.contains("-") { header = String(line) }
            if line.hasPrefix("Rss:"), let kb = Int(line.split(separator: " ")[1]), kb > 2048 { print(kb, "KB", header) }
        }
    }
case "bulk":
    // One bulk copy (the BulkCopying capability) of a SQLite store, for profiling.
    let start = Date()
    try migrate(from: URL(filePath: arguments[2]), to: URL(filePath: arguments[3]), type: SQLiteStoreType(), bulkCopy: true)
    print(String(format: "%.3f s", Date().timeIntervalSince(start)))
case "attach":
    let start = Date()
    try attachCopy(from: URL(filePath: arguments[2]), to: URL(filePath: arguments[3]))
    print(String(format: "%.3f s", Date().timeIntervalSince(start)))
case "inplace":
    let (small, large) = try inPlaceTimes(small: 10_000, large: Int(arguments.count > 2 ? arguments[2] : "1000000")!)
    print(String(format: "add an optional attribute in place: 10,000 objects %.2f ms, large %.2f ms (%.2f×)", small * 1000, large * 1000, large / small))
case "source":
    try buildSourceStore(at: URL(filePath: arguments[3]), count: Int(arguments[2])!)
case "phases":
    let count = Int(arguments.count > 2 ? arguments[2] : "100000")!
    let source = folder.appending(path: "phases.sqlite")
    try buildSourceStore(at: source, count: count)
    for (name, type) in [("sqlite", SQLiteStoreType() as any StoreType), ("lmdb", LMDBStoreType())] {
        let times = try phaseTimes(from: source, to: folder.appending(path: "phases-out.\(name)"), type: type)
        print(name, times.map { "\($0.0) \(String(format: "%.2f", $0.1))s" }.joined(separator: ", "))
    }
case "copy":
    let count = Int(arguments.count > 2 ? arguments[2] : "200000")!
    let source = folder.appending(path: "copy.sqlite")
    try buildSourceStore(at: source, count: count)
    let t = try CopyTimes(of: source)
    print(String(format: "C loop %.3f s (%.0f rows/s), ATTACH %.3f s, manager→sqlite %.3f s (%.2f×), manager→lmdb %.3f s (%.2f×), bulk copy %.3f s (%.2f× ATTACH), transform %.3f s (%.2f×)",
                 t.loop, Double(count) / t.loop, t.attached, t.managed, t.managed / t.loop, t.lmdb, t.lmdb / t.loop, t.bulk, t.bulk / t.attached,
                 t.transformed, t.transformed / t.loop))
case "report":
    let large = Int(arguments.count > 2 ? arguments[2] : "1000000")!
    let small = Int(arguments.count > 3 ? arguments[3] : "100000")!
    let source = folder.appending(path: "source-\(large).sqlite"), smallSource = folder.appending(path: "source-\(small).sqlite")
    FileHandle.standardError.write(Data("building the \(large)- and \(small)-object source stores…\n".utf8))
    try buildSourceStore(at: source, count: large)
    try buildSourceStore(at: smallSource, count: small)
    FileHandle.standardError.write(Data("C copy loop, ATTACH + INSERT…SELECT, manager → SQLite, manager → LMDB…\n".utf8))
    let t = try CopyTimes(of: source)
    let (loop, attached, bulk) = (t.loop, t.attached, t.bulk)
    var peaks: [(String, Int, Int)] = []
    for type in ["sqlite", "lmdb"] {
        FileHandle.standardError.write(Data("peak memory → \(type) at \(small) and \(large) objects (separate processes)…\n".utf8))
        peaks.append(("SQLite → \(type == "sqlite" ? "SQLite" : "LMDB")", try childPeak(smallSource, folder.appending(path: "peak-small.\(type)")),
                      try childPeak(source, folder.appending(path: "peak-large.\(type)"))))
    }
    FileHandle.standardError.write(Data("peak memory LMDB → SQLite at \(small) and \(large) objects…\n".utf8))
    peaks.append(("LMDB → SQLite", try childPeak(folder.appending(path: "peak-small.lmdb"), folder.appending(path: "peak-back-small.sqlite")),
                  try childPeak(folder.appending(path: "peak-large.lmdb"), folder.appending(path: "peak-back-large.sqlite"))))
    let rate = { (seconds: Double) in Int(Double(large) / seconds) }
    let figure = { (name: String, seconds: Double, target: String) in
        "| \(name) | \(String(format: "%.2f", seconds)) s, \(rate(seconds)) objects/s | \(String(format: "%.2f", seconds / loop))× | \(target) |"
    }
    print("""
    | \(large) objects (\(large / 2) A + \(large / 2) B, one to-one each) | time | against the C loop | target |
    |---|---|---|---|
    \(figure("C copy loop, SQLite → SQLite (the floor)", loop, "1×"))
    \(figure("C ATTACH + INSERT … SELECT", attached, "—"))
    \(figure("MigrationManager, SQLite → SQLite", t.managed, "≤ 2×"))
    \(figure("MigrationManager, SQLite → LMDB", t.lmdb, "≤ 1.5×"))
    \(figure("MigrationManager, transform mapping (renames, one computed attribute), SQLite → SQLite", t.transformed, "≤ 3×"))
    | MigrationManager with bulk copy, SQLite → SQLite | \(String(format: "%.2f", bulk)) s, \(rate(bulk)) objects/s | \(String(format: "%.2f", bulk / attached))× the C ATTACH | ≤ 1.25× the C ATTACH |

    | peak resident memory | \(small) objects | \(large) objects | ratio (target ≤ 1.2) |
    |---|---|---|---|
    """)
    FileHandle.standardError.write(Data("an optional attribute added in place, at 10,000 and \(large) objects…\n".utf8))
    let inPlace = try inPlaceTimes(small: 10_000, large: large)
    let thresholds = try Thresholds(benchmark: "migration-bench")
    thresholds.record("add an optional attribute in place, large / 10,000 objects", inPlace.large / inPlace.small)
    thresholds.record("add an optional attribute in place at the large size, milliseconds", inPlace.large * 1000)
    thresholds.record("convert SQLite → SQLite through batches / C copy loop", t.managed / loop)
    thresholds.record("convert SQLite → LMDB / C copy loop", t.lmdb / loop)
    thresholds.record("transform mapping SQLite → SQLite / C copy loop", t.transformed / loop)
    thresholds.record("bulk copy SQLite → SQLite / C ATTACH", bulk / attached)
    for (type, smallPeak, largePeak) in peaks {
        print("| \(type) | \(smallPeak / 1_048_576) MiB | \(largePeak / 1_048_576) MiB | \(String(format: "%.2f", Double(largePeak) / Double(max(1, smallPeak)))) |")
        thresholds.record("peak memory \(type), large / small", Double(largePeak) / Double(max(1, smallPeak)))
    }
    print("""

    | `StoreMigrator`, one in-place step (SQLite: an optional attribute added) | 10,000 objects | \(large) objects | ratio (target < 2; < 20 ms at 1M) |
    |---|---|---|---|
    | time, best of three | \(String(format: "%.2f", inPlace.small * 1000)) ms | \(String(format: "%.2f", inPlace.large * 1000)) ms | \(String(format: "%.2f", inPlace.large / inPlace.small)) |
    """)
    try? FileManager.default.removeItem(at: folder)
    print()
    thresholds.finish()
default:
    print("usage: migration-bench report [objects] [small objects] | migrate <source> <destination>")
}
