import Foundation

/// A data set for checking that nothing changes on the way through: nils where the
/// attributes have defaults, dates with millisecond and sub-millisecond fractions,
/// ordered to-manys out of key order, and every kind of inverse pair (one-to-many
/// plain and ordered, one-to-one, many-to-many plain, ordered and with itself, an
/// inheritance hierarchy). The document is in export form, so an export of a store
/// that holds it must equal it value for value: it is the oracle.
public enum LosslessData {
    /// The model, in the JSON model format (`docs/model-format.md`).
    public static let modelJSON = """
        {"format": "objectstore-model", "formatVersion": 1, "versionIdentifiers": ["lossless-1"], "entities": [
          {"name": "Post",
           "attributes": [
             {"name": "title", "type": "String", "optional": false},
             {"name": "score", "type": "Double", "default": 0},
             {"name": "price", "type": "Decimal", "default": "0"},
             {"name": "rank", "type": "Integer 32", "default": 7},
             {"name": "published", "type": "Boolean", "default": true},
             {"name": "due", "type": "Date", "default": "2001-01-01T00:00:00.000Z"},
             {"name": "note", "type": "String", "default": "none"}],
           "relationships": [
             {"name": "color", "destination": "Color", "inverse": "posts"},
             {"name": "tags", "destination": "Tag", "inverse": "posts", "toMany": true, "ordered": true},
             {"name": "badge", "destination": "Badge", "inverse": "post"},
             {"name": "parent", "destination": "Post", "inverse": "children"},
             {"name": "children", "destination": "Post", "inverse": "parent", "toMany": true, "ordered": true},
             {"name": "siblings", "destination": "Post", "inverse": "siblings", "toMany": true}]},
          {"name": "Pinned", "parent": "Post", "attributes": [{"name": "level", "type": "Integer 16", "default": 1}]},
          {"name": "Color",
           "attributes": [{"name": "name", "type": "String", "optional": false}, {"name": "hex", "type": "String", "optional": false}],
           "relationships": [{"name": "posts", "destination": "Post", "inverse": "color", "toMany": true}]},
          {"name": "Tag",
           "attributes": [{"name": "label", "type": "String"}],
           "relationships": [{"name": "posts", "destination": "Post", "inverse": "tags", "toMany": true}]},
          {"name": "Badge",
           "attributes": [{"name": "code", "type": "String"}],
           "relationships": [{"name": "post", "destination": "Post", "inverse": "badge"}]}
        ]}
        """

    public typealias Document = [String: [[String: Any]]]

    /// A date in canonical export form: milliseconds, or a sub-millisecond fraction whose
    /// seconds since 2001 have at most 15 significant digits (so the text is the shortest
    /// that reads back to its Double).
    public static func dateText(_ i: Int) -> String {
        let fraction = ["198", "000", "123456", "0005", "999", "250001"][i % 6]
        return "20\(10 + i % 20)-0\(1 + i % 9)-1\(i % 9)T0\(i % 10):1\(i % 6):2\(i % 10).\(fraction)Z"
    }

    /// The document in export form (every attribute, both sides of every relationship,
    /// unordered to-manys in key order: entity name, then primary key).
    ///
    /// - Parameter ascending: ordered to-manys in key order, which is what a store gives
    ///   when it completes them from the other side (a mapping that writes only that side).
    public static func document(ascending: Bool = false) -> Document {
        let posts = 1...24
        func id(_ entity: String, _ pk: Int) -> String { "\(entity)/\(pk)" }
        func post(_ pk: Int) -> String { id(pk > 20 ? "Pinned" : "Post", pk) }
        func keyOrder(_ pks: [Int]) -> [String] { pks.filter { $0 > 20 }.map(post) + pks.filter { $0 <= 20 }.map(post) }
        func color(_ i: Int) -> Int? { i % 6 == 5 ? nil : 1 + i % 5 }
        func tags(_ i: Int) -> [Int] {
            if i % 4 == 3 { return [] }
            var seen: Set<Int> = []
            let distinct = [1 + (i * 2) % 6, 1 + (i * 3 + 1) % 6, 1 + (i + 4) % 6].filter { seen.insert($0).inserted }
            return ascending ? distinct.sorted() : distinct
        }
        func parent(_ i: Int) -> Int? { i > 4 ? 1 + i % 4 : nil }
        func children(_ k: Int) -> [Int] {
            let list = posts.filter { parent($0) == k }
            return ascending ? list : list.sorted(by: >)
        }
        func sibling(_ i: Int) -> Int? { i <= 12 ? (i % 2 == 1 ? i + 1 : i - 1) : nil }
        func badge(_ i: Int) -> Int? { i <= 8 ? 9 - i : nil }
        var document: Document = ["Post": [], "Pinned": [], "Color": [], "Tag": [], "Badge": []]
        for i in posts {
            var object: [String: Any] = [
                "_id": post(i),
                "title": "post \(i)",
                "score": i % 4 == 0 ? NSNull() : Double(i) * 1.25,
                "price": i % 3 == 0 ? NSNull() : "\(i).25",
                "rank": i % 5 == 0 ? NSNull() : i * 100,
                "published": i % 2 == 0 ? NSNull() : (i % 4 == 1),
                "due": i % 7 == 0 ? NSNull() : dateText(i),
                "note": i % 3 == 1 ? NSNull() : "n\(i)",
                "color": color(i).map { id("Color", $0) } ?? NSNull(),
                "tags": tags(i).map { id("Tag", $0) },
                "badge": badge(i).map { id("Badge", $0) } ?? NSNull(),
                "parent": parent(i).map(post) ?? NSNull(),
                "children": children(i).map(post),
                "siblings": sibling(i).map { [post($0)] } ?? [],
            ]
            if i > 20 { object["level"] = i % 2 == 0 ? NSNull() : i }
            document[i > 20 ? "Pinned" : "Post", default: []].append(object)
        }
        let names = ["red", "green", "blue", "cyan", "gray"]
        for c in 1...5 {
            document["Color"]!.append(["_id": id("Color", c), "name": names[c - 1], "hex": "#\(c)\(c)\(c)",
                                       "posts": keyOrder(posts.filter { color($0) == c })])
        }
        for t in 1...6 {
            document["Tag"]!.append(["_id": id("Tag", t), "label": t == 6 ? NSNull() : "tag \(t)",
                                     "posts": keyOrder(posts.filter { tags($0).contains(t) })])
        }
        for b in 1...8 {
            document["Badge"]!.append(["_id": id("Badge", b), "code": "B\(b)", "post": posts.first { badge($0) == b }.map(post) ?? NSNull()])
        }
        return document
    }

    /// The document as JSON text.
    public static func json(_ document: Document) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]), as: UTF8.self)
    }
}
