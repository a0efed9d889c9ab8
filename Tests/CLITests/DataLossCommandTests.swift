import Foundation
import Testing
import TestSupport

/// `objectstore migrate` and the data a step would drop: named in the plan with its count in the
/// store, refused with the store untouched unless `--allow-data-loss`, not counted when a mapping
/// reads it. The oracle is the input document and the files on disk, never a second run of ours.
@Suite("objectstore migrate: the data-loss gate")
struct DataLossCommandTests {
    /// Blog 1: Post(title, date, tags ↔ Tag.posts), Tag(name). Blog 2: Post(title, date). Blog 3: Post(title).
    static func blog(_ version: Int) -> String {
        let date = version < 3 ? #"<attribute name="date" optional="YES" attributeType="Date"/>"# : ""
        let tags = version == 1 ? #"<relationship name="tags" optional="YES" toMany="YES" destinationEntity="Tag" inverseName="posts"/>"# : ""
        let tag = version == 1 ? """
            <entity name="Tag"><attribute name="name" optional="YES" attributeType="String"/>\
            <relationship name="posts" optional="YES" toMany="YES" destinationEntity="Post" inverseName="tags"/></entity>
            """ : ""
        return """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Post"><attribute name="title" attributeType="String"/>\(date)\(tags)</entity>\(tag)
            </model>
            """
    }

    /// Three posts, two dated and linked to tags (three links), and two tags.
    static let posts = """
        {"Post": [{"_id": "a", "title": "one", "date": "2020-01-02T03:04:05Z", "tags": ["t", "u"]},
                  {"_id": "b", "title": "two", "date": "2021-05-06T07:08:09Z", "tags": ["t"]},
                  {"_id": "c", "title": "three"}],
         "Tag": [{"_id": "t", "name": "swift"}, {"_id": "u", "name": "data"}]}
        """

    func setUp(_ workspace: Workspace, _ ext: String, document: String = posts) throws -> (bundle: String, store: String) {
        for version in 1...3 { _ = try workspace.write(Self.blog(version), to: "Blog.xcdatamodeld/Blog \(version).xcdatamodel/contents") }
        let bundle = workspace.url.appending(path: "Blog.xcdatamodeld").path
        let data = try workspace.write(document, to: "posts.json")
        let store = workspace.url.appending(path: "blog.\(ext)").path
        #expect(try CLI.run("create", store, "--model", bundle, "--model-version", "Blog 1").status == 0)
        let imported = try CLI.run("import", store, data, "--model", bundle, "--model-version", "Blog 1")
        #expect(imported.status == 0, "\(imported.stderr)")
        return (bundle, store)
    }

