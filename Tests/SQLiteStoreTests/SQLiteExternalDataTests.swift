import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import SQLiteStore
import Testing
import TestSupport

/// External binary data (`allowsExternalBinaryDataStorage`) in SQLite stores, checked against
/// what SQLite holds and the files on disk: the column's tag byte (0x01 inline, 0x02 a file
/// named by a NUL-terminated UUID string in `.<name>_SUPPORT/_EXTERNAL_DATA/`).
@Suite("SQLiteStore external binary data")
struct SQLiteExternalDataTests {
    let type = SQLiteStoreType()

    static let model: ManagedObjectModel = {
        try! ManagedObjectModel {
            Entity("Photo") {
                Attribute("title", .string)
                Attribute("image", .binaryData, allowsExternalBinaryDataStorage: true)
                Attribute("thumbnail", .binaryData)
            }
        }
    }()

    /// Bytes no two tests confuse: `count` bytes counting from `seed`.
    static func bytes(_ count: Int, seed: UInt8) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }) }

    static func folder(_ url: URL) -> URL { url.deletingLastPathComponent().appending(path: ".Photos_SUPPORT/_EXTERNAL_DATA") }

    /// A store laid out as Core Data writes one: a row inline (0x01), a row in a file (0x02),
    /// a non-flagged column that happens to start with 0x02 (untouched), and `extra` rows.
    static func coreDataStore(at url: URL, extra: [String] = [], fileName: String = "5B0B9E0A-3E2F-4C47-9C1D-6A1A51F0C0DE") throws -> Data {
        let large = bytes(300_000, seed: 9)
        try FileManager.default.createDirectory(at: folder(url), withIntermediateDirectories: true)
        try large.write(to: folder(url).appending(path: fileName))
        let name = Data(fileName.utf8).map { String(format: "%02X", $0) }.joined()
        try CoreDataStoreFile.write(to: url, statements: [
            "CREATE TABLE ZPHOTO ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR, ZIMAGE BLOB, ZTHUMBNAIL BLOB )",
            "INSERT INTO Z_PRIMARYKEY VALUES (1, 'Photo', 0, 3)",
            "INSERT INTO ZPHOTO VALUES (1, 1, 1, 'inline', X'01CAFEBABE', X'02FF')",
            "INSERT INTO ZPHOTO VALUES (2, 1, 1, 'file', X'02\(name)00', NULL)",
            "INSERT INTO ZPHOTO VALUES (3, 1, 1, 'none', NULL, NULL)",
        ] + extra, journalMode: "delete", uuid: "11111111-2222-3333-4444-555555555555",
            metadata: CoreDataStoreFile.metadata(hashes: model.versionHashes))
        return large
    }

    @Test("a store Core Data wrote: inline and file values read as their bytes; other binary columns untouched")
    func reads() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("Photos.sqlite")
        let large = try Self.coreDataStore(at: url)
        let store = try type.open(at: url, model: Self.model, options: StoreOptions(readOnly: true))
        defer { try? store.close() }
        #expect(try store.record(for: ObjectKey("Photo", 1))?.attributes["image"] == .data(Data([0xCA, 0xFE, 0xBA, 0xBE])))
        #expect(try store.record(for: ObjectKey("Photo", 1))?.attributes["thumbnail"] == .data(Data([0x02, 0xFF])))
        #expect(try store.record(for: ObjectKey("Photo", 2))?.attributes["image"] == .data(large))
        #expect(try store.record(for: ObjectKey("Photo", 3))?.attributes["image"] == nil)
        // The batch form and a predicate on the flagged attribute (compared on values, not on tagged columns).
        let batch = try store.scanBatch(entity: "Photo", after: nil, limit: 10)
        #expect(batch.records.map { $0.attributes["image"] } == [.data(Data([0xCA, 0xFE, 0xBA, 0xBE])), .data(large), nil])
        let found = try store.fetch(FetchRequest(entity: "Photo", predicate: .comparison(.init(.keyPath("image"), .equal, .constant(.data(Data([0xCA, 0xFE, 0xBA, 0xBE])))))))
        #expect(found.map(\.key.primaryKey) == [1])
    }

    @Test("bad values are typed errors saying what and where", arguments: [
        ("X'02" + Data("0000-MISSING".utf8).map { String(format: "%02X", $0) }.joined() + "00'", "0000-MISSING, which is missing"),
        ("X'41424344'", "starting with byte 0x41"),
        ("X''", "an empty value"),
        ("X'02" + Data("../../etc/passwd".utf8).map { String(format: "%02X", $0) }.joined() + "'", "is not a file name"),
    ])
    func badValues(_ column: String, _ expected: String) throws {
        let folder = try TemporaryFolder()
        let url = folder.file("Photos.sqlite")
        _ = try Self.coreDataStore(at: url, extra: ["INSERT INTO ZPHOTO VALUES (4, 1, 1, 'bad', \(column), NULL)", "UPDATE Z_PRIMARYKEY SET Z_MAX = 4"])
        let store = try type.open(at: url, model: Self.model, options: StoreOptions(readOnly: true))
        defer { try? store.close() }
        #expect(try store.record(for: ObjectKey("Photo", 1)) != nil)
        do {
            _ = try store.record(for: ObjectKey("Photo", 4))
            Issue.record("read \(column)")
        } catch let error as StoreError {
            #expect(error.code == .corrupt)
            #expect(error.message.contains(expected), "\(error.message)")
            #expect(error.message.contains("ZPHOTO row 4, attribute Photo.image"), "\(error.message)")
        }
        #expect(throws: StoreError.self) { try store.fetch(FetchRequest(entity: "Photo")) }
    }

    /// The tag byte and the rest of a row's image column, as SQLite holds it.
    func column(_ url: URL, _ pk: Int) throws -> (tag: String, rest: Data) {
        let db = try RawDatabase(url)
        defer { db.close() }
        let row = try db.strings("SELECT hex(substr(ZIMAGE, 1, 1)), hex(substr(ZIMAGE, 2)) FROM ZPHOTO WHERE Z_PK = \(pk)")[0]
        let hex = Array(row[1].utf8)
        let rest = Data(stride(from: 0, to: hex.count - 1, by: 2).map { UInt8(String(decoding: hex[$0...$0 + 1], as: UTF8.self), radix: 16)! })
        return (row[0], rest)
    }

    func files(_ url: URL) -> Set<String> { Set((try? FileManager.default.contentsOfDirectory(atPath: Self.folder(url).path)) ?? []) }

    @Test("writes: small values inline after 0x01, large ones to a file named after 0x02; files replaced and deleted with their rows")
    func writes() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("Photos.sqlite")
        let small = Self.bytes(100, seed: 1), large = Self.bytes(200_000, seed: 2), larger = Self.bytes(140_000, seed: 3)
        let store = try type.open(at: url, model: Self.model, options: StoreOptions())
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: ObjectKey("Photo", 1), attributes: ["image": .data(small), "thumbnail": .data(large)]),
            ObjectRecord(key: ObjectKey("Photo", 2), attributes: ["image": .data(large)]),
        ]))
        #expect(try column(url, 1) == ("01", small))
        let tagged = try column(url, 2)
        #expect(tagged.tag == "02")
        #expect(tagged.rest.last == 0)
        let name = String(decoding: tagged.rest.dropLast(), as: UTF8.self)
        #expect(UUID(uuidString: name) != nil, "\(name)")
        #expect(files(url) == [name])
        #expect(try Data(contentsOf: Self.folder(url).appending(path: name)) == large)
        // A flag-less attribute keeps its bytes as they are, however large.
        let db = try RawDatabase(url)
        #expect(try db.strings("SELECT length(ZTHUMBNAIL) FROM ZPHOTO WHERE Z_PK = 1") == [["200000"]])
        db.close()
        // A stale update writes nothing: the file it would have written is gone with it.
        #expect(throws: StoreError.self) {
            try store.save(ChangeSet(updated: [ObjectUpdate(key: ObjectKey("Photo", 2), expectedVersion: 7, attributes: ["image": .data(larger)])]))
        }
        #expect(files(url) == [name])
        // Replaced: the new file in, the old one out.
        try store.save(ChangeSet(updated: [ObjectUpdate(key: ObjectKey("Photo", 2), attributes: ["image": .data(larger)])]))
        let replaced = String(decoding: try column(url, 2).rest.dropLast(), as: UTF8.self)
        #expect(files(url) == [replaced])
        #expect(try store.record(for: ObjectKey("Photo", 2))?.attributes["image"] == .data(larger))
        // Deleted: its file goes too.
        try store.save(ChangeSet(deleted: [ObjectDeletion(key: ObjectKey("Photo", 2))]))
        #expect(files(url).isEmpty)
        try store.close()
    }

    @Test("a snapshot that began before a value was replaced or deleted still reads its bytes; the old file goes once no reader needs it")
    func snapshotKeepsReplacedFile() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("Photos.sqlite")
        let first = Self.bytes(200_000, seed: 4), second = Self.bytes(210_000, seed: 5)
        let store = try type.open(at: url, model: Self.model, options: StoreOptions())
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Photo", 1), attributes: ["image": .data(first)])]))
        let old = files(url)
        let snapshot = try store.snapshot()
        try store.save(ChangeSet(updated: [ObjectUpdate(key: ObjectKey("Photo", 1), attributes: ["image": .data(second)])]))
        // The old moment still names the old file: it stays while the snapshot reads that moment.
        #expect(try snapshot.record(for: ObjectKey("Photo", 1))?.attributes["image"] == .data(first))
        #expect(try store.record(for: ObjectKey("Photo", 1))?.attributes["image"] == .data(second))
        #expect(files(url).count == 2)
        try snapshot.close()
        try store.save(ChangeSet(deleted: [ObjectDeletion(key: ObjectKey("Photo", 1))]))
        #expect(files(url).isEmpty, "with no reader of an earlier moment, both files go at the next commit")
        #expect(!old.isEmpty)
        try store.close()
    }

    @Test("files no row names are removed when the store is next opened for writing; named ones stay")
    func orphans() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("Photos.sqlite")
        _ = try Self.coreDataStore(at: url)
        try Data("left by a crash".utf8).write(to: Self.folder(url).appending(path: "0D0D0D0D-0000-0000-0000-000000000000"))
        try type.open(at: url, model: Self.model, options: StoreOptions(readOnly: true)).close()
        #expect(files(url).count == 2, "a read-only open removes nothing")
        try type.open(at: url, model: Self.model, options: StoreOptions()).close()
        #expect(files(url) == ["5B0B9E0A-3E2F-4C47-9C1D-6A1A51F0C0DE"])
    }

    @Test("the support folder is part of the store's file set: destroyed, replaced and moved aside with it")
    func fileSet() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("Photos.sqlite")
        #expect(type.fileURLs(for: url).last?.lastPathComponent == ".Photos_SUPPORT")
        // Two staged stores beside one destination never share a support folder.
        #expect(type.fileURLs(for: folder.file(".Photos.sqlite.migrating-A")).last?.lastPathComponent == "..Photos.sqlite.migrating-A_SUPPORT")
        let large = try Self.coreDataStore(at: url)
        // Replace: another store over this one; then this one over a fresh copy.
        let other = folder.file("Other.sqlite")
        let store = try type.open(at: other, model: Self.model, options: StoreOptions())
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Photo", 9), attributes: ["image": .data(Self.bytes(150_000, seed: 4))])]))
        try store.close()
        try type.replace(at: other, with: url)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(!FileManager.default.fileExists(atPath: folder.file(".Photos_SUPPORT").path))
        let replaced = try type.open(at: other, model: Self.model, options: StoreOptions())
        #expect(try replaced.record(for: ObjectKey("Photo", 2))?.attributes["image"] == .data(large))
        #expect(try replaced.record(for: ObjectKey("Photo", 9)) == nil)
        try replaced.close()
        // The old store's file went at that open: only what the new one names is left.
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder.file(".Other_SUPPORT/_EXTERNAL_DATA").path)) == ["5B0B9E0A-3E2F-4C47-9C1D-6A1A51F0C0DE"])
        let aside = try type.moveAside(at: other)
        #expect(FileManager.default.fileExists(atPath: aside.deletingLastPathComponent().appending(path: "." + aside.deletingPathExtension().lastPathComponent + "_SUPPORT/_EXTERNAL_DATA").path))
        try type.destroy(at: aside)
        #expect(try FileManager.default.contentsOfDirectory(atPath: aside.deletingLastPathComponent().path).isEmpty)
    }

    @Test("a store an earlier version of this library wrote (no tags) reads its flagged columns as they are")
    func untaggedStore() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("Old.sqlite")
        try type.open(at: url, model: Self.model, options: StoreOptions()).close()
        // What such a store holds: raw bytes, and metadata without the tag marker.
        let db = try RawDatabase(url, readOnly: false)
        try db.execute("INSERT INTO ZPHOTO (Z_PK, Z_ENT, Z_OPT, ZIMAGE) VALUES (1, 1, 1, X'41424344')")
        db.close()
        var metadata = try type.readMetadata(at: url)
        metadata["ObjectStoreExternalBinaryData"] = nil
        try type.writeMetadata(metadata, at: url)
        #expect(try type.readMetadata(at: url)["ObjectStoreExternalBinaryData"] != nil, "writing metadata keeps how the store holds values")
        let raw = try RawDatabase(url, readOnly: false)
        let plist = try PropertyListSerialization.data(fromPropertyList: [
            "NSStoreType": "SQLite", "NSStoreModelVersionHashes": Self.model.versionHashes, "ObjectStoreModel": Data("{}".utf8),
        ] as [String: Any], format: .binary, options: 0)
        try raw.execute("UPDATE Z_METADATA SET Z_PLIST = ?1", blob: plist)
        raw.close()
        let store = try type.open(at: url, model: Self.model, options: StoreOptions())
        defer { try? store.close() }
        #expect(try store.record(for: ObjectKey("Photo", 1))?.attributes["image"] == .data(Data("ABCD".utf8)))
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Photo", 2), attributes: ["image": .data(Self.bytes(200_000, seed: 5))])]))
        let check = try RawDatabase(url)
        #expect(try check.strings("SELECT length(ZIMAGE) FROM ZPHOTO WHERE Z_PK = 2") == [["200000"]])
        check.close()
        #expect(files(url).isEmpty, "an untagged store keeps writing raw bytes")
    }
}
