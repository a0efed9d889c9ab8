import Foundation
import ObjectStoreData
import Synchronization
import Testing

/// Two versions of a notes model in code, as SwiftData apps declare them.
enum NotesV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [Note.self] }

    @Model
    final class Note {
        var title: String
        var body: String

        init(title: String, body: String) {
            self.title = title
            self.body = body
        }
    }
}

enum NotesV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Note.self] }

    @Model
    final class Note {
        @Attribute(originalName: "title") var heading: String
        var body: String
        var words: Int = 0

        init(heading: String, body: String) {
            self.heading = heading
            self.body = body
        }
    }
}

/// What each closure saw, kept where a `@Sendable` closure may write.
final class StageLog: Sendable {
    let lines = Mutex<[String]>([])
}

let stageLog = StageLog()

enum NotesPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [NotesV1.self, NotesV2.self] }
    static var stages: [MigrationStage] {
        [.custom(fromVersion: NotesV1.self, toVersion: NotesV2.self,
                 willMigrate: { context in
                     let notes = try context.fetch(FetchDescriptor<NotesV1.Note>(sortBy: [SortDescriptor(\.title)]))
                     stageLog.lines.withLock { $0.append("before: " + notes.map(\.title).joined(separator: ",")) }
                 },
                 didMigrate: { context in
                     for note in try context.fetch(FetchDescriptor<NotesV2.Note>()) {
                         note.words = note.body.split(separator: " ").count
                     }
                     try context.save()
                     stageLog.lines.withLock { $0.append("after") }
                 })]
    }
}

@Suite("Versioned schemas and a migration plan in code", .serialized)
struct SchemaMigrationTests {
    @Test("a store of version 1 opens at version 2: the renamed attribute keeps its values, the custom stage fills the new one", arguments: ["sqlite", "lmdb", "atomic"])
    func twoVersions(_ backend: String) throws {
        let place = try TypedBackends.Place()
        let configuration = try place.configuration(backend, "notes")
        do {
            let container = try ModelContainer(for: NotesV1.Note.self, configurations: configuration)
            let context = ModelContext(container)
            context.insert(NotesV1.Note(title: "Groceries", body: "eggs milk bread"))
            context.insert(NotesV1.Note(title: "Ideas", body: "a typed layer"))
            try context.save()
        }
        stageLog.lines.withLock { $0 = [] }
        do {
            let container = try ModelContainer(for: NotesV2.Note.self, migrationPlan: NotesPlan.self, configurations: configuration)
            let notes = try ModelContext(container).fetch(FetchDescriptor<NotesV2.Note>(sortBy: [SortDescriptor(\.heading)]))
            #expect(notes.map(\.heading) == ["Groceries", "Ideas"])
            #expect(notes.map(\.words) == [3, 3])
            #expect(stageLog.lines.withLock { $0 } == ["before: Groceries,Ideas", "after"])
        }
        // Opened again: already at version 2, nothing runs.
        stageLog.lines.withLock { $0 = [] }
        _ = try ModelContainer(for: NotesV2.Note.self, migrationPlan: NotesPlan.self, configurations: configuration)
        #expect(stageLog.lines.withLock { $0 }.isEmpty)
    }

    @Test("without a plan, a store of an earlier schema is migrated by an inferred step; a change that cannot be inferred is an error, the store as it was")
    func inferred() throws {
        let place = try TypedBackends.Place()
        let configuration = try place.configuration("sqlite", "notes")
        do {
            let context = ModelContext(try ModelContainer(for: NotesV1.Note.self, configurations: configuration))
            context.insert(NotesV1.Note(title: "Groceries", body: "eggs"))
            try context.save()
        }
        let container = try ModelContainer(for: NotesV2.Note.self, configurations: configuration)
        let notes = try ModelContext(container).fetch(FetchDescriptor<NotesV2.Note>())
        #expect(notes.map(\.heading) == ["Groceries"] && notes.map(\.words) == [0])
    }
}

/// Version 3 drops the note's body.
enum NotesV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentModel.Type] { [Note.self] }

    @Model
    final class Note {
        var title: String
        init(title: String) { self.title = title }
    }
}

@Suite("Typed models: a migration that drops data")
struct TypedDataLossTests {
    @Test("a container refuses a schema that drops stored values, the store as it was, unless its configuration allows the loss")
    func refusedUnlessAllowed() throws {
        let place = try TypedBackends.Place()
        var configuration = try place.configuration("sqlite", "notes")
        do {
            let context = ModelContext(try ModelContainer(for: NotesV1.Note.self, configurations: configuration))
            context.insert(NotesV1.Note(title: "Groceries", body: "eggs"))
            try context.save()
        }
        let before = try Data(contentsOf: configuration.url)
        let error = try #require(throws: ModelContainerError.self) { _ = try ModelContainer(for: NotesV3.Note.self, configurations: configuration) }
        #expect(error.message.contains("Note.body (1 value)"), "\(error)")
        #expect(try Data(contentsOf: configuration.url) == before)
        configuration.allowsDataLoss = true
        let notes = try ModelContext(try ModelContainer(for: NotesV3.Note.self, configurations: configuration)).fetch(FetchDescriptor<NotesV3.Note>())
        #expect(notes.map(\.title) == ["Groceries"])
    }
}
