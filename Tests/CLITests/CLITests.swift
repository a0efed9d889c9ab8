import Foundation
import Testing
import TestSupport

final class Workspace {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appending(path: "objectstore-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }

    func write(_ text: String, to path: String) throws -> String {
        let file = url.appending(path: path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: file)
        return file.path
    }
}

let eventModel = """
<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="1.0">
    <entity name="Event" representedClassName="Event" syncable="YES">
        <attribute name="timeStamp" optional="YES" attributeType="Date" usesScalarValueType="NO"/>
    </entity>
    <entity name="Zone" syncable="YES">
        <attribute name="name" attributeType="String" defaultValueString="home"/>
        <relationship name="events" optional="YES" toMany="YES" ordered="YES" deletionRule="Cascade" destinationEntity="Event"/>
    </entity>
    <entity name="Ärger" syncable="YES">
        <attribute name="note" optional="YES" attributeType="String"/>
    </entity>
</model>
"""

@Suite("objectstore CLI")
struct CLITests {
    @Test("model hashes: one line per entity, sorted, 64 hex digits, nothing else")
    func hashes() throws {
        let workspace = try Workspace()
        let model = try workspace.write(eventModel, to: "Events.xcdatamodeld/Events.xcdatamodel/contents")
        let bundle = URL(filePath: model).deletingLastPathComponent().deletingLastPathComponent().path
        let result = try CLI.run("model", "hashes", bundle)
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0] == "Event 5431c046d30e7f32c2cc809958add1e7579ad104a3aa8fc4846e97d7af01cc79")
        #expect(lines.map { $0.split(separator: " ")[0] } == ["Event", "Zone", "Ärger"])
        #expect(lines.allSatisfy { $0.split(separator: " ").last?.count == 64 })
        // The .xcdatamodel folder and its contents file give the same output.
        #expect(try CLI.run("model", "hashes", URL(filePath: model).deletingLastPathComponent().path).stdout == result.stdout)
        #expect(try CLI.run("model", "hashes", model).stdout == result.stdout)
    }

    @Test("model show: text and JSON")
    func show() throws {
        let workspace = try Workspace()
        let model = try workspace.write(eventModel, to: "Events.xcdatamodel/contents")
        let text = try CLI.run("model", "show", model)
        #expect(text.status == 0)
        #expect(text.stdout.contains("version identifiers: 1.0"))
        #expect(text.stdout.contains("attribute timeStamp: Date, optional"))
        #expect(text.stdout.contains("attribute name: String, required, default \"home\""))
        #expect(text.stdout.contains("relationship events -> Event, to-many, ordered, inverse (none), delete rule cascade"))

        let json = try CLI.run("model", "show", model, "--json")
        #expect(json.status == 0)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let entities = try #require(document["entities"] as? [[String: Any]])
        #expect(entities.compactMap { $0["name"] as? String } == ["Event", "Zone", "Ärger"])
        #expect(document["versionIdentifiers"] as? [String] == ["1.0"])
        let zone = try #require(entities.first { $0["name"] as? String == "Zone" })
        let events = try #require((zone["relationships"] as? [[String: Any]])?.first)
        #expect(events["destination"] as? String == "Event")
        #expect(events["toMany"] as? Bool == true)
        #expect(events["ordered"] as? Bool == true)
        #expect(events["deleteRule"] as? String == "cascade")
    }

    @Test("a JSON model works like an Xcode one; --model-version picks a bundle version; --version is the tool's")
    func jsonAndVersions() throws {
        let workspace = try Workspace()
        let json = try workspace.write("""
            {"format": "objectstore-model", "formatVersion": 1, "entities": [{"name": "Event", "attributes": [{"name": "timeStamp", "type": "Date"}]}]}
            """, to: "model.json")
        let result = try CLI.run("model", "hashes", json)
        #expect(result.stdout == "Event 5431c046d30e7f32c2cc809958add1e7579ad104a3aa8fc4846e97d7af01cc79\n")

        _ = try workspace.write(eventModel, to: "M.xcdatamodeld/M.xcdatamodel/contents")
        _ = try workspace.write(eventModel.replacingOccurrences(of: "timeStamp", with: "timestamp"), to: "M.xcdatamodeld/M 2.xcdatamodel/contents")
        let bundle = workspace.url.appending(path: "M.xcdatamodeld").path
        let v1 = try CLI.run("model", "hashes", bundle, "--model-version", "M")
        let v2 = try CLI.run("model", "hashes", bundle, "--model-version", "M 2")
        let current = try CLI.run("model", "hashes", bundle)
        #expect(v1.stdout.hasPrefix("Event 5431c046"))
        #expect(v2.stdout != v1.stdout)
        #expect(current.stdout == v2.stdout, "without .xccurrentversion the newest version is current")
        let missing = try CLI.run("model", "hashes", bundle, "--model-version", "M 3")
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no model version named M 3"))
        let tool = try CLI.run("--version")
        #expect(tool.status == 0)
        #expect(tool.stdout.first?.isNumber == true, "the tool's version: \(tool.stdout)")
        let help = try CLI.run("import", "--help")
        #expect(!help.stdout.contains(" --version"), "a subcommand has no --version of its own: \(help.stdout)")
        #expect(help.stdout.contains("--model-version"))
        // The old spelling is an error, never the tool's version printed with exit 0 and nothing done.
        for command in [["create", "v.sqlite", "--model", bundle, "--version", "M"], ["model", "hashes", bundle, "--version", "M"],
                        ["validate", "v.sqlite", "--version", "M"]] {
            let old = try CLI.run(command)
            #expect(old.status == 64, "\(command)")
            #expect(!old.stdout.contains("0.1.0"), "\(command)")
        }
    }

    @Test("bad models: one line on stderr naming the file, exit 1", arguments: [
        ("broken.xcdatamodel/contents", "<model>\n<entity name=\"A\">\n</model>", ":3:"),
        ("unknown.xcdatamodel/contents", "<model><entity name=\"A\"><relationship name=\"b\" destinationEntity=\"B\"/></entity></model>", "destination entity B does not exist"),
        ("empty.json", "", "empty"),
        ("bad.json", "{\n  \"format\": ,\n}", ":2:"),
        ("text.txt", "hello", "neither a Core Data model"),
        // Counts of 2^31 and more: a typed problem, never a trap in the hasher.
        ("count.xcdatamodel/contents", "<model><entity name=\"A\"><relationship name=\"b\" toMany=\"YES\" maxCount=\"2147483648\" destinationEntity=\"A\"/></entity></model>",
         "above 2147483647"),
        ("count.json", #"{"format": "objectstore-model", "formatVersion": 1, "entities": [{"name": "A", "relationships": [{"name": "b", "destination": "A", "toMany": true, "minCount": 4294967296}]}]}"#,
         "above 2147483647"),
    ])
    func badModels(_ path: String, _ content: String, _ fragment: String) throws {
        let workspace = try Workspace()
        let file = try workspace.write(content, to: path)
        let result = try CLI.run("model", "hashes", file)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(result.stderr.contains(file))
        #expect(result.stderr.contains(fragment), "\(result.stderr)")
        #expect(!result.stderr.contains("Fatal error"))
    }

    @Test("missing files and usage errors")
    func usage() throws {
        let missing = try CLI.run("model", "hashes", "/nonexistent/model.xcdatamodeld")
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("/nonexistent/model.xcdatamodeld"))
        #expect(try CLI.run("model", "hashes").status == 64)
        #expect(try CLI.run("model", "show", "a", "--bogus").status == 64)
        #expect(try CLI.run("nosuchcommand").status == 64)
        let help = try CLI.run("--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("model"))
    }

    @Test("the tool's store types are the tests' list, each found by its file extension")
    func storeTypes() throws {
        let workspace = try Workspace()
        let model = try workspace.write(eventModel, to: "m.xcdatamodel/contents")
        let unknown = try CLI.run("create", workspace.url.appending(path: "x").path, "--model", model, "--type", "bogus")
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("unknown store type bogus (use \(CLI.backends.joined(separator: ", ")))"), "\(unknown.stderr)")
        for type in CLI.backends {
            let store = workspace.url.appending(path: "store.\(type)").path
            #expect(try CLI.run("create", store, "--model", model).status == 0)
            #expect(try CLI.run("inspect", store).stdout.hasPrefix("type: \(type)\n"), "\(type)")
        }
    }
}
