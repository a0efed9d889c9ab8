import Foundation
import InMemoryStore
import ObjectModel
import ObjectStore
import Testing

/// The README's quick start, as it is written there.
@Suite("README quick start")
struct QuickStartTests {
    @Test("runs as printed")
    func quickStart() throws {
        let model = try ManagedObjectModel {
            Entity("Person") {
                Attribute("name", .string, optional: false)
                Attribute("age", .integer16, validation: ValidationRules(minValue: .integer(0)))
                Relationship("pets", to: "Pet", inverse: "owner", toMany: true, deleteRule: .cascade)
            }
            Entity("Pet") {
                Attribute("name", .string)
                Relationship("owner", to: "Person", inverse: "pets")
            }
        }

        InMemoryStore.register()
        let coordinator = StoreCoordinator(model: model)
        try coordinator.addStore(type: "memory", at: nil)
        let context = ObjectContext(coordinator: coordinator)

        let ada = try context.insert("Person")
        try ada.set("name", .string("Ada"))
        try ada.set("age", 36)
        let rex = try context.insert("Pet")
        try rex.set("name", .string("Rex"))
        try rex.setObject(ada, forKey: "owner")      // ada's "pets" now holds rex
        try context.save()                           // validates, applies delete rules, writes atomically

        let adults = try context.fetch(FetchRequest(
            entity: "Person",
            predicate: try ObjectPredicate("age >= 18 AND name BEGINSWITH[c] 'a'"),
            sortDescriptors: [ObjectSortDescriptor("name")]))
        #expect(adults == [ada])
        #expect(try ada.objects(forKey: "pets") == [rex])
    }
}
