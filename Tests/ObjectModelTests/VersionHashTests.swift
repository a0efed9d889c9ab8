import Crypto
import Foundation
import ObjectModel
import Testing

/// Hashes Apple's Core Data computed, rebuilt here from the facts of
/// `shared/specs/version-hash.md` and `shared/fixtures/hash-vectors`.
@Suite("Version hashes")
struct VersionHashTests {
    static func hex(_ model: ManagedObjectModel, _ entity: String) -> String? {
        model.versionHashes[entity]?.hexString
    }

    @Test("the spec's test vector: Event with an optional Date timeStamp")
    func specVector() throws {
        let model = try ManagedObjectModel { Entity("Event") { Attribute("timeStamp", .date) } }
        #expect(Self.hex(model, "Event") == "5431c046d30e7f32c2cc809958add1e7579ad104a3aa8fc4846e97d7af01cc79")

        let required = try ManagedObjectModel { Entity("Event") { Attribute("timeStamp", .date, optional: false) } }
        let renamed = try ManagedObjectModel { Entity("Event") { Attribute("timestamp", .date) } }
        #expect(Self.hex(required, "Event") != Self.hex(model, "Event"))
        #expect(Self.hex(renamed, "Event") != Self.hex(model, "Event"))
    }

    /// CoreDataPlus SampleModel3 v2 (ed114f8): a non-optional to-one and a uniqueness constraint.
    static func sampleModel3() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Pet", uniquenessConstraints: [["name"]]) {
                Attribute("name", .string, optional: false)
                Relationship("owner", to: "User", inverse: "pet", optional: false)
            }
            Entity("User") {
                Attribute("name", .string, optional: false)
                Attribute("petName", .string)
                Relationship("pet", to: "Pet", inverse: "owner")
            }
        }
    }

    @Test("relationships, optionality and uniqueness constraints")
    func sampleModel3Vector() throws {
        let model = try Self.sampleModel3()
        #expect(Self.hex(model, "Pet") == "f92567b5f861a75b1707f024e0a67d58d8c0b9a85d7609f79a3c88957eb7a616")
        #expect(Self.hex(model, "User") == "6a47cbef0e3f84c2449249fdc83f003d7e514378f8ee9a76a8d4c0ec8bb1b822")
    }

    /// CoreDataPlus SampleModel (7aa3e8e): inheritance, transient attributes,
    /// compound uniqueness constraints, a UUID kept after deletion.
    static func carModel(withTransients: Bool = true) throws -> ManagedObjectModel {
        try ManagedObjectModel(versionIdentifiers: ["1"]) {
            Entity("Car", uniquenessConstraints: [["numberPlate"]]) {
                if withTransients { Attribute("currentDrivingSpeed", .integer64, transient: true, default: .integer(0)) }
                Attribute("maker", .string)
                Attribute("markedForDeletionAsOf", .date)
                Attribute("model", .string)
                Attribute("numberPlate", .string, optional: false)
                Relationship("owner", to: "Person", inverse: "cars")
            }
            Entity("ExpensiveSportCar", parent: "SportCar") {
                Attribute("isLimitedEdition", .boolean, default: .boolean(false))
            }
            Entity("Person", uniquenessConstraints: [["firstName", "lastName"]]) {
                Attribute("firstName", .string)
                Attribute("id", .uuid, optional: false, preservesValueInHistoryOnDeletion: true)
                if withTransients { Attribute("isDriving", .boolean, optional: false, transient: true, default: .boolean(false)) }
                Attribute("lastName", .string)
                Attribute("updatedAt", .date, optional: false)
                Relationship("cars", to: "Car", inverse: "owner", toMany: true)
            }
            Entity("SportCar", parent: "Car") {}
        }
    }

    @Test("inheritance, transient properties and compound constraints")
    func carModelVector() throws {
        let model = try Self.carModel()
        #expect(Self.hex(model, "Car") == "7e503efbf4b63cd93ff729e9675e21c63c65262d85a9889f59a2440af6481b93")
        #expect(Self.hex(model, "ExpensiveSportCar") == "356f10993a2d434ce04d17b0c145c9e574905a5d0e3bd4533a6002985724cbdd")
        #expect(Self.hex(model, "Person") == "164268551b45108ae763aa2ba61ff32d32d32323850987c3e21607c8da44b72b")
        #expect(Self.hex(model, "SportCar") == "722a55b5bbcd51d74876a4dd8f8f7bbde57ddc61cb65a577ec5b0fbe978d7b8c")
        // Transient properties never enter a hash.
        #expect(try Self.carModel(withTransients: false).versionHashes == model.versionHashes)
    }

    @Test("what is not hashed never requires a migration")
    func unhashedDetails() throws {
        let base = try ManagedObjectModel {
            Entity("A") {
                Attribute("n", .integer32)
                Relationship("bs", to: "B", inverse: "a", toMany: true)
            }
            Entity("B") { Relationship("a", to: "A", inverse: "bs") }
        }
        let decorated = try ManagedObjectModel {
            Entity("A", indexes: [FetchIndex(name: "byN", elements: [.init("n")])], renamingIdentifier: "OldA") {
                Attribute("n", .integer32, default: .integer(7), validation: ValidationRules(minValue: .integer(0), maxValue: .integer(9)),
                          renamingIdentifier: "count", userInfo: ["k": "v"])
                Relationship("bs", to: "B", inverse: "a", toMany: true, deleteRule: .cascade)
            }
            Entity("B") { Relationship("a", to: "A", inverse: "bs", deleteRule: .deny) }
        }
        #expect(base.versionHashes == decorated.versionHashes)
        #expect(base.versionChecksum == decorated.versionChecksum)
    }

    @Test("what is hashed changes the hash", arguments: [
        "type", "ordered", "maxCount", "modifier", "entityModifier", "inverse", "abstract", "externalStorage",
    ])
    func hashedDetails(_ change: String) throws {
        func model(_ variant: String?) throws -> ManagedObjectModel {
            try ManagedObjectModel {
                Entity("A", abstract: variant == "abstract", versionHashModifier: variant == "entityModifier" ? "v2" : nil) {
                    Attribute("n", variant == "type" ? .integer64 : .integer32, versionHashModifier: variant == "modifier" ? "x" : nil)
                    Attribute("blob", .binaryData, allowsExternalBinaryDataStorage: variant == "externalStorage")
                    Relationship("bs", to: "B", inverse: variant == "inverse" ? nil : "a", toMany: true,
                                 ordered: variant == "ordered", maxCount: variant == "maxCount" ? 5 : nil)
                }
                Entity("B") { Relationship("a", to: "A", inverse: variant == "inverse" ? nil : "bs") }
            }
        }
        #expect(try model(change).versionHashes["A"] != model(nil).versionHashes["A"])
    }

    @Test("the model checksum is SHA-256 over the entity hashes in name order, base64")
    func checksum() throws {
        let model = try Self.carModel()
        var bytes = Data()
        for name in model.entityNames { bytes.append(model.versionHashes[name]!) }
        #expect(model.versionChecksum == Data(SHA256.hash(data: bytes)).base64EncodedString())
    }

    @Test("a relationship that is its own inverse does not hash its inverse name")
    func selfInverse() throws {
        let model = try ManagedObjectModel { Entity("P") { Relationship("spouse", to: "P", inverse: "spouse") } }
        let noInverse = try ManagedObjectModel { Entity("P") { Relationship("spouse", to: "P") } }
        #expect(model.versionHashes == noInverse.versionHashes)
    }
}
