@testable import AtomicStore
import Crypto
import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import StoreToolkit
import Testing

/// A store opened read-only reads its rows from the file when they are needed
/// (``AtomicFormat/decode(file:chunkSize:)``): checked against decoding the whole file in memory,
/// for windows smaller than a row and larger than the file, and against the file changing under it.
@Suite("AtomicStore rows read from the file")
struct AtomicFileRowsTests {
    /// A store with five tables, a row larger than most windows below, history, and an ordered
    /// list with order keys of its own (the file's order-keys section).
    static func richStore(at url: URL) throws -> Data {
        let store = try AtomicStoreType().open(at: url, model: StoreConformance.model, options: StoreOptions())
        let people = Array(try store.allocatePrimaryKeys(entity: "Person", count: 30))
        let pets = Array(try store.allocatePrimaryKeys(entity: "Pet", count: 20))
        let tracks = Array(try store.allocatePrimaryKeys(entity: "Track", count: 12))
        let list = try store.allocatePrimaryKeys(entity: "Playlist", count: 1).lowerBound
        let item = try store.allocatePrimaryKeys(entity: "Item", count: 1).lowerBound
        var records = people.map { pk in
            ObjectRecord(key: ObjectKey("Person", pk), attributes: ["name": .string("person \(pk) ✓"), "age": .integer(pk)],
                         toMany: ["pets": pets.filter { $0 % 30 == pk % 30 }.map { ObjectKey("Pet", $0) }])
        }
        records += pets.map { ObjectRecord(key: ObjectKey("Pet", $0), attributes: ["name": .string("pet \($0)")], toOne: ["owner": ObjectKey("Person", $0 % 30 == 0 ? 30 : $0 % 30)]) }
        records += tracks.map { ObjectRecord(key: ObjectKey("Track", $0), attributes: ["title": .string("t\($0)")], toOne: ["playlist": ObjectKey("Playlist", list)]) }
        records.append(ObjectRecord(key: ObjectKey("Playlist", list), attributes: ["name": .string("mix")],
                                    toMany: ["tracks": tracks.reversed().map { ObjectKey("Track", $0) }],
                                    orderKeys: ["tracks": tracks.map { $0 * 4_096 }]))
        records.append(ObjectRecord(key: ObjectKey("Item", item), attributes: ["data": .data(Data((0..<5_000).map { UInt8($0 % 251) })),
                                                                                "double": .double(-0.0), "uuid": .uuid(UUID())]))
        try store.save(ChangeSet(inserted: records))
        // History of several transactions, which windows may cut anywhere.
        for pk in people {
            try store.save(ChangeSet(updated: [ObjectUpdate(key: ObjectKey("Person", pk), attributes: ["nickname": .string("n\(pk)")])]))
        }
        try store.close()
        return try Data(contentsOf: url)
    }

    /// Every table's keys, rows and order keys, as the tables give them.
    static func contents(_ tables: RecordTables) throws -> [String] {
        try tables.tables.keys.sorted().flatMap { entity in
            let table = tables.tables[entity]!
            return try table.order.map { pk in
                guard let row = try table.row(pk) else { return "\(entity)/\(pk): none" }
                func sorted<V>(_ values: [String: V]) -> String { values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") }
                return "\(entity)/\(pk) v\(row.version): \(sorted(row.attributes)) \(sorted(row.relationships)) \(sorted(row.orderKeys))"
            }
        } + ["history \(tables.lastHistoryToken) \(tables.history.map(\.token))", "keys \(tables.lastKey.sorted { $0.key < $1.key })"]
    }

    @Test("windows of 1 byte to past the file read the tables the whole file gives",
          arguments: [1, 2, 7, 64, 1_000, 4_999, 1 << 20])
    func windows(_ chunkSize: Int) throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.richStore(at: folder.store)
        let whole = try AtomicFormat.decode(Array(bytes), file: folder.store.path)
        let read = try AtomicFormat.decode(file: folder.store.path, chunkSize: chunkSize)
        #expect(bytes[10] & 3 == 3 && whole.history.count == 31, "the file has history of 31 transactions and order keys")
        #expect(try Self.contents(read) == Self.contents(whole))
        #expect(try Self.contents(read).contains { $0.contains("Playlist/1") && $0.contains("4096") }, "the order keys are read")
        // The rows are not held: only their keys and offsets.
        #expect(read.tables.values.allSatisfy { $0.packed.map { $0.bytes.isEmpty && $0.source != nil } ?? true })
    }

