import Foundation

/// Builds an `NSKeyedArchiver` archive: `$objects` (index 0 `$null`), strings and class
/// records written once, objects referring to each other by UID.
struct KeyedArchiveBuilder {
    private(set) var objects: [PropertyListNode] = [.string("$null")]
    private var strings: [String: Int] = [:]
    private var classes: [String: Int] = [:]

    /// The superclass chains of the classes an archived model uses, as Apple's archives record them.
    static let chains: [String: [String]] = [
        "NSManagedObjectModel": ["NSObject"],
        "NSEntityDescription": ["NSObject"],
        "NSAttributeDescription": ["NSPropertyDescription", "NSObject"],
        "NSRelationshipDescription": ["NSPropertyDescription", "NSObject"],
        "NSFetchIndexDescription": ["NSObject"],
        "NSFetchIndexElementDescription": ["NSObject"],
        "NSKnownKeysDictionary1": ["NSKnownKeysDictionary", "NSMutableDictionary", "NSDictionary", "NSObject"],
        "NSKnownKeysMappingStrategy1": ["NSKnownKeysMappingStrategy", "NSObject"],
        "NSArray": ["NSObject"],
        "NSMutableArray": ["NSArray", "NSObject"],
        "NSSet": ["NSObject"],
        "NSDictionary": ["NSObject"],
        "NSMutableDictionary": ["NSDictionary", "NSObject"],
        "NSDecimalNumberPlaceholder": ["NSDecimalNumber", "NSNumber", "NSValue", "NSObject"],
        "NSDate": ["NSObject"],
        "NSData": ["NSObject"],
        "NSUUID": ["NSObject"],
        "NSURL": ["NSObject"],
    ]

    /// A reference to `nil`.
    static let null = PropertyListNode.uid(0)

    /// A reference to the string `text`, added once.
    mutating func string(_ text: String) -> PropertyListNode {
        if let known = strings[text] { return .uid(known) }
        objects.append(.string(text))
        strings[text] = objects.count - 1
        return .uid(objects.count - 1)
    }

    /// A reference to an inline value (a number or a Boolean) as its own object.
    mutating func value(_ node: PropertyListNode) -> PropertyListNode {
        objects.append(node)
        return .uid(objects.count - 1)
    }

    /// A slot for an object whose fields are set later (objects that refer to each other).
    mutating func reserve() -> Int {
        objects.append(.string("$null"))
        return objects.count - 1
    }

    /// Sets the object in `slot`: an instance of `className` with `fields`.
    mutating func set(_ slot: Int, _ className: String, _ fields: [String: PropertyListNode]) {
        var fields = fields
        fields["$class"] = classRecord(className)
        objects[slot] = .dictionary(fields)
    }

    /// A new object of `className` with `fields`.
    mutating func object(_ className: String, _ fields: [String: PropertyListNode]) -> PropertyListNode {
        let slot = reserve()
        set(slot, className, fields)
        return .uid(slot)
    }

    mutating func array(_ items: [PropertyListNode], mutable: Bool = false) -> PropertyListNode {
        object(mutable ? "NSMutableArray" : "NSArray", ["NS.objects": .array(items)])
    }

    mutating func dictionary(_ entries: [(String, PropertyListNode)], mutable: Bool) -> PropertyListNode {
        let keys = entries.map { string($0.0) }
        return object(mutable ? "NSMutableDictionary" : "NSDictionary", ["NS.keys": .array(keys), "NS.objects": .array(entries.map(\.1))])
    }

    private mutating func classRecord(_ name: String) -> PropertyListNode {
        if let known = classes[name] { return .uid(known) }
        let chain = [name] + (Self.chains[name] ?? ["NSObject"])
        objects.append(.dictionary(["$classname": .string(name), "$classes": .array(chain.map(PropertyListNode.string))]))
        classes[name] = objects.count - 1
        return .uid(objects.count - 1)
    }

    /// The archive, `root` at `$top.root`, as a binary property list.
    func data(root: PropertyListNode) -> Data {
        BinaryPropertyListWriter.encode(.dictionary([
            "$archiver": .string("NSKeyedArchiver"), "$version": .integer(100_000),
            "$top": .dictionary(["root": root]), "$objects": .array(objects),
        ]))
    }
}

/// Encodes a ``ManagedObjectModel`` as Core Data archives one: the form
/// ``ArchivedModelReader`` reads, with the classes, keys and value forms Apple's archives in
/// `shared/fixtures/coredata-stores` show (docs/coredata-formats.md, "Writing the model cache").
///
/// Every entity's `NSProperties` holds its own copy of each inherited property, whose
/// `NSEntity` is that entity, as Core Data's do.
struct ArchivedModelWriter {
    let model: ManagedObjectModel
    private var archive = KeyedArchiveBuilder()
    private var entitySlots: [String: Int] = [:]
    /// Each entity's property objects by name.
    private var propertySlots: [String: [String: Int]] = [:]

