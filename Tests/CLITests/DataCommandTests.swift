import Foundation
import ObjectModel
import ObjectStore
import SQLiteStore
import Testing
import TestSupport

/// A model with every attribute type, inheritance, to-one, to-many, ordered and many-to-many relationships.
let everythingModel = """
{
  "format": "objectstore-model", "formatVersion": 1, "versionIdentifiers": ["everything-1"],
  "entities": [
    {"name": "Media", "abstract": true,
     "attributes": [{"name": "title", "type": "String", "optional": false}, {"name": "added", "type": "Date"}],
     "relationships": [{"name": "lists", "destination": "List", "inverse": "items", "toMany": true}]},
    {"name": "Book", "parent": "Media",
     "attributes": [{"name": "pages", "type": "Integer 16", "default": 100}, {"name": "isbn", "type": "String"}],
     "relationships": [{"name": "author", "destination": "Person", "inverse": "books"}]},
    {"name": "Film", "parent": "Media",
     "attributes": [{"name": "minutes", "type": "Integer 32"}]},
    {"name": "Person",
     "attributes": [
       {"name": "name", "type": "String", "optional": false},
       {"name": "i16", "type": "Integer 16"}, {"name": "i32", "type": "Integer 32"}, {"name": "i64", "type": "Integer 64"},
       {"name": "dec", "type": "Decimal"}, {"name": "dbl", "type": "Double"}, {"name": "flt", "type": "Float"},
       {"name": "flag", "type": "Boolean"}, {"name": "born", "type": "Date"}, {"name": "photo", "type": "Binary"},
       {"name": "uid", "type": "UUID"}, {"name": "site", "type": "URI"}, {"name": "prefs", "type": "Transformable"}
     ],
     "relationships": [
       {"name": "books", "destination": "Book", "inverse": "author", "toMany": true, "deleteRule": "cascade"},
       {"name": "friends", "destination": "Person", "inverse": "friends", "toMany": true},
       {"name": "mentor", "destination": "Person", "inverse": "mentees"},
       {"name": "mentees", "destination": "Person", "inverse": "mentor", "toMany": true}
     ]},
    {"name": "List",
     "attributes": [{"name": "name", "type": "String"}],
     "relationships": [{"name": "items", "destination": "Media", "inverse": "lists", "toMany": true, "ordered": true}]}
  ]
}
"""

/// Data for it, with relationships given on one side, the other, or both.
let everythingData = """
{
  "Person": [
    {"_id": "ada", "name": "Ada", "i16": -32768, "i32": 2147483647, "i64": 9223372036854775807, "dec": "12345678901234567890.123456789",
     "dbl": 3.141592653589793, "flt": 0.5, "flag": true, "born": "1815-12-10T00:00:00.000Z", "photo": "AAEC/w==",
     "uid": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "site": "https://example.com/ada?x=1", "prefs": "eyJhIjoxfQ==",
     "friends": ["bob"], "mentees": ["bob", "cy"]},
    {"_id": "bob", "name": "Bøb 👩‍💻", "i64": -9223372036854775808, "dbl": "nan", "flt": "-inf", "flag": false, "friends": ["ada"]},
    {"_id": "cy", "name": "", "dbl": "inf", "dec": "-0.001", "mentor": "ada", "born": "2100-01-01T12:30:45.123Z"}
  ],
  "Book": [
    {"_id": "b1", "title": "Notes", "author": "ada", "added": "2024-05-01T12:00:00.500Z"},
    {"_id": "b2", "title": "More notes", "pages": 12, "author": "ada"},
    {"_id": "b3", "title": "Lonely", "isbn": null}
  ],
  "Film": [{"_id": "f1", "title": "Film", "minutes": 95}],
  "List": [
    {"_id": "l1", "name": "Queue", "items": ["f1", "b3", "b1"]},
    {"_id": "l2", "name": "Empty"}
  ]
}
"""

