import Foundation
import ObjectModel

extension JSONInterchange {
    /// Imports a JSON document into `store` in one save: everything or nothing.
    ///
    /// Objects keep the primary keys their `_id`s name when every `_id` of a
    /// hierarchy has the export form `Entity/pk` and none is in use; otherwise
    /// keys are allocated in document order. A relationship may be given on
    /// either side or on both (it is an error if they disagree); attributes left
    /// out take their default value. Every object is validated first.
    ///
    /// - Parameter file: the document's name, for errors.
    /// - Returns: the number of objects imported per entity.
    /// - Throws: ``StoreError`` with ``StoreError/Code/invalidInput`` naming the
    ///   entity, `_id` and property at fault, or ``StoreError/Code/validationFailed``.
    @discardableResult
    public static func importDocument(_ data: Data, into store: any PersistentStore, file: String = "input") throws -> [String: Int] {
        var importer = Importer(store: store, file: file)
        return try importer.run(data)
    }
}

struct Importer {
    let store: any PersistentStore
    let file: String
    var model: ManagedObjectModel { store.model }

    struct Object {
        let entity: EntityDescription
        let id: String
        var key = ObjectKey("", 0)
        var attributes: [String: Value] = [:]
        var given: [String: [Int]] = [:]
        let json: [JSONValue.Member]
    }

    var objects: [Object] = []
    var byID: [String: Int] = [:]

    init(store: any PersistentStore, file: String) {
        self.store = store
        self.file = file
    }

    func fail(_ message: String) -> StoreError {
        StoreError(.invalidInput, message, url: URL(filePath: file))
    }

    mutating func run(_ data: Data) throws -> [String: Int] {
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
                objects.append(Object(entity: entity, id: id, json: json))
            }
        }
        for i in objects.indices { try readValues(i) }
        try assignKeys()
        let records = try buildRecords()
        try validate(records)
        try store.bulkInsert(records)
        var counts: [String: Int] = [:]
        for object in objects { counts[object.entity.name, default: 0] += 1 }
        return counts
    }

    private mutating func readValues(_ i: Int) throws {
        let object = objects[i]
        let entity = object.entity
        let place = "\(entity.name) \(String(reflecting: object.id))"
        for member in object.json where member.key != "_id" {
            let (key, raw) = (member.key, member.value)
            if let attribute = entity.attributesByName[key], !attribute.isTransient {
                objects[i].attributes[key] = try Self.value(raw, for: attribute, place: "\(place).\(key)", fail: fail)
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
                var targets: [Int] = []
                for name in names {
                    guard let target = byID[name] else { throw fail("\(place).\(key): no object has _id \(String(reflecting: name))") }
                    guard objects[target].entity.isKind(of: relationship.destination) else {
                        throw fail("\(place).\(key): \(String(reflecting: name)) is a \(objects[target].entity.name), not a \(relationship.destination)")
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

    /// Keeps the keys of `Entity/pk` ids when a whole hierarchy has them and they are free; else allocates.
    private mutating func assignKeys() throws {
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
                let kinds = model.entity(named: root)!.kindNames
                outer: for pk in chosen {
                    for kind in kinds where try store.record(for: ObjectKey(kind, pk)) != nil {
                        keep = false
                        break outer
                    }
                }
            }
            if keep {
                for (i, pk) in zip(members, chosen) { objects[i].key = ObjectKey(objects[i].entity.name, pk) }
            } else {
                let range = try store.allocatePrimaryKeys(entity: root, count: members.count)
                for (i, pk) in zip(members, range) { objects[i].key = ObjectKey(objects[i].entity.name, pk) }
            }
        }
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
                for i in targets { derived[i][inverse, default: []].append(j) }
            }
        }
        for (i, object) in objects.enumerated() {
            for relationship in object.entity.storedRelationships {
                var members = object.given[relationship.name] ?? []
                var listed = Set(members)
                for j in derived[i][relationship.name] ?? [] where !listed.contains(j) {
                    if object.given[relationship.name] != nil {
                        throw fail("\(label(i)).\(relationship.name) does not list \(String(reflecting: objects[j].id)), but \(label(j)).\(relationship.inverse ?? "") names it")
                    }
                    members.append(j)
                    listed.insert(j)
                }
                if !relationship.isToMany {
                    guard members.count <= 1 else {
                        throw fail("\(label(i)).\(relationship.name) is to-one, but several objects name it through \(relationship.inverse ?? "")")
                    }
                    if let target = members.first { records[i].toOne[relationship.name] = objects[target].key }
                } else {
                    records[i].toMany[relationship.name] = members.map { objects[$0].key }
                }
            }
        }
        return records
    }

    private func validate(_ records: [ObjectRecord]) throws {
        var failures: [ValidationFailure] = []
        for (object, record) in zip(objects, records) {
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
    static func value(_ raw: JSONValue, for attribute: Attribute, place: String, fail: (String) -> StoreError) throws -> Value? {
        let type = attribute.type
        func bad(_ why: String = "") -> StoreError {
            let shown: String = switch raw {
            case .number(let text), .string(let text): String(reflecting: String(text.prefix(40)))
            case .bool(let b): String(b)
            default: raw.kindName
            }
            return fail("\(place): \(shown) is not a valid \(type.modelName)\(why)")
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
                guard let d = ValueText.decimal(text) else { throw bad(" (a Decimal holds 38 significant digits)") }
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
