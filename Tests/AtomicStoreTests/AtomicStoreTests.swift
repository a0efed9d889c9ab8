import AtomicStore
import Crypto
import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import Synchronization
import Testing

@Suite("AtomicStore conformance")
struct AtomicConformanceTests {
    static let suite = StoreConformance(type: AtomicStoreType()) { try StoreConformance.temporaryLocation(extension: "store") }

    @Test("contract", arguments: StoreConformance.Check.allCases)
    func contract(_ check: StoreConformance.Check) throws {
        try Self.suite.run(check)
    }
}

typealias Folder = TemporaryFolder

extension TemporaryFolder {
    var store: URL { file("data.store") }
}

/// Writes a store with a few objects and returns its bytes.
func makeStore(at url: URL, people: Int = 3) throws -> Data {
    let store = try AtomicStoreType().open(at: url, model: StoreConformance.model, options: StoreOptions())
    let keys = try store.allocatePrimaryKeys(entity: "Person", count: people)
    try store.save(ChangeSet(inserted: keys.map { ObjectRecord(key: ObjectKey("Person", $0), attributes: ["name": .string("p\($0)"), "age": .integer($0)]) }))
    try store.close()
    return try Data(contentsOf: url)
}

/// A file in the documented layout around `body`: header with the right length, checksum after.
func frame(_ body: Data, version: UInt16 = 1, flags: UInt16 = 0) -> Data {
    var data = Data("OBJSTORE".utf8)
    withUnsafeBytes(of: version.littleEndian) { data.append(contentsOf: $0) }
    withUnsafeBytes(of: flags.littleEndian) { data.append(contentsOf: $0) }
    data.append(contentsOf: [0, 0, 0, 0])
    let total = UInt64(24 + body.count + 32)
    withUnsafeBytes(of: total.littleEndian) { data.append(contentsOf: $0) }
    data.append(body)
    data.append(Data(SHA256.hash(data: data)))
    return data
}

func varint(_ v: UInt64) -> Data {
    var v = v, out = Data()
    while v >= 0x80 { out.append(UInt8(v & 0x7f) | 0x80); v >>= 7 }
    out.append(UInt8(v))
    return out
}

func string(_ s: String) -> Data { varint(UInt64(s.utf8.count)) + Data(s.utf8) }

func metadataBlock() throws -> Data {
    let metadata = try StoreMetadata(storeType: "atomic", model: StoreConformance.model)
    let plist = try PropertyListValue.binaryPropertyList(metadata.values)
    return varint(UInt64(plist.count)) + plist
}

@Suite("AtomicStore files")
struct AtomicFileTests {
    /// Damaged files: each must give a typed error naming the file, leave the file as it was, and create nothing.
    static let damages: [(String, @Sendable (Data) throws -> Data)] = [
        ("empty file", { _ in Data() }),
        ("wrong magic", { var d = $0; d[0] = UInt8(ascii: "X"); return d }),
        ("unknown format version", { var d = $0; d[8] = 9; return d }),
        ("truncated by one byte", { $0.dropLast() }),
        ("truncated inside the header", { $0.prefix(10) }),
        ("one byte changed in the body", { var d = $0; d[40] ^= 0x01; return d }),
        ("checksum changed", { var d = $0; d[d.count - 1] ^= 0xff; return d }),
        ("garbage appended", { $0 + Data([1, 2, 3]) }),
        ("length field says more", { var d = $0; d[16] &+= 1; return d }),
        ("a text file", { _ in Data("hello, I am not a store\n".utf8) }),
        ("absurd count behind a valid checksum", { _ in
            frame(try metadataBlock() + varint(1) + string("Person") + varint(1 << 40)) }),
        ("length past the end behind a valid checksum", { _ in
            frame(varint(1 << 50) + Data([1, 2, 3])) }),
        ("unknown value tag behind a valid checksum", { _ in
            frame(try metadataBlock() + varint(1) + string("Person") + varint(0) + varint(1) + varint(0)
                  + varint(1) + string("name") + varint(0) + varint(1) + varint(2) + varint(2) + Data([99])) }),
        ("a string that is not UTF-8 behind a valid checksum", { _ in
            frame(try metadataBlock() + varint(1) + string("Person") + varint(0) + varint(1) + varint(0)
                  + varint(1) + string("name") + varint(0) + varint(1) + varint(2) + varint(5) + Data([4, 3, 0x61, 0xC3, 0x28])) }),
        ("entity index out of range behind a valid checksum", { _ in
            frame(try metadataBlock() + varint(1) + string("Person") + varint(1) + varint(7) + varint(2)) }),
        ("metadata that is not a property list", { _ in frame(varint(4) + Data("junk".utf8)) }),
        ("unexpected bytes after the last table", { _ in
            frame(try metadataBlock() + varint(0) + varint(0) + varint(0) + Data([0])) }),
        ("a varint longer than ten bytes", { _ in frame(Data(repeating: 0xff, count: 12)) }),
    ]

