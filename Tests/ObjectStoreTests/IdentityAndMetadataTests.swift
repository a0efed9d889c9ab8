import Foundation
import ObjectModel
import ObjectStore
import Testing

@Suite("Object IDs and metadata")
struct IdentityAndMetadataTests {
    @Test("object ID URIs round-trip")
    func uri() throws {
        let store = UUID(uuidString: "0B0B5A9C-2C41-4B1B-9B7E-8F3C1D2E3F40")!
        let id = ObjectID(store: store, entity: "Person", primaryKey: 42)
        #expect(id.uri.absoluteString == "x-objectstore://0B0B5A9C-2C41-4B1B-9B7E-8F3C1D2E3F40/Person/p42")
        #expect(ObjectID(uri: id.uri) == id)
        for bad in ["x-objectstore://nope/Person/p1", "x-coredata://0B0B5A9C-2C41-4B1B-9B7E-8F3C1D2E3F40/Person/p1",
                    "x-objectstore://0B0B5A9C-2C41-4B1B-9B7E-8F3C1D2E3F40/Person/1",
                    "x-objectstore://0B0B5A9C-2C41-4B1B-9B7E-8F3C1D2E3F40/Person"] {
            #expect(ObjectID(uri: URL(string: bad)!) == nil, "\(bad)")
        }
    }

    @Test("metadata survives a binary property list, every kind of value")
    func binaryPlist() throws {
        let model = try ManagedObjectModel { Entity("Event") { Attribute("timeStamp", .date) } }
        var metadata = try StoreMetadata(storeType: "sqlite", model: model)
        metadata["custom.bool"] = .boolean(false)
        metadata["custom.int"] = .integer(Int64.max)
        metadata["custom.real"] = .real(0.1)
        metadata["custom.date"] = .date(Date(timeIntervalSinceReferenceDate: 3600))
        metadata["custom.nested"] = .dictionary(["list": .array([.integer(1), .string("two"), .boolean(true)])])
        let data = try PropertyListValue.binaryPropertyList(metadata.values)
        #expect(data.starts(with: Data("bplist00".utf8)))
        let decoded = StoreMetadata(try #require(PropertyListValue.decodeDictionary(data)))
        #expect(decoded == metadata)
        #expect(decoded.versionHashes["Event"]?.hexString == "5431c046d30e7f32c2cc809958add1e7579ad104a3aa8fc4846e97d7af01cc79")
        #expect(try decoded.embeddedModel() == model)
        #expect(decoded.compatibility(with: model).isCompatible)
        #expect(PropertyListValue.decodeDictionary(Data("not a plist".utf8)) == nil)
    }

    @Test("compatibility names changed entities and those only one side has")
    func compatibility() throws {
        let a = try ManagedObjectModel {
            Entity("Kept") { Attribute("x", .string) }
            Entity("Changed") { Attribute("x", .string) }
            Entity("Gone") {}
        }
        let b = try ManagedObjectModel {
            Entity("Kept") { Attribute("x", .string) }
            Entity("Changed") { Attribute("x", .integer16) }
            Entity("New") {}
        }
        let result = try StoreMetadata(storeType: "memory", model: a).compatibility(with: b)
        #expect(!result.isCompatible)
        #expect(result.changedEntities == ["Changed"])
        #expect(result.onlyInStore == ["Gone"])
        #expect(result.onlyInModel == ["New"])
        #expect(result.description.contains("Changed"))
    }
}
