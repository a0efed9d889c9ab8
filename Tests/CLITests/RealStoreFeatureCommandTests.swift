import Foundation
import Testing
import TestSupport

/// External binary data, transformable archives and uniqueness constraints, through the tool.
@Suite("objectstore with what real stores hold")
struct RealStoreFeatureCommandTests {
    static let model = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="">
            <entity name="Book" syncable="YES">
                <attribute name="title" optional="YES" attributeType="String"/>
                <attribute name="fileURL" optional="YES" attributeType="Transformable"/>
                <attribute name="scan" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
                <uniquenessConstraints><uniquenessConstraint><constraint value="title"/></uniquenessConstraint></uniquenessConstraints>
            </entity>
        </model>
        """

    /// The archive Core Data wrote for "The Trial.file" (hwaxxer/BookMigration Model1.sqlite, ZBOOK row 9, MIT).
    static let archive = "YnBsaXN0MDDUAQIDBAUICwxUJHRvcFgkb2JqZWN0c1gkdmVyc2lvblkkYXJjaGl2ZXLRBgdUcm9vdIABogkKVSRudWxsXlRoZSBUcmlhbC5maWxlEgABhqBfEA9OU0tleWVkQXJjaGl2ZXIIERYfKDI1Ojw/RVRZAAAAAAAAAQEAAAAAAAAADQAAAAAAAAAAAAAAAAAAAGs="

    @Test("import, export (bytes kept, or archives decoded), model show, a duplicate refused, large values in files")
    func roundTrip() throws {
        let workspace = try Workspace()
        let model = try workspace.write(Self.model, to: "Books.xcdatamodel/contents")
        let scan = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).base64EncodedString()
        let data = try workspace.write("""
            {"Book": [{"_id": "b1", "title": "The Trial", "fileURL": "\(Self.archive)", "scan": "\(scan)"}, {"_id": "b2", "title": "Cosmos"}]}
            """, to: "books.json")
        let store = workspace.url.appending(path: "books.sqlite").path
        let imported = try CLI.run("import", store, data, "--model", model)
        #expect(imported.status == 0, "\(imported.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: workspace.url.appending(path: ".books_SUPPORT/_EXTERNAL_DATA").path)
        #expect(files.count == 1)
        let plain = try CLI.run("export", store)
        #expect(plain.stdout.contains("\"fileURL\": \"\(Self.archive)\""))
        #expect(plain.stdout.contains(scan))
        let decoded = try CLI.run("export", store, "--decode-transformables")
        #expect(decoded.status == 0, "\(decoded.stderr)")
        #expect(decoded.stdout.contains("\"fileURL\": \"The Trial.file\""))
        let shown = try CLI.run("model", "show", model)
        #expect(shown.stdout.contains("  unique (title)"))
        #expect(shown.stdout.contains("scan: Binary, optional, external storage"))
        // A duplicate title: refused, naming the constraint; the store keeps its two books.
        let duplicate = try workspace.write("""
            {"Book": [{"_id": "b1", "title": "Cosmos"}]}
            """, to: "dup.json")
        let refused = try CLI.run("import", store, duplicate)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("uniqueness constraint Book(title) is violated"), "\(refused.stderr)")
        #expect(try CLI.run("export", store).stdout == plain.stdout)
        // Converted to LMDB and back: the same export, the large value in a file beside the new store.
        let lmdb = workspace.url.appending(path: "books.lmdb").path, back = workspace.url.appending(path: "back.sqlite").path
        #expect(try CLI.run("convert", store, lmdb).status == 0)
        #expect(try CLI.run("convert", lmdb, back).status == 0)
        #expect(try CLI.run("export", back).stdout == plain.stdout)
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.url.appending(path: ".back_SUPPORT/_EXTERNAL_DATA").path).count == 1)
        #expect(try CLI.run("destroy", back).status == 0)
        #expect(!FileManager.default.fileExists(atPath: workspace.url.appending(path: ".back_SUPPORT").path))
    }

    /// A binary keyed archive whose `$objects` are `objects` (XML, after `$null`), root #1.
    static func hostileArchive(_ objects: String) throws -> String {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict>
            <key>$archiver</key><string>NSKeyedArchiver</string><key>$version</key><integer>100000</integer>
            <key>$top</key><dict><key>root</key><dict><key>CF$UID</key><integer>1</integer></dict></dict>
            <key>$objects</key><array><string>$null</string>\(objects)</array></dict></plist>
            """
        let plist = try PropertyListSerialization.propertyList(from: Data(xml.utf8), format: nil)
        return try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0).base64EncodedString()
    }

    @Test("export --decode-transformables of hostile archives (an array holding itself, a 10,000-deep chain, a 25-level doubled graph): exit 1 naming the object, never a signal")
    func hostileArchives() throws {
        let workspace = try Workspace()
        let model = try workspace.write(Self.model, to: "Books.xcdatamodel/contents")
        func uid(_ n: Int) -> String { "<dict><key>CF$UID</key><integer>\(n)</integer></dict>" }
        let archives = [
            ("self", try Self.hostileArchive("<array>\(uid(1))</array>"), "cycle"),
            ("chain", try Self.hostileArchive((1...10_000).map { "<array>\(uid($0 + 1))</array>" }.joined() + "<string>x</string>"), "deeper"),
            ("doubled", try Self.hostileArchive((1...25).map { "<array>\(uid($0 + 1))\(uid($0 + 1))</array>" }.joined() + "<string>x</string>"), "expands"),
        ]
        for (name, archive, reason) in archives {
            let data = try workspace.write(#"{"Book": [{"_id": "b", "title": "\#(name)", "fileURL": "\#(archive)"}]}"#, to: "\(name).json")
            let store = workspace.url.appending(path: "\(name).sqlite").path
            #expect(try CLI.run("import", store, data, "--model", model).status == 0)
            let exported = try CLI.run("export", store, "--decode-transformables")
            #expect(!exported.signaled && exported.status == 1, "\(name): \(exported.status)")
            #expect(exported.stderr.contains("Book/1.fileURL") && exported.stderr.contains(reason), "\(name): \(exported.stderr)")
            // Without decoding, the bytes as they are.
            #expect(try CLI.run("export", store).stdout.contains(archive))
        }
    }

    @Test("damaged external data files (truncated, emptied, a byte changed, two swapped, a link in the folder, a link to an identical file outside, truncated after the table of digests was emptied or dropped) are errors naming the object and property, in export, convert and validate --deep",
          arguments: ["truncated", "emptied", "changed", "swapped", "link inside", "link outside", "digests emptied", "digests dropped"])
    func damagedExternalFiles(_ damage: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write(Self.model, to: "Books.xcdatamodel/contents")
        let first = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }), second = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let data = try workspace.write("""
            {"Book": [{"_id": "b1", "title": "One", "scan": "\(first.base64EncodedString())"}, {"_id": "b2", "title": "Two", "scan": "\(second.base64EncodedString())"}]}
            """, to: "books.json")
        let store = workspace.url.appending(path: "books.sqlite").path
        #expect(try CLI.run("import", store, data, "--model", model).status == 0)
        let folder = workspace.url.appending(path: ".books_SUPPORT/_EXTERNAL_DATA")
        // Which file holds which book's bytes: the files' own contents, the oracle.
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        let one = try #require(names.first { (try? Data(contentsOf: folder.appending(path: $0))) == first })
        let two = try #require(names.first { (try? Data(contentsOf: folder.appending(path: $0))) == second })
        let file = folder.appending(path: one)
        switch damage {
        case "truncated": try first.prefix(1_000).write(to: file)
        case "emptied": try Data().write(to: file)
        case "changed":
            var bytes = first
            bytes[70_000] ^= 0x01
            try bytes.write(to: file)
        case "swapped":
            let spare = folder.appending(path: "spare")
            try FileManager.default.moveItem(at: file, to: spare)
            try FileManager.default.moveItem(at: folder.appending(path: two), to: file)
            try FileManager.default.moveItem(at: spare, to: folder.appending(path: two))
        case "digests emptied", "digests dropped":
            let database = try RawDatabase(workspace.url.appending(path: "books.sqlite"), readOnly: false)
            try database.execute(damage == "digests emptied" ? "DELETE FROM OBJECTSTORE_EXTERNAL_DATA" : "DROP TABLE OBJECTSTORE_EXTERNAL_DATA")
            database.close()
            try first.prefix(1_000).write(to: file)
        case "link inside":
            try FileManager.default.removeItem(at: file)
            try FileManager.default.createSymbolicLink(atPath: file.path, withDestinationPath: two)
        default:
            let outside = workspace.url.appending(path: "outside.bin")
            try first.write(to: outside)
            try FileManager.default.removeItem(at: file)
            try FileManager.default.createSymbolicLink(atPath: file.path, withDestinationPath: outside.path)
        }
        for command in [["export", store], ["convert", store, workspace.url.appending(path: "copy.lmdb").path],
                        ["convert", store, workspace.url.appending(path: "copy.sqlite").path], ["validate", store, "--deep"]] {
            let result = try CLI.run(command)
            #expect(result.status == 1 && !result.signaled, "\(damage) \(command[0]): \(result.status)")
            #expect(result.stderr.contains(".scan") && result.stderr.contains("external data file"), "\(damage) \(command): \(result.stderr)")
            #expect(!result.stdout.contains(first.base64EncodedString()) && !result.stdout.contains(second.base64EncodedString()))
        }
        #expect(!FileManager.default.fileExists(atPath: workspace.url.appending(path: "copy.lmdb").path))
        #expect(!FileManager.default.fileExists(atPath: workspace.url.appending(path: "copy.sqlite").path))
    }
}
