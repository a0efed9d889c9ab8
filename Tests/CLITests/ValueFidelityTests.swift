import Foundation
import Testing
import TestSupport

/// Values go in as the text names them, come out the same, or are refused: never rounded
/// twice, shortened, re-encoded or read as something else.
@Suite("objectstore: values are exact or refused")
struct ValueFidelityTests {
    static let model = """
        {"format": "objectstore-model", "formatVersion": 1, "entities": [{"name": "T", "attributes": [
          {"name": "d", "type": "Date"}, {"name": "x", "type": "Double"}, {"name": "f", "type": "Float"},
          {"name": "dec", "type": "Decimal"}, {"name": "u", "type": "URI"}, {"name": "i", "type": "Integer 16"},
          {"name": "s", "type": "String"}, {"name": "b", "type": "Boolean"}, {"name": "bin", "type": "Binary"}]}]}
        """

    func importing(_ document: String, into type: String, in workspace: Workspace) throws -> (CLI.Result, String) {
        let model = try workspace.write(Self.model, to: "m.json")
        let data = try workspace.write(document, to: "data-\(UUID().uuidString).json")
        let store = workspace.url.appending(path: "s-\(UUID().uuidString).\(type)").path
        return (try CLI.run("import", store, data, "--model", model), store)
    }

