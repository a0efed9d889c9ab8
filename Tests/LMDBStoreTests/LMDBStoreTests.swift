import CLMDB
import Foundation
import LMDBStore
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import Testing

typealias Folder = TemporaryFolder

/// Writes a raw LMDB environment with the C API: a named database and one key.
func rawEnvironment(_ url: URL, database: String, key: Data, value: Data) throws {
    var env: OpaquePointer?
    #expect(mdb_env_create(&env) == 0)
    defer { mdb_env_close(env) }
    #expect(mdb_env_set_maxdbs(env, 8) == 0)
    #expect(mdb_env_open(env, url.path, UInt32(MDB_NOSUBDIR), 0o644) == 0)
    var txn: OpaquePointer?
    #expect(mdb_txn_begin(env, nil, 0, &txn) == 0)
    var dbi: MDB_dbi = 0
    #expect(mdb_dbi_open(txn, database, UInt32(MDB_CREATE), &dbi) == 0)
    key.withUnsafeBytes { k in
        value.withUnsafeBytes { v in
            var mk = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
            var mv = MDB_val(mv_size: v.count, mv_data: UnsafeMutableRawPointer(mutating: v.baseAddress))
            #expect(mdb_put(txn, dbi, &mk, &mv, 0) == 0)
        }
    }
    #expect(mdb_txn_commit(txn) == 0)
}

@Suite("LMDBStore")
struct LMDBStoreTests {
    let type = LMDBStoreType()

    @Test("every Swift flag is the LMDB flag its name says, in the right family")
    func flags() {
        #expect(LMDBEnvironmentFlags.noSubdirectory.rawValue == UInt32(MDB_NOSUBDIR))
        #expect(LMDBEnvironmentFlags.readOnly.rawValue == UInt32(MDB_RDONLY))
        #expect(LMDBEnvironmentFlags.noThreadLocalStorage.rawValue == UInt32(MDB_NOTLS))
        #expect(LMDBEnvironmentFlags.noSync.rawValue == UInt32(MDB_NOSYNC))
        #expect(LMDBEnvironmentFlags.noMetaSync.rawValue == UInt32(MDB_NOMETASYNC))
        #expect(LMDBDatabaseFlags.create.rawValue == UInt32(MDB_CREATE))
        #expect(LMDBDatabaseFlags.reverseKey.rawValue == UInt32(MDB_REVERSEKEY))
        #expect(LMDBDatabaseFlags.integerKey.rawValue == UInt32(MDB_INTEGERKEY))
        #expect(LMDBWriteFlags.noOverwrite.rawValue == UInt32(MDB_NOOVERWRITE))
        #expect(LMDBTransactionFlags.readOnly.rawValue == UInt32(MDB_RDONLY))
        // The trap seen in the wild: reverse-key is a database flag; as an environment flag it means something else.
        let environmentFlags: [LMDBEnvironmentFlags] = [.noSubdirectory, .readOnly, .noThreadLocalStorage, .noSync, .noMetaSync]
        #expect(!environmentFlags.map(\.rawValue).contains(LMDBDatabaseFlags.reverseKey.rawValue))
        #expect(Set(environmentFlags.map(\.rawValue)).count == environmentFlags.count, "two Swift names map to one flag")
    }

    @Test("one data file and its lock file, recognised by the meta page")
    func files() throws {
        let folder = try Folder()
        let url = folder.file("data.lmdb")
        let store = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        try store.close()
        #expect(folder.files == ["data.lmdb", "data.lmdb-lock"])
        let registry = StoreTypeRegistry()
        LMDBStore.register(in: registry)
        #expect(registry.detectType(at: url)?.name == "lmdb")
        try type.destroy(at: url)
        #expect(folder.files.isEmpty)
    }

    @Test("a full map grows instead of failing")
    func mapGrows() throws {
        let folder = try Folder()
        let url = folder.file("small.lmdb")
        let store = try LMDBStoreType().open(at: url, model: StoreConformance.model, options: StoreOptions(settings: ["map_size": "\(1 << 20)"]))
        let lmdb = try #require(store as? LMDBStore)
        let before = lmdb.mapSize
        let payload = Data(repeating: 7, count: 4_000)
        for batch in 0..<5 {
            let keys = try store.allocatePrimaryKeys(entity: "Item", count: 200)
            try store.bulkInsert(keys.map { ObjectRecord(key: ObjectKey("Item", $0), attributes: ["data": .data(payload), "i64": .integer(Int64(batch))]) })
        }
        #expect(lmdb.mapSize > before)
        #expect(try store.count(FetchRequest(entity: "Item")) == 1_000)
        try store.close()
        let reopened = try LMDBStoreType().open(at: url, model: StoreConformance.model, options: StoreOptions())
        #expect(try reopened.count(FetchRequest(entity: "Item", predicate: try ObjectPredicate("i64 == 4"))) == 200)
        try reopened.close()
    }

