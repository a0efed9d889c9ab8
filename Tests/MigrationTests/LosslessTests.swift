import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import Testing
import TestSupport

/// Nothing changes on the way through a conversion or a migration: every nil (even
/// where the attribute has a default), every date to the last bit, both sides of every
/// relationship, whichever side a mapping or a policy writes. The oracle is the input
/// document itself, not another output of the code under test.
@Suite("Lossless conversion and migration")
struct LosslessTests {
    static let model: ManagedObjectModel = {
        do {
            return try JSONModelFormat.decode(Data(LosslessData.modelJSON.utf8), file: "lossless model")
        } catch {
            preconditionFailure("\(error)")
        }
    }()

    typealias Document = LosslessData.Document

    // MARK: Mappings

    /// Copies every attribute; writes only the relationships named (by entity).
    static func mapping(writing relationships: [String: [String]]) -> MappingModel {
        MappingModel(entityMappings: ["Post", "Pinned", "Color", "Tag", "Badge"].map { name in
            let entity = model.entity(named: name)!
            return EntityMapping(
                name: "\(name)To\(name)", kind: .copy, sourceEntity: name, destinationEntity: name,
                attributeMappings: Dictionary(uniqueKeysWithValues: entity.storedAttributes.map { ($0.name, .source($0.name)) }),
                relationshipMappings: Dictionary(uniqueKeysWithValues: (relationships[entity.rootName] ?? []).map { ($0, .source($0)) }))
        })
    }

    enum Scenario: String, CaseIterable, CustomTestStringConvertible {
        /// The identity mapping: both sides, to-ones in phase 1.
        case identity
        /// A hand-written mapping that writes the to-many sides (and the ordered ones) only.
        case toManySides
        /// A hand-written mapping that writes the to-one sides only (and one side of each many-to-many).
        case toOneSides
        /// A policy that sets the to-one sides itself, in phase 2.
        case policy

        var testDescription: String { rawValue }

        var mapping: MappingModel {
            switch self {
            case .identity: return .identity(for: LosslessTests.model)
            case .toManySides:
                return LosslessTests.mapping(writing: ["Post": ["tags", "children", "siblings"], "Color": ["posts"], "Badge": ["post"]])
            case .toOneSides:
                return LosslessTests.mapping(writing: ["Post": ["color", "parent", "badge", "siblings"], "Tag": ["posts"]])
            case .policy:
                var mapping = LosslessTests.mapping(writing: ["Tag": ["posts"]])
                for i in mapping.entityMappings.indices where ["Post", "Pinned"].contains(mapping.entityMappings[i].sourceEntity) {
                    mapping.entityMappings[i].policyName = "lossless.toOneSides"
                }
                return mapping
            }
        }

        /// The to-manys a store completes are in the order their members were written: key order.
        var expected: Document { LosslessData.document(ascending: self == .toOneSides || self == .policy) }
    }

    /// Makes the objects through the context's API and sets the to-one sides, one side only.
    struct ToOneSidesPolicy: EntityMigrationPolicy {
        func createDestinationInstances(for source: ObjectRecord, mapping: EntityMapping, context: MigrationContext) throws {
            try context.insertDestination(entity: mapping.destinationEntity!, attributes: try context.mappedAttributes(for: source, mapping: mapping),
                                          for: source.key, mapping: mapping)
        }

        func createRelationships(forDestination destination: ObjectKey, source: ObjectRecord, mapping: EntityMapping,
                                 context: MigrationContext) throws {
            for name in ["color", "parent", "badge"] {
                try context.setRelationship(name, of: destination, to: source.toOne[name].map { context.destinationKeys(for: $0) } ?? [])
            }
            let siblings = try context.sourceStore.relatedKeys(of: source.key, relationship: "siblings")
            try context.setRelationship("siblings", of: destination, to: siblings.flatMap { context.destinationKeys(for: $0) })
        }
    }

    // MARK: Tests

