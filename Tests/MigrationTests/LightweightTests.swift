import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import Testing

typealias Document = [String: [[String: Any]]]

/// Migrates `data` from a store of `source` to one of `destination` with the inferred mapping; returns the export.
func migrateInferred(_ source: ManagedObjectModel, _ destination: ManagedObjectModel, data: String, backend: String,
                     options: MappingInference.Options = []) throws -> Document {
    let workspace = try Workspace()
    let from = workspace.location("v1", backend), to = workspace.location("v2", backend)
    try makeStore(backend, at: from, model: source, json: data)
    let mapping = try MappingInference.inferredMapping(from: source, to: destination, options: options)
    try MigrationManager(sourceModel: source, destinationModel: destination, mapping: mapping)
        .migrateStore(at: from, type: Backends.type(backend), to: to, type: Backends.type(backend))
    let text = try export(backend, at: to, model: destination)
    return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? Document)
}

func model(@EntityBuilder _ entities: () -> [Entity]) -> ManagedObjectModel {
    try! ManagedObjectModel(entities: entities())
}

/// One lightweight rule: two models, data before, and what must hold after.
struct Rule: Sendable, CustomStringConvertible {
    let name: String
    let source: ManagedObjectModel
    let destination: ManagedObjectModel
    let data: String
    var options: MappingInference.Options = []
    let check: @Sendable (Document) -> Void
    var description: String { name }
}

let person = Entity("Person") {
    Attribute("name", .string, optional: false)
    Attribute("age", .integer16)
}

