import Dispatch
import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import Synchronization
import Testing

/// Data for the conformance model: every attribute type with extremes, inheritance,
/// to-one, to-many, ordered, many-to-many and self-referential relationships.
let conformanceData = """
{
  "Item": [
    {"_id": "i1", "name": "max", "i16": 32767, "i32": 2147483647, "i64": 9223372036854775807, "decimal": "12345678901234567890.5",
     "double": 1.7976931348623157e308, "float": 0.5, "string": "Zoë 👩‍👩‍👧 \\u0000 end", "flag": true,
     "date": "2101-06-01T12:00:00.250Z", "data": "AAEC/w==", "uuid": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
     "uri": "https://example.com/a?b=c", "payload": "e30="},
    {"_id": "i2", "name": "min", "i16": -32768, "i64": -9223372036854775808, "double": "nan", "float": "-inf", "flag": false,
     "date": "1601-01-01T00:00:00.000Z", "string": "", "data": ""},
    {"_id": "i3"}
  ],
  "Person": [
    {"_id": "ada", "name": "Ada", "age": 36, "spouse": "bob", "friends": ["bob", "cy"], "reports": ["bob", "cy"]},
    {"_id": "bob", "name": "Bob", "nickname": "B"},
    {"_id": "cy", "name": "Cy", "age": 3}
  ],
  "Pet": [{"_id": "rex", "name": "Rex", "owner": "ada"}, {"_id": "tom", "name": "Tom", "owner": "ada"}, {"_id": "stray"}],
  "Playlist": [{"_id": "mix", "name": "Mix", "tracks": ["t3", "t1", "t2"]}],
  "Track": [{"_id": "t1", "title": "One", "tags": ["x", "y"]}, {"_id": "t2", "title": "Two", "tags": ["y"]}, {"_id": "t3", "title": "Three"}],
  "Tag": [{"_id": "x", "label": "x"}, {"_id": "y", "label": "y"}],
  "Car": [{"_id": "car", "wheels": 4, "seats": 5}],
  "SportsCar": [{"_id": "fast", "wheels": 4, "seats": 2, "topSpeed": 299.5}],
  "Truck": [{"_id": "big", "wheels": 6, "payload": 9000}]
}
"""

@Suite("Conversion between backends")
struct ConversionTests {
    @Test("every pair of backends: the destination exports exactly what the source does", arguments: Backends.pairs)
    func pair(_ source: String, _ destination: String) throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let from = workspace.location("source", source), to = workspace.location("destination", destination)
        try makeStore(source, at: from, model: model, json: conformanceData)
        let before = try workspace.snapshot()
        let log = Mutex<[MigrationProgress]>([])
        let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model), batchSize: 2) { progress in
            log.withLock { $0.append(progress) }
        }
        try manager.migrateStore(at: from, type: Backends.type(source), to: to, type: Backends.type(destination))
        let seen = log.withLock { $0 }
        let expected = try export(source, at: from, model: model)
        #expect(try export(destination, at: to, model: model) == expected)
        #expect(expected.contains("\"Person/1\""))
        // The source's files are byte for byte what they were (LMDB's lock file is its
        // reader table, which every reader writes by design: it holds no store data).
        let after = try workspace.snapshot()
        for (name, bytes) in before where !name.hasSuffix("-lock") { #expect(after[name] == bytes, "\(name) changed") }
        // Progress for every mapping and phase.
        let phases = Set(seen.map(\.phase))
        #expect(phases == Set(MigrationError.Phase.allCases))
        #expect(seen.contains { $0.mapping == "PersonToPerson" && $0.phase == .createObjects && $0.completed == 3 && $0.total == 3 })
        // The destination records the model and the source's own metadata keys.
        let metadata = try Backends.type(destination).readMetadata(at: to)
        #expect(metadata.versionHashes == model.versionHashes)
        #expect(try metadata.embeddedModel() == model)
    }

    @Test("150 migrations at once, each started on a thread of the shared pool and reading its source ahead: every one ends, exports right")
    func manyAtOnceOnTheSharedPool() throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let from = workspace.location("source", "sqlite")
        try makeStore("sqlite", at: from, model: model, json: conformanceData)
        let expected = try export("sqlite", at: from, model: model)
        let count = 150
        let group = DispatchGroup()
        let failures = Mutex<[String]>([])
        for i in 0..<count {
            let to = workspace.location("copy\(i)", "memory")
            DispatchQueue.global().async(group: group) {
                do {
                    let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model), batchSize: 1, usesBulkCopy: false)
                    try manager.migrateStore(at: from, type: Backends.type("sqlite"), to: to, type: Backends.type("memory"))
                    if try export("memory", at: to, model: model) != expected { failures.withLock { $0.append("\(i): another export") } }
                } catch {
                    failures.withLock { $0.append("\(i): \(error)") }
                }
            }
        }
        // When the reads went to the same pool, the migrations held its threads waiting for reads
        // that had none; the pool added about a thread a second (64 migrations took 64 s, found by
        // review with 16 on another pool's limits: a hang). With a thread a read, about two seconds.
        #expect(group.wait(timeout: .now() + 100) == .success, "the migrations did not all end")
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
    }

    @Test("the coordinator converts a store like migratePersistentStore, keeping custom metadata and key counters")
    func coordinator() throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let from = workspace.location("source", "sqlite"), to = workspace.location("destination", "lmdb")
        try makeStore("sqlite", at: from, model: model, json: conformanceData)
        var metadata = try Backends.type("sqlite").readMetadata(at: from)
        metadata["app.setting"] = .string("kept")
        try Backends.type("sqlite").writeMetadata(metadata, at: from)
        let registry = StoreTypeRegistry()
        for name in Backends.all { registry.register(Backends.type(name)) }
        let coordinator = StoreCoordinator(model: model, registry: registry)
        try coordinator.migrateStore(at: from, type: "sqlite", to: to, type: "lmdb")
        #expect(try Backends.type("lmdb").readMetadata(at: to)["app.setting"] == .string("kept"))
        let store = try Backends.type("lmdb").open(at: to, model: model, options: StoreOptions())
        defer { try? store.close() }
        #expect(try store.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound > 3, "keys handed out in the source are not reused")
        #expect(throws: MigrationError.self) { try coordinator.migrateStore(at: from, type: "sqlite", to: to, type: "lmdb") }
    }
}

