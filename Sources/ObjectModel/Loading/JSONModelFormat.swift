import Foundation

/// ObjectStore's own JSON model format (`docs/model-format.md`).
///
/// Writing a model and reading it back gives an equal model.
///
/// ```swift
/// let data = try JSONModelFormat.encode(model)
/// let same = try JSONModelFormat.decode(data)
/// ```
public enum JSONModelFormat {
    /// The value of the document's `format` key.
    public static let formatName = "objectstore-model"
    /// The format version this library writes and reads.
    public static let formatVersion = 1

    /// The model as a JSON document, keys sorted and pretty-printed.
    public static func encode(_ model: ManagedObjectModel) throws -> Data {
        if let encoded = model.derived.json.withLock({ $0 }) { return encoded }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let encoded = try encoder.encode(ModelDocument(model))
        model.derived.json.withLock { $0 = encoded }
        return encoded
    }

    /// Reads a model from a JSON document.
    ///
    /// - Parameters:
    ///   - data: the JSON document.
    ///   - file: the file name used in errors.
    /// - Throws: ``ModelError``: ``ModelError/Code/syntax`` with line and column for
    ///   JSON that does not parse, ``ModelError/Code/unsupported`` for a document of
    ///   another shape, ``ModelError/Code/inconsistentModel`` for a model that does not hold together.
    public static func decode(_ data: Data, file: String = "model.json") throws -> ManagedObjectModel {
        guard !data.isEmpty else { throw ModelError(.unreadable, problems: ["the model file is empty"], file: file) }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            let (line, column) = SyntaxPosition.of(error, in: data)
            throw ModelError(.syntax, problems: ["the JSON does not parse"], file: file, line: line, column: column)
        }
        // A key the format does not have (`isAbstract` for `abstract`) would be read as nothing.
        if let unknown = unknownKeys(object).first {
            throw ModelError(.unsupported, problems: [unknown], file: file)
        }
        let document: ModelDocument
        do {
            document = try JSONDecoder().decode(ModelDocument.self, from: data)
        } catch let error as DecodingError {
            throw ModelError(.unsupported, problems: [describe(error)], file: file)
        }
        do {
            return try document.model()
        } catch let error as ModelError {
            throw error.located(in: file)
        }
    }

    private static let documentKeys: Set<String> = ["format", "formatVersion", "versionIdentifiers", "configurations", "entities"]
    private static let entityKeys: Set<String> = ["name", "parent", "abstract", "attributes", "relationships", "renamingIdentifier",
                                                  "versionHashModifier", "uniquenessConstraints", "indexes", "representedClassName", "userInfo"]
    private static let attributeKeys: Set<String> = ["name", "type", "optional", "transient", "default", "minValue", "maxValue", "minLength",
                                                     "maxLength", "pattern", "renamingIdentifier", "versionHashModifier",
                                                     "allowsExternalBinaryDataStorage", "preservesValueInHistoryOnDeletion",
                                                     "valueTransformerName", "userInfo"]
    private static let relationshipKeys: Set<String> = ["name", "destination", "inverse", "toMany", "ordered", "minCount", "maxCount",
                                                        "deleteRule", "optional", "transient", "renamingIdentifier", "versionHashModifier", "userInfo"]

    /// Each key of the document, its entities, attributes and relationships that the format does not have, with where it is.
    private static func unknownKeys(_ object: Any) -> [String] {
        guard let document = object as? [String: Any] else { return [] }
        var found = Set(document.keys).subtracting(documentKeys).sorted().map { "unknown key \($0) (a model document has \(documentKeys.sorted().joined(separator: ", ")))" }
        for case let entity as [String: Any] in document["entities"] as? [Any] ?? [] {
            let name = entity["name"] as? String ?? "an entity"
            found += Set(entity.keys).subtracting(entityKeys).sorted().map { "\(name): unknown key \($0) (an entity has \(entityKeys.sorted().joined(separator: ", ")))" }
            for (list, keys) in [("attributes", attributeKeys), ("relationships", relationshipKeys)] {
                for case let property as [String: Any] in entity[list] as? [Any] ?? [] {
                    let place = "\(name).\(property["name"] as? String ?? "?")"
                    found += Set(property.keys).subtracting(keys).sorted().map { "\(place): unknown key \($0) (one of \(list) has \(keys.sorted().joined(separator: ", ")))" }
                }
            }
        }
        return found
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let text = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return text.isEmpty ? "the document" : String(text.drop(while: { $0 == "." }))
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context)): missing key \(key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "the document does not have the shape of a model"
        }
    }
}