let rules: [Rule] = [
    Rule(name: "add an entity", source: model { person },
         destination: model { person; Entity("Note") { Attribute("text", .string) } },
         data: #"{"Person": [{"_id": "a", "name": "Ada"}]}"#) { doc in
        #expect(doc["Note"]?.isEmpty == true)
        #expect(doc["Person"]?.first?["name"] as? String == "Ada")
    },
    Rule(name: "remove an entity", source: model { person; Entity("Note") { Attribute("text", .string) } },
         destination: model { person },
         data: #"{"Person": [{"_id": "a", "name": "Ada"}], "Note": [{"_id": "n", "text": "x"}]}"#) { doc in
        #expect(doc["Note"] == nil)
        #expect(doc["Person"]?.count == 1)
    },
    Rule(name: "add attributes (optional, with a default)", source: model { person },
         destination: model { Entity("Person") {
             Attribute("name", .string, optional: false); Attribute("age", .integer16)
             Attribute("email", .string); Attribute("score", .integer32, optional: false, default: .integer(10))
         } },
         data: #"{"Person": [{"_id": "a", "name": "Ada", "age": 36}]}"#) { doc in
        let p = doc["Person"]?.first
        #expect(p?["email"] is NSNull)
        #expect(p?["score"] as? Int == 10)
        #expect(p?["age"] as? Int == 36)
    },
    Rule(name: "remove an attribute", source: model { person },
         destination: model { Entity("Person") { Attribute("name", .string, optional: false) } },
         data: #"{"Person": [{"_id": "a", "name": "Ada", "age": 36}]}"#) { doc in
        #expect(doc["Person"]?.first?["age"] == nil)
        #expect(doc["Person"]?.first?["name"] as? String == "Ada")
    },
    Rule(name: "rename an entity and an attribute through renaming identifiers", source: model { person },
         destination: model { Entity("Human", renamingIdentifier: "Person") {
             Attribute("fullName", .string, optional: false, renamingIdentifier: "name"); Attribute("age", .integer16)
         } },
         data: #"{"Person": [{"_id": "a", "name": "Ada", "age": 36}]}"#) { doc in
        #expect(doc["Human"]?.first?["fullName"] as? String == "Ada")
        #expect(doc["Human"]?.first?["_id"] as? String == "Human/1")
    },
    Rule(name: "renames chain across versions",
         source: model { Entity("Human", renamingIdentifier: "Person") { Attribute("fullName", .string, renamingIdentifier: "name") } },
         destination: model { Entity("Being", renamingIdentifier: "Person") { Attribute("label", .string, renamingIdentifier: "name") } },
         data: #"{"Human": [{"_id": "a", "fullName": "Ada"}]}"#) { doc in
        #expect(doc["Being"]?.first?["label"] as? String == "Ada")
    },
    Rule(name: "rename, add and remove relationships; to-one becomes to-many",
         source: model {
             Entity("Person") { Attribute("name", .string); Relationship("pet", to: "Pet", inverse: "owner"); Relationship("car", to: "Pet") }
             Entity("Pet") { Attribute("name", .string); Relationship("owner", to: "Person", inverse: "pet") }
         },
         destination: model {
             Entity("Person") { Attribute("name", .string); Relationship("pets", to: "Pet", inverse: "keeper", toMany: true, renamingIdentifier: "pet")
                                Relationship("friends", to: "Person", inverse: "friends", toMany: true) }
             Entity("Pet") { Attribute("name", .string); Relationship("keeper", to: "Person", inverse: "pets", renamingIdentifier: "owner") }
         },
         data: #"{"Person": [{"_id": "a", "name": "Ada", "pet": "r", "car": "t"}], "Pet": [{"_id": "r", "name": "Rex"}, {"_id": "t", "name": "Tom"}]}"#) { doc in
        #expect(doc["Person"]?.first?["pets"] as? [String] == ["Pet/1"])
        #expect(doc["Person"]?.first?["friends"] as? [String] == [])
        #expect(doc["Pet"]?.first?["keeper"] as? String == "Person/1")
        #expect(doc["Pet"]?[1]["keeper"] is NSNull)
    },
    Rule(name: "to-many becomes to-one (the first object is kept)",
         source: model {
             Entity("Person") { Attribute("name", .string); Relationship("pets", to: "Pet", inverse: "owner", toMany: true) }
             Entity("Pet") { Attribute("name", .string); Relationship("owner", to: "Person", inverse: "pets") }
         },
         destination: model {
             Entity("Person") { Attribute("name", .string); Relationship("pets", to: "Pet", inverse: "owner") }
             Entity("Pet") { Attribute("name", .string); Relationship("owner", to: "Person", inverse: "pets") }
         },
         data: #"{"Person": [{"_id": "a", "name": "Ada", "pets": ["r"]}, {"_id": "b", "name": "Bob"}], "Pet": [{"_id": "r", "name": "Rex"}]}"#) { doc in
        #expect(doc["Person"]?.first?["pets"] as? String == "Pet/1")
        #expect(doc["Pet"]?.first?["owner"] as? String == "Person/1")
        #expect(doc["Person"]?[1]["pets"] is NSNull)
    },
    Rule(name: "required becomes optional; optional becomes required with a default",
         source: model { Entity("Person") { Attribute("name", .string, optional: false); Attribute("age", .integer16) } },
         destination: model { Entity("Person") { Attribute("name", .string); Attribute("age", .integer16, optional: false, default: .integer(18)) } },
         data: #"{"Person": [{"_id": "a", "name": "Ada", "age": 36}, {"_id": "b", "name": "Bob"}]}"#) { doc in
        #expect(doc["Person"]?.map { $0["age"] as? Int } == [36, 18])
    },
    Rule(name: "unordered becomes ordered, and back",
         source: model {
             Entity("List") { Relationship("items", to: "Item", inverse: "list", toMany: true); Relationship("tags", to: "Item", toMany: true, ordered: true) }
             Entity("Item") { Attribute("n", .integer16); Relationship("list", to: "List", inverse: "items") }
         },
         destination: model {
             Entity("List") { Relationship("items", to: "Item", inverse: "list", toMany: true, ordered: true); Relationship("tags", to: "Item", toMany: true) }
             Entity("Item") { Attribute("n", .integer16); Relationship("list", to: "List", inverse: "items") }
         },
         data: #"{"List": [{"_id": "l", "items": ["a", "b"], "tags": ["b", "a"]}], "Item": [{"_id": "a", "n": 1}, {"_id": "b", "n": 2}]}"#) { doc in
        #expect(doc["List"]?.first?["items"] as? [String] == ["Item/1", "Item/2"])
        #expect(doc["List"]?.first?["tags"] as? [String] == ["Item/1", "Item/2"])
    },
    Rule(name: "a new parent, a property moving up, a new child",
         source: model { Entity("Car") { Attribute("wheels", .integer16); Attribute("name", .string) } },
         destination: model {
             Entity("Vehicle", abstract: true) { Attribute("wheels", .integer16) }
             Entity("Car", parent: "Vehicle") { Attribute("name", .string) }
             Entity("SportsCar", parent: "Car") { Attribute("topSpeed", .double) }
         },
         data: #"{"Car": [{"_id": "c", "wheels": 4, "name": "Beetle"}]}"#) { doc in
        #expect(doc["Car"]?.first?["wheels"] as? Int == 4)
        #expect(doc["Car"]?.first?["name"] as? String == "Beetle")
        #expect(doc["SportsCar"]?.isEmpty == true)
    },
    Rule(name: "a property moving down; an entity moving out of a hierarchy",
         source: model {
             Entity("Vehicle") { Attribute("wheels", .integer16); Attribute("name", .string) }
             Entity("Car", parent: "Vehicle") { Attribute("seats", .integer16) }
             Entity("Boat", parent: "Vehicle") { Attribute("sails", .integer16) }
         },
         destination: model {
             Entity("Vehicle") { Attribute("name", .string) }
             Entity("Car", parent: "Vehicle") { Attribute("seats", .integer16); Attribute("wheels", .integer16) }
             Entity("Boat") { Attribute("sails", .integer16); Attribute("name", .string) }
         },
         data: #"{"Vehicle": [{"_id": "v", "name": "cart", "wheels": 2}], "Car": [{"_id": "c", "name": "Beetle", "wheels": 4, "seats": 4}], "Boat": [{"_id": "b", "name": "Dinghy", "sails": 1}]}"#) { doc in
        #expect(doc["Car"]?.first?["wheels"] as? Int == 4)
        #expect(doc["Vehicle"]?.first?["name"] as? String == "cart")
        #expect(doc["Boat"]?.first?["name"] as? String == "Dinghy")
        #expect(doc["Boat"]?.first?["sails"] as? Int == 1)
    },
    Rule(name: "an entity moving into a hierarchy gets keys that do not collide",
         source: model {
             Entity("Animal") { Attribute("name", .string) }
             Entity("Robot") { Attribute("name", .string); Attribute("model", .string) }
         },
         destination: model {
             Entity("Animal") { Attribute("name", .string) }
             Entity("Robot", parent: "Animal") { Attribute("model", .string) }
         },
         data: #"{"Animal": [{"_id": "a", "name": "Rex"}], "Robot": [{"_id": "r", "name": "R2", "model": "astromech"}]}"#) { doc in
        #expect(doc["Animal"]?.first?["name"] as? String == "Rex")
        #expect(doc["Robot"]?.first?["model"] as? String == "astromech")
        #expect(doc["Robot"]?.first?["_id"] as? String != "Robot/1", "Animal/1 holds key 1 of the hierarchy")
    },
    Rule(name: "lossless widenings, behind the option",
         source: model { Entity("M") { Attribute("a", .integer16); Attribute("b", .float); Attribute("c", .integer64); Attribute("d", .double) } },
         destination: model { Entity("M") { Attribute("a", .integer64); Attribute("b", .double); Attribute("c", .string); Attribute("d", .string) } },
         data: #"{"M": [{"_id": "m", "a": 7, "b": 0.5, "c": 123, "d": 2.5}]}"#, options: .allowLosslessWidening) { doc in
        let m = doc["M"]?.first
        #expect(m?["a"] as? Int == 7)
        #expect(m?["b"] as? Double == 0.5)
        #expect(m?["c"] as? String == "123")
        #expect(m?["d"] as? String == "2.5")
    },
]

