import Foundation
import Testing
import TestSupport

/// `objectstore migrate --mapping X.xcmappingmodel`: an Xcode mapping model written by hand in
/// the documented format, on a SQLite store made and filled by the tool.
@Suite("objectstore migrate with an Xcode mapping model")
struct XcodeMappingCommandTests {
    static let library = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Author" syncable="YES">
                <attribute name="name" attributeType="String"/>
                <relationship name="books" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="author" inverseEntity="Book"/>
            </entity>
            <entity name="Book" syncable="YES">
                <attribute name="title" attributeType="String"/>
                <attribute name="pages" optional="YES" attributeType="Integer 32" usesScalarValueType="YES"/>
                <relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/>
            </entity>
        </model>
        """
    /// Author becomes Writer (name → fullName), books gain a shelf: nothing a lightweight migration infers.
    static let library2 = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Writer" syncable="YES">
                <attribute name="fullName" attributeType="String"/>
                <relationship name="books" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="writer" inverseEntity="Book"/>
            </entity>
            <entity name="Book" syncable="YES">
                <attribute name="title" attributeType="String"/>
                <attribute name="pages" optional="YES" attributeType="Integer 32" usesScalarValueType="YES"/>
                <attribute name="shelf" attributeType="String"/>
                <relationship name="writer" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Writer" inverseName="books" inverseEntity="Writer"/>
            </entity>
        </model>
        """

    /// AuthorToWriter and BookToBook, as Xcode would write them; `paths` records the two model versions.
    static func mapping(paths: Bool = true, policy: String? = nil) -> String {
        XcodeMappingXML.document("""
            <object type="XDDEVMAPPINGMODEL" id="z1">
                \(paths ? """
                <attribute name="sourcemodelpath" type="string">Library/Library.xcdatamodeld/Library.xcdatamodel</attribute>
                <attribute name="destinationmodelpath" type="string">Library/Library.xcdatamodeld/Library 2.xcdatamodel</attribute>
                """ : "")
                <relationship name="entitymappings" type="0/0" destination="XDDEVENTITYMAPPING" idrefs="z2 z3"></relationship>
            </object>
            <object type="XDDEVENTITYMAPPING" id="z2">
                <attribute name="name" type="string">AuthorToWriter</attribute>
                <attribute name="sourcename" type="string">Author</attribute>
                <attribute name="destinationname" type="string">Writer</attribute>
                <attribute name="mappingtypename" type="string">\(policy == nil ? "Transform" : "Custom")</attribute>
                <attribute name="mappingnumber" type="int16">1</attribute>
                \(policy.map { #"<attribute name="migrationpolicyclassname" type="string">\#($0)</attribute>"# } ?? "")
                <attribute name="autogenerateexpression" type="bool">1</attribute>
                <relationship name="attributemappings" type="0/0" destination="XDDEVATTRIBUTEMAPPING" idrefs="z4"></relationship>
                <relationship name="relationshipmappings" type="0/0" destination="XDDEVRELATIONSHIPMAPPING" idrefs="z5"></relationship>
            </object>
            <object type="XDDEVENTITYMAPPING" id="z3">
                <attribute name="sourcename" type="string">Book</attribute>
                <attribute name="destinationname" type="string">Book</attribute>
                <attribute name="mappingtypename" type="string">Transform</attribute>
                <attribute name="mappingnumber" type="int16">2</attribute>
                <attribute name="sourcefilterpredicatestring" type="string">title != "Draft"</attribute>
                <attribute name="autogenerateexpression" type="bool">1</attribute>
                <relationship name="attributemappings" type="0/0" destination="XDDEVATTRIBUTEMAPPING" idrefs="z6 z7 z8"></relationship>
                <relationship name="relationshipmappings" type="0/0" destination="XDDEVRELATIONSHIPMAPPING" idrefs="z9"></relationship>
            </object>
        \(XcodeMappingXML.property("ATTRIBUTE", "z4", "fullName", expression: .source("name")))
        \(XcodeMappingXML.property("RELATIONSHIP", "z5", "books", expression: .destinations("BookToBook", .source("books"))))
        \(XcodeMappingXML.property("ATTRIBUTE", "z6", "title", generated: true))
        \(XcodeMappingXML.property("ATTRIBUTE", "z7", "pages", generated: true))
        \(XcodeMappingXML.property("ATTRIBUTE", "z8", "shelf", expression: .constant(.string("unsorted"))))
        \(XcodeMappingXML.property("RELATIONSHIP", "z9", "writer", expression: .destinations("AuthorToWriter", .source("author"))))
        """)
    }

    static let data = """
        {"Author": [{"_id": "le-guin", "name": "Ursula K. Le Guin"}, {"_id": "banks", "name": "Iain M. Banks"}],
         "Book": [{"_id": "earthsea", "title": "A Wizard of Earthsea", "pages": 183, "author": "le-guin"},
                  {"_id": "excession", "title": "Excession", "author": "banks"},
                  {"_id": "draft", "title": "Draft", "pages": 3, "author": "banks"},
                  {"_id": "lathe", "title": "The Lathe of Heaven", "pages": 184, "author": "le-guin"}]}
        """

    /// The bundle and a SQLite store at `Library` with the data.
    func setUp(_ workspace: Workspace) throws -> (bundle: String, store: String) {
        _ = try workspace.write(Self.library, to: "Library.xcdatamodeld/Library.xcdatamodel/contents")
        _ = try workspace.write(Self.library2, to: "Library.xcdatamodeld/Library 2.xcdatamodel/contents")
        let bundle = workspace.url.appending(path: "Library.xcdatamodeld").path
        let data = try workspace.write(Self.data, to: "library.json")
        let store = workspace.url.appending(path: "library.sqlite").path
        #expect(try CLI.run("create", store, "--model", bundle, "--model-version", "Library").status == 0)
        #expect(try CLI.run("import", store, data, "--model", bundle, "--model-version", "Library").status == 0)
        return (bundle, store)
    }

