import Foundation
@testable import ObjectModel
import TestSupport
import Testing

/// Writing the model cache: our archive of a model, compared object by object with the archive
/// Apple's framework wrote for the same model (the real stores' caches in `Fixtures/ModelCache`).
@Suite struct ModelCacheWriterTests {
    @Test("the cache we write for a real store's model is Apple's archive, object by object", arguments: ModelCacheFixtures.names)
    func sameArchiveAsApple(name: String) throws {
        let apple = try KeyedArchiveObjects(ModelCacheFixtures.archive(name))
        let model = try ModelArchive.decodeModel(ModelCacheFixtures.archive(name))
        let written = try ModelArchive.encodeModelCache(model)
        let ours = try KeyedArchiveObjects(RawDeflate.inflate(written))
        let expected = try ArchiveShape(apple).lines()
        let actual = try ArchiveShape(ours).lines()
        // Line by line, so that a failure names the path of what differs.
        for (index, (a, b)) in zip(expected, actual).enumerated() where a != b {
            Issue.record("line \(index): Apple's \(a)\n   ours \(b)")
            break
        }
        #expect(expected.count == actual.count)
        // And it reads back to the hashes Core Data wrote into the store.
        #expect(try ModelArchive.decodeModelCache(written).versionHashes == ModelCacheFixtures.expectedHashes(name))
    }

    @Test("a model with what no fixture shows round-trips: decimal, date, data, UUID and URL defaults, transients, user info, to-many counts")
    func wideModel() throws {
        let model = try ManagedObjectModel(versionIdentifiers: ["7"]) {
            Entity("Item") {
                Attribute("amount", .decimal, default: .decimal(Decimal(string: "-1234567.8901")!))
                Attribute("at", .date, default: .date(Date(timeIntervalSinceReferenceDate: 12.5)))
                Attribute("big", .decimal, default: .decimal(Decimal(string: "12345678901234567890123456789012345678")!))
                Attribute("blob", .binaryData, default: .data(Data([1, 2, 3])))
                Attribute("huge", .decimal, default: .decimal(Decimal(string: "1e40")!))
                Attribute("id", .uuid, default: .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!))
                Attribute("link", .uri, default: .uri(URL(string: "https://example.com/a?b=c")!))
                Attribute("ratio", .double, default: .double(0.25))
                Attribute("scale", .decimal, default: .decimal(Decimal(string: "-1e-50")!))
                Attribute("scratch", .string, transient: true, userInfo: ["k": "v"])
                Relationship("tags", to: "Tag", inverse: "items", toMany: true, ordered: true, minCount: 1, maxCount: 5, deleteRule: .deny)
            }
            Entity("Tag") {
                Attribute("name", .string, optional: false, versionHashModifier: "2")
                Relationship("items", to: "Item", inverse: "tags", toMany: true)
            }
        }
        let back = try ModelArchive.decodeModelCache(try ModelArchive.encodeModelCache(model))
        // (The reader gives properties in order of name: the model above declares them so.)
        #expect(back == model)
        #expect(back.versionHashes == model.versionHashes)
    }
}

extension ModelCacheWriterTests {
    @Test("a model using what no archive has shown the form of is refused, naming each part")
    func unencodable() throws {
        let model = try ManagedObjectModel {
            Entity("Shape", abstract: true) { Attribute("sides", .integer16, validation: ValidationRules(minValue: .integer(3))) }
        }
        let error = try #require(throws: ModelError.self) { try ModelArchive.encodeModelCache(model) }
        #expect(error.code == .unsupported)
        #expect(error.problems.contains { $0.hasPrefix("Shape: abstract") })
        #expect(error.problems.contains { $0.hasPrefix("Shape.sides: validation rules") })
    }
}

/// An archive as lines of text, one per value, each with its path from the root: what Core Data
/// reads from it, without what it does not (the order of `$objects`, which of two equal strings
/// is shared, mutable or immutable collection classes, keys that are absent rather than empty).
struct ArchiveShape {
    let archive: KeyedArchiveObjects
    init(_ archive: KeyedArchiveObjects) { self.archive = archive }

