import Foundation
import ObjectModel

extension JSONInterchange {
    /// How an import treats the objects a store already has.
    public struct ImportOptions: Sendable {
        /// An object of the document whose values of a uniqueness constraint's attributes equal an
        /// existing object's is that object, updated (the values and relationships the document
        /// gives replace its own; the rest are kept), as Core Data's and SwiftData's merge by
        /// constraint does. Without it such an object is a constraint violation and nothing is saved.
        public var upsert: Bool
        /// A relationship may name an object the store already has by its `Entity/pk` (one no
        /// `_id` of the document is): the new object is linked to it. Off by default: a partial
        /// export imported into another store would otherwise link to whatever has those keys.
        public var linksExisting: Bool

        /// The store is new, made for this import and thrown away unless the import completes
        /// (`objectstore import` fills a staged store so), and opened with
        /// ``StoreOptions/deferredDurability`` and without history (``StoreOptions/recordsHistory``
        /// false). The objects then go in as a conversion writes them, each entity's in transactions
        /// of their own, and the import gives the store's history its one transaction, by ``author``.
        /// False by default: the import is one save, all or nothing.
        public var fillsNewStore: Bool
        /// The author of the history transaction of a store the import fills (``fillsNewStore``).
        public var author: String?
        /// Asked before each of the import's writes (the one save; or, filling a new store, each
        /// entity's batch and each thousand relationship updates): true stops the import with a
        /// `CancellationError`. A store being filled then holds the writes made so far, so it is
        /// to be thrown away (as `objectstore import` does with its staged store on Ctrl-C).
        public var isCancelled: (@Sendable () -> Bool)?

        /// Throws `CancellationError` when ``isCancelled`` says so.
        func checkCancelled() throws {
            if isCancelled?() == true { throw CancellationError() }
        }

        /// Options; by default every object of the document is a new one, and every object a
        /// relationship names is one of the document's.
        public init(upsert: Bool = false, linksExisting: Bool = false, fillsNewStore: Bool = false, author: String? = nil) {
            self.upsert = upsert
            self.linksExisting = linksExisting
            self.fillsNewStore = fillsNewStore
            self.author = author
        }
    }

    /// What an import did, per entity.
    public struct ImportResult: Sendable, Equatable {
        /// New objects.
        public var inserted: [String: Int] = [:]
        /// Existing objects the document updated (``ImportOptions/upsert``).
        public var updated: [String: Int] = [:]
        /// Objects of the document, new or updated.
        public var objects: [String: Int] { inserted.merging(updated, uniquingKeysWith: +) }
    }

    /// Imports a JSON document into `store` in one save: everything or nothing.
    ///
    /// Objects keep the primary keys their `_id`s name when every `_id` of a
    /// hierarchy has the export form `Entity/pk` and none is in use; otherwise
    /// keys are allocated in document order. A relationship may be given on
    /// either side or on both (it is an error if they disagree); attributes left
    /// out take their default value. Every object is validated first.
    ///
    /// - Parameters:
    ///   - data: the document's bytes (UTF-8 JSON).
    ///   - store: the store the objects go into (open for writing).
    ///   - file: the document's name, for errors.
    /// - Returns: the number of objects imported per entity.
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidInput`` naming the
    ///   entity, `_id` and property at fault, or ``StoreError/Code/validationFailed``.
    @discardableResult
    public static func importDocument(_ data: Data, into store: any PersistentStore, file: String = "input") throws -> [String: Int] {
        try importDocument(data, into: store, file: file, options: ImportOptions()).objects
    }

    /// ``importDocument(_:into:file:)`` with options: with ``ImportOptions/upsert``, objects that
    /// equal existing ones by a uniqueness constraint update them; with
    /// ``ImportOptions/linksExisting``, relationships may name the store's objects by `Entity/pk`
    /// (the new object is linked to it, and its inverse side updated).
    public static func importDocument(_ data: Data, into store: any PersistentStore, file: String = "input",
                                      options: ImportOptions) throws -> ImportResult {
        var result = ImportResult()
        var inserted: [ObjectKey] = []
        // New objects only: read straight into batches, unless the document has something to say.
        var batches = BatchImporter(store: store, options: options)
        do {
            guard !options.upsert, !options.linksExisting else { throw BatchImporter.Declined() }
            try batches.read(data)
            try options.checkCancelled()
            try batches.write()
            for part in batches.parts where !part.ids.isEmpty { result.inserted[part.entity.name, default: 0] += part.ids.count }
            inserted = batches.keys
        } catch is BatchImporter.Declined {
            var importer = Importer(store: store, file: file, options: options)
            result = try importer.run(data)
            inserted = importer.objects.filter { $0.updates == nil }.map(\.key)
        }
        if options.fillsNewStore, !inserted.isEmpty {
            try options.checkCancelled()
            try store.continueHistory(after: 0, recording: HistoryRecord(author: options.author, inserted: inserted))
        }
        return result
    }
}

