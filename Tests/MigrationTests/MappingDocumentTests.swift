import Foundation
import ObjectMigration
import ObjectModel
import Testing

/// A mapping document that says less than it seems to is refused, never run as a mapping that moves nothing.
@Suite("Mapping documents: what they cannot mean is refused")
struct MappingDocumentTests {
    @Test("a key the format does not have is refused when the document is read, naming it (sourceEntity for source dropped every object)",
          arguments: [
            (#"{"name": "PostToPost", "kind": "copy", "sourceEntity": "Post", "destinationEntity": "Post"}"#, "unknown key destinationEntity"),
            (#"{"name": "PostToPost", "kind": "copy", "source": "Post", "destination": "Post", "attribute": {}}"#, "unknown key attribute"),
          ])
    func unknownKeys(_ entry: String, _ expected: String) throws {
        let text = #"{"format": "objectstore-mapping", "formatVersion": 1, "entityMappings": [\#(entry)]}"#
        let error = try #require(throws: MigrationError.self) { try MappingFormat.decode(Data(text.utf8)) }
        #expect(error.code == .invalidMapping && error.mapping == "PostToPost" && error.message.contains(expected), "\(error.message)")
        let top = #"{"format": "objectstore-mapping", "formatVersion": 1, "entityMapping": []}"#
        #expect(throws: MigrationError.self) { try MappingFormat.decode(Data(top.utf8)) }
    }

    @Test("a copy or transform mapping without its source or destination entity is refused by the check, naming it",
          arguments: [("copy", #""destination": "Post""#, "names its source entity"), ("transform", #""source": "Post""#, "names its destination entity"),
                      ("copy", "", "names its source entity"), ("add", "", "names its destination entity"), ("remove", "", "names its source entity")])
    func entitiesNamed(_ kind: String, _ entities: String, _ expected: String) throws {
        let text = #"{"format": "objectstore-mapping", "formatVersion": 1, "entityMappings": [{"name": "X", "kind": "\#(kind)"\#(entities.isEmpty ? "" : ", " + entities)}]}"#
        let mapping = try MappingFormat.decode(Data(text.utf8))
        let error = try #require(throws: MigrationError.self) { try mapping.check(from: UniqueByTests.model(1), to: UniqueByTests.model(1)) }
        #expect(error.code == .invalidMapping && error.mapping == "X" && error.message.contains(expected), "\(error.message)")
    }
}
