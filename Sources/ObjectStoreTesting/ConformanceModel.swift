import Foundation
import ObjectModel

extension StoreConformance {
    /// The model every check uses: every attribute type, inheritance with an
    /// abstract root, to-one, to-many, ordered, many-to-many and self-referential relationships.
    public static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(versionIdentifiers: ["conformance-1"]) {
                Entity("Item") {
                    Attribute("name", .string)
                    Attribute("i16", .integer16)
                    Attribute("i32", .integer32)
                    Attribute("i64", .integer64)
                    Attribute("decimal", .decimal)
                    Attribute("double", .double)
                    Attribute("float", .float)
                    Attribute("string", .string)
                    Attribute("flag", .boolean)
                    Attribute("date", .date)
                    Attribute("data", .binaryData)
                    Attribute("uuid", .uuid)
                    Attribute("uri", .uri)
                    Attribute("payload", .transformable)
                }
                Entity("Person") {
                    Attribute("name", .string, optional: false)
                    Attribute("age", .integer32)
                    Attribute("nickname", .string)
                    Relationship("pets", to: "Pet", inverse: "owner", toMany: true, deleteRule: .cascade)
                    Relationship("spouse", to: "Person", inverse: "spouse")
                    Relationship("friends", to: "Person", inverse: "friends", toMany: true)
                    Relationship("manager", to: "Person", inverse: "reports")
                    Relationship("reports", to: "Person", inverse: "manager", toMany: true)
                }
                Entity("Pet") {
                    Attribute("name", .string)
                    Relationship("owner", to: "Person", inverse: "pets")
                }
                Entity("Playlist") {
                    Attribute("name", .string)
                    Relationship("tracks", to: "Track", inverse: "playlist", toMany: true, ordered: true)
                }
                Entity("Track") {
                    Attribute("title", .string)
                    Relationship("playlist", to: "Playlist", inverse: "tracks")
                    Relationship("tags", to: "Tag", inverse: "tracks", toMany: true)
                }
                Entity("Tag") {
                    Attribute("label", .string)
                    Relationship("tracks", to: "Track", inverse: "tags", toMany: true)
                }
                Entity("Vehicle", abstract: true) {
                    Attribute("wheels", .integer16)
                }
                Entity("Car", parent: "Vehicle") {
                    Attribute("seats", .integer16)
                }
                Entity("SportsCar", parent: "Car") {
                    Attribute("topSpeed", .double)
                }
                Entity("Truck", parent: "Vehicle") {
                    Attribute("payload", .integer32)
                }
            }
        } catch {
            preconditionFailure("the conformance model is inconsistent: \(error)")
        }
    }()
}
