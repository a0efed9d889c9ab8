// swift-tools-version: 6.1
import PackageDescription

// libFuzzer targets for every reader of untrusted input, in their own package so the main
// package's build never pays for them. Run `Fuzz/run.sh [RUNS] [TARGET…]` (docs/reliability.md).
// Built with `-sanitize=fuzzer` by run.sh; each target is one executable whose
// LLVMFuzzerTestOneInput feeds the bytes to one reader and ignores the errors it throws.
let package = Package(
    name: "ObjectStoreFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "ObjectStore", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "fuzz-targets",
            dependencies: [
                .product(name: "ObjectModel", package: "ObjectStore"),
                .product(name: "ObjectStore", package: "ObjectStore"),
                .product(name: "ObjectMigration", package: "ObjectStore"),
                .product(name: "AtomicStore", package: "ObjectStore"),
                .product(name: "InMemoryStore", package: "ObjectStore"),
            ],
            path: "Sources/FuzzTargets"
        ),
    ],
    swiftLanguageModes: [.v6]
)
