import Foundation
import InMemoryStore
import ObjectModel
import ObjectStore
import Testing

/// A model with every delete rule and every validation rule.
enum Library {
    static let model: ManagedObjectModel = try! ManagedObjectModel(configurations: ["Archive": ["Award"]]) {
        Entity("Author") {
            Attribute("name", .string, optional: false, validation: ValidationRules(minLength: 2, maxLength: 20, pattern: "[A-Z].*"))
            Attribute("age", .integer16, validation: ValidationRules(minValue: .integer(0), maxValue: .integer(150)))
            Attribute("rating", .double, default: .double(2.5))
            Attribute("draft", .string, transient: true)
            Relationship("books", to: "Book", inverse: "author", toMany: true, deleteRule: .cascade)
            Relationship("awards", to: "Award", inverse: "winner", toMany: true, deleteRule: .nullify)
            Relationship("agent", to: "Agent", inverse: "clients")
            Relationship("publisher", to: "Publisher", deleteRule: .noAction)
            Relationship("spouse", to: "Author", inverse: "spouse")
        }
        Entity("Book") {
            Attribute("title", .string, optional: false)
            Relationship("author", to: "Author", inverse: "books", optional: false)
            Relationship("chapters", to: "Chapter", inverse: "book", toMany: true, ordered: true, minCount: 2, maxCount: 3, deleteRule: .cascade)
            Relationship("tags", to: "Tag", inverse: "books", toMany: true)
        }
        Entity("Chapter") {
            Attribute("title", .string)
            Relationship("book", to: "Book", inverse: "chapters")
        }
        Entity("Tag") {
            Attribute("label", .string)
            Relationship("books", to: "Book", inverse: "tags", toMany: true)
        }
        Entity("Award") {
            Attribute("title", .string)
            Relationship("winner", to: "Author", inverse: "awards")
        }
        Entity("Agent") {
            Attribute("name", .string)
            Relationship("clients", to: "Author", inverse: "agent", toMany: true, deleteRule: .deny)
        }
        Entity("Publisher") {
            Attribute("name", .string)
        }
    }

    static func coordinator() throws -> StoreCoordinator {
        let coordinator = StoreCoordinator(model: model)
        try coordinator.addStore(InMemoryStore(model: model))
        return coordinator
    }
}

@Suite("ObjectContext")
struct ContextTests {
    let coordinator: StoreCoordinator
    let context: ObjectContext

    init() throws {
        InMemoryStore.register()
        coordinator = try Library.coordinator()
        context = ObjectContext(coordinator: coordinator)
    }

    func author(_ name: String, in context: ObjectContext? = nil) throws -> ManagedObject {
        let object = try (context ?? self.context).insert("Author")
        try object.set("name", .string(name))
        return object
    }

    func book(_ title: String, by author: ManagedObject) throws -> ManagedObject {
        let book = try context.insert("Book")
        try book.set("title", .string(title))
        try book.setObject(author, forKey: "author")
        for i in 1...2 {
            let chapter = try context.insert("Chapter")
            try chapter.set("title", .string("\(title) \(i)"))
            try book.addObject(chapter, forKey: "chapters")
        }
        return book
    }

    func count(_ entity: String, in context: ObjectContext? = nil) throws -> Int {
        try (context ?? self.context).count(FetchRequest(entity: entity))
    }

    @Test("inserts reserve keys in doubling blocks: final IDs, distinct across contexts, few store round trips, no waste for one insert")
    func keyBlocks() throws {
        let store = try #require(coordinator.stores.first)
        let other = ObjectContext(coordinator: coordinator)
        // One insert takes one key.
        _ = try author("Ada", in: other)
        #expect(try store.lastAllocatedKey(entity: "Author") == 1)
        // A thousand more, interleaved with another context's: every key distinct and final.
        var keys: [Int64] = []
        for i in 0..<1_000 {
            keys.append(try author("Bo\(i)").objectID.primaryKey)
            if i % 100 == 0 { keys.append(try author("Cy\(i)", in: other).objectID.primaryKey) }
        }
        #expect(Set(keys).count == keys.count && !keys.contains(1))
        #expect(keys.prefix(1_000).allSatisfy { $0 > 0 })
        // Blocks double: at most twice the keys handed out were reserved.
        let reserved = try store.lastAllocatedKey(entity: "Author")
        #expect(reserved >= Int64(keys.count + 1) && reserved <= Int64(2 * (keys.count + 1)), "\(reserved)")
        try context.save()
        try other.save()
        #expect(try count("Author") == keys.count + 1)
    }

