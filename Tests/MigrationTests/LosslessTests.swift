import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import Testing

/// Nothing changes on the way through a conversion or a migration: every nil (even
/// where the attribute has a default), every date to the last bit, both sides of every
/// relationship, whichever side a mapping or a policy writes. The oracle is the input
/// document itself, not another output of the code under test.
@Suite("Lossless conversion and migration")
struct LosslessTests {
    static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(versionIdentifiers: ["lossless-1"]) {
                Entity("Post") {
                    Attribute("title", .string, optional: false)
                    Attribute("score", .double, default: .double(0))
                    Attribute("price", .decimal, default: .decimal(0))
                    Attribute("rank", .integer32, default: .integer(7))
                    Attribute("published", .boolean, default: .boolean(true))
                    Attribute("due", .date, default: .date(Date(timeIntervalSinceReferenceDate: 0)))
                    Attribute("note", .string, default: .string("none"))
                    Relationship("color", to: "Color", inverse: "posts")
                    Relationship("tags", to: "Tag", inverse: "posts", toMany: true, ordered: true)
                    Relationship("badge", to: "Badge", inverse: "post")
                    Relationship("parent", to: "Post", inverse: "children")
                    Relationship("children", to: "Post", inverse: "parent", toMany: true, ordered: true)
                    Relationship("siblings", to: "Post", inverse: "siblings", toMany: true)
                }
                Entity("Pinned", parent: "Post") {
                    Attribute("level", .integer16, default: .integer(1))
                }
                Entity("Color") {
                    Attribute("name", .string, optional: false)
                    Attribute("hex", .string, optional: false)
                    Relationship("posts", to: "Post", inverse: "color", toMany: true)
                }
                Entity("Tag") {
                    Attribute("label", .string)
                    Relationship("posts", to: "Post", inverse: "tags", toMany: true)
                }
                Entity("Badge") {
                    Attribute("code", .string)
                    Relationship("post", to: "Post", inverse: "badge")
                }
            }
        } catch {
            preconditionFailure("\(error)")
        }
    }()

    // MARK: The data set

    typealias Document = [String: [[String: Any]]]

    /// A date in canonical export form: milliseconds, or a sub-millisecond fraction whose
    /// seconds since 2001 have at most 15 significant digits (so the text is the shortest
    /// that reads back to its Double).
    static func dateText(_ i: Int) -> String {
        let fraction = ["198", "000", "123456", "0005", "999", "250001"][i % 6]
        return "20\(10 + i % 20)-0\(1 + i % 9)-1\(i % 9)T0\(i % 10):1\(i % 6):2\(i % 10).\(fraction)Z"
    }

    /// The document in export form (every attribute, both sides of every relationship, unordered
    /// to-manys in key order), with nils where the attributes have defaults, sub-millisecond dates,
    /// ordered to-manys out of key order, and every kind of inverse pair.
    ///
    /// - Parameter ascending: ordered to-manys in key order (what a store completing them from
    ///   the other side gives when the mapping writes only that side).
    static func document(ascending: Bool = false) -> Document {
        let posts = 1...24
        func id(_ entity: String, _ pk: Int) -> String { "\(entity)/\(pk)" }
        func post(_ pk: Int) -> String { id(pk > 20 ? "Pinned" : "Post", pk) }
        // Unordered to-manys list their members in key order: entity name, then primary key.
        func keyOrder(_ pks: [Int]) -> [String] { pks.filter { $0 > 20 }.map(post) + pks.filter { $0 <= 20 }.map(post) }
        func color(_ i: Int) -> Int? { i % 6 == 5 ? nil : 1 + i % 5 }
        func tags(_ i: Int) -> [Int] {
            if i % 4 == 3 { return [] }
            let list = [1 + (i * 2) % 6, 1 + (i * 3 + 1) % 6, 1 + (i + 4) % 6]
            var seen: Set<Int> = []
            let distinct = list.filter { seen.insert($0).inserted }
            return ascending ? distinct.sorted() : distinct
        }
        func parent(_ i: Int) -> Int? { i > 4 ? 1 + i % 4 : nil }
        func children(_ k: Int) -> [Int] {
            let list = posts.filter { parent($0) == k }
            return ascending ? list : list.sorted(by: >)
        }
        func sibling(_ i: Int) -> Int? { i <= 12 ? (i % 2 == 1 ? i + 1 : i - 1) : nil }
        func badge(_ i: Int) -> Int? { i <= 8 ? 9 - i : nil }
        var document: Document = ["Post": [], "Pinned": [], "Color": [], "Tag": [], "Badge": []]
        for i in posts {
            var object: [String: Any] = [
                "_id": post(i),
                "title": "post \(i)",
                "score": i % 4 == 0 ? NSNull() : Double(i) * 1.25,
                "price": i % 3 == 0 ? NSNull() : "\(i).25",
                "rank": i % 5 == 0 ? NSNull() : i * 100,
                "published": i % 2 == 0 ? NSNull() : (i % 4 == 1),
                "due": i % 7 == 0 ? NSNull() : dateText(i),
                "note": i % 3 == 1 ? NSNull() : "n\(i)",
                "color": color(i).map { id("Color", $0) } ?? NSNull(),
                "tags": tags(i).map { id("Tag", $0) },
                "badge": badge(i).map { id("Badge", $0) } ?? NSNull(),
                "parent": parent(i).map(post) ?? NSNull(),
                "children": children(i).map(post),
                "siblings": sibling(i).map { [post($0)] } ?? [],
            ]
            if i > 20 { object["level"] = i % 2 == 0 ? NSNull() : i }
            document[i > 20 ? "Pinned" : "Post", default: []].append(object)
        }
        let names = ["red", "green", "blue", "cyan", "gray"]
        for c in 1...5 {
            document["Color"]!.append(["_id": id("Color", c), "name": names[c - 1], "hex": "#\(c)\(c)\(c)",
                                       "posts": keyOrder(posts.filter { color($0) == c })])
        }
        for t in 1...6 {
            document["Tag"]!.append(["_id": id("Tag", t), "label": t == 6 ? NSNull() : "tag \(t)",
                                     "posts": keyOrder(posts.filter { tags($0).contains(t) })])
        }
        for b in 1...8 {
            document["Badge"]!.append(["_id": id("Badge", b), "code": "B\(b)", "post": posts.first { badge($0) == b }.map(post) ?? NSNull()])
        }
        return document
    }

    static func json(_ document: Document) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]), as: UTF8.self)
    }

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
        var expected: Document { LosslessTests.document(ascending: self == .toOneSides || self == .policy) }
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
        let input = Self.document()
        let from = workspace.location("source", source), to = workspace.location("destination", destination)
        try makeStore(source, at: from, model: Self.model, json: try Self.json(input))
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
        #expect(try store.metadata().storeUUID == Backends.type(source).readMetadata(at: from).storeUUID, "the store keeps its UUID")
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

    /// Compares an export with a document object by object and key by key, naming each difference.
    func expectDocument(_ text: String, equals document: Document, _ what: String) throws {
        let actual = try parse(text)
        let expected = try parse(try Self.json(document))   // as JSON values, like the export's
        #expect(Set(actual.keys) == Set(expected.keys), "\(what): entities")
        // Values compared as canonical JSON text: numbers, Booleans and nulls exactly as JSON has them.
        func canonical(_ value: Any?) -> String {
            (try? JSONSerialization.data(withJSONObject: [value ?? NSNull()], options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "?"
        }
        var differences: [String] = []
        for (entity, objects) in expected {
            let got = actual[entity] ?? []
            if got.count != objects.count { differences.append("\(entity): \(got.count) objects, expected \(objects.count)") }
            for (a, b) in zip(got, objects) {
                for key in Set(a.keys).union(b.keys).sorted() where canonical(a[key]) != canonical(b[key]) {
                    differences.append("\(b["_id"] ?? "?").\(key): \(canonical(a[key])) instead of \(canonical(b[key]))")
                }
            }
        }
        #expect(differences.isEmpty, "\(what): \(differences.prefix(8).joined(separator: "; "))")
    }
}
