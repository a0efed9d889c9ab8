import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import SQLiteStore
import Testing
import TestSupport

/// Stores as a crash leaves them: what SQLite itself would read is what the store reads.
@Suite("SQLiteStore after a crash")
struct SQLiteRecoveryTests {
    let type = SQLiteStoreType()

    /// Copies the store's files (as they are this moment) into `folder` under `name`.
    func copy(_ url: URL, to folder: TemporaryFolder, as name: String) throws -> URL {
        let target = folder.file(name)
        for suffix in ["", "-wal", "-journal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.copyItem(at: URL(filePath: url.path + suffix), to: URL(filePath: target.path + suffix))
        }
        return target
    }

    func pets(_ count: Int, from first: Int64 = 1) -> [ObjectRecord] {
        (first..<first + Int64(count)).map { ObjectRecord(key: ObjectKey("Pet", $0), attributes: ["name": .string("pet \($0)")]) }
    }

    @Test("a hot rollback journal is rolled back, never read as data")
    func hotJournal() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("rollback.sqlite")
        let store = try type.open(at: url, model: StoreConformance.model, options: StoreOptions(settings: ["journal_mode": "delete"]))
        try store.bulkInsert(pets(10))
        try store.close()
        // A writer stops in the middle of a transaction that spilled its pages into the main file.
        let committed = try Data(contentsOf: url)
        let writer = try RawDatabase(url, readOnly: false)
        try writer.execute("PRAGMA cache_size = 1; BEGIN")
        for pk in 11...3_000 { try writer.execute("INSERT INTO ZPET (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (\(pk), 3, 1, '\(String(repeating: "x", count: 200))')") }
        let crashed = try copy(url, to: folder, as: "crashed.sqlite")
        try writer.execute("ROLLBACK")
        writer.close()
        #expect(FileManager.default.fileExists(atPath: crashed.path + "-journal"), "the copy has its hot journal")
        // The main file alone holds pages of the uncommitted transaction: the trap.
        #expect(try Data(contentsOf: crashed) != committed, "the main file holds uncommitted pages")

        let reader = try type.open(at: crashed, model: StoreConformance.model, options: StoreOptions(readOnly: true, createIfMissing: false))
        #expect(try reader.count(FetchRequest(entity: "Pet")) == 10)
        let snapshot = try reader.snapshot()
        #expect(try snapshot.count(FetchRequest(entity: "Pet")) == 10)
        try snapshot.close()
        try reader.close()
        // SQLite's own view agrees.
        let oracle = try RawDatabase(crashed)
        #expect(try oracle.strings("SELECT count(*) FROM ZPET") == [["10"]])
        oracle.close()
    }

    @Test("a checkpoint cut short leaves a header ahead of the file: the store still opens, every row there")
    func checkpointCutShort() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("wal.sqlite")
        let store = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        try store.bulkInsert(pets(5))
        try store.close()
        // Rows committed to the WAL only; then the database's first page (with its new page
        // count) reaches the main file before the pages it counts, as a killed checkpoint leaves it.
        let writer = try RawDatabase(url, readOnly: false)
        try writer.execute("PRAGMA wal_autocheckpoint = 0")
        for pk in 6...800 { try writer.execute("INSERT INTO ZPET (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (\(pk), 3, 1, '\(String(repeating: "y", count: 300))')") }
        let cut = try copy(url, to: folder, as: "cut.sqlite")
        writer.close()
        let wal = try Data(contentsOf: URL(filePath: cut.path + "-wal"))
        var main = try Data(contentsOf: cut)
        let pageSize = Int(wal[8]) << 24 | Int(wal[9]) << 16 | Int(wal[10]) << 8 | Int(wal[11])
        var offset = 32
        var firstPage: Data?
        while offset + 24 + pageSize <= wal.count {
            let page = Int(wal[offset]) << 24 | Int(wal[offset + 1]) << 16 | Int(wal[offset + 2]) << 8 | Int(wal[offset + 3])
            if page == 1 { firstPage = wal.subdata(in: offset + 24 ..< offset + 24 + pageSize) }
            offset += 24 + pageSize
        }
        main.replaceSubrange(0..<pageSize, with: try #require(firstPage))
        try main.write(to: cut)
        let header = Int(main[28]) << 24 | Int(main[29]) << 16 | Int(main[30]) << 8 | Int(main[31])
        #expect(header > main.count / pageSize, "the header counts more pages than the file holds")

        let reader = try type.open(at: cut, model: StoreConformance.model, options: StoreOptions(readOnly: true, createIfMissing: false))
        #expect(try reader.count(FetchRequest(entity: "Pet")) == 800)
        try reader.close()
        try type.checkpoint(at: cut)
        let oracle = try RawDatabase(cut)
        #expect(try oracle.strings("PRAGMA quick_check") == [["ok"]])
        #expect(try oracle.strings("SELECT count(*) FROM ZPET") == [["800"]])
        oracle.close()
    }

    @Test("a read-only open leaves the files as it found them: a WAL stays unfolded, sidecars it made are gone")
    func readOnlyLeavesFiles() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("files.sqlite")
        let store = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        try store.bulkInsert(pets(3))
        try store.close()
        #expect(folder.files == ["files.sqlite"])
        for _ in 0..<2 {
            let reader = try type.open(at: url, model: StoreConformance.model, options: StoreOptions(readOnly: true, createIfMissing: false))
            let snapshot = try reader.snapshot()
            #expect(try snapshot.count(FetchRequest(entity: "Pet")) == 3)
            try reader.close()
            try snapshot.close()
            #expect(folder.files == ["files.sqlite"], "\(folder.files)")
        }
        // With rows only in the WAL: the main file and the WAL are left byte for byte.
        let writer = try RawDatabase(url, readOnly: false)
        try writer.execute("PRAGMA wal_autocheckpoint = 0; INSERT INTO ZPET (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (4, 3, 1, 'wal only')")
        let copied = try copy(url, to: folder, as: "copied.sqlite")
        writer.close()
        let before = CoreDataStoreFile.digests(copied)
        let reader = try type.open(at: copied, model: StoreConformance.model, options: StoreOptions(readOnly: true, createIfMissing: false))
        #expect(try reader.count(FetchRequest(entity: "Pet")) == 4)
        try reader.close()
        #expect(CoreDataStoreFile.digests(copied) == before)
    }
}
