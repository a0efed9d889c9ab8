// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so the main package's build and tests
// never pay for the benchmark framework. Run `Benchmarks/run.sh`.
let package = Package(
    name: "ObjectStoreBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "ObjectStore", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // What the context benchmarks measure against (issue 9); it links the system libsqlite3, as we do.
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        .systemLibrary(name: "CSQLiteBench", path: "Sources/CSQLiteBench", pkgConfig: "sqlite3"),
        // The floor: plain C loops the benchmarks measure against.
        .target(name: "CBaseline", dependencies: ["CSQLiteBench"], path: "Sources/CBaseline", linkerSettings: [.linkedLibrary("crypto")]),
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                "CSQLiteBench", "CBaseline",
                .product(name: "ObjectModel", package: "ObjectStore"),
                .product(name: "ObjectStore", package: "ObjectStore"),
                .product(name: "ObjectMigration", package: "ObjectStore"),
                .product(name: "SQLiteStore", package: "ObjectStore"),
                .product(name: "LMDBStore", package: "ObjectStore"),
            ],
            path: "Sources/BenchmarkSupport"
        ),
        .executableTarget(
            name: "migration-bench",
            dependencies: ["BenchmarkSupport", .product(name: "ObjectStore", package: "ObjectStore"),
                           .product(name: "SQLiteStore", package: "ObjectStore"), .product(name: "LMDBStore", package: "ObjectStore")],
            path: "Sources/migration-bench"
        ),
        // Inserts and fetches through ObjectContext and the typed layer against GRDB and a C loop, in one process.
        .executableTarget(
            name: "context-bench",
            dependencies: ["BenchmarkSupport", "CSQLiteBench", "CBaseline", .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "ObjectModel", package: "ObjectStore"), .product(name: "ObjectStore", package: "ObjectStore"),
                           .product(name: "SQLiteStore", package: "ObjectStore"), .product(name: "ObjectStoreData", package: "ObjectStore")],
            path: "Sources/context-bench"
        ),
        // The atomic file against C writing and reading the same layout; the in-memory store's creation.
        .executableTarget(
            name: "atomic-bench",
            dependencies: ["BenchmarkSupport", "CBaseline", .product(name: "ObjectStore", package: "ObjectStore"),
                           .product(name: "AtomicStore", package: "ObjectStore"), .product(name: "InMemoryStore", package: "ObjectStore")],
            path: "Sources/atomic-bench"
        ),
        // A whole command's floor for atomic-bench: C reading an atomic store, as a process of its own.
        .executableTarget(name: "atomic-reader", dependencies: ["CBaseline"], path: "Sources/atomic-reader"),
        // Runs a command and prints its seconds and its own peak resident memory (wait4).
        .executableTarget(name: "measure", path: "Sources/measure"),
        // Batch update and delete against sqlite3, history's cost on insert, watch latency (issue 22).
        .executableTarget(
            name: "live-bench",
            dependencies: ["BenchmarkSupport", "CSQLiteBench", .product(name: "ObjectModel", package: "ObjectStore"),
                           .product(name: "ObjectStore", package: "ObjectStore"), .product(name: "SQLiteStore", package: "ObjectStore")],
            path: "Sources/live-bench"
        ),
        // Whole convert commands on a store with the shapes users have, against sqlite3's ATTACH and a C copy loop (issue 23).
        .executableTarget(
            name: "shapes-bench",
            dependencies: ["BenchmarkSupport", "CBaseline", "CSQLiteBench", .product(name: "ObjectModel", package: "ObjectStore"),
                           .product(name: "ObjectStore", package: "ObjectStore"), .product(name: "ObjectMigration", package: "ObjectStore"),
                           .product(name: "SQLiteStore", package: "ObjectStore"), .product(name: "LMDBStore", package: "ObjectStore")],
            path: "Sources/shapes-bench"
        ),
        // Clients in one process saving into one PostgreSQL store at once, against one client (issue 24).
        .executableTarget(
            name: "clients-bench",
            dependencies: [.product(name: "ObjectModel", package: "ObjectStore"), .product(name: "ObjectStore", package: "ObjectStore"),
                           .product(name: "PostgreSQLStore", package: "ObjectStore")],
            path: "Sources/clients-bench"
        ),
        // Threads of one process reading one store at once, against one thread (issue 24).
        .executableTarget(
            name: "readers-bench",
            dependencies: [.product(name: "ObjectModel", package: "ObjectStore"), .product(name: "ObjectStore", package: "ObjectStore"),
                           .product(name: "SQLiteStore", package: "ObjectStore"), .product(name: "LMDBStore", package: "ObjectStore")],
            path: "Sources/readers-bench"
        ),
        .executableTarget(
            name: "MigrationBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkSupport",
            ],
            path: "Benchmarks/MigrationBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