/// Long to-many lists through a conversion: read from the source a group of rows at a time, into a
/// store that keeps both sides in its rows (``WholeRowInserting``) with each object, once, and
/// into others by phase 2.
@Suite("Conversion of long lists, a group of rows at a time")
struct LongListConversionTests {
    /// Which tracks (1 to 60) each tag holds.
    static let tags: [(label: String, tracks: ClosedRange<Int>?)] = [("a", 1...45), ("b", 1...30), ("c", nil), ("d", 36...60), ("e", 1...25)]

    /// 60 tracks, the playlist's order the reverse of theirs; five tags of 45, 30, 0, 25 and 25
    /// tracks; a person with 50 pets. With a batch size of 2 a group holds about 40 members: the
    /// first batch of tags shrinks the group to one row, so the next batches are written a row
    /// at a time, then in growing groups again.
    static let document: String = {
        let tracks = (1...60).map { n in
            let labels = tags.filter { $0.tracks?.contains(n) == true }.map { "\"\($0.label)\"" }.joined(separator: ", ")
            return #"{"_id": "t\#(n)", "title": "track \#(n)", "tags": [\#(labels)]}"#
        }
        let pets = (1...50).map { #"{"_id": "p\#($0)", "name": "pet \#($0)", "owner": "ada"}"# }
        return """
        {"Playlist": [{"_id": "mix", "name": "Mix", "tracks": [\((1...60).reversed().map { "\"t\($0)\"" }.joined(separator: ", "))]}],
         "Track": [\(tracks.joined(separator: ", "))],
         "Tag": [\(tags.map { #"{"_id": "\#($0.label)", "label": "\#($0.label)"}"# }.joined(separator: ", "))],
         "Person": [{"_id": "ada", "name": "Ada"}, {"_id": "bob", "name": "Bob"}],
         "Pet": [\(pets.joined(separator: ", "))]}
        """
    }()

    @Test("every side as the document gives it, the order of an ordered list and its order keys kept", arguments: Backends.pairs)
    func longLists(_ source: String, _ destination: String) throws {
        let workspace = try Workspace()
        let model = StoreConformance.model
        let from = workspace.location("source", source), to = workspace.location("destination", destination)
        try makeStore(source, at: from, model: model, json: Self.document)
        let manager = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model), batchSize: 2)
        try manager.migrateStore(at: from, type: Backends.type(source), to: to, type: Backends.type(destination))
        let store = try Backends.type(destination).open(at: to, model: model, options: StoreOptions(readOnly: true, createIfMissing: false))
        defer { try? store.close() }
        func text(_ key: ObjectKey, _ name: String) throws -> String {
            if case .string(let value)? = try store.record(for: key)?.attributes[name] { return value }
            return "no \(name) in \(key)"
        }
        func one(_ entity: String, _ name: String, _ value: String) throws -> ObjectKey {
            try #require(try store.fetch(FetchRequest(entity: entity, predicate: .compare(name, .equal, .string(value)))).first?.key)
        }
        // The document's order, read through the destination's own rows.
        let mix = try one("Playlist", "name", "Mix")
        let order = try store.orderedMembers(of: mix, relationship: "tracks")
        #expect(try order.keys.map { try text($0, "title") } == (1...60).reversed().map { "track \($0)" })
        let sourceOrder = try Backends.type(source).open(at: from, model: model, options: StoreOptions(readOnly: true, createIfMissing: false))
        defer { try? sourceOrder.close() }
        #expect(order.orderKeys == (try sourceOrder.orderedMembers(of: mix, relationship: "tracks").orderKeys), "the source's order keys")
        for (label, tracks) in Self.tags {
            let titles = try store.relatedKeys(of: try one("Tag", "label", label), relationship: "tracks").map { try text($0, "title") }
            #expect(titles.sorted() == (tracks.map(Array.init) ?? []).map { "track \($0)" }.sorted(), "tag \(label)")
        }
        for n in 1...60 {
            let track = try one("Track", "title", "track \(n)")
            #expect(try store.relatedKeys(of: track, relationship: "playlist") == [mix])
            let labels = try store.relatedKeys(of: track, relationship: "tags").map { try text($0, "label") }
            #expect(labels.sorted() == Self.tags.filter { $0.tracks?.contains(n) == true }.map(\.label), "track \(n)")
        }
        let ada = try one("Person", "name", "Ada")
        #expect(try store.relatedKeys(of: ada, relationship: "pets").map { try text($0, "name") }.sorted() == (1...50).map { "pet \($0)" }.sorted())
        #expect(try store.relatedKeys(of: try one("Person", "name", "Bob"), relationship: "pets").isEmpty)
    }
}
