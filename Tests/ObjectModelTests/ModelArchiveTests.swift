import Foundation
@testable import ObjectModel
import TestSupport
import Testing

/// The models Core Data stores carry (Z_MODELCACHE) and compiled models (.mom, .momd).
@Suite struct ModelArchiveTests {
    // MARK: Real stores: Apple's blobs against Apple's hashes

    @Test("every real store's model cache decodes to the hashes Core Data wrote beside it", arguments: ModelCacheFixtures.names)
    func realCacheHashes(name: String) throws {
        let model = try ModelArchive.decodeModelCache(try ModelCacheFixtures.blob(name))
        let expected = try ModelCacheFixtures.expectedHashes(name)
        #expect(!expected.isEmpty)
        #expect(model.versionHashes == expected)
    }

    @Test("the fixture folder holds exactly the listed blobs")
    func fixtureList() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: ModelCacheFixtures.directory.path).filter { $0.hasSuffix(".deflate") }
        #expect(files.map { String($0.dropLast(".deflate".count)) }.sorted() == ModelCacheFixtures.names.sorted())
    }

    @Test("what the hash does not see is decoded too: delete rules, defaults, indexes, constraints, renaming, flags")
    func unhashedDetails() throws {
        func model(_ name: String) throws -> ManagedObjectModel { try ModelArchive.decodeModelCache(try ModelCacheFixtures.blob(name)) }
        func entity(_ model: ManagedObjectModel, _ name: String) throws -> Entity { try #require(model.entities.first { $0.name == name }) }

        let v1 = try model("coredataplus-samplemodel-v1")
        #expect(v1.versionIdentifiers == ["1"])
        let car = try entity(v1, "Car")
        #expect(car.uniquenessConstraints == [["numberPlate"]])
        #expect(car.representedClassName == "Car")
        #expect(car.attributes.map(\.name) == ["color", "currentDrivingSpeed", "maker", "markedForDeletionAsOf", "model", "numberPlate"])
        #expect(car.attributes.first { $0.name == "color" }?.valueTransformerName == "ColorTransformer")
        let speed = try #require(car.attributes.first { $0.name == "currentDrivingSpeed" })
        #expect(speed.isTransient && speed.isOptional && speed.type == .integer64 && speed.defaultValue == .integer(0))
        #expect(car.attributes.first { $0.name == "numberPlate" }?.isOptional == false)
        // Sub-entities archive their parent's properties again; only their own are theirs.
        let sport = try entity(v1, "SportCar")
        #expect(sport.parent == "Car" && sport.attributes.isEmpty && sport.relationships.isEmpty)
        let expensive = try entity(v1, "ExpensiveSportCar")
        #expect(expensive.parent == "SportCar" && expensive.attributes.map(\.name) == ["isLimitedEdition"])
        #expect(expensive.attributes.first?.defaultValue == .boolean(false))
        let person = try entity(v1, "Person")
        #expect(person.uniquenessConstraints == [["firstName", "lastName"]])
        #expect(person.attributes.first { $0.name == "id" }?.preservesValueInHistoryOnDeletion == true)
        let cars = try #require(person.relationships.first { $0.name == "cars" })
        #expect(cars.destination == "Car" && cars.inverse == "owner" && cars.isToMany && cars.deleteRule == .nullify)

        let v2 = try model("coredataplus-samplemodel-v2")
        #expect(try entity(v2, "LuxuryCar").renamingIdentifier == "ExpensiveSportCar")
        #expect(try entity(v2, "Car").indexes == [FetchIndex(name: "byMakerAndNumberPlate", elements: [.init("maker"), .init("numberPlate")])])

        let revised = try model("wibosco-revised-v3")
        let sections = try #require(try entity(revised, "Post").relationships.first { $0.name == "sections" })
        #expect(sections.deleteRule == .cascade && sections.isToMany && !sections.isOptional)
        #expect(try entity(revised, "Section").attributes.first { $0.name == "index" }?.type == .integer16)

        let bookmarks = try model("ddg-bookmarks-v5")
        let bookmark = try entity(bookmarks, "BookmarkEntity")
        let children = try #require(bookmark.relationships.first { $0.name == "children" })
        #expect(children.isOrdered && children.deleteRule == .cascade && children.inverse == "parent")
        #expect(bookmark.relationships.first { $0.name == "favoriteFolders" }?.renamingIdentifier == "favoriteFolder")
        #expect(bookmark.attributes.first { $0.name == "uuid" }?.versionHashModifier == "3")
        #expect(Set(bookmark.indexes.map(\.name)) == ["isPendingDeletion", "byUUID", "byURL", "byIsPendingDeletion"])

        let cart = try model("cartkit-v1")
        let decimals = cart.entities.flatMap(\.attributes).filter { $0.type == .decimal }
        #expect(!decimals.isEmpty)
        #expect(decimals.contains { $0.defaultValue == .decimal(0) })
        let modifiers = try #require(try entity(cart, "CDCartItem").relationships.first { $0.name == "modifiers" })
        #expect(modifiers.inverse == nil && modifiers.isToMany)
    }

    // MARK: Archives built here

    @Test("a hand-built archive of version-hash.md's test vector decodes to its hash")
    func handBuiltVector() throws {
        let model = try ModelArchive.decodeModel(ArchiveBuilder.eventModel())
        #expect(model.versionHashes["Event"]?.hexString == "5431c046d30e7f32c2cc809958add1e7579ad104a3aa8fc4846e97d7af01cc79")
        #expect(model.entities.first?.representedClassName == nil)
        #expect(model.versionIdentifiers.isEmpty)
        // Compressed as Core Data stores it (stored blocks are DEFLATE too).
        let cached = try ModelArchive.decodeModelCache(BinaryPlistWriter.storedDeflate(ArchiveBuilder.eventModel()))
        #expect(cached.versionHashes == model.versionHashes)
    }

    @Test("optional and transient come from _P when the separate keys are absent, and from the keys without _P")
    func packedFlagsAlone() throws {
        let vector = "5431c046d30e7f32c2cc809958add1e7579ad104a3aa8fc4846e97d7af01cc79"
        func decode(_ fields: [String: PropertyListNode]) throws -> ManagedObjectModel {
            try ModelArchive.decodeModel(ArchiveBuilder.eventModel(attributeFields: fields))
        }
        // A UID 0 value is $null: the key is as good as absent.
        #expect(try decode(["NSIsOptional": .uid(0), "_P": .integer(243)]).versionHashes["Event"]?.hexString == vector)
        #expect(try decode(["NSIsOptional": .uid(0), "_P": .integer(241)]).versionHashes["Event"]?.hexString != vector)
        #expect(try decode(["_P": .uid(0)]).versionHashes["Event"]?.hexString == vector)
        let transient = try decode(["_P": .integer(251)])
        #expect(transient.entities.first?.attributes.first?.isTransient == true)
        #expect(transient.versionHashes["Event"]?.hexString != vector)
    }

    // MARK: Damaged and unknown input: a typed error, never a crash

    static func expectError(_ code: ModelError.Code, mentioning text: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("no error; expected \(code) mentioning \(text)")
        } catch let error as ModelError {
            #expect(error.code == code, "\(error)")
            #expect(error.description.contains(text), "\(error)")
        } catch {
            Issue.record("not a ModelError: \(error)")
        }
    }

    @Test("a truncated blob is an unreadable-model error", arguments: [1, 100, 1000])
    func truncated(length: Int) throws {
        let blob = try ModelCacheFixtures.blob("cartkit-v1")
        Self.expectError(.unreadable, mentioning: "truncated") { _ = try ModelArchive.decodeModelCache(blob.prefix(length)) }
    }

    @Test("a stream that is not DEFLATE, or has bytes after its end, is an unreadable-model error")
    func badDeflate() throws {
        Self.expectError(.unreadable, mentioning: "not a valid DEFLATE stream") { _ = try ModelArchive.decodeModelCache(Data([0xFF, 0xFF, 0xFF, 0xFF])) }
        let blob = try ModelCacheFixtures.blob("ddg-bookmarks-v1")
        Self.expectError(.unreadable, mentioning: "follow the end") { _ = try ModelArchive.decodeModelCache(blob + Data([1, 2, 3])) }
        Self.expectError(.unreadable, mentioning: "truncated") { _ = try ModelArchive.decodeModelCache(Data()) }
    }

    @Test("a stream that inflates to something other than an archive is an unreadable-model error")
    func notAPlist() {
        Self.expectError(.unreadable, mentioning: "not a binary property list") {
            _ = try ModelArchive.decodeModelCache(BinaryPlistWriter.storedDeflate(Data("hello, not a plist".utf8)))
        }
        var damaged = [UInt8](ArchiveBuilder.eventModel())
        damaged[damaged.count - 1] ^= 0xFF   // the offset table's position
        Self.expectError(.unreadable, mentioning: "damaged") { _ = try ModelArchive.decodeModel(Data(damaged)) }
        Self.expectError(.unsupported, mentioning: "$archiver") {
            _ = try ModelArchive.decodeModel(BinaryPlistWriter.encode(.dictionary(["$archiver": .string("Other")])))
        }
    }

    @Test("an archive of another class is refused, naming the class")
    func wrongClass() {
        var builder = ArchiveBuilder()
        let root = builder.object("NSDictionary", ["NS.keys": .array([]), "NS.objects": .array([])])
        Self.expectError(.unsupported, mentioning: "NSDictionary, not an NSManagedObjectModel") {
            _ = try ModelArchive.decodeModel(builder.archive(root: root))
        }
        // Object #8 of the hand-built archive is the attribute.
        Self.expectError(.unsupported, mentioning: "NSAttributeDescription #8 where an NSEntityDescription was expected") {
            _ = try ModelArchive.decodeModel(ArchiveBuilder.eventModel(entityFields: ["NSSuperentity": .uid(8)]))
        }
    }

    @Test("a reference past the end of $objects is an unreadable-model error naming where it was")
    func danglingUID() {
        Self.expectError(.unreadable, mentioning: "NSProperties refers to object #9999") {
            _ = try ModelArchive.decodeModel(ArchiveBuilder.eventModel(entityFields: ["NSProperties": .uid(9999)]))
        }
        Self.expectError(.unreadable, mentioning: "refers to object #4242") {
            _ = try ModelArchive.decodeModel(ArchiveBuilder.eventModel(attributeFields: ["NSPropertyName": .uid(4242)]))
        }
    }

    @Test("keys, flags and types this reader does not know are refused by name, never guessed")
    func unknownInput() {
        Self.expectError(.unsupported, mentioning: "unknown key NSSomethingNew") {
            _ = try ModelArchive.decodeModel(ArchiveBuilder.eventModel(attributeFields: ["NSSomethingNew": .integer(1)]))
        }
        Self.expectError(.unsupported, mentioning: "unknown key NSIsAbstract") {
            _ = try ModelArchive.decodeModel(ArchiveBuilder.eventModel(entityFields: ["NSIsAbstract": .boolean(true)]))
        }
        Self.expectError(.unsupported, mentioning: "_P bits 0x4") {
            _ = try ModelArchive.decodeModel(ArchiveBuilder.eventModel(attributeFields: ["_P": .integer(243 | 4)]))
        }
        Self.expectError(.unsupported, mentioning: "NSFlagsKey bits 0x1") {
            _ = try ModelArchive.decodeModel(ArchiveBuilder.eventModel(attributeFields: ["NSFlagsKey": .integer(1)]))
        }
        Self.expectError(.unsupported, mentioning: "attribute type 2100") {
            _ = try ModelArchive.decodeModel(ArchiveBuilder.eventModel(attributeFields: ["NSAttributeType": .integer(2100)]))
        }
        Self.expectError(.unreadable, mentioning: "NSIsOptional is false but _P (243) says true") {
            _ = try ModelArchive.decodeModel(ArchiveBuilder.eventModel(attributeFields: ["NSIsOptional": .boolean(false)]))
        }
    }

    @Test("random damage to a real archive gives a model or a typed error, never a crash")
    func randomDamage() throws {
        var generator = SeededGenerator(state: 11)
        for name in ModelCacheFixtures.names {
            let archive = try RawDeflate.inflate(try ModelCacheFixtures.blob(name))
            for _ in 0..<200 {
                var bytes = [UInt8](archive)
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
                do { _ = try ModelArchive.decodeModel(Data(bytes)) } catch is ModelError {}
            }
        }
    }

    // MARK: Compiled models and the Xcode XML round trip

    @Test("a .momd folder and a single .mom load through ModelLoader, the current version from VersionInfo.plist")
    func compiledModels() throws {
        let folder = try TemporaryFolder()
        let momd = folder.url.appending(path: "App.momd")
        try FileManager.default.createDirectory(at: momd, withIntermediateDirectories: true)
        let first = try RawDeflate.inflate(try ModelCacheFixtures.blob("coredataplus-samplemodel-v1"))
        let second = try RawDeflate.inflate(try ModelCacheFixtures.blob("coredataplus-samplemodel-v2"))
        try first.write(to: momd.appending(path: "SampleModel.mom"))
        try second.write(to: momd.appending(path: "SampleModel2.mom"))
        let info = try PropertyListSerialization.data(fromPropertyList: ["NSManagedObjectModel_CurrentVersionName": "SampleModel"], format: .binary, options: 0)
        try info.write(to: momd.appending(path: "VersionInfo.plist"))
        let versions = try ModelLoader.load(at: momd)
        #expect(versions.names == ["SampleModel", "SampleModel2"])
        #expect(versions.currentName == "SampleModel")
        #expect(versions.current.versionHashes == (try ModelCacheFixtures.expectedHashes("coredataplus-samplemodel-v1")))
        #expect(try versions.model(named: "SampleModel2").versionHashes == (try ModelCacheFixtures.expectedHashes("coredataplus-samplemodel-v2")))
        let single = try ModelLoader.loadModel(at: momd.appending(path: "SampleModel2.mom"))
        #expect(single.versionHashes == (try ModelCacheFixtures.expectedHashes("coredataplus-samplemodel-v2")))
        // A damaged .mom is a model error naming the file.
        try Data("bplist00 and nothing else".utf8).write(to: momd.appending(path: "SampleModel2.mom"))
        #expect(throws: ModelError.self) { _ = try ModelLoader.load(at: momd) }
    }

    @Test("a decoded model written as Xcode XML loads back to the same model", arguments: ModelCacheFixtures.names)
    func xmlRoundTrip(name: String) throws {
        let model = try ModelArchive.decodeModelCache(try ModelCacheFixtures.blob(name))
        let folder = try TemporaryFolder()
        let url = folder.url.appending(path: "Extracted.xcdatamodel")
        try XcodeModelWriter.write(model, to: url)
        let back = try ModelLoader.loadModel(at: url)
        #expect(back.versionHashes == (try ModelCacheFixtures.expectedHashes(name)))
        #expect(back.entities.sorted { $0.name < $1.name } == model.entities.sorted { $0.name < $1.name })
        #expect(back.versionIdentifiers == model.versionIdentifiers)
    }
}