    @Test("a double is the one its text names: 2,000 random doubles, export → import → export byte-identical",
          arguments: CLI.backends)
    func doubles(_ type: String) throws {
        let workspace = try Workspace()
        var state: UInt64 = 0x5DEE_CE66
        var values: [Double] = [-0.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1, .leastNormalMagnitude]
        while values.count < 2_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let v = Double(bitPattern: state)
            if v.isFinite { values.append(v) }
        }
        // The text is Swift's shortest round-trip form, whose value Double(String) reads back exactly (the oracle).
        let objects = values.enumerated().map { "{\"_id\": \"T/\($0.offset + 1)\", \"x\": \($0.element)}" }
        let (result, store) = try importing("{\"T\": [\(objects.joined(separator: ", "))]}", into: type, in: workspace)
        #expect(result.status == 0, "\(result.stderr)")
        let first = try CLI.run("export", store).stdout
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: [[String: Any]]])
        #expect(parsed["T"]?.count == values.count)
        // Compare the exported text of each value with the input's bits (Swift's Double(String)
        // reads decimal text correctly rounded), not through another JSON parser.
        let texts = first.components(separatedBy: "\"x\": ").dropFirst().map { String($0.prefix { $0 != "\n" && $0 != "," }) }
        var wrong = 0
        for (text, value) in zip(texts, values) where Double(text)?.bitPattern != value.bitPattern { wrong += 1 }
        #expect(texts.count == values.count)
        #expect(wrong == 0, "\(wrong) of \(values.count) doubles changed")
        let again = workspace.url.appending(path: "again.\(type)").path
        #expect(try CLI.run("import", again, try workspace.write(first, to: "first.json"), "--model", workspace.url.appending(path: "m.json").path).status == 0)
        #expect(try CLI.run("export", again).stdout == first)
    }

    @Test("NaN and -0.0 survive every backend and every conversion", arguments: CLI.backends)
    func specialValues(_ type: String) throws {
        let workspace = try Workspace()
        let document = #"{"T": [{"_id": "T/1", "d": "nan", "x": -0.0, "f": "nan"}, {"_id": "T/2", "d": "-0.0", "x": "nan", "f": -0.0}]}"#
        let (result, store) = try importing(document, into: type, in: workspace)
        #expect(result.status == 0, "\(result.stderr)")
        for to in CLI.backends {
            let converted = workspace.url.appending(path: "to-\(to).\(to)").path
            #expect(try CLI.run("convert", store, converted).status == 0)
            let export = try CLI.run("export", converted).stdout
            #expect(export.contains("\"d\": \"nan\"") && export.contains("\"x\": -0.0") && export.contains("\"x\": \"nan\""), "\(type) → \(to): \(export)")
            #expect(export.contains("\"f\": -0.0") && export.contains("\"f\": \"nan\""), "\(type) → \(to): \(export)")
            #expect(export.contains("\"d\": \"-0.0\""), "\(type) → \(to): \(export)")
        }
    }

    @Test("values that do not fit are refused, not shortened, rounded or re-encoded", arguments: [
        (#""dec": "12abc""#, "dec"), (#""dec": "0x10""#, "dec"), (#""dec": "1.2.3""#, "dec"), (#""dec": "-""#, "dec"),
        (#""dec": "1_000""#, "dec"), (#""dec": "12,5""#, "dec"), (#""dec": "123456789012345678901234567890123456789""#, "dec"),
        (#""f": 1e39"#, "f"), (#""x": 1e999"#, "x"), (#""x": "1e999""#, "x"), (#""i": 70000"#, "i"), (#""i": 1.5"#, "i"),
        (#""u": "http://h/?q=ü""#, "u"), (#""u": "not a uri""#, "u"), (#""b": 1"#, "b"),
        // Base64 other than its one canonical form: extra padding, unused bits set, none at all.
        (#""bin": "AP9c=""#, "bin"), (#""bin": "AP9c===""#, "bin"), (#""bin": "AP9=""#, "bin"), (#""bin": "AP8""#, "bin"),
    ])
    func refused(_ member: String, _ attribute: String) throws {
        let workspace = try Workspace()
        let (result, _) = try importing("{\"T\": [{\"_id\": \"T/1\", \(member)}]}", into: "lmdb", in: workspace)
        #expect(result.status == 1, "\(member) was accepted")
        #expect(result.stderr.contains(".\(attribute):"), "\(result.stderr)")
    }

    @Test("the JSON is read strictly, with the line and column of what is wrong", arguments: [
        ("{\"T\": [{\"_id\": \"T/1\", }]}", "line 1"), ("{\"T\": [], \"T\": []}", "appears twice"),
        ("", "empty"), ("null", "top level"), ("{\"T\": [{\"_id\": \"T/1\", \"x\": 01}]}", "may not start with 0"),
        ("{\"T\": [{\"_id\": \"T/1\",\n \"s\": \"\u{1}\"}]}", "line 2"), (String(repeating: "[", count: 600), "nests deeper"),
    ])
    func strictJSON(_ document: String, _ expected: String) throws {
        let workspace = try Workspace()
        let (result, _) = try importing(document, into: "atomic", in: workspace)
        #expect(result.status == 1)
        #expect(result.stderr.contains(expected), "\(result.stderr)")
    }

    @Test("base64 in its canonical form is the bytes it names, on every backend", arguments: CLI.backends)
    func canonicalBase64(_ type: String) throws {
        let workspace = try Workspace()
        let (result, store) = try importing(#"{"T": [{"_id": "T/1", "bin": "AP9c"}, {"_id": "T/2", "bin": "AP8="}, {"_id": "T/3", "bin": ""}]}"#,
                                            into: type, in: workspace)
        #expect(result.status == 0, "\(result.stderr)")
        let export = try CLI.run("export", store).stdout
        #expect(export.contains(#""bin": "AP9c""#) && export.contains(#""bin": "AP8=""#) && export.contains(#""bin": """#), "\(export)")
    }

    @Test("a byte-order mark before the document is fine")
    func byteOrderMark() throws {
        let workspace = try Workspace()
        let (result, store) = try importing("\u{FEFF}{\"T\": [{\"_id\": \"T/1\", \"s\": \"ok\"}]}", into: "sqlite", in: workspace)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try CLI.run("export", store).stdout.contains("\"s\": \"ok\""))
    }

    @Test("a SQLite cell of no valid form for its attribute is an error naming the file, table and row", arguments: [
        ("ZI = 183.6", "Integer 16"), ("ZI = 70000", "Integer 16"), ("ZB = 2", "Boolean"), ("ZS = x'ff00fe'", "String"),
        ("ZDEC = '12abc'", "Decimal"), ("ZU = 'http://h/?q=ü'", "URI"),
    ])
    func strictCells(_ assignment: String, _ type: String) throws {
        let workspace = try Workspace()
        let (result, store) = try importing(#"{"T": [{"_id": "T/1", "s": "a"}]}"#, into: "sqlite", in: workspace)
        #expect(result.status == 0)
        let raw = try RawDatabase(URL(filePath: store), readOnly: false)
        try raw.execute("UPDATE ZT SET \(assignment)")
        raw.close()
        for command in ["export", "validate"] {
            let read = try CLI.run(command, store)
            #expect(read.status == 1, "\(command) accepted \(assignment)")
            #expect(read.stderr.contains(store) && read.stderr.contains("ZT row 1") && read.stderr.contains(type), "\(read.stderr)")
        }
    }

    @Test("validate names a to-one whose object does not exist")
    func danglingReference() throws {
        let workspace = try Workspace()
        let model = try workspace.write("""
            {"format": "objectstore-model", "formatVersion": 1, "entities": [
              {"name": "Author", "attributes": [{"name": "name", "type": "String"}],
               "relationships": [{"name": "books", "destination": "Book", "inverse": "author", "toMany": true}]},
              {"name": "Book", "attributes": [{"name": "title", "type": "String"}],
               "relationships": [{"name": "author", "destination": "Author", "inverse": "books"}]}]}
            """, to: "books.json")
        let data = try workspace.write(#"{"Author": [{"_id": "Author/1", "name": "A"}], "Book": [{"_id": "Book/1", "author": "Author/1"}]}"#, to: "d.json")
        let store = workspace.url.appending(path: "books.sqlite").path
        #expect(try CLI.run("import", store, data, "--model", model).status == 0)
        let raw = try RawDatabase(URL(filePath: store), readOnly: false)
        try raw.execute("UPDATE ZBOOK SET ZAUTHOR = 99")
        raw.close()
        let result = try CLI.run("validate", store)
        #expect(result.status == 1)
        #expect(result.stdout == "Book/1.author is Author/99, which does not exist\n", "\(result.stdout)")

        // Rows no fetch sees (an entity number the table does not hold, a key below 1): reported, not skipped in silence.
        let again = try RawDatabase(URL(filePath: store), readOnly: false)
        try again.execute("UPDATE ZBOOK SET ZAUTHOR = 1; INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (50, 99, 1, 'ghost'), (-3, 2, 1, 'negative')")
        again.close()
        let rows = try CLI.run("validate", store)
        #expect(rows.status == 1)
        #expect(rows.stdout.contains("ZBOOK row 50 has Z_ENT 99, which is no concrete entity of this table"), "\(rows.stdout)")
        #expect(rows.stdout.contains("ZBOOK row -3 has a primary key below 1"), "\(rows.stdout)")
        let deep = try CLI.run("validate", store, "--deep")
        #expect(deep.status == 1 && deep.stdout.contains("ZBOOK row 50"))
    }
}
