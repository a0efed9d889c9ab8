import Foundation
import Testing
import TestSupport

/// How the tool fails, as scripts read it: `--json` gives JSON for errors too, a missing file is
/// said one way by every command, object IDs are `Entity/pk`, and `--dry-run` says what
/// `--on-incompatible` would do without doing it.
@Suite("objectstore errors: one wording, JSON when asked")
struct ErrorContractTests {
    /// The error document of a `--json` run: its code and message.
    func errorDocument(_ stdout: String) throws -> (code: String, message: String) {
        let line = try #require(stdout.split(separator: "\n").last.map(String.init), "no output")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: [String: String]], "\(line)")
        return (try #require(document["error"]?["code"]), try #require(document["error"]?["message"]))
    }

    @Test("every command that takes --json answers a failure with {\"error\": {code, message}} on stdout, exit 1 (64 for usage)")
    func jsonErrors() throws {
        let workspace = try Workspace()
        let missing = workspace.url.appending(path: "none.sqlite").path
        for arguments in [["inspect", missing], ["history", missing], ["watch", missing], ["migrate", missing, "--model", missing],
                          ["model", "show", missing], ["diff", missing, missing]] {
            let result = try CLI.run(arguments + ["--json"])
            #expect(result.status == 1, "\(arguments)")
            let (code, message) = try errorDocument(result.stdout)
            #expect(code == "notFound" && message.hasPrefix(missing + ": no such "), "\(arguments): \(code) \(message)")
            #expect(result.stderr.hasPrefix("objectstore: " + missing + ": no such "), "the line on stderr as always")
        }
        let usage = try CLI.run("inspect", missing, "--json", "--no-such-flag")
        #expect(usage.status == 64)
        #expect(try errorDocument(usage.stdout) == ("usage", "Unknown option '--no-such-flag'"))
        // Without --json, stdout stays empty.
        #expect(try CLI.run("inspect", missing).stdout.isEmpty)
    }

    @Test("a missing file is '<path>: no such file or directory' and a missing store '<path>: no such store', whichever command reads it")
    func oneWording() throws {
        let workspace = try Workspace()
        let model = try workspace.write(#"{"format": "objectstore-model", "formatVersion": 1, "entities": [{"name": "A", "attributes": [{"name": "x", "type": "String"}]}]}"#,
                                        to: "m.json")
        let store = workspace.url.appending(path: "s.sqlite").path
        #expect(try CLI.run("create", store, "--model", model).status == 0)
        let nowhere = workspace.url.appending(path: "nowhere.json").path
        for arguments in [["import", store, nowhere], ["model", "show", nowhere], ["model", "hashes", nowhere], ["diff", nowhere, model],
                          ["migrate", store, "--model", model, "--mapping", nowhere], ["create", workspace.url.appending(path: "t.sqlite").path, "--model", nowhere],
                          ["migrate", store, "--model", model, "--mapping", nowhere.replacingOccurrences(of: ".json", with: ".xcmappingmodel")]] {
            let result = try CLI.run(arguments)
            let missing = arguments.last!.hasSuffix(".xcmappingmodel") ? arguments.last! : nowhere
            #expect(result.status == 1 && result.stderr == "objectstore: \(missing): no such file or directory\n", "\(arguments): \(result.stderr)")
        }
        let gone = workspace.url.appending(path: "gone.sqlite").path
        for command in ["inspect", "export", "validate", "checkpoint", "destroy", "history"] {
            let result = try CLI.run(command, gone)
            #expect(result.status == 1 && result.stderr == "objectstore: \(gone): no such store\n", "\(command): \(result.stderr)")
        }
        // A file that is there but holds nothing, or holds no store.
        let empty = try workspace.write("", to: "empty.atomic"), junk = try workspace.write("hello\n", to: "junk.atomic")
        for (path, said) in [(empty, "an empty file, not a store"), (junk, "not a store")] {
            let result = try CLI.run("inspect", path)
            #expect(result.status == 1 && result.stderr == "objectstore: \(path): \(said) of any known type (give --type to say which)\n", "\(result.stderr)")
        }
    }

    @Test("--dry-run with --on-incompatible says what it would do and leaves every file as it was")
    func dryRunIncompatible() throws {
        let workspace = try Workspace()
        func version(_ extra: String) -> String {
            """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Note"><attribute name="title" attributeType="String"/>\(extra)</entity></model>
            """
        }
        _ = try workspace.write(version(""), to: "N.xcdatamodeld/N 1.xcdatamodel/contents")
        _ = try workspace.write(version(#"<attribute name="body" optional="YES" attributeType="String"/>"#), to: "N.xcdatamodeld/N 2.xcdatamodel/contents")
        let other = try workspace.write(version(#"<attribute name="mood" optional="YES" attributeType="String"/>"#), to: "dev.xcdatamodel/contents")
        let bundle = workspace.url.appending(path: "N.xcdatamodeld").path
        let store = workspace.url.appending(path: "n.sqlite").path
        #expect(try CLI.run("create", store, "--model", URL(filePath: other).deletingLastPathComponent().path).status == 0)
        let before = try Data(contentsOf: URL(filePath: store))
        let aside = try CLI.run("migrate", store, "--model", bundle, "--on-incompatible", "move-aside", "--dry-run")
        #expect(aside.status == 0 && aside.stdout == "would move \(store) aside into Incompatible/ beside it and create an empty store at N 2\n", "\(aside)")
        let recreate = try CLI.run("migrate", store, "--model", bundle, "--on-incompatible", "recreate", "--dry-run", "--json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(recreate.stdout.utf8)) as? [String: Any])
        #expect(document["status"] as? String == "would-recreate" && document["to"] as? String == "N 2")
        #expect(try Data(contentsOf: URL(filePath: store)) == before)
        #expect(!FileManager.default.fileExists(atPath: workspace.url.appending(path: "Incompatible").path))
    }
}

@Suite("objectstore --verbose")
struct VerboseTests {
    @Test("--verbose, before or after the command, shows the libraries' diagnostics on stderr; without it there are none")
    func verbose() throws {
        let workspace = try Workspace()
        let model = try workspace.write(#"{"format": "objectstore-model", "formatVersion": 1, "entities": [{"name": "A", "attributes": [{"name": "x", "type": "String"}]}]}"#,
                                        to: "m.json")
        let store = workspace.url.appending(path: "s.sqlite").path
        #expect(try CLI.run("create", store, "--model", model).status == 0)
        let quiet = try CLI.run("convert", store, workspace.url.appending(path: "q.lmdb").path)
        #expect(quiet.status == 0 && !quiet.stderr.contains("debug"), "\(quiet.stderr)")
        for arguments in [["--verbose", "convert", store, workspace.url.appending(path: "v1.lmdb").path],
                          ["convert", store, workspace.url.appending(path: "v2.lmdb").path, "--verbose"]] {
            let loud = try CLI.run(arguments)
            #expect(loud.status == 0 && loud.stdout == "A 0\n", "\(loud.stderr)")
            #expect(loud.stderr.contains("debug objectstore.sqlite") && loud.stderr.contains("debug objectstore.lmdb: [LMDBStore] opening")
                    && loud.stderr.contains("debug objectstore.store: [ObjectStore] installing"), "\(loud.stderr)")
        }
    }
}
