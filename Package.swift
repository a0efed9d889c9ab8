// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

/// swift-log, for the modules that report diagnostics.
let log: Target.Dependency = .product(name: "Logging", package: "swift-log")

let package = Package(
    name: "ObjectStore",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ObjectModel", targets: ["ObjectModel"]),
        .library(name: "ObjectStore", targets: ["ObjectStore"]),
        .library(name: "ObjectMigration", targets: ["ObjectMigration"]),
        .library(name: "ObjectStoreTesting", targets: ["ObjectStoreTesting"]),
        .library(name: "StoreToolkit", targets: ["StoreToolkit"]),
        .library(name: "Relational", targets: ["Relational"]),
        .library(name: "InMemoryStore", targets: ["InMemoryStore"]),
        .library(name: "AtomicStore", targets: ["AtomicStore"]),
        .library(name: "SQLiteStore", targets: ["SQLiteStore"]),
        .library(name: "LMDBStore", targets: ["LMDBStore"]),
        .library(name: "PostgreSQLStore", targets: ["PostgreSQLStore"]),
        .library(name: "BuiltInBackends", targets: ["BuiltInBackends"]),
        .library(name: "ObjectStoreData", targets: ["ObjectStoreData"]),
        .executable(name: "objectstore", targets: ["objectstore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "603.0.1"),
        // Library diagnostics (a Logger per module; nothing is printed unless the application
        // configures a handler: `objectstore --verbose` does).
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `swift package generate-documentation`: the DocC catalogs, built in CI with warnings as errors.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // zlib, for the raw DEFLATE stream Core Data keeps its model in (Z_MODELCACHE).
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(
            name: "ObjectModel",
            dependencies: ["CZlib", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(name: "ObjectStore", dependencies: ["ObjectModel", log]),
        // What backends that keep each object as one row share: row tables and row sources (the
        // contract's semantics over them), the binary codec, packed rows. Not the core's job.
        .target(name: "StoreToolkit", dependencies: ["ObjectModel", "ObjectStore"]),
        // What the SQL backends share: the one predicate and sort compiler, through each engine's SQLDialect.
        .target(name: "Relational", dependencies: ["ObjectModel", "ObjectStore"]),
        .target(name: "ObjectMigration", dependencies: ["ObjectModel", "ObjectStore", log]),
        .target(name: "ObjectStoreTesting", dependencies: ["ObjectModel", "ObjectStore"]),
        .target(name: "InMemoryStore", dependencies: ["ObjectModel", "ObjectStore", "StoreToolkit"], path: "Backends/InMemory"),
        .systemLibrary(
            name: "CSQLite", path: "Backends/CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(
            name: "SQLiteStore", dependencies: ["ObjectModel", "ObjectStore", "Relational", "CSQLite", .product(name: "Crypto", package: "swift-crypto"), log],
            path: "Backends/SQLite"
        ),
        .systemLibrary(name: "CLMDB", path: "Backends/CLMDB", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
        .target(name: "LMDBStore", dependencies: ["ObjectModel", "ObjectStore", "StoreToolkit", "CLMDB", "CZlib", log], path: "Backends/LMDB"),
        // Through libpq, the PostgreSQL client library (its blocking API fits the synchronous store
        // contract), loaded when the first connection is made (LibPQ.swift): not linked.
        .target(
            name: "PostgreSQLStore", dependencies: ["ObjectModel", "ObjectStore", "StoreToolkit", "Relational", log], path: "Backends/PostgreSQL"
        ),
        .target(
            name: "AtomicStore",
            dependencies: ["ObjectModel", "ObjectStore", "StoreToolkit", .product(name: "Crypto", package: "swift-crypto"), log],
            path: "Backends/Atomic"
        ),
        // The one list of the backends that come with ObjectStore: the tool, the typed layer and the
        // tests take it. A new backend is its folder under Backends/ and one line of this list.
        .target(
            name: "BuiltInBackends",
            dependencies: ["ObjectStore", "InMemoryStore", "SQLiteStore", "AtomicStore", "LMDBStore", "PostgreSQLStore"],
            path: "Backends/BuiltIn"
        ),
        // The typed layer, shaped like SwiftData: @Model classes, #Predicate fetches, containers and
        // contexts over any backend (docs/typed-models.md). Nothing below it knows it.
        .macro(
            name: "ObjectStoreDataMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"), .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"), .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
            ]
        ),
        .target(
            name: "ObjectStoreData",
            dependencies: [
                "ObjectStoreDataMacros", "ObjectModel", "ObjectStore", "ObjectMigration", "BuiltInBackends",
            ]
        ),
        .executableTarget(
            name: "objectstore",
            dependencies: [
                "ObjectModel", "ObjectStore", "ObjectMigration", "BuiltInBackends",
                .product(name: "ArgumentParser", package: "swift-argument-parser"), log,
            ]
        ),
        .testTarget(
            name: "ObjectModelTests",
            dependencies: ["ObjectModel", "TestSupport", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(name: "ObjectStoreTests", dependencies: ["ObjectModel", "ObjectStore", "InMemoryStore"]),
        .testTarget(
            name: "InMemoryStoreTests",
            dependencies: ["ObjectModel", "ObjectStore", "InMemoryStore", "ObjectStoreTesting"]
        ),
        .testTarget(
            name: "AtomicStoreTests",
            dependencies: [
                "ObjectModel", "ObjectStore", "AtomicStore", "ObjectStoreTesting", "StoreToolkit",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // What several test targets share: SQLite's own view of a file, stores written the way
        // Core Data writes them, JSON documents compared value by value, the model caches of
        // real Core Data stores (Fixtures/ModelCache).
        .target(name: "TestSupport", dependencies: ["CSQLite", "ObjectModel", "BuiltInBackends"], path: "Tests/Support", resources: [.copy("Fixtures")]),
        .testTarget(
            name: "SQLiteStoreTests",
            dependencies: ["ObjectModel", "ObjectStore", "SQLiteStore", "CSQLite", "ObjectStoreTesting", "TestSupport"]
        ),
        .testTarget(
            name: "LMDBStoreTests",
            dependencies: ["ObjectModel", "ObjectStore", "LMDBStore", "CLMDB", "ObjectStoreTesting"]
        ),
        // Against a private server each test process starts (TestSupport's PostgreSQLTestServer).
        .testTarget(
            name: "PostgreSQLStoreTests",
            dependencies: ["ObjectModel", "ObjectStore", "PostgreSQLStore", "ObjectStoreTesting", "TestSupport"]
        ),
        .testTarget(
            name: "MigrationTests",
            dependencies: [
                "ObjectModel", "ObjectStore", "ObjectMigration", "ObjectStoreTesting", "BuiltInBackends",
                "InMemoryStore", "SQLiteStore", "AtomicStore", "LMDBStore", "PostgreSQLStore", "TestSupport", "CSQLite",
            ]
        ),
        .testTarget(name: "ObjectStoreDataTests", dependencies: ["objectstore", "ObjectStoreData", "ObjectModel", "ObjectStore", "PostgreSQLStore", "BuiltInBackends", "TestSupport"]),
        .testTarget(
            name: "ObjectStoreDataMacrosTests",
            dependencies: [
                "ObjectStoreDataMacros", .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
            ]
        ),
        .testTarget(name: "CLITests", dependencies: ["objectstore", "ObjectModel", "ObjectStore", "SQLiteStore", "LMDBStore", "TestSupport"]),
        // The real binary killed with SIGKILL in the middle of its work, and two processes on one store.
        .testTarget(name: "CrashTests", dependencies: ["objectstore", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
