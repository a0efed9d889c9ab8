import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import Testing
import TestSupport

/// Xcode mapping models (`xcmapping.xml`) written by hand in the format docs/coredata-formats.md
/// records, their value expressions archived from the documented keys; what is loaded is checked
/// against what the XML text says.
@Suite("Xcode mapping models")
struct XcodeMappingModelTests {
    static let petsV1 = model {
        Entity("Person") {
            Attribute("name", .string); Attribute("age", .integer16)
            Relationship("pets", to: "Pet", inverse: "owner", toMany: true)
        }
        Entity("Pet") { Attribute("name", .string); Relationship("owner", to: "Person", inverse: "pets") }
        Entity("Note") { Attribute("text", .string) }
    }
    static let petsV2 = model {
        Entity("Person") {
            Attribute("fullName", .string); Attribute("age", .integer16); Attribute("status", .string)
            Relationship("pets", to: "Pet", inverse: "owner", toMany: true)
        }
        Entity("Pet") {
            Attribute("name", .string); Attribute("ownerName", .string, optional: true)
            Relationship("owner", to: "Person", inverse: "pets")
        }
        Entity("Tag") { Attribute("label", .string, optional: true) }
    }

    /// Four entity mappings, listed out of their `mappingnumber` order: a transform with a filter,
    /// a policy class, user info, written and generated expressions; an unnamed copy; an unnamed
    /// remove; an `Undefined` add.
    static func pets(personPolicy: String = "Pets.PersonPolicy", extraPetAttribute: String = "") -> String {
        XcodeMappingXML.document("""
            <object type="XDDEVENTITYMAPPING" id="z103">
                <attribute name="name" type="string"></attribute>
                <attribute name="sourcename" type="string">Pet</attribute>
                <attribute name="destinationname" type="string">Pet</attribute>
                <attribute name="mappingtypename" type="string">Copy</attribute>
                <attribute name="mappingnumber" type="int16">2</attribute>
                <attribute name="autogenerateexpression" type="bool">1</attribute>
                \(extraPetAttribute)
                <relationship name="mappingmodel" type="1/1" destination="XDDEVMAPPINGMODEL" idrefs="z101"></relationship>
                <relationship name="attributemappings" type="0/0" destination="XDDEVATTRIBUTEMAPPING" idrefs="z114 z115"></relationship>
                <relationship name="relationshipmappings" type="0/0" destination="XDDEVRELATIONSHIPMAPPING" idrefs="z116"></relationship>
            </object>
        \(XcodeMappingXML.property("ATTRIBUTE", "z110", "fullName", owner: "z102", expression: .source("name")))
        \(XcodeMappingXML.property("ATTRIBUTE", "z111", "age", owner: "z102", generated: true))
        \(XcodeMappingXML.property("ATTRIBUTE", "z112", "status", owner: "z102", expression: .constant(.string("active"))))
        \(XcodeMappingXML.property("RELATIONSHIP", "z113", "pets", owner: "z102", expression: .destinations("PetToPet", .source("pets"))))
        \(XcodeMappingXML.property("ATTRIBUTE", "z114", "name", owner: "z103", generated: true))
        \(XcodeMappingXML.property("ATTRIBUTE", "z115", "ownerName", owner: "z103", expression: .keyPath(.source("owner"), "name")))
        \(XcodeMappingXML.property("RELATIONSHIP", "z116", "owner", owner: "z103", generated: true))
        \(XcodeMappingXML.property("ATTRIBUTE", "z117", "label", owner: "z105"))
            <object type="XDDEVENTITYMAPPING" id="z102">
                <attribute name="name" type="string">PersonToPerson</attribute>
                <attribute name="sourcename" type="string">Person</attribute>
                <attribute name="destinationname" type="string">Person</attribute>
                <attribute name="mappingtypename" type="string">Transform</attribute>
                <attribute name="mappingnumber" type="int16">1</attribute>
                <attribute name="migrationpolicyclassname" type="string">\(personPolicy)</attribute>
                <attribute name="sourcefilterpredicatestring" type="string">age &gt;= 18</attribute>
                <attribute name="autogenerateexpression" type="bool">1</attribute>
                <attribute name="userinfodata" type="binary">\(ArchiveBuilder.stringDictionary(["note": "adults only"]).base64EncodedString())</attribute>
                <relationship name="mappingmodel" type="1/1" destination="XDDEVMAPPINGMODEL" idrefs="z101"></relationship>
                <relationship name="attributemappings" type="0/0" destination="XDDEVATTRIBUTEMAPPING" idrefs="z110 z111 z112"></relationship>
                <relationship name="relationshipmappings" type="0/0" destination="XDDEVRELATIONSHIPMAPPING" idrefs="z113"></relationship>
            </object>
            <object type="XDDEVENTITYMAPPING" id="z104">
                <attribute name="sourcename" type="string">Note</attribute>
                <attribute name="mappingtypename" type="string">Remove</attribute>
                <attribute name="mappingnumber" type="int16">3</attribute>
                <relationship name="mappingmodel" type="1/1" destination="XDDEVMAPPINGMODEL" idrefs="z101"></relationship>
            </object>
            <object type="XDDEVENTITYMAPPING" id="z105">
                <attribute name="destinationname" type="string">Tag</attribute>
                <attribute name="mappingtypename" type="string">Undefined</attribute>
                <attribute name="mappingnumber" type="int16">4</attribute>
                <relationship name="mappingmodel" type="1/1" destination="XDDEVMAPPINGMODEL" idrefs="z101"></relationship>
                <relationship name="attributemappings" type="0/0" destination="XDDEVATTRIBUTEMAPPING" idrefs="z117"></relationship>
            </object>
            <object type="XDDEVMAPPINGMODEL" id="z101">
                <attribute name="sourcemodelpath" type="string">Pets/Pets.xcdatamodeld/Pets.xcdatamodel</attribute>
                <attribute name="destinationmodelpath" type="string">Pets/Pets.xcdatamodeld/Pets 2.xcdatamodel</attribute>
                <attribute name="sourcemodeldata" type="binary">YnBsaXN0MDA=</attribute>
                <relationship name="entitymappings" type="0/0" destination="XDDEVENTITYMAPPING" idrefs="z104 z103 z105 z102"></relationship>
            </object>
        """)
    }

