import Foundation
import ObjectModel
import ObjectStore
import Testing

// The checks. Each builds what it needs in fresh stores and records its
// failures with `#expect`; graph-consistent change sets are built by hand, both
// sides of every inverse, as the contract requires.

private func key(_ entity: String, _ pk: Int64) -> ObjectKey { ObjectKey(entity, pk) }

func newKey(_ store: any PersistentStore, _ entity: String) throws -> ObjectKey {
    ObjectKey(entity, try store.allocatePrimaryKeys(entity: entity, count: 1).lowerBound)
}

private func names(_ records: [ObjectRecord], _ attribute: String = "name") -> [String] {
    records.map { record in
        if case .string(let s)? = record.attributes[attribute] { return s }
        return "?"
    }
}

private func fetchAll(_ store: any PersistentStore, _ entity: String, where format: String? = nil,
                 sort: [ObjectSortDescriptor] = []) throws -> [ObjectRecord] {
    try store.fetch(FetchRequest(entity: entity, predicate: try format.map { try ObjectPredicate($0) }, sortDescriptors: sort))
}

/// Values identical: doubles and dates bit for bit (so -0.0 is not 0.0), any NaN equal to any NaN.
func same(_ a: Value?, _ b: Value?) -> Bool {
    func bits(_ v: Double) -> UInt64 { v.isNaN ? Double.nan.bitPattern : v.bitPattern }
    if case .double(let x)? = a, case .double(let y)? = b { return bits(x) == bits(y) }
    if case .date(let x)? = a, case .date(let y)? = b { return bits(x.timeIntervalSinceReferenceDate) == bits(y.timeIntervalSinceReferenceDate) }
    return a == b
}