    /// The token Core Data's known-keys dictionaries mark an empty slot with.
    static let emptySlotToken = "__empty_slot_token_4c24_98dc_ac1e_b773__"

    init(model: ManagedObjectModel) {
        self.model = model
    }

    /// The archive of `model`.
    /// - Throws: ``ModelError`` (`unsupported`) naming each part of the model whose archived form
    ///   no real archive has shown (docs/coredata-formats.md): written without it, Core Data would
    ///   read another model.
    static func encode(_ model: ManagedObjectModel) throws -> Data {
        var problems: [String] = []
        if !model.configurations.isEmpty { problems.append("named configurations") }
        for entity in model.entities {
            if entity.isAbstract { problems.append("\(entity.name): abstract") }
            for attribute in entity.attributes {
                if !attribute.validation.isEmpty { problems.append("\(entity.name).\(attribute.name): validation rules") }
                if attribute.allowsExternalBinaryDataStorage { problems.append("\(entity.name).\(attribute.name): external storage") }
                if case .decimal(let v)? = attribute.defaultValue, decimalFields(v) == nil {
                    problems.append("\(entity.name).\(attribute.name): a decimal default whose mantissa does not fit in 128 bits")
                }
            }
        }
        guard problems.isEmpty else {
            throw ModelError(.unsupported, problems: problems.map { "\($0) (how Core Data archives it is not established: no model cache is written)" })
        }
        var writer = ArchivedModelWriter(model: model)
        return writer.encode()
    }

    private mutating func encode() -> Data {
        let root = archive.reserve()
        let entities = model.entityDescriptions
        for entity in entities { entitySlots[entity.name] = archive.reserve() }
        for entity in entities {
            let names = Array(entity.attributesByName.keys) + Array(entity.relationshipsByName.keys)
            propertySlots[entity.name] = Dictionary(uniqueKeysWithValues: names.sorted().map { ($0, archive.reserve()) })
        }
        for entity in entities { writeEntity(entity, root: root) }
        let names = entities.map(\.name)
        let mapping = archive.object("NSKnownKeysMappingStrategy1", [
            "keys": archive.array(names.map { archive.string($0) }), "length": .integer(Int64(names.count)), "version": .integer(1),
        ])
        let entityDictionary = archive.object("NSKnownKeysDictionary1", [
            "values": archive.array(names.map { .uid(entitySlots[$0]!) }), "searchMapping": mapping,
            "emptyToken": archive.string(Self.emptySlotToken), "version": .integer(1),
        ])
        let identifiers = model.versionIdentifiers.isEmpty ? [""] : model.versionIdentifiers
        archive.set(root, "NSManagedObjectModel", [
            "NSEntities": entityDictionary, "NSFetchRequestTemplates": KeyedArchiveBuilder.null,
            "NSVersionIdentifiers": archive.object("NSSet", ["NS.objects": .array(identifiers.map { archive.string($0) })]),
        ])
        return archive.data(root: .uid(root))
    }

    private mutating func writeEntity(_ entity: EntityDescription, root: Int) {
        let declaration = entity.declaration
        let name = archive.string(entity.name)
        var properties: [(String, PropertyListNode)] = []
        for (propertyName, slot) in propertySlots[entity.name]!.sorted(by: { $0.key < $1.key }) {
            if let attribute = entity.attributesByName[propertyName] {
                writeAttribute(attribute, of: entity, in: slot)
            } else {
                writeRelationship(entity.relationshipsByName[propertyName]!, of: entity, in: slot)
            }
            properties.append((propertyName, .uid(slot)))
        }
        let subentities = entity.subentities.sorted().map { ($0, PropertyListNode.uid(entitySlots[$0]!)) }
        var fields: [String: PropertyListNode] = [
            "NSEntityName": name,
            "NSClassNameForEntity": declaration.representedClassName.map { archive.string($0) } ?? KeyedArchiveBuilder.null,
            "NSProperties": archive.dictionary(properties, mutable: true),
            "NSSubentities": archive.dictionary(subentities, mutable: true),
            "NSSuperentity": entity.parent.map { .uid(entitySlots[$0]!) } ?? KeyedArchiveBuilder.null,
            "NSManagedObjectModel": .uid(root),
            "NSRenamingIdentifier": archive.string(declaration.renamingIdentifier ?? entity.name),
            "NSUserInfo": userInfo(declaration.userInfo),
            "NSVersionHashModifier": declaration.versionHashModifier.map { archive.string($0) } ?? KeyedArchiveBuilder.null,
        ]
        let slot = entitySlots[entity.name]!
        let indexes = declaration.indexes.map { index -> PropertyListNode in
            let indexSlot = archive.reserve()
            let elements = index.elements.map { element in
                archive.object("NSFetchIndexElementDescription", [
                    "NSPropertyName": archive.string(element.property), "NSFetchIndexDescription": .uid(indexSlot),
                    "NSAscending": .boolean(element.ascending), "NSFetchIndexElementType": .integer(0),
                ])
            }
            archive.set(indexSlot, "NSFetchIndexDescription", [
                "NSIndexName": archive.string(index.name), "NSEntity": .uid(slot),
                "NSIndexElements": archive.array(elements, mutable: true), "NSPartialIndexPredicate": KeyedArchiveBuilder.null,
            ])
            return .uid(indexSlot)
        }
        fields["NSFetchIndexDescriptions"] = archive.array(indexes, mutable: true)
        fields["NSCompoundIndexes"] = archive.array(declaration.indexes.filter { $0.elements.count > 1 }.map { index in
            archive.array(index.elements.map { archive.string($0.property) }, mutable: true)
        }, mutable: true)
        if !declaration.uniquenessConstraints.isEmpty {
            fields["NSUniqueTuples"] = archive.array(declaration.uniquenessConstraints.map { tuple in
                archive.array(tuple.map { archive.string($0) }, mutable: true)
            }, mutable: true)
        }
        archive.set(slot, "NSEntityDescription", fields)
    }