    static let people = """
        {"Person": [{"_id": "ada", "name": "Ada", "age": 36, "pets": ["rex"]}, {"_id": "tim", "name": "Tim", "age": 9, "pets": ["tom"]}],
         "Pet": [{"_id": "rex", "name": "Rex", "owner": "ada"}, {"_id": "tom", "name": "Tom", "owner": "tim"}],
         "Note": [{"_id": "n", "text": "gone"}]}
        """

    @Test("every entity mapping, kind, filter, policy, user info and expression is what the XML says")
    func loads() throws {
        let mapping = try XcodeMappingModel.decode(Data(Self.pets().utf8))
        #expect(mapping.sourceVersion == "Pets" && mapping.destinationVersion == "Pets 2")
        // mappingnumber 1…4, whatever the order of entitymappings' idrefs; empty names are <Source>To<Destination> or the one entity.
        #expect(mapping.entityMappings.map(\.name) == ["PersonToPerson", "PetToPet", "Note", "Tag"])
        #expect(mapping.entityMappings.map(\.kind) == [.transform, .copy, .remove, .add])
        #expect(mapping.entityMappings.map(\.sourceEntity) == ["Person", "Pet", "Note", nil])
        #expect(mapping.entityMappings.map(\.destinationEntity) == ["Person", "Pet", nil, "Tag"])
        #expect(mapping.entityMappings.map(\.policyName) == ["Pets.PersonPolicy", nil, nil, nil])
        #expect(mapping.entityMappings.map(\.sourceFilter) == [try ObjectPredicate("age >= 18"), nil, nil, nil])
        #expect(mapping.entityMappings.map(\.userInfo) == [["note": "adults only"], [:], [:], [:]])
        func texts(_ expressions: [String: MappingExpression]) -> [String: String] { expressions.mapValues(\.description) }
        let person = try #require(mapping.mapping(named: "PersonToPerson")), pet = try #require(mapping.mapping(named: "PetToPet"))
        #expect(texts(person.attributeMappings) == ["fullName": "$source.name", "age": "$source.age", "status": "'active'"])
        #expect(texts(person.relationshipMappings) == ["pets": "destinations('PetToPet', $source.pets)"])
        #expect(texts(pet.attributeMappings) == ["name": "$source.name", "ownerName": "$source.owner.name"])
        // Generated for a relationship: the destination objects of $source.owner, by whichever mapping made them.
        #expect(texts(pet.relationshipMappings) == ["owner": "destinations($source.owner)"])
        // A property mapping with no expression leaves the property unset.
        #expect(mapping.mapping(named: "Tag")?.attributeMappings.isEmpty == true)
        #expect(mapping.entityMappings.allSatisfy { $0.sourceVersionHash == nil && $0.destinationVersionHash == nil })
    }