    @Test("insert, save, fetch: one object per ID, defaults applied, transients not stored")
    func basics() throws {
        let ada = try author("Ada")
        try ada.set("draft", .string("unsaved notes"))
        #expect(ada["rating"] == .double(2.5))
        #expect(ada.isInserted && context.hasChanges)
        try context.save()
        #expect(!ada.isInserted && !context.hasChanges)
        let fetched = try context.fetch(FetchRequest(entity: "Author"))
        #expect(fetched.count == 1 && fetched[0] === ada)
        #expect(try context.object(with: ada.objectID) === ada)

        let other = ObjectContext(coordinator: coordinator)
        let copy = try #require(try other.object(with: ada.objectID))
        #expect(copy !== ada)
        #expect(copy["name"] == .string("Ada"))
        #expect(copy["draft"] == nil)
        #expect(try other.object(with: ObjectID(store: ada.objectID.storeIdentifier, entity: "Author", primaryKey: 999)) == nil)
    }

    @Test("an object no longer in a context throws when set, never stops the program")
    func detachedObjects() throws {
        let kept = try author("Kept")
        try context.save()
        let rolledBack = try author("Rolled back")
        context.rollback()
        #expect(throws: StoreError.self) { try rolledBack.set("name", .string("again")) }
        let deleted = try author("Deleted")
        try context.save()
        context.delete(deleted)
        try context.save()
        #expect(throws: StoreError.self) { try deleted.set("name", .string("again")) }
        #expect(throws: StoreError.self) { try deleted.setObject(nil, forKey: "agent") }
        context.reset()
        #expect(throws: StoreError.self) { try kept.set("age", 3) }
        #expect(throws: StoreError.self) { try kept.set("shoeSize", 44) }
    }

    @Test("typed and key-based access")
    func access() throws {
        let ada = try author("Ada")
        try ada.set("age", 36)
        #expect(ada["age"] == .integer(36))
        #expect(ada["age", as: Int16.self] == 36)
        #expect(ada["name", as: String.self] == "Ada")
        #expect(ada["name", as: Int.self] == nil)
        try ada.setValue("Ada L", forKey: "name")
        try ada.setValue(Int64(37), forKey: "age")
        #expect(try ada.value(forKey: "name") as? Value == .string("Ada L"))
        let agent = try context.insert("Agent")
        try ada.setValue(agent, forKey: "agent")
        #expect(try ada.value(forKey: "agent") as? ManagedObject === agent)
        #expect((try agent.value(forKey: "clients") as? [ManagedObject])?.first === ada)
        try agent.setValue([ManagedObject](), forKey: "clients")
        #expect(try ada.object(forKey: "agent") == nil)
        #expect(throws: StoreError.self) { try ada.setValue(1, forKey: "shoeSize") }
        #expect(throws: StoreError.self) { try ada.setValue(agent, forKey: "books") }
        #expect(throws: StoreError.self) { try ada.setValue(Date(), forKey: "agent") }
        #expect(throws: StoreError.self) { _ = try ada.objects(forKey: "agent") }
    }

