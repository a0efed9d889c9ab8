import CSQLite
import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import Synchronization
import Testing

let contactV1 = model {
    Entity("Contact") { Attribute("fullName", .string); Attribute("identifier", .integer64) }
}
let contactV2 = model {
    Entity("Contact") { Attribute("firstName", .string); Attribute("lastName", .string); Attribute("identifier", .string) }
}
let contacts = #"""
{"Contact": [{"_id": "a", "fullName": "Ada Lovelace", "identifier": 42}, {"_id": "p", "fullName": "Plato", "identifier": 7},
             {"_id": "m", "fullName": "Mary Ann Evans", "identifier": -3}, {"_id": "n", "identifier": 0}]}
"""#

/// Splits `fullName` at the first space, in Swift.
struct SplitNamePolicy: EntityMigrationPolicy {
    func createDestinationInstances(for source: ObjectRecord, mapping: EntityMapping, context: MigrationContext) throws {
        var attributes: [String: Value] = [:]
        if case .string(let full)? = source.attributes["fullName"] {
            let parts = full.split(separator: " ", maxSplits: 1).map(String.init)
            attributes["firstName"] = .string(parts[0])
            if parts.count > 1 { attributes["lastName"] = .string(parts[1]) }
        }
        if case .integer(let id)? = source.attributes["identifier"] { attributes["identifier"] = .string(String(id)) }
        try context.insertDestination(entity: "Contact", attributes: attributes, for: source.key, mapping: mapping)
    }
}

/// Makes a Person and an Address from one source Person, related to each other.
struct SplitAddressPolicy: EntityMigrationPolicy {
    func createDestinationInstances(for source: ObjectRecord, mapping: EntityMapping, context: MigrationContext) throws {
        try context.insertDestination(entity: "Person", attributes: ["name": source.attributes["name"]].compactMapValues { $0 },
                                      for: source.key, mapping: mapping)
        try context.insertDestination(entity: "Address", attributes: ["street": source.attributes["street"], "city": source.attributes["city"]]
                                        .compactMapValues { $0 }, for: source.key, mapping: mapping)
    }

    func createRelationships(forDestination destination: ObjectKey, source: ObjectRecord, mapping: EntityMapping,
                             context: MigrationContext) throws {
        let made = context.destinationKeys(for: source.key, mapping: mapping.name)
        guard destination.entity == "Person", let address = made.first(where: { $0.entity == "Address" }) else { return }
        try context.setRelationship("address", of: destination, to: [address])
        try context.setRelationship("resident", of: address, to: [destination])
    }

    func performCustomValidation(_ mapping: EntityMapping, context: MigrationContext) throws -> [ValidationFailure] {
        let people = try context.destinationStore.count(FetchRequest(entity: "Person"))
        let addresses = try context.destinationStore.count(FetchRequest(entity: "Address"))
        guard people == addresses else {
            return [ValidationFailure(objectID: context.destinationStore.objectID(for: ObjectKey("Person", 0)), property: "address",
                                      rule: .required, message: "\(people) people but \(addresses) addresses")]
        }
        return []
    }
}

func migrate(_ source: ManagedObjectModel, _ destination: ManagedObjectModel, mapping: MappingModel, data: String,
             from sourceBackend: String = "sqlite", to destinationBackend: String = "sqlite", policies: PolicyRegistry = .shared,
             batchSize: Int = 1_000, progress: (@Sendable (MigrationProgress) -> Void)? = nil,
             manager: ((MigrationManager) -> Void)? = nil) throws -> Document {
    let workspace = try Workspace()
    let from = workspace.location("v1", sourceBackend), to = workspace.location("v2", destinationBackend)
    try makeStore(sourceBackend, at: from, model: source, json: data)
    let migrationManager = MigrationManager(sourceModel: source, destinationModel: destination, mapping: mapping,
                                            policies: policies, batchSize: batchSize, progress: progress)
    manager?(migrationManager)
    try migrationManager.migrateStore(at: from, type: Backends.type(sourceBackend), to: to, type: Backends.type(destinationBackend))
    return try #require(try JSONSerialization.jsonObject(with: Data(export(destinationBackend, at: to, model: destination).utf8)) as? Document)
}

@Suite("Custom migrations")
struct CustomMigrationTests {
    func checkContacts(_ doc: Document) {
        let rows = doc["Contact"] ?? []
        #expect(rows.map { $0["firstName"] as? String } == ["Ada", "Plato", "Mary", nil])
        #expect(rows.map { $0["lastName"] as? String } == ["Lovelace", nil, "Ann Evans", nil])
        #expect(rows.map { $0["identifier"] as? String } == ["42", "7", "-3", "0"])
    }

    @Test("Contact{fullName, identifier: Integer 64} → {firstName, lastName, identifier: String}, as a Swift policy")
    func swiftPolicy() throws {
        let policies = PolicyRegistry()
        policies.register(SplitNamePolicy(), named: "SplitName")
        let mapping = MappingModel(entityMappings: [
            EntityMapping(name: "ContactToContact", kind: .custom, sourceEntity: "Contact", destinationEntity: "Contact",
                          sourceVersionHash: contactV1.versionHashes["Contact"], policyName: "SplitName"),
        ])
        checkContacts(try migrate(contactV1, contactV2, mapping: mapping, data: contacts, policies: policies))
    }

    @Test("the same migration as a mapping of expressions written as text", arguments: ["sqlite", "atomic"])
    func expressions(_ backend: String) throws {
        let mapping = MappingModel(entityMappings: [
            EntityMapping(name: "ContactToContact", kind: .transform, sourceEntity: "Contact", destinationEntity: "Contact",
                          attributeMappings: [
                              "firstName": try MappingExpression("before($source.fullName, ' ')"),
                              "lastName": try MappingExpression("after($source.fullName, ' ')"),
                              "identifier": try MappingExpression("toString($source.identifier)"),
                          ]),
        ])
        checkContacts(try migrate(contactV1, contactV2, mapping: mapping, data: contacts, from: backend, to: "lmdb"))
    }

    @Test("one source object becomes two related destination objects")
    func oneToTwo() throws {
        let v1 = model { Entity("Person") { Attribute("name", .string); Attribute("street", .string); Attribute("city", .string) } }
        let v2 = model {
            Entity("Person") { Attribute("name", .string); Relationship("address", to: "Address", inverse: "resident") }
            Entity("Address") { Attribute("street", .string); Attribute("city", .string); Relationship("resident", to: "Person", inverse: "address") }
        }
        let policies = PolicyRegistry()
        policies.register(SplitAddressPolicy(), named: "SplitAddress")
        let mapping = MappingModel(entityMappings: [
            EntityMapping(name: "PersonToPersonAndAddress", kind: .custom, sourceEntity: "Person", destinationEntity: "Person", policyName: "SplitAddress"),
        ])
        let data = #"{"Person": [{"_id": "a", "name": "Ada", "street": "1 St James's Sq", "city": "London"}, {"_id": "b", "name": "Bob", "city": "Paris"}]}"#
        let doc = try migrate(v1, v2, mapping: mapping, data: data, to: "memory", policies: policies)
        let people = try #require(doc["Person"]), addresses = try #require(doc["Address"])
        #expect(people.count == 2 && addresses.count == 2)
        for person in people {
            let address = try #require(addresses.first { $0["_id"] as? String == person["address"] as? String })
            #expect(address["resident"] as? String == person["_id"] as? String)
        }
        #expect(addresses.first { $0["resident"] as? String == people[0]["_id"] as? String }?["city"] as? String == "London")
    }

    @Test("a policy that names an object no mapping made is refused, naming it: only the mapping's own targets skip the store's lookups",
          arguments: ["sqlite", "lmdb", "memory"])
    func policyNamesNothing(_ backend: String) throws {
        struct Dangling: EntityMigrationPolicy {
            func createRelationships(forDestination destination: ObjectKey, source: ObjectRecord, mapping: EntityMapping,
                                     context: MigrationContext) throws {
                try context.setRelationship("address", of: destination, to: [ObjectKey("Address", 999)])
            }
        }
        let v1 = model { Entity("Person") { Attribute("name", .string) } }
        let v2 = model {
            Entity("Person") { Attribute("name", .string); Relationship("address", to: "Address", inverse: "resident") }
            Entity("Address") { Attribute("street", .string); Relationship("resident", to: "Person", inverse: "address") }
        }
        let policies = PolicyRegistry()
        policies.register(Dangling(), named: "Dangling")
        let mapping = MappingModel(entityMappings: [
            EntityMapping(name: "PersonToPerson", kind: .custom, sourceEntity: "Person", destinationEntity: "Person", policyName: "Dangling"),
        ])
        let error = try #require(throws: MigrationError.self) {
            _ = try migrate(v1, v2, mapping: mapping, data: #"{"Person": [{"_id": "a", "name": "Ada"}]}"#, to: backend, policies: policies)
        }
        #expect("\(error)".contains("Address/999 does not exist"), "\(error)")
    }

    @Test("expression parsing and the standard library")
    func functions() throws {
        let cases: [(String, Value?)] = [
            ("split('a,b,c', ',', 1)", .string("b")), ("split('a', ',', 3)", nil), ("join('-', 'a', nil, 'b')", .string("a-b")),
            ("trim('  x ')", .string("x")), ("lowercase('AbC')", .string("abc")), ("uppercase('abc')", .string("ABC")),
            ("substring('héllo', 1, 3)", .string("éll")), ("replace('a-b-c', '-', '+')", .string("a+b+c")),
            ("substring('héllo', 1, 9223372036854775807)", .string("éllo")), ("substring('héllo', 9223372036854775807, 1)", .string("")),
            ("toString(42)", .string("42")), ("toInteger('17')", .integer(17)), ("toDouble('2.5')", .double(2.5)),
            ("toInteger(3.0)", .integer(3)), ("coalesce(nil, nil, 'z')", .string("z")), ("ifNil(nil, 5)", .integer(5)),
            ("toISO8601(fromUnixSeconds(0))", .string("1970-01-01T00:00:00.000Z")),
            ("toUnixSeconds(fromISO8601('1970-01-02T00:00:00Z'))", .double(86_400)), ("lowercase(nil)", nil),
        ]
        for (text, expected) in cases {
            let expression = try MappingExpression(text)
            guard case .call(let name, let args) = expression else { Issue.record("\(text) did not parse to a call"); continue }
            let values = try args.map { try evaluateConstant($0) }
            #expect(try MappingFunctions.call(name, values) == expected, "\(text)")
            #expect(try MappingExpression(expression.description).description == expression.description)
        }
        for bad in ["toInteger('twelve')", "toDouble('x')", "toInteger(2.5)"] {
            guard case .call(let name, let args) = try MappingExpression(bad) else { continue }
            #expect(throws: MigrationError.self) { try MappingFunctions.call(name, try args.map { try evaluateConstant($0) }) }
        }
        for bad in ["nosuch($source.a)", "$other.a", "split('a'", "'open", "before($source.a ' ')"] {
            #expect(throws: MigrationError.self, "\(bad)") { try MappingExpression(bad) }
        }
    }

    /// Evaluates an argument made of constants and nested calls.
    func evaluateConstant(_ expression: MappingExpression) throws -> Value? {
        switch expression {
        case .constant(let v): return v
        case .call(let name, let args): return try MappingFunctions.call(name, try args.map { try evaluateConstant($0) })
        default: throw MigrationError(.expression, "not constant")
        }
    }
}

@Suite("Cancellation and failure")
struct FailureTests {
    static let pairs = [("sqlite", "sqlite"), ("sqlite", "lmdb"), ("lmdb", "atomic"), ("atomic", "sqlite"), ("memory", "sqlite")]

    static func bigData(_ count: Int) -> String {
        "{\"Contact\": [" + (1...count).map { #"{"_id": "c\#($0)", "fullName": "Person \#($0)", "identifier": \#($0)}"# }.joined(separator: ",") + "]}"
    }

    /// Runs a migration that must fail, and checks the source is untouched and no destination is left.
    func expectFailure(_ source: String, _ destination: String, mapping: MappingModel, to model: ManagedObjectModel = contactV2,
                       data: String = bigData(300), configure: (MigrationManager) -> Void = { _ in },
                       progress: (@Sendable (MigrationProgress) -> Void)? = nil) throws -> MigrationError {
        let workspace = try Workspace()
        let from = workspace.location("v1", source), to = workspace.location("v2", destination)
        try makeStore(source, at: from, model: contactV1, json: data)
        let before = try workspace.snapshot()
        let exportBefore = try export(source, at: from, model: contactV1)
        let manager = MigrationManager(sourceModel: contactV1, destinationModel: model, mapping: mapping, batchSize: 25, progress: progress)
        configure(manager)
        var caught: MigrationError?
        do {
            try manager.migrateStore(at: from, type: Backends.type(source), to: to, type: Backends.type(destination))
            Issue.record("the migration did not fail")
        } catch let error as MigrationError {
            caught = error
        }
        let after = try workspace.snapshot()
        for (name, bytes) in before where !name.hasSuffix("-lock") { #expect(after[name] == bytes, "\(name) changed") }
        #expect(Set(after.keys).subtracting(before.keys).isEmpty, "left behind: \(Set(after.keys).subtracting(before.keys))")
        #expect(!Backends.type(destination).storeExists(at: to))
        #expect(try export(source, at: from, model: contactV1) == exportBefore)
        return try #require(caught)
    }

    static let expressionMapping = MappingModel(entityMappings: [
        EntityMapping(name: "ContactToContact", kind: .transform, sourceEntity: "Contact", destinationEntity: "Contact",
                      attributeMappings: ["firstName": .source("fullName"), "identifier": .call("toString", [.source("identifier")])]),
    ])

    @Test("cancel() stops within one batch", arguments: pairs)
    func cancel(_ source: String, _ destination: String) throws {
        let box = Mutex<MigrationManager?>(nil)
        let error = try expectFailure(source, destination, mapping: Self.expressionMapping, configure: { manager in
            box.withLock { $0 = manager }
        }, progress: { progress in
            if progress.phase == .createObjects && progress.completed >= 50 { box.withLock { $0?.cancel() } }
        })
        #expect(error.code == .cancelled)
        #expect(error.phase == .createObjects)
        #expect(error.mapping == "ContactToContact")
    }

    @Test("task cancellation stops the migration too")
    func taskCancellation() async throws {
        let task = Task.detached {
            try self.expectFailure("sqlite", "sqlite", mapping: Self.expressionMapping, progress: { progress in
                if progress.completed >= 25 { withUnsafeCurrentTask { $0?.cancel() } }
            })
        }
        let error = try await task.value
        #expect(error.code == .cancelled)
    }

    @Test("a failing expression names mapping, phase and source object; nothing is left", arguments: pairs)
    func expressionFailure(_ source: String, _ destination: String) throws {
        let mapping = MappingModel(entityMappings: [
            EntityMapping(name: "ContactToContact", kind: .transform, sourceEntity: "Contact", destinationEntity: "Contact",
                          attributeMappings: ["identifier": .call("toString", [.call("toInteger", [.source("fullName")])])]),
        ])
        let data = #"{"Contact": [{"_id": "c1", "fullName": "12", "identifier": 1}, {"_id": "c2", "fullName": "twelve", "identifier": 2}]}"#
        let error = try expectFailure(source, destination, mapping: mapping, data: data)
        #expect(error.code == .expression)
        #expect(error.mapping == "ContactToContact")
        #expect(error.phase == .createObjects)
        #expect(error.sourceObject == ObjectKey("Contact", 2))
        #expect(error.description.contains("\"twelve\" is not an integer"))
    }

    @Test("a source row that cannot be read, in a batch read beside the writes of the one before: the read's error, in its place; nothing is left",
          arguments: [1, 11])
    func unreadableLaterBatch(_ batch: Int) throws {
        let workspace = try Workspace()
        let from = workspace.location("v1", "sqlite"), to = workspace.location("copy", "sqlite")
        try makeStore("sqlite", at: from, model: contactV1, json: Self.bigData(300))
        // Behind the store's back: an integer attribute holding bytes, in the batch of 25 numbered `batch`.
        var db: OpaquePointer?
        #expect(sqlite3_open(from.path, &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, "UPDATE ZCONTACT SET ZIDENTIFIER = x'00' WHERE Z_PK = \(batch * 25 + 10)", nil, nil, nil) == SQLITE_OK)
        #expect(sqlite3_changes(db) == 1)
        sqlite3_close(db)
        let before = try workspace.snapshot()
        let manager = MigrationManager(sourceModel: contactV1, destinationModel: contactV1, mapping: .identity(for: contactV1),
                                       batchSize: 25, usesBulkCopy: false)
        let error = try #require(throws: MigrationError.self) {
            try manager.migrateStore(at: from, type: Backends.type("sqlite"), to: to, type: Backends.type("sqlite"))
        }
        #expect(error.phase == .createObjects)
        #expect(error.mapping == "ContactToContact")
        #expect(error.description.contains("\(batch * 25 + 10)"), "\(error)")
        #expect(!Backends.type("sqlite").storeExists(at: to))
        let after = try workspace.snapshot()
        for (name, bytes) in before where !name.hasSuffix("-lock") { #expect(after[name] == bytes, "\(name) changed") }
        #expect(Set(after.keys).subtracting(before.keys).isEmpty, "left behind: \(Set(after.keys).subtracting(before.keys))")
    }

    @Test("a validation failure in phase 3 lists the objects; nothing is left")
    func validationFailure() throws {
        let strict = model { Entity("Contact") { Attribute("firstName", .string, optional: false); Attribute("identifier", .string) } }
        let data = #"{"Contact": [{"_id": "c1", "fullName": "Ada", "identifier": 1}, {"_id": "c2", "identifier": 2}]}"#
        let error = try expectFailure("sqlite", "atomic", mapping: Self.expressionMapping, to: strict, data: data)
        #expect(error.code == .validationFailed)
        #expect(error.phase == .validate)
        #expect(error.validationFailures.map(\.property) == ["firstName"])
        #expect(error.validationFailures.first?.objectID.primaryKey == 2)
    }

    @Test("a compiled copy whose value does not fit the destination type names mapping, phase and source object", arguments: pairs)
    func compiledCoercionFailure(_ source: String, _ destination: String) throws {
        let narrow = model { Entity("Contact") { Attribute("fullName", .string); Attribute("identifier", .integer16) } }
        let mapping = MappingModel(entityMappings: [
            EntityMapping(name: "ContactToContact", kind: .copy, sourceEntity: "Contact", destinationEntity: "Contact",
                          attributeMappings: ["fullName": .source("fullName"), "identifier": .source("identifier")]),
        ])
        let data = #"{"Contact": [{"_id": "c1", "identifier": 1}, {"_id": "c2", "identifier": 100000}]}"#
        let error = try expectFailure(source, destination, mapping: mapping, to: narrow, data: data)
        #expect(error.code == .expression)
        #expect(error.mapping == "ContactToContact")
        #expect(error.phase == .createObjects)
        #expect(error.sourceObject == ObjectKey("Contact", 2))
        #expect(error.description.contains("100000"))
    }

    @Test("a compiled function of source attributes gives the record path's values, and a failure names its source object", arguments: pairs)
    func compiledFunctionCall(_ source: String, _ destination: String) throws {
        let shouting = model { Entity("Contact") { Attribute("fullName", .string); Attribute("identifier", .integer64); Attribute("code", .string) } }
        func mapping(_ code: MappingExpression) -> MappingModel {
            MappingModel(entityMappings: [
                EntityMapping(name: "ContactToContact", kind: .transform, sourceEntity: "Contact", destinationEntity: "Contact",
                              attributeMappings: ["fullName": .call("uppercase", [.source("fullName")]), "identifier": .source("identifier"),
                                                  "code": code]),
            ])
        }
        let data = #"{"Contact": [{"_id": "c1", "fullName": "Zoë Ada", "identifier": 7}, {"_id": "c2", "fullName": "bo", "identifier": 12}]}"#
        let document = try migrate(contactV1, shouting, mapping: mapping(.call("join", [.constant(.string("-")), .source("fullName"), .constant(.string("x"))])),
                                   data: data, from: source, to: destination)
        let contacts = (document["Contact"] ?? []).sorted { ($0["identifier"] as? Int ?? 0) < ($1["identifier"] as? Int ?? 0) }
        #expect(contacts.map { $0["fullName"] as? String } == ["ZOË ADA", "BO"])
        #expect(contacts.map { $0["code"] as? String } == ["Zoë Ada-x", "bo-x"])
        let failing = MappingModel(entityMappings: [
            EntityMapping(name: "ContactToContact", kind: .transform, sourceEntity: "Contact", destinationEntity: "Contact",
                          attributeMappings: ["fullName": .call("toInteger", [.source("fullName")])]),
        ])
        let narrow = model { Entity("Contact") { Attribute("fullName", .integer64) } }
        let error = try expectFailure(source, destination, mapping: failing, to: narrow,
                                      data: #"{"Contact": [{"_id": "c1", "fullName": "12"}, {"_id": "c2", "fullName": "twelve"}]}"#)
        #expect(error.code == .expression)
        #expect(error.mapping == "ContactToContact" && error.phase == .createObjects)
        #expect(error.sourceObject == ObjectKey("Contact", 2))
    }

    @Test("phase 3 of a compiled mapping checks relationships only, and finds a missing required one", arguments: pairs)
    func compiledRequiredRelationship(_ source: String, _ destination: String) throws {
        func blog(authorRequired: Bool) -> ManagedObjectModel {
            model {
                Entity("Post") { Attribute("title", .string); Relationship("author", to: "Person", inverse: "posts", optional: !authorRequired) }
                Entity("Person") { Attribute("name", .string); Relationship("posts", to: "Post", inverse: "author", toMany: true) }
            }
        }
        let mapping = MappingModel(entityMappings: [
            EntityMapping(name: "PostToPost", kind: .copy, sourceEntity: "Post", destinationEntity: "Post",
                          attributeMappings: ["title": .source("title")], relationshipMappings: ["author": .source("author")]),
            EntityMapping(name: "PersonToPerson", kind: .copy, sourceEntity: "Person", destinationEntity: "Person",
                          attributeMappings: ["name": .source("name")], relationshipMappings: ["posts": .source("posts")]),
        ])
        let data = #"{"Person": [{"_id": "ann", "name": "Ann"}], "Post": [{"_id": "p1", "title": "Hi", "author": "ann"}, {"_id": "p2", "title": "Orphan"}]}"#
        let error = try #require(throws: MigrationError.self) {
            _ = try migrate(blog(authorRequired: false), blog(authorRequired: true), mapping: mapping, data: data, from: source, to: destination)
        }
        #expect(error.code == .validationFailed)
        #expect(error.validationFailures.map(\.property) == ["author"])
        #expect(error.validationFailures.map(\.rule) == [.required])
        #expect(error.validationFailures.first?.objectID.entityName == "Post")
    }

    @Test("a store made with another model is refused before anything is written")
    func wrongSource() throws {
        let workspace = try Workspace()
        let from = workspace.location("v1", "sqlite"), to = workspace.location("v2", "sqlite")
        try makeStore("sqlite", at: from, model: contactV2, json: "{}")
        let manager = MigrationManager(sourceModel: contactV1, destinationModel: contactV2, mapping: Self.expressionMapping)
        #expect(throws: MigrationError.self) { try manager.migrateStore(at: from, type: Backends.type("sqlite"), to: to, type: Backends.type("sqlite")) }
        #expect(!FileManager.default.fileExists(atPath: to.path))
    }

    @Test("a malformed mapping is refused before anything is written", arguments: [
        EntityMapping(name: "M", kind: .custom, sourceEntity: "Contact", destinationEntity: "Contact", policyName: "NotRegistered"),
        EntityMapping(name: "M", kind: .copy, sourceEntity: "Nobody", destinationEntity: "Contact"),
        EntityMapping(name: "M", kind: .copy, sourceEntity: "Contact", destinationEntity: "Nobody"),
        EntityMapping(name: "M", kind: .copy, sourceEntity: "Contact", destinationEntity: "Contact", destinationVersionHash: Data(count: 32)),
    ])
    func malformed(_ entityMapping: EntityMapping) throws {
        let workspace = try Workspace()
        let from = workspace.location("v1", "sqlite"), to = workspace.location("v2", "sqlite")
        try makeStore("sqlite", at: from, model: contactV1, json: contacts)
        let manager = MigrationManager(sourceModel: contactV1, destinationModel: contactV2, mapping: MappingModel(entityMappings: [entityMapping]),
                                       policies: PolicyRegistry())
        do {
            try manager.migrateStore(at: from, type: Backends.type("sqlite"), to: to, type: Backends.type("sqlite"))
            Issue.record("a malformed mapping ran")
        } catch let error as MigrationError {
            #expect(error.code == .invalidMapping)
            #expect(error.mapping == "M")
        }
        #expect(!FileManager.default.fileExists(atPath: to.path))
    }

    @Test("progress is an async sequence too")
    func progressSequence() async throws {
        let workspace = try Workspace()
        let from = workspace.location("v1", "sqlite"), to = workspace.location("v2", "memory")
        try makeStore("sqlite", at: from, model: contactV1, json: Self.bigData(60))
        let manager = MigrationManager(sourceModel: contactV1, destinationModel: contactV2, mapping: Self.expressionMapping, batchSize: 20)
        let collector = Task { var all: [MigrationProgress] = []; for await p in manager.progressUpdates { all.append(p) }; return all }
        try manager.migrateStore(at: from, type: Backends.type("sqlite"), to: to, type: Backends.type("memory"))
        let all = await collector.value
        #expect(all.filter { $0.phase == .createObjects }.map(\.completed) == [0, 20, 40, 60])
        #expect(all.last?.phase == .validate)
        #expect(all.last?.completed == 60)
    }
}

@Suite("Mapping files")
struct MappingFormatTests {
    @Test("a mapping written as data migrates like the same mapping in code; it round-trips")
    func fromData() throws {
        let text = """
        {"format": "objectstore-mapping", "formatVersion": 1, "entityMappings": [
          {"name": "ContactToContact", "kind": "transform", "source": "Contact", "destination": "Contact",
           "sourceVersionHash": "\(contactV1.versionHashes["Contact"]!.hexString)",
           "attributes": {"firstName": "before($source.fullName, ' ')", "lastName": "after($source.fullName, ' ')",
                          "identifier": "toString($source.identifier)"},
           "filter": "identifier != 7"}]}
        """
        let mapping = try MappingFormat.decode(Data(text.utf8))
        let doc = try migrate(contactV1, contactV2, mapping: mapping, data: contacts)
        #expect(doc["Contact"]?.map { $0["firstName"] as? String } == ["Ada", "Mary", nil])
        let again = try MappingFormat.decode(try MappingFormat.encode(mapping))
        #expect(try MappingFormat.encode(again) == MappingFormat.encode(mapping))
        #expect(again.entityMappings.first?.sourceFilter == mapping.entityMappings.first?.sourceFilter)
    }

    @Test("mistakes name the mapping and the property", arguments: [
        (#"{"format": "objectstore-mapping", "formatVersion": 1, "entityMappings": [{"name": "M", "kind": "copy", "attributes": {"a": "nosuch($source.a)"}}]}"#, "M.a"),
        (#"{"format": "objectstore-mapping", "formatVersion": 1, "entityMappings": [{"name": "M", "kind": "copy", "filter": "a >"}]}"#, "M.filter"),
        (#"{"format": "objectstore-mapping", "formatVersion": 1, "entityMappings": [{"name": "M", "kind": "sideways"}]}"#, "not a mapping document"),
        (#"{"format": "objectstore-mapping", "formatVersion": 1, "entityMappings": [{"name": "M", "kind": "copy", "sourceVersionHash": "abc"}]}"#, "version hash"),
        (#"{"format": "other", "formatVersion": 1, "entityMappings": []}"#, "is not objectstore-mapping"),
    ])
    func mistakes(_ text: String, _ fragment: String) {
        do {
            _ = try MappingFormat.decode(Data(text.utf8), file: "m.json")
            Issue.record("accepted: \(text)")
        } catch let error as MigrationError {
            #expect(error.code == .invalidMapping)
            #expect(error.message.contains(fragment), "\(error.message)")
            #expect(error.message.contains("m.json"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("a Swift closure cannot be written as data")
    func closures() {
        let mapping = MappingModel(entityMappings: [
            EntityMapping(name: "M", kind: .transform, sourceEntity: "Contact", destinationEntity: "Contact",
                          attributeMappings: ["firstName": .custom { _ in .string("x") }]),
        ])
        #expect(throws: MigrationError.self) { try MappingFormat.encode(mapping) }
    }
}