    @Test("new metadata written over rows read from the file: the rows, history and order keys are the file's")
    func metadataOverFileRows() throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.richStore(at: folder.store)
        let before = try AtomicFormat.decode(Array(bytes), file: folder.store.path)
        var metadata = before.metadata
        metadata.values["note"] = .string("kept")
        try AtomicStoreType().writeMetadata(metadata, at: folder.store)
        let after = try AtomicFormat.decode(Array(try Data(contentsOf: folder.store)), file: folder.store.path)
        #expect(try Self.contents(after) == Self.contents(before))
        #expect(after.metadata.values["note"] == .string("kept"))
    }

    /// The rich store with byte `offset` changed and the checksum made right again: damage the
    /// checksum cannot see, which the decoding itself must find.
    static func damaged(_ bytes: Data, at offset: Int) -> Data {
        var body = bytes.dropLast(32)
        body[offset] ^= 0x5a
        return body + Data(SHA256.hash(data: body))
    }

    @Test("damage behind a valid checksum, at every 13th byte after the header: the same error read in windows as read whole")
    func damage() throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.richStore(at: folder.store)
        var refused = 0
        for offset in stride(from: 24, to: bytes.count - 32, by: 13) {
            let bad = Self.damaged(bytes, at: offset)
            try bad.write(to: folder.store)
            var expected: String?
            do { _ = try AtomicFormat.decode(Array(bad), file: folder.store.path) } catch let error as StoreError { expected = error.message }
            for chunkSize in [5, 333] {
                var got: String?
                do { _ = try AtomicFormat.decode(file: folder.store.path, chunkSize: chunkSize) } catch let error as StoreError { got = error.message }
                #expect(got == expected, "byte \(offset), windows of \(chunkSize)")
            }
            if expected != nil { refused += 1 }
        }
        #expect(refused > 30, "most damage is found")
    }

    @Test("a reader keeps reading the file it opened when a writer replaces it; a file cut short or written in place is an error, not a crash or a mix")
    func fileChangesUnderTheReader() throws {
        let folder = try TemporaryFolder()
        _ = try Self.richStore(at: folder.store)
        let reader = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions(readOnly: true))
        let before = try reader.fetch(FetchRequest(entity: "Person")).map { $0.attributes["name"] }
        let writer = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions())
        try writer.save(ChangeSet(updated: (1...30).map { ObjectUpdate(key: ObjectKey("Person", $0), attributes: ["name": .string("renamed")]) }))
        try writer.close()
        #expect(try reader.fetch(FetchRequest(entity: "Person")).map { $0.attributes["name"] } == before, "the reader's snapshot")
        try reader.close()

        let cut = try Self.fetchError(folder) { url in
            let handle = try FileHandle(forWritingTo: url)
            try handle.truncate(atOffset: 100)
            try handle.close()
        }
        #expect(cut?.code == .storeReplaced && cut?.message.contains("cut short (100 bytes") == true, "\(String(describing: cut))")
        // Written in place, its size kept: refused too, never rows of two versions. The modification
        // time moves with the clock's tick: one that differs for certain is set.
        let written = try Self.fetchError(folder) { url in
            try Self.overwriteByte(at: url)
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: url.path)
        }
        #expect(written?.code == .storeReplaced && written?.message.contains("written in place") == true, "\(String(describing: written))")
        // Written with its modification time set back as it was: the status-change time tells.
        let setBack = try Self.fetchError(folder) { url in
            var info = stat()
            #expect(stat(url.path, &info) == 0)
            try Self.overwriteByte(at: url)
            // To the nanosecond, as `touch -r` sets it (a `Date` would round it).
            let times = [info.st_atim, info.st_mtim]
            #expect(utimensat(AT_FDCWD, url.path, times, 0) == 0)
        }
        #expect(setBack?.code == .storeReplaced && setBack?.message.contains("time set back") == true, "\(String(describing: setBack))")
    }

    /// What the first fetch of a read-only store of 50 people throws when `change` changed its file
    /// in place after the open (which reads no row of it: no order keys, so none is in hand).
    static func fetchError(_ folder: TemporaryFolder, after change: (URL) throws -> Void) throws -> StoreError? {
        try? FileManager.default.removeItem(at: folder.store)
        _ = try makeStore(at: folder.store, people: 50)
        let store = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions(readOnly: true))
        defer { try? store.close() }
        try change(folder.store)
        return #expect(throws: StoreError.self) { _ = try store.fetch(FetchRequest(entity: "Person")) }
    }

    /// Byte 200 of the file at `url` made an `A`, in place.
    static func overwriteByte(at url: URL) throws {
        let handle = try FileHandle(forWritingTo: url)
        try handle.seek(toOffset: 200)
        try handle.write(contentsOf: Data([0x41]))
        try handle.close()
    }
}