struct Importer {
    let store: any PersistentStore
    let file: String
    let options: JSONInterchange.ImportOptions
    var model: ManagedObjectModel { store.model }

    /// An object a relationship of the document names: one of the document's, or one the store has.
    enum Target: Hashable {
        case new(Int)
        case existing(ObjectKey)
    }

    struct Object {
        let entity: EntityDescription
        let id: String
        var key = ObjectKey("", 0)
        var attributes: [String: Value] = [:]
        /// The attributes the document gives (the rest take their defaults in a new object).
        var givenAttributes: Set<String> = []
        var given: [String: [Target]] = [:]
        /// The existing object this one updates (``JSONInterchange/ImportOptions/upsert``).
        var updates: ObjectKey?
        let json: [JSONValue.Member]
    }

    var objects: [Object] = []
    var byID: [String: Int] = [:]

    init(store: any PersistentStore, file: String, options: JSONInterchange.ImportOptions = .init()) {
        self.store = store
        self.file = file
        self.options = options
    }

    func fail(_ message: String) -> StoreError {
        StoreError(.invalidInput, message, url: URL(filePath: file))
    }

    mutating func run(_ data: Data) throws -> JSONInterchange.ImportResult {
        let root: JSONValue
        do {
            root = try JSONValue.parse(data)
        } catch let error as JSONValue.SyntaxError {
            throw fail("the JSON does not parse: \(error)")
        }
        guard case .object(let entities) = root else { throw fail("the top level must be an object keyed by entity name") }
        for member in entities.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            let name = member.key
            guard let entity = model.entity(named: name) else { throw fail("unknown entity \(name)") }
            guard !entity.isAbstract else { throw fail("entity \(name) is abstract; list its objects under their concrete entity") }
            guard case .array(let list) = member.value else { throw fail("\(name) must be an array of objects") }
            for (i, item) in list.enumerated() {
                guard case .object(let json) = item else { throw fail("\(name)[\(i)] is not an object") }
                guard let idValue = json.first(where: { $0.key == "_id" })?.value, case .string(let id) = idValue, !id.isEmpty else {
                    throw fail("\(name)[\(i)] has no \"_id\" string")
                }
                guard byID[id] == nil else { throw fail("_id \(String(reflecting: id)) appears twice") }
                byID[id] = objects.count
                // No key yet: one is kept or allocated once the document is known to be right.
                objects.append(Object(entity: entity, id: id, key: ObjectKey(entity.name, 0), json: json))
            }
        }
        for i in objects.indices { try readValues(i) }
        if options.upsert { try findUpdatedObjects() }
        // Sides that disagree and broken rules are found before any key is allocated: a document
        // refused for them leaves the store as it was, key counters included.
        if objects.contains(where: { $0.updates == nil }) {
            let checked = try buildRecords()
            if !objects.contains(where: { $0.updates != nil }) { try validate(checked) }
        }
        try assignKeys()
        let records = try buildRecords()
        var result = JSONInterchange.ImportResult()
        for object in objects { object.updates == nil ? (result.inserted[object.entity.name, default: 0] += 1) : (result.updated[object.entity.name, default: 0] += 1) }
        let linksExisting = objects.contains { $0.given.values.contains { $0.contains { if case .existing = $0 { true } else { false } } } }
        guard linksExisting || objects.contains(where: { $0.updates != nil }) else {
            try validate(records)
            try options.checkCancelled()
            try store.bulkInsert(records)
            return result
        }
        // Existing objects are changed too: one save, the store completing their inverse sides
        // and checking the rules of every object it changes.
        var inserted: [ObjectRecord] = [], updated: [ObjectUpdate] = []
        for (object, record) in zip(objects, records) {
            guard object.updates != nil else {
                inserted.append(record)
                continue
            }
            var update = ObjectUpdate(key: record.key)
            for name in object.givenAttributes { update.attributes[name] = .some(record.attributes[name]) }
            for name in object.given.keys {
                guard let relationship = object.entity.relationshipsByName[name] else { continue }
                if relationship.isToMany { update.toMany[name] = record.toMany[name] ?? [] } else { update.toOne[name] = .some(record.toOne[name]) }
            }
            updated.append(update)
        }
        // New objects as they are; an updated one as it will be: its stored values and
        // relationships, with what the document gives over them.
        var checked: [(Object, ObjectRecord)] = []
        for (object, record) in zip(objects, records) {
            guard object.updates != nil else {
                checked.append((object, record))
                continue
            }
            guard var merged = try store.record(for: record.key) else { continue }
            for name in object.givenAttributes { merged.attributes[name] = record.attributes[name] }
            for relationship in object.entity.storedRelationships {
                if object.given[relationship.name] != nil {
                    merged.toOne[relationship.name] = record.toOne[relationship.name]
                    merged.toMany[relationship.name] = record.toMany[relationship.name]
                } else if relationship.isToMany {
                    merged.toMany[relationship.name] = try store.relatedKeys(of: record.key, relationship: relationship.name)
                }
            }
            checked.append((object, merged))
        }
        try validate(checked)
        try options.checkCancelled()
        try store.save(ChangeSet(inserted: inserted, updated: updated))
        return result
    }

    /// With upsert: each object whose values of a uniqueness constraint's attributes equal an
    /// existing object's updates that object (constraints over relationships are not matched).
    private mutating func findUpdatedObjects() throws {
        var claimed: [ObjectKey: Int] = [:]
        for i in objects.indices {
            let object = objects[i]
            var found: [(ObjectKey, UniquenessConstraint)] = []
            for constraint in object.entity.uniquenessConstraints {
                guard constraint.properties.allSatisfy({ object.entity.attributesByName[$0] != nil }) else { continue }
                let values = constraint.properties.map { object.attributes[$0] }
                guard values.allSatisfy({ $0 != nil }) else { continue }
                let predicate = ObjectPredicate.and(zip(constraint.properties, values).map { .compare($0, .equal, $1) })
                if let match = try store.fetch(FetchRequest(entity: constraint.entity, predicate: predicate, fetchLimit: 1)).first {
                    found.append((match.key, constraint))
                }
            }
            guard let (key, constraint) = found.first else { continue }
            let place = "\(object.entity.name) \(String(reflecting: object.id))"
            if let other = found.first(where: { $0.0 != key }) {
                throw fail("\(place) equals \(key) by \(constraint.name) and \(other.0) by \(other.1.name): it cannot update both")
            }
            guard key.entity == object.entity.name else {
                throw fail("\(place) equals \(key) by \(constraint.name), a \(key.entity): an update keeps the object's entity")
            }
            if let earlier = claimed[key] {
                throw fail("\(place) and \(objects[earlier].entity.name) \(String(reflecting: objects[earlier].id)) both equal \(key) by \(constraint.name)")
            }
            claimed[key] = i
            objects[i].updates = key
            objects[i].key = key
        }
    }

    private mutating func readValues(_ i: Int) throws {
        let object = objects[i]
        let entity = object.entity
        let place = "\(entity.name) \(String(reflecting: object.id))"
        for member in object.json where member.key != "_id" {
            let (key, raw) = (member.key, member.value)
            if let attribute = entity.attributesByName[key], !attribute.isTransient {
                objects[i].attributes[key] = try Self.value(raw, for: attribute, place: "\(place).\(key)", fail: fail)
                objects[i].givenAttributes.insert(key)
            } else if let relationship = entity.relationshipsByName[key], !relationship.isTransient {
                var names: [String] = []
                if relationship.isToMany {
                    guard case .array(let list) = raw else {
                        throw fail("\(place).\(key): a to-many relationship takes an array of _id strings")
                    }
                    names = try list.map { item in
                        guard case .string(let name) = item else { throw fail("\(place).\(key): a to-many relationship takes an array of _id strings") }
                        return name
                    }
                } else if case .string(let single) = raw {
                    names = [single]
                } else if raw != .null {
                    throw fail("\(place).\(key): a to-one relationship takes an _id string or null")
                }
                var targets: [Target] = []
                for name in names {
                    let target: Target
                    if let index = byID[name] {
                        guard objects[index].entity.isKind(of: relationship.destination) else {
                            throw fail("\(place).\(key): \(String(reflecting: name)) is a \(objects[index].entity.name), not a \(relationship.destination)")
                        }
                        target = .new(index)
                    } else if options.linksExisting {
                        target = .existing(try existingObject(name, of: relationship.destination, place: "\(place).\(key)"))
                    } else {
                        throw fail("\(place).\(key): no object has _id \(String(reflecting: name))")
                    }
                    guard !targets.contains(target) else { throw fail("\(place).\(key): \(String(reflecting: name)) is listed twice") }
                    targets.append(target)
                }
                objects[i].given[key] = targets
            } else {
                throw fail("\(place): \(entity.name) has no stored property named \(key)")
            }
        }
        let given = Set(object.json.map(\.key))
        for attribute in entity.storedAttributes where !given.contains(attribute.name) {
            if let value = attribute.defaultValue { objects[i].attributes[attribute.name] = value }
        }
    }

    /// The store's object `name` (`Entity/pk`, no `_id` of the document) names, of `destination`'s kind.
    private func existingObject(_ name: String, of destination: String, place: String) throws -> ObjectKey {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let entity = model.entity(named: String(parts[0])), let pk = Int64(parts[1]) else {
            throw fail("\(place): no object has _id \(String(reflecting: name))")
        }
        guard try store.record(for: ObjectKey(entity.name, pk)) != nil else {
            throw fail("\(place): no object of the document has _id \(String(reflecting: name)), and the store has no object \(String(reflecting: name))")
        }
        guard entity.isKind(of: destination) else { throw fail("\(place): \(name) is a \(entity.name), not a \(destination)") }
        return ObjectKey(entity.name, pk)
    }

    /// Gives the new objects their keys (objects that update existing ones have theirs already).
    private mutating func assignKeys() throws {
        let new = objects.indices.filter { objects[$0].updates == nil }
        let keys = try Self.newKeys(new.map { (objects[$0].entity, objects[$0].id) }, store: store)
        for (i, key) in zip(new, keys) { objects[i].key = key }
    }

    /// The keys of new objects, given in document order: each hierarchy keeps the keys of its
    /// `Entity/pk` `_id`s when every object of it has one and they are free, else gets keys
    /// allocated in document order.
    static func newKeys(_ objects: [(entity: EntityDescription, id: String)], store: any PersistentStore) throws -> [ObjectKey] {
        var keys = objects.map { ObjectKey($0.entity.name, 0) }
        var byRoot: [String: [Int]] = [:]
        for (i, object) in objects.enumerated() { byRoot[object.entity.rootName, default: []].append(i) }
        for (root, members) in byRoot.sorted(by: { $0.key < $1.key }) {
            var chosen: [Int64] = []
            for i in members {
                let object = objects[i]
                let prefix = object.entity.name + "/"
                guard object.id.hasPrefix(prefix), let pk = Int64(object.id.dropFirst(prefix.count)), pk > 0 else { break }
                chosen.append(pk)
            }
            var keep = chosen.count == members.count && Set(chosen).count == chosen.count
            if keep, try store.count(FetchRequest(entity: root)) > 0 {
                // The store already holds objects of this hierarchy: keep the keys only if all are free.
                let kinds = store.model.entity(named: root)!.kindNames
                outer: for pk in chosen {
                    for kind in kinds where try store.record(for: ObjectKey(kind, pk)) != nil {
                        keep = false
                        break outer
                    }
                }
            }
            if keep {
                for (i, pk) in zip(members, chosen) { keys[i] = ObjectKey(objects[i].entity.name, pk) }
            } else {
                let range = try store.allocatePrimaryKeys(entity: root, count: members.count)
                for (i, pk) in zip(members, range) { keys[i] = ObjectKey(objects[i].entity.name, pk) }
            }
        }
        return keys
    }

    /// Both sides of every relationship, checking that sides given twice agree.
    private func buildRecords() throws -> [ObjectRecord] {
        var records = objects.map { ObjectRecord(key: $0.key, attributes: $0.attributes) }
        func label(_ i: Int) -> String { "\(objects[i].entity.name) \(String(reflecting: objects[i].id))" }
        // Who names whom through each relationship's inverse: derived[i][name] lists the objects
        // that name object i through the inverse of its relationship `name`.
        var derived: [[String: [Int]]] = Array(repeating: [:], count: objects.count)
        for (j, other) in objects.enumerated() {
            for (name, targets) in other.given {
                guard let inverse = other.entity.relationshipsByName[name]?.inverse else { continue }
                for case .new(let i) in targets { derived[i][inverse, default: []].append(j) }
            }
        }
        func key(_ target: Target) -> ObjectKey {
            switch target {
            case .new(let i): objects[i].key
            case .existing(let key): key
            }
        }
        for (i, object) in objects.enumerated() {
            for relationship in object.entity.storedRelationships {
                var members = object.given[relationship.name] ?? []
                var listed = Set(members)
                for j in derived[i][relationship.name] ?? [] where !listed.contains(.new(j)) {
                    if object.given[relationship.name] != nil {
                        throw fail("\(label(i)).\(relationship.name) does not list \(String(reflecting: objects[j].id)), but \(label(j)).\(relationship.inverse ?? "") names it")
                    }
                    // An object the document updates keeps its other members: the store adds this one.
                    if object.updates != nil { continue }
                    members.append(.new(j))
                    listed.insert(.new(j))
                }
                if !relationship.isToMany {
                    guard members.count <= 1 else {
                        throw fail("\(label(i)).\(relationship.name) is to-one, but several objects name it through \(relationship.inverse ?? "")")
                    }
                    if let target = members.first { records[i].toOne[relationship.name] = key(target) }
                } else {
                    records[i].toMany[relationship.name] = members.map(key)
                }
            }
        }
        return records
    }

    private func validate(_ records: [ObjectRecord]) throws {
        try validate(Array(zip(objects, records)))
    }

    /// Checks every rule of the new objects (the store checks those it updates).
    private func validate(_ pairs: [(Object, ObjectRecord)]) throws {
        var failures: [ValidationFailure] = []
        for (object, record) in pairs {
            failures += ObjectValidator.failures(of: record, entity: object.entity, id: store.objectID(for: record.key)) { relationship in
                relationship.isToMany ? record.toMany[relationship.name]?.count ?? 0 : (record.toOne[relationship.name] == nil ? 0 : 1)
            }.map { failure in
                var failure = failure
                failure.message = "\(object.id): \(failure.message)"
                return failure
            }
        }
        guard failures.isEmpty else {
            let shown = failures.prefix(5).map { "\($0.objectID.entityName) \($0.message.split(separator: ":").first ?? "").\($0.property) \($0.rule.rawValue)" }
            throw StoreError(.validationFailed, "\(failures.count) validation failure\(failures.count == 1 ? "" : "s"): "
                             + shown.joined(separator: "; ") + (failures.count > 5 ? "; …" : ""),
                             url: URL(filePath: file), validationFailures: failures)
        }
    }

    /// Converts a JSON value to an attribute value: numbers from their text, rounded once
    /// to the attribute's type, and refused when they do not fit it.
    static func value(_ raw: JSONValue, for attribute: Attribute, place: @autoclosure () -> String, fail: (String) -> StoreError) throws -> Value? {
        let type = attribute.type
        func bad(_ why: String = "") -> StoreError {
            let shown: String = switch raw {
            case .number(let text), .string(let text): String(reflecting: String(text.prefix(40)))
            case .bool(let b): String(b)
            default: raw.kindName
            }
            return fail("\(place()): \(shown) is not a valid \(type.modelName)\(why)")
        }
        switch raw {
        case .null:
            return nil
        case .bool(let b):
            guard type == .boolean else { throw bad() }
            return .boolean(b)
        case .number(let text):
            switch type {
            case .integer16, .integer32, .integer64:
                // Whole numbers, also in decimal or exponent notation (`3.0`, `1e3`).
                guard let exact = Int64(text) ?? ValueText.decimal(text).flatMap({ d in d == d.rounded(0) ? Int64(d.description) : nil }) else {
                    throw bad(" (a whole number in the range of a 64-bit integer)")
                }
                guard type.integerRange!.contains(exact) else { throw bad(" (out of range)") }
                return .integer(exact)
            case .double:
                guard let v = ValueText.double(text) else { throw bad(" (too large for a Double)") }
                return .double(v)
            case .float:
                guard let v = ValueText.float(text) else { throw bad(" (too large for a Float)") }
                return .double(v)
            case .decimal:
                guard let d = ValueText.decimal(text) else {
                    throw bad(" (a Decimal holds 38 significant digits, between about 1e-128 and 3.4e165 in magnitude)")
                }
                return .decimal(d)
            default:
                throw bad()
            }
        case .string(let text):
            switch type {
            case .date:
                guard let date = ValueText.parseDate(text) else { throw bad() }
                return .date(date)
            case .double, .float, .decimal, .string, .binaryData, .transformable, .uuid, .uri:
                guard let value = type.parseValue(text) else { throw bad() }
                return value
            default:
                throw bad()
            }
        case .array, .object:
            throw bad()
        }
    }
}

extension Decimal {
    /// Rounded to `scale` decimal places, half away from zero.
    func rounded(_ scale: Int) -> Decimal {
        var value = self
        var result = Decimal()
        NSDecimalRound(&result, &value, scale, .plain)
        return result
    }
}