    /// `_P`: the bits always set, optional, transient, ordered, and "no version hash modifier".
    private func packed(optional: Bool, transient: Bool, ordered: Bool, modifier: String?) -> PropertyListNode {
        typealias Flag = ArchivedModelReader.PackedFlag
        var bits = Flag.alwaysSet
        if optional { bits |= Flag.optional }
        if transient { bits |= Flag.transient }
        if ordered { bits |= Flag.ordered }
        if modifier == nil { bits |= Flag.noVersionHashModifier }
        return .integer(bits)
    }

    /// The keys every property has, and the Booleans Core Data writes only when true.
    private mutating func propertyFields(name: String, of entity: EntityDescription, optional: Bool, transient: Bool,
                                         renamingIdentifier: String?, modifier: String?, userInfo info: [String: String]) -> [String: PropertyListNode] {
        var fields: [String: PropertyListNode] = [
            "NSPropertyName": archive.string(name), "NSEntity": .uid(entitySlots[entity.name]!),
            "NSRenamingIdentifier": archive.string(renamingIdentifier ?? name),
        ]
        if optional { fields["NSIsOptional"] = .boolean(true) }
        if transient { fields["NSIsTransient"] = .boolean(true) }
        if let modifier { fields["NSVersionHashModifier"] = archive.string(modifier) }
        if !info.isEmpty { fields["NSUserInfo"] = userInfo(info) }
        return fields
    }

    private mutating func writeAttribute(_ attribute: Attribute, of entity: EntityDescription, in slot: Int) {
        var fields = propertyFields(name: attribute.name, of: entity, optional: attribute.isOptional, transient: attribute.isTransient,
                                    renamingIdentifier: attribute.renamingIdentifier, modifier: attribute.versionHashModifier, userInfo: attribute.userInfo)
        fields["NSAttributeType"] = .integer(Int64(attribute.type.rawValue))
        fields["NSAttributeValueClassName"] = Self.valueClassName(attribute.type).map { archive.string($0) } ?? KeyedArchiveBuilder.null
        fields["NSValueTransformerName"] = attribute.valueTransformerName.map { archive.string($0) } ?? KeyedArchiveBuilder.null
        fields["NSDefaultValue"] = attribute.defaultValue.map { defaultValue($0) } ?? KeyedArchiveBuilder.null
        fields["NSFlagsKey"] = .integer(attribute.preservesValueInHistoryOnDeletion ? ArchivedModelReader.preservesValueFlag : 0)
        // An attribute marked indexed in Xcode: Core Data archives the flag and a fetch index of its name on it alone.
        if entity.declaration.indexes.contains(where: { $0.name == attribute.name && $0.elements.map(\.property) == [attribute.name] }) {
            fields["NSIsIndexed"] = .boolean(true)
        }
        fields["_P"] = packed(optional: attribute.isOptional, transient: attribute.isTransient, ordered: false, modifier: attribute.versionHashModifier)
        archive.set(slot, "NSAttributeDescription", fields)
    }