/// The line and column of a syntax error reported by Foundation's JSON parser.
public enum SyntaxPosition {
    /// The 1-based line and column `error` points at in `data`, when it says.
    public static func of(_ error: Error, in data: Data) -> (Int?, Int?) {
        let text = "\(error) \((error as NSError).userInfo)"
        if let line = number(after: "line ", in: text), let column = number(after: "column ", in: text) {
            return (line, column)
        }
        if let offset = number(after: "character ", in: text) ?? number(after: "offset ", in: text) {
            return position(ofByte: offset, in: data)
        }
        return (nil, nil)
    }

    /// The offset of the first byte of `data` that is not part of well-formed UTF-8, or nil.
    public static func firstInvalidUTF8(in data: Data) -> Int? {
        var iterator = data.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    /// The 1-based line and column of byte `offset` in `data`.
    public static func position(ofByte offset: Int, in data: Data) -> (Int, Int) {
        var line = 1
        var column = 1
        for byte in data.prefix(offset) {
            if byte == UInt8(ascii: "\n") { line += 1; column = 1 } else { column += 1 }
        }
        return (line, column)
    }

    private static func number(after marker: String, in text: String) -> Int? {
        guard let range = text.range(of: marker) else { return nil }
        let digits = text[range.upperBound...].prefix(while: \.isNumber)
        return Int(digits)
    }
}

private struct ModelDocument: Codable {
    var format: String
    var formatVersion: Int
    var versionIdentifiers: [String]?
    var configurations: [String: [String]]?
    var entities: [EntityDocument]

    init(_ model: ManagedObjectModel) {
        format = JSONModelFormat.formatName
        formatVersion = JSONModelFormat.formatVersion
        versionIdentifiers = model.versionIdentifiers
        configurations = model.configurations.isEmpty ? nil : model.configurations
        entities = model.entities.map(EntityDocument.init)
    }

    func model() throws -> ManagedObjectModel {
        guard format == JSONModelFormat.formatName else {
            throw ModelError(.unsupported, problems: ["format is \(String(reflecting: format)), expected \"\(JSONModelFormat.formatName)\""])
        }
        guard formatVersion == JSONModelFormat.formatVersion else {
            throw ModelError(.unsupported, problems: ["format version \(formatVersion) is not supported (this library reads \(JSONModelFormat.formatVersion))"])
        }
        return try ManagedObjectModel(
            entities: try entities.map { try $0.entity() }, configurations: configurations ?? [:],
            versionIdentifiers: versionIdentifiers ?? [])
    }
}

private struct EntityDocument: Codable {
    var name: String
    var parent: String?
    var abstract: Bool?
    var attributes: [AttributeDocument]?
    var relationships: [RelationshipDocument]?
    var renamingIdentifier: String?
    var versionHashModifier: String?
    var uniquenessConstraints: [[String]]?
    var indexes: [FetchIndex]?
    var representedClassName: String?
    var userInfo: [String: String]?

    init(_ e: Entity) {
        name = e.name
        parent = e.parent
        abstract = e.isAbstract ? true : nil
        attributes = e.attributes.map(AttributeDocument.init)
        relationships = e.relationships.map(RelationshipDocument.init)
        renamingIdentifier = e.renamingIdentifier
        versionHashModifier = e.versionHashModifier
        uniquenessConstraints = e.uniquenessConstraints.isEmpty ? nil : e.uniquenessConstraints
        indexes = e.indexes.isEmpty ? nil : e.indexes
        representedClassName = e.representedClassName
        userInfo = e.userInfo.isEmpty ? nil : e.userInfo
    }

    func entity() throws -> Entity {
        Entity(
            name, parent: parent, abstract: abstract ?? false,
            attributes: try (attributes ?? []).map { try $0.attribute(in: name) },
            relationships: try (relationships ?? []).map { try $0.relationship(in: name) },
            renamingIdentifier: renamingIdentifier, versionHashModifier: versionHashModifier,
            uniquenessConstraints: uniquenessConstraints ?? [], indexes: indexes ?? [],
            representedClassName: representedClassName, userInfo: userInfo ?? [:])
    }
}

/// A JSON scalar holding an attribute value: a number, a Boolean or a string.
private enum JSONScalar: Codable {
    case bool(Bool), integer(Int64), double(Double), string(String)

