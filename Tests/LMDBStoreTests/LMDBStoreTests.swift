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
    try rawTransaction(url) { txn, _ in
        var dbi: MDB_dbi = 0
        #expect(mdb_dbi_open(txn, database, UInt32(MDB_CREATE), &dbi) == 0)
        rawPut(txn, dbi, key, value)
        return true
    }
}

/// Opens (or makes) an environment with the C API, runs `body` in a write transaction
/// (committed when it returns true) with a function that opens a named database.
func rawTransaction(_ url: URL, _ body: (OpaquePointer?, (String) -> MDB_dbi) throws -> Bool) throws {
    var env: OpaquePointer?
    #expect(mdb_env_create(&env) == 0)
    defer { mdb_env_close(env) }
    #expect(mdb_env_set_maxdbs(env, 64) == 0)
    #expect(mdb_env_open(env, url.path, UInt32(MDB_NOSUBDIR), 0o644) == 0)
    var txn: OpaquePointer?
    #expect(mdb_txn_begin(env, nil, 0, &txn) == 0)
    let commit = try body(txn) { name in
        var dbi: MDB_dbi = 0
        #expect(mdb_dbi_open(txn, name, 0, &dbi) == 0, "no database \(name)")
        return dbi
    }
    if commit { #expect(mdb_txn_commit(txn) == 0) } else { mdb_txn_abort(txn) }
}

/// The bytes under `key` in a database, read with the C API.
func rawGet(_ txn: OpaquePointer?, _ dbi: MDB_dbi, _ key: Data) -> Data? {
    key.withUnsafeBytes { k in
        var mk = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
        var mv = MDB_val()
        guard mdb_get(txn, dbi, &mk, &mv) == 0 else { return nil }
        return Data(bytes: mv.mv_data, count: mv.mv_size)
    }
}

/// Puts `value` under `key` with the C API.
func rawPut(_ txn: OpaquePointer?, _ dbi: MDB_dbi, _ key: Data, _ value: Data) {
    key.withUnsafeBytes { k in
        value.withUnsafeBytes { v in
            var mk = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
            var mv = MDB_val(mv_size: v.count, mv_data: UnsafeMutableRawPointer(mutating: v.baseAddress))
            #expect(mdb_put(txn, dbi, &mk, &mv, 0) == 0)
        }
    }
}

/// CRC-32 (the ISO-HDLC polynomial, reflected, as zlib computes it), bit by bit: the tests' own
/// reckoning of the checksums a version 3 store keeps, independent of the backend's.
func crc32Reference(_ bytes: some Sequence<UInt8>) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

/// A value as a version 3 store holds it: the bytes, then the CRC-32 of the database's name, the key and the bytes.
func sealed(_ database: String, _ key: Data, _ value: Data) -> Data {
    value + withUnsafeBytes(of: crc32Reference(Data(database.utf8) + key + value).littleEndian) { Data($0) }
}

/// A primary key as a row key: 8 bytes big-endian, the sign bit flipped.
func rowKey(_ pk: Int64) -> Data { withUnsafeBytes(of: (UInt64(bitPattern: pk) ^ (1 << 63)).bigEndian) { Data($0) } }

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
        #expect(LMDBWriteFlags.append.rawValue == UInt32(MDB_APPEND))
        #expect(LMDBWriteFlags.reserve.rawValue == UInt32(MDB_RESERVE))
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
        // liblmdb has no checksum on its meta pages: it takes the one with the higher transaction
        // number, so a bit flipped there would make it read the store as it was before.
        ("the older meta page naming a transaction far ahead", { url in
            var d = try Data(contentsOf: url)
            let older = littleEndian64(d, 144) < littleEndian64(d, 4096 + 144) ? 0 : 4096
            d[older + 147] ^= 1
            try d.write(to: url)
        }),
        ("a meta page naming a transaction of the other meta page", { url in
            var d = try Data(contentsOf: url); d[144] ^= 1; d[4096 + 144] ^= 1; try d.write(to: url)
        }),
        // The flags of a database's node in the main tree: sorted duplicates (0x04) next to the
        // database flag made liblmdb follow a structure that is not there (a SIGSEGV).
        ("a database node flagged as sorted duplicates", { url in
            var d = try Data(contentsOf: url)
            let current = littleEndian64(d, 144) > littleEndian64(d, 4096 + 144) ? 0 : 4096
            let root = Int(littleEndian64(d, current + 16 + 24 + 48 + 40)) * 4096
            let nodes = ((Int(d[root + 12]) | Int(d[root + 13]) << 8) - 16) / 2
            let node = try #require((0..<nodes).lazy.map { root + (Int(d[root + 16 + 2 * $0]) | Int(d[root + 17 + 2 * $0]) << 8) }.first { d[$0 + 4] == 0x02 })
            d[node + 4] = 0x06
            try d.write(to: url)
        }),
        ("a database record with sorted duplicates", { url in
            var d = try Data(contentsOf: url)
            let current = littleEndian64(d, 144) > littleEndian64(d, 4096 + 144) ? 0 : 4096
            let root = Int(littleEndian64(d, current + 16 + 24 + 48 + 40)) * 4096
            let nodes = ((Int(d[root + 12]) | Int(d[root + 13]) << 8) - 16) / 2
            let node = try #require((0..<nodes).lazy.map { root + (Int(d[root + 16 + 2 * $0]) | Int(d[root + 17 + 2 * $0]) << 8) }.first { d[$0 + 4] == 0x02 })
            let keySize = Int(d[node + 6]) | Int(d[node + 7]) << 8
            d[node + 8 + keySize + 4] |= 0x04
            try d.write(to: url)
        }),
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

    // MARK: Row format version 3 (docs/lmdb-format.md), checked against bytes laid by hand

    @Test("rows hold values in the recorded order with entity numbers, and name nothing; every value ends with its CRC-32")
    func rowBytes() throws {
        let folder = try Folder()
        let url = folder.file("rows.lmdb")
        let store = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: ObjectKey("Person", 5), attributes: ["name": .string("Ann")]),
            ObjectRecord(key: ObjectKey("Pet", 1), attributes: ["name": .string("Rex")], toOne: ["owner": ObjectKey("Person", 5)]),
        ]))
        try store.close()
        try rawTransaction(url) { txn, open in
            // Entities numbered in name order: Car 1, Item 2, Person 3, Pet 4, … Vehicle 10.
            #expect(rawGet(txn, open("meta"), Data("format".utf8)) == sealed("meta", Data("format".utf8), Data([3, 0, 0, 0])))
            #expect(rawGet(txn, open("schema"), Data("Pet".utf8))
                    == sealed("schema", Data("Pet".utf8), Data([4, 1, 4]) + Data("name".utf8) + Data([1, 5]) + Data("owner".utf8) + Data([0])))
            #expect(rawGet(txn, open("schema"), Data("Vehicle".utf8)) == sealed("schema", Data("Vehicle".utf8), Data([10, 1, 6]) + Data("wheels".utf8) + Data([0, 0])))
            // Pet 1: version 1 (zigzag 2), name "Rex" (tag 4), owner Person (3) 5 (zigzag 10).
            #expect(rawGet(txn, open("rows/Pet"), rowKey(1)) == sealed("rows/Pet", rowKey(1), Data([2, 4, 3]) + Data("Rex".utf8) + Data([3, 10])))
            // Person 5: name, age nil, nickname nil; spouse, manager none; pets [Pet 1]; friends, reports empty.
            #expect(rawGet(txn, open("rows/Person"), rowKey(5))
                    == sealed("rows/Person", rowKey(5), Data([2, 4, 3]) + Data("Ann".utf8) + Data([0, 0, 0, 0, 1, 4, 2, 0, 0])))
            return false
        }
    }

    /// A store's `format` record changed behind its back: what it becomes, and the error and words expected.
    static let formatRecords: [(String, [UInt8]?, StoreError.Code, [String])] = [
        ("version 1: no record", nil, .unsupportedFormat, ["version 1", "versions 2 and 3", "earlier"]),
        ("a later version", [4, 0, 0, 0], .unsupportedFormat, ["version 4", "versions 2 and 3", "later"]),
        ("a later version with checksums", [4, 0, 0, 0, 1, 2, 3, 4], .unsupportedFormat, ["version 4", "versions 2 and 3", "later"]),
        ("a record of 2 bytes", [2, 0], .corrupt, ["2 bytes"]),
        ("version 3 with a wrong checksum", [3, 0, 0, 0, 1, 2, 3, 4], .corrupt, ["checksum"]),
    ]

    @Test("a store of another row format version is refused, naming both versions, and left untouched", arguments: 0..<formatRecords.count)
    func formatVersion(_ index: Int) throws {
        let (name, record, code, words) = Self.formatRecords[index]
        let folder = try Folder()
        let url = folder.file("old.lmdb")
        let store = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        try store.bulkInsert([ObjectRecord(key: ObjectKey("Pet", 1), attributes: ["name": .string("Rex")])])
        try store.close()
        try rawTransaction(url) { txn, open in
            if let record {
                rawPut(txn, open("meta"), Data("format".utf8), Data(record))
            } else {
                var key = MDB_val(mv_size: 6, mv_data: UnsafeMutableRawPointer(mutating: ("format" as StaticString).utf8Start))
                #expect(mdb_del(txn, open("meta"), &key, nil) == 0)
            }
            return true
        }
        let before = try Data(contentsOf: url)
        let error = try #require(throws: StoreError.self) { _ = try type.open(at: url, model: StoreConformance.model, options: StoreOptions()) }
        #expect(error.code == code, "\(name)")
        #expect(words.allSatisfy(error.message.contains), "\(name): \(error.message)")
        #expect(try Data(contentsOf: url) == before)
        #expect(try type.readMetadata(at: url).storeUUID != nil, "the metadata stays readable")
    }

    @Test("a store of format version 2 (no checksums) is read and written as version 2, its rows as they are")
    func versionTwoStore() throws {
        let folder = try Folder()
        let url = folder.file("two.lmdb")
        let store = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Person", 1), attributes: ["name": .string("Ann")])]))
        try store.close()
        // What an earlier build wrote: every value without its checksum, and the version 2 record.
        try rawTransaction(url) { txn, open in
            for name in ["meta", "schema", "counters"] + StoreConformance.model.entityNames.map({ "rows/\($0)" }) {
                var dbi: MDB_dbi = 0
                guard mdb_dbi_open(txn, name, 0, &dbi) == 0 else { continue }
                var cursor: OpaquePointer?
                #expect(mdb_cursor_open(txn, dbi, &cursor) == 0)
                var entries: [(Data, Data)] = []
                var k = MDB_val(), v = MDB_val()
                var rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
                while rc == 0 {
                    entries.append((Data(bytes: k.mv_data, count: k.mv_size), Data(bytes: v.mv_data, count: v.mv_size)))
                    rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
                }
                mdb_cursor_close(cursor)
                for (key, value) in entries {
                    #expect(value == sealed(name, key, value.dropLast(4)), "\(name): every value carries its CRC-32")
                    rawPut(txn, dbi, key, key == Data("format".utf8) ? Data([2, 0, 0, 0]) : Data(value.dropLast(4)))
                }
            }
            return true
        }
        let reopened = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        #expect(try reopened.record(for: ObjectKey("Person", 1))?.attributes["name"] == .string("Ann"))
        try reopened.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Person", 2), attributes: ["name": .string("Bo")])]))
        try reopened.close()
        try rawTransaction(url) { txn, open in
            #expect(rawGet(txn, open("meta"), Data("format".utf8)) == Data([2, 0, 0, 0]))
            // Person 2 as version 2 writes it: no checksum after the row.
            #expect(rawGet(txn, open("rows/Person"), rowKey(2)) == Data([2, 4, 2]) + Data("Bo".utf8) + Data([0, 0, 0, 0, 0, 0, 0]))
            return false
        }
        #expect(try type.open(at: url, model: StoreConformance.model, options: StoreOptions(readOnly: true)).fetch(FetchRequest(entity: "Person")).count == 2)
    }

    @Test("a model that lists the same properties in another order reads every value into its place")
    func otherPropertyOrder() throws {
        func model(_ reversed: Bool) throws -> ManagedObjectModel {
            try ManagedObjectModel {
                Entity("Song") {
                    if reversed {
                        Attribute("rating", .double); Attribute("plays", .integer64); Attribute("title", .string)
                        Relationship("next", to: "Song", inverse: "previous"); Relationship("previous", to: "Song", inverse: "next")
                    } else {
                        Attribute("title", .string); Attribute("plays", .integer64); Attribute("rating", .double)
                        Relationship("previous", to: "Song", inverse: "next"); Relationship("next", to: "Song", inverse: "previous")
                    }
                }
            }
        }
        let written = try model(false), reading = try model(true)
        #expect(written.entity(named: "Song")!.layout.attributes.map(\.name) != reading.entity(named: "Song")!.layout.attributes.map(\.name))
        let folder = try Folder()
        let url = folder.file("songs.lmdb")
        let store = try type.open(at: url, model: written, options: StoreOptions())
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: ObjectKey("Song", 1), attributes: ["title": .string("One"), "plays": .integer(3), "rating": .double(4.5)]),
            ObjectRecord(key: ObjectKey("Song", 2), attributes: ["title": .string("Two"), "plays": .integer(-7)], toOne: ["previous": ObjectKey("Song", 1)]),
        ]))
        try store.close()
        let reopened = try type.open(at: url, model: reading, options: StoreOptions())
        defer { try? reopened.close() }
        let one = try #require(try reopened.record(for: ObjectKey("Song", 1)))
        #expect(one.attributes == ["title": .string("One"), "plays": .integer(3), "rating": .double(4.5)])
        #expect(one.toOne == ["next": ObjectKey("Song", 2)])
        let batch = try reopened.scanBatch(entity: "Song", after: nil, limit: 10)
        let layout = batch.layout
        #expect(batch[1, attribute: layout.attributeSlot("title")!] == .string("Two"))
        #expect(batch[1, attribute: layout.attributeSlot("plays")!] == .integer(-7))
        #expect(batch[1, attribute: layout.attributeSlot("rating")!] == nil)
        #expect(batch[1, toOne: layout.toOneSlot("previous")!] == ObjectKey("Song", 1))
        #expect(batch[0, toOne: layout.toOneSlot("next")!] == ObjectKey("Song", 2))
    }

    /// A `schema` record changed behind the store's back: the key, the new value (nil: deleted), the error and words expected.
    static let schemaRecords: [(String, Data?, StoreError.Code, [String])] = [
        ("Pet", Data([4, 1, 4]) + Data("nome".utf8) + Data([1, 5]) + Data("owner".utf8) + Data([0]), .incompatibleModel, ["Pet", "nome"]),
        ("Pet", Data([4, 1, 4]) + Data("name".utf8) + Data([0, 0]), .incompatibleModel, ["Pet", "owner"]),
        ("Pet", nil, .incompatibleModel, ["no entity Pet"]),
        ("Ghost", Data([11, 0, 0, 0]), .incompatibleModel, ["Ghost"]),
        ("Pet", Data([0xff]), .corrupt, ["Pet"]),
        ("Pet", Data([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0]), .corrupt, ["Pet"]),
        ("Pet", Data([3, 1, 4]) + Data("name".utf8) + Data([1, 5]) + Data("owner".utf8) + Data([0]), .corrupt, ["Pet"]),
    ]

    @Test("a schema record that does not fit the model, or is damaged, is refused, naming the entity and property", arguments: 0..<schemaRecords.count)
    func schemaMismatch(_ index: Int) throws {
        let (key, value, code, words) = Self.schemaRecords[index]
        let folder = try Folder()
        let url = folder.file("mismatch.lmdb")
        let store = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        try store.close()
        try rawTransaction(url) { txn, open in
            if let value {
                // With its checksum right: the record is what it says, not damage the checksum catches.
                rawPut(txn, open("schema"), Data(key.utf8), sealed("schema", Data(key.utf8), value))
            } else {
                var k = MDB_val(mv_size: 3, mv_data: UnsafeMutableRawPointer(mutating: ("Pet" as StaticString).utf8Start))
                #expect(mdb_del(txn, open("schema"), &k, nil) == 0)
            }
            return true
        }
        let error = try #require(throws: StoreError.self) { _ = try type.open(at: url, model: StoreConformance.model, options: StoreOptions()) }
        #expect(error.code == code, "\(index)")
        #expect(words.allSatisfy(error.message.contains), "\(index): \(error.message)")
    }

    @Test("a batch insert refuses a key in use in the hierarchy, a value of the wrong type and a target of another entity, writing nothing")
    func batchInsertChecks() throws {
        let folder = try Folder()
        let store = try type.open(at: folder.file("batch.lmdb"), model: StoreConformance.model, options: StoreOptions())
        defer { try? store.close() }
        try store.bulkInsert([ObjectRecord(key: ObjectKey("Car", 3), attributes: ["wheels": .integer(4)])])
        var batch = RecordBatch(entity: StoreConformance.model.entity(named: "Truck")!)
        for pk in [5, 4, 3] as [Int64] { batch[batch.appendRow(primaryKey: pk), attribute: 0] = .integer(6) }
        #expect(throws: StoreError.self) { try store.bulkInsert(batch, checkingReferences: false) }
        var wrong = RecordBatch(entity: StoreConformance.model.entity(named: "Truck")!)
        wrong[wrong.appendRow(primaryKey: 9), attribute: 0] = .string("six")
        #expect(throws: StoreError.self) { try store.bulkInsert(wrong, checkingReferences: false) }
        var misdirected = RecordBatch(entity: StoreConformance.model.entity(named: "Pet")!)
        misdirected[misdirected.appendRow(primaryKey: 1), toOne: 0] = ObjectKey("Car", 3)
        let error = try #require(throws: StoreError.self) { try store.bulkInsert(misdirected, checkingReferences: false) }
        #expect(error.message.contains("Car/3") || error.message.contains("is not a Person"), "\(error.message)")
        #expect(try store.count(FetchRequest(entity: "Pet")) == 0)
        #expect(try store.count(FetchRequest(entity: "Truck")) == 0)
        var fine = RecordBatch(entity: StoreConformance.model.entity(named: "Truck")!)
        for pk in [7, 5, 6] as [Int64] { fine[fine.appendRow(primaryKey: pk), attribute: 0] = .integer(6) }
        try store.bulkInsert(fine, checkingReferences: false)
        #expect(try store.scanBatch(entity: "Truck", after: nil, limit: 10).primaryKeys == [5, 6, 7])
        #expect(try store.lastAllocatedKey(entity: "Truck") == 7)
    }
}

/// The little-endian 64-bit word at `offset`.
private func littleEndian64(_ data: Data, _ offset: Int) -> UInt64 {
    (0..<8).reduce(UInt64(0)) { $0 | UInt64(data[offset + $1]) << (8 * $1) }
}
