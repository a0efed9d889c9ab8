import AtomicStore
import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import Testing

/// One writer at a time, files kept as their owner set them.
@Suite("AtomicStore writers")
struct AtomicWriterTests {
    let type = AtomicStoreType()

    func open(_ url: URL, readOnly: Bool = false) throws -> any PersistentStore {
        try type.open(at: url, model: StoreConformance.model, options: StoreOptions(readOnly: readOnly, createIfMissing: !readOnly))
    }

    func mode(_ url: URL) -> Int { ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.posixPermissions] as? NSNumber)?.intValue ?? -1 }

    @Test("a second writer waits, then is told the store is busy; readers are never blocked")
    func oneWriter() throws {
        let folder = try Folder()
        _ = try makeStore(at: folder.store)
        let writer = try open(folder.store)
        let started = Date()
        let error = try #require(throws: StoreError.self) { _ = try open(folder.store) }
        #expect(error.code == .busy)
        #expect(error.url == folder.store)
        #expect(Date().timeIntervalSince(started) >= 4, "it waited before giving up")
        let reader = try open(folder.store, readOnly: true)
        #expect(try reader.count(FetchRequest(entity: "Person")) == 3)
        try reader.close()
        try writer.close()
        let next = try open(folder.store)
        try next.close()
    }

    @Test("a save keeps the file's mode; a file its owner may not write is not opened for writing")
    func modes() throws {
        let folder = try Folder()
        _ = try makeStore(at: folder.store)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: folder.store.path)
        let store = try open(folder.store)
        let key = ObjectKey("Person", try store.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["name": .string("kept private")])]))
        try store.close()
        #expect(mode(folder.store) == 0o600)

        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: folder.store.path)
        let before = try Data(contentsOf: folder.store)
        let error = try #require(throws: StoreError.self) { _ = try open(folder.store) }
        #expect(error.code == .readOnly, "\(error)")
        #expect(try open(folder.store, readOnly: true).count(FetchRequest(entity: "Person")) == 4)
        #expect(try Data(contentsOf: folder.store) == before)
        #expect(mode(folder.store) == 0o444)
    }

    @Test("a store reached through a link: saves replace the real file, the link stays a link")
    func symbolicLink() throws {
        let folder = try Folder()
        let real = folder.file("real.store"), link = folder.file("link.store")
        _ = try makeStore(at: real)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        let store = try open(link)
        let key = ObjectKey("Person", try store.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["name": .string("through the link")])]))
        try store.close()
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == real.path)
        #expect(try open(real, readOnly: true).count(FetchRequest(entity: "Person")) == 4)
        // One lock for both spellings: a writer through the link excludes one through the real path.
        let viaLink = try open(link)
        #expect(throws: StoreError.self) { _ = try open(real) }
        try viaLink.close()
    }

    @Test("a temporary file a killed save left is removed by the next writer")
    func staleTemporary() throws {
        let folder = try Folder()
        _ = try makeStore(at: folder.store)
        try Data("half a save".utf8).write(to: folder.file("data.store-tmp-0B6E2F9A-0000-4000-8000-000000000000"))
        try Data("an older one".utf8).write(to: folder.file("data.store-tmp"))
        let reader = try open(folder.store, readOnly: true)
        try reader.close()
        #expect(folder.files.count == 4, "a reader removes nothing: \(folder.files)")
        try open(folder.store).close()
        #expect(folder.files == ["data.store", "data.store-lock"])
        try type.destroy(at: folder.store)
        #expect(folder.files.isEmpty)
    }
}
