import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
import TestSupport

/// `model show --dot/--svg` and `diff --dot/--svg`: the SVG Graphviz draws is parsed as XML and
/// must hold every entity as a node and every relationship and parent as an edge, labelled as the
/// model says; the diff's DOT colours each part by how it changed.
@Suite("objectstore model pictures")
struct ModelPictureTests {
    /// An abstract parent with two children, a one-to-many with its inverse, an ordered many-to-many.
    static func model(version: Int) -> String {
        let renamed = version == 2 ? #"<attribute name="pageCount" optional="YES" attributeType="Integer 32" elementID="pages"/>"#
                                   : #"<attribute name="pages" optional="YES" attributeType="Integer 32"/>"#
        let extra = version == 2 ? #"<entity name="Review"><attribute name="stars" attributeType="Integer 16"/></entity>"# : ""
        let gone = version == 1 ? #"<attribute name="legacy" optional="YES" attributeType="String"/>"# : ""
        let author = version == 1 ? #"name="author""# : #"name="writer" elementID="author""#, inverse = version == 1 ? "author" : "writer"
        return """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Author"><attribute name="name" attributeType="String"/>\(gone)
              <relationship name="books" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="Book" inverseName="\(inverse)"/></entity>
            <entity name="Item" isAbstract="YES"><attribute name="title" attributeType="String"/>
              <relationship name="shelves" optional="YES" toMany="YES" destinationEntity="Shelf" inverseName="items"/></entity>
            <entity name="Book" parentEntity="Item">\(renamed)
              <relationship \(author) maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books"/></entity>
            <entity name="Magazine" parentEntity="Item"><attribute name="issue" optional="YES" attributeType="Integer 16"/></entity>
            <entity name="Shelf"><attribute name="label" attributeType="String"/>
              <relationship name="items" optional="YES" toMany="YES" ordered="YES" destinationEntity="Item" inverseName="shelves"/></entity>
            \(extra)
            </model>
            """
    }

    /// The titles of the SVG's nodes and edges, and every text it draws.
    final class SVGReader: NSObject, XMLParserDelegate {
        var nodes: Set<String> = [], edges: Set<String> = [], texts: [String] = []
        private var group: String?, element = "", text = ""

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if name == "g", let kind = attributes["class"], kind == "node" || kind == "edge" { group = kind }
            element = name
            text = ""
        }
        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }
        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == "title", group == "node" { nodes.insert(text) }
            if name == "title", group == "edge" { edges.insert(text) }
            if name == "text" { texts.append(text) }
            if name == "g" { group = nil }
            text = ""
        }
    }

    func read(_ svg: String) throws -> SVGReader {
        let parser = XMLParser(data: Data(svg.utf8))
        let reader = SVGReader()
        parser.delegate = reader
        #expect(parser.parse(), "the SVG is XML: \(parser.parserError.map { "\($0)" } ?? "")")
        return reader
    }

    @Test("model show --svg: every entity a node with its attributes, every relationship pair and parent an edge with its label")
    func showSVG() throws {
        let workspace = try Workspace()
        let model = try workspace.write(Self.model(version: 1), to: "Library.xcdatamodel/contents")
        let folder = URL(filePath: model).deletingLastPathComponent().path
        let result = try CLI.run("model", "show", folder, "--svg")
        #expect(result.status == 0, "\(result.stderr)")
        let svg = try read(result.stdout)
        #expect(svg.nodes == ["Author", "Item", "Book", "Magazine", "Shelf"])
        #expect(svg.edges == ["Author->Book", "Item->Shelf", "Book->Item", "Magazine->Item"], "one edge per relationship and its inverse, one per parent")
        for text in ["Author", "name: String", "legacy: String?", "Item", " «abstract»", "Book : Item", "pages: Integer 32?",
                     "Author.books [0..*] cascade", "Book.author [1] nullify", "Item.shelves [0..*] nullify", "Shelf.items [0..*] nullify, ordered"] {
            #expect(svg.texts.contains(text), "\(text) in \(svg.texts)")
        }
        let dot = try CLI.run("model", "show", folder, "--dot")
        #expect(dot.status == 0 && dot.stdout.hasPrefix("digraph \"Library\" {"))
        #expect(try CLI.run("model", "show", folder, "--dot", "--json").status == 64)
    }

    @Test("diff --dot colours added parts green, removed red and struck, renamed blue, changed orange; --svg draws it")
    func diffPicture() throws {
        let workspace = try Workspace()
        let a = URL(filePath: try workspace.write(Self.model(version: 1), to: "a.xcdatamodel/contents")).deletingLastPathComponent().path
        let b = URL(filePath: try workspace.write(Self.model(version: 2), to: "b.xcdatamodel/contents")).deletingLastPathComponent().path
        let dot = try CLI.run("diff", a, b, "--dot")
        #expect(dot.status == 0, "\(dot.stderr)")
        let lines = dot.stdout.split(separator: "\n").map(String.init)
        func line(of node: String) -> String { lines.first { $0.hasPrefix("  \"\(node)\" [label=") } ?? "" }
        #expect(line(of: "Review").contains(##"COLOR="#1a7f37""##), "added entity green")
        #expect(line(of: "Author").contains(##"<FONT COLOR="#cf222e"><S>legacy: String?</S></FONT>"##), "removed attribute red, struck")
        #expect(line(of: "Book").contains(##"<FONT COLOR="#0550ae">pages → pageCount: Integer 32?</FONT>"##), "renamed attribute blue")
        #expect(line(of: "Author").contains(##"<FONT COLOR="#bc4c00"><B>Author</B>"##), "changed entity orange")
        #expect(line(of: "Shelf").contains(##"<FONT COLOR="black"><B>Shelf</B>"##), "unchanged entity black")
        #expect(dot.stdout.contains("Book.author → writer [1] nullify"), "a renamed relationship shows its old name")
        let svg = try read(try CLI.run("diff", a, b, "--svg").stdout)
        #expect(svg.nodes == ["Author", "Item", "Book", "Magazine", "Shelf", "Review"])
    }

    @Test("--svg without Graphviz is an error that says to install it, or use --dot")
    func noGraphviz() throws {
        let workspace = try Workspace()
        let model = URL(filePath: try workspace.write(Self.model(version: 1), to: "m.xcdatamodel/contents")).deletingLastPathComponent().path
        let result = try CLI.run(["model", "show", model, "--svg"], environment: ["PATH": workspace.url.path])
        #expect(result.status == 1 && result.stderr.contains("apt-get install graphviz") && result.stdout.isEmpty, "\(result.stderr)")
    }
}
