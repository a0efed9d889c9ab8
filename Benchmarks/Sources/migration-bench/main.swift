import BenchmarkSupport
import Foundation
import LMDBStore
import ObjectStore
import SQLiteStore

// migration-bench report <objects> [<small objects>] : measures everything and prints a Markdown report
// migration-bench migrate <source> <destination>        : one migration, then prints the peak resident bytes

let arguments = CommandLine.arguments
let folder = FileManager.default.temporaryDirectory.appending(path: "objectstore-bench")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)

func childPeak(_ source: URL, _ destination: URL) throws -> Int {
    let process = Process()
    process.executableURL = URL(filePath: CommandLine.arguments[0]).standardizedFileURL
    process.arguments = ["migrate", source.path, destination.path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
}

switch arguments.dropFirst().first {
case "migrate":
    try migrate(from: URL(filePath: arguments[2]), to: URL(filePath: arguments[3]), type: SQLiteStoreType())
    print(peakResidentBytes())
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
    let loop = try seconds { try plainCopy(from: source, to: folder.appending(path: "loop.sqlite")) }
    let attached = try seconds { try attachCopy(from: source, to: folder.appending(path: "attach.sqlite")) }
    let managed = try seconds { try migrate(from: source, to: folder.appending(path: "manager.sqlite"), type: SQLiteStoreType()) }
    let lmdb = try seconds { try migrate(from: source, to: folder.appending(path: "manager.lmdb"), type: LMDBStoreType()) }
    print(String(format: "C loop %.3f s (%.0f rows/s), ATTACH %.3f s, manager→sqlite %.3f s (%.2f×), manager→lmdb %.3f s (%.2f×)",
                 loop, Double(count) / loop, attached, managed, managed / loop, lmdb, lmdb / loop))
case "report":
    let large = Int(arguments.count > 2 ? arguments[2] : "1000000")!
    let small = Int(arguments.count > 3 ? arguments[3] : "100000")!
    let source = folder.appending(path: "source-\(large).sqlite"), smallSource = folder.appending(path: "source-\(small).sqlite")
    FileHandle.standardError.write(Data("building the \(large)- and \(small)-object source stores…\n".utf8))
    try buildSourceStore(at: source, count: large)
    try buildSourceStore(at: smallSource, count: small)
    let baselineURL = folder.appending(path: "baseline.sqlite"), managerURL = folder.appending(path: "manager.sqlite")
    let lmdbURL = folder.appending(path: "converted.lmdb")
    FileHandle.standardError.write(Data("plain C-API copy…\n".utf8))
    let baseline = try seconds { try plainCopy(from: source, to: baselineURL) }
    FileHandle.standardError.write(Data("migration through the manager…\n".utf8))
    let managed = try seconds { try migrate(from: source, to: managerURL, type: SQLiteStoreType()) }
    FileHandle.standardError.write(Data("conversion to LMDB…\n".utf8))
    let converted = try seconds { try migrate(from: source, to: lmdbURL, type: LMDBStoreType()) }
    FileHandle.standardError.write(Data("peak memory at \(small) and \(large) objects (separate processes)…\n".utf8))
    let peakSmall = try childPeak(smallSource, folder.appending(path: "peak-small.sqlite"))
    let peakLarge = try childPeak(source, folder.appending(path: "peak-large.sqlite"))
    let rate = { (seconds: Double) in Int(Double(large) / seconds) }
    let ratio = baseline / managed
    print("""
    | measurement | figure |
    |---|---|
    | objects | \(large) (\(large / 2) A + \(large / 2) B, one to-one each) |
    | (a) plain C-API copy, SQLite → SQLite | \(String(format: "%.2f", baseline)) s, \(rate(baseline)) objects/s |
    | (a) MigrationManager, SQLite → SQLite | \(String(format: "%.2f", managed)) s, \(rate(managed)) objects/s |
    | (a) ratio manager / plain loop (target ≥ 0.5) | \(String(format: "%.3f", ratio)) |
    | (b) peak resident memory, \(small) objects | \(peakSmall / 1_048_576) MiB |
    | (b) peak resident memory, \(large) objects | \(peakLarge / 1_048_576) MiB |
    | (b) ratio \(large) / \(small) (target ≤ 1.2) | \(String(format: "%.2f", Double(peakLarge) / Double(max(1, peakSmall)))) |
    | (c) conversion SQLite → LMDB | \(String(format: "%.2f", converted)) s, \(rate(converted)) objects/s (target ≥ 1,000,000/s) |
    """)
    try? FileManager.default.removeItem(at: folder)
default:
    print("usage: migration-bench report [objects] [small objects] | migrate <source> <destination>")
}
