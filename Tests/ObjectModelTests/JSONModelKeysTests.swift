import Foundation
import ObjectModel
import Testing

/// A key the model format does not have is refused, naming where it is: read as nothing, `isAbstract`
/// made a concrete entity and `superentity` a root, without a word.
@Suite("JSON model format: unknown keys")
struct JSONModelKeysTests {
    @Test("unknown keys of the document, an entity, an attribute or a relationship are refused, naming the place",
          arguments: [
            (#""entities": [{"name": "A", "isAbstract": true}], "x": 1"#, "unknown key x"),
            (#""entities": [{"name": "A", "isAbstract": true}]"#, "A: unknown key isAbstract"),
            (#""entities": [{"name": "A"}, {"name": "B", "superentity": "A"}]"#, "B: unknown key superentity"),
            (#""entities": [{"name": "A", "attributes": [{"name": "t", "type": "String", "required": true}]}]"#, "A.t: unknown key required"),
            (#""entities": [{"name": "A", "relationships": [{"name": "r", "destination": "A", "isToMany": true}]}]"#, "A.r: unknown key isToMany"),
          ])
    func refused(_ body: String, _ expected: String) throws {
        let text = #"{"format": "objectstore-model", "formatVersion": 1, \#(body)}"#
        let error = try #require(throws: ModelError.self) { try JSONModelFormat.decode(Data(text.utf8)) }
        #expect(error.problems.contains { $0.contains(expected) }, "\(error.problems)")
    }

    @Test("every key the format writes reads back: a model with every property set round-trips")
    func everyKeyKnown() throws {
        let model = try ManagedObjectModel(versionIdentifiers: ["v"]) {
            Entity("Base", abstract: true) {
                Attribute("name", .string, optional: false, default: .string("x"),
                          validation: ValidationRules(minLength: 1, maxLength: 9, pattern: "[a-z]+"))
                Attribute("count", .integer32, validation: ValidationRules(minValue: .integer(0), maxValue: .integer(9)))
            }
            Entity("Leaf", parent: "Base") {
                Relationship("links", to: "Leaf", inverse: "links", toMany: true, ordered: true)
            }
        }
        let data = try JSONModelFormat.encode(model)
        #expect(try JSONModelFormat.decode(data).versionHashes == model.versionHashes)
    }
}
