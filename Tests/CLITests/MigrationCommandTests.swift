import Foundation
import Testing
import TestSupport

let contactA = """
{"format": "objectstore-model", "formatVersion": 1, "entities": [{"name": "Contact", "attributes": [
  {"name": "fullName", "type": "String"}, {"name": "identifier", "type": "Integer 64"}]}]}
"""
let contactB = """
{"format": "objectstore-model", "formatVersion": 1, "entities": [{"name": "Contact", "attributes": [
  {"name": "firstName", "type": "String", "optional": false}, {"name": "lastName", "type": "String"},
  {"name": "identifier", "type": "String"}]}]}
"""

@Suite("objectstore migration commands")
struct MigrationCommandTests {
    @Test("diff: changes by entity, then lightweight yes or no with the blocking changes")
    func diff() throws {
        let workspace = try Workspace()
        let a = try workspace.write(contactA, to: "a.json"), b = try workspace.write(contactB, to: "b.json")
        let result = try CLI.run("diff", a, b)
        #expect(result.status == 0)
        #expect(result.stdout == """
            Contact (changed)
              - attribute fullName (drops its values)
              + attribute firstName: String, required
              + attribute lastName: String, optional
              ~ attribute identifier: type Integer 64 -> String
            lightweight: no
            Contact.firstName: required, has no default, and no source property
            Contact.identifier: type changed from Integer 64 to String

            """)
        let same = try CLI.run("diff", a, a)
        #expect(same.stdout == "no changes\nlightweight: yes\n")
        let json = try CLI.run("diff", a, b, "--json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(document["lightweight"] as? Bool == false)
        #expect((document["blockingChanges"] as? [String])?.count == 2)
        let widened = try CLI.run("diff", a, b, "--allow-widening")
        #expect(widened.stdout.hasSuffix("lightweight: no\nContact.firstName: required, has no default, and no source property\n"))
        #expect(try CLI.run("diff", a, workspace.url.appending(path: "missing.json").path).status == 1)
    }

    @Test("convert between every pair of durable types; counts printed; source untouched", arguments: [
        ("sqlite", "lmdb"), ("lmdb", "store"), ("store", "sqlite"), ("sqlite", "sqlite"),
    ])
    func convert(_ from: String, _ to: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write(everythingModel, to: "model.json")
        let data = try workspace.write(everythingData, to: "data.json")
        let source = workspace.url.appending(path: "source.\(from)").path
        #expect(try CLI.run("import", source, data, "--model", model).status == 0)
        let before = try Data(contentsOf: URL(filePath: source))
        let exported = try CLI.run("export", source).stdout
        let destination = workspace.url.appending(path: "destination.\(to)").path
        let converted = try CLI.run("convert", source, destination)
        #expect(converted.status == 0, "\(converted.stderr)")
        #expect(converted.stdout == "Book 3\nFilm 1\nList 2\nPerson 3\n")
        #expect(converted.stderr.contains("PersonToPerson: create objects 3/3"))
        #expect(try CLI.run("export", destination).stdout == exported)
        #expect(try Data(contentsOf: URL(filePath: source)) == before)
        // An existing destination is refused without --force, replaced with it.
        let again = try CLI.run("convert", source, destination)
        #expect(again.status == 1)
        #expect(again.stderr.contains("already exists"))
        #expect(try CLI.run("convert", source, destination, "--force").status == 0)
        #expect(try CLI.run("export", destination).stdout == exported)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: workspace.url.path).filter { $0.contains("converting") }
        #expect(leftovers.isEmpty)
    }

    @Test("convert reads a source's WAL and never writes to it")
    func convertWAL() throws {
        let workspace = try Workspace()
        let model = try workspace.write(everythingModel, to: "model.json")
        let source = workspace.url.appending(path: "wal.sqlite").path
        #expect(try CLI.run("import", source, try workspace.write(everythingData, to: "d.json"), "--model", model).status == 0)
        #expect(try CLI.run("convert", source, workspace.url.appending(path: "copy.lmdb").path).status == 0)
        #expect(!FileManager.default.fileExists(atPath: source + "-wal"), "no sidecar was created beside the source")
    }

    @Test("validate: one line per failure, exit 1; exit 0 when every rule holds")
    func validate() throws {
        let workspace = try Workspace()
        let loose = try workspace.write(contactA.replacingOccurrences(of: "\"Integer 64\"", with: "\"Integer 64\", \"minValue\": 0"), to: "loose.json")
        let store = workspace.url.appending(path: "c.sqlite").path
        let data = try workspace.write(#"{"Contact": [{"_id": "a", "fullName": "Ada", "identifier": 1}, {"_id": "b", "identifier": 2}]}"#, to: "d.json")
        #expect(try CLI.run("import", store, data, "--model", loose).status == 0)
        #expect(try CLI.run("validate", store).status == 0)
        // Against a stricter model with the same hashes (validation rules are not hashed).
        let strict = try workspace.write(contactA.replacingOccurrences(of: #"{"name": "fullName", "type": "String"}"#,
                                                                       with: #"{"name": "fullName", "type": "String", "minLength": 4}"#), to: "strict.json")
        let result = try CLI.run("validate", store, "--model", strict)
        #expect(result.status == 1)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.contains("Contact/1 fullName minLength") == true)
    }
}