    @Test("every pair of backends, every side a mapping can write: the export is the input, both sides agree",
          arguments: Scenario.allCases, Backends.pairs)
    func everyPair(_ scenario: Scenario, _ pair: (String, String)) throws {
        PolicyRegistry.shared.register(ToOneSidesPolicy(), named: "lossless.toOneSides")
        let (source, destination) = pair
        let workspace = try Workspace()
        let input = LosslessData.document()
        let from = workspace.location("source", source), to = workspace.location("destination", destination)
        try makeStore(source, at: from, model: Self.model, json: try LosslessData.json(input))
        let sourceExport = try export(source, at: from, model: Self.model)
        try expectDocument(sourceExport, equals: input, "the source holds the input")

        let manager = MigrationManager(sourceModel: Self.model, destinationModel: Self.model, mapping: scenario.mapping, batchSize: 5)
        try manager.migrateStore(at: from, type: Backends.type(source), to: to, type: Backends.type(destination))

        let destinationExport = try export(destination, at: to, model: Self.model)
        try expectDocument(destinationExport, equals: scenario.expected, "the destination holds the input")
        if scenario == .identity || scenario == .toManySides { #expect(destinationExport == sourceExport) }
        let store = try Backends.type(destination).open(at: to, model: Self.model, options: StoreOptions(readOnly: true, createIfMissing: false))
        defer { try? store.close() }
        var problems: [String] = []
        for entity in Self.model.entityNames {
            for batch in store.batches(of: entity, size: 7) {
                for record in try batch.get() {
                    problems += try ObjectValidator.failures(of: record, in: store).map(\.description)
                    problems += try ObjectValidator.inverseDisagreements(of: record, in: store).map(\.description)
                    if record.version != 1 { problems.append("\(record.key) is at version \(record.version), not 1") }
                }
            }
        }
        #expect(problems.isEmpty, "\(problems.prefix(5))")
        // The store keeps its UUID when every object keeps its key; a policy may make objects with new keys,
        // and then an old object URI could name another object: a new UUID.
        let sameUUID = try store.metadata().storeUUID == Backends.type(source).readMetadata(at: from).storeUUID
        #expect(sameUUID == (scenario != .policy), "the store keeps its UUID exactly when every key is kept")
    }

    @Test("objects a policy makes in another hierarchy are validated in phase 3")
    func policyObjectsValidated() throws {
        struct ColorMaker: EntityMigrationPolicy {
            func createDestinationInstances(for source: ObjectRecord, mapping: EntityMapping, context: MigrationContext) throws {
                try context.insertMappedDestination(for: source, mapping: mapping)
                // A Color without its required hex.
                try context.insertDestination(entity: "Color", attributes: ["name": .string("made")], for: source.key, mapping: mapping)
            }
        }
        PolicyRegistry.shared.register(ColorMaker(), named: "lossless.colorMaker")
        let workspace = try Workspace()
        let from = workspace.location("source", "lmdb"), to = workspace.location("destination", "atomic")
        try makeStore("lmdb", at: from, model: Self.model, json: #"{"Tag": [{"_id": "t", "label": "x"}]}"#)
        var mapping = MappingModel(entityMappings: [EntityMapping(name: "TagToTag", kind: .custom, sourceEntity: "Tag", destinationEntity: "Tag",
                                                                  attributeMappings: ["label": .source("label")], policyName: "lossless.colorMaker")])
        mapping.entityMappings[0].policyName = "lossless.colorMaker"
        let manager = MigrationManager(sourceModel: Self.model, destinationModel: Self.model, mapping: mapping)
        let error = try #require(throws: MigrationError.self) {
            try manager.migrateStore(at: from, type: Backends.type("lmdb"), to: to, type: Backends.type("atomic"))
        }
        #expect(error.code == .validationFailed)
        #expect(error.validationFailures.contains { $0.objectID.entityName == "Color" && $0.property == "hex" })
        #expect(!Backends.type("atomic").storeExists(at: to))
    }

    @Test("defaults fill only what has no source value: new attributes and optional attributes made required")
    func defaultsOnlyWhereNothingIsCopied() throws {
        let v2 = try ManagedObjectModel(versionIdentifiers: ["lossless-2"]) {
            Entity("Tag") {
                Attribute("label", .string, optional: false, default: .string("untitled"))
                Attribute("weight", .double, default: .double(1.5))
                Attribute("hue", .integer16)
            }
        }
        let v1 = try ManagedObjectModel(versionIdentifiers: ["lossless-1"]) {
            Entity("Tag") {
                Attribute("label", .string)
                Attribute("hue", .integer16, default: .integer(3))
            }
        }
        for (source, destination) in [("sqlite", "lmdb"), ("lmdb", "atomic"), ("atomic", "sqlite"), ("memory", "memory")] {
            let workspace = try Workspace()
            let from = workspace.location("source", source), to = workspace.location("destination", destination)
            try makeStore(source, at: from, model: v1, json: #"{"Tag": [{"_id": "Tag/1", "label": null, "hue": null}, {"_id": "Tag/2", "label": "b", "hue": 9}]}"#)
            let mapping = try MappingInference.inferredMapping(from: v1, to: v2)
            try MigrationManager(sourceModel: v1, destinationModel: v2, mapping: mapping)
                .migrateStore(at: from, type: Backends.type(source), to: to, type: Backends.type(destination))
            let document = try parse(try export(destination, at: to, model: v2))
            let tags = try #require(document["Tag"])
            #expect(tags[0]["label"] as? String == "untitled", "an optional attribute made required takes its default for nil")
            #expect(tags[0]["weight"] as? Double == 1.5, "a new attribute takes its default")
            #expect(tags[0]["hue"] is NSNull, "a copied nil stays nil")
            #expect(tags[1]["label"] as? String == "b")
            #expect(tags[1]["hue"] as? Int == 9)
        }
    }

    // MARK: Helpers

    func parse(_ text: String) throws -> Document {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? Document)
    }

    /// Compares an export with a document value by value, naming each difference.
    func expectDocument(_ text: String, equals document: Document, _ what: String) throws {
        let differences = JSONComparison.differences(text, document)
        #expect(differences.isEmpty, "\(what): \(differences.prefix(8).joined(separator: "; "))")
    }
}
