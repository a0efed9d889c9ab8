import Foundation
import ObjectModel
import ObjectStore
import SQLiteStore
import TestSupport
import Testing

/// The stores we create have the schema Core Data creates: for every recent real store, a store
/// created from the model it carries is compared, table by table, column by column and index by
/// index, with what Apple's framework created (`Fixtures/CoreDataSchema`).
@Suite("Core Data's schema")
struct CoreDataSchemaTests {
    struct Table: Decodable, Equatable {
        struct Index: Decodable, Equatable {
            let unique: Bool
            let columns: [String]
        }
        let columns: [[String]]
        let primaryKey: [String]
        let indexes: [String: Index]
    }
    struct Store: Decodable {
        let frameworkVersion: Int
        let tables: [String: Table]
        let metadataTypes: [String: String]
        let versionHashesDigest: String
        let autoVacuum: Int
    }

    static let stores: [String: Store] = (try? JSONDecoder().decode([String: Store].self, from: ModelCacheFixtures.coreDataSchemas())) ?? [:]

    @Test("the fixture holds every recent real store")
    func everyRecentStore() {
        #expect(Self.stores.keys.sorted() == ["cartkit-v1", "coredataplus-samplemodel-v1", "coredataplus-samplemodel-v2",
                                              "coredataplus-samplemodel3-v1", "ddg-bookmarks-v1", "ddg-bookmarks-v5"])
        #expect(Self.stores.values.allSatisfy { $0.frameworkVersion >= 1000 })
    }

    @Test("a store created from a real store's model has Core Data's tables, columns, indexes and metadata",
          arguments: ["cartkit-v1", "coredataplus-samplemodel-v1", "coredataplus-samplemodel-v2",
                      "coredataplus-samplemodel3-v1", "ddg-bookmarks-v1", "ddg-bookmarks-v5"])
    func sameSchema(name: String) throws {
        let expected = try #require(Self.stores[name])
        let model = try ModelArchive.decodeModelCache(try ModelCacheFixtures.blob(name))
        let folder = FileManager.default.temporaryDirectory.appending(path: "coredata-schema-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appending(path: "\(name).sqlite")
        try SQLiteStoreType().open(at: url, model: model, options: StoreOptions()).close()

        let db = try RawDatabase(url)
        defer { db.close() }
        let names = try db.strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").map { $0[0] }
        #expect(names.sorted() == expected.tables.keys.sorted())
        for (table, want) in expected.tables {
            let columns = try db.strings("SELECT name, type FROM pragma_table_info('\(table)')")
            #expect(columns == want.columns, "\(name): columns of \(table)")
            let primaryKey = try db.strings("SELECT name FROM pragma_table_info('\(table)') WHERE pk > 0 ORDER BY pk").map { $0[0] }
            #expect(primaryKey == want.primaryKey, "\(name): primary key of \(table)")
            var indexes: [String: Table.Index] = [:]
            for row in try db.strings("SELECT name, \"unique\" FROM pragma_index_list('\(table)') WHERE origin = 'c'") {
                let indexColumns = try db.strings("SELECT name FROM pragma_index_xinfo('\(row[0])') WHERE key = 1 ORDER BY seqno").map { $0[0] }
                indexes[row[0]] = Table.Index(unique: row[1] == "1", columns: indexColumns)
            }
            #expect(indexes == want.indexes, "\(name): indexes of \(table)")
        }
        #expect(try db.strings("PRAGMA auto_vacuum") == [[String(expected.autoVacuum)]])

        // Z_METADATA: Core Data's keys with its value types, and the digest it computed.
        let plist = try #require(Data(hexString: try db.strings("SELECT hex(Z_PLIST) FROM Z_METADATA")[0][0]))
        let metadata = try #require(PropertyListValue.decodeDictionary(plist))
        for (key, type) in expected.metadataTypes {
            #expect(metadata[key].map(Self.typeName) == type, "\(name): metadata key \(key)")
        }
        #expect(metadata["NSStoreModelVersionHashesDigest"] == .string(expected.versionHashesDigest))
        // Z_MODELCACHE: one row, a cache that reads back to the model's hashes.
        let cache = try db.strings("SELECT hex(Z_CONTENT) FROM Z_MODELCACHE")
        #expect(cache.count == 1)
        #expect(try ModelArchive.decodeModelCache(#require(Data(hexString: cache[0][0]))).versionHashes == model.versionHashes)
    }

    static func typeName(_ value: PropertyListValue) -> String {
        switch value {
        case .boolean: "boolean"
        case .integer: "integer"
        case .real: "real"
        case .string: "string"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        case .date: "date"
        }
    }
}
