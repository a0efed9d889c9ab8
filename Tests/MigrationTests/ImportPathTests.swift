import Foundation
import ObjectModel
@testable import ObjectStore
import SQLiteStore
import Testing
import TestSupport

/// A JSON document of new objects is read straight into batches (and, into a new store, written as
/// a conversion writes); `linksExisting` keeps it on the record path. Both must give the store the
/// same objects, keys, values and both sides of every relationship: checked against the document's
/// own text and, for SQLite, against the raw rows as SQLite sees them.
@Suite("JSON import: the batch path and the record path")
struct ImportPathTests {
    /// The shapes users have: an abstract parent with required attributes and rules, a sub-entity of a
    /// sub-entity in one hierarchy, a one-to-many with its inverse, a many-to-many, an ordered
    /// to-many with a to-one inverse, a one-to-one.
    static let model: ManagedObjectModel = {
        let json = """
        {"format": "objectstore-model", "formatVersion": 1, "entities": [
         {"name": "Publication", "abstract": true, "attributes": [
           {"name": "title", "type": "String", "optional": false, "minLength": 1},
           {"name": "pages", "type": "Integer 32", "optional": false, "minValue": 1, "default": 10},
           {"name": "rating", "type": "Double"}, {"name": "published", "type": "Date"}]},
         {"name": "Book", "parent": "Publication", "attributes": [{"name": "isbn", "type": "String"}],
          "relationships": [{"name": "author", "destination": "Author", "inverse": "books"},
                            {"name": "tags", "destination": "Tag", "inverse": "books", "toMany": true},
                            {"name": "featuredIn", "destination": "Library", "inverse": "featured"},
                            {"name": "cover", "destination": "Cover", "inverse": "book"}]},
         {"name": "Textbook", "parent": "Book", "attributes": [{"name": "subject", "type": "String", "optional": false}]},
         {"name": "Author", "attributes": [{"name": "name", "type": "String", "optional": false}],
          "relationships": [{"name": "books", "destination": "Book", "inverse": "author", "toMany": true}]},
         {"name": "Tag", "attributes": [{"name": "label", "type": "String"}],
          "relationships": [{"name": "books", "destination": "Book", "inverse": "tags", "toMany": true}]},
         {"name": "Library", "attributes": [{"name": "name", "type": "String"}],
          "relationships": [{"name": "featured", "destination": "Book", "inverse": "featuredIn", "toMany": true, "ordered": true}]},
         {"name": "Cover", "attributes": [{"name": "color", "type": "String"}],
          "relationships": [{"name": "book", "destination": "Book", "inverse": "cover"}]}]}
        """
        return try! JSONModelFormat.decode(Data(json.utf8), file: "import paths model")
    }()

    /// Relationships given on one side only, on both, in either order; defaults, nulls, escapes,
    /// numbers in several spellings; a featured list in an order other than the keys'.
    static let document = #"""
    {"Textbook": [{"_id": "Textbook/3", "title": "Algebra", "pages": 300, "subject": "maths", "author": "Author/1", "tags": ["Tag/2"]}],
     "Book": [{"_id": "Book/1", "title": "Dune \u00e9 \"quoted\"", "pages": 412, "rating": 4.5e0, "published": "1965-08-01T00:00:00Z",
               "author": "Author/1", "tags": ["Tag/1", "Tag/2"], "cover": "Cover/1"},
              {"isbn": null, "_id": "Book/2", "title": "Emma", "rating": -0.0, "author": null}],
     "Author": [{"_id": "Author/1", "name": "Ada", "books": ["Book/1", "Textbook/3"]}, {"_id": "Author/2", "name": "Bo", "books": []}],
     "Tag": [{"_id": "Tag/1", "label": "sf"}, {"_id": "Tag/2", "label": "classic", "books": ["Textbook/3", "Book/1"]}],
     "Library": [{"_id": "Library/1", "name": "City", "featured": ["Textbook/3", "Book/2", "Book/1"]}],
     "Cover": [{"_id": "Cover/1", "color": "blue", "book": "Book/1"}]}
    """#

    /// The same objects as `export` writes them: every value, both sides of every relationship.
    static let exported = """
    {
      "Author": [
        {
          "_id": "Author/1",
          "books": ["Book/1", "Textbook/3"],
          "name": "Ada"
        },
        {
          "_id": "Author/2",
          "books": [],
          "name": "Bo"
        }
      ],
      "Book": [
        {
          "_id": "Book/1",
          "author": "Author/1",
          "cover": "Cover/1",
          "featuredIn": "Library/1",
          "isbn": null,
          "pages": 412,
          "published": "1965-08-01T00:00:00.000Z",
          "rating": 4.5,
          "tags": ["Tag/1", "Tag/2"],
          "title": "Dune é \\"quoted\\""
        },
        {
          "_id": "Book/2",
          "author": null,
          "cover": null,
          "featuredIn": "Library/1",
          "isbn": null,
          "pages": 10,
          "published": null,
          "rating": -0.0,
          "tags": [],
          "title": "Emma"
        }
      ],
      "Cover": [
        {
          "_id": "Cover/1",
          "book": "Book/1",
          "color": "blue"
        }
      ],
      "Library": [
        {
          "_id": "Library/1",
          "featured": ["Textbook/3", "Book/2", "Book/1"],
          "name": "City"
        }
      ],
      "Tag": [
        {
          "_id": "Tag/1",
          "books": ["Book/1"],
          "label": "sf"
        },
        {
          "_id": "Tag/2",
          "books": ["Book/1", "Textbook/3"],
          "label": "classic"
        }
      ],
      "Textbook": [
        {
          "_id": "Textbook/3",
          "author": "Author/1",
          "cover": null,
          "featuredIn": "Library/1",
          "isbn": null,
          "pages": 300,
          "published": null,
          "rating": null,
          "subject": "maths",
          "tags": ["Tag/2"],
          "title": "Algebra"
        }
      ]
    }

