import Foundation
import ObjectModel

/// The model caches of real Core Data stores (`Fixtures/ModelCache`, see its README): each
/// `Z_MODELCACHE.Z_CONTENT` blob Apple's framework wrote, and the entity version hashes the
/// same framework wrote into the same store's metadata.
public enum ModelCacheFixtures {
    /// Every fixture, by name: a file missing from the folder fails the test that reads it.
    public static let names = [
        "bnr-coredatastack-testmodel", "cartkit-v1", "coredataplus-samplemodel-v1", "coredataplus-samplemodel-v2",
        "coredataplus-samplemodel3-v1", "ddg-bookmarks-v1", "ddg-bookmarks-v5", "wibosco-migration-wal", "wibosco-revised-v3",
    ]

    /// The folder holding the blobs, `expected-hashes.json` and the README.
    public static var directory: URL {
        Bundle.module.resourceURL!.appending(path: "Fixtures/ModelCache")
    }

    /// The compressed blob (`Z_CONTENT`) of fixture `name`.
    public static func blob(_ name: String) throws -> Data {
        try Data(contentsOf: directory.appending(path: "\(name).deflate"))
    }

    /// The archive the blob of fixture `name` inflates to: what a compiled `.mom` file holds.
    public static func archive(_ name: String) throws -> Data {
        try RawDeflate.inflate(try blob(name))
    }

    /// The hashes the store's `NSStoreModelVersionHashes` holds, entity name to 32 bytes.
    public static func expectedHashes(_ name: String) throws -> [String: Data] {
        let all = try JSONDecoder().decode([String: [String: String]].self, from: Data(contentsOf: directory.appending(path: "expected-hashes.json")))
        guard let hashes = all[name] else { throw CocoaError(.fileReadCorruptFile) }
        return hashes.mapValues { hex in
            Data(stride(from: 0, to: hex.count, by: 2).map { offset in
                let start = hex.index(hex.startIndex, offsetBy: offset)
                return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
            })
        }
    }

    /// What Core Data created in the recent stores among these (`Fixtures/CoreDataSchema`, see
    /// its README): tables, columns, indexes and metadata key types, by store name.
    public static func coreDataSchemas() throws -> Data {
        try Data(contentsOf: Bundle.module.resourceURL!.appending(path: "Fixtures/CoreDataSchema/schemas.json"))
    }
}
