import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import ObjectModel
import ObjectStore

/// Xcode's mapping models (`.xcmappingmodel`), read into a ``MappingModel``.
///
/// A `.xcmappingmodel` folder holds `xcmapping.xml`, a Core Data XML store of Xcode's editing
/// objects: one `XDDEVMAPPINGMODEL` (the paths of the two model versions), an
/// `XDDEVENTITYMAPPING` per entity mapping and an `XDDEVATTRIBUTEMAPPING` or
/// `XDDEVRELATIONSHIPMAPPING` per property mapping (docs/coredata-formats.md, "Xcode mapping
/// models", says what each key is and where that is known from). Value expressions are the
/// archived `NSExpression`s of the common cases: `$source.name`, key paths on `$source`,
/// constants and `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "…", $source.x)`;
/// anything else is refused, never guessed. A custom policy class the file names becomes the
/// entity mapping's ``EntityMapping/policyName``: a policy of that name must be registered in
/// the ``PolicyRegistry`` (``MappingModel/check(from:to:policies:)`` says so when it is not).
///
/// ```swift
/// let mapping = try XcodeMappingModel.load(at: URL(filePath: "Notes2ToNotes3.xcmappingmodel"))
/// let migrator = StoreMigrator(versions: versions, mappings: [StepMapping(name: "Notes2ToNotes3", mapping: mapping)])
/// ```
public enum XcodeMappingModel {
    /// The file inside a `.xcmappingmodel` folder.
    public static let fileName = "xcmapping.xml"

    /// Whether `url` is an Xcode mapping model: a folder ending in `.xcmappingmodel` or holding
    /// `xcmapping.xml`, or a file named `xcmapping.xml`.
    public static func isMappingModel(at url: URL) -> Bool {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) else {
            return url.pathExtension == "xcmappingmodel" || url.lastPathComponent == fileName
        }
        if isFolder.boolValue {
            return url.pathExtension == "xcmappingmodel" || FileManager.default.fileExists(atPath: url.appending(path: fileName).path)
        }
        return url.lastPathComponent == fileName
    }

    /// Reads the mapping model at `url`: a `.xcmappingmodel` folder or its `xcmapping.xml`.
    /// - Throws: ``MigrationError`` with ``MigrationError/Code/invalidMapping``: the file cannot be
    ///   read, or what ``decode(_:file:)`` refuses.
    public static func load(at url: URL) throws -> MappingModel {
        var isFolder: ObjCBool = false
        let file = FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) && isFolder.boolValue
            ? url.appending(path: fileName) : url
        let data: Data
        do { data = try Data(contentsOf: file) } catch {
            // The one wording of a missing file; the path as it was given (a folder's file named in it).
            let given = file == url ? url.relativePath : url.relativePath + "/" + fileName
            guard FileManager.default.fileExists(atPath: file.path) else {
                throw MigrationError(.invalidMapping, "\(given): no such file or directory")
            }
            throw MigrationError(.invalidMapping, "\(given): cannot be read (\(error.localizedDescription))")
        }
        return try decode(data, file: file.path)
    }

    /// Reads the text of an `xcmapping.xml`.
    ///
    /// The mapping's ``MappingModel/sourceVersion`` and ``MappingModel/destinationVersion`` are
    /// the names of the model versions the file records (`sourcemodelpath`,
    /// `destinationmodelpath`: `…/Notes 2.xcdatamodel` is the version `Notes 2`); a file that
    /// records none fits a step by its entity and property names (``StepMapping``).
    /// - Throws: ``MigrationError`` with ``MigrationError/Code/invalidMapping`` naming the file,
    ///   the line or the entity mapping and property at fault: XML that does not parse, no
    ///   mapping model object, an object, key or type not known, a reference to a missing object,
    ///   a value that is not of its type (base64, Boolean, number), a damaged archive, an
    ///   expression that does not map exactly, a filter that does not parse.
    public static func decode(_ data: Data, file: String = fileName) throws -> MappingModel {
        let objects = try XMLStoreObjects.parse(data, file: file)
        return try MappingModelBuilder(objects: objects, file: file).mappingModel()
    }
}

/// The objects of a Core Data XML store (`<database>`, `<databaseInfo>`, `<object>`s), as text.
struct XMLStoreObjects {
    struct Object {
        var type: String
        var id: String
        var line: Int
        /// Attribute name (lowercased, as the XML store writes them) → (declared type, text).
        var attributes: [String: (type: String, text: String)] = [:]
        /// Relationship name → the ids it refers to.
        var relationships: [String: [String]] = [:]
    }

    var objects: [Object] = []
    var byID: [String: Object] = [:]