    /// What the mapping makes of the data: writers in the authors' order, books in theirs but the
    /// filtered draft, each linked as its author was, every shelf "unsorted". A one-to-one mapping
    /// keeps the source objects' keys: the draft's (Book/3) is not reused.
    static var expected: [String: Any] { [
        "Writer": [
            ["_id": "Writer/1", "fullName": "Ursula K. Le Guin", "books": ["Book/1", "Book/4"]],
            ["_id": "Writer/2", "fullName": "Iain M. Banks", "books": ["Book/2"]],
        ],
        "Book": [
            ["_id": "Book/1", "title": "A Wizard of Earthsea", "pages": 183, "shelf": "unsorted", "writer": "Writer/1"],
            ["_id": "Book/2", "title": "Excession", "pages": NSNull(), "shelf": "unsorted", "writer": "Writer/2"],
            ["_id": "Book/4", "title": "The Lathe of Heaven", "pages": 184, "shelf": "unsorted", "writer": "Writer/1"],
        ],
    ] }

    @Test("the .xcmappingmodel folder, its xcmapping.xml, and a mapping model without model paths (fitted by names) each migrate the store to what the mapping says",
          arguments: ["folder", "file", "no paths"])
    func migrate(_ form: String) throws {
        let workspace = try Workspace()
        let (bundle, store) = try setUp(workspace)
        let xml = try workspace.write(Self.mapping(paths: form != "no paths"), to: "Library2.xcmappingmodel/xcmapping.xml")
        let mapping = form == "file" ? xml : workspace.url.appending(path: "Library2.xcmappingmodel").path
        // The mapping's filter leaves the draft out: the step drops it, and runs only when told to.
        let step = "Library -> Library 2: mapping \(mapping); drops Book objects its mappings' filters leave out (1 object)"
        let refused = try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping)
        #expect(refused.status != 0 && refused.stdout == step + "\n", "\(refused.stdout)")
        #expect(refused.stderr.contains("Library -> Library 2 drops Book objects its mappings' filters leave out (1 object). Nothing was changed"), "\(refused.stderr)")
        let result = try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping, "--allow-data-loss")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == step + "\nmigrated \(store) from Library to Library 2\n")
        let export = try CLI.run("export", store, "--model", bundle)
        #expect(export.status == 0, "\(export.stderr)")
        let differences = JSONComparison.differences(export.stdout, Self.expected)
        #expect(differences.isEmpty, "\(differences.joined(separator: "\n"))\n\(export.stdout)")
    }

    @Test("a custom policy class in the mapping model is refused by the dry run, naming the class and PolicyRegistry; the store is unchanged")
    func customPolicy() throws {
        let workspace = try Workspace()
        let (bundle, store) = try setUp(workspace)
        _ = try workspace.write(Self.mapping(policy: "Library.WriterPolicy"), to: "Library2.xcmappingmodel/xcmapping.xml")
        let before = try Data(contentsOf: URL(filePath: store))
        let mapping = workspace.url.appending(path: "Library2.xcmappingmodel").path
        let result = try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping, "--dry-run")
        #expect(result.status == 1)
        #expect(result.stderr.contains("Library.WriterPolicy") && result.stderr.contains("PolicyRegistry") && result.stderr.contains("AuthorToWriter"), "\(result.stderr)")
        let run = try CLI.run("migrate", store, "--model", bundle, "--mapping", mapping)
        #expect(run.status == 1 && run.stderr.contains("Library.WriterPolicy"))
        #expect(try Data(contentsOf: URL(filePath: store)) == before)
    }

    @Test("a mapping model without paths that fits no step (a typo) is an invalid mapping saying why, even with --on-incompatible recreate: the store is kept")
    func misfitKeepsTheStore() throws {
        let workspace = try Workspace()
        let (bundle, store) = try setUp(workspace)
        let text = Self.mapping(paths: false).replacingOccurrences(of: ">fullName<", with: ">fullname<")
        _ = try workspace.write(text, to: "Typo.xcmappingmodel/xcmapping.xml")
        let before = try Data(contentsOf: URL(filePath: store))
        let result = try CLI.run("migrate", store, "--model", bundle, "--mapping", workspace.url.appending(path: "Typo.xcmappingmodel").path,
                                 "--on-incompatible", "recreate")
        #expect(result.status == 1, "\(result.stdout)")
        #expect(result.stderr.contains("fullname") && !result.stdout.contains("recreated"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(filePath: store)) == before)
    }

    @Test("a damaged mapping model is a one-line error naming the file; the store is unchanged")
    func damaged() throws {
        let workspace = try Workspace()
        let (bundle, store) = try setUp(workspace)
        let text = Self.mapping().replacingOccurrences(of: "XDDEVMAPPINGMODEL\" id", with: "XDDEVSOMETHING\" id")
        let xml = try workspace.write(text, to: "Broken.xcmappingmodel/xcmapping.xml")
        let before = try Data(contentsOf: URL(filePath: store))
        let result = try CLI.run("migrate", store, "--model", bundle, "--mapping", workspace.url.appending(path: "Broken.xcmappingmodel").path)
        #expect(result.status == 1 && result.stderr.contains(xml) && result.stderr.contains("XDDEVSOMETHING"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(filePath: store)) == before)
    }
}