extension StoreConformance {
    func crud(_ scope: Scope) throws {
        let store = try scope.openStore()
        let ada = try newKey(store, "Person")
        let bob = try newKey(store, "Person")
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: ada, attributes: ["name": .string("Ada"), "age": .integer(36)]),
            ObjectRecord(key: bob, attributes: ["name": .string("Bob")]),
        ]))
        #expect(try store.count(FetchRequest(entity: "Person")) == 2)
        let read = try #require(try store.record(for: ada))
        #expect(read.attributes == ["name": .string("Ada"), "age": .integer(36)])
        #expect(read.version == 1)

        try store.save(ChangeSet(updated: [ObjectUpdate(key: ada, attributes: ["age": .integer(37), "nickname": .string("Countess")])]))
        let updated = try #require(try store.record(for: ada))
        #expect(updated.attributes["age"] == .integer(37))
        #expect(updated.attributes["nickname"] == .string("Countess"))
        #expect(updated.version == 2)

        try store.save(ChangeSet(updated: [ObjectUpdate(key: ada, attributes: ["nickname": Value?.none])]))
        #expect(try store.record(for: ada)?.attributes["nickname"] == nil)

        try store.save(ChangeSet(deleted: [ObjectDeletion(key: bob)]))
        #expect(try store.record(for: bob) == nil)
        #expect(names(try fetchAll(store, "Person")) == ["Ada"])
        #expect(try store.record(for: key("Person", 999)) == nil)
        // The keys whose objects are there, as `record(for:)` finds them: a deleted one and one never made are not.
        #expect(try store.existingKeys(among: [ada, bob, key("Person", 999), ada, key("Pet", ada.primaryKey)]) == [ada])
        #expect(try store.existingKeys(among: []).isEmpty)
    }

    static let sampleItem: [String: Value] = [
        "name": .string("sample"),
        "i16": .integer(-12),
        "i32": .integer(123_456),
        "i64": .integer(9_000_000_000),
        "decimal": .decimal(Decimal(string: "1234.5678")!),
        "double": .double(3.141592653589793),
        "float": .double(Double(Float(2.5))),
        "string": .string("héllo wörld"),
        "flag": .boolean(true),
        "date": .date(Date(timeIntervalSinceReferenceDate: 700_000_000.25)),
        "data": .data(Data([0, 1, 2, 254, 255])),
        "uuid": .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!),
        "uri": .uri(URL(string: "https://example.com/a?b=c#d")!),
        "payload": .data(Data("{\"k\":[1,2]}".utf8)),
    ]

    func attributeTypes(_ scope: Scope) throws {
        let store = try scope.openStore()
        let item = try newKey(store, "Item")
        try store.save(ChangeSet(inserted: [ObjectRecord(key: item, attributes: Self.sampleItem)]))
        let read = try #require(try store.record(for: item))
        for (name, value) in Self.sampleItem {
            #expect(read.attributes[name] == value, "attribute \(name)")
        }
        #expect(read.attributes.count == Self.sampleItem.count)
        let empty = try newKey(store, "Item")
        try store.save(ChangeSet(inserted: [ObjectRecord(key: empty)]))
        #expect(try store.record(for: empty)?.attributes.isEmpty == true)
    }

    static let extremeValues: [[String: Value]] = [
        ["name": .string("max"), "i16": .integer(Int64(Int16.max)), "i32": .integer(Int64(Int32.max)), "i64": .integer(Int64.max),
         "double": .double(.greatestFiniteMagnitude), "float": .double(Double(Float.greatestFiniteMagnitude)),
         "decimal": .decimal(Decimal(string: "99999999999999999999999999999.999999")!),
         "date": .date(Date(timeIntervalSinceReferenceDate: 3e11)), "string": .string(String(repeating: "long ", count: 20_000)),
         "data": .data(Data((0..<200_000).map { UInt8($0 % 251) }))],
        ["name": .string("min"), "i16": .integer(Int64(Int16.min)), "i32": .integer(Int64(Int32.min)), "i64": .integer(Int64.min),
         "double": .double(-.greatestFiniteMagnitude), "float": .double(Double(-Float.leastNonzeroMagnitude)),
         "decimal": .decimal(Decimal(string: "-0.000000000000000000001")!),
         "date": .date(Date(timeIntervalSinceReferenceDate: -3e11)), "string": .string(""), "data": .data(Data())],
        ["name": .string("nan"), "double": .double(.nan), "float": .double(.nan), "i64": .integer(0),
         "date": .date(Date.distantPast), "decimal": .decimal(0)],
        ["name": .string("inf"), "double": .double(.infinity), "float": .double(-.infinity),
         "date": .date(Date.distantFuture), "flag": .boolean(false)],
        ["name": .string("unicode"), "string": .string("Zoë 👩‍👩‍👧 ∑ 日本語 \u{202E}rtl \u{0}nul"),
         "double": .double(-0.0), "float": .double(Double(Float.leastNonzeroMagnitude))],
        // U+FFFF (PostgreSQL's marker), and characters whose UTF-8 begins as its does (fullwidth forms, EF BC A1).
        ["name": .string("noncharacters"), "string": .string("\u{FFFF}\u{FFFF}0 ＡＢ \u{FFFE}\u{FFFF}\u{0}\t\\ \r\n")],
        ["name": .string("signed zeros"), "float": .double(-0.0), "date": .date(Date(timeIntervalSinceReferenceDate: -0.0)),
         "double": .double(.leastNonzeroMagnitude)],
        ["name": .string("nan date"), "date": .date(Date(timeIntervalSinceReferenceDate: .nan))],
    ]

    func extremes(_ scope: Scope) throws {
        let store = try scope.openStore()
        var keys: [ObjectKey] = []
        var records: [ObjectRecord] = []
        for values in Self.extremeValues {
            let k = try newKey(store, "Item")
            keys.append(k)
            records.append(ObjectRecord(key: k, attributes: values))
        }
        try store.save(ChangeSet(inserted: records))
        for (k, values) in zip(keys, Self.extremeValues) {
            let read = try #require(try store.record(for: k))
            for (name, value) in values {
                #expect(same(read.attributes[name], value), "\(values["name"]!) \(name)")
            }
        }
        let minusZero = try #require(try store.record(for: keys[4])?.attributes["double"])
        if case .double(let v) = minusZero { #expect(v.sign == .minus && v == 0, "-0.0 keeps its sign") }
    }

    func toOne(_ scope: Scope) throws {
        let store = try scope.openStore()
        let ada = try newKey(store, "Person")
        let bob = try newKey(store, "Person")
        let rex = try newKey(store, "Pet")
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: ada, attributes: ["name": .string("Ada")], toMany: ["pets": [rex]]),
            ObjectRecord(key: bob, attributes: ["name": .string("Bob")]),
            ObjectRecord(key: rex, attributes: ["name": .string("Rex")], toOne: ["owner": ada]),
        ]))
        #expect(try store.record(for: rex)?.toOne["owner"] == ada)
        #expect(try store.relatedKeys(of: rex, relationship: "owner") == [ada])
        #expect(try store.relatedKeys(of: ada, relationship: "pets") == [rex])
        // Move Rex to Bob: both sides of the inverse change.
        try store.save(ChangeSet(updated: [
            ObjectUpdate(key: rex, toOne: ["owner": bob]),
            ObjectUpdate(key: ada, toMany: ["pets": []]),
            ObjectUpdate(key: bob, toMany: ["pets": [rex]]),
        ]))
        #expect(try store.record(for: rex)?.toOne["owner"] == bob)
        #expect(try store.relatedKeys(of: ada, relationship: "pets").isEmpty)
        #expect(try store.relatedKeys(of: bob, relationship: "pets") == [rex])
        #expect(names(try fetchAll(store, "Pet", where: "owner.name == 'Bob'")) == ["Rex"])
        try store.save(ChangeSet(updated: [ObjectUpdate(key: rex, toOne: ["owner": ObjectKey?.none]), ObjectUpdate(key: bob, toMany: ["pets": []])]))
        #expect(try store.record(for: rex)?.toOne["owner"] == nil)
        #expect(try store.relatedKeys(of: rex, relationship: "owner").isEmpty)
        #expect(names(try fetchAll(store, "Pet", where: "owner == nil")) == ["Rex"])
    }

    func toMany(_ scope: Scope) throws {
        let store = try scope.openStore()
        let ada = try newKey(store, "Person")
        let pets = try (0..<3).map { _ in try newKey(store, "Pet") }
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: ada, attributes: ["name": .string("Ada")], toMany: ["pets": [pets[2], pets[0], pets[1]]]),
        ] + pets.enumerated().map { i, pet in
            ObjectRecord(key: pet, attributes: ["name": .string("pet\(i)")], toOne: ["owner": ada])
        }))
        #expect(try store.relatedKeys(of: ada, relationship: "pets") == pets.sorted())
        try store.save(ChangeSet(updated: [
            ObjectUpdate(key: ada, toMany: ["pets": [pets[0], pets[2]]]),
            ObjectUpdate(key: pets[1], toOne: ["owner": ObjectKey?.none]),
        ]))
        #expect(try store.relatedKeys(of: ada, relationship: "pets") == [pets[0], pets[2]])
        #expect(names(try fetchAll(store, "Person", where: "pets.@count == 2")) == ["Ada"])
        // Deleting a pet (and detaching it from its owner) leaves the rest.
        try store.save(ChangeSet(updated: [ObjectUpdate(key: ada, toMany: ["pets": [pets[2]]])], deleted: [ObjectDeletion(key: pets[0])]))
        #expect(try store.relatedKeys(of: ada, relationship: "pets") == [pets[2]])
    }

    func ordered(_ scope: Scope) throws {
        let store = try scope.openStore()
        let list = try newKey(store, "Playlist")
        let tracks = try (0..<4).map { _ in try newKey(store, "Track") }
        let order = [tracks[2], tracks[0], tracks[3], tracks[1]]
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: list, attributes: ["name": .string("mix")], toMany: ["tracks": order]),
        ] + tracks.enumerated().map { i, t in ObjectRecord(key: t, attributes: ["title": .string("t\(i)")], toOne: ["playlist": list]) }))
        #expect(try store.relatedKeys(of: list, relationship: "tracks") == order)
        let reordered = [tracks[1], tracks[3], tracks[0], tracks[2]]
        try store.save(ChangeSet(updated: [ObjectUpdate(key: list, toMany: ["tracks": reordered])]))
        #expect(try store.relatedKeys(of: list, relationship: "tracks") == reordered)
        try store.save(ChangeSet(updated: [
            ObjectUpdate(key: list, toMany: ["tracks": [tracks[3], tracks[2]]]),
            ObjectUpdate(key: tracks[0], toOne: ["playlist": ObjectKey?.none]),
            ObjectUpdate(key: tracks[1], toOne: ["playlist": ObjectKey?.none]),
        ]))
        #expect(try store.relatedKeys(of: list, relationship: "tracks") == [tracks[3], tracks[2]])
    }

    func manyToMany(_ scope: Scope) throws {
        let store = try scope.openStore()
        let t1 = try newKey(store, "Track"), t2 = try newKey(store, "Track")
        let x = try newKey(store, "Tag"), y = try newKey(store, "Tag")
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: t1, attributes: ["title": .string("one")], toMany: ["tags": [x, y]]),
            ObjectRecord(key: t2, attributes: ["title": .string("two")], toMany: ["tags": [x]]),
            ObjectRecord(key: x, attributes: ["label": .string("x")], toMany: ["tracks": [t1, t2]]),
            ObjectRecord(key: y, attributes: ["label": .string("y")], toMany: ["tracks": [t1]]),
        ]))
        #expect(try store.relatedKeys(of: t1, relationship: "tags") == [x, y])
        #expect(try store.relatedKeys(of: x, relationship: "tracks") == [t1, t2])
        #expect(try store.relatedKeys(of: y, relationship: "tracks") == [t1])
        #expect(names(try fetchAll(store, "Track", where: "ANY tags.label == 'y'"), "title") == ["one"])
        #expect(names(try fetchAll(store, "Track", where: "ANY tags.label == 'x'"), "title") == ["one", "two"])
        try store.save(ChangeSet(updated: [
            ObjectUpdate(key: t1, toMany: ["tags": [y]]),
            ObjectUpdate(key: x, toMany: ["tracks": [t2]]),
        ]))
        #expect(try store.relatedKeys(of: t1, relationship: "tags") == [y])
        #expect(try store.relatedKeys(of: x, relationship: "tracks") == [t2])
    }

    func selfReferential(_ scope: Scope) throws {
        let store = try scope.openStore()
        let a = try newKey(store, "Person"), b = try newKey(store, "Person"), c = try newKey(store, "Person")
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: a, attributes: ["name": .string("A")], toOne: ["spouse": b],
                         toMany: ["friends": [b, c], "reports": [b, c]]),
            ObjectRecord(key: b, attributes: ["name": .string("B")], toOne: ["spouse": a, "manager": a], toMany: ["friends": [a]]),
            ObjectRecord(key: c, attributes: ["name": .string("C")], toOne: ["manager": a], toMany: ["friends": [a]]),
        ]))
        #expect(try store.record(for: a)?.toOne["spouse"] == b)
        #expect(try store.record(for: b)?.toOne["spouse"] == a)
        #expect(try store.relatedKeys(of: a, relationship: "friends") == [b, c])
        #expect(try store.relatedKeys(of: c, relationship: "friends") == [a])
        #expect(try store.relatedKeys(of: a, relationship: "reports") == [b, c])
        #expect(try store.record(for: c)?.toOne["manager"] == a)
        #expect(names(try fetchAll(store, "Person", where: "manager.spouse.name == 'B'", sort: [ObjectSortDescriptor("name")])) == ["B", "C"])
        #expect(names(try fetchAll(store, "Person", where: "spouse.spouse.name == 'A'")) == ["A"])
    }

    func inheritance(_ scope: Scope) throws {
        let store = try scope.openStore()
        let car = try newKey(store, "Car"), sports = try newKey(store, "SportsCar"), truck = try newKey(store, "Truck")
        #expect(Set([car.primaryKey, sports.primaryKey, truck.primaryKey]).count == 3, "keys are unique across a hierarchy")
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: car, attributes: ["wheels": .integer(4), "seats": .integer(5)]),
            ObjectRecord(key: sports, attributes: ["wheels": .integer(4), "seats": .integer(2), "topSpeed": .double(300)]),
            ObjectRecord(key: truck, attributes: ["wheels": .integer(6), "payload": .integer(9000)]),
        ]))
        #expect(Set(try fetchAll(store, "Vehicle").map(\.key)) == [car, sports, truck])
        #expect(Set(try fetchAll(store, "Car").map(\.key)) == [car, sports])
        #expect(try store.fetch(FetchRequest(entity: "Car", includesSubentities: false)).map(\.key) == [car])
        #expect(Set(try fetchAll(store, "Vehicle", where: "wheels == 4").map(\.key)) == [car, sports])
        #expect(try fetchAll(store, "Vehicle", where: "wheels > 4").map(\.key) == [truck])
        #expect(try store.count(FetchRequest(entity: "Vehicle")) == 3)
        #expect(try store.record(for: sports)?.attributes["topSpeed"] == .double(300))
        // A key names one entity: the same key under another entity of the hierarchy is no object.
        let named = [car, sports, truck, ObjectKey("Truck", car.primaryKey), ObjectKey("Car", sports.primaryKey), ObjectKey("SportsCar", truck.primaryKey)]
        #expect(try store.existingKeys(among: named) == Set(named.filter { (try? store.record(for: $0)) != nil }))
        #expect(try store.existingKeys(among: named) == [car, sports, truck])
        #expect(throws: StoreError.self) {
            try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Vehicle", 100), attributes: [:])]))
        }
        #expect(throws: StoreError.self) {
            try store.save(ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Truck", car.primaryKey), attributes: [:])]))
        }
    }

    /// People for the predicate and sort checks: (name, age, nickname).
    private func seedPeople(_ store: any PersistentStore) throws {
        let people: [(String, Int64, String?)] = [("Ada", 36, "Countess"), ("Bob", 25, nil), ("Chloé", 41, nil), ("dave", 30, nil), ("Eve", 19, nil)]
        let keys = try people.map { _ in try newKey(store, "Person") }
        let rex = try newKey(store, "Pet"), tom = try newKey(store, "Pet"), fido = try newKey(store, "Pet")
        var records = zip(people, keys).map { person, k in
            var attributes: [String: Value] = ["name": .string(person.0), "age": .integer(person.1)]
            if let nickname = person.2 { attributes["nickname"] = .string(nickname) }
            return ObjectRecord(key: k, attributes: attributes)
        }
        records[0].toMany = ["pets": [rex, tom], "reports": [keys[1]]]
        records[1].toMany = ["pets": [fido]]
        records[1].toOne = ["manager": keys[0]]
        records += [
            ObjectRecord(key: rex, attributes: ["name": .string("Rex")], toOne: ["owner": keys[0]]),
            ObjectRecord(key: tom, attributes: ["name": .string("Tom")], toOne: ["owner": keys[0]]),
            ObjectRecord(key: fido, attributes: ["name": .string("Fido")], toOne: ["owner": keys[1]]),
        ]
        try store.save(ChangeSet(inserted: records))
    }

    /// Every operator, with the people each one selects.
    public static let predicateCases: [(String, [String])] = [
        ("age == 36", ["Ada"]), ("age = 36", ["Ada"]), ("age == 36.0", ["Ada"]),
        ("age != 36", ["Bob", "Chloé", "dave", "Eve"]), ("age <> 36", ["Bob", "Chloé", "dave", "Eve"]),
        ("age < 25", ["Eve"]), ("age <= 25", ["Bob", "Eve"]), ("age =< 25", ["Bob", "Eve"]),
        ("age > 36", ["Chloé"]), ("age >= 36", ["Ada", "Chloé"]), ("age => 36", ["Ada", "Chloé"]),
        ("name BEGINSWITH 'D'", []), ("name BEGINSWITH[c] 'd'", ["dave"]),
        ("name ENDSWITH 'e'", ["dave", "Eve"]), ("name ENDSWITH[d] 'e'", ["Chloé", "dave", "Eve"]),
        ("name CONTAINS 'o'", ["Bob", "Chloé"]), ("name CONTAINS[c] 'A'", ["Ada", "dave"]),
        ("name LIKE 'A*'", ["Ada"]), ("name LIKE '?ob'", ["Bob"]), ("name LIKE[c] '*E'", ["dave", "Eve"]),
        ("name MATCHES '[A-C].*'", ["Ada", "Bob", "Chloé"]), ("name MATCHES[c] 'D.*'", ["dave"]),
        ("name ==[cd] 'chloe'", ["Chloé"]), ("name ==[c] 'ADA'", ["Ada"]), ("name == 'ada'", []),
        ("name IN {'Ada', 'Eve', 'Zed'}", ["Ada", "Eve"]), ("NOT name IN {'Ada', 'Eve'}", ["Bob", "Chloé", "dave"]),
        ("name NOT IN {'Ada', 'Eve'}", ["Bob", "Chloé", "dave"]),
        ("age BETWEEN {25, 36}", ["Ada", "Bob", "dave"]),
        ("age > 20 AND age < 40", ["Ada", "Bob", "dave"]), ("age > 20 && age < 40", ["Ada", "Bob", "dave"]),
        ("age < 20 OR age > 40", ["Chloé", "Eve"]), ("age < 20 || age > 40", ["Chloé", "Eve"]),
        ("NOT (age > 20)", ["Eve"]), ("!(age > 20)", ["Eve"]),
        ("nickname == nil", ["Bob", "Chloé", "dave", "Eve"]), ("nickname != nil", ["Ada"]), ("nickname == NULL", ["Bob", "Chloé", "dave", "Eve"]),
        ("nickname > 'A'", ["Ada"]),
        ("manager.name == 'Ada'", ["Bob"]), ("manager == nil", ["Ada", "Chloé", "dave", "Eve"]),
        ("ANY pets.name == 'Rex'", ["Ada"]), ("SOME pets.name == 'Fido'", ["Bob"]), ("pets.name == 'Tom'", ["Ada"]),
        ("ALL pets.name BEGINSWITH 'F'", ["Bob", "Chloé", "dave", "Eve"]),
        ("NONE pets.name == 'Rex'", ["Bob", "Chloé", "dave", "Eve"]),
        ("pets.@count == 2", ["Ada"]), ("pets.@count > 0", ["Ada", "Bob"]), ("reports.@count == 1", ["Ada"]),
        ("TRUEPREDICATE", ["Ada", "Bob", "Chloé", "dave", "Eve"]), ("FALSEPREDICATE", []),
        ("(age > 30 OR name == 'Eve') AND NOT nickname != nil", ["Chloé", "Eve"]),
    ]

    func predicates(_ scope: Scope) throws {
        let store = try scope.openStore()
        try seedPeople(store)
        for (format, expected) in Self.predicateCases {
            let found = names(try fetchAll(store, "Person", where: format)).sorted()
            #expect(found == expected.sorted(), "\(format)")
            #expect(try store.count(FetchRequest(entity: "Person", predicate: try ObjectPredicate(format))) == expected.count, "count \(format)")
        }
        #expect(throws: StoreError.self) { _ = try fetchAll(store, "Person", where: "shoeSize > 3") }
    }

    func sortLimitOffset(_ scope: Scope) throws {
        let store = try scope.openStore()
        try seedPeople(store)
        #expect(names(try fetchAll(store, "Person", sort: [ObjectSortDescriptor("age", ascending: false)])) == ["Chloé", "Ada", "dave", "Bob", "Eve"])
        #expect(names(try fetchAll(store, "Person", sort: [ObjectSortDescriptor("name")])) == ["Ada", "Bob", "Chloé", "Eve", "dave"])
        // Missing values first ascending, last descending; ties in key order.
        #expect(names(try fetchAll(store, "Person", sort: [ObjectSortDescriptor("nickname")])) == ["Bob", "Chloé", "dave", "Eve", "Ada"])
        #expect(names(try fetchAll(store, "Person", sort: [ObjectSortDescriptor("nickname", ascending: false), ObjectSortDescriptor("age")])) == ["Ada", "Eve", "Bob", "dave", "Chloé"])
        #expect(names(try fetchAll(store, "Person", where: "age > 20", sort: [ObjectSortDescriptor("manager.name"), ObjectSortDescriptor("name", ascending: false)])) == ["dave", "Chloé", "Ada", "Bob"])
        var request = FetchRequest(entity: "Person", sortDescriptors: [ObjectSortDescriptor("age")], fetchLimit: 2, fetchOffset: 1)
        #expect(names(try store.fetch(request)) == ["Bob", "dave"])
        #expect(try store.count(request) == 2)
        request.fetchOffset = 4
        #expect(names(try store.fetch(request)) == ["Chloé"])
        #expect(try store.count(request) == 1)
        request.fetchOffset = 10
        #expect(try store.fetch(request).isEmpty)
        request = FetchRequest(entity: "Person", fetchLimit: 0)
        #expect(try store.fetch(request).isEmpty)
        #expect(throws: StoreError.self) { _ = try fetchAll(store, "Person", sort: [ObjectSortDescriptor("pets.name")]) }
    }

    func metadata(_ scope: Scope) throws {
        let url = try scope.newURL()
        let store = try scope.openStore(at: url)
        var metadata = try store.metadata()
        #expect(metadata.storeType?.lowercased() == type.name.lowercased())
        #expect(metadata.storeUUID == store.identifier)
        #expect(metadata.versionHashes == Self.model.versionHashes)
        #expect(metadata.versionIdentifiers == ["conformance-1"])
        let custom: [String: PropertyListValue] = [
            "app.string": .string("héllo"), "app.int": .integer(-42), "app.real": .real(2.5), "app.bool": .boolean(true),
            "app.date": .date(Date(timeIntervalSinceReferenceDate: 12345)), "app.data": .data(Data([1, 2, 3])),
            "app.array": .array([.string("a"), .integer(1)]), "app.dict": .dictionary(["k": .string("v"), "n": .integer(7)]),
        ]
        for (k, v) in custom { metadata[k] = v }
        try store.setMetadata(metadata)
        try store.close()

        let read = try type.readMetadata(at: url)
        for (k, v) in custom { #expect(read[k] == v, "metadata key \(k)") }
        #expect(read.storeUUID == store.identifier)
        #expect(read.versionHashes == Self.model.versionHashes)
        #expect(try read.embeddedModel() == Self.model)
        #expect(read.storeType?.lowercased() == type.name.lowercased())

        var changed = read
        changed["app.added"] = .string("later")
        try type.writeMetadata(changed, at: url)
        let reopened = try scope.openStore(at: url)
        #expect(try reopened.metadata()["app.added"] == .string("later"))
        #expect(reopened.identifier == store.identifier)
        #expect(throws: StoreError.self) { _ = try type.readMetadata(at: try scope.newURL()) }
    }

    func incompatible(_ scope: Scope) throws {
        let url = try scope.newURL()
        try scope.openStore(at: url).close()
        var entities = Self.model.entities
        let person = entities.firstIndex { $0.name == "Person" }!
        entities[person].attributes.append(Attribute("shoeSize", .integer16))
        entities.append(Entity("Extra", attributes: [Attribute("x", .string)]))
        let changed = try ManagedObjectModel(entities: entities)
        do {
            _ = try scope.openStore(at: url, model: changed)
            Issue.record("a store made with another model was opened")
        } catch let error as StoreError {
            #expect(error.code == .incompatibleModel)
            #expect(error.compatibility?.changedEntities == ["Person"])
            #expect(error.compatibility?.onlyInModel == ["Extra"])
        }
    }

    func keysNeverReused(_ scope: Scope) throws {
        let url = try scope.newURL()
        var store = try scope.openStore(at: url)
        let keys = try (0..<3).map { _ in try newKey(store, "Person") }
        try store.save(ChangeSet(inserted: keys.map { ObjectRecord(key: $0, attributes: ["name": .string("p")]) }))
        try store.save(ChangeSet(deleted: [ObjectDeletion(key: keys[2]), ObjectDeletion(key: keys[1])]))
        let next = try newKey(store, "Person")
        #expect(next.primaryKey > keys[2].primaryKey)
        let range = try store.allocatePrimaryKeys(entity: "Person", count: 10)
        #expect(range.count == 10 && range.lowerBound > next.primaryKey)
        try store.close()
        store = try scope.openStore(at: url)
        #expect(try store.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound > range.upperBound)
        // A counter near the top of Int64: the last keys are handed out, then a refusal (no wrap, no trap).
        let top = ObjectKey("Person", Int64.max - 2)
        try store.bulkInsert([ObjectRecord(key: top, attributes: ["name": .string("top")])], checkingReferences: true)
        #expect(try store.lastAllocatedKey(entity: "Person") == Int64.max - 2)
        #expect(try store.allocatePrimaryKeys(entity: "Person", count: 2) == (Int64.max - 1)...Int64.max)
        #expect { try store.allocatePrimaryKeys(entity: "Person", count: 1) } throws: { ($0 as? StoreError)?.code == .invalidChange }
        #expect(try store.lastAllocatedKey(entity: "Person") == Int64.max)
        try store.close()
    }

    func failedSave(_ scope: Scope) throws {
        let store = try scope.openStore()
        let ada = try newKey(store, "Person")
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ada, attributes: ["name": .string("Ada")])]))
        let bob = try newKey(store, "Person")
        let attempts: [ChangeSet] = [
            ChangeSet(inserted: [ObjectRecord(key: bob, attributes: ["name": .string("Bob")])],
                      updated: [ObjectUpdate(key: ObjectKey("Person", 9999), attributes: ["age": .integer(1)])]),
            ChangeSet(inserted: [ObjectRecord(key: bob, attributes: ["name": .string("Bob")]), ObjectRecord(key: ada, attributes: ["name": .string("dup")])]),
            ChangeSet(inserted: [ObjectRecord(key: bob, attributes: ["name": .string("Bob")])], deleted: [ObjectDeletion(key: ObjectKey("Pet", 77))]),
            ChangeSet(inserted: [ObjectRecord(key: bob, attributes: ["name": .string("Bob"), "shoeSize": .integer(3)])]),
            ChangeSet(inserted: [ObjectRecord(key: bob, attributes: ["name": .integer(3)])]),
            ChangeSet(inserted: [ObjectRecord(key: bob, attributes: ["name": .string("Bob")], toMany: ["pets": [ObjectKey("Pet", 555)]])]),
            ChangeSet(inserted: [ObjectRecord(key: bob, attributes: ["name": .string("Bob")])],
                      updated: [ObjectUpdate(key: ada, expectedVersion: 5, attributes: ["age": .integer(1)])]),
        ]
        for (i, attempt) in attempts.enumerated() {
            #expect(throws: StoreError.self, "attempt \(i)") { try store.save(attempt) }
            #expect(try store.count(FetchRequest(entity: "Person")) == 1, "attempt \(i)")
            #expect(try store.record(for: bob) == nil, "attempt \(i)")
            #expect(try store.record(for: ada)?.attributes == ["name": .string("Ada")], "attempt \(i)")
            #expect(try store.record(for: ada)?.version == 1, "attempt \(i)")
        }
    }

    func locking(_ scope: Scope) throws {
        let store = try scope.openStore()
        let ada = try newKey(store, "Person")
        try store.save(ChangeSet(inserted: [ObjectRecord(key: ada, attributes: ["name": .string("Ada")])]))
        try store.save(ChangeSet(updated: [ObjectUpdate(key: ada, expectedVersion: 1, attributes: ["age": .integer(1)])]))
        do {
            try store.save(ChangeSet(updated: [ObjectUpdate(key: ada, expectedVersion: 1, attributes: ["age": .integer(2)])]))
            Issue.record("a stale update was saved")
        } catch let error as StoreError {
            #expect(error.code == .conflict)
            #expect(error.objectID?.key == ada)
        }
        #expect(throws: StoreError.self) { try store.save(ChangeSet(deleted: [ObjectDeletion(key: ada, expectedVersion: 1)])) }
        #expect(try store.record(for: ada)?.attributes["age"] == .integer(1))
        #expect(try store.record(for: ada)?.version == 2)
        // A change computed from a stale object is a conflict whatever else is wrong with it, on every
        // backend: a target deleted meanwhile, a value of the wrong type, an unknown attribute, an
        // abstract insert beside it, a stale delete.
        let pet = try newKey(store, "Pet")
        try store.save(ChangeSet(inserted: [ObjectRecord(key: pet, attributes: ["name": .string("Rex")])]))
        let gone = try newKey(store, "Person")
        let stale: [ChangeSet] = [
            ChangeSet(updated: [ObjectUpdate(key: pet, expectedVersion: 9, toOne: ["owner": gone])]),
            ChangeSet(updated: [ObjectUpdate(key: ada, expectedVersion: 1, attributes: ["age": .string("old")])]),
            ChangeSet(updated: [ObjectUpdate(key: ada, expectedVersion: 1, attributes: ["unknown": .integer(1)])]),
            ChangeSet(inserted: [ObjectRecord(key: ObjectKey("Vehicle", 77))], deleted: [ObjectDeletion(key: ada, expectedVersion: 1)]),
        ]
        for (i, change) in stale.enumerated() {
            do {
                try store.save(change)
                Issue.record("stale change \(i) was saved")
            } catch let error as StoreError {
                #expect(error.code == .conflict, "stale change \(i): \(error)")
            }
        }
        #expect(try store.record(for: pet)?.toOne["owner"] == nil)
        try store.save(ChangeSet(deleted: [ObjectDeletion(key: pet, expectedVersion: 1)]))
        try store.save(ChangeSet(deleted: [ObjectDeletion(key: ada, expectedVersion: 2)]))
        #expect(try store.record(for: ada) == nil)
    }

    func streaming(_ scope: Scope) throws {
        let store = try scope.openStore()
        let total = 10_000
        let range = try store.allocatePrimaryKeys(entity: "Item", count: total)
        var pending: [ObjectRecord] = []
        for pk in range {
            pending.append(ObjectRecord(key: ObjectKey("Item", pk), attributes: ["i64": .integer(pk), "name": .string("item \(pk)")]))
            if pending.count == 1_000 { try store.bulkInsert(pending); pending = [] }
        }
        try store.save(ChangeSet(inserted: [ObjectRecord(key: try newKey(store, "Pet"), attributes: ["name": .string("not an item")])]))
        var seen = 0
        var last: Int64 = 0
        var batches = 0
        for batch in store.batches(of: "Item", size: 999) {
            let records = try batch.get()
            #expect(records.count <= 999)
            for record in records {
                #expect(record.key.primaryKey > last)
                #expect(record.key.entity == "Item")
                #expect(record.attributes["i64"] == .integer(record.key.primaryKey))
                last = record.key.primaryKey
                seen += 1
            }
            batches += 1
        }
        #expect(seen == total)
        #expect(batches == 11)
        #expect(try store.scan(entity: "Item", after: range.upperBound, limit: 10).isEmpty)
        #expect(try store.scan(entity: "Item", after: range.lowerBound + 99, limit: 1).first?.key.primaryKey == range.lowerBound + 100)
        let car = try newKey(store, "SportsCar")
        try store.save(ChangeSet(inserted: [ObjectRecord(key: car, attributes: [:])]))
        #expect(try store.scan(entity: "Car", after: nil, limit: 10).isEmpty, "a scan leaves out sub-entities")
        #expect(try store.scan(entity: "SportsCar", after: nil, limit: 10).map(\.key) == [car])
    }

    func bulk(_ scope: Scope) throws {
        let store = try scope.openStore()
        try store.bulkInsert([5, 10, 7].map { ObjectRecord(key: ObjectKey("Person", $0), attributes: ["name": .string("p\($0)")]) })
        #expect(try fetchAll(store, "Person").map(\.key.primaryKey) == [5, 7, 10])
        #expect(try store.allocatePrimaryKeys(entity: "Person", count: 1).lowerBound > 10)
        #expect(throws: StoreError.self) {
            try store.bulkInsert([ObjectRecord(key: ObjectKey("Person", 20), attributes: ["name": .string("new")]),
                                  ObjectRecord(key: ObjectKey("Person", 7), attributes: ["name": .string("dup")])])
        }
        #expect(try store.record(for: ObjectKey("Person", 20)) == nil)
        #expect(try store.record(for: ObjectKey("Person", 7))?.attributes["name"] == .string("p7"))
        // A car and a truck cannot share a key: one hierarchy, one key space.
        try store.bulkInsert([ObjectRecord(key: ObjectKey("Car", 3), attributes: [:])])
        #expect(throws: StoreError.self) { try store.bulkInsert([ObjectRecord(key: ObjectKey("Truck", 3), attributes: [:])]) }
    }

    func reopen(_ scope: Scope) throws {
        let url = try scope.newURL()
        var store = try scope.openStore(at: url)
        let ada = try newKey(store, "Person"), rex = try newKey(store, "Pet"), item = try newKey(store, "Item")
        let list = try newKey(store, "Playlist"), t1 = try newKey(store, "Track"), t2 = try newKey(store, "Track")
        try store.save(ChangeSet(inserted: [
            ObjectRecord(key: ada, attributes: ["name": .string("Ada"), "age": .integer(36)], toMany: ["pets": [rex]]),
            ObjectRecord(key: rex, attributes: ["name": .string("Rex")], toOne: ["owner": ada]),
            ObjectRecord(key: item, attributes: Self.sampleItem),
            ObjectRecord(key: list, attributes: ["name": .string("mix")], toMany: ["tracks": [t2, t1]]),
            ObjectRecord(key: t1, attributes: ["title": .string("one")], toOne: ["playlist": list]),
            ObjectRecord(key: t2, attributes: ["title": .string("two")], toOne: ["playlist": list]),
        ]))
        try store.save(ChangeSet(updated: [ObjectUpdate(key: ada, attributes: ["age": .integer(37)])]))
        let before = try [ada, rex, item, list, t1, t2].map { try store.record(for: $0) }
        let identifier = store.identifier
        try store.close()
        #expect(throws: StoreError.self) { _ = try store.fetch(FetchRequest(entity: "Person")) }

        store = try scope.openStore(at: url)
        #expect(store.identifier == identifier)
        #expect(try [ada, rex, item, list, t1, t2].map { try store.record(for: $0) } == before)
        #expect(try store.relatedKeys(of: ada, relationship: "pets") == [rex])
        #expect(try store.relatedKeys(of: list, relationship: "tracks") == [t2, t1])
        #expect(try store.record(for: ada)?.version == 2)
    }

    func readOnly(_ scope: Scope) throws {
        let url = try scope.newURL()
        let writer = try scope.openStore(at: url)
        let ada = try newKey(writer, "Person")
        try writer.save(ChangeSet(inserted: [ObjectRecord(key: ada, attributes: ["name": .string("Ada")])]))
        try writer.close()
        let reader = try scope.openStore(at: url, options: StoreOptions(readOnly: true))
        #expect(reader.isReadOnly)
        #expect(names(try fetchAll(reader, "Person")) == ["Ada"])
        #expect(throws: StoreError.self) { try reader.save(ChangeSet(deleted: [ObjectDeletion(key: ada)])) }
        #expect(throws: StoreError.self) { _ = try reader.allocatePrimaryKeys(entity: "Person", count: 1) }
        #expect(names(try fetchAll(reader, "Person")) == ["Ada"])
        #expect(throws: StoreError.self) {
            _ = try scope.openStore(at: try scope.newURL(), options: StoreOptions(readOnly: true))
        }
    }

    func destroyAndReplace(_ scope: Scope) throws {
        let source = try scope.newURL(), destination = try scope.newURL()
        let a = try scope.openStore(at: source)
        try a.save(ChangeSet(inserted: [ObjectRecord(key: try newKey(a, "Person"), attributes: ["name": .string("from source")])]))
        let sourceID = a.identifier
        try a.close()
        let b = try scope.openStore(at: destination)
        try b.save(ChangeSet(inserted: [ObjectRecord(key: try newKey(b, "Person"), attributes: ["name": .string("old destination")])]))
        try b.close()

        try type.replace(at: destination, with: source)
        #expect(!type.storeExists(at: source))
        #expect(type.storeExists(at: destination))
        let replaced = try scope.openStore(at: destination)
        #expect(replaced.identifier == sourceID)
        #expect(names(try fetchAll(replaced, "Person")) == ["from source"])
        try replaced.close()

        try type.destroy(at: destination)
        #expect(!type.storeExists(at: destination))
        for file in type.fileURLs(for: destination) {
            #expect(!FileManager.default.fileExists(atPath: file.path), "\(file.lastPathComponent) is left behind")
        }
        #expect(throws: StoreError.self) { _ = try type.readMetadata(at: destination) }
    }
}