    @Test("inverses stay in step: one-to-many, many-to-many, one-to-one, ordered")
    func inverses() throws {
        let ada = try author("Ada"), bob = try author("Bob")
        let b1 = try book("One", by: ada), b2 = try book("Two", by: ada)
        #expect(try ada.objects(forKey: "books") == [b1, b2])
        try b1.setObject(bob, forKey: "author")
        #expect(try ada.objects(forKey: "books") == [b2])
        #expect(try bob.objects(forKey: "books") == [b1])
        try bob.setObjects([b1, b2], forKey: "books")
        #expect(try b2.object(forKey: "author") === bob)
        #expect(try ada.objects(forKey: "books").isEmpty)

        let fiction = try context.insert("Tag"), classic = try context.insert("Tag")
        try b1.setObjects([fiction, classic], forKey: "tags")
        try classic.addObject(b2, forKey: "books")
        #expect(try fiction.objects(forKey: "books") == [b1])
        #expect(Set(try classic.objects(forKey: "books")) == [b1, b2])
        #expect(try b2.objects(forKey: "tags") == [classic])
        try b1.removeObject(classic, forKey: "tags")
        #expect(try classic.objects(forKey: "books") == [b2])

        let cy = try author("Cy")
        try ada.setObject(bob, forKey: "spouse")
        #expect(try bob.object(forKey: "spouse") === ada)
        try ada.setObject(cy, forKey: "spouse")
        #expect(try bob.object(forKey: "spouse") == nil)
        #expect(try cy.object(forKey: "spouse") === ada)
        try bob.setObject(cy, forKey: "spouse")
        #expect(try ada.object(forKey: "spouse") == nil)

        let chapters = try (1...3).map { i -> ManagedObject in
            let c = try context.insert("Chapter")
            try c.set("title", .string("c\(i)"))
            return c
        }
        try b1.setObjects([chapters[2], chapters[0], chapters[1]], forKey: "chapters")
        try context.save()
        let other = ObjectContext(coordinator: coordinator)
        let again = try #require(try other.object(with: b1.objectID))
        #expect(try again.objects(forKey: "chapters").map { $0["title"] } == [.string("c3"), .string("c1"), .string("c2")])
        #expect(try again.objects(forKey: "tags").map(\.objectID) == [fiction.objectID])
        #expect(try other.object(with: chapters[0].objectID)?.object(forKey: "book")?.objectID == b1.objectID)
    }

    @Test("cascade deletes follow relationships transitively")
    func cascade() throws {
        let ada = try author("Ada")
        _ = try book("One", by: ada)
        _ = try book("Two", by: ada)
        try context.save()
        #expect(try count("Chapter") == 4)
        context.delete(ada)
        try context.save()
        #expect(try count("Author") == 0)
        #expect(try count("Book") == 0)
        #expect(try count("Chapter") == 0)
    }

    @Test("nullify removes the deleted object from its partners")
    func nullify() throws {
        let ada = try author("Ada")
        let award = try context.insert("Award")
        try award.setObject(ada, forKey: "winner")
        let chapter = try context.insert("Chapter")
        let b = try book("One", by: ada)
        try b.addObject(chapter, forKey: "chapters")
        try context.save()
        context.delete(ada)
        try context.save()
        #expect(try award.object(forKey: "winner") == nil)
        let other = ObjectContext(coordinator: coordinator)
        #expect(try other.object(with: award.objectID)?.object(forKey: "winner") == nil)
        // Deleting a chapter (nullify by default) takes it out of its book's ordered list.
        let survivor = try context.insert("Author")
        try survivor.set("name", .string("Zed"))
        let b2 = try book("Two", by: survivor)
        let extra = try context.insert("Chapter")
        try b2.addObject(extra, forKey: "chapters")
        try context.save()
        context.delete(extra)
        try context.save()
        #expect(try b2.objects(forKey: "chapters").count == 2)
    }

    @Test("deny refuses while a partner survives, and names it")
    func deny() throws {
        let agent = try context.insert("Agent")
        let ada = try author("Ada")
        try ada.setObject(agent, forKey: "agent")
        try context.save()
        context.delete(agent)
        do {
            try context.save()
            Issue.record("a denied delete was saved")
        } catch let error as StoreError {
            #expect(error.code == .deleteDenied)
            #expect(error.objectID == ada.objectID)
            #expect(error.message.contains("Agent.clients"))
        }
        context.rollback()
        #expect(try count("Agent") == 1)
        // Deleting the partner in the same save lifts the denial.
        context.delete(agent)
        context.delete(ada)
        try context.save()
        #expect(try count("Agent") == 0 && count("Author") == 0)
    }

    @Test("no action leaves the reference, which reads as absent once the object is gone")
    func noAction() throws {
        let publisher = try context.insert("Publisher")
        let ada = try author("Ada")
        try ada.setObject(publisher, forKey: "publisher")
        try context.save()
        context.delete(publisher)
        try context.save()
        let other = ObjectContext(coordinator: coordinator)
        let copy = try #require(try other.object(with: ada.objectID))
        #expect(try copy.object(forKey: "publisher") == nil)
    }

