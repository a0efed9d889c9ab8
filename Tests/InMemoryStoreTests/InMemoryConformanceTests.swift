import Foundation
import InMemoryStore
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import Testing

@Suite("InMemoryStore conformance")
struct InMemoryConformanceTests {
    static let suite = StoreConformance(type: InMemoryStoreType()) {
        URL(string: "memory://conformance/\(UUID().uuidString)")!
    }

    @Test("contract", arguments: StoreConformance.Check.allCases)
    func contract(_ check: StoreConformance.Check) throws {
        try Self.suite.run(check)
    }

    @Test("named stores are also reachable by file URL, without touching the disk")
    func fileURL() throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "memory-\(UUID().uuidString)")
        let url = folder.appending(path: "cache.store")
        let type = InMemoryStoreType()
        let store = try type.open(at: url, model: StoreConformance.model, options: StoreOptions())
        try store.close()
        #expect(type.storeExists(at: url))
        #expect(!FileManager.default.fileExists(atPath: folder.path))
        try type.destroy(at: url)
        #expect(!type.storeExists(at: url))
    }

    @Test("a thousand anonymous stores in a row, each its own: written and read (their speed is a benchmark's)")
    func manyStores() throws {
        var identifiers: Set<UUID> = []
        for i in 0..<1_000 {
            let store = try InMemoryStore(model: StoreConformance.model)
            let key = ObjectKey("Pet", try store.allocatePrimaryKeys(entity: "Pet", count: 1).lowerBound)
            try store.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["name": .string("pet \(i)")])]))
            #expect(try store.count(FetchRequest(entity: "Pet")) == 1)
            identifiers.insert(store.identifier)
        }
        #expect(identifiers.count == 1_000)
    }
}
