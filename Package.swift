// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

/// swift-log, for the modules that report diagnostics.
let log: Target.Dependency = .product(name: "Logging", package: "swift-log")
let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")

/// The backends that come with ObjectStore, in the order the tool lists them (the first makes a
/// store of no other type's extension or URL scheme). A backend is its folder and one line here
/// (docs/writing-a-backend.md): `Backends/<folder>` is the module `<folder>Store`, whose
/// `<folder>StoreType` the BackendList plugin puts in `BuiltInBackends.types`; a C library it calls
/// is the system-library module `C<folder>` in `Backends/<folder>/C<folder>`; its tests are
/// `Tests/<folder>StoreTests`, given `ObjectModel`, `ObjectStore`, the module and `ObjectStoreTesting`.
let backends: [Backend] = [
    Backend("SQLite", ["Relational", crypto, log], cLibrary: ("sqlite3", "libsqlite3-dev"), tests: ["TestSupport"]),
    Backend("Atomic", ["StoreToolkit", crypto, log], tests: ["StoreToolkit", crypto]),
    Backend("LMDB", ["StoreToolkit", "CZlib", log], cLibrary: ("lmdb", "liblmdb-dev")),
    // Through libpq, loaded when the first connection is made (LibPQ.swift): not linked.
    Backend("PostgreSQL", ["StoreToolkit", "Relational", log], tests: ["TestSupport"]),
    Backend("InMemory", ["StoreToolkit"]),
]

/// One line of `backends`: what the backend's module depends on beyond `ObjectModel` and
/// `ObjectStore`, the C library it calls (its pkg-config name and the Debian package holding it),
/// and what its tests depend on beyond the usual.
struct Backend {
    let folder: String
    let dependencies: [Target.Dependency]
    let cLibrary: (pkgConfig: String, apt: String)?
    let tests: [Target.Dependency]

    init(_ folder: String, _ dependencies: [Target.Dependency], cLibrary: (pkgConfig: String, apt: String)? = nil,
         tests: [Target.Dependency] = []) {
        (self.folder, self.dependencies, self.cLibrary, self.tests) = (folder, dependencies, cLibrary, tests)
    }

    var module: String { "\(folder)Store" }

    var targets: [Target] {
        let c = "C\(folder)", base: [Target.Dependency] = ["ObjectModel", "ObjectStore"]
        var targets: [Target] = [
            .target(name: module, dependencies: base + dependencies + (cLibrary == nil ? [] : [.target(name: c)]),
                    path: "Backends/\(folder)", exclude: cLibrary == nil ? [] : [c]),
            .testTarget(name: "\(module)Tests", dependencies: base + [.target(name: module), "ObjectStoreTesting"]
                        + (cLibrary == nil ? [] : [.target(name: c)]) + tests),
        ]
        if let cLibrary {
            targets.append(.systemLibrary(name: c, path: "Backends/\(folder)/\(c)", pkgConfig: cLibrary.pkgConfig, providers: [.apt([cLibrary.apt])]))
        }
        return targets
    }
}

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
        .library(name: "BuiltInBackends", targets: ["BuiltInBackends"]),
        .library(name: "ObjectStoreData", targets: ["ObjectStoreData"]),
        .executable(name: "objectstore", targets: ["objectstore"]),
    ] + backends.map { .library(name: $0.module, targets: [$0.module]) },
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
        // The one list of the backends that come with ObjectStore (`backends` above), made into
        // code by the BackendList plugin: the tool, the typed layer and the tests take it.
        .target(
            name: "BuiltInBackends", dependencies: ["ObjectStore"] + backends.map { .target(name: $0.module) }, path: "Backends/BuiltIn",
            plugins: ["BackendList"]
        ),
        .plugin(name: "BackendList", capability: .buildTool(), dependencies: ["BackendListGenerator"]),
        .executableTarget(name: "BackendListGenerator", path: "Plugins/BackendListGenerator"),
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
        // What several test targets share: SQLite's own view of a file, stores written the way
        // Core Data writes them, JSON documents compared value by value, the model caches of
        // real Core Data stores (Fixtures/ModelCache).
        .target(name: "TestSupport", dependencies: ["CSQLite", "ObjectModel", "BuiltInBackends"], path: "Tests/Support", resources: [.copy("Fixtures")]),
        .testTarget(
            name: "MigrationTests",
            dependencies: [
                "ObjectModel", "ObjectStore", "ObjectMigration", "ObjectStoreTesting", "BuiltInBackends", "TestSupport", "CSQLite",
            ] + backends.map { .target(name: $0.module) }
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
    ] + backends.flatMap(\.targets),
    swiftLanguageModes: [.v6]
)
