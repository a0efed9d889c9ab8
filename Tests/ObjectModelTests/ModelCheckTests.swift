import Foundation
import ObjectModel
import Testing

@Suite("Checking models")
struct ModelCheckTests {
    @Test("every problem is listed at once")
    func everyProblem() throws {
        let entities = [
            Entity("A", attributes: [Attribute("n", .integer16, default: .string("x")), Attribute("n", .string)],
                   relationships: [Relationship("ghost", to: "Nowhere"), Relationship("b", to: "B", inverse: "notThere")]),
            Entity("B", parent: "C", attributes: [Attribute("shared", .string)]),
            Entity("C", parent: "B"),
            Entity("D", parent: "E", attributes: [Attribute("x", .string)]),
            Entity("E", attributes: [Attribute("x", .string)]),
            Entity("F", relationships: [Relationship("g", to: "G", inverse: "other")]),
            Entity("G", relationships: [Relationship("other", to: "E")]),
        ]
        do {
            _ = try ManagedObjectModel(entities: entities)
            Issue.record("an inconsistent model was built")
        } catch let error as ModelError {
            #expect(error.code == .inconsistentModel)
            let text = error.problems.joined(separator: "\n")
            #expect(text.contains("A.n: declared twice"))
            #expect(text.contains("A.n: default value"))
            #expect(text.contains("A.ghost: destination entity Nowhere does not exist"))
            #expect(text.contains("inheritance cycle"))
            #expect(text.contains("D.x: already declared by ancestor E"))
        }
        // Inverse problems surface once the structure is sound.
        do {
            _ = try ManagedObjectModel(entities: [entities[4], entities[5], entities[6],
                                                  Entity("H", relationships: [Relationship("e", to: "E", inverse: "missing")])])
            Issue.record("inverses that do not point back were accepted")
        } catch let error as ModelError {
            let text = error.problems.joined(separator: "\n")
            #expect(text.contains("F.g: inverse G.other points to E, not back to F"))
            #expect(text.contains("H.e: inverse missing does not exist on E"))
            #expect(error.problems.count == 2)
        }
    }

    @Test("more problems", arguments: [
        (Entity("A", uniquenessConstraints: [["nope"]]), "uniqueness constraint names unknown property nope"),
        (Entity("A", indexes: [FetchIndex(name: "i", elements: [.init("nope")])]), "index i names unknown property nope"),
        (Entity("A", attributes: [Attribute("t", .undefined)]), "only allowed on a transient attribute"),
        (Entity("A", attributes: [Attribute("s", .string, validation: ValidationRules(pattern: "(unclosed"))]), "does not compile"),
        (Entity("A", attributes: [Attribute("s", .string, validation: ValidationRules(minLength: 5, maxLength: 2))]), "minimum length 5 exceeds"),
        (Entity("A", attributes: [Attribute("s", .string, validation: ValidationRules(minValue: .integer(1)))]), "minimum value 1 does not apply"),
        (Entity("A", relationships: [Relationship("me", to: "A", toMany: true, minCount: 3, maxCount: 2)]), "minimum count 3 exceeds maximum 2"),
        (Entity("A", parent: "Missing"), "parent entity Missing does not exist"),
    ])
    func problem(_ entity: Entity, _ expected: String) {
        do {
            _ = try ManagedObjectModel(entities: [entity])
            Issue.record("accepted: \(expected)")
        } catch let error as ModelError {
            #expect(error.problems.contains { $0.contains(expected) }, "\(error.problems)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("a relationship count of 2^31 or more is a problem, never a trap in the hasher", arguments: [Int(Int32.max) + 1, 1 << 40, Int.max])
    func hugeCounts(_ count: Int) throws {
        for (min, max) in [(0, count), (count, 0)] {
            let error = try #require(throws: ModelError.self) {
                try ManagedObjectModel(entities: [Entity("A", relationships: [Relationship("b", to: "A", toMany: true, minCount: min, maxCount: max)])])
            }
            #expect(error.problems == ["A.b: a minimum or maximum count above 2147483647 (Core Data keeps counts in 32 bits)"], "\(error.problems)")
        }
        let largest = try ManagedObjectModel(entities: [Entity("A", relationships: [Relationship("b", to: "A", toMany: true, maxCount: Int(Int32.max))])])
        #expect(largest.versionHashes["A"]?.count == 32)
    }

    @Test("configurations must name existing entities; an empty model is refused")
    func configurationsAndEmpty() {
        #expect(throws: ModelError.self) {
            try ManagedObjectModel(entities: [Entity("A")], configurations: ["Main": ["A", "B"]])
        }
        #expect(throws: ModelError.self) { try ManagedObjectModel(entities: []) }
    }

    @Test("resolved entities: inherited properties, hierarchy, kinds")
    func resolution() throws {
        let model = try VersionHashTests.carModel()
        let expensive = try #require(model.entity(named: "ExpensiveSportCar"))
        #expect(expensive.ancestors == ["SportCar", "Car"])
        #expect(expensive.rootName == "Car")
        #expect(expensive.attributesByName["numberPlate"] != nil)
        #expect(expensive.relationshipsByName["owner"]?.destination == "Person")
        #expect(expensive.attributes.last?.name == "isLimitedEdition")
        #expect(model.entity(named: "Car")?.kindNames == ["Car", "ExpensiveSportCar", "SportCar"])
        #expect(model.entity(named: "Car")?.subentities == ["SportCar"])
        #expect(expensive.isKind(of: "Car") && !expensive.isKind(of: "Person"))
    }

    @Test("names start with a letter, and entities do not differ only in case")
    func names() throws {
        let error = try #require(throws: ModelError.self) {
            _ = try ManagedObjectModel {
                Entity("Person") { Attribute("name", .string) }
                Entity("PERSON") { Attribute("_hidden", .string) }
                Entity("_METADATA") { Attribute("x", .string) }
                Entity("9lives") { Attribute("x", .string) }
            }
        }
        let text = error.problems.joined(separator: "\n")
        #expect(text.contains("entities Person and PERSON differ only in case"), "\(text)")
        #expect(text.contains("PERSON._hidden: a name must start with a letter"), "\(text)")
        #expect(text.contains("entity _METADATA: a name must start with a letter"), "\(text)")
        #expect(text.contains("entity 9lives: a name must start with a letter"), "\(text)")
    }
}