    @Test("the custom policy class is reported as needing a registered policy of that name; registered, the step runs and does what the mapping says")
    func policy() throws {
        let mapping = try XcodeMappingModel.decode(Data(Self.pets().utf8))
        let error = try #require(throws: MigrationError.self) { try mapping.check(from: Self.petsV1, to: Self.petsV2, policies: PolicyRegistry()) }
        #expect(error.code == .invalidMapping && error.mapping == "PersonToPerson")
        #expect(error.message.contains("Pets.PersonPolicy") && error.message.contains("PolicyRegistry"), "\(error)")
        let registry = PolicyRegistry()
        registry.register(DefaultMigrationPolicy(), named: "Pets.PersonPolicy")
        try mapping.check(from: Self.petsV1, to: Self.petsV2, policies: registry)
        let document = try migrate(Self.petsV1, Self.petsV2, mapping: mapping, data: Self.people, policies: registry)
        // The filter keeps Ada; both pets are copied, Tom without an owner (Tim was not migrated); notes are removed.
        let persons = try #require(document["Person"]), pets = try #require(document["Pet"])
        #expect(persons.count == 1 && persons.first?["fullName"] as? String == "Ada" && persons.first?["status"] as? String == "active")
        #expect(persons.first?["age"] as? Int == 36)
        let ada = try #require(persons.first?["_id"] as? String)
        let rex = try #require(pets.first { $0["name"] as? String == "Rex" }), tom = try #require(pets.first { $0["name"] as? String == "Tom" })
        #expect(rex["owner"] as? String == ada && rex["ownerName"] as? String == "Ada")
        #expect(tom["owner"] is NSNull && tom["ownerName"] as? String == "Tim")
        #expect(persons.first?["pets"] as? [String] == [try #require(rex["_id"] as? String)])
        #expect(document["Note"] == nil && (document["Tag"] ?? []).isEmpty)
    }

    @Test("without model paths the mapping fits the step whose models have what it names, not another; with paths, the versions they name")
    func fitsItsStep() throws {
        let petsV0 = model {
            Entity("Person") { Attribute("name", .string); Relationship("pets", to: "Pet", inverse: "owner", toMany: true) }
            Entity("Pet") { Attribute("name", .string); Relationship("owner", to: "Person", inverse: "pets") }
            Entity("Note") { Attribute("text", .string) }
        }
        let versions = try ModelVersions(versions: [.init(name: "Pets 0", model: petsV0), .init(name: "Pets", model: Self.petsV1),
                                                    .init(name: "Pets 2", model: Self.petsV2)])
        let workspace = try Workspace()
        let url = workspace.location("pets", "sqlite")
        try makeStore("sqlite", at: url, model: petsV0, json: "{}")
        let registry = PolicyRegistry()
        registry.register(DefaultMigrationPolicy(), named: "Pets.PersonPolicy")
        let withPaths = try XcodeMappingModel.decode(Data(Self.pets().utf8))
        let text = Self.pets().split(separator: "\n").filter { !$0.contains("modelpath") }.joined(separator: "\n")
        let withoutPaths = try XcodeMappingModel.decode(Data(text.utf8))
        #expect(withoutPaths.sourceVersion == nil && withoutPaths.destinationVersion == nil)
        for mapping in [withPaths, withoutPaths] {
            let migrator = StoreMigrator(versions: versions, mappings: [StepMapping(name: "Pets.xcmappingmodel", mapping: mapping)], policies: registry)
            let plan = try migrator.plan(forStoreAt: url, type: Backends.type("sqlite"))
            #expect(plan.steps.map(\.description) == ["Pets 0 -> Pets: lightweight", "Pets -> Pets 2: mapping Pets.xcmappingmodel"])
        }
        // A step whose source lacks what the mapping reads (Person.age) is not fitted: it is inferred, the mapping left unused.
        let skipping = try ModelVersions(versions: [.init(name: "Pets 0", model: petsV0), .init(name: "Pets 2", model: Self.petsV2)])
        let migrator = StoreMigrator(versions: skipping, mappings: [StepMapping(name: "Pets.xcmappingmodel", mapping: withoutPaths)], policies: registry)
        let plan = try migrator.plan(forStoreAt: url, type: Backends.type("sqlite"))
        #expect(plan.steps.count == 1 && plan.steps.allSatisfy { !$0.description.contains("mapping") }, "\(plan.steps)")
        #expect(plan.unusedMappings == ["Pets.xcmappingmodel"])
    }