    /// Every file of the workspace with its bytes, but the lock and shared-memory files readers write.
    func files(_ workspace: Workspace) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for case let path as String in FileManager.default.enumerator(atPath: workspace.url.path)!
        where !path.hasSuffix("-shm") && !path.hasSuffix("-lock") {
            let url = workspace.url.appending(path: path)
            if (try? url.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) != true { files[path] = try Data(contentsOf: url) }
        }
        return files
    }

    @Test("a chain that drops an entity, a relationship's links and an attribute's values names each with its count; refused untouched; run when allowed",
          arguments: ["sqlite", "lmdb", "atomic"])
    func chainDrops(_ ext: String) throws {
        let workspace = try Workspace()
        let (bundle, store) = try setUp(workspace, ext)
        let plan = ["Blog 1 -> Blog 2: \(ext == "sqlite" ? "in-place" : "lightweight"); drops entity Tag (2 objects), Post.tags (3 links)",
                    "Blog 2 -> Blog 3: \(ext == "sqlite" ? "in-place" : "lightweight"); drops Post.date (2 values)"]
        let dry = try CLI.run("migrate", store, "--model", bundle, "--dry-run")
        #expect(dry.status == 0 && dry.stdout == (plan + ["Post 3", "Tag 2"]).joined(separator: "\n") + "\n", "\(dry.stdout)")
        #expect(dry.stderr.contains("--allow-data-loss"))

        let json = try CLI.run("migrate", store, "--model", bundle, "--dry-run", "--json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let steps = try #require(document["steps"] as? [[String: Any]])
        let drops = steps.map { ($0["drops"] as? [[String: Any]] ?? []).map { "\($0["kind"]!) \($0["entity"]!).\($0["property"] ?? "-") \($0["count"]!)" } }
        #expect(drops == [["entity Tag.- 2", "relationship Post.tags 3"], ["attribute Post.date 2"]])

        let before = try files(workspace)
        let refused = try CLI.run("migrate", store, "--model", bundle)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("Blog 1 -> Blog 2 drops entity Tag (2 objects), Post.tags (3 links); Blog 2 -> Blog 3 drops Post.date (2 values)"),
                "\(refused.stderr)")
        #expect(try files(workspace) == before, "a refused migration changes no file")

        let run = try CLI.run("migrate", store, "--model", bundle, "--allow-data-loss")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == (plan + ["migrated \(store) from Blog 1 to Blog 3"]).joined(separator: "\n") + "\n")
        let export = try CLI.run("export", store, "--model", bundle)
        let exported = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [String: [[String: Any]]])
        #expect(exported.keys.sorted() == ["Post"])
        #expect(exported["Post"]?.compactMap { $0["title"] as? String }.sorted() == ["one", "three", "two"])
        #expect(exported["Post"]?.allSatisfy { $0.keys.sorted() == ["_id", "title"] } == true)
    }

    @Test("nothing held, nothing dropped: a store with no dates, tags or links migrates without the flag, the plan naming no drop",
          arguments: ["sqlite", "lmdb"])
    func nothingHeld(_ ext: String) throws {
        let workspace = try Workspace()
        let (bundle, store) = try setUp(workspace, ext, document: #"{"Post": [{"_id": "a", "title": "one"}]}"#)
        let run = try CLI.run("migrate", store, "--model", bundle)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stdout.contains("drops") && run.stdout.hasSuffix("migrated \(store) from Blog 1 to Blog 3\n"), "\(run.stdout)")
    }

    @Test("a mapping that reads the attribute does not drop it: the step runs without the flag and the values arrive where it put them")
    func mappingReads() throws {
        let workspace = try Workspace()
        let (bundle, store) = try setUp(workspace, "sqlite")
        #expect(try CLI.run("migrate", store, "--model", bundle, "--to", "Blog 2", "--allow-data-loss").status == 0)
        let mapping = try workspace.write("""
            {"format": "objectstore-mapping", "formatVersion": 1, "sourceVersion": "Blog 2", "destinationVersion": "Blog 3",
             "entityMappings": [{"name": "PostToPost", "kind": "transform", "source": "Post", "destination": "Post",
               "attributes": {"title": "join(' ', $source.title, toISO8601($source.date))"}}]}
            """, to: "to-3.json")
        let run = try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "Blog 2 -> Blog 3: mapping \(mapping)\nmigrated \(store) from Blog 2 to Blog 3\n")
        let export = try CLI.run("export", store, "--model", bundle)
        #expect(export.stdout.contains("one 2020-01-02T03:04:05.000Z") && export.stdout.contains("two 2021-05-06T07:08:09.000Z"), "\(export.stdout)")
    }

    @Test("diff marks what a removal drops, and not a relationship whose inverse carries its links")
    func diffMarks() throws {
        let workspace = try Workspace()
        for version in 1...3 { _ = try workspace.write(Self.blog(version), to: "Blog.xcdatamodeld/Blog \(version).xcdatamodel/contents") }
        let bundle = workspace.url.appending(path: "Blog.xcdatamodeld").path
        let diff = try CLI.run("diff", bundle, bundle, "--model-version-a", "Blog 1", "--model-version-b", "Blog 3")
        #expect(diff.status == 0)
        for line in ["- entity Tag (drops its objects)", "- attribute date (drops its values)", "- relationship tags (drops its links)"] {
            #expect(diff.stdout.contains(line), "\(diff.stdout)")
        }
        // A relationship renamed without a renaming identifier, its inverse kept: the links go through the inverse.
        let a = try workspace.write(Self.blog(1), to: "a.xcdatamodel/contents")
        let b = try workspace.write(Self.blog(1).replacingOccurrences(of: #"name="tags""#, with: #"name="labels""#)
            .replacingOccurrences(of: #"inverseName="tags""#, with: #"inverseName="labels""#), to: "b.xcdatamodel/contents")
        let renamed = try CLI.run("diff", URL(filePath: a).deletingLastPathComponent().path, URL(filePath: b).deletingLastPathComponent().path)
        #expect(renamed.stdout.contains("  - relationship tags\n"), "\(renamed.stdout)")
        // A property made transient keeps no value either (a relationship whose stored inverse carries its links keeps them).
        let transient = try workspace.write(Self.blog(1).replacingOccurrences(of: #"attributeType="Date"/>"#, with: #"attributeType="Date" transient="YES"/>"#)
            .replacingOccurrences(of: #"destinationEntity="Tag" inverseName="posts"/>"#, with: #"destinationEntity="Tag" inverseName="posts" transient="YES"/>"#),
                                            to: "t.xcdatamodel/contents")
        let made = try CLI.run("diff", URL(filePath: a).deletingLastPathComponent().path, URL(filePath: transient).deletingLastPathComponent().path)
        #expect(made.stdout.contains("~ attribute date: stored -> transient (drops its values)")
                && made.stdout.contains("~ relationship tags: stored -> transient\n"), "\(made.stdout)")
    }

    @Test("a store of no version of the bundle: the error names the closest version and, from the model the store carries, the attributes that differ")
    func unknownVersionNamesProperties() throws {
        let workspace = try Workspace()
        for version in 1...3 { _ = try workspace.write(Self.blog(version), to: "Blog.xcdatamodeld/Blog \(version).xcdatamodel/contents") }
        let bundle = workspace.url.appending(path: "Blog.xcdatamodeld").path
        let dev = try workspace.write(Self.blog(3).replacingOccurrences(of: "</entity>", with: #"<attribute name="mood" optional="YES" attributeType="String"/></entity>"#),
                                      to: "dev.xcdatamodel/contents")
        let store = workspace.url.appending(path: "dev.sqlite").path
        #expect(try CLI.run("create", store, "--model", URL(filePath: dev).deletingLastPathComponent().path).status == 0)
        let result = try CLI.run("migrate", store, "--model", bundle)
        #expect(result.status == 1)
        #expect(result.stderr.contains("the closest is Blog 3") && result.stderr.contains("differs from Blog 3 in Post (changed): + attribute mood: String, optional"),
                "\(result.stderr)")
    }
}
