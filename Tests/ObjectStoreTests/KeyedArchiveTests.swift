import Foundation
import ObjectModel
import ObjectStore
import Testing

/// Bytes of hex text.
func hexData(_ hex: String) -> Data {
    let digits = Array(hex.utf8)
    return Data(stride(from: 0, to: digits.count - 1, by: 2).map { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)! })
}

/// Keyed archives (NSKeyedArchiver) read as JSON, by class name, nothing instantiated.
@Suite("Keyed archives as JSON")
struct KeyedArchiveTests {
    /// `ZBOOK.ZFILEURL` of row 9 of hwaxxer/BookMigration@f4cfe87659:BookMigration/Model1.sqlite (MIT),
    /// a transformable written by Core Data with the default transformer: the archive of a string.
    static let realBookFileURL = hexData(
        "62706C6973743030D40102030405080B0C5424746F7058246F626A65637473582476657273696F6E59246172636869766572D1060754726F6F74"
        + "8001A2090A55246E756C6C5E54686520547269616C2E66696C6512000186A05F100F4E534B6579656441726368697665720811161F2832353A3C3F"
        + "4554590000000000000101000000000000000D0000000000000000000000000000006B")

    func parsed(_ json: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
    }

    @Test("the archive Core Data wrote in a real store")
    func realStore() throws {
        #expect(KeyedArchive.isArchive(Self.realBookFileURL))
        #expect(try KeyedArchive.json(Self.realBookFileURL) == "\"The Trial.file\"")
    }

    @Test("what Foundation's NSKeyedArchiver writes: strings, numbers, arrays, dictionaries, dates, data, UUIDs, URLs")
    func foundationArchive() throws {
        let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let root: NSDictionary = [
            "name": "Zoë", "count": 42, "ratio": 0.5, "flag": true,
            "list": ["a", 1] as NSArray,
            "when": Date(timeIntervalSinceReferenceDate: 86400.25),
            "bytes": Data([0, 1, 2, 255]),
            "id": NSUUID(uuidString: uuid.uuidString)!,
            "link": NSURL(string: "https://example.com/a?b=c")!,
        ]
        let data = try NSKeyedArchiver.archivedData(withRootObject: root, requiringSecureCoding: false)
        let json = try parsed(KeyedArchive.json(data)) as? [String: Any]
        #expect(json?["name"] as? String == "Zoë")
        #expect(json?["count"] as? Int == 42)
        #expect(json?["ratio"] as? Double == 0.5)
        #expect(json?["flag"] as? Bool == true)
        #expect((json?["list"] as? [Any])?.count == 2)
        #expect(json?["when"] as? String == "2001-01-02T00:00:00.250Z")
        #expect(json?["bytes"] as? String == "AAEC/w==")
        #expect(json?["id"] as? String == uuid.uuidString)
        #expect(json?["link"] as? String == "https://example.com/a?b=c")
    }

    /// An archive as XML, references as `{"CF$UID": n}`: an object of a class we do not know, a
    /// cycle, and whatever `objects` says.
    func archive(_ objects: String, root: Int = 1) throws -> Data {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
            <key>$archiver</key><string>NSKeyedArchiver</string>
            <key>$version</key><integer>100000</integer>
            <key>$top</key><dict><key>root</key><dict><key>CF$UID</key><integer>\(root)</integer></dict></dict>
            <key>$objects</key><array><string>$null</string>\(objects)</array>
            </dict></plist>
            """
        let plist = try PropertyListSerialization.propertyList(from: Data(xml.utf8), format: nil)
        return try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
    }

    static func uid(_ n: Int) -> String { "<dict><key>CF$UID</key><integer>\(n)</integer></dict>" }

    @Test("other classes by name, with their keys; an object inside itself is an error naming the cycle")
    func otherClasses() throws {
        let color = """
            <dict><key>$classname</key><string>UIColor</string><key>$classes</key><array><string>UIColor</string><string>NSObject</string></array></dict>
            <string>red</string>
            """
        let data = try archive("""
            <dict><key>$class</key>\(Self.uid(2))<key>name</key>\(Self.uid(3))<key>alpha</key><real>0.25</real><key>none</key>\(Self.uid(0))</dict>
            \(color)
            """)
        let json = try parsed(KeyedArchive.json(data)) as? [String: Any]
        #expect(json?["$class"] as? String == "UIColor")
        #expect(json?["name"] as? String == "red")
        #expect(json?["alpha"] as? Double == 0.25)
        #expect(json?["none"] is NSNull)
        let cyclic = try archive("<dict><key>$class</key>\(Self.uid(2))<key>parent</key>\(Self.uid(1))</dict>\(color)")
        let error = try #require(throws: StoreError.self) { try KeyedArchive.json(cyclic) }
        #expect(error.code == .corrupt && error.message.contains("#1 -> #1") && error.message.contains("cycle"), "\(error.message)")
    }

    @Test("hostile archives are errors, never a crash, a stack overflow or gigabytes: an array holding itself, a 10,000-deep chain, a 25-level doubled graph, one string shared a million times",
          arguments: ["self", "chain", "doubled", "shared"])
    func hostile(_ kind: String) throws {
        let data: Data
        let expected: String
        switch kind {
        case "self":
            data = try archive("<array>\(Self.uid(1))</array>")
            expected = "cycle"
        case "chain":
            data = try archive((1...10_000).map { "<array>\(Self.uid($0 + 1))</array>" }.joined() + "<string>end</string>")
            expected = "deeper than 256"
        case "doubled":
            data = try archive((1...25).map { "<array>\(Self.uid($0 + 1))\(Self.uid($0 + 1))</array>" }.joined() + "<string>leaf</string>")
            expected = "expands to more than"
        default:
            let string = "<string>\(String(repeating: "long text ", count: 1_000))</string>"
            data = try archive("<array>" + String(repeating: Self.uid(2), count: 20_000) + "</array>" + string)
            expected = "16 times its size"
        }
        #expect(data.count < 300_000)
        let error = try #require(throws: StoreError.self) { try KeyedArchive.json(data) }
        #expect(error.code == .corrupt && error.message.contains(expected), "\(kind): \(error.message)")
    }

    @Test("damaged archives are typed errors saying what is wrong", arguments: [
        ("truncated", "the binary property list is damaged"),
        ("not an archive", "not an NSKeyedArchiver archive"),
        ("reference out of range", "refers to object #9 of 2"),
        ("class without a name", "$class is not a class record with a $classname"),
    ])
    func damaged(_ kind: String, _ expected: String) throws {
        let data: Data = switch kind {
        case "truncated": Self.realBookFileURL.prefix(60)
        case "not an archive": try PropertyListSerialization.data(fromPropertyList: ["a": 1], format: .binary, options: 0)
        case "reference out of range": try archive("<string>x</string>", root: 9)
        default: try archive("<dict><key>$class</key>\(Self.uid(1))</dict>")
        }
        do {
            _ = try KeyedArchive.json(data)
            Issue.record("decoded a damaged archive (\(kind))")
        } catch let error as StoreError {
            #expect(error.code == .corrupt)
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }

    @Test("random damage to a real archive is a typed error or a value, never a crash (Foundation's own reader crashes on some)")
    func randomDamage() throws {
        var generator = SystemRandomNumberGenerator()
        var refused = 0
        for _ in 0..<300 {
            var bytes = [UInt8](Self.realBookFileURL)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 8..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            do { _ = try KeyedArchive.json(Data(bytes)) } catch is StoreError { refused += 1 }
        }
        #expect(refused > 0, "some damage is caught")
    }
}