    @Test("without model paths, a mapping that fits two steps by its names is refused, naming both; one that fits none while a step needs one is an invalid mapping saying why")
    func ambiguousOrMisfit() throws {
        // Two steps that change nothing the mapping's names see (a Note gains optional attributes): it fits both.
        func withNote(_ extra: [String]) -> ManagedObjectModel {
            model {
                Entity("Person") {
                    Attribute("name", .string); Attribute("age", .integer16)
                    Relationship("pets", to: "Pet", inverse: "owner", toMany: true)
                }
                Entity("Pet") { Attribute("name", .string); Relationship("owner", to: "Person", inverse: "pets") }
                Entity("Note", attributes: [Attribute("text", .string)] + extra.map { Attribute($0, .string) })
            }
        }
        let versions = try ModelVersions(versions: [.init(name: "Pets", model: Self.petsV1), .init(name: "Pets 1b", model: withNote(["b"])),
                                                    .init(name: "Pets 1c", model: withNote(["b", "c"]))])
        let workspace = try Workspace()
        let url = workspace.location("pets", "sqlite")
        try makeStore("sqlite", at: url, model: Self.petsV1, json: "{}")
        let identity = try XcodeMappingModel.decode(Data(XcodeMappingXML.document("""
            <object type="XDDEVMAPPINGMODEL" id="z1"><relationship name="entitymappings" type="0/0" destination="XDDEVENTITYMAPPING" idrefs="z2 z3 z4"></relationship></object>
            <object type="XDDEVENTITYMAPPING" id="z4">
                <attribute name="sourcename" type="string">Note</attribute><attribute name="destinationname" type="string">Note</attribute>
                <attribute name="mappingtypename" type="string">Copy</attribute>
            </object>
            <object type="XDDEVENTITYMAPPING" id="z2">
                <attribute name="sourcename" type="string">Person</attribute><attribute name="destinationname" type="string">Person</attribute>
                <attribute name="mappingtypename" type="string">Copy</attribute>
            </object>
            <object type="XDDEVENTITYMAPPING" id="z3">
                <attribute name="sourcename" type="string">Pet</attribute><attribute name="destinationname" type="string">Pet</attribute>
                <attribute name="mappingtypename" type="string">Copy</attribute>
            </object>
            """).utf8))
        let migrator = StoreMigrator(versions: versions, mappings: [StepMapping(name: "Pets.xcmappingmodel", mapping: identity)])
        let error = try #require(throws: MigrationError.self) { try migrator.plan(forStoreAt: url, type: Backends.type("sqlite")) }
        #expect(error.code == .invalidMapping)
        #expect(error.description.contains("Pets -> Pets 1b") && error.description.contains("Pets 1b -> Pets 1c"), "\(error)")

        // A step that needs a mapping (inference off), and a mapping meant for it with a typo: an
        // invalid mapping, never "no mapping" (which --on-incompatible answers by recreating).
        let text = Self.pets().split(separator: "\n").filter { !$0.contains("modelpath") }.joined(separator: "\n")
        let typo = try XcodeMappingModel.decode(Data(text.replacingOccurrences(of: ">age<", with: ">agee<").utf8))
        let steps = try ModelVersions(versions: [.init(name: "Pets", model: Self.petsV1), .init(name: "Pets 2", model: Self.petsV2)])
        let registry = PolicyRegistry()
        registry.register(DefaultMigrationPolicy(), named: "Pets.PersonPolicy")
        let misfit = StoreMigrator(versions: steps, mappings: [StepMapping(name: "Pets.xcmappingmodel", mapping: typo)], policies: registry,
                                   infersMappings: false)
        let refused = try #require(throws: MigrationError.self) { try misfit.plan(forStoreAt: url, type: Backends.type("sqlite")) }
        #expect(refused.code == .invalidMapping)
        #expect(refused.description.contains("Pets.xcmappingmodel") && refused.description.contains("agee"), "\(refused)")
    }