    func lines() throws -> [String] {
        var lines: [String] = []
        var seen: [Int: String] = [:]
        try walk(.uid(archive.root), path: "root", into: &lines, seen: &seen)
        return lines
    }

    /// Collections that are empty, absent or nil mean the same to Core Data.
    private static let emptyMeansAbsent: Set<String> = ["NSCompoundIndexes", "NSFetchIndexDescriptions", "NSUniqueTuples", "NSSubentities", "NSUserInfo"]

    private func walk(_ node: PropertyListNode, path: String, into lines: inout [String], seen: inout [Int: String]) throws {
        guard case .uid(let uid) = node else { return lines.append("\(path) = \(Self.scalar(node))") }
        guard let target = try archive.node(uid, from: path) else { return lines.append("\(path) = nil") }
        guard case .dictionary = target else { return lines.append("\(path) = \(Self.scalar(target))") }
        if let first = seen[uid] { return lines.append("\(path) -> \(first)") }
        let object = try archive.object(uid, from: path)!
        seen[uid] = path
        let base = object.className.replacingOccurrences(of: "Mutable", with: "")
        switch base {
        case "NSString": return lines.append("\(path) = \(Self.scalar(object.fields["NS.string"]!))")
        case "NSDecimalNumberPlaceholder":
            return lines.append("\(path) = decimal \(try ArchivedModelReader(archive: archive).decimal(object, place: path))")
        case "NSArray", "NSSet":
            guard case .array(let items)? = object.fields["NS.objects"] else { return lines.append("\(path) = \(base) ?") }
            lines.append("\(path) : \(base) \(items.count)")
            // Sets, and the arrays whose order Core Data does not keep, by their elements' text.
            for (index, item) in items.enumerated() {
                try walk(item, path: base == "NSSet" ? "\(path){\(try text(item))}" : "\(path)[\(index)]", into: &lines, seen: &seen)
            }
        case "NSDictionary", "NSKnownKeysDictionary1":
            let entries = try ArchivedModelReader(archive: archive).dictionary(in: ArchivedObject(index: 0, className: "holder", fields: ["d": node]), "d")
            lines.append("\(path) : dictionary \(entries.count)")
            for (key, value) in entries.sorted(by: { $0.key < $1.key }) { try walk(value, path: "\(path)[\(key)]", into: &lines, seen: &seen) }
        default:
            lines.append("\(path) : \(object.className)")
            for key in object.fields.keys.sorted() where key != "$class" {
                let value = object.fields[key]!
                if Self.emptyMeansAbsent.contains(key), try isEmpty(value) { continue }
                try walk(value, path: "\(path).\(key)", into: &lines, seen: &seen)
            }
        }
    }

    /// Whether `node` is nil or an empty collection.
    private func isEmpty(_ node: PropertyListNode) throws -> Bool {
        guard case .uid(let uid) = node, let target = try archive.node(uid, from: "") else { return true }
        guard case .dictionary(let fields) = target else { return false }
        for key in ["NS.objects", "NS.keys"] { if case .array(let items)? = fields[key], !items.isEmpty { return false } }
        return fields["NS.objects"] != nil || fields["NS.keys"] != nil
    }

    /// A string's text, for naming set elements.
    private func text(_ node: PropertyListNode) throws -> String {
        guard case .uid(let uid) = node, let target = try archive.node(uid, from: "") else { return Self.scalar(node) }
        return Self.scalar(target)
    }

    /// Inline values; a Boolean is the number Core Data reads it as.
    private static func scalar(_ node: PropertyListNode) -> String {
        switch node {
        case .boolean(let v): "\(v ? 1 : 0)"
        case .integer(let v): "\(v)"
        case .real(let v): "\(v)"
        case .string(let v): String(reflecting: v)
        case .data(let v): "data \(v.base64EncodedString())"
        default: KeyedArchiveObjects.describe(node)
        }
    }
}