@Suite("objectstore data commands")
struct DataCommandTests {
    @Test("import → export → import → export is byte-identical", arguments: CLI.backends)
    func roundTrip(_ type: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write(everythingModel, to: "model.json")
        let data = try workspace.write(everythingData, to: "data.json")
        let first = workspace.url.appending(path: "first.\(type)").path
        let imported = try CLI.run("import", first, data, "--model", model, "--type", type)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout == "Book 3\nFilm 1\nList 2\nPerson 3\n")
        let export1 = try CLI.run("export", first, "--type", type)
        #expect(export1.status == 0, "\(export1.stderr)")
        let exported = try workspace.write(export1.stdout, to: "export1.json")
        let second = workspace.url.appending(path: "second.\(type)").path
        #expect(try CLI.run("import", second, exported, "--model", model, "--type", type).status == 0)
        let export2 = try CLI.run("export", second, "--type", type)
        #expect(export2.stdout == export1.stdout)

        // Both sides of every relationship are written, with the values intact.
        let document = try #require(try JSONSerialization.jsonObject(with: Data(export1.stdout.utf8)) as? [String: [[String: Any]]])
        #expect(document.keys.sorted() == ["Book", "Film", "List", "Person"])
        let people = try #require(document["Person"])
        let ada = try #require(people.first { $0["name"] as? String == "Ada" })
        #expect(ada["i64"] as? Int64 == Int64.max)
        #expect(ada["dec"] as? String == "12345678901234567890.123456789")
        #expect(ada["born"] as? String == "1815-12-10T00:00:00.000Z")
        #expect(ada["books"] as? [String] == ["Book/1", "Book/2"])
        #expect((ada["mentees"] as? [String])?.count == 2)
        let bob = try #require(people.first { $0["_id"] as? String == (ada["friends"] as? [String])?.first })
        #expect(bob["dbl"] as? String == "nan")
        #expect(bob["flt"] as? String == "-inf")
        #expect(bob["mentor"] as? String == ada["_id"] as? String)
        let list = try #require(document["List"]?.first { $0["name"] as? String == "Queue" })
        #expect(list["items"] as? [String] == ["Film/4", "Book/3", "Book/1"])
        let book1 = try #require(document["Book"]?.first)
        #expect(book1["lists"] as? [String] == ["List/1"])
        #expect(document["Book"]?[1]["pages"] as? Int == 12)
        #expect(document["Book"]?[0]["pages"] as? Int == 100, "a left-out attribute takes its default")

