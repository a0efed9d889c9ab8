import Foundation
import Testing
import ObjectModel
import TestSupport

/// `objectstore migrate`, run as a user runs it: a bundle of three Xcode model versions, a
/// mapping file for the step that cannot be inferred, a store made and filled by the tool.
@Suite("objectstore migrate")
struct MigrateCommandTests {
    static func version(_ extra: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Note" syncable="YES">
                <attribute name="title" attributeType="String"/>
                <attribute name="body" optional="YES" attributeType="String"/>
                \(extra)
            </entity>
        </model>
        """
    }

    static let stars = #"<attribute name="stars" optional="YES" attributeType="Integer 16" usesScalarValueType="YES"/>"#
    static let shout = #"<attribute name="shout" attributeType="String"/>"#
    static let mapping = """
        {"format": "objectstore-mapping", "formatVersion": 1, "sourceVersion": "Notes 2", "destinationVersion": "Notes 3",
         "entityMappings": [{"name": "NoteToNote", "kind": "transform", "source": "Note", "destination": "Note",
           "attributes": {"title": "$source.title", "body": "$source.body", "stars": "$source.stars", "shout": "uppercase($source.title)"}}]}
        """

    /// The bundle, the mapping file and a store at the first version with two notes.
    func setUp(_ workspace: Workspace, _ ext: String = "sqlite") throws -> (bundle: String, mapping: String, store: String) {
        _ = try workspace.write(Self.version(""), to: "Notes.xcdatamodeld/Notes.xcdatamodel/contents")
        _ = try workspace.write(Self.version(Self.stars), to: "Notes.xcdatamodeld/Notes 2.xcdatamodel/contents")
        _ = try workspace.write(Self.version(Self.stars + Self.shout), to: "Notes.xcdatamodeld/Notes 3.xcdatamodel/contents")
        let bundle = workspace.url.appending(path: "Notes.xcdatamodeld").path
        let mapping = try workspace.write(Self.mapping, to: "to-3.json")
        let data = try workspace.write(#"{"Note": [{"_id": "a", "title": "hello", "body": "x"}, {"_id": "b", "title": "zoë"}]}"#, to: "notes.json")
        let store = workspace.url.appending(path: "notes.\(ext)").path
        #expect(try CLI.run("create", store, "--model", bundle, "--model-version", "Notes").status == 0)
        #expect(try CLI.run("import", store, data, "--model", bundle, "--model-version", "Notes").status == 0)
        return (bundle, mapping, store)
    }

    /// Every file under the workspace (folders walked) with its bytes, but SQLite's shared-memory
    /// index and the lock files, which every reader writes by design and which hold no data.
    func files(_ workspace: Workspace) throws -> [String: Data] {
        func isFolder(_ path: String) -> Bool {
            var folder: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &folder) && folder.boolValue
        }
        var files: [String: Data] = [:]
        let root = workspace.url.path
        for case let path as String in FileManager.default.enumerator(atPath: root)! where !path.hasSuffix("-shm") && !path.hasSuffix("-lock") {
            let full = root + "/" + path
            if !isFolder(full) { files[path] = try Data(contentsOf: URL(filePath: full)) }
        }
        return files
    }

    @Test("the plan, then the run, then the values as the mapping computes them; at the target: already at, nothing touched",
          arguments: ["sqlite", "lmdb", "atomic"])
    func migrate(_ ext: String) throws {
        let workspace = try Workspace()
        let (bundle, mapping, store) = try setUp(workspace, ext)
        let result = try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "Notes -> Notes 2: lightweight\nNotes 2 -> Notes 3: mapping \(mapping)\nmigrated \(store) from Notes to Notes 3\n")
        let export = try CLI.run("export", store)
        #expect(export.status == 0)
        let notes = try #require((try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [String: [[String: Any]]])?["Note"])
        let byTitle = Dictionary(uniqueKeysWithValues: notes.map { ($0["title"] as? String ?? "", $0) })
        #expect(byTitle["hello"]?["shout"] as? String == "HELLO" && byTitle["hello"]?["body"] as? String == "x")
        #expect(byTitle["zoë"]?["shout"] as? String == "ZOË" && byTitle["zoë"]?["body"] is NSNull)
        #expect(notes.allSatisfy { $0["stars"] is NSNull })
        let before = try files(workspace)
        let again = try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping)
        #expect(again.status == 0 && again.stdout == "already at Notes 3\n")
        #expect(try files(workspace) == before)
        // A run killed after it put its store in place left its lock file: the next run, with
        // nothing to migrate, sweeps it (a dry run leaves it).
        let stem = ".notes.\(ext).migrating-\(UUID().uuidString)"
        _ = try workspace.write("", to: stem + ".lock")
        #expect(try CLI.run("migrate", store, "--model", bundle, "--dry-run").stdout.contains("already at Notes 3"))
        #expect(FileManager.default.fileExists(atPath: workspace.url.appending(path: stem + ".lock").path), "a dry run changes nothing")
        let swept = try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping)
        #expect(swept.status == 0 && swept.stdout == "already at Notes 3\n")
        #expect(swept.stderr.contains("removed \(stem), left by an interrupted run"), "\(swept.stderr)")
        #expect(try files(workspace) == before)
    }

    @Test("a migration is one transaction of the store's history by --author, its token after every earlier one, in place or by copy",
          arguments: ["sqlite", "lmdb", "atomic"])
    func migrationInHistory(_ ext: String) throws {
        let workspace = try Workspace()
        let (bundle, _, store) = try setUp(workspace, ext)
        let before = try CLI.run("history", store).stdout.split(separator: "\n")
        // Notes -> Notes 2 adds an optional attribute: in place for SQLite, by copy for the others.
        let migrated = try CLI.run("migrate", store, "--model", bundle, "--to", "Notes 2", "--author", "release 2")
        #expect(migrated.status == 0, "\(migrated.stderr)")
        let after = try CLI.run("history", store, "--json").stdout.split(separator: "\n")
        let last = try #require(after.last.flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        #expect(last["author"] as? String == "release 2")
        #expect((last["token"] as? Int ?? 0) > before.count, "\(after)")
    }

    @Test("--dry-run prints the plan and the counts and changes no byte; --json is one document")
    func dryRun() throws {
        let workspace = try Workspace()
        let (bundle, mapping, store) = try setUp(workspace)
        let before = try files(workspace)
        let dry = try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping, "--dry-run")
        #expect(dry.status == 0)
        #expect(dry.stdout == "Notes -> Notes 2: lightweight\nNotes 2 -> Notes 3: mapping \(mapping)\nNote 2\n")
        let json = try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping, "--dry-run", "--json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(document["status"] as? String == "planned" && document["from"] as? String == "Notes" && document["to"] as? String == "Notes 3")
        #expect((document["steps"] as? [[String: Any]])?.map { $0["kind"] as? String } == ["lightweight", "mapping"])
        #expect(try files(workspace) == before)
        let ran = try CLI.run("migrate", store, "--model", bundle, "--json", "--to", "Notes 2")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(ran.stdout.utf8)) as? [String: Any])
        let steps = try #require(result["steps"] as? [[String: Any]])
        #expect(result["status"] as? String == "migrated" && steps.count == 1 && steps[0]["objects"] as? Int == 2 && steps[0]["seconds"] is Double)
    }

    @Test("errors: no mapping for a step, a mapping that fits no step, an unknown version: exit 1, one message, the store unchanged; usage 64")
    func errors() throws {
        let workspace = try Workspace()
        let (bundle, mapping, store) = try setUp(workspace)
        let stray = try workspace.write(Self.mapping.replacingOccurrences(of: "\"Notes 2\"", with: "\"Notes\""), to: "stray.json")
        let otherModel = try workspace.write(Self.version(#"<attribute name="x" attributeType="Boolean"/>"#), to: "Other.xcdatamodel/contents")
        let before = try files(workspace)
        let none = try CLI.run("migrate", store, "--model", bundle)
        #expect(none.status == 1 && none.stdout.isEmpty)
        #expect(none.stderr.contains("Notes 2 -> Notes 3") && none.stderr.contains("shout"), "\(none.stderr)")
        let unused = try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping, "--mapping", stray)
        #expect(unused.status == 1 && unused.stderr.contains("\(stray): matches no step"), "\(unused.stderr)")
        let other = try CLI.run("migrate", store, "--model", otherModel)
        #expect(other.status == 1 && other.stderr.contains("no model version matches"), "\(other.stderr)")
        #expect(try files(workspace) == before)
        #expect(try CLI.run("migrate", store, "--model", bundle, "--next", "Notes").status == 64)
        #expect(try CLI.run("migrate", store, "--model", bundle, "--next", "a=b", "--next", "a=c").status == 64, "what comes after a, twice")
        #expect(try CLI.run("migrate", store, "--model", bundle, "--next", "a=a").status == 64)
        #expect(try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping, "--mapping", mapping).status == 64)
        // Without --model the store's own (embedded) model is its only version: nothing to do.
        let own = try CLI.run("migrate", store)
        #expect(own.status == 0 && own.stdout == "already at store model\n", "\(own.stdout) \(own.stderr)")
        #expect(try files(workspace) == before)
    }

    /// A store made with a model no version of the bundle has (a development build's: Notes 2
    /// with a `mood`), holding two notes.
    func devStore(_ workspace: Workspace, _ ext: String, name: String = "dev") throws -> String {
        _ = try workspace.write(Self.version(Self.stars + #"<attribute name="mood" optional="YES" attributeType="String"/>"#),
                                        to: "Dev.xcdatamodel/contents")
        let data = try workspace.write(#"{"Note": [{"_id": "a", "title": "hello", "mood": "sunny"}, {"_id": "b", "title": "zoë"}]}"#, to: "dev.json")
        let store = workspace.url.appending(path: "\(name).\(ext)").path
        #expect(try CLI.run("import", store, data, "--model", workspace.url.appending(path: "Dev.xcdatamodel").path).status == 0)
        return store
    }

    @Test("--on-incompatible move-aside and recreate on a store of no version of the bundle: a fresh store at the target, the old files moved into Incompatible/ or gone; exit 0",
          arguments: ["sqlite", "lmdb", "atomic"])
    func onIncompatible(_ ext: String) throws {
        let workspace = try Workspace()
        let (bundle, _, _) = try setUp(workspace, ext)
        let store = try devStore(workspace, ext)
        let before = try CLI.run("export", store).stdout
        let moved = try CLI.run("migrate", store, "--model", bundle, "--on-incompatible", "move-aside")
        #expect(moved.status == 0, "\(moved.stderr)")
        let line = try #require(moved.stdout.split(separator: "\n").first { $0.hasPrefix("moved aside: ") })
        let aside = String(line.dropFirst("moved aside: ".count))
        #expect(aside.hasPrefix(workspace.url.appending(path: "Incompatible").path + "/dev-"))
        // The moved store reads as the store did (its text against the import's: both notes, the mood kept).
        let old = try CLI.run("export", aside)
        #expect(old.status == 0 && old.stdout == before && old.stdout.contains("sunny"), "\(old.stderr)")
        let fresh = try CLI.run("migrate", store, "--model", bundle)
        #expect(fresh.stdout == "already at Notes 3\n")
        #expect(try CLI.run("inspect", store).stdout.contains("Note 0"))
        let again = try devStore(workspace, ext, name: "again")
        let recreated = try CLI.run("migrate", again, "--model", bundle, "--on-incompatible", "recreate")
        #expect(recreated.status == 0 && recreated.stdout.hasPrefix("recreated "), "\(recreated.stderr)")
        #expect(try CLI.run("inspect", again).stdout.contains("Note 0"))
        #expect(try CLI.run("migrate", again, "--model", bundle).stdout == "already at Notes 3\n")
    }

    @Test("--on-incompatible refuses, every file unchanged: a wrong --type, --to an older version, another model, one .xcdatamodel of the bundle, a version the bundle has, a damaged store",
          arguments: ["sqlite", "lmdb", "atomic"])
    func refusals(_ ext: String) throws {
        let workspace = try Workspace()
        let (bundle, _, store) = try setUp(workspace, ext)
        _ = try workspace.write(#"<?xml version="1.0"?><model type="com.apple.IDECoreDataModeler.DataModel"><entity name="Invoice"><attribute name="total" attributeType="Double"/></entity></model>"#,
                                        to: "Invoices.xcdatamodeld/Invoices.xcdatamodel/contents")
        _ = try workspace.write(#"<?xml version="1.0"?><model type="com.apple.IDECoreDataModeler.DataModel"><entity name="Invoice"><attribute name="total" attributeType="Float"/></entity></model>"#,
                                to: "Invoices.xcdatamodeld/Invoices 2.xcdatamodel/contents")
        let invoices = workspace.url.appending(path: "Invoices.xcdatamodeld").path
        // A store at Notes 2 (migrated there) for --to an older version.
        #expect(try CLI.run("migrate", store, "--model", bundle, "--to", "Notes 2").status == 0)
        // A store at Notes 2 whose recorded hash of Note has one bit flipped (in every copy the file
        // holds: LMDB keeps earlier pages too): no version matches, and it is damaged.
        let flipped = workspace.url.appending(path: "flipped.\(ext)").path
        #expect(try CLI.run("convert", store, flipped).status == 0)
        let hash = try #require(try ModelLoader.loadModel(at: URL(filePath: bundle), version: "Notes 2").versionHashes["Note"])
        var bytes = try Data(contentsOf: URL(filePath: flipped))
        var copies = 0
        while let at = bytes.firstRange(of: hash) {
            bytes[at.lowerBound + 5] ^= 0x10
            copies += 1
        }
        #expect(copies > 0)
        try bytes.write(to: URL(filePath: flipped))
        let wrongType = ext == "sqlite" ? "lmdb" : "sqlite"
        let before = try files(workspace)
        for policy in ["recreate", "move-aside"] {
            let cases: [([String], String)] = [
                ([store, "--type", wrongType, "--model", bundle], "its content says it is a store of type"),
                ([store, "--model", bundle, "--to", "Notes"], "at version Notes 2 of the model"),
                ([store, "--model", invoices], "shares no entity with the model"),
                ([store, "--model", bundle + "/Notes.xcdatamodel"], "has one version"),
                ([store, "--model", bundle], "at version Notes 2 of the model"),   // Notes 2 -> Notes 3 has no mapping
                ([flipped, "--model", bundle], "damaged"),
            ]
            for (arguments, reason) in cases {
                let result = try CLI.run(["migrate"] + arguments + ["--on-incompatible", policy])
                #expect(result.status != 0 && !result.signaled && result.stdout.isEmpty, "\(arguments) \(policy): \(result.stdout)")
                #expect(result.stderr.contains(reason), "\(arguments) \(policy): \(result.stderr)")
            }
        }
        #expect(try files(workspace) == before)
        #expect(!FileManager.default.fileExists(atPath: workspace.url.appending(path: "Incompatible").path))
    }

    @Test("a mapping file with a mistake is refused by the dry run already, naming the file, the step and the key path; --json with --on-incompatible is one document; a damaged store is left as it is")
    func mistakes() throws {
        let workspace = try Workspace()
        let (bundle, _, store) = try setUp(workspace)
        let typo = try workspace.write(Self.mapping.replacingOccurrences(of: "$source.body", with: "$source.bdoy"), to: "typo.json")
        let dry = try CLI.run("migrate", store, "--model", bundle, "--mapping", typo, "--dry-run")
        #expect(dry.status == 1 && dry.stderr.contains(typo) && dry.stderr.contains("Notes 2 -> Notes 3") && dry.stderr.contains("bdoy"), "\(dry.stderr)")
        let dev = try devStore(workspace, "sqlite")
        let json = try CLI.run("migrate", dev, "--model", bundle, "--on-incompatible", "recreate", "--json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(document["status"] as? String == "recreated" && document["to"] as? String == "Notes 3")
        let junkText = "SQLite format 3\u{0}" + String(repeating: "x", count: 200)
        let junk = try workspace.write(junkText, to: "junk.sqlite")
        let moved = try CLI.run("migrate", junk, "--model", bundle, "--on-incompatible", "move-aside")
        #expect(moved.status == 1 && moved.stderr.contains("damaged") && moved.stdout.isEmpty, "\(moved.stderr)")
        #expect(try Data(contentsOf: URL(filePath: junk)) == Data(junkText.utf8))
    }
}