    /// The model object and one entity mapping whose `fullName` mapping holds `expression` (or `extra` text).
    static func single(expression: ArchivedExpression? = nil, base64: String? = nil, entity extra: String = "",
                       type: String = "Transform", modelObject: Bool = true) -> String {
        let data = base64 ?? expression?.base64 ?? ""
        return XcodeMappingXML.document("""
            <object type="XDDEVENTITYMAPPING" id="z2">
                <attribute name="name" type="string">PersonToPerson</attribute>
                <attribute name="sourcename" type="string">Person</attribute>
                <attribute name="destinationname" type="string">Person</attribute>
                <attribute name="mappingtypename" type="string">\(type)</attribute>
                \(extra)
                <relationship name="attributemappings" type="0/0" destination="XDDEVATTRIBUTEMAPPING" idrefs="z3"></relationship>
            </object>
            <object type="XDDEVATTRIBUTEMAPPING" id="z3">
                <attribute name="name" type="string">fullName</attribute>
                <attribute name="valueexpressiondata" type="binary">\(data)</attribute>
            </object>
        \(modelObject ? #"<object type="XDDEVMAPPINGMODEL" id="z1"><relationship name="entitymappings" type="0/0" destination="XDDEVENTITYMAPPING" idrefs="z2"></relationship></object>"# : "")
        """)
    }

    static let unknownExpressions: [(ArchivedExpression, String)] = [
        (.object("NSAggregateExpression", ["NSExpressionType": .integer(14)]), "NSAggregateExpression"),
        (.function(.variable("manager"), selector: "fetchRequestForSourceEntityNamed:predicateString:", [.constant(.string("Person")), .constant(.string("TRUEPREDICATE"))]),
         "fetchRequestForSourceEntityNamed:predicateString:"),
        (.function(.source("name"), selector: "uppercaseString", []), "uppercaseString"),
        (.keyPath(.variable("entityPolicy"), "name"), "$entityPolicy"),
        (.object("NSKeyPathExpression", ["NSExpressionType": .integer(4)]), "NSExpressionType 4"),
        (.object("NSConstantValueExpression", ["NSConstantValue": .integer(1), "NSPredicateOperator": .integer(0)]), "NSPredicateOperator"),
        (.source("children.@count"), "collection operator"),
        (.constant(.data(Data([1, 2]))), "2 bytes of data"),
    ]

    @Test("an expression outside the common cases is refused, naming the entity mapping, the property and the class, selector, variable or key",
          arguments: unknownExpressions.indices)
    func unknownExpression(_ index: Int) throws {
        let (expression, named) = Self.unknownExpressions[index]
        let error = try #require(throws: MigrationError.self) { try XcodeMappingModel.decode(Data(Self.single(expression: expression).utf8)) }
        #expect(error.code == .invalidMapping && error.mapping == "PersonToPerson")
        #expect(error.message.contains("fullName") && error.message.contains(named), "\(error)")
    }

