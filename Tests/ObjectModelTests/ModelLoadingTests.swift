import Foundation
import ObjectModel
import Testing

/// A fresh temporary folder, removed when the test ends.
final class TemporaryFolder {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appending(path: "objectmodel-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }

    @discardableResult
    func write(_ text: String, to path: String) throws -> URL {
        let file = url.appending(path: path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: file)
        return file
    }
}

/// Xcode-style model XML written for these tests.
enum XMLFixtures {
    static let sampleModel3 = """
    <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
    <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="v2">
        <entity name="Pet" representedClassName="Pet" syncable="YES">
            <attribute name="name" attributeType="String"/>
            <relationship name="owner" maxCount="1" deletionRule="Nullify" destinationEntity="User" inverseName="pet" inverseEntity="User"/>
            <uniquenessConstraints>
                <uniquenessConstraint>
                    <constraint value="name"/>
                </uniquenessConstraint>
            </uniquenessConstraints>
        </entity>
        <entity name="User" representedClassName="User" syncable="YES">
            <attribute name="name" attributeType="String"/>
            <attribute name="petName" optional="YES" attributeType="String" minValueString="1" maxValueString="20" regularExpressionString="[a-z]+"/>
            <relationship name="pet" optional="YES" maxCount="1" deletionRule="Cascade" destinationEntity="Pet" inverseName="owner" inverseEntity="Pet"/>
            <fetchIndex name="byName">
                <fetchIndexElement property="name" type="Binary" order="descending"/>
            </fetchIndex>
        </entity>
        <entity name="Settings" syncable="YES">
            <attribute name="age" optional="YES" attributeType="Integer 16" defaultValueString="3" minValueString="0" maxValueString="150" elementID="years">
                <userInfo>
                    <entry key="unit" value="years"/>
                </userInfo>
            </attribute>
            <attribute name="mood" optional="YES" attributeType="Integer 32" defaultValueString="NO"/>
        </entity>
        <configuration name="Cloud">
            <memberEntity name="User"/>
        </configuration>
        <elements>
            <element name="Pet" positionX="0" positionY="0" width="128" height="74"/>
        </elements>
    </model>
    """

    static func single(_ entity: String, attribute: String = "name") -> String {
        """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="\(entity)" syncable="YES">
                <attribute name="\(attribute)" optional="YES" attributeType="String"/>
            </entity>
        </model>
        """
    }
}

@Suite("Loading models")
struct ModelLoadingTests {
    @Test("an .xcdatamodel's contents XML gives the hashes Core Data gives")
    func xcdatamodel() throws {
        let folder = try TemporaryFolder()
        try folder.write(XMLFixtures.sampleModel3, to: "Sample.xcdatamodel/contents")
        let versions = try ModelLoader.load(at: folder.url.appending(path: "Sample.xcdatamodel"))
        #expect(versions.names == ["Sample"])
        let model = versions.current
        #expect(model.versionHashes["Pet"]?.hexString == "f92567b5f861a75b1707f024e0a67d58d8c0b9a85d7609f79a3c88957eb7a616")
        #expect(model.versionHashes["User"]?.hexString == "6a47cbef0e3f84c2449249fdc83f003d7e514378f8ee9a76a8d4c0ec8bb1b822")
        #expect(model.versionIdentifiers == ["v2"])
        #expect(model.configurations == ["Cloud": ["User"]])
        let user = try #require(model.entity(named: "User"))
        let settings = try #require(model.entity(named: "Settings"))
        let age = try #require(settings.attributesByName["age"])
        #expect(age.defaultValue == .integer(3))
        #expect(age.validation.minValue == .integer(0) && age.validation.maxValue == .integer(150))
        #expect(age.renamingIdentifier == "years")
        #expect(age.userInfo == ["unit": "years"])
        #expect(settings.attributesByName["mood"]?.defaultValue == .integer(0), "Xcode's NO on a number reads as 0")
        let petName = try #require(user.attributesByName["petName"])
        #expect(petName.validation.minLength == 1 && petName.validation.maxLength == 20 && petName.validation.pattern == "[a-z]+")
        #expect(user.relationshipsByName["pet"]?.deleteRule == .cascade)
        #expect(user.declaration.indexes == [FetchIndex(name: "byName", elements: [.init("name", ascending: false)])])
        #expect(model.entity(named: "Pet")?.declaration.uniquenessConstraints == [["name"]])

        // The contents file alone loads the same model.
        let direct = try ModelLoader.loadModel(at: folder.url.appending(path: "Sample.xcdatamodel/contents"))
        #expect(direct == model)
    }

