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

private struct Importer {
    let store: any PersistentStore
    let file: String
    var model: ManagedObjectModel { store.model }

    struct Object {
        let entity: EntityDescription
        let id: String
        var key = ObjectKey("", 0)
        var attributes: [String: Value] = [:]
        var given: [String: [Int]] = [:]
        let json: [String: Any]
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
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: data)
        } catch {
            let (line, column) = SyntaxPosition.of(error, in: data)
            throw fail("the JSON does not parse" + (line.map { " (line \($0), column \(column ?? 0))" } ?? ""))
        }
        guard let document = root as? [String: Any] else { throw fail("the top level must be an object keyed by entity name") }
        for name in document.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            guard let entity = model.entity(named: name) else { throw fail("unknown entity \(name)") }
            guard !entity.isAbstract else { throw fail("entity \(name) is abstract; list its objects under their concrete entity") }
            guard let list = document[name] as? [Any] else { throw fail("\(name) must be an array of objects") }
            for (i, item) in list.enumerated() {
                guard let json = item as? [String: Any] else { throw fail("\(name)[\(i)] is not an object") }
                guard let id = json["_id"] as? String, !id.isEmpty else { throw fail("\(name)[\(i)] has no \"_id\" string") }
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
        for (key, raw) in object.json where key != "_id" {
            if let attribute = entity.attributesByName[key], !attribute.isTransient {
                objects[i].attributes[key] = try Self.value(raw, for: attribute, place: "\(place).\(key)", fail: fail)
            } else if let relationship = entity.relationshipsByName[key], !relationship.isTransient {
                var names: [String] = []
                if relationship.isToMany {
                    guard let list = raw as? [Any], let strings = list as? [String] else {
                        throw fail("\(place).\(key): a to-many relationship takes an array of _id strings")
                    }
                    names = strings
                } else if let single = raw as? String {
                    names = [single]
                } else if !(raw is NSNull) {
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
        for attribute in entity.storedAttributes where object.json[attribute.name] == nil {
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

    /// Converts a JSON value to an attribute value.
    static func value(_ raw: Any, for attribute: Attribute, place: String, fail: (String) -> StoreError) throws -> Value? {
        if raw is NSNull { return nil }
        let type = attribute.type
        func bad() -> StoreError { fail("\(place): \(String(describing: raw).prefix(40)) is not a valid \(type.modelName)") }
        if let number = raw as? NSNumber, !(raw is String) {
            let isBool = number.isBoolean
            switch type {
            case .boolean:
                guard isBool else { throw bad() }
                return .boolean(number.boolValue)
            case .integer16, .integer32, .integer64:
                guard !isBool, let v = Int64(exactly: number.doubleValue.rounded()) ?? Int64(number.stringValue),
                      Double(v) == number.doubleValue || number.stringValue == String(v), type.integerRange!.contains(v) else { throw bad() }
                return .integer(Int64(number.stringValue) ?? v)
            case .double, .float:
                guard !isBool else { throw bad() }
                return type.coerce(.double(number.doubleValue))
            case .decimal:
                guard !isBool, let d = Decimal(string: number.stringValue, locale: Locale(identifier: "en_US_POSIX")) else { throw bad() }
                return .decimal(d)
            default: throw bad()
            }
        }
        guard let text = raw as? String else { throw bad() }
        switch type {
        case .date:
            guard let date = ValueText.parseDate(text) else { throw bad() }
            return .date(date)
        case .double, .float, .decimal, .string, .binaryData, .transformable, .uuid, .uri:
            guard let value = type.parseValue(text) else { throw bad() }
            return value
        default: throw bad()
        }
    }
}