    static func parse(_ data: Data, file: String) throws -> XMLStoreObjects {
        func fail(_ message: String, line: Int? = nil, column: Int? = nil) -> MigrationError {
            let place = line.map { ":\($0)" + (column.map { ":\($0)" } ?? "") } ?? ""
            return MigrationError(.invalidMapping, "\(file)\(place): \(message)")
        }
        guard !data.isEmpty else { throw fail("the file is empty") }
        if let unsafe = XcodeModelReader.unsafeInput(data) { throw fail(unsafe.message, line: unsafe.line, column: unsafe.column) }
        let parser = XMLParser(data: data)
        let delegate = Delegate()
        parser.delegate = delegate
        parser.shouldProcessNamespaces = false
        let parsed = parser.parse()
        if let failure = delegate.failure { throw fail(failure.message, line: failure.line, column: failure.column) }
        guard parsed else {
            let text = parser.parserError.map { ($0 as NSError).localizedDescription } ?? "unknown error"
            throw fail("the XML does not parse (\(text))", line: parser.lineNumber, column: parser.columnNumber)
        }
        // Foundation's parser on Linux accepts a document that ends inside an element.
        if let open = delegate.path.last {
            let (line, column) = SyntaxPosition.position(ofByte: data.count, in: data)
            throw fail("the XML ends before <\(open)> is closed", line: line, column: column)
        }
        guard delegate.sawDatabase else { throw fail("no <database> element: not a Core Data XML store") }
        var store = XMLStoreObjects()
        for object in delegate.objects {
            guard store.byID[object.id] == nil else { throw fail("two objects have the id \(object.id)", line: object.line) }
            store.byID[object.id] = object
            store.objects.append(object)
        }
        return store
    }

    private final class Delegate: NSObject, XMLParserDelegate {
        var objects: [Object] = []
        var sawDatabase = false
        var failure: (message: String, line: Int, column: Int)?
        private(set) var path: [String] = []
        private var object: Object?
        private var attribute: (name: String, type: String)?
        private var text = ""

        private func fail(_ parser: XMLParser, _ message: String) {
            guard failure == nil else { return }
            failure = (message, parser.lineNumber, parser.columnNumber)
            parser.abortParsing()
        }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes a: [String: String] = [:]) {
            defer { path.append(name) }
            // Everything under <databaseInfo> (version, UUID, the metadata plist) is the store's, not the mapping's.
            if path.count >= 2, path[1] == "databaseInfo" { return }
            switch (path.last, name) {
            case (nil, "database"): sawDatabase = true
            case ("database", "databaseInfo"): return
            case ("database", "object"):
                guard let type = a["type"], !type.isEmpty, let id = a["id"], !id.isEmpty else {
                    return fail(parser, "an <object> without a type or an id")
                }
                object = Object(type: type.uppercased(), id: id, line: parser.lineNumber)
            case ("object", "attribute"):
                guard let attributeName = a["name"], let type = a["type"] else { return fail(parser, "an <attribute> without a name or a type") }
                guard object?.attributes[attributeName.lowercased()] == nil else {
                    return fail(parser, "\(object!.id) has the attribute \(attributeName) twice")
                }
                attribute = (attributeName.lowercased(), type)
                text = ""
            case ("object", "relationship"):
                guard let relationshipName = a["name"] else { return fail(parser, "a <relationship> without a name") }
                guard object?.relationships[relationshipName.lowercased()] == nil else {
                    return fail(parser, "\(object!.id) has the relationship \(relationshipName) twice")
                }
                object?.relationships[relationshipName.lowercased()] = (a["idrefs"] ?? "").split(whereSeparator: \.isWhitespace).map(String.init)
            default:
                fail(parser, "<\(name)> \(path.last.map { "inside <\($0)>" } ?? "as the root element"): not part of a Core Data XML store")
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if attribute != nil { text += string }
        }

        func parser(_ parser: XMLParser, foundCDATA block: Data) {
            guard attribute != nil else { return }
            guard let string = String(data: block, encoding: .utf8) else { return fail(parser, "a CDATA section that is not UTF-8") }
            text += string
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            path.removeLast()
            if path.count >= 2, path[1] == "databaseInfo" { return }
            switch name {
            case "attribute":
                if let attribute { object?.attributes[attribute.name] = (attribute.type, text) }
                attribute = nil
            case "object":
                if let object { objects.append(object) }
                object = nil
            default: break
            }
        }
    }
}

/// Builds the ``MappingModel`` from the objects of an `xcmapping.xml`.
private struct MappingModelBuilder {
    let objects: XMLStoreObjects
    let file: String