    private mutating func writeRelationship(_ relationship: Relationship, of entity: EntityDescription, in slot: Int) {
        var fields = propertyFields(name: relationship.name, of: entity, optional: relationship.isOptional, transient: relationship.isTransient,
                                    renamingIdentifier: relationship.renamingIdentifier, modifier: relationship.versionHashModifier,
                                    userInfo: relationship.userInfo)
        fields["NSDestinationEntity"] = .uid(entitySlots[relationship.destination]!)
        fields["_NSDestinationEntityName"] = archive.string(relationship.destination)
        // The inverse is the destination entity's own copy of it.
        fields["NSInverseRelationship"] = relationship.inverse.flatMap { propertySlots[relationship.destination]?[$0] }.map { .uid($0) } ?? KeyedArchiveBuilder.null
        fields["_NSInverseRelationshipName"] = relationship.inverse.map { archive.string($0) } ?? KeyedArchiveBuilder.null
        fields["NSMinCount"] = .integer(Int64(relationship.minCount))
        fields["NSMaxCount"] = .integer(Int64(relationship.isToMany ? relationship.maxCount : 1))
        let rules: [DeleteRule: Int64] = [.noAction: 0, .nullify: 1, .cascade: 2, .deny: 3]
        fields["NSDeleteRule"] = .integer(rules[relationship.deleteRule]!)
        if relationship.isOrdered { fields["NSIsOrdered"] = .boolean(true) }
        fields["_P"] = packed(optional: relationship.isOptional, transient: relationship.isTransient, ordered: relationship.isOrdered,
                              modifier: relationship.versionHashModifier)
        archive.set(slot, "NSRelationshipDescription", fields)
    }

    /// The Foundation class of an attribute type's values, as Core Data records it.
    static func valueClassName(_ type: AttributeType) -> String? {
        switch type {
        case .integer16, .integer32, .integer64, .double, .float, .boolean: "NSNumber"
        case .decimal: "NSDecimalNumber"
        case .string: "NSString"
        case .date: "NSDate"
        case .binaryData: "NSData"
        case .uuid: "NSUUID"
        case .uri: "NSURL"
        default: nil
        }
    }

    private mutating func userInfo(_ info: [String: String]) -> PropertyListNode {
        let entries = info.keys.sorted().map { ($0, archive.string(info[$0]!)) }
        return archive.dictionary(entries, mutable: false)
    }

    /// A default value in the form Core Data archives it (what ``ArchivedModelReader/defaultValue(_:type:place:)`` reads).
    private mutating func defaultValue(_ value: Value) -> PropertyListNode {
        switch value {
        case .integer(let v): return archive.value(.integer(v))
        case .double(let v): return archive.value(.real(v))
        case .boolean(let v): return archive.value(.boolean(v))
        case .string(let v): return archive.string(v)
        case .date(let v): return archive.object("NSDate", ["NS.time": .real(v.timeIntervalSinceReferenceDate)])
        case .data(let v): return archive.object("NSData", ["NS.data": .data(v)])
        case .uuid(let v): return archive.object("NSUUID", ["NS.uuidbytes": .data(withUnsafeBytes(of: v.uuid) { Data($0) })])
        case .uri(let v): return archive.object("NSURL", ["NS.base": KeyedArchiveBuilder.null, "NS.relative": archive.string(v.absoluteString)])
        // ``encode(_:)`` refused a model with a decimal default that has no such fields.
        case .decimal(let v): return archive.object("NSDecimalNumberPlaceholder", Self.decimalFields(v)!)
        }
    }

    /// An `NSDecimalNumber`'s keys: the mantissa as eight little-endian 16-bit words (`NS.length`
    /// of them used), the exponent and the sign.
    /// Nil when the mantissa does not fit in 128 bits.
    static func decimalFields(_ value: Decimal) -> [String: PropertyListNode]? {
        // The digits and exponent from the decimal's text (trailing zeros moved into the
        // exponent: 1e40 is 1 and 40), the digits into a 128-bit number of 16-bit words.
        let text = value.magnitude.description
        var exponent = 0
        var digits = ""
        var afterPoint = false
        for character in text {
            if character == "." { afterPoint = true; continue }
            digits.append(character)
            if afterPoint { exponent -= 1 }
        }
        while digits.count > 1, digits.hasSuffix("0") {
            digits.removeLast()
            exponent += 1
        }
        var words = [UInt16](repeating: 0, count: 8)
        for digit in digits.utf8 {
            var carry = UInt32(digit - UInt8(ascii: "0"))
            for index in words.indices {
                let product = UInt32(words[index]) * 10 + carry
                words[index] = UInt16(truncatingIfNeeded: product)
                carry = product >> 16
            }
            guard carry == 0 else { return nil }
        }
        guard (-128...127).contains(exponent) else { return nil }
        let length = (words.lastIndex { $0 != 0 } ?? -1) + 1
        if length == 0 { exponent = 0 }
        return [
            "NS.mantissa": .data(Data(words.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })), "NS.mantissa.bo": .integer(1),
            "NS.exponent": .integer(Int64(exponent)), "NS.length": .integer(Int64(length)),
            "NS.negative": .boolean(value < 0), "NS.compact": .boolean(true),
        ]
    }
}