    init(_ value: Value) {
        switch value {
        case .integer(let v): self = .integer(v)
        case .double(let v) where v.isFinite: self = .double(v)
        case .boolean(let v): self = .bool(v)
        default: self = .string(value.textForm)
        }
    }

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let v = try? c.decode(Bool.self) { self = .bool(v) }
        else if let v = try? c.decode(Int64.self) { self = .integer(v) }
        else if let v = try? c.decode(Double.self) { self = .double(v) }
        else { self = .string(try c.decode(String.self)) }
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .bool(let v): try c.encode(v)
        case .integer(let v): try c.encode(v)
        case .double(let v): try c.encode(v)
        case .string(let v): try c.encode(v)
        }
    }

    func value(as type: AttributeType, place: String) throws -> Value {
        let parsed: Value? = switch self {
        case .bool(let v): type == .boolean ? .boolean(v) : nil
        case .integer(let v): type.coerce(.integer(v))
        case .double(let v): type.coerce(.double(v))
        case .string(let v): type.parseValue(v)
        }
        guard let parsed else {
            throw ModelError(.inconsistentModel, problems: ["\(place): \(self) is not a valid \(type.modelName)"])
        }
        return parsed
    }
}

private struct AttributeDocument: Codable {
    var name: String
    var type: String
    var optional: Bool?
    var transient: Bool?
    var `default`: JSONScalar?
    var minValue: JSONScalar?
    var maxValue: JSONScalar?
    var minLength: Int?
    var maxLength: Int?
    var pattern: String?
    var renamingIdentifier: String?
    var versionHashModifier: String?
    var allowsExternalBinaryDataStorage: Bool?
    var preservesValueInHistoryOnDeletion: Bool?
    var valueTransformerName: String?
    var userInfo: [String: String]?

    init(_ a: Attribute) {
        name = a.name
        type = a.type.modelName
        optional = a.isOptional
        transient = a.isTransient ? true : nil
        self.default = a.defaultValue.map(JSONScalar.init)
        minValue = a.validation.minValue.map(JSONScalar.init)
        maxValue = a.validation.maxValue.map(JSONScalar.init)
        minLength = a.validation.minLength
        maxLength = a.validation.maxLength
        pattern = a.validation.pattern
        renamingIdentifier = a.renamingIdentifier
        versionHashModifier = a.versionHashModifier
        allowsExternalBinaryDataStorage = a.allowsExternalBinaryDataStorage ? true : nil
        preservesValueInHistoryOnDeletion = a.preservesValueInHistoryOnDeletion ? true : nil
        valueTransformerName = a.valueTransformerName
        userInfo = a.userInfo.isEmpty ? nil : a.userInfo
    }

    func attribute(in entity: String) throws -> Attribute {
        let place = "\(entity).\(name)"
        guard let type = AttributeType(modelName: self.type) else {
            throw ModelError(.inconsistentModel, problems: ["\(place): unknown attribute type \(String(reflecting: self.type))"])
        }
        let rules = ValidationRules(
            minValue: try minValue?.value(as: type, place: place), maxValue: try maxValue?.value(as: type, place: place),
            minLength: minLength, maxLength: maxLength, pattern: pattern)
        return Attribute(
            name, type, optional: optional ?? true, transient: transient ?? false,
            default: try self.default?.value(as: type, place: place), validation: rules,
            renamingIdentifier: renamingIdentifier, versionHashModifier: versionHashModifier,
            allowsExternalBinaryDataStorage: allowsExternalBinaryDataStorage ?? false,
            preservesValueInHistoryOnDeletion: preservesValueInHistoryOnDeletion ?? false,
            valueTransformerName: valueTransformerName, userInfo: userInfo ?? [:])
    }
}

private struct RelationshipDocument: Codable {
    var name: String
    var destination: String
    var inverse: String?
    var toMany: Bool?
    var ordered: Bool?
    var minCount: Int?
    var maxCount: Int?
    var deleteRule: DeleteRule?
    var optional: Bool?
    var transient: Bool?
    var renamingIdentifier: String?
    var versionHashModifier: String?
    var userInfo: [String: String]?

    init(_ r: Relationship) {
        name = r.name
        destination = r.destination
        inverse = r.inverse
        toMany = r.isToMany
        ordered = r.isOrdered ? true : nil
        minCount = r.minCount == 0 ? nil : r.minCount
        maxCount = r.isToMany && r.maxCount != 0 ? r.maxCount : nil
        deleteRule = r.deleteRule
        optional = r.isOptional
        transient = r.isTransient ? true : nil
        renamingIdentifier = r.renamingIdentifier
        versionHashModifier = r.versionHashModifier
        userInfo = r.userInfo.isEmpty ? nil : r.userInfo
    }

    func relationship(in entity: String) throws -> Relationship {
        Relationship(
            name, to: destination, inverse: inverse, toMany: toMany ?? false, ordered: ordered ?? false,
            minCount: minCount ?? 0, maxCount: maxCount, deleteRule: deleteRule ?? .nullify,
            optional: optional ?? true, transient: transient ?? false, renamingIdentifier: renamingIdentifier,
            versionHashModifier: versionHashModifier, userInfo: userInfo ?? [:])
    }
}
