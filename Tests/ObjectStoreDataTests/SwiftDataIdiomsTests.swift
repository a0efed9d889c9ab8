import Foundation
import ObjectStoreData
import Testing

// Model code in the forms SwiftData's documentation and samples use, beyond the other tests'
// models: a class that is not final, optional to-many arrays, a multi-constraint #Unique, Codable
// arrays, structs and enums with associated values, integer widths, external storage, a model
// that deletes itself, the configuration and fetch forms SwiftData offers.

@Model
class Recipe {
    #Unique<Recipe>([\.name], [\.code])
    var name: String
    var code: Int16
    var servings: UInt8
    var steps: [String] = []
    var timing: Timing
    var diet: Diet = Diet.none
    @Attribute(.externalStorage) var photo: Data?
    @Relationship(deleteRule: .cascade) var ingredients: [Ingredient]? = []
    @Transient var isExpanded = false

    init(name: String, code: Int16, servings: UInt8, timing: Timing) {
        self.name = name
        self.code = code
        self.servings = servings
        self.timing = timing
    }

    func discard() { modelContext?.delete(self) }
}

struct Timing: Codable, Equatable {
    var preparation: Int
    var cooking: Int
}

enum Diet: Codable, Equatable {
    case none
    case vegetarian
    case limited(calories: Int)
}

@Model
class Ingredient {
    var name: String
    var grams: UInt64
    @Relationship(inverse: \Recipe.ingredients) var recipe: Recipe?

    init(name: String, grams: UInt64) {
        self.name = name
        self.grams = grams
    }
}

@Suite("SwiftData's idioms compile and behave")
struct SwiftDataIdiomsTests {
    @Test("a class that is not final, Codable values, external storage, an optional to-many, a model that deletes itself", arguments: TypedBackends.all)
    func idioms(_ backend: String) throws {
        let place = try TypedBackends.Place()
        let container = try ModelContainer(for: Recipe.self, configurations: try place.configuration(backend, "recipes"))
        let photo = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        do {
            let context = ModelContext(container)
            let soup = Recipe(name: "Soup", code: -7, servings: 255, timing: Timing(preparation: 10, cooking: 30))
            soup.steps = ["chop", "boil", "blend"]
            soup.diet = .limited(calories: 300)
            soup.photo = photo
            soup.ingredients?.append(Ingredient(name: "leek", grams: UInt64.max))
            soup.ingredients?.append(Ingredient(name: "potato", grams: 400))
            context.insert(soup)
            context.insert(Recipe(name: "Toast", code: 2, servings: 1, timing: Timing(preparation: 1, cooking: 2)))
            try context.save()
            // Either constraint makes an insert an update of every value: the same code, another name.
            let renamed = Recipe(name: "Toast and jam", code: 2, servings: 2, timing: Timing(preparation: 2, cooking: 2))
            renamed.diet = .vegetarian
            context.insert(renamed)
            try context.save()
            #expect(try context.fetchCount(FetchDescriptor<Recipe>()) == 2)
        }
        let context = ModelContext(container)
        let all = try context.fetch(FetchDescriptor<Recipe>(sortBy: [SortDescriptor(\.code)]), batchSize: 1)
        #expect(all.map(\.name) == ["Soup", "Toast and jam"])
        #expect(all.last.map { ($0.servings, $0.timing, $0.diet) } ?? (0, Timing(preparation: 0, cooking: 0), .none) == (2, Timing(preparation: 2, cooking: 2), .vegetarian))
        let soup = try #require(all.first)
        #expect(soup.servings == 255 && soup.code == -7 && soup.steps == ["chop", "boil", "blend"])
        #expect(soup.timing == Timing(preparation: 10, cooking: 30) && soup.diet == .limited(calories: 300) && soup.photo == photo)
        #expect(Set(soup.ingredients?.map(\.name) ?? []) == ["leek", "potato"])
        #expect(soup.ingredients?.first { $0.name == "leek" }?.grams == UInt64.max)
        #expect(soup.ingredients?.allSatisfy { $0.recipe === soup } == true)
        #expect(!soup.isExpanded)
        // A predicate over a Codable array's model and a to-many's count.
        let withMany = try context.fetch(FetchDescriptor<Recipe>(predicate: #Predicate { ($0.ingredients?.count ?? 0) > 1 }))
        #expect(withMany.map(\.name) == ["Soup"])
        // The model deletes itself; the cascade takes its ingredients.
        soup.discard()
        try context.save()
        #expect(try context.fetch(FetchDescriptor<Recipe>()).map(\.name) == ["Toast and jam"])
        #expect(try context.fetchCount(FetchDescriptor<Ingredient>()) == 0)
    }

    @Test("the configuration forms SwiftData has; what this platform lacks is refused by name")
    func configurations() throws {
        _ = try ModelContainer(for: Recipe.self, configurations: ModelConfiguration(for: Recipe.self, isStoredInMemoryOnly: true))
        _ = try ModelContainer(for: Schema([Recipe.self]), configurations: [ModelConfiguration(isStoredInMemoryOnly: true)])
        _ = try ModelContainer(for: Recipe.self, configurations: ModelConfiguration(nil, schema: nil, isStoredInMemoryOnly: true, allowsSave: true,
                                                                                     groupContainer: .none, cloudKitDatabase: .none))
        let group = #expect(throws: ModelContainerError.self) {
            try ModelContainer(for: Recipe.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true, groupContainer: .identifier("group.cooks")))
        }
        #expect(group?.message.contains("group.cooks") == true)
        let cloud = #expect(throws: ModelContainerError.self) {
            try ModelContainer(for: Recipe.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true, cloudKitDatabase: .private("iCloud.cooks")))
        }
        #expect(cloud?.message.contains("CloudKit") == true)
    }
}
