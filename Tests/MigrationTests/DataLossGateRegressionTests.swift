import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import Testing
import TestSupport

/// Migrations the data-loss gate and the mapping check must not refuse (found by a review of
/// the change that added them): a split entity, a narrowed destination, a chain through a
/// version that added what the next removes, an attribute read through a key path.
@Suite("Data-loss gate: what it must let through")
struct DataLossGateRegressionTests {
    // P1: split entity — Person becomes Person + Address; Company.employees fed $source.employees.
    @Test func splitEntity() throws {
        let v1 = try ManagedObjectModel(versionIdentifiers: ["v1"]) {
            Entity("Company") { Attribute("name", .string); Relationship("employees", to: "Person", inverse: "company", toMany: true) }
            Entity("Person") { Attribute("name", .string); Attribute("street", .string); Relationship("company", to: "Company", inverse: "employees") }
        }
        let v2 = try ManagedObjectModel(versionIdentifiers: ["v2"]) {
            Entity("Company") { Attribute("name", .string); Relationship("employees", to: "Person", inverse: "company", toMany: true) }
            Entity("Person") { Attribute("name", .string); Relationship("company", to: "Company", inverse: "employees") }
            Entity("Address") { Attribute("street", .string) }
        }
        let mapping = MappingModel(entityMappings: [
            EntityMapping(name: "CompanyToCompany", kind: .transform, sourceEntity: "Company", destinationEntity: "Company",
                          attributeMappings: ["name": .source("name")], relationshipMappings: ["employees": .source("employees")]),
            EntityMapping(name: "PersonToPerson", kind: .transform, sourceEntity: "Person", destinationEntity: "Person",
                          attributeMappings: ["name": .source("name")], relationshipMappings: ["company": .source("company")]),
            EntityMapping(name: "PersonToAddress", kind: .transform, sourceEntity: "Person", destinationEntity: "Address",
                          attributeMappings: ["street": .source("street")]),
        ])
        try mapping.check(from: v1, to: v2)
        // and run it on a store, bypassing nothing
        let workspace = try Workspace()
        let url = workspace.location("split", "sqlite")
        try makeStore("sqlite", at: url, model: v1, json: """
            {"Company": [{"_id": "c", "name": "C", "employees": ["p"]}], "Person": [{"_id": "p", "name": "P", "street": "S"}]}
            """)
        let versions = try ModelVersions(versions: [.init(name: "v1", model: v1), .init(name: "v2", model: v2)])
        try StoreMigrator(versions: versions, mappings: [StepMapping(name: "split", mapping: MappingModel(entityMappings: mapping.entityMappings, sourceVersion: "v1", destinationVersion: "v2"))]).migrateStore(at: url, type: Backends.type("sqlite"))
        #expect(try export("sqlite", at: url, model: v2).contains(#""company": "Company/1""#), "the person is still the company's")
    }

    // P2: inferred mapping narrowing a to-one's destination to a sub-entity.
    @Test(arguments: ["sqlite", "lmdb"]) func narrowing(_ backend: String) throws {
        func model(_ v: Int) throws -> ManagedObjectModel {
            try ManagedObjectModel(versionIdentifiers: ["v\(v)"]) {
                Entity("Owner") { Attribute("name", .string); Relationship("favorite", to: v == 1 ? "Animal" : "Dog") }
                Entity("Animal") { Attribute("name", .string) }
                Entity("Dog", parent: "Animal") { Attribute("breed", .string) }
            }
        }
        let versions = try ModelVersions(versions: [.init(name: "v1", model: model(1)), .init(name: "v2", model: model(2))])
        let workspace = try Workspace()
        let url = workspace.location("narrow", backend)
        try makeStore(backend, at: url, model: model(1), json: """
            {"Owner": [{"_id": "o", "name": "O", "favorite": "d"}], "Dog": [{"_id": "d", "name": "Rex", "breed": "x"}]}
            """)
        let migrator = StoreMigrator(versions: versions)
        let plan = try migrator.plan(forStoreAt: url, type: Backends.type(backend))
        #expect(plan.steps.map(\.description) == ["v1 -> v2: lightweight"])
        try migrator.migrateStore(at: url, type: Backends.type(backend))
    }

    // P3: in-place chain, relationship / entity added in v2 and removed in v3, store at v1.
    @Test(arguments: ["sqlite", "lmdb"]) func addedThenRemoved(_ backend: String) throws {
        func model(_ v: Int) throws -> ManagedObjectModel {
            try ManagedObjectModel(versionIdentifiers: ["v\(v)"]) {
                Entity("A") { Attribute("x", .string); if v == 2 { Relationship("bs", to: "B", inverse: "a", toMany: true) } }
                Entity("B") { Attribute("y", .string); if v == 2 { Relationship("a", to: "A", inverse: "bs") } }
                if v == 2 { Entity("C") { Attribute("z", .string) } }
            }
        }
        let versions = try ModelVersions(versions: (1...3).map { .init(name: "v\($0)", model: try model($0)) })
        let workspace = try Workspace()
        let url = workspace.location("chain", backend)
        try makeStore(backend, at: url, model: model(1), json: """
            {"A": [{"_id": "a", "x": "1"}], "B": [{"_id": "b", "y": "2"}]}
            """)
        let migrator = StoreMigrator(versions: versions)
        let plan = try migrator.plan(forStoreAt: url, type: Backends.type(backend))
        #expect(plan.steps.allSatisfy { !$0.description.contains("drops") }, "\(plan.steps)")
        try migrator.migrateStore(at: url, type: Backends.type(backend))
    }

    // P4: an attribute moved onto a related entity via a key path.
    @Test func movedByKeyPath() throws {
        let v1 = try ManagedObjectModel(versionIdentifiers: ["v1"]) {
            Entity("Author") { Attribute("name", .string); Relationship("books", to: "Book", inverse: "author", toMany: true) }
            Entity("Book") { Attribute("title", .string); Relationship("author", to: "Author", inverse: "books") }
        }
        _ = try ManagedObjectModel(versionIdentifiers: ["v2"]) {
            Entity("Author") { Relationship("books", to: "Book", inverse: "author", toMany: true) }
            Entity("Book") { Attribute("title", .string); Attribute("authorName", .string); Relationship("author", to: "Author", inverse: "books") }
        }
        let mapping = MappingModel(entityMappings: [
            EntityMapping(name: "AuthorToAuthor", kind: .transform, sourceEntity: "Author", destinationEntity: "Author",
                          relationshipMappings: ["books": .source("books")]),
            EntityMapping(name: "BookToBook", kind: .transform, sourceEntity: "Book", destinationEntity: "Book",
                          attributeMappings: ["title": .source("title"), "authorName": .source("author.name")], relationshipMappings: ["author": .source("author")]),
        ])
        #expect(DataDrop.drops(of: mapping, from: v1).isEmpty, "Author.name is read through Book.author")
    }
}