    @Test("validation reports every failure at once, naming object, property and rule")
    func validation() throws {
        let nameless = try context.insert("Author")
        try nameless.set("age", .string("old"))
        let short = try author("A")
        try short.set("age", .integer(-1))
        let long = try author("Averyveryverylongname1")
        try long.set("age", .integer(200))
        let lower = try author("lowercase")
        let orphan = try context.insert("Book")
        try orphan.set("title", .string("Orphan"))
        let lonely = try context.insert("Chapter")
        try orphan.addObject(lonely, forKey: "chapters")
        let crowded = try book("Crowded", by: lower)
        for i in 0..<3 {
            let c = try context.insert("Chapter")
            try c.set("title", .string("extra \(i)"))
            try crowded.addObject(c, forKey: "chapters")
        }
        do {
            try context.save()
            Issue.record("invalid objects were saved")
        } catch let error as StoreError {
            #expect(error.code == .validationFailed)
            let found = Set(error.validationFailures.map { "\($0.objectID.primaryKey)/\($0.property)/\($0.rule.rawValue)" })
            let expected: Set<String> = [
                "\(nameless.objectID.primaryKey)/name/required", "\(nameless.objectID.primaryKey)/age/type",
                "\(short.objectID.primaryKey)/name/minLength", "\(short.objectID.primaryKey)/age/minValue",
                "\(long.objectID.primaryKey)/name/maxLength", "\(long.objectID.primaryKey)/age/maxValue",
                "\(lower.objectID.primaryKey)/name/pattern", "\(orphan.objectID.primaryKey)/author/required",
                "\(orphan.objectID.primaryKey)/chapters/minCount", "\(crowded.objectID.primaryKey)/chapters/maxCount",
            ]
            #expect(found == expected)
            // One object-ID form for a person: `Entity/pk`, never a store's UUID.
            #expect(error.validationFailures.allSatisfy {
                $0.description.hasPrefix("\($0.objectID.entityName)/\($0.objectID.primaryKey) \($0.property) \($0.rule.rawValue): ")
                    && !$0.description.contains($0.objectID.storeIdentifier.uuidString)
            })
        }
        #expect(try count("Author", in: ObjectContext(coordinator: coordinator)) == 0, "nothing was written")
        // Fix everything and the same context saves.
        try nameless.set("name", .string("Nameless")); try nameless.set("age", nil)
        try short.set("name", .string("Shorty")); try short.set("age", .integer(0))
        try long.set("name", .string("Long")); try long.set("age", .integer(150))
        try lower.set("name", .string("Lower"))
        context.delete(orphan)
        try crowded.setObjects(Array(try crowded.objects(forKey: "chapters").prefix(3)), forKey: "chapters")
        try context.save()
        #expect(try count("Author") == 4)
    }

    @Test("optimistic locking: a save over a row changed underneath fails with a conflict")
    func locking() throws {
        let ada = try author("Ada")
        try context.save()
        let first = ObjectContext(coordinator: coordinator), second = ObjectContext(coordinator: coordinator)
        let a1 = try #require(try first.object(with: ada.objectID))
        let a2 = try #require(try second.object(with: ada.objectID))
        try a2.set("age", .integer(40))
        try second.save()
        try a1.set("age", .integer(41))
        do {
            try first.save()
            Issue.record("a stale change was saved")
        } catch let error as StoreError {
            #expect(error.code == .conflict)
            #expect(error.objectID == ada.objectID)
        }
        first.reset()
        let fresh = try #require(try first.object(with: ada.objectID))
        #expect(fresh["age"] == .integer(40))
        try fresh.set("age", .integer(41))
        try first.save()
        // A delete of a changed object conflicts too.
        second.delete(a2)
        #expect(throws: StoreError.self) { try second.save() }
    }

    @Test("rollback restores values, relationships and deletions; reset forgets everything")
    func rollbackAndReset() throws {
        let ada = try author("Ada"), bob = try author("Bob")
        let b = try book("One", by: ada)
        try context.save()
        try ada.set("name", .string("Changed"))
        try b.setObject(bob, forKey: "author")
        context.delete(bob)
        let newcomer = try author("New")
        context.rollback()
        #expect(ada["name"] == .string("Ada"))
        #expect(try b.object(forKey: "author") === ada)
        #expect(try ada.objects(forKey: "books") == [b])
        #expect(try bob.objects(forKey: "books").isEmpty)
        #expect(!bob.isDeleted)
        #expect(newcomer.context == nil)
        #expect(!context.hasChanges)
        #expect(try count("Author") == 2)

        context.reset()
        #expect(context.registeredObjects.isEmpty)
        #expect(ada.context == nil)
        #expect(try context.fetch(FetchRequest(entity: "Author")).count == 2)
    }

    @Test("fetches see unsaved inserts, changes and deletes")
    func pendingChanges() throws {
        let ada = try author("Ada"), bob = try author("Bob"), cy = try author("Cy")
        try ada.set("age", .integer(30)); try bob.set("age", .integer(40)); try cy.set("age", .integer(50))
        try context.save()
        let dee = try author("Dee")
        try dee.set("age", .integer(45))
        try bob.set("age", .integer(20))
        context.delete(cy)
        let request = FetchRequest(entity: "Author", predicate: try ObjectPredicate("age > 25"), sortDescriptors: [ObjectSortDescriptor("age", ascending: false)])
        #expect(try context.fetch(request) == [dee, ada])
        var limited = request
        limited.fetchLimit = 1
        limited.fetchOffset = 1
        #expect(try context.fetch(limited) == [ada])
        #expect(try context.count(request) == 2)
        #expect(try context.count(FetchRequest(entity: "Author", predicate: try ObjectPredicate("age > 25")), in: ObjectContext(coordinator: coordinator)) == 3)
    }

    @Test("an unsaved object deleted before saving leaves no trace")
    func insertThenDelete() throws {
        let ada = try author("Ada")
        let b = try book("Draft", by: ada)
        try context.save()
        let temp = try context.insert("Tag")
        try temp.addObject(b, forKey: "books")
        context.delete(temp)
        try context.save()
        #expect(try b.objects(forKey: "tags").isEmpty)
        #expect(try count("Tag") == 0)
    }
}

