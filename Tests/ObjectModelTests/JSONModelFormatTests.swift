import Foundation
import ObjectModel
import Testing

@Suite("JSON model format")
struct JSONModelFormatTests {
    /// A model that uses every feature the format carries.
    static func everything() throws -> ManagedObjectModel {
        try ManagedObjectModel(versionIdentifiers: ["2.0", "beta"], configurations: ["Local": ["Note"], "Cloud": ["Person", "Base", "Note"]]) {
            Entity("Base", abstract: true, uniquenessConstraints: [["uid"]],
                   indexes: [FetchIndex(name: "byUID", elements: [.init("uid"), .init("created", ascending: false)])],
                   renamingIdentifier: "Root", versionHashModifier: "m1") {
                Attribute("uid", .uuid, optional: false)
                Attribute("created", .date, default: .date(Date(timeIntervalSinceReferenceDate: 1.5)))
            }
            Entity("Person", parent: "Base") {
                Attribute("name", .string, optional: false, default: .string("Unnamed"),
                          validation: ValidationRules(minLength: 1, maxLength: 80, pattern: "[^\\n]+"), renamingIdentifier: "fullName")
                Attribute("age", .integer16, validation: ValidationRules(minValue: .integer(0), maxValue: .integer(200)))
                Attribute("i32", .integer32, default: .integer(-5))
                Attribute("i64", .integer64, default: .integer(Int64.min))
                Attribute("balance", .decimal, default: .decimal(Decimal(string: "12.50")!))
                Attribute("ratio", .double, default: .double(.infinity), validation: ValidationRules(minValue: .double(-1.5)))
                Attribute("weight", .float, default: .double(0.5))
                Attribute("active", .boolean, default: .boolean(true))
                Attribute("photo", .binaryData, default: .data(Data([1, 2, 3])), allowsExternalBinaryDataStorage: true)
                Attribute("homepage", .uri, default: .uri(URL(string: "https://example.com")!))
                Attribute("settings", .transformable, valueTransformerName: "JSON")
                Attribute("scratch", .undefined, transient: true)
                Attribute("kept", .string, versionHashModifier: "v2", preservesValueInHistoryOnDeletion: true, userInfo: ["a": "b"])
                Relationship("notes", to: "Note", inverse: "author", toMany: true, ordered: true, minCount: 1, maxCount: 10,
                             deleteRule: .cascade, renamingIdentifier: "memos", versionHashModifier: "r", userInfo: ["x": "y"])
                Relationship("friends", to: "Person", inverse: "friends", toMany: true, deleteRule: .noAction)
                Relationship("cache", to: "Note", transient: true)
            }
            Entity("Note") {
                Attribute("text", .string)
                Relationship("author", to: "Person", inverse: "notes", deleteRule: .deny, optional: false)
            }
        }
    }

    @Test("write, read, write again: an equal model and the same bytes")
    func roundTrip() throws {
        let model = try Self.everything()
        let data = try JSONModelFormat.encode(model)
        let decoded = try JSONModelFormat.decode(data)
        #expect(decoded == model)
        #expect(decoded.versionHashes == model.versionHashes)
        #expect(try JSONModelFormat.encode(decoded) == data)
    }

    @Test("the documented example loads")
    func documentedExample() throws {
        let text = """
        {
          "format": "objectstore-model",
          "formatVersion": 1,
          "versionIdentifiers": ["1"],
          "entities": [
            {
              "name": "Person",
              "attributes": [
                {"name": "name", "type": "String", "optional": false},
                {"name": "age", "type": "Integer 16", "default": 0, "minValue": 0}
              ],
              "relationships": [
                {"name": "pets", "destination": "Pet", "inverse": "owner", "toMany": true, "deleteRule": "cascade"}
              ]
            },
            {
              "name": "Pet",
              "attributes": [{"name": "name", "type": "String"}],
              "relationships": [{"name": "owner", "destination": "Person", "inverse": "pets"}]
            }
          ]
        }
        """
        let model = try JSONModelFormat.decode(Data(text.utf8))
        #expect(model.entityNames == ["Person", "Pet"])
        #expect(model.entity(named: "Person")?.attributesByName["age"]?.defaultValue == .integer(0))
        #expect(model.entity(named: "Pet")?.relationshipsByName["owner"]?.isToMany == false)
    }

    @Test("errors: syntax with line and column, wrong shape, wrong values")
    func errors() throws {
        do {
            _ = try JSONModelFormat.decode(Data("{\n  \"format\": \"objectstore-model\",\n  \"entities\": [,]\n}".utf8), file: "m.json")
            Issue.record("malformed JSON loaded")
        } catch let error as ModelError {
            #expect(error.code == .syntax)
            #expect(error.file == "m.json")
            #expect(error.line == 3)
            #expect(error.column != nil)
        }
        #expect(throws: ModelError.self) { try JSONModelFormat.decode(Data("{\"format\": \"other\", \"formatVersion\": 1, \"entities\": []}".utf8)) }
        #expect(throws: ModelError.self) { try JSONModelFormat.decode(Data("{\"format\": \"objectstore-model\", \"formatVersion\": 9, \"entities\": []}".utf8)) }
        #expect(throws: ModelError.self) { try JSONModelFormat.decode(Data("{\"format\": \"objectstore-model\", \"formatVersion\": 1}".utf8)) }
        let badDefault = """
        {"format": "objectstore-model", "formatVersion": 1, "entities": [{"name": "A", "attributes": [{"name": "d", "type": "Date", "default": "yesterday"}]}]}
        """
        #expect(throws: ModelError.self) { try JSONModelFormat.decode(Data(badDefault.utf8)) }
        let badType = """
        {"format": "objectstore-model", "formatVersion": 1, "entities": [{"name": "A", "attributes": [{"name": "d", "type": "Colour"}]}]}
        """
        #expect(throws: ModelError.self) { try JSONModelFormat.decode(Data(badType.utf8)) }
    }

    @Test("attribute text forms round-trip", arguments: [
        (AttributeType.integer64, Value.integer(Int64.min)), (.integer16, .integer(-32768)), (.double, .double(-0.25)),
        (.double, .double(.infinity)), (.float, .double(0.5)), (.decimal, .decimal(Decimal(string: "-1.0001")!)),
        (.string, .string(" spaced ")), (.boolean, .boolean(false)), (.date, .date(Date(timeIntervalSinceReferenceDate: 86400.5))),
        (.binaryData, .data(Data([0, 255]))), (.uuid, .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)),
        (.uri, .uri(URL(string: "file:///tmp/x")!)),
    ])
    func textForms(_ type: AttributeType, _ value: Value) {
        #expect(type.parseValue(value.textForm) == value)
        #expect(type.accepts(value))
    }
}