    @Test("an .xcdatamodeld bundle: every version in Xcode's order, the current one from .xccurrentversion")
    func bundle() throws {
        let folder = try TemporaryFolder()
        let bundle = "App.xcdatamodeld"
        for (name, entity) in [("App", "V1"), ("App 2", "V2"), ("App 10", "V10"), ("App 3", "V3")] {
            try folder.write(XMLFixtures.single(entity), to: "\(bundle)/\(name).xcdatamodel/contents")
        }
        try folder.write("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>App 3.xcdatamodel</string></dict></plist>
            """, to: "\(bundle)/.xccurrentversion")
        let versions = try ModelLoader.load(at: folder.url.appending(path: bundle))
        #expect(versions.names == ["App", "App 2", "App 3", "App 10"])
        #expect(versions.currentName == "App 3")
        #expect(versions.current.entityNames == ["V3"])
        #expect(try versions.model(named: "App 10").entityNames == ["V10"])
        #expect(try ModelLoader.loadModel(at: folder.url.appending(path: bundle), version: "App 2").entityNames == ["V2"])
        #expect(versions.version(after: "App 2") == "App 3")
        #expect(versions.version(after: "App 10") == nil)

        var skipping = versions
        skipping.nextOverrides = ["App 2": "App 10"]
        #expect(skipping.version(after: "App 2") == "App 10")
        let explicit = try versions.reordered(["App 10", "App", "App 2", "App 3"])
        #expect(explicit.names == ["App 10", "App", "App 2", "App 3"])
        #expect(throws: ModelError.self) { try versions.reordered(["App"]) }
        #expect(throws: ModelError.self) { try versions.model(named: "App 4") }

        // Without .xccurrentversion the newest version is current.
        try FileManager.default.removeItem(at: folder.url.appending(path: "\(bundle)/.xccurrentversion"))
        #expect(try ModelLoader.load(at: folder.url.appending(path: bundle)).currentName == "App 10")
    }

    @Test("a date's bounds as Xcode writes them (seconds since 2001 in minDateTimeInterval and maxDateTimeInterval) are read, and written back so")
    func dateBounds() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Event"><attribute name="when" attributeType="Date" minDateTimeInterval="0" maxDateTimeInterval="86400.5"/></entity>
            </model>
            """
        let folder = FileManager.default.temporaryDirectory.appending(path: "date-bounds-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appending(path: "Events.xcdatamodel"), withIntermediateDirectories: true)
        try Data(xml.utf8).write(to: folder.appending(path: "Events.xcdatamodel/contents"))
        let model = try ModelLoader.load(at: folder.appending(path: "Events.xcdatamodel")).current
        let rules = try #require(model.entity(named: "Event")?.attributesByName["when"]).validation
        #expect(rules.minValue == .date(Date(timeIntervalSinceReferenceDate: 0)))
        #expect(rules.maxValue == .date(Date(timeIntervalSinceReferenceDate: 86400.5)))
        let written = XcodeModelWriter.contents(of: model)
        #expect(written.contains(#"minDateTimeInterval="0.0""#) && written.contains(#"maxDateTimeInterval="86400.5""#) && !written.contains("minValueString"), "\(written)")
    }

    @Test("Xcode's naming order")
    func xcodeOrder() {
        #expect(ModelVersions.xcodeOrder(["M 10", "M", "M 2", "Other", "M 9"]) == ["M", "M 2", "M 9", "M 10", "Other"])
    }

    @Test("syntax errors name the file, line and column", arguments: [
        ("<model>\n  <entity name=\"A\">\n  </model>", 3),
        ("<model><entity name=\"A\"", 1),
        ("<model>\n<entity name=\"A\"><attribute name=\"x\" attributeType=\"Integer 16\" defaultValueString=\"huge\"/></entity></model>", 2),
    ])
    func xmlErrors(_ text: String, _ line: Int) throws {
        let folder = try TemporaryFolder()
        let file = try folder.write(text, to: "bad.xcdatamodel/contents")
        do {
            _ = try ModelLoader.load(at: file)
            Issue.record("a malformed model loaded")
        } catch let error as ModelError {
            #expect(error.file == file.path)
            #expect(error.line == line)
            #expect(error.column != nil)
        }
    }

    @Test("missing, empty and unrecognised inputs are errors")
    func unreadable() throws {
        let folder = try TemporaryFolder()
        #expect(throws: ModelError.self) { try ModelLoader.load(at: folder.url.appending(path: "missing.json")) }
        let empty = try folder.write("", to: "empty.json")
        #expect(throws: ModelError.self) { try ModelLoader.load(at: empty) }
        let text = try folder.write("hello", to: "model.txt")
        #expect(throws: ModelError.self) { try ModelLoader.load(at: text) }
        try FileManager.default.createDirectory(at: folder.url.appending(path: "Empty.xcdatamodeld"), withIntermediateDirectories: true)
        #expect(throws: ModelError.self) { try ModelLoader.load(at: folder.url.appending(path: "Empty.xcdatamodeld")) }
        let notModel = try folder.write("<plist></plist>", to: "x.xcdatamodel/contents")
        #expect(throws: ModelError.self) { try ModelLoader.load(at: notModel) }
    }

    @Test("a model file with a byte-order mark loads; one that is not UTF-8 is a syntax error with its position")
    func encodings() throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "encodings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let xml = #"<?xml version="1.0" encoding="UTF-8"?><model><entity name="Event"><attribute name="t" attributeType="Date"/></entity></model>"#
        let json = #"{"format": "objectstore-model", "formatVersion": 1, "entities": [{"name": "Event", "attributes": [{"name": "t", "type": "Date"}]}]}"#
        for (name, text) in [("bom.xml", xml), ("bom.json", json)] {
            let url = folder.appending(path: name)
            try (Data([0xEF, 0xBB, 0xBF]) + Data(text.utf8)).write(to: url)
            #expect(try ModelLoader.loadFile(url).entityNames == ["Event"], "\(name)")
        }
        let bad = folder.appending(path: "bad.xml")
        try (Data(#"<model><entity name="Ev"#.utf8) + Data([0xFF, 0xFE]) + Data(#"ent"/></model>"#.utf8)).write(to: bad)
        let error = try #require(throws: ModelError.self) { _ = try ModelLoader.loadFile(bad) }
        #expect(error.code == .syntax)
        #expect(error.column == 24, "\(error)")
        #expect(error.problems.first?.contains("not UTF-8") == true)
    }

    @Test("a processing instruction without data is a syntax error, wherever it is (found by fuzzing: Foundation's parser crashed on it)")
    func emptyProcessingInstruction() throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "pi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fuzzed = [
            "PD94bT8+Cjxtb2RlbCB0eXBlPSJjb20uYXBwbDxtb2RlbCB0eXBlPSJjb20uYXBwbGUuSURFQ29yPSJ5ZXMiPz4KPG1vZGVsIHRkeQ==",
            "PD94bWwgdmVyc2lvbj0iMS4wIiBlbmNvYXRhdGljIiBzb3VyY2VMYW5ndWFnZT0iU3dpZnQiIHU9IjIiPgogICAgPGVudGl0eSBuYW1lPSJBdXRob3IiIHJlcHJlc2VudGVkQ2xhc3NOYW1lPSJBdXRob3IiIHN5bmNhYmxlPSJZRVMiPgogICAgICAgIDxhdHRyaWJ1dGUgbmFtZT0ibmFtZSIgYXR0cmlidXRlVHlwZT0iU3RyaW5nIiBtaW5WYWx1ZVN0cmluZz0iMSIgbWF4VmFsdWVTdHJpbmc9IjEyMCIvPgogICAgICAgIDxhdHRyaWJ1dGUgbmFtZT0iYm9ybiIgb3B0aW9uYWw9IllFUyIgYTAuMCIgbWluaW11bVRvb2xzVmVyc2lvbj0iQXV0byA8YXR0cmlidXRlIG5hbWU9Im5hbWUiIGF0dHJpYnV0ZVR5cGU9IlN0cmluZyIgbWluVmFsdWVTdHJpbmc9IjEiIG1heFZhbHVlU3RyaW5nPSIxMjAiLz4KICAgICAgICA8YXR0cmlidXRlIG5hbWU9ImJvbj0iQXV0b21hdGljIiBzb3VyY2VMYW5ndWFnZT0iU3dpZnQiIHVzZXJEZWZpbmVkTW90ZWxWZXRpZmllcj0iMSI+CiAgICA8ZW50aXR5IG5hbWU9IkF1dGhvciIgbmNhYmxlPSJZRVMiPgogICAgICAgIDxhdHRyaWJ1dGVlIiBhdHRyaWJ1dGVUeXBlPSJTdHJpbmciIG08P2luPz5WYWx1ZVN0cmluZz0iMSIgbWF4VmFsdWVTdHJpbmc9IjEyMCIvPgogICAgICAgIDxhdHRyaWJ1dGUgbmFtZT0iYm9uPSJBdXRvbWF0aWMiIHNvdXJjZUxhbmd1YWdlPSJTd2lmdCIgdXNlckRlZmluZWRNb3RlbFZldGlmaWVyPSIxIj4KICAgIDxlbnRpdHkgbmFtZT0iQXV0aG9yIiBuY2FibGU9IllFUyI+CiAgICAgICAgPGF0dHJpYnV0ZSBuYW1lPSJuYW1lIiBhdCBuYW1lPSJuYW1lIiBhdHRyaWJ1dGVUeXBlPSJTdHJpbmciIG1pblZhbHVlU3RyaW5nPSIxIiBtYXhWYWx1ZVN0cmluZz0iMTIwIi8+CiAgICAgICAgPGF0dHJpYnV0ZSBuaGlwPD94bUVudGkAAAAAAAAAAAAAAABlVHllc3RpbmF0aW9uRW4AAAA=",
            "PD94bWwgdmVyO2lvZVN0cmluZ3Npbz4KICAgIDxlbnRpdHkgbmFtZT0iQXVddGhvciIgcmVwYXR0cmliICAgFiAgIDxhdHRyaWJ1dGUgbmFtZT0ibmFtZSIgYXR0cm1idXRlVHlwZT0iU2luZyIgbWluVmFsdWVTdHJpbmc9IjQiIG5BQUFBQTw/QUE/PkFBQUFBQUFBbklkZW50aWZpZQo=",
        ].map { Data(base64Encoded: $0)! }
        let model = #"<model><entity name="Event"><attribute name="t" attributeType="Date"/></entity></model>"#
        var cases = fuzzed.enumerated().map { ("fuzzed \($0.offset)", $0.element) }
        cases += [("inside", Data("<model>\n<?go?></model>".utf8)), ("in a comment", Data("<model><!-- <?a?> --></model>".utf8))]
        for (name, data) in cases {
            let url = folder.appending(path: "\(name).xml")
            try data.write(to: url)
            let error = try #require(throws: ModelError.self) { _ = try ModelLoader.loadFile(url) }
            #expect(error.code == .syntax && error.problems == ["a processing instruction without data"], "\(name): \(error)")
        }
        // One with data is an ordinary instruction.
        let url = folder.appending(path: "fine.xml")
        try Data("<?xml version=\"1.0\"?><?keep me?>\(model)".utf8).write(to: url)
        #expect(try ModelLoader.loadFile(url).entityNames == ["Event"])
    }
}