extension ObjectContext {
    func count(_ request: FetchRequest, in other: ObjectContext) throws -> Int { try other.count(request) }
}

@Suite("StoreCoordinator")
struct CoordinatorTests {
    init() { InMemoryStore.register() }

    @Test("a store made with another model is refused, naming the entities")
    func incompatible() throws {
        let url = URL(string: "memory://coordinator/\(UUID().uuidString)")!
        let old = try ManagedObjectModel {
            Entity("Author") { Attribute("name", .string) }
            Entity("Retired") {}
        }
        let first = StoreCoordinator(model: old)
        let store = try first.addStore(type: "memory", at: url)
        try first.removeStore(store)
        let second = StoreCoordinator(model: Library.model)
        do {
            try second.addStore(type: "memory", at: url)
            Issue.record("an incompatible store was added")
        } catch let error as StoreError {
            #expect(error.code == .incompatibleModel)
            #expect(error.compatibility?.changedEntities == ["Author"])
            #expect(error.compatibility?.onlyInStore == ["Retired"])
            #expect(error.compatibility?.onlyInModel.contains("Book") == true)
            #expect(error.description.contains("Author"))
        }
        try second.destroyStore(type: "memory", at: url)
        #expect(throws: StoreError.self) { try second.addStore(type: "nosuchtype", at: nil) }
    }

    @Test("several stores for several configurations")
    func configurations() throws {
        let coordinator = StoreCoordinator(model: Library.model)
        let archive = try coordinator.addStore(type: "memory", at: URL(string: "memory://archive/\(UUID().uuidString)")!, configuration: "Archive")
        let main = try coordinator.addStore(type: "memory", at: nil)
        #expect(throws: StoreError.self) { try coordinator.addStore(type: "memory", at: nil, configuration: "Nope") }
        let context = ObjectContext(coordinator: coordinator)
        let award = try context.insert("Award")
        try award.set("title", .string("Prize"))
        let ada = try context.insert("Author")
        try ada.set("name", .string("Ada"))
        try context.save()
        #expect(award.objectID.storeIdentifier == archive.identifier)
        #expect(ada.objectID.storeIdentifier == main.identifier)
        #expect(try archive.count(FetchRequest(entity: "Award")) == 1)
        #expect(try main.count(FetchRequest(entity: "Author")) == 1)
        #expect(try main.count(FetchRequest(entity: "Award")) == 0)
        #expect(try coordinator.metadataForStore(type: "memory", at: archive.url!).storeUUID == archive.identifier)
    }
}
