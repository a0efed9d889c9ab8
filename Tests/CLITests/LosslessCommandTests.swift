import Foundation
import Testing
import TestSupport

/// Nothing changes on the way through the CLI: import, export, convert and validate.
@Suite("objectstore: nothing changes on the way through")
struct LosslessCommandTests {
    static let durable = CLI.backends

    @Test("dates come back as the text they went in as, and a re-import stores the identical date", arguments: durable)
    func dates(_ type: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write("""
            {"format": "objectstore-model", "formatVersion": 1, "entities": [{"name": "Event", "attributes": [{"name": "due", "type": "Date"}]}]}
            """, to: "model.json")
        // Millisecond texts from Foundation's calendar (an oracle apart from the code under test),
        // and sub-millisecond ones whose seconds since 2001 have at most 15 digits.
        var texts: [String] = []
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var state: UInt64 = 42
        for _ in 0..<400 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let milliseconds = Int64(state >> 20) % 4_000_000_000_000 - 1_000_000_000_000
            let seconds = milliseconds >= 0 ? milliseconds / 1000 : -((-milliseconds + 999) / 1000)
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: TimeInterval(seconds)))
            texts.append(String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!,
                                Int(milliseconds - seconds * 1000)))
        }
        texts += ["2027-02-26T19:49:11.198Z", "2001-01-01T00:00:00.0001Z", "1999-12-31T23:59:59.9999Z", "2024-03-12T14:39:35.405005Z"]
        let document = ["Event": texts.enumerated().map { ["_id": "Event/\($0.offset + 1)", "due": $0.element] }]
        let input = try workspace.write(try LosslessData.json(document), to: "events.json")
        let store = workspace.url.appending(path: "events.\(type)").path
        #expect(try CLI.run("import", store, input, "--model", model).status == 0)
        let first = try CLI.run("export", store)
        #expect(first.status == 0, "\(first.stderr)")
        let differences = JSONComparison.differences(first.stdout, document)
        #expect(differences.isEmpty, "\(differences.prefix(5))")
        let again = workspace.url.appending(path: "again.\(type)").path
        #expect(try CLI.run("import", again, try workspace.write(first.stdout, to: "first.json"), "--model", model).status == 0)
        #expect(try CLI.run("export", again).stdout == first.stdout, "export(import(export)) is byte-identical")
    }

    @Test("convert between every pair keeps every nil, every value and both sides of every relationship",
          arguments: durable.flatMap { a in durable.map { (a, $0) } })
    func convert(_ pair: (String, String)) throws {
        let (from, to) = pair
        let workspace = try Workspace()
        let model = try workspace.write(LosslessData.modelJSON, to: "lossless.json")
        let document = LosslessData.document()
        let data = try workspace.write(try LosslessData.json(document), to: "data.json")
        let source = workspace.url.appending(path: "source.\(from)").path
        let destination = workspace.url.appending(path: "destination.\(to)").path
        let imported = try CLI.run("import", source, data, "--model", model)
        #expect(imported.status == 0, "\(imported.stderr)")
        let converted = try CLI.run("convert", source, destination)
        #expect(converted.status == 0, "\(converted.stderr)")
        let sourceExport = try CLI.run("export", source).stdout
        let destinationExport = try CLI.run("export", destination).stdout
        #expect(JSONComparison.differences(destinationExport, document).isEmpty, "\(JSONComparison.differences(destinationExport, document).prefix(5))")
        #expect(destinationExport == sourceExport)
        let validate = try CLI.run("validate", destination)
        #expect(validate.status == 0, "\(validate.stdout)")
    }

    @Test("validate names both sides of a relationship that disagree, one line each, exit 1")
    func validateGraph() throws {
        let workspace = try Workspace()
        let model = try workspace.write("""
            {"format": "objectstore-model", "formatVersion": 1, "entities": [
              {"name": "Color", "attributes": [{"name": "hex", "type": "String"}],
               "relationships": [{"name": "post", "destination": "Post", "inverse": "color"}]},
              {"name": "Post", "attributes": [{"name": "title", "type": "String"}],
               "relationships": [{"name": "color", "destination": "Color", "inverse": "post"}]}]}
            """, to: "model.json")
        let data = try workspace.write("""
            {"Color": [{"_id": "Color/1", "hex": "#f00"}, {"_id": "Color/2", "hex": "#0f0"}],
             "Post": [{"_id": "Post/1", "title": "a", "color": "Color/1"}, {"_id": "Post/2", "title": "b", "color": "Color/2"}]}
            """, to: "data.json")
        let store = workspace.url.appending(path: "graph.sqlite").path
        #expect(try CLI.run("import", store, data, "--model", model).status == 0)
        #expect(try CLI.run("validate", store).status == 0)
        // A one-to-one keeps a foreign key on each side; break one of them behind the store's back.
        let raw = try RawDatabase(URL(filePath: store), readOnly: false)
        try raw.execute("UPDATE ZCOLOR SET ZPOST = NULL WHERE Z_PK = 1")
        try raw.execute("UPDATE ZCOLOR SET ZPOST = 1 WHERE Z_PK = 2")
        raw.close()
        let result = try CLI.run("validate", store)
        #expect(result.status == 1)
        #expect(result.stdout == """
            Color/2.post is Post/1, but Post/1.color is Color/1
            Post/1.color is Color/1, but Color/1.post is nil
            Post/2.color is Color/2, but Color/2.post is Post/1

            """, "\(result.stdout)")
    }

    @Test("an LMDB file whose first bytes were overwritten is refused, exit 1, and left as it was",
          arguments: ["inspect", "export", "validate", "convert"])
    func damagedLMDBHeader(_ command: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write(LosslessData.modelJSON, to: "lossless.json")
        let data = try workspace.write(try LosslessData.json(LosslessData.document()), to: "data.json")
        let store = workspace.url.appending(path: "damaged.lmdb")
        #expect(try CLI.run("import", store.path, data, "--model", model).status == 0)
        var bytes = try Data(contentsOf: store)
        bytes.replaceSubrange(0..<8, with: Data("XXXXXXXX".utf8))
        try bytes.write(to: store)
        let files = try FileManager.default.contentsOfDirectory(atPath: workspace.url.path).sorted()
        let arguments = command == "convert" ? [command, store.path, workspace.url.appending(path: "out.sqlite").path] : [command, store.path]
        let result = try CLI.run(arguments)
        #expect(result.status == 1)
        #expect(result.stderr.contains("damaged.lmdb") && result.stderr.contains("meta page 0 is damaged"), "\(result.stderr)")
        #expect(try Data(contentsOf: store) == bytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.url.path).sorted() == files)
    }
}