    """

    enum Path: String, CaseIterable {
        /// The record path (`linksExisting` keeps a document there).
        case records
        /// Read into batches, written in one save.
        case oneSave
        /// Read into batches, written as a conversion fills a new store.
        case newStore
    }

    /// Imports `document` into a new store of `backend` by `path`; returns the store's URL.
    static func imported(_ document: String, _ backend: String, _ path: Path, in workspace: Workspace, author: String? = nil) throws -> URL {
        let url = workspace.location("import-\(path.rawValue)", backend)
        let fills = path == .newStore
        let store = try Backends.type(backend).open(at: url, model: model,
                                                    options: StoreOptions(deferredDurability: fills, recordsHistory: !fills, author: author))
        defer { try? store.close() }
        let result = try JSONInterchange.importDocument(Data(document.utf8), into: store, file: "doc.json",
                                                        options: .init(linksExisting: path == .records, fillsNewStore: fills, author: author))
        #expect(result.inserted == ["Author": 2, "Book": 2, "Cover": 1, "Library": 1, "Tag": 2, "Textbook": 1])
        return url
    }

    @Test("every path gives the document's objects, values and both sides of each relationship, on every backend",
          arguments: Backends.all)
    func samePathsEveryBackend(backend: String) throws {
        let workspace = try Workspace()
        for path in Path.allCases {
            let url = try Self.imported(Self.document, backend, path, in: workspace, author: "loader")
            #expect(try export(backend, at: url, model: Self.model) == Self.exported, "\(backend), \(path)")
            // One transaction of history, with every object, by the author given.
            let store = try Backends.type(backend).open(at: url, model: Self.model, options: StoreOptions(readOnly: true, createIfMissing: false))
            defer { try? store.close() }
            let history = try store.history(after: nil, limit: 10)
            #expect(history.count == 1, "\(backend), \(path)")
            #expect(history.first?.author == "loader")
            #expect(Set(history.first?.inserted ?? []).count == 9)
        }
    }

    @Test("the batch path itself takes a well-formed document, on one line, pretty-printed, with escapes and space anywhere JSON allows it")
    func batchPathTakesWellFormedDocuments() throws {
        let workspace = try Workspace()
        let spaced = Self.exported.replacingOccurrences(of: ": ", with: " :\t").replacingOccurrences(of: ",", with: "\r\n ,")
        let escaped = Self.document.replacingOccurrences(of: #""Ada""#, with: #""\u0041da""#)
        for document in [Self.document, Self.exported, spaced, escaped] {
            let store = try SQLiteStoreType().open(at: workspace.location("taken-\(UUID())", SQLiteStore.typeName), model: Self.model, options: StoreOptions())
            defer { try? store.close() }
            var reader = BatchImporter(store: store, options: .init())
            #expect(throws: Never.self) { try reader.read(Data(document.utf8)) }
            #expect(reader.keys.count == 9)
        }
        // And declines what is wrong, for the record path to report.
        let store = try SQLiteStoreType().open(at: workspace.location("declined", SQLiteStore.typeName), model: Self.model, options: StoreOptions())
        defer { try? store.close() }
        var reader = BatchImporter(store: store, options: .init())
        #expect(throws: BatchImporter.Declined.self) { try reader.read(Data(Self.document.replacingOccurrences(of: "\"Tag/1\", \"Tag/2\"", with: "\"Tag/1\"").utf8)) }
    }

    @Test("in SQLite every path leaves the very same rows, order keys and Z_OPT included, as sqlite3 reads them")
    func sameRawRows() throws {
        let workspace = try Workspace()
        var tables: [Path: [String: [[String]]]] = [:]
        for path in Path.allCases {
            let url = try Self.imported(Self.document, SQLiteStore.typeName, path, in: workspace)
            let database = try RawDatabase(url)
            defer { database.close() }
            var rows: [String: [[String]]] = [:]
            for name in try database.strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'ATRANSACTION%' AND name NOT LIKE 'ACHANGE%' AND name NOT IN ('Z_METADATA', 'Z_MODELCACHE', 'OS_TRANSACTION', 'sqlite_sequence') ORDER BY name").map({ $0[0] }) {
                rows[name] = try database.strings("SELECT * FROM \"\(name)\" ORDER BY 1, 2")
            }
            tables[path] = rows
        }
        #expect(tables[.oneSave] == tables[.records])
        #expect(tables[.newStore] == tables[.records])
        // The featured list's order, as the document gives it, in the order keys of the book rows.
        for path in Path.allCases {
            let url = workspace.folder.appending(path: "import-\(path.rawValue).sqlite")
            let database = try RawDatabase(url)
            defer { database.close() }
            let order = try #require(database.columns("ZPUBLICATION").first { $0.hasPrefix("Z_FOK_") })
            #expect(try database.strings("SELECT Z_PK FROM ZPUBLICATION WHERE \(order) IS NOT NULL ORDER BY \(order)") == [["3"], ["2"], ["1"]], "\(path)")
        }
    }

    @Test("a document the batch path cannot take is reported by the record path, word for word, with nothing written",
          arguments: [
            (#"{"Book": [{"_id": "b", "title": "x", "author": "nobody"}]}"#, "no object has _id"),
            (#"{"Book": [{"_id": "b", "title": ""}]}"#, "validation failure"),
            (#"{"Book": [{"_id": "b", "title": "x", "pages": "many"}]}"#, "is not a valid Integer 32"),
            (#"{"Book": [{"_id": "b", "title": "x"}, {"_id": "b", "title": "y"}]}"#, "appears twice"),
            (#"{"Book": [{"_id": "b", "title": "x", "title": "y"}]}"#, "appears twice in one object"),
            (#"{"Author": [{"_id": "a", "name": "A", "books": []}], "Book": [{"_id": "b", "title": "x", "author": "a"}]}"#, "does not list"),
            (#"{"Book": [{"_id": "b", "title": "x", "colour": 1}]}"#, "no stored property named colour"),
            (#"{"Book": [{"_id": "b", "title": "x"}], }"#, "does not parse"),
          ])
    func declinedDocuments(document: String, message: String) throws {
        for backend in Backends.all {
            let workspace = try Workspace()
            for path in [Path.newStore, .oneSave, .records] {
                let url = workspace.location("bad-\(path.rawValue)", backend)
                let store = try Backends.type(backend).open(at: url, model: Self.model, options: StoreOptions())
                defer { try? store.close() }
                let files = try workspace.snapshot()
                let error = try #require(throws: StoreError.self) {
                    try JSONInterchange.importDocument(Data(document.utf8), into: store, file: "bad.json",
                                                       options: .init(linksExisting: path == .records, fillsNewStore: path == .newStore))
                }
                #expect(error.message.contains(message), "\(backend), \(path): \(error.message)")
                // Nothing written, not even a key counter (the atomic store would rewrite its file for one).
                #expect(try store.count(FetchRequest(entity: "Publication")) == 0)
                for root in ["Publication", "Author", "Tag"] { #expect(try store.lastAllocatedKey(entity: root) == 0, "\(backend), \(path), \(root)") }
                if backend == "atomic" { #expect(try workspace.snapshot() == files) }
                #expect(!error.description.contains("/0 "), "an object without a key is named by its entity: \(error.description)")
            }
        }
    }

    @Test("ids that are not Entity/pk get keys in document order, as the record path gives them")
    func allocatedKeys() throws {
        let document = #"{"Author": [{"_id": "z", "name": "Z", "books": ["b2"]}, {"_id": "a", "name": "A"}], "Book": [{"_id": "b1", "title": "one", "author": "a"}, {"_id": "b2", "title": "two"}]}"#
        let workspace = try Workspace()
        var exports: [String] = []
        for path in Path.allCases {
            let url = workspace.location("keys-\(path.rawValue)", SQLiteStore.typeName)
            let store = try SQLiteStoreType().open(at: url, model: Self.model, options: StoreOptions(recordsHistory: path != .newStore))
            _ = try JSONInterchange.importDocument(Data(document.utf8), into: store, options: .init(linksExisting: path == .records, fillsNewStore: path == .newStore))
            exports.append(try JSONInterchange.exportString(store))
            try store.close()
        }
        #expect(exports[0].contains(#""_id": "Author/1","#) && exports[0].contains(#""books": ["Book/2"]"#))
        #expect(exports.allSatisfy { $0 == exports[0] })
    }
}
