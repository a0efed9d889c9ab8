import Foundation
import ObjectModel
import ObjectStore
import Testing

extension StoreConformance {
    /// The model of the uniqueness check: `Account` unique by `email`, and by `region` and
    /// `handle` together; `AdminAccount` inherits both; `Badge` unique by its `holder` (a to-one).
    public static let uniquenessModel: ManagedObjectModel = {
        do {
            return try ManagedObjectModel(versionIdentifiers: ["conformance-unique-1"]) {
                Entity("Account", uniquenessConstraints: [["email"], ["region", "handle"]]) {
                    Attribute("email", .string)
                    Attribute("region", .string)
                    Attribute("handle", .string)
                    Attribute("note", .string)
                    Relationship("badge", to: "Badge", inverse: "holder")
                }
                Entity("AdminAccount", parent: "Account") {
                    Attribute("level", .integer16)
                }
                Entity("Badge", uniquenessConstraints: [["holder"]]) {
                    Attribute("title", .string)
                    Relationship("holder", to: "Account", inverse: "badge")
                }
            }
        } catch {
            preconditionFailure("the uniqueness model is inconsistent: \(error)")
        }
    }()

    /// Uniqueness constraints hold at every save, for records, updates and batches: a typed error
    /// names the constraint and both objects, and nothing of the refused save lands.
    func uniqueness(_ scope: Scope) throws {
        let store = try scope.openStore(model: Self.uniquenessModel)
        func key(_ entity: String) throws -> ObjectKey { ObjectKey(entity, try store.allocatePrimaryKeys(entity: entity, count: 1).lowerBound) }
        func account(_ key: ObjectKey, _ email: String?, region: String? = nil, handle: String? = nil) -> ObjectRecord {
            var attributes: [String: Value] = [:]
            if let email { attributes["email"] = .string(email) }
            if let region { attributes["region"] = .string(region) }
            if let handle { attributes["handle"] = .string(handle) }
            return ObjectRecord(key: key, attributes: attributes)
        }
        func refused(_ changes: ChangeSet, _ constraint: String, _ objects: Set<ObjectKey>, _ note: String,
                     sourceLocation: SourceLocation = #_sourceLocation) {
            do {
                try store.save(changes)
                Issue.record("saved: \(note)", sourceLocation: sourceLocation)
            } catch let error as StoreError {
                #expect(error.code == .uniquenessViolated, "\(note): \(error)", sourceLocation: sourceLocation)
                #expect(error.uniquenessViolation?.constraint.name == constraint, "\(note): \(error)", sourceLocation: sourceLocation)
                #expect(Set(error.uniquenessViolation?.objects ?? []) == objects, "\(note): \(error)", sourceLocation: sourceLocation)
                #expect(error.message.contains(constraint), "\(note): \(error.message)", sourceLocation: sourceLocation)
            } catch {
                Issue.record("\(note): \(error)", sourceLocation: sourceLocation)
            }
        }
        let a = try key("Account"), b = try key("Account")
        // Two new objects with one value, in one save: neither lands.
        refused(ChangeSet(inserted: [account(a, "ada@example.com"), account(b, "ada@example.com")]), "Account(email)", [a, b], "two inserts")
        #expect(try store.count(FetchRequest(entity: "Account")) == 0)
        try store.save(ChangeSet(inserted: [account(a, "ada@example.com", region: "eu", handle: "ada")]))
        // A sub-entity's instance shares its parent's constraint.
        let admin = try key("AdminAccount")
        refused(ChangeSet(inserted: [account(admin, "ada@example.com")]), "Account(email)", [a, admin], "a sub-entity")
        #expect(try store.record(for: admin) == nil)
        // Nil values are not constrained; another value is fine; strings compare byte for byte.
        let c = try key("Account"), d = try key("Account"), e = try key("Account")
        try store.save(ChangeSet(inserted: [account(b, nil), account(c, nil), account(d, "bob@example.com", region: "eu", handle: "bob"),
                                            account(e, "e\u{301}@example.com")]))
        let f = try key("Account")
        try store.save(ChangeSet(inserted: [account(f, "\u{E9}@example.com")]))
        // A compound constraint: one equal value is fine, all equal is not.
        let g = try key("Account")
        try store.save(ChangeSet(inserted: [account(g, "g@example.com", region: "us", handle: "ada")]))
        refused(ChangeSet(inserted: [account(admin, "x@example.com", region: "eu", handle: "ada")]), "Account(region, handle)", [a, admin], "compound")
        // Updates: taking another's value is refused; a swap through a third value, a value freed by a
        // delete, and an update of an unconstrained attribute are fine.
        refused(ChangeSet(updated: [ObjectUpdate(key: d, attributes: ["email": .string("ada@example.com")])]), "Account(email)", [a, d], "an update")
        refused(ChangeSet(updated: [ObjectUpdate(key: d, attributes: ["handle": .string("ada")])]), "Account(region, handle)", [a, d], "a kept value")
        #expect(try store.record(for: d)?.attributes["email"] == .string("bob@example.com"))
        try store.save(ChangeSet(updated: [ObjectUpdate(key: a, attributes: ["email": .string("tmp@example.com")]),
                                           ObjectUpdate(key: d, attributes: ["email": .string("ada@example.com")])]))
        try store.save(ChangeSet(updated: [ObjectUpdate(key: a, attributes: ["email": .string("bob@example.com"), "note": .string("swapped")])]))
        try store.save(ChangeSet(inserted: [account(admin, "ada@example.com")], deleted: [ObjectDeletion(key: d)]))
        try store.save(ChangeSet(updated: [ObjectUpdate(key: admin, attributes: ["level": .integer(3)])]))
        // A to-one in a constraint: one badge per holder.
        let b1 = try key("Badge"), b2 = try key("Badge")
        try store.save(ChangeSet(inserted: [ObjectRecord(key: b1, attributes: ["title": .string("gold")], toOne: ["holder": a])]))
        refused(ChangeSet(inserted: [ObjectRecord(key: b2, attributes: ["title": .string("silver")], toOne: ["holder": a])]), "Badge(holder)", [b1, b2], "a to-one")
        // Bulk inserts, records and batches, checked or not.
        let h = try key("Account"), i = try key("Account")
        #expect(throws: StoreError.self) { try store.bulkInsert([account(h, "ada@example.com")], checkingReferences: false) }
        var batch = RecordBatch(entity: Self.uniquenessModel.entity(named: "Account")!)
        try batch.append(account(h, "h@example.com"))
        try batch.append(account(i, "h@example.com"))
        do {
            try store.bulkInsert(batch, checkingReferences: false)
            Issue.record("a batch with one email twice was inserted")
        } catch let error as StoreError {
            #expect(error.code == .uniquenessViolated, "\(error)")
        }
        #expect(try store.record(for: h) == nil)
        let emails = try store.fetch(FetchRequest(entity: "Account")).compactMap { record -> String? in
            if case .string(let email)? = record.attributes["email"] { return email }
            return nil
        }
        #expect(emails.sorted() == ["ada@example.com", "bob@example.com", "e\u{301}@example.com", "g@example.com", "\u{E9}@example.com"].sorted())
    }
}