    static let mappingModelType = "XDDEVMAPPINGMODEL"
    static let entityMappingType = "XDDEVENTITYMAPPING"
    static let attributeMappingType = "XDDEVATTRIBUTEMAPPING"
    static let relationshipMappingType = "XDDEVRELATIONSHIPMAPPING"

    /// Per object type: its attributes with their declared types, and its relationships.
    static let keys: [String: (attributes: [String: Set<String>], relationships: Set<String>)] = [
        mappingModelType: ([
            "sourcemodelpath": ["string"], "destinationmodelpath": ["string"],
            "sourcemodeldata": ["binary"], "destinationmodeldata": ["binary"],
        ], ["entitymappings"]),
        entityMappingType: ([
            "name": ["string"], "sourcename": ["string"], "destinationname": ["string"], "mappingtypename": ["string"],
            "mappingnumber": ["int16", "int32", "int64"], "migrationpolicyclassname": ["string"],
            "sourcefilterpredicatestring": ["string"], "autogenerateexpression": ["bool"],
            "sourceexpressiondata": ["binary"], "userinfodata": ["binary"],
        ], ["mappingmodel", "attributemappings", "relationshipmappings"]),
        attributeMappingType: (propertyAttributes, ["entitymapping"]),
        relationshipMappingType: (propertyAttributes, ["entitymapping"]),
    ]
    static let propertyAttributes: [String: Set<String>] = [
        "name": ["string"], "autogenerateexpression": ["bool"], "valueexpressiondata": ["binary"],
        "sourcekeypath": ["string"], "sourcemappingname": ["string"], "userinfodata": ["binary"],
    ]

    /// `mappingtypename` → kind; `Undefined` (and no name) is decided by the entities named.
    static let kinds: [String: EntityMapping.Kind] = [
        "Add": .add, "Remove": .remove, "Copy": .copy, "Transform": .transform, "Custom": .custom,
    ]

    private func fail(_ message: String, mapping: String? = nil) -> MigrationError {
        MigrationError(.invalidMapping, "\(file): \(message)", mapping: mapping)
    }

    func mappingModel() throws -> MappingModel {
        for object in objects.objects { try checkKeys(object) }
        let roots = objects.objects.filter { $0.type == Self.mappingModelType }
        guard let root = roots.first else {
            throw fail("no \(Self.mappingModelType) object: the file holds no mapping model")
        }
        guard roots.count == 1 else { throw fail("\(roots.count) \(Self.mappingModelType) objects (\(roots.map(\.id).joined(separator: ", "))), where there is one") }
        let entityObjects = try members(of: root, "entitymappings", type: Self.entityMappingType, inverse: "mappingmodel")
        // In the author's order (`mappingnumber`), the file's order for equal or missing numbers.
        let ordered = try entityObjects.enumerated().map { (offset: $0.offset, number: try integer($0.element, "mappingnumber"), object: $0.element) }
            .sorted { ($0.number ?? .max, $0.offset) < ($1.number ?? .max, $1.offset) }.map(\.object)
        var names: Set<String> = []
        var mappings: [EntityMapping] = []
        for object in ordered {
            let mapping = try entityMapping(object)
            guard names.insert(mapping.name).inserted else { throw fail("two entity mappings are named \(mapping.name)", mapping: mapping.name) }
            mappings.append(mapping)
        }
        var model = MappingModel(entityMappings: mappings, sourceVersion: versionName(try string(root, "sourcemodelpath")),
                                 destinationVersion: versionName(try string(root, "destinationmodelpath")))
        model.fitsStepsByNames = true
        return model
    }

    /// The model version a recorded model path names: `…/Notes 2.xcdatamodel` (or `.mom`) is `Notes 2`;
    /// a path to a bundle or to nothing names none.
    private func versionName(_ path: String?) -> String? {
        guard let last = path?.split(separator: "/").last.map(String.init) else { return nil }
        for suffix in [".xcdatamodel", ".mom"] where last.hasSuffix(suffix) && last.count > suffix.count {
            return String(last.dropLast(suffix.count))
        }
        return nil
    }