    /// Damaged or foreign files: a typed error, the bytes unchanged, no lock file left behind.
    static let damages: [(String, @Sendable (URL) throws -> Void)] = [
        ("a text file", { try Data("hello\n".utf8).write(to: $0) }),
        ("an empty file", { try Data().write(to: $0) }),
        ("a file cut inside the first page", { try Data(contentsOf: $0).prefix(100).write(to: $0) }),
        ("a file cut after the meta pages", { url in
            let data = try Data(contentsOf: url)
            try data.prefix(2 * 4096).write(to: url)
        }),
        ("a file cut by one byte", { try Data(contentsOf: $0).dropLast().write(to: $0) }),
        ("a damaged magic", { url in var d = try Data(contentsOf: url); d[16] ^= 0xff; try d.write(to: url) }),
        ("an unknown data version", { url in var d = try Data(contentsOf: url); d[20] = 9; try d.write(to: url) }),
        ("an invalid page size", { url in var d = try Data(contentsOf: url); d[40] = 3; d[41] = 0; try d.write(to: url) }),
        ("a damaged second meta page", { url in var d = try Data(contentsOf: url); d[4096 + 16] ^= 0xff; try d.write(to: url) }),
        ("XXXXXXXX over the first bytes", { url in
            var d = try Data(contentsOf: url); d.replaceSubrange(0..<8, with: Data("XXXXXXXX".utf8)); try d.write(to: url)
        }),
        ("the second meta page naming another page", { url in var d = try Data(contentsOf: url); d[4096] = 7; try d.write(to: url) }),
        ("a meta page not flagged as one", { url in var d = try Data(contentsOf: url); d[10] = 0x01; try d.write(to: url) }),
        ("a second meta page with another page size", { url in var d = try Data(contentsOf: url); d[4096 + 41] ^= 0x20; try d.write(to: url) }),
        ("an LMDB environment that is not a store", { url in
            try FileManager.default.removeItem(at: url)
            try rawEnvironment(url, database: "notes", key: Data("a".utf8), value: Data("b".utf8))
        }),
        ("a store whose metadata is not a property list", { url in
            try FileManager.default.removeItem(at: url)
            try rawEnvironment(url, database: "meta", key: Data("metadata".utf8), value: Data([0, 1, 2, 3]))
        }),
        ("a SQLite file", { url in
            var data = Data("SQLite format 3\0".utf8)
            data.append(Data(count: 8192))
            try data.write(to: url)
        }),
    ]

    @Test("a damaged file is a typed error and is left untouched", arguments: 0..<damages.count)
    func damaged(_ index: Int) throws {
        let (name, damage) = Self.damages[index]
        let folder = try Folder()
        let url = folder.file("bad.lmdb")
        let store = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        try store.bulkInsert((1...20).map { ObjectRecord(key: ObjectKey("Pet", $0), attributes: ["name": .string("pet \($0)")]) })
        try store.close()
        try FileManager.default.removeItem(at: type.fileURLs(for: url)[1])
        try damage(url)
        let lockExisted = FileManager.default.fileExists(atPath: type.fileURLs(for: url)[1].path)
        let before = try Data(contentsOf: url)
        for attempt in ["open", "readMetadata"] {
            do {
                if attempt == "open" {
                    _ = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
                } else {
                    _ = try type.readMetadata(at: url)
                }
                Issue.record("\(name): \(attempt) accepted it")
            } catch let error as StoreError {
                #expect(error.code == .corrupt, "\(name): \(error)")
                #expect(error.url?.path == url.path)
            }
            #expect(try Data(contentsOf: url) == before, "\(name): the file changed")
            #expect(FileManager.default.fileExists(atPath: type.fileURLs(for: url)[1].path) == lockExisted, "\(name): \(folder.files)")
        }
    }

    @Test("a damaged row is a typed error when read")
    func damagedRow() throws {
        let folder = try Folder()
        let url = folder.file("rows.lmdb")
        let store = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        try store.bulkInsert([ObjectRecord(key: ObjectKey("Pet", 1), attributes: ["name": .string("Rex")])])
        try store.close()
        // Overwrite the row with bytes that are not a row, through LMDB itself.
        var env: OpaquePointer?
        #expect(mdb_env_create(&env) == 0)
        #expect(mdb_env_set_maxdbs(env, 64) == 0)
        #expect(mdb_env_open(env, url.path, UInt32(MDB_NOSUBDIR), 0o644) == 0)
        var txn: OpaquePointer?
        #expect(mdb_txn_begin(env, nil, 0, &txn) == 0)
        var dbi: MDB_dbi = 0
        #expect(mdb_dbi_open(txn, "rows/Pet", 0, &dbi) == 0)
        var key = (UInt64(1) ^ (1 << 63)).bigEndian
        let junk: [UInt8] = [2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        withUnsafeMutableBytes(of: &key) { k in
            junk.withUnsafeBytes { v in
                var mk = MDB_val(mv_size: 8, mv_data: k.baseAddress)
                var mv = MDB_val(mv_size: v.count, mv_data: UnsafeMutableRawPointer(mutating: v.baseAddress))
                #expect(mdb_put(txn, dbi, &mk, &mv, 0) == 0)
            }
        }
        #expect(mdb_txn_commit(txn) == 0)
        mdb_env_close(env)
        let reopened = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        #expect(throws: StoreError.self) { _ = try reopened.fetch(FetchRequest(entity: "Pet")) }
        #expect(throws: StoreError.self) { _ = try reopened.record(for: ObjectKey("Pet", 1)) }
        try reopened.close()
    }
}