    @Test("a damaged file is a typed error, left untouched", arguments: 0..<damages.count)
    func damaged(_ index: Int) throws {
        let (name, damage) = Self.damages[index]
        let folder = try Folder()
        let good = try makeStore(at: folder.store)
        let bad = try damage(good)
        try bad.write(to: folder.store)
        // Damage behind a valid checksum after intact metadata is in the rows, which opening checks;
        // reading the metadata checks the header, the length, the checksum and the metadata.
        let inRows = name.hasSuffix("behind a valid checksum") && !name.hasPrefix("length past the end") || name.hasPrefix("unexpected bytes")
        for attempt in ["open", "open read-only", "readMetadata", "writeMetadata"] {
            if attempt == "readMetadata", inRows {
                #expect(try AtomicStoreType().readMetadata(at: folder.store).storeType == "atomic", "\(name): the metadata reads")
                continue
            }
            do {
                switch attempt {
                case "open": _ = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions())
                case "open read-only":
                    _ = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions(readOnly: true))
                case "readMetadata": _ = try AtomicStoreType().readMetadata(at: folder.store)
                default: try AtomicStoreType().writeMetadata(StoreMetadata(), at: folder.store)
                }
                Issue.record("\(name): \(attempt) accepted a damaged file")
            } catch let error as StoreError {
                #expect(error.code == .corrupt, "\(name): \(error)")
                #expect(error.url == folder.store)
                #expect(error.message.contains("offset"), "\(name): \(error.message)")
            }
            #expect(try Data(contentsOf: folder.store) == bad, "\(name): the file changed")
            #expect(folder.files == ["data.store", "data.store-lock"], "\(name): \(folder.files)")
        }
    }

    /// A file system that fails one chosen call with one errno.
    final class FailingFileSystem: AtomicFileSystem {
        let real = SystemFileSystem()
        let failing: String
        let code: Int32
        let armed = Atomic<Bool>(false)

        init(failing: String, code: Int32) {
            self.failing = failing
            self.code = code
        }

        private func check(_ call: String, _ path: String) throws {
            if armed.load(ordering: .relaxed) && call == failing { throw FileSystemError(call: call, path: path, errno: code) }
        }
        func createFile(_ path: String, mode: UInt32?) throws -> Int32 { try check("open", path); return try real.createFile(path, mode: mode) }
        func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
            if armed.load(ordering: .relaxed) && failing == "write-half" {
                try real.writeAll(fd, UnsafeRawBufferPointer(rebasing: bytes.prefix(bytes.count / 2)), path: path)
                throw FileSystemError(call: "write", path: path, errno: code)
            }
            try check("write", path)
            try real.writeAll(fd, bytes, path: path)
        }
        func synchronize(_ fd: Int32, path: String) throws { try check("fsync", path); try real.synchronize(fd, path: path) }
        func closeFile(_ fd: Int32, path: String) throws { try check("close", path); try real.closeFile(fd, path: path) }
        func move(_ from: String, _ to: String) throws { try check("rename", to); try real.move(from, to) }
        func synchronizeDirectory(_ path: String) throws { try real.synchronizeDirectory(path) }
        func remove(_ path: String) throws { try real.remove(path) }
    }

    @Test("a failing write, fsync or rename leaves the old store whole", arguments: [
        ("open", EIO), ("write", ENOSPC), ("write-half", ENOSPC), ("write", EIO), ("fsync", EIO), ("close", EIO), ("rename", EIO),
    ])
    func faults(_ call: String, _ code: Int32) throws {
        let folder = try Folder()
        let before = try makeStore(at: folder.store)
        let fileSystem = FailingFileSystem(failing: call, code: code)
        let type = AtomicStoreType(fileSystem: fileSystem)
        let store = try type.open(at: folder.store, model: StoreConformance.model, options: StoreOptions())
        fileSystem.armed.store(true, ordering: .relaxed)
        let key = ObjectKey("Person", try store.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound)
        do {
            try store.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["name": .string("lost")])]))
            Issue.record("a save whose \(call) failed succeeded")
        } catch let error as StoreError {
            #expect(error.code == .io)
            #expect(error.message.contains(String(cString: strerror(code))), "\(error.message)")
        }
        #expect(try Data(contentsOf: folder.store) == before, "the old store changed")
        #expect(folder.files == ["data.store", "data.store-lock"], "\(folder.files)")
        #expect(try store.record(for: key) == nil, "the failed save is not visible")
        #expect(try store.count(FetchRequest(entity: "Person")) == 3)
        // Once the disk recovers, the next save works and holds everything.
        fileSystem.armed.store(false, ordering: .relaxed)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["name": .string("kept")])]))
        try store.close()
        let reopened = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions())
        #expect(try reopened.count(FetchRequest(entity: "Person")) == 4)
    }

    @Test("the file is compact: close to the size of the raw values")
    func compact() throws {
        let folder = try Folder()
        let store = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions())
        let keys = try store.allocatePrimaryKeys(entity: "Item", count: 2_000)
        var raw = 0
        var records: [ObjectRecord] = []
        for pk in keys {
            let name = "item number \(pk)"
            let payload = Data(repeating: UInt8(pk % 256), count: 64)
            raw += name.utf8.count + payload.count + 8 + 8
            records.append(ObjectRecord(key: ObjectKey("Item", pk), attributes: [
                "name": .string(name), "data": .data(payload), "i64": .integer(pk * 1_000_003), "double": .double(Double(pk) / 7),
            ]))
        }
        try store.bulkInsert(records)
        try store.close()
        let size = try Data(contentsOf: folder.store).count
        let metadataOverhead = try metadataBlock().count
        // Tags, varint lengths and the row header cost a few bytes a row.
        #expect(size - metadataOverhead < raw + raw / 5, "file \(size) bytes for \(raw) bytes of values")
    }

    @Test("rows read from the file stay encoded; changes over them read, scan and save like any others")
    func packedRows() throws {
        let folder = try Folder()
        _ = try makeStore(at: folder.store, people: 5)
        func people(_ store: any PersistentStore) throws -> [Int64: [String: Value]] {
            let records = try store.fetch(FetchRequest(entity: "Person"))
            let batch = try store.scanBatch(entity: "Person", after: nil, limit: 100)
            #expect(batch.records == records, "the batch scan gives the records")
            return Dictionary(uniqueKeysWithValues: records.map { ($0.key.primaryKey, $0.attributes) })
        }
        var store = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions())
        #expect(try people(store).count == 5)
        // An update, a deletion, an insertion, and a value in a column no row had (the table is encoded anew).
        let new = try store.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound
        try store.save(ChangeSet(
            inserted: [ObjectRecord(key: ObjectKey("Person", new), attributes: ["name": .string("p\(new)")])],
            updated: [ObjectUpdate(key: ObjectKey("Person", 2), attributes: ["age": .integer(99)]),
                      ObjectUpdate(key: ObjectKey("Person", 4), attributes: ["nickname": .string("four")])],
            deleted: [ObjectDeletion(key: ObjectKey("Person", 3))]))
        let expected: [Int64: [String: Value]] = [
            1: ["name": .string("p1"), "age": .integer(1)], 2: ["name": .string("p2"), "age": .integer(99)],
            4: ["name": .string("p4"), "age": .integer(4), "nickname": .string("four")], 5: ["name": .string("p5"), "age": .integer(5)],
            new: ["name": .string("p\(new)")],
        ]
        #expect(try people(store) == expected)
        #expect(try store.count(FetchRequest(entity: "Person")) == 5)
        try store.close()
        store = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions())
        #expect(try people(store) == expected)
        // A change that keeps the columns copies the other rows as they are.
        try store.save(ChangeSet(updated: [ObjectUpdate(key: ObjectKey("Person", 5), attributes: ["age": .integer(50)])]))
        try store.close()
        store = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: StoreOptions(readOnly: true))
        var changed = expected
        changed[5]!["age"] = .integer(50)
        #expect(try people(store) == changed)
        try store.close()
    }

    @Test("metadata, then open: the open sees the file as it is then, whether it was replaced, rewritten in place or damaged in between")
    func metadataThenOpen() throws {
        let folder = try Folder()
        _ = try makeStore(at: folder.store, people: 2)
        func names(_ options: StoreOptions = StoreOptions(readOnly: true)) throws -> [String] {
            let store = try AtomicStoreType().open(at: folder.store, model: StoreConformance.model, options: options)
            defer { try? store.close() }
            return try store.fetch(FetchRequest(entity: "Person")).compactMap { if case .string(let name)? = $0.attributes["name"] { name } else { nil } }.sorted()
        }
        // Unchanged: the open takes what the metadata read.
        _ = try AtomicStoreType().readMetadata(at: folder.store)
        #expect(try names() == ["p1", "p2"])
        // Replaced (renamed over, as a save of another process does) between the two.
        let other = try Folder()
        let original = try Data(contentsOf: folder.store)
        _ = try makeStore(at: other.store, people: 3)
        _ = try AtomicStoreType().readMetadata(at: folder.store)
        #expect(rename(other.store.path, folder.store.path) == 0)
        #expect(try names() == ["p1", "p2", "p3"])
        // Rewritten in place (not what a save does): read again, and found damaged.
        try original.write(to: folder.store)
        _ = try AtomicStoreType().readMetadata(at: folder.store)
        let handle = try FileHandle(forWritingTo: folder.store)
        try handle.write(contentsOf: Data(repeating: 0, count: 64))
        try handle.close()
        #expect(throws: StoreError.self) { try names() }
        // Another store opened after the metadata of this one takes nothing of it.
        try original.write(to: folder.store)
        _ = try makeStore(at: other.store, people: 4)
        _ = try AtomicStoreType().readMetadata(at: folder.store)
        let another = try AtomicStoreType().open(at: other.store, model: StoreConformance.model, options: StoreOptions(readOnly: true))
        #expect(try another.fetch(FetchRequest(entity: "Person")).count == 4)
        try another.close()
        #expect(try names(StoreOptions()) == ["p1", "p2"])
    }

    @Test("the type is recognised by its header")
    func detection() throws {
        let folder = try Folder()
        let registry = StoreTypeRegistry()
        AtomicStore.register(in: registry)
        _ = try makeStore(at: folder.store)
        #expect(registry.detectType(at: folder.store)?.name == "atomic")
        try Data("SQLite format 3\0".utf8).write(to: folder.url.appending(path: "other"))
        #expect(registry.detectType(at: folder.url.appending(path: "other")) == nil)
    }
}