    private func entityMapping(_ object: XMLStoreObjects.Object) throws -> EntityMapping {
        let source = try string(object, "sourcename").flatMap { $0.isEmpty ? nil : $0 }
        let destination = try string(object, "destinationname").flatMap { $0.isEmpty ? nil : $0 }
        var name = try string(object, "name") ?? ""
        if name.isEmpty {
            // Xcode's default name: <Source>To<Destination>, or the one entity an add or a remove names.
            switch (source, destination) {
            case let (s?, d?): name = "\(s)To\(d)"
            case let (s?, nil): name = s
            case let (nil, d?): name = d
            case (nil, nil): throw fail("the entity mapping \(object.id) has no name and names no entity")
            }
        }
        func fail(_ message: String) -> MigrationError { self.fail("\(name) (\(object.id)): \(message)", mapping: name) }
        let kind: EntityMapping.Kind
        switch try string(object, "mappingtypename") ?? "Undefined" {
        case "Undefined": kind = source == nil ? .add : destination == nil ? .remove : .transform
        case let typeName:
            guard let known = Self.kinds[typeName] else {
                throw fail("mappingtypename \(typeName) is not one of Add, Remove, Copy, Transform, Custom, Undefined")
            }
            kind = known
        }
        // NSEntityMigrationPolicy is Core Data's default policy: what a mapping without one does.
        let policy = try string(object, "migrationpolicyclassname").flatMap { $0.isEmpty || $0 == "NSEntityMigrationPolicy" ? nil : $0 }
        var filter: ObjectPredicate?
        if let text = try string(object, "sourcefilterpredicatestring"), !text.trimmingCharacters(in: .whitespaces).isEmpty {
            do { filter = try ObjectPredicate(text) } catch {
                throw fail("sourcefilterpredicatestring \(String(reflecting: text)) does not parse: \(error)")
            }
        }
        if try boolean(object, "autogenerateexpression") != true, try data(object, "sourceexpressiondata") != nil {
            throw fail("a source expression written by hand (sourceexpressiondata, autogenerateexpression off) is not read; write the filter as sourcefilterpredicatestring")
        }
        let info = try userInfo(object, mapping: name)
        var attributes: [String: MappingExpression] = [:]
        var relationships: [String: MappingExpression] = [:]
        for (relationship, type, isRelationship) in [("attributemappings", Self.attributeMappingType, false),
                                                     ("relationshipmappings", Self.relationshipMappingType, true)] {
            for property in try members(of: object, relationship, type: type, inverse: "entitymapping") {
                guard let propertyName = try string(property, "name"), !propertyName.isEmpty else {
                    throw fail("the property mapping \(property.id) has no name")
                }
                guard attributes[propertyName] == nil && relationships[propertyName] == nil else {
                    throw fail("two property mappings set \(propertyName)")
                }
                guard try userInfo(property, mapping: name).isEmpty else {
                    throw fail("\(propertyName) (\(property.id)): property mappings with user info are not read (a MappingModel's property mappings have none)")
                }
                guard let expression = try valueExpression(property, name: propertyName, isRelationship: isRelationship, fail: fail) else { continue }
                if isRelationship { relationships[propertyName] = expression } else { attributes[propertyName] = expression }
            }
        }
        return EntityMapping(name: name, kind: kind, sourceEntity: source, destinationEntity: destination,
                             attributeMappings: attributes, relationshipMappings: relationships,
                             sourceFilter: filter, policyName: policy, userInfo: info)
    }

    /// A property mapping's expression: the written one, or what Xcode generates (an attribute:
    /// `$source.<name>`; a relationship: the destination objects of `$source.<key path>` through the
    /// mapping it names, or through whichever mapping made them). Nil when there is neither: the
    /// destination property is not set.
    private func valueExpression(_ property: XMLStoreObjects.Object, name: String, isRelationship: Bool,
                                 fail: (String) -> MigrationError) throws -> MappingExpression? {
        let keyPath = try string(property, "sourcekeypath").flatMap { $0.isEmpty ? nil : $0 }
        let mappingName = try string(property, "sourcemappingname").flatMap { $0.isEmpty ? nil : $0 }
        if !isRelationship, keyPath.map({ $0 != name }) == true || mappingName != nil {
            throw fail("\(name) (\(property.id)): sourcekeypath or sourcemappingname on an attribute mapping (their meaning there is not established)")
        }
        let generated = try boolean(property, "autogenerateexpression") == true
        if !generated, let archived = try data(property, "valueexpressiondata") {
            do {
                return try ArchivedExpressionReader.expression(in: archived)
            } catch let refusal as ArchivedExpressionReader.Refusal {
                throw fail("\(name) (\(property.id)): valueexpressiondata: \(refusal.message)")
            } catch let error as ModelError {
                throw fail("\(name) (\(property.id)): valueexpressiondata is not a readable archived expression (\(error.problems.joined(separator: "; ")))")
            }
        }
        guard isRelationship else { return generated ? .source(name) : nil }
        guard generated || keyPath != nil || mappingName != nil else { return nil }
        return .destinations(mapping: mappingName, of: .source(keyPath ?? name))
    }

