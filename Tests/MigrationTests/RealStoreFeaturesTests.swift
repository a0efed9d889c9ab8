import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import SQLiteStore
import Testing
import TestSupport

/// External binary data and uniqueness constraints through conversion and migration.
@Suite("External data and uniqueness constraints through conversion and migration")
struct RealStoreFeaturesTests {
    static func model(constrained: Bool, note: Bool = false) throws -> ManagedObjectModel {
        try ManagedObjectModel(versionIdentifiers: [note ? "2" : "1"]) {
            Entity("Photo", uniquenessConstraints: constrained ? [["title"]] : []) {
                Attribute("title", .string)
                Attribute("image", .binaryData, allowsExternalBinaryDataStorage: true)
                if note { Attribute("note", .string) }
            }
        }
    }

    static let large = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })

    func files(beside url: URL) -> [String] {
        let folder = url.deletingLastPathComponent().appending(path: "." + url.deletingPathExtension().lastPathComponent + "_SUPPORT/_EXTERNAL_DATA")
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    func makeSQLite(_ url: URL, model: ManagedObjectModel, titles: [String]) throws {
        let store = try SQLiteStoreType().open(at: url, model: model, options: StoreOptions())
        defer { try? store.close() }
        try store.save(ChangeSet(inserted: titles.enumerated().map { i, title in
            ObjectRecord(key: ObjectKey("Photo", Int64(i + 1)), attributes: ["title": .string(title), "image": .data(i == 0 ? Self.large : Data([UInt8(i)]))])
        }))
    }

    func image(_ url: URL, _ type: any StoreType, model: ManagedObjectModel, _ pk: Int64 = 1) throws -> Value? {
        let store = try type.open(at: url, model: model, options: StoreOptions(readOnly: true))
        defer { try? store.close() }
        return try store.record(for: ObjectKey("Photo", pk))?.attributes["image"]
    }

    @Test("a large value converts to every backend and back into a file beside the new SQLite store", arguments: Backends.all.filter { $0 != "sqlite" })
    func convert(_ backend: String) throws {
        let workspace = try Workspace()
        let model = try Self.model(constrained: false)
        let source = workspace.location("source", "sqlite"), middle = workspace.location("middle", backend), back = workspace.location("back", "sqlite")
        try makeSQLite(source, model: model, titles: ["a", "b"])
        let identity = MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model))
        try identity.migrateStore(at: source, type: Backends.type("sqlite"), to: middle, type: Backends.type(backend))
        #expect(try image(middle, Backends.type(backend), model: model) == .data(Self.large))
        try identity.migrateStore(at: middle, type: Backends.type(backend), to: back, type: Backends.type("sqlite"))
        #expect(try image(back, Backends.type("sqlite"), model: model) == .data(Self.large))
        #expect(try image(back, Backends.type("sqlite"), model: model, 2) == .data(Data([1])))
        #expect(files(beside: back).count == 1)
        #expect(files(beside: source).count == 1, "the source keeps its file")
    }

    @Test("SQLite to SQLite (bulk copy) brings the files the rows name")
    func bulkCopy() throws {
        let workspace = try Workspace()
        let model = try Self.model(constrained: false)
        let source = workspace.location("source", "sqlite"), destination = workspace.location("copy", "sqlite")
        try makeSQLite(source, model: model, titles: ["a"])
        try MigrationManager(sourceModel: model, destinationModel: model, mapping: .identity(for: model))
            .migrateStore(at: source, type: Backends.type("sqlite"), to: destination, type: Backends.type("sqlite"))
        #expect(files(beside: destination) == files(beside: source))
        try Backends.type("sqlite").destroy(at: source)
        #expect(try image(destination, Backends.type("sqlite"), model: model) == .data(Self.large))
    }

    @Test("a migration in place keeps the files, and a new uniqueness constraint is enforced (or refuses duplicates, the store untouched)")
    func migrate() throws {
        let workspace = try Workspace()
        let v1 = try Self.model(constrained: false), v2 = try Self.model(constrained: true, note: true)
        let versions = try ModelVersions(versions: [.init(name: "v1", model: v1), .init(name: "v2", model: v2)])
        let url = workspace.location("photos", "sqlite")
        try makeSQLite(url, model: v1, titles: ["a", "b"])
        try StoreMigrator(versions: versions).migrateStore(at: url, type: Backends.type("sqlite"))
        #expect(try image(url, Backends.type("sqlite"), model: v2) == .data(Self.large))
        #expect(files(beside: url).count == 1)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path).filter { $0.contains("migrating") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        let store = try SQLiteStoreType().open(at: url, model: v2, options: StoreOptions())
        #expect(throws: StoreError.self) { try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Photo", 9), attributes: ["title": .string("a")])])) }
        try store.close()
        let db = try RawDatabase(url)
        #expect(try db.strings("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'Z_Photo_UNIQUE_title'") == [["Z_Photo_UNIQUE_title"]])
        db.close()
        // Duplicates the new constraint forbids: the migration fails, naming the constraint; the store is as it was.
        let dup = workspace.location("dup", "sqlite")
        try makeSQLite(dup, model: v1, titles: ["same", "same"])
        let before = CoreDataStoreFile.digests(dup)
        do {
            try StoreMigrator(versions: versions).migrateStore(at: dup, type: Backends.type("sqlite"))
            Issue.record("migrated duplicates into a constrained model")
        } catch {
            #expect("\(error)".contains("Photo(title)"), "\(error)")
        }
        #expect(CoreDataStoreFile.digests(dup) == before)
        #expect(try image(dup, Backends.type("sqlite"), model: v1) == .data(Self.large))
    }
}