        // Filters.
        let films = try CLI.run("export", first, "--type", type, "--entity", "Media", "--where", "title CONTAINS 'o'")
        let filtered = try #require(try JSONSerialization.jsonObject(with: Data(films.stdout.utf8)) as? [String: [[String: Any]]])
        #expect(filtered.keys.sorted() == ["Book", "Film"])
        #expect(filtered["Book"]?.map { $0["title"] as? String } == ["Notes", "More notes", "Lonely"])
        #expect(filtered["Film"]?.isEmpty == true)
        let file = workspace.url.appending(path: "out.json").path
        #expect(try CLI.run("export", first, "--type", type, "--output", file).stdout.isEmpty)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == export1.stdout)
    }

    @Test("invalid data writes nothing and says what and where", arguments: [
        (#"{"Person": [{"_id": "a"}]}"#, "validation failure"),
        (#"{"Person": [{"_id": "a", "name": "A", "i16": 70000}]}"#, "Person \"a\".i16"),
        (#"{"Person": [{"_id": "a", "name": "A", "mentor": "nobody"}]}"#, "no object has _id \"nobody\""),
        (#"{"Nope": []}"#, "unknown entity Nope"),
        (#"{"Media": []}"#, "abstract"),
        (#"{"Person": [{"_id": "a", "name": "A"}, {"_id": "a", "name": "B"}]}"#, "appears twice"),
        (#"{"Person": [{"_id": "a", "name": "A", "friends": []}, {"_id": "b", "name": "B", "friends": ["a"]}]}"#, "does not list"),
        (#"{"Person": [{"_id": "a", "name": "A", "shoe": 3}]}"#, "no stored property named shoe"),
        (#"{"Person": [{"_id": "a", "name": "A", "born": "yesterday"}]}"#, "not a valid Date"),
        (#"{"Person": [{"_id": "a", "name": "A"}, "#, "does not parse"),
        (#"[1, 2]"#, "top level"),
    ])
    func invalid(_ json: String, _ fragment: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write(everythingModel, to: "model.json")
        let data = try workspace.write(json, to: "bad.json")
        let store = workspace.url.appending(path: "s.sqlite").path
        let result = try CLI.run("import", store, data, "--model", model)
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("bad.json"), "\(result.stderr)")
        #expect(result.stderr.contains(fragment), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store), "a store was left behind")
        // Into an existing store: nothing is added.
        #expect(try CLI.run("create", store, "--model", model).status == 0)
        #expect(try CLI.run("import", store, data).status == 1)
        let inspect = try CLI.run("inspect", store, "--json")
        let counts = try #require((try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any])?["entities"] as? [String: Int])
        #expect(counts.values.allSatisfy { $0 == 0 })
    }

    @Test("a --where that does not apply is refused before anything is written: stdout empty, an --output file not made, exit 1",
          arguments: ["nmae == 'Ada'", "title == 'x'", "name.first == 'A'", "name MATCHES '('", "pages.@count > 1", "friends.nme == 'x'",
                      // A constant its attribute's values never compare with (false for every object).
                      "i32 == '3'", "name > 3", "born > 'junk'", "flag == 1", "i64 IN {1, 'x'}", "friends.dbl BETWEEN {'a', 2}"])
    func whereRefusedFirst(_ predicate: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write(everythingModel, to: "model.json")
        let store = workspace.url.appending(path: "s.sqlite").path
        #expect(try CLI.run("import", store, try workspace.write(everythingData, to: "data.json"), "--model", model).status == 0)
        let result = try CLI.run("export", store, "--entity", "Person", "--where", predicate)
        #expect(result.status == 1 && result.stdout.isEmpty, "\(predicate): \(result.stdout)")
        #expect(result.stderr.hasPrefix("objectstore: ") && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        let file = workspace.url.appending(path: "out.json").path
        #expect(try CLI.run("export", store, "--entity", "Person", "--where", predicate, "--output", file).status == 1)
        #expect(!FileManager.default.fileExists(atPath: file))
        // A predicate that applies to one entity only, over all of them: refused too, naming the entity.
        let every = try CLI.run("export", store, "--where", "name == 'Ada'")
        #expect(every.status == 1 && every.stdout.isEmpty && every.stderr.contains("Book: name: unknown key name"), "\(every.stderr)")
        // One that applies: Bøb (a friend of Ada's) and Ada (two mentees), not cy.
        let fine = try CLI.run("export", store, "--entity", "Person", "--where", "friends.name == 'Ada' OR mentees.@count >= 2")
        #expect(fine.status == 0 && fine.stdout.contains("\"name\": \"Ada\"") && fine.stdout.contains("Bøb") && !fine.stdout.contains("\"name\": \"\""),
                "\(fine.stderr)")
    }

    @Test("a key of a sub-entity across a relationship: the objects of the other sub-entities have no value for it, on every backend",
          arguments: CLI.backends)
    func subEntityKeyAcrossRelationship(_ type: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write(everythingModel, to: "model.json")
        let store = workspace.url.appending(path: "s.\(type)").path
        #expect(try CLI.run("import", store, try workspace.write(everythingData, to: "data.json"), "--model", model).status == 0)
        // Queue holds a film and two books of 100 pages (the default); Empty holds nothing.
        for (predicate, lists) in [("ANY items.pages > 50", ["Queue"]), ("ANY items.minutes > 90", ["Queue"]), ("ANY items.minutes > 95", []),
                                   ("NONE items.pages > 50", ["Empty"]), ("items.@count == 0", ["Empty"])] {
            let result = try CLI.run("export", store, "--entity", "List", "--where", predicate)
            #expect(result.status == 0, "\(predicate): \(result.stderr)")
            let document = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: [[String: Any]]]
            #expect(document?["List"]?.compactMap { $0["name"] as? String }.sorted() == lists, "\(type): \(predicate): \(result.stdout)")
        }
        // A key no sub-entity has is still refused.
        let unknown = try CLI.run("export", store, "--entity", "List", "--where", "ANY items.pagez > 1")
        #expect(unknown.status == 1 && unknown.stdout.isEmpty && unknown.stderr.contains("unknown key pagez"), "\(unknown.stderr)")
    }

    @Test("import reads its document from a pipe: - and /dev/stdin; the store holds what the text says")
    func importFromPipe() throws {
        let workspace = try Workspace()
        let model = try workspace.write(everythingModel, to: "model.json")
        for (index, name) in ["-", "/dev/stdin"].enumerated() {
            let store = workspace.url.appending(path: "piped\(index).sqlite").path
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = ["import", store, name, "--model", model]
            let input = Pipe(), out = Pipe()
            process.standardInput = input
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            try input.fileHandleForWriting.write(contentsOf: Data(everythingData.utf8))
            try input.fileHandleForWriting.close()
            let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(name)")
            #expect(printed == "Book 3\nFilm 1\nList 2\nPerson 3\n", "\(name): \(printed)")
            // Against the document itself: Ada's name and her exact 64-bit number, as sqlite3 holds them.
            let raw = try RawDatabase(URL(filePath: store))
            defer { raw.close() }
            let rows = try raw.strings("SELECT ZNAME, ZI64 FROM ZPERSON WHERE ZNAME = 'Ada'")
            #expect(rows.count == 1 && rows.first?.last == "9223372036854775807", "\(rows)")
        }
    }

    @Test("create, inspect, checkpoint, destroy; the type from --type, content or extension")
    func lifecycle() throws {
        let workspace = try Workspace()
        let model = try workspace.write(everythingModel, to: "model.json")
        for (name, type) in [("a.sqlite", "sqlite"), ("b.db", "sqlite"), ("c.store", "atomic"), ("d.bin", "atomic"), ("e.lmdb", "lmdb"), ("f.mdb", "lmdb")] {
            let path = workspace.url.appending(path: name).path
            let created = try CLI.run("create", path, "--model", model)
            #expect(created.stdout == "created \(type) store \(path)\n")
            #expect(try CLI.run("create", path, "--model", model).status == 1, "refuses an existing store")
            let inspect = try CLI.run("inspect", path)
            #expect(inspect.stdout.hasPrefix("type: \(type)\n"))
            #expect(inspect.stdout.contains("model version identifiers: everything-1"))
            #expect(inspect.stdout.contains("embedded model: matches the store's hashes"))
            #expect(inspect.stdout.contains("  Person 0"))
        }
        // Content wins over the extension.
        let odd = workspace.url.appending(path: "odd.store").path
        #expect(try CLI.run("create", odd, "--model", model, "--type", "sqlite").status == 0)
        #expect(try CLI.run("inspect", odd).stdout.hasPrefix("type: sqlite"))
        let sqlite = workspace.url.appending(path: "a.sqlite").path
        #expect(try CLI.run("checkpoint", sqlite).stdout == "checkpointed \(sqlite)\n")
        #expect(try CLI.run("destroy", sqlite).status == 0)
        #expect(!FileManager.default.fileExists(atPath: sqlite))
        #expect(try CLI.run("destroy", sqlite).status == 1)
        #expect(try CLI.run("create", workspace.url.appending(path: "x.unknown").path, "--model", model).status == 1)
        #expect(try CLI.run("create", workspace.url.appending(path: "y.sqlite").path, "--model", model, "--type", "bogus").status == 64)
        #expect(try CLI.run("export", workspace.url.appending(path: "c.store").path, "--where", "name ==").status == 64)
        let text = try workspace.write("not a store", to: "plain.sqlite")
        let garbage = try CLI.run("inspect", text)
        #expect(garbage.status == 1)
        #expect(garbage.stderr.contains("plain.sqlite"))
    }

    @Test("a store written by this process is read by another, WAL content included")
    func crossProcess() throws {
        let workspace = try Workspace()
        let url = workspace.url.appending(path: "shared.sqlite")
        let model = try JSONModelFormat.decode(Data(everythingModel.utf8))
        let store = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions())
        let key = ObjectKey("Person", try store.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound)
        try store.save(ChangeSet(inserted: [ObjectRecord(key: key, attributes: ["name": .string("written here")])]))
        // Still open: the row is in the WAL, not yet in the main file.
        #expect(FileManager.default.fileExists(atPath: url.path + "-wal"))
        let exported = try CLI.run("export", url.path, "--entity", "Person")
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(exported.stdout.contains("\"written here\""))
        try store.close()
    }
}