    /// An archived user info dictionary of string keys and string values (`userinfodata`); empty when absent.
    private func userInfo(_ object: XMLStoreObjects.Object, mapping: String) throws -> [String: String] {
        guard let archived = try data(object, "userinfodata") else { return [:] }
        do {
            let archive = try KeyedArchiveObjects(archived)
            let reader = ArchivedModelReader(archive: archive)
            guard let root = try archive.object(archive.root, from: "userinfodata's root") else { return [:] }
            var info: [String: String] = [:]
            for (key, node) in try reader.entries(of: root) {
                info[key] = try reader.text(try reader.resolve(node, from: "userinfodata[\(key)]"), from: "userinfodata[\(key)]")
            }
            return info
        } catch let error as ModelError {
            throw fail("\(object.id): userinfodata is not an archived dictionary of strings (\(error.problems.joined(separator: "; ")))", mapping: mapping)
        }
    }

    // MARK: Objects and values

    /// Refuses an object of a type, or with an attribute, a declared type or a relationship, not known.
    private func checkKeys(_ object: XMLStoreObjects.Object) throws {
        guard let known = Self.keys[object.type] else {
            throw fail("\(object.id) (line \(object.line)) is an object of type \(object.type), not one of \(Self.keys.keys.sorted().joined(separator: ", "))")
        }
        for (name, value) in object.attributes.sorted(by: { $0.key < $1.key }) {
            guard let types = known.attributes[name] else {
                throw fail("\(object.id) (\(object.type), line \(object.line)) has the attribute \(name), whose meaning is not established")
            }
            guard types.contains(value.type) else {
                throw fail("\(object.id).\(name) is declared \(value.type), not \(types.sorted().joined(separator: " or "))")
            }
        }
        for name in object.relationships.keys.sorted() where !known.relationships.contains(name) {
            throw fail("\(object.id) (\(object.type), line \(object.line)) has the relationship \(name), whose meaning is not established")
        }
    }

    /// The objects of `owner`'s to-many `relationship`, each of `type`; when the owner does not
    /// write the relationship, the objects of `type` whose `inverse` refers to it.
    private func members(of owner: XMLStoreObjects.Object, _ relationship: String, type: String, inverse: String) throws -> [XMLStoreObjects.Object] {
        let members: [XMLStoreObjects.Object]
        if let ids = owner.relationships[relationship] {
            members = try ids.map { id in
                guard let member = objects.byID[id] else { throw fail("\(owner.id).\(relationship) refers to \(id), which the file does not have") }
                guard member.type == type else { throw fail("\(owner.id).\(relationship) refers to \(id), a \(member.type), not a \(type)") }
                return member
            }
            guard Set(ids).count == ids.count else { throw fail("\(owner.id).\(relationship) refers to an object twice") }
        } else {
            members = objects.objects.filter { $0.type == type && $0.relationships[inverse] == [owner.id] }
        }
        // Each member's own reference back, when it writes one, must be to the owner.
        for member in members {
            if let back = member.relationships[inverse], back != [owner.id] {
                throw fail("\(member.id).\(inverse) refers to \(back.joined(separator: " ")), but \(owner.id).\(relationship) lists it")
            }
        }
        return members
    }

    private func string(_ object: XMLStoreObjects.Object, _ name: String) throws -> String? {
        object.attributes[name]?.text
    }

    private func boolean(_ object: XMLStoreObjects.Object, _ name: String) throws -> Bool? {
        guard let text = object.attributes[name]?.text.trimmingCharacters(in: .whitespacesAndNewlines) else { return nil }
        switch text.lowercased() {
        case "1", "yes", "true": return true
        case "0", "no", "false": return false
        default: throw fail("\(object.id).\(name) is \(String(reflecting: text)), not a Boolean (1 or 0)")
        }
    }

    private func integer(_ object: XMLStoreObjects.Object, _ name: String) throws -> Int? {
        guard let text = object.attributes[name]?.text.trimmingCharacters(in: .whitespacesAndNewlines) else { return nil }
        guard let value = Int(text) else { throw fail("\(object.id).\(name) is \(String(reflecting: text)), not an integer") }
        return value
    }

    private func data(_ object: XMLStoreObjects.Object, _ name: String) throws -> Data? {
        guard let text = object.attributes[name]?.text else { return nil }
        let compact = String(text.unicodeScalars.filter { !CharacterSet.whitespacesAndNewlines.contains($0) })
        if compact.isEmpty { return nil }
        guard let data = Data(base64Encoded: compact) else { throw fail("\(object.id).\(name) is not base64") }
        return data
    }
}
