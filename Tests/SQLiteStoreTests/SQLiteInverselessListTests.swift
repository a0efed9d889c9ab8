import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import SQLiteStore
import Testing
import TestSupport

/// A to-many without an inverse is a column on the members' table in Core Data's layout (`Z<n><NAME>`):
/// a member is in one owner's list. What would put it in two is refused, never a list silently shortened.
@Suite("SQLiteStore to-many lists without an inverse")
struct SQLiteInverselessListTests {
    static let model = try! ManagedObjectModel {
        Entity("Owner") { Attribute("name", .string); Relationship("items", to: "Item", toMany: true, ordered: true) }
        Entity("Item") { Attribute("label", .string) }
    }

    @Test("a member already in another list, or put in two lists by one change, is refused; moving it in one change is not")
    func oneList() throws {
        let folder = try TemporaryFolder()
        let store = try SQLiteStoreType().open(at: folder.file("lists.sqlite"), model: Self.model, options: StoreOptions())
        defer { try? store.close() }
        let (a, b, x) = (ObjectKey("Owner", 1), ObjectKey("Owner", 2), ObjectKey("Item", 1))
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: x, attributes: ["label": .string("x")]),
            ObjectRecord(key: a, attributes: ["name": .string("a")], toMany: ["items": [x]]),
            ObjectRecord(key: b, attributes: ["name": .string("b")]),
        ]))
        let later = try #require(throws: StoreError.self) { try store.save(ChangeSet(updated: [ObjectUpdate(key: b, toMany: ["items": [x]])])) }
        #expect(later.code == .invalidChange && later.message.contains("one list only"), "\(later)")
        let both = try #require(throws: StoreError.self) {
            try store.save(ChangeSet(updated: [ObjectUpdate(key: a, toMany: ["items": [x]]), ObjectUpdate(key: b, toMany: ["items": [x]])]))
        }
        #expect(both.code == .invalidChange)
        #expect(try store.relatedKeys(of: a, relationship: "items") == [x], "nothing of a refused change is written")
        #expect(try store.relatedKeys(of: b, relationship: "items").isEmpty)
        try store.save(ChangeSet(updated: [ObjectUpdate(key: a, toMany: ["items": []]), ObjectUpdate(key: b, toMany: ["items": [x]])]))
        #expect(try store.relatedKeys(of: a, relationship: "items").isEmpty)
        #expect(try store.relatedKeys(of: b, relationship: "items") == [x])
    }
}
