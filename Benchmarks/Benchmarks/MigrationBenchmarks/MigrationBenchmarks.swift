import Benchmark
import BenchmarkSupport
import Foundation
import LMDBStore
import SQLiteStore

// ordo-one/benchmark suite: the same three workloads at a size a benchmark run
// repeats comfortably (OBJECTSTORE_BENCH_OBJECTS, default 20,000). The 1,000,000-object
// figures of docs/performance.md come from `migration-bench report` (see run.sh).
let benchmarks: @Sendable () -> Void = {
    let objects = Int(ProcessInfo.processInfo.environment["OBJECTSTORE_BENCH_OBJECTS"] ?? "") ?? 20_000
    let folder = FileManager.default.temporaryDirectory.appending(path: "objectstore-benchmarks")
    let source = folder.appending(path: "source.sqlite")
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .peakMemoryResident], scalingFactor: .one, maxDuration: .seconds(30), maxIterations: 5,
        setup: {
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try buildSourceStore(at: source, count: objects)
        },
        teardown: { try? FileManager.default.removeItem(at: folder) })

    Benchmark("Plain C-API copy, SQLite → SQLite (\(objects) objects)", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { try plainCopy(from: source, to: folder.appending(path: "baseline.sqlite")) }
    }
    Benchmark("MigrationManager, SQLite → SQLite (\(objects) objects)", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { try migrate(from: source, to: folder.appending(path: "managed.sqlite"), type: SQLiteStoreType()) }
    }
    Benchmark("Conversion, SQLite → LMDB (\(objects) objects)", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { try migrate(from: source, to: folder.appending(path: "converted.lmdb"), type: LMDBStoreType()) }
    }
}