@Suite("Lightweight migration")
struct LightweightTests {
    @Test("each rule, with data before and after", arguments: rules, ["sqlite", "memory", "lmdb"])
    func rule(_ rule: Rule, _ backend: String) throws {
        rule.check(try migrateInferred(rule.source, rule.destination, data: rule.data, backend: backend, options: rule.options))
    }

    @Test("what cannot be inferred is explained, one line per blocking change")
    func explanations() throws {
        let source = model {
            Entity("Contact") { Attribute("fullName", .string); Attribute("identifier", .integer64); Attribute("nick", .string)
                                Relationship("home", to: "Place") }
            Entity("Place") { Attribute("name", .string) }
            Entity("Shape") {}
            Entity("Circle", parent: "Shape") {}
            Entity("Colour") {}
            Entity("Red", parent: "Colour") {}
            Entity("Kept") { Attribute("x", .string) }
        }
        let destination = model {
            Entity("Contact") { Attribute("firstName", .string, optional: false); Attribute("identifier", .string)
                                Attribute("nick", .string, optional: false); Relationship("home", to: "Kept")
                                Relationship("office", to: "Place", optional: false) }
            Entity("Place") { Attribute("name", .string) }
            Entity("Thing", abstract: true) {}
            Entity("Shape", parent: "Thing") {}
            Entity("Circle", parent: "Shape") {}
            Entity("Colour", parent: "Thing") {}
            Entity("Red", parent: "Colour") {}
            Entity("Kept", abstract: true) { Attribute("x", .string) }
        }
        do {
            _ = try MappingInference.inferredMapping(from: source, to: destination)
            Issue.record("an impossible mapping was inferred")
        } catch let error as InferenceError {
            let lines = Set(error.blockingChanges)
            #expect(lines.contains("Contact.identifier: type changed from Integer 64 to String"))
            #expect(lines.contains("Contact.firstName: required, has no default, and no source property"))
            #expect(lines.contains("Contact.nick: changed from optional to required and has no default value"))
            #expect(lines.contains("Contact.home: destination changed from Place to Kept"))
            #expect(lines.contains("Contact.office: required, and no source relationship"))
            #expect(lines.contains("Thing: merges the hierarchies of Colour and Shape, which is not inferable"))
            #expect(lines.contains("Kept: becomes abstract, so the objects of Kept have nowhere to go"))
            #expect(lines.count == 7, "\(error.blockingChanges)")
            #expect(error.description.hasPrefix("no lightweight migration can be inferred:\n"))
        }
        // The widening option makes the type change inferable, and nothing else.
        let widened = MappingInference.blockingChanges(from: source, to: destination, options: .allowLosslessWidening)
        #expect(!widened.contains("Contact.identifier: type changed from Integer 64 to String"))
        #expect(widened.count == 6)
        // Narrowing is never inferable.
        #expect(MappingInference.blockingChanges(from: model { Entity("M") { Attribute("a", .integer64) } },
                                                 to: model { Entity("M") { Attribute("a", .integer16) } },
                                                 options: .allowLosslessWidening) == ["M.a: type changed from Integer 64 to Integer 16"])
    }

    @Test("the diff lists every change and says whether it is lightweight")
    func diff() throws {
        let source = model {
            Entity("Contact") { Attribute("fullName", .string); Attribute("identifier", .integer64) }
            Entity("Old") {}
        }
        let destination = model {
            Entity("Contact") { Attribute("name", .string, renamingIdentifier: "fullName"); Attribute("identifier", .string); Attribute("email", .string) }
            Entity("New") {}
        }
        let diff = ModelDiff(from: source, to: destination)
        #expect(diff.entities.map(\.entity) == ["Contact", "New", "Old"])
        let contact = try #require(diff.entities.first)
        #expect(contact.changes.contains("~ attribute name: renamed from fullName"))
        #expect(contact.changes.contains("~ attribute identifier: type Integer 64 -> String"))
        #expect(contact.changes.contains("+ attribute email: String, optional"))
        #expect(!diff.isLightweight)
        #expect(diff.blockingChanges == ["Contact.identifier: type changed from Integer 64 to String"])
    }
}
