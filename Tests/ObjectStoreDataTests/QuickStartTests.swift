import Foundation
import ObjectStoreData
import Testing

// README.md's typed quick start, as it is written there.

@Model
final class Person {
    #Unique<Person>([\.name])
    var name: String
    var age: Int
    @Relationship(deleteRule: .cascade, inverse: \Pet.owner) var pets: [Pet] = []

    init(name: String, age: Int) {
        self.name = name
        self.age = age
    }
}

@Model
final class Pet {
    var name: String
    var owner: Person?
    init(name: String) { self.name = name }
}

@Suite("README's typed quick start")
struct TypedQuickStartTests {
    @Test("runs as written, and the upsert it mentions updates the stored person")
    func quickStart() throws {
        let place = try TypedBackends.Place()
        let container = try ModelContainer(for: Person.self, configurations: ModelConfiguration(url: place.folder.appending(path: "people.store")))
        let context = ModelContext(container)
        let ada = Person(name: "Ada", age: 36)
        ada.pets.append(Pet(name: "Rex"))
        context.insert(ada)
        try context.save()
        let adults = try context.fetch(FetchDescriptor<Person>(
            predicate: #Predicate { $0.age >= 18 && $0.name.starts(with: "A") },
            sortBy: [SortDescriptor(\.name)]))
        #expect(adults.map(\.name) == ["Ada"])
        #expect(adults.first?.pets.first?.owner === ada)
        // Read in another context that nothing else holds: its models keep it alive.
        #expect(try ModelContext(container).fetch(FetchDescriptor<Pet>()).map { $0.owner?.name } == ["Ada"])
        context.insert(Person(name: "Ada", age: 37))
        try context.save()
        let people = try ModelContext(container).fetch(FetchDescriptor<Person>())
        #expect(people.map(\.age) == [37] && people.first?.pets.map(\.name) == ["Rex"])
    }
}

