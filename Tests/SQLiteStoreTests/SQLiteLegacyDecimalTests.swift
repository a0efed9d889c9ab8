import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import SQLiteStore
import Testing
import TestSupport

/// Stores written before decimal columns followed Core Data (`DECIMAL TEXT`, TEXT affinity,
/// every decimal its text): they keep writing text, so that a value has one form in the column
/// and its unique index; they are not copied in bulk, so a copy writes the numbers Core Data's
/// layout holds.
@Suite("SQLiteStore decimals in stores written before the DECIMAL layout")
struct SQLiteLegacyDecimalTests {
    static let model = try! ManagedObjectModel(entities: [
        Entity("Price", attributes: [Attribute("amount", .decimal)], uniquenessConstraints: [["amount"]]),
    ])
    static let texts = ["42", "0.07", "10000000000000000000000", "12345678901234567890.123"]

    /// A store as an earlier version wrote it: the column declared `DECIMAL TEXT`, the values text.
    static func legacyStore(in folder: TemporaryFolder) throws -> (URL, [ObjectKey]) {
        let url = folder.url.appending(path: "legacy.sqlite")
        let store = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions())
        let keys = try store.allocatePrimaryKeys(entity: "Price", count: texts.count).map { ObjectKey("Price", $0) }
        try store.save(ChangeSet(inserted: zip(keys, texts).map { ObjectRecord(key: $0, attributes: ["amount": .decimal(Decimal(string: $1)!)]) }))
        try store.close()
        let raw = try RawDatabase(url, readOnly: false)
        try raw.execute("""
            PRAGMA writable_schema = ON;
            UPDATE sqlite_master SET sql = replace(sql, '"ZAMOUNT" DECIMAL', '"ZAMOUNT" DECIMAL TEXT') WHERE name = 'ZPRICE';
            PRAGMA writable_schema = OFF;
            """)
        raw.close()
        let reopened = try RawDatabase(url, readOnly: false)
        defer { reopened.close() }
        for (key, text) in zip(keys, texts) { try reopened.execute("UPDATE ZPRICE SET ZAMOUNT = '\(text)' WHERE Z_PK = \(key.primaryKey)") }
        #expect(try reopened.strings("SELECT DISTINCT typeof(ZAMOUNT) FROM ZPRICE") == [["text"]])
        return (url, keys)
    }

    @Test("a store with text decimals keeps writing text: its unique index still sees one value as one")
    func uniquenessHolds() throws {
        let folder = try TemporaryFolder()
        let (url, keys) = try Self.legacyStore(in: folder)
        let store = try SQLiteStoreType().open(at: url, model: Self.model, options: StoreOptions())
        defer { try? store.close() }
        for text in Self.texts {
            let key = ObjectKey("Price", try store.allocatePrimaryKeys(entity: "Price", count: 1).lowerBound)
            let error = try #require(throws: StoreError.self, "\(text) saved twice") {
                try store.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["amount": .decimal(Decimal(string: text)!)])]))
            }
            #expect(error.code == .uniquenessViolated)
        }
        let key = ObjectKey("Price", try store.allocatePrimaryKeys(entity: "Price", count: 1).lowerBound)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["amount": .decimal(Decimal(string: "0.5")!)])]))
        for (key, text) in zip(keys, Self.texts) {
            #expect(try store.record(for: key)?.attributes["amount"] == .decimal(Decimal(string: text)!))
        }
        let raw = try RawDatabase(url)
        defer { raw.close() }
        #expect(try raw.strings("SELECT typeof(ZAMOUNT), ZAMOUNT FROM ZPRICE WHERE Z_PK = \(key.primaryKey)") == [["text", "0.5"]])
    }

    @Test("a store with text decimals is not copied in bulk; a new store is")
    func notCopiedInBulk() throws {
        let folder = try TemporaryFolder()
        let (url, _) = try Self.legacyStore(in: folder)
        let source = try SQLiteStoreType().open(at: url, model: Self.model, options: StoreOptions(readOnly: true, createIfMissing: false))
        defer { try? source.close() }
        let destination = try SQLiteStoreType().open(at: folder.url.appending(path: "new.sqlite"), model: Self.model, options: StoreOptions())
        defer { try? destination.close() }
        #expect((destination as? any BulkCopying)?.canCopyObjects(of: ["Price"], from: source) == false)
        let fresh = try SQLiteStoreType().open(at: folder.url.appending(path: "fresh.sqlite"), model: Self.model, options: StoreOptions())
        defer { try? fresh.close() }
        #expect((destination as? any BulkCopying)?.canCopyObjects(of: ["Price"], from: fresh) == true)
    }
}
