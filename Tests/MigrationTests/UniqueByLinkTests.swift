import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import Testing

extension UniqueByTests {
    /// The link given on the side of the objects made unique: each Color gathers the posts of every source object it stands for.
    static let mappingFromColors = """
        {"format": "objectstore-mapping", "formatVersion": 1, "sourceVersion": "c1", "destinationVersion": "c2", "entityMappings": [
          {"name": "PostToColor", "kind": "transform", "source": "Post", "destination": "Color", "filter": "hex != nil",
           "attributes": {"hex": "lowercase($source.hex)"}, "uniqueBy": ["hex"], "relationships": {"posts": "$source"}},
          {"name": "PostToPost", "kind": "transform", "source": "Post", "destination": "Post", "attributes": {"title": "$source.title"}}]}
        """

    @Test("the link given on the unique objects' side: a Color made once for several posts holds every one of them (it held the last alone)",
          arguments: StoreMigratorTests.durable)
    func colorsHoldEveryPost(_ backend: String) throws {
        let workspace = try Workspace()
        let url = workspace.location("posts", backend)
        let hexes = ["#F00", "#f00", "#0F0"]
        let posts = (0..<30).map { i in #"{"_id": "p\#(i)", "title": "P\#(i)", "hex": "\#(hexes[i % 3])"}"# }
        try makeStore(backend, at: url, model: Self.model(1), json: #"{"Post": ["# + posts.joined(separator: ", ") + "]}")
        let versions = try ModelVersions(versions: [.init(name: "c1", model: Self.model(1)), .init(name: "c2", model: Self.model(2))])
        let mapping = try MappingFormat.decode(Data(Self.mappingFromColors.utf8))
        try StoreMigrator(versions: versions, mappings: [StepMapping(name: "colors.json", mapping: mapping)]).migrateStore(at: url, type: Backends.type(backend))
        let store = try Backends.type(backend).open(at: url, model: Self.model(2), options: StoreOptions(readOnly: true))
        defer { try? store.close() }
        let colors = try store.fetch(FetchRequest(entity: "Color"))
        #expect(colors.count == 2)
        for color in colors {
            let members = try store.relatedKeys(of: color.key, relationship: "posts")
            #expect(members.count == (color.attributes["hex"] == .string("#f00") ? 20 : 10), "\(color.attributes)")
            // Both sides agree.
            for post in members { #expect(try store.record(for: post)?.toOne["color"] == color.key) }
        }
    }
}
