import Foundation

/// Decodes an `NSKeyedArchiver` archive of an `NSManagedObjectModel` (a compiled `.mom`,
/// or Core Data's model cache once inflated) into a ``ManagedObjectModel``.
///
/// Classes are recognised by name and never instantiated; a class or a key this reader
/// does not know is an error naming it (docs/coredata-formats.md lists what is decoded).
package struct ArchivedModelReader {
    let archive: KeyedArchiveObjects

    /// A reader of `archive`'s objects (its helpers read any keyed archive, not only models).
    package init(archive: KeyedArchiveObjects) { self.archive = archive }

    // MARK: The classes and keys decoded

    static let modelKeys: Set<String> = ["NSEntities", "NSFetchRequestTemplates", "NSVersionIdentifiers"]
    static let entityKeys: Set<String> = [
        "NSEntityName", "NSClassNameForEntity", "NSProperties", "NSSubentities", "NSSuperentity", "NSManagedObjectModel",
        "NSRenamingIdentifier", "NSUserInfo", "NSVersionHashModifier", "NSCompoundIndexes", "NSFetchIndexDescriptions",
        "NSUniqueTuples",
    ]
    /// Keys every property description may have.
    static let propertyKeys: Set<String> = [
        "NSPropertyName", "NSEntity", "NSIsOptional", "NSIsTransient", "NSRenamingIdentifier", "NSVersionHashModifier",
        "NSUserInfo", "_P",
    ]
    static let attributeKeys = propertyKeys.union([
        "NSAttributeType", "NSAttributeValueClassName", "NSDefaultValue", "NSValueTransformerName", "NSIsIndexed", "NSFlagsKey",
    ])
    static let relationshipKeys = propertyKeys.union([
        "NSDestinationEntity", "_NSDestinationEntityName", "NSInverseRelationship", "_NSInverseRelationshipName",
        "NSMinCount", "NSMaxCount", "NSDeleteRule", "NSIsOrdered",
    ])
    static let fetchIndexKeys: Set<String> = ["NSIndexName", "NSEntity", "NSIndexElements", "NSPartialIndexPredicate"]
    static let fetchIndexElementKeys: Set<String> = ["NSPropertyName", "NSFetchIndexDescription", "NSAscending", "NSFetchIndexElementType"]

    /// The bits of a property's `_P` (its packed flags), as the fixtures show them.
    enum PackedFlag {
        /// Set on every property observed; meaning not established, not used.
        static let alwaysSet: Int64 = 0x01 | 0x10 | 0x20 | 0x40
        /// `NSIsOptional`.
        static let optional: Int64 = 0x02
        /// `NSIsTransient`.
        static let transient: Int64 = 0x08
        /// Clear exactly on the properties that have a version hash modifier; not used.
        static let noVersionHashModifier: Int64 = 0x80
        /// `NSIsOrdered` (relationships).
        static let ordered: Int64 = 0x400
        static let known = alwaysSet | optional | transient | noVersionHashModifier | ordered
    }

    /// `NSFlagsKey` on attributes: 0x10 is "preserve value in history on deletion".
    static let preservesValueFlag: Int64 = 0x10

    // MARK: The model

    func model() throws -> ManagedObjectModel {
        guard let root = try archive.object(archive.root, from: "$top.root") else {
            throw ModelError(.unreadable, problems: ["the archive's root is $null"])
        }
        guard root.className == "NSManagedObjectModel" else {
            throw ModelError(.unsupported, problems: ["the archive's root is an \(root.className), not an NSManagedObjectModel"])
        }
        try root.requireKnownKeys(Self.modelKeys)
        // Fetch request templates are not part of a model this library keeps (the XML reader skips them too).
        let identifiers = try strings(in: root, "NSVersionIdentifiers").filter { !$0.isEmpty }.sorted()
        var entities: [Entity] = []
        var propertyNames: [Int: Set<String>] = [:]
        let entries = try dictionary(in: root, "NSEntities")
        for (key, node) in entries {
            guard let object = try referencedObject(node, from: "\(root.label).NSEntities[\(key)]") else { continue }
            try expect(object, "NSEntityDescription")
            entities.append(try entity(object, propertyNames: &propertyNames))
        }
        do {
            return try ManagedObjectModel(entities: entities.sorted { $0.name < $1.name }, versionIdentifiers: identifiers)
        } catch let error as ModelError {
            throw ModelError(error.code, problems: error.problems.map { "the archived model: \($0)" })
        }
    }

    func entity(_ object: ArchivedObject, propertyNames: inout [Int: Set<String>]) throws -> Entity {
        try object.requireKnownKeys(Self.entityKeys)
        let name = try requiredString(in: object, "NSEntityName")
        var entity = Entity(name)
        if let parent = try referenced(in: object, "NSSuperentity") {
            try expect(parent, "NSEntityDescription")
            entity.parent = try requiredString(in: parent, "NSEntityName")
        }
        let className = try string(in: object, "NSClassNameForEntity")
        entity.representedClassName = className == "NSManagedObject" ? nil : className
        entity.renamingIdentifier = try renamingIdentifier(in: object, name: name)
        entity.versionHashModifier = try string(in: object, "NSVersionHashModifier")
        entity.userInfo = try userInfo(in: object)
        // A sub-entity's NSProperties repeats its parent's: its own are the ones the parent lacks.
        let inherited = try inheritedPropertyNames(of: object, cache: &propertyNames)
        for (key, node) in try dictionary(in: object, "NSProperties") where !inherited.contains(key) {
            guard let property = try referencedObject(node, from: "\(object.label).NSProperties[\(key)]") else { continue }
            switch property.className {
            case "NSAttributeDescription": entity.attributes.append(try attribute(property, entity: name))
            case "NSRelationshipDescription": entity.relationships.append(try relationship(property, entity: name))
            default:
                throw ModelError(.unsupported, problems: ["\(name).\(key): a property of class \(property.className) (only attributes and relationships are decoded)"])
            }
        }
        entity.attributes.sort { $0.name < $1.name }
        entity.relationships.sort { $0.name < $1.name }
        entity.uniquenessConstraints = try array(in: object, "NSUniqueTuples").map { tuple in
            try strings(of: tuple, from: "\(object.label).NSUniqueTuples")
        }.filter { !$0.isEmpty }
        for node in try array(in: object, "NSFetchIndexDescriptions") {
            guard let index = try referencedObject(node, from: "\(object.label).NSFetchIndexDescriptions") else { continue }
            entity.indexes.append(try fetchIndex(index, entity: name))
        }
        // The older form of multi-property indexes; Core Data repeats the fetch indexes there.
        for node in try array(in: object, "NSCompoundIndexes") {
            let properties = try strings(of: node, from: "\(object.label).NSCompoundIndexes")
            guard !properties.isEmpty, !entity.indexes.contains(where: { $0.elements.map(\.property) == properties }) else { continue }
            entity.indexes.append(FetchIndex(name: "compound_" + properties.joined(separator: "_"), elements: properties.map { .init($0) }))
        }
        return entity
    }

    /// The names of the properties an entity's ancestors have (what its NSProperties repeats).
    func inheritedPropertyNames(of object: ArchivedObject, cache: inout [Int: Set<String>], depth: Int = 0) throws -> Set<String> {
        guard let parent = try referenced(in: object, "NSSuperentity") else { return [] }
        if let names = cache[parent.index] { return names }
        guard depth < 1000 else { throw ModelError(.inconsistentModel, problems: ["\(object.label): the NSSuperentity chain is a cycle"]) }
        let names = Set(try dictionary(in: parent, "NSProperties").map(\.key))
            .union(try inheritedPropertyNames(of: parent, cache: &cache, depth: depth + 1))
        cache[parent.index] = names
        return names
    }

    func attribute(_ object: ArchivedObject, entity: String) throws -> Attribute {
        try object.requireKnownKeys(Self.attributeKeys)
        let name = try requiredString(in: object, "NSPropertyName")
        let code = try integer(in: object, "NSAttributeType") ?? 0
        guard let type = AttributeType(rawValue: Int32(clamping: code)), Int64(type.rawValue) == code else {
            throw ModelError(.unsupported, problems: ["\(entity).\(name): attribute type \(code) is not one this library has"])
        }
        let flags = try packedFlags(object, name: "\(entity).\(name)", allowed: PackedFlag.known & ~PackedFlag.ordered)
        let stored = try integer(in: object, "NSFlagsKey") ?? 0
        guard stored & ~Self.preservesValueFlag == 0 else {
            throw ModelError(.unsupported, problems: ["\(entity).\(name): NSFlagsKey bits 0x\(String(stored & ~Self.preservesValueFlag, radix: 16)) (meaning not established)"])
        }
        var attribute = Attribute(
            name, type, optional: flags.optional, transient: flags.transient,
            renamingIdentifier: try renamingIdentifier(in: object, name: name),
            versionHashModifier: try string(in: object, "NSVersionHashModifier"),
            preservesValueInHistoryOnDeletion: stored & Self.preservesValueFlag != 0,
            valueTransformerName: try string(in: object, "NSValueTransformerName"),
            userInfo: try userInfo(in: object))
        if let node = object.fields["NSDefaultValue"] {
            attribute.defaultValue = try defaultValue(node, type: type, place: "\(entity).\(name).NSDefaultValue")
        }
        return attribute
    }

    func relationship(_ object: ArchivedObject, entity: String) throws -> Relationship {
        try object.requireKnownKeys(Self.relationshipKeys)
        let name = try requiredString(in: object, "NSPropertyName")
        let flags = try packedFlags(object, name: "\(entity).\(name)", allowed: PackedFlag.known)
        var destination = try string(in: object, "_NSDestinationEntityName")
        if destination == nil, let target = try referenced(in: object, "NSDestinationEntity") {
            destination = try requiredString(in: target, "NSEntityName")
        }
        guard let destination else {
            throw ModelError(.unreadable, problems: ["\(entity).\(name): no destination entity (neither _NSDestinationEntityName nor NSDestinationEntity)"])
        }
        var inverse = try string(in: object, "_NSInverseRelationshipName")
        if inverse == nil, let other = try referenced(in: object, "NSInverseRelationship") {
            inverse = try requiredString(in: other, "NSPropertyName")
        }
        let maxCount = Int(clamping: try integer(in: object, "NSMaxCount") ?? 0)
        let ruleCode = try integer(in: object, "NSDeleteRule") ?? 1
        let rules: [Int64: DeleteRule] = [0: .noAction, 1: .nullify, 2: .cascade, 3: .deny]
        guard let rule = rules[ruleCode] else {
            throw ModelError(.unsupported, problems: ["\(entity).\(name): delete rule \(ruleCode) is not one of 0 to 3"])
        }
        return Relationship(
            name, to: destination, inverse: inverse, toMany: maxCount != 1, ordered: flags.ordered,
            minCount: Int(clamping: try integer(in: object, "NSMinCount") ?? 0), maxCount: maxCount, deleteRule: rule,
            optional: flags.optional, transient: flags.transient,
            renamingIdentifier: try renamingIdentifier(in: object, name: name),
            versionHashModifier: try string(in: object, "NSVersionHashModifier"), userInfo: try userInfo(in: object))
    }

    func fetchIndex(_ object: ArchivedObject, entity: String) throws -> FetchIndex {
        try expect(object, "NSFetchIndexDescription")
        try object.requireKnownKeys(Self.fetchIndexKeys)
        let name = try requiredString(in: object, "NSIndexName")
        if try node(in: object, "NSPartialIndexPredicate") != nil {
            throw ModelError(.unsupported, problems: ["\(entity): fetch index \(name) has a partial-index predicate (not supported)"])
        }
        var index = FetchIndex(name: name, elements: [])
        for node in try array(in: object, "NSIndexElements") {
            guard let element = try referencedObject(node, from: "\(object.label).NSIndexElements") else { continue }
            try expect(element, "NSFetchIndexElementDescription")
            try element.requireKnownKeys(Self.fetchIndexElementKeys)
            let kind = try integer(in: element, "NSFetchIndexElementType") ?? 0
            guard kind == 0 else {
                throw ModelError(.unsupported, problems: ["\(entity): fetch index \(name) has an element of type \(kind) (only 0, a binary index, is supported)"])
            }
            index.elements.append(.init(try requiredString(in: element, "NSPropertyName"), ascending: try boolean(in: element, "NSAscending") ?? false))
        }
        return index
    }

    /// Optional, transient and ordered, from `_P` and from the separate keys; where both are
    /// present they must agree.
    func packedFlags(_ object: ArchivedObject, name: String, allowed: Int64) throws -> (optional: Bool, transient: Bool, ordered: Bool) {
        let packed = try integer(in: object, "_P")
        if let packed, packed & ~allowed != 0 {
            throw ModelError(.unsupported, problems: ["\(name): _P bits 0x\(String(packed & ~allowed, radix: 16)) (meaning not established)"])
        }
        func flag(_ key: String, _ bit: Int64) throws -> Bool {
            let separate = try boolean(in: object, key)
            guard let packed else { return separate ?? false }
            let fromPacked = packed & bit != 0
            if let separate, separate != fromPacked {
                throw ModelError(.unreadable, problems: ["\(name): \(key) is \(separate) but _P (\(packed)) says \(fromPacked)"])
            }
            return fromPacked
        }
        return (try flag("NSIsOptional", PackedFlag.optional), try flag("NSIsTransient", PackedFlag.transient),
                try flag("NSIsOrdered", PackedFlag.ordered))
    }

    /// A default value: inline numbers and Booleans, strings, dates, data, UUIDs, URLs and
    /// decimal numbers, converted to the attribute's type.
    func defaultValue(_ node: PropertyListNode, type: AttributeType, place: String) throws -> Value? {
        var resolved = node
        if case .uid(let uid) = node {
            // Numbers and strings are objects of $objects too; anything else is an archived object.
            guard let target = try archive.node(uid, from: place) else { return nil }
            if case .dictionary = target, let object = try archive.object(uid, from: place) {
                return try converted(try objectValue(object, place: place), type: type, place: place)
            }
            resolved = target
        }
        let value: Value
        switch resolved {
        case .integer(let v): value = .integer(v)
        case .real(let v): value = .double(v)
        case .boolean(let v): value = .boolean(v)
        case .string(let v): value = .string(v)
        default:
            throw ModelError(.unsupported, problems: ["\(place): \(KeyedArchiveObjects.describe(resolved)) is not a default value this reader knows"])
        }
        return try converted(value, type: type, place: place)
    }

    /// `value` as a value of `type`.
    private func converted(_ value: Value, type: AttributeType, place: String) throws -> Value {
        if type == .transformable || type == .undefined, case .data = value { return value }
        guard let converted = type.coerce(value) ?? (type.isNumeric ? numeric(value, type) : nil) else {
            throw ModelError(.unsupported, problems: ["\(place): \(value) is not a \(type.modelName) value"])
        }
        return converted
    }

    /// A Boolean default on a numeric attribute is 0 or 1 (what Core Data reads).
    private func numeric(_ value: Value, _ type: AttributeType) -> Value? {
        guard case .boolean(let flag) = value else { return nil }
        return type.coerce(.integer(flag ? 1 : 0))
    }

    /// The value of an archived value object (`NSDecimalNumberPlaceholder`, `NSDate`, …).
    func objectValue(_ object: ArchivedObject, place: String) throws -> Value {
        switch object.className {
        case "NSMutableString", "NSString":
            try object.requireKnownKeys(["NS.string"])
            return .string(try requiredString(in: object, "NS.string"))
        case "NSDecimalNumberPlaceholder", "NSDecimalNumber":
            return .decimal(try decimal(object, place: place))
        case "NSDate":
            try object.requireKnownKeys(["NS.time"])
            guard case .real(let seconds)? = object.fields["NS.time"] ?? nil else {
                throw ModelError(.unreadable, problems: ["\(place): \(object.label) has no NS.time"])
            }
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case "NSData", "NSMutableData":
            try object.requireKnownKeys(["NS.data"])
            guard let data = try dataValue(in: object, "NS.data") else {
                throw ModelError(.unreadable, problems: ["\(place): \(object.label) has no NS.data"])
            }
            return .data(data)
        case "NSUUID":
            try object.requireKnownKeys(["NS.uuidbytes"])
            guard let bytes = try dataValue(in: object, "NS.uuidbytes"), bytes.count == 16 else {
                throw ModelError(.unreadable, problems: ["\(place): \(object.label) has no 16 NS.uuidbytes"])
            }
            return .uuid(UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }))
        case "NSURL":
            try object.requireKnownKeys(["NS.base", "NS.relative"])
            guard try node(in: object, "NS.base") == nil, let text = try string(in: object, "NS.relative"), let url = URL(string: text) else {
                throw ModelError(.unsupported, problems: ["\(place): \(object.label) is not an absolute URL"])
            }
            return .uri(url)
        default:
            throw ModelError(.unsupported, problems: ["\(place): a default value of class \(object.className) (not decoded)"])
        }
    }

    /// An `NSDecimalNumber`: `NS.mantissa` (16 bytes, `NS.length` 16-bit words of it used, in the
    /// byte order `NS.mantissa.bo` names: 1 little-endian), `NS.exponent` and `NS.negative`.
    func decimal(_ object: ArchivedObject, place: String) throws -> Decimal {
        try object.requireKnownKeys(["NS.mantissa", "NS.mantissa.bo", "NS.exponent", "NS.length", "NS.negative", "NS.compact"])
        guard let mantissa = try dataValue(in: object, "NS.mantissa"), mantissa.count == 16,
              let length = try integer(in: object, "NS.length"), (0...8).contains(length),
              let exponent = try integer(in: object, "NS.exponent"), (-128...127).contains(exponent) else {
            throw ModelError(.unreadable, problems: ["\(place): \(object.label) is not a well-formed decimal number"])
        }
        let order = try integer(in: object, "NS.mantissa.bo") ?? 1
        guard order == 1 || order == 2 else {
            throw ModelError(.unsupported, problems: ["\(place): \(object.label) has byte order \(order) (1 little-endian or 2 big-endian)"])
        }
        let bytes = [UInt8](mantissa)
        var words: [UInt16] = (0..<8).map { word in
            let (low, high) = (UInt16(bytes[2 * word]), UInt16(bytes[2 * word + 1]))
            return order == 1 ? low | high << 8 : high | low << 8
        }
        for word in Int(length)..<8 { words[word] = 0 }
        // The mantissa, a 128-bit number of 16-bit words, least significant first, as a decimal.
        var value = Decimal(0)
        for word in words.reversed() { value = value * 65536 + Decimal(Int(word)) }
        var result = Decimal(sign: try boolean(in: object, "NS.negative") == true ? .minus : .plus, exponent: Int(exponent), significand: value)
        if length == 0 { result = 0 }
        return result
    }

    // MARK: Reading keys

    func expect(_ object: ArchivedObject, _ className: String) throws {
        guard object.className == className else {
            throw ModelError(.unsupported, problems: ["\(object.label) where an \(className) was expected"])
        }
    }

    /// The node under `key`, references followed (nil when absent or `$null`).
    package func node(in object: ArchivedObject, _ key: String) throws -> PropertyListNode? {
        guard let node = object.fields[key] else { return nil }
        if case .uid(let uid) = node { return try archive.node(uid, from: "\(object.label).\(key)") }
        return node
    }

    package func referencedObject(_ node: PropertyListNode, from place: String) throws -> ArchivedObject? {
        guard case .uid(let uid) = node else {
            throw ModelError(.unreadable, problems: ["\(place) is \(KeyedArchiveObjects.describe(node)), not a reference to an object"])
        }
        return try archive.object(uid, from: place)
    }

    package func referenced(in object: ArchivedObject, _ key: String) throws -> ArchivedObject? {
        guard let node = object.fields[key] else { return nil }
        return try referencedObject(node, from: "\(object.label).\(key)")
    }

    package func string(in object: ArchivedObject, _ key: String) throws -> String? {
        guard let node = try node(in: object, key) else { return nil }
        return try text(node, from: "\(object.label).\(key)")
    }

    /// A string node, or an archived `NSString`/`NSMutableString`.
    package func text(_ node: PropertyListNode, from place: String) throws -> String {
        if case .string(let text) = node { return text }
        if case .dictionary(let fields) = node, case .uid? = fields["$class"], case .string(let text)? = fields["NS.string"] {
            return text
        }
        throw ModelError(.unreadable, problems: ["\(place) is \(KeyedArchiveObjects.describe(node)), not a string"])
    }

    func requiredString(in object: ArchivedObject, _ key: String) throws -> String {
        guard let text = try string(in: object, key) else {
            throw ModelError(.unreadable, problems: ["\(object.label) has no \(key)"])
        }
        return text
    }

    package func integer(in object: ArchivedObject, _ key: String) throws -> Int64? {
        switch try node(in: object, key) {
        case nil: return nil
        case .integer(let v)?: return v
        case .boolean(let v)?: return v ? 1 : 0
        case let other?: throw ModelError(.unreadable, problems: ["\(object.label).\(key) is \(KeyedArchiveObjects.describe(other)), not an integer"])
        }
    }

    package func boolean(in object: ArchivedObject, _ key: String) throws -> Bool? {
        switch try node(in: object, key) {
        case nil: return nil
        case .boolean(let v)?: return v
        case .integer(let v)? where v == 0 || v == 1: return v == 1
        case let other?: throw ModelError(.unreadable, problems: ["\(object.label).\(key) is \(KeyedArchiveObjects.describe(other)), not a Boolean"])
        }
    }

    func dataValue(in object: ArchivedObject, _ key: String) throws -> Data? {
        switch try node(in: object, key) {
        case nil: return nil
        case .data(let v)?: return v
        case let other?: throw ModelError(.unreadable, problems: ["\(object.label).\(key) is \(KeyedArchiveObjects.describe(other)), not data"])
        }
    }

    /// A renaming identifier; Core Data archives the property's or entity's own name when none is set.
    func renamingIdentifier(in object: ArchivedObject, name: String) throws -> String? {
        let identifier = try string(in: object, "NSRenamingIdentifier")
        return identifier == name ? nil : identifier
    }

    /// The elements of the collection (`NSArray`, `NSSet` and their mutable forms) under `key`; empty when absent.
    func array(in object: ArchivedObject, _ key: String) throws -> [PropertyListNode] {
        guard let collection = try referenced(in: object, key) else { return [] }
        return try elements(of: collection)
    }

    package func elements(of collection: ArchivedObject) throws -> [PropertyListNode] {
        guard ["NSArray", "NSMutableArray", "NSSet", "NSMutableSet"].contains(collection.className) else {
            throw ModelError(.unsupported, problems: ["\(collection.label) where an array or a set was expected"])
        }
        try collection.requireKnownKeys(["NS.objects"])
        switch collection.fields["NS.objects"] {
        case nil: return []
        case .array(let items)?: return items
        case let other?: throw ModelError(.unreadable, problems: ["\(collection.label).NS.objects is \(KeyedArchiveObjects.describe(other))"])
        }
    }

    /// The strings of the collection `node` refers to (unique tuples, compound indexes).
    func strings(of node: PropertyListNode, from place: String) throws -> [String] {
        guard let collection = try referencedObject(node, from: place) else { return [] }
        return try elements(of: collection).map { element in
            if case .uid(let uid) = element, let target = try archive.node(uid, from: "\(collection.label).NS.objects") {
                return try text(target, from: "\(collection.label).NS.objects")
            }
            return try text(element, from: "\(collection.label).NS.objects")
        }
    }

    func strings(in object: ArchivedObject, _ key: String) throws -> [String] {
        guard let node = object.fields[key] else { return [] }
        return try strings(of: node, from: "\(object.label).\(key)")
    }

    /// The entries of the dictionary under `key`, in the archive's order: an `NSDictionary`
    /// (`NS.keys`, `NS.objects`) or an `NSKnownKeysDictionary1` (its `searchMapping`'s keys and
    /// its `values`, slots holding the `emptyToken` skipped). Values are left unresolved.
    func dictionary(in object: ArchivedObject, _ key: String) throws -> [(key: String, value: PropertyListNode)] {
        guard let dictionary = try referenced(in: object, key) else { return [] }
        return try entries(of: dictionary)
    }

    /// The entries of an archived dictionary, as ``dictionary(in:_:)`` reads them.
    package func entries(of dictionary: ArchivedObject) throws -> [(key: String, value: PropertyListNode)] {
        let keys: [String]
        let values: [PropertyListNode]
        var empty: String?
        switch dictionary.className {
        case "NSDictionary", "NSMutableDictionary":
            try dictionary.requireKnownKeys(["NS.keys", "NS.objects"])
            guard case .array(let k)? = dictionary.fields["NS.keys"] ?? .array([]),
                  case .array(let v)? = dictionary.fields["NS.objects"] ?? .array([]) else {
                throw ModelError(.unreadable, problems: ["\(dictionary.label): NS.keys or NS.objects is not an array"])
            }
            keys = try k.map { node in try text(try resolve(node, from: "\(dictionary.label).NS.keys"), from: "\(dictionary.label).NS.keys") }
            values = v
        case "NSKnownKeysDictionary1":
            try dictionary.requireKnownKeys(["values", "searchMapping", "emptyToken", "version"])
            guard let mapping = try referenced(in: dictionary, "searchMapping") else {
                throw ModelError(.unreadable, problems: ["\(dictionary.label) has no searchMapping"])
            }
            try expect(mapping, "NSKnownKeysMappingStrategy1")
            try mapping.requireKnownKeys(["keys", "length", "version"])
            keys = try strings(in: mapping, "keys")
            values = try array(in: dictionary, "values")
            empty = try string(in: dictionary, "emptyToken")
        default:
            throw ModelError(.unsupported, problems: ["\(dictionary.label) where a dictionary was expected"])
        }
        guard keys.count == values.count else {
            throw ModelError(.unreadable, problems: ["\(dictionary.label) has \(keys.count) keys and \(values.count) values"])
        }
        var entries: [(key: String, value: PropertyListNode)] = []
        for (key, value) in zip(keys, values) {
            if let empty, case .uid(let uid) = value, case .string(empty)? = try archive.node(uid, from: dictionary.label) { continue }
            entries.append((key, value))
        }
        return entries
    }

    /// `node`, or what it refers to; a reference to `$null` is an error here.
    package func resolve(_ node: PropertyListNode, from place: String) throws -> PropertyListNode {
        guard case .uid(let uid) = node else { return node }
        guard let target = try archive.node(uid, from: place) else {
            throw ModelError(.unreadable, problems: ["\(place) holds $null"])
        }
        return target
    }

    /// User info: string keys to string values (what Xcode lets one enter).
    func userInfo(in object: ArchivedObject) throws -> [String: String] {
        var info: [String: String] = [:]
        for (key, node) in try dictionary(in: object, "NSUserInfo") {
            info[key] = try text(try resolve(node, from: "\(object.label).NSUserInfo[\(key)]"), from: "\(object.label).NSUserInfo[\(key)]")
        }
        return info
    }
}