    @Test("refusals: no mapping model object, damaged base64, a missing object, an unknown key, type or kind, a filter that does not parse, XML that does not parse")
    func refusals() throws {
        func refusal(_ text: String) throws -> MigrationError {
            try #require(throws: MigrationError.self) { try XcodeMappingModel.decode(Data(text.utf8), file: "m/xcmapping.xml") }
        }
        let cases: [(String, [String])] = [
            (Self.single(expression: .source("name"), modelObject: false), ["no XDDEVMAPPINGMODEL"]),
            (Self.single(base64: "@@not base64@@"), ["z3.valueexpressiondata", "not base64"]),
            (Self.single(base64: Data("bplist00 damaged".utf8).base64EncodedString()), ["fullName", "not a readable archived expression"]),
            (Self.single(expression: .source("name")).replacingOccurrences(of: #"idrefs="z3""#, with: #"idrefs="z9""#), ["z2.attributemappings", "z9"]),
            (Self.single(expression: .source("name"), entity: #"<attribute name="sourceentityversionhash" type="binary">AAAA</attribute>"#),
             ["sourceentityversionhash", "not established"]),
            (Self.single(expression: .source("name"), type: "Merge"), ["mappingtypename Merge"]),
            (Self.single(expression: .source("name"), entity: #"<attribute name="sourcefilterpredicatestring" type="string">age &gt;&gt; 3</attribute>"#),
             ["sourcefilterpredicatestring", "age >> 3"]),
            (Self.single(expression: .source("name"), entity: #"<attribute name="mappingnumber" type="string">1</attribute>"#), ["mappingnumber is declared string"]),
            (Self.single(expression: .source("name")).replacingOccurrences(of: "XDDEVATTRIBUTEMAPPING\" id", with: "XDDEVFETCHMAPPING\" id"), ["XDDEVFETCHMAPPING"]),
            (Self.single(expression: .source("name")).replacingOccurrences(of: "</database>", with: ""), ["m/xcmapping.xml:", "<database> is closed"]),
            (Self.single(expression: .source("name")).replacingOccurrences(of: "</object>", with: "</objekt>"), ["m/xcmapping.xml:", "does not parse"]),
            (Self.single(expression: .source("name"), entity: #"<attribute name="sourceexpressiondata" type="binary">AAAA</attribute>"#), ["sourceexpressiondata"]),
            // An entity declaration (here one that would read another file into the filter) is never expanded.
            (Self.single(expression: .source("name"), entity: #"<attribute name="sourcefilterpredicatestring" type="string">&x;</attribute>"#)
                .replacingOccurrences(of: "<database>", with: "<!DOCTYPE database [<!ENTITY x SYSTEM \"file:///etc/hostname\">]>\n<database>"),
             ["entity declaration"]),
        ]
        for (text, words) in cases {
            let error = try refusal(text)
            #expect(error.code == .invalidMapping)
            #expect(error.message.hasPrefix("m/xcmapping.xml"), "\(error)")
            for word in words { #expect(error.message.contains(word), "\(word): \(error)") }
        }
        // The same file with the written expression is read.
        #expect(try XcodeMappingModel.decode(Data(Self.single(expression: .source("name")).utf8)).entityMappings.first?.attributeMappings["fullName"]?.description == "$source.name")
    }

    @Test("random damage to the archived expression and to the XML gives typed errors, never a crash")
    func randomDamage() throws {
        var random = SeededGenerator(state: 11)
        let archive = ArchivedExpression.destinations("PetToPet", .keyPath(.source("owner"), "pets")).archive
        var refused = 0
        for round in 0..<600 {
            var bytes = [UInt8](archive)
            if round % 5 == 0 {
                bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count))))
            } else {
                for _ in 0..<(1 + Int(random.next() % 4)) {
                    bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
                }
            }
            do {
                _ = try XcodeMappingModel.decode(Data(Self.single(base64: Data(bytes).base64EncodedString()).utf8))
            } catch let error as MigrationError {
                #expect(error.code == .invalidMapping && error.mapping == "PersonToPerson")
                refused += 1
            }
        }
        #expect(refused > 300)
        let text = [UInt8](Self.pets().utf8)
        for _ in 0..<300 {
            var bytes = text
            for _ in 0..<(1 + Int(random.next() % 6)) {
                bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
            }
            do { _ = try XcodeMappingModel.decode(Data(bytes)) } catch let error as MigrationError {
                #expect(error.code == .invalidMapping)
            }
        }
    }

    @Test("a mapping model folder or its xcmapping.xml loads from disk; a folder without the file is a typed error")
    func files() throws {
        let workspace = try Workspace()
        let folder = workspace.folder.appending(path: "Pets.xcmappingmodel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        #expect(XcodeMappingModel.isMappingModel(at: folder))
        let missing = try #require(throws: MigrationError.self) { try XcodeMappingModel.load(at: folder) }
        #expect(missing.code == MigrationError.Code.invalidMapping && missing.message.contains("xcmapping.xml"))
        try Data(Self.pets().utf8).write(to: folder.appending(path: "xcmapping.xml"))
        #expect(try XcodeMappingModel.load(at: folder).entityMappings.count == 4)
        #expect(try XcodeMappingModel.load(at: folder.appending(path: "xcmapping.xml")).entityMappings.count == 4)
        #expect(!XcodeMappingModel.isMappingModel(at: workspace.folder.appending(path: "mapping.json")))
    }
}
