import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads the `contents` XML of an Xcode `.xcdatamodel` into a model.
///
/// Layout-only elements (`elements`, `element`) and fetch requests are skipped.
package enum XcodeModelReader {
    static func read(_ data: Data, file: String) throws -> ManagedObjectModel {
        guard !data.isEmpty else { throw ModelError(.unreadable, problems: ["the model file is empty"], file: file) }
        if let unsafe = unsafeInput(data) {
            throw ModelError(.syntax, problems: [unsafe.message], file: file, line: unsafe.line, column: unsafe.column)
        }
        let parser = XMLParser(data: data)
        let delegate = Delegate()
        parser.delegate = delegate
        parser.shouldProcessNamespaces = false
        if !parser.parse() || delegate.failureIsSyntax {
            let message = delegate.failure ?? parser.parserError.map(describe) ?? "the XML does not parse"
            throw ModelError(.syntax, problems: [message], file: file, line: delegate.failureLine ?? parser.lineNumber,
                             column: delegate.failureLine == nil ? parser.columnNumber : delegate.failureColumn)
        }
        if delegate.failure == nil, let open = delegate.openElements.last {
            let (line, column) = SyntaxPosition.position(ofByte: data.count, in: data)
            throw ModelError(.syntax, problems: ["the XML ends before <\(open)> is closed"], file: file, line: line, column: column)
        }
        if let failure = delegate.failure {
            throw ModelError(.unsupported, problems: [failure], file: file, line: delegate.failureLine, column: delegate.failureColumn)
        }
        guard delegate.sawModel else {
            throw ModelError(.unsupported, problems: ["no <model> element: not a Core Data model"], file: file)
        }
        do {
            return try ManagedObjectModel(
                entities: delegate.entities, configurations: delegate.configurations,
                versionIdentifiers: delegate.versionIdentifier.map { [$0] } ?? [])
        } catch let error as ModelError {
            throw error.located(in: file)
        }
    }

    /// What in `data` Foundation's XML parser must not be given, and where (line and column from 1):
    /// bytes that are not UTF-8 (what Xcode writes; other bytes are an error here, not the parser's
    /// crash), or a processing instruction without data (`<?name?>`, whose missing text the parser
    /// reads and crashes on). Nil when the parser may read it. Every reader of Xcode's XML files checks this first.
    package static func unsafeInput(_ data: Data) -> (message: String, line: Int, column: Int)? {
        if let offset = SyntaxPosition.firstInvalidUTF8(in: data) {
            let (line, column) = SyntaxPosition.position(ofByte: offset, in: data)
            return ("the file is not UTF-8 (byte 0x\(String(data[data.startIndex + offset], radix: 16, uppercase: true)))", line, column)
        }
        if let offset = emptyProcessingInstruction(in: data) {
            let (line, column) = SyntaxPosition.position(ofByte: offset, in: data)
            return ("a processing instruction without data", line, column)
        }
        // Xcode writes no entity declarations; one could pull in another file or expand without end.
        if let range = data.firstRange(of: Data("<!ENTITY".utf8)) {
            let (line, column) = SyntaxPosition.position(ofByte: range.lowerBound - data.startIndex, in: data)
            return ("an entity declaration (<!ENTITY): not read", line, column)
        }
        return nil
    }

    /// The offset of the first `<?name?>` (a processing instruction without data), if any.
    /// Every `<?` counts, in comments and CDATA too: libxml2's recovery from an earlier error
    /// decides what is markup, so no context is trusted to hide one.
    static func emptyProcessingInstruction(in data: Data) -> Int? {
        let bytes = [UInt8](data)
        var index = 0
        while index + 1 < bytes.count {
            defer { index += 1 }
            guard bytes[index] == UInt8(ascii: "<"), bytes[index + 1] == UInt8(ascii: "?") else { continue }
            var end = index + 2
            while end < bytes.count, bytes[end] != UInt8(ascii: "?"), ![0x20, 0x09, 0x0A, 0x0D].contains(bytes[end]) { end += 1 }
            if bytes[end...].starts(with: "?>".utf8) { return index }
        }
        return nil
    }

    private static func describe(_ error: Error) -> String {
        let text = (error as NSError).localizedDescription
        return "the XML does not parse (\(text))"
    }

    private final class Delegate: NSObject, XMLParserDelegate {
        var entities: [Entity] = []
        var configurations: [String: [String]] = [:]
        var versionIdentifier: String?
        var sawModel = false
        var failure: String?
        var failureLine: Int?
        var failureColumn: Int?
        var openElements: [String] = []

        private var entity: Entity?
        private var attribute: Attribute?
        private var relationship: Relationship?
        private var constraint: [String]?
        private var index: FetchIndex?
        private var compoundIndex: [String]?
        private var configuration: String?
        private var skipDepth = 0

        var failureIsSyntax = false

        private func fail(_ parser: XMLParser, _ message: String, syntax: Bool = false) {
            guard failure == nil else { return }
            failure = message
            failureIsSyntax = syntax
            failureLine = parser.lineNumber
            failureColumn = parser.columnNumber
            parser.abortParsing()
        }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes a: [String: String] = [:]) {
            openElements.append(name)
            if skipDepth > 0 { skipDepth += 1; return }
            switch name {
            case "model":
                sawModel = true
                if let id = a["userDefinedModelVersionIdentifier"], !id.isEmpty { versionIdentifier = id }
            case "entity":
                guard let entityName = a["name"] else { return fail(parser, "an <entity> has no name") }
                entity = Entity(
                    entityName, parent: a["parentEntity"], abstract: flag(a["isAbstract"]),
                    renamingIdentifier: a["elementID"], versionHashModifier: a["versionHashModifier"],
                    representedClassName: a["representedClassName"])
            case "attribute":
                guard entity != nil else { return fail(parser, "an <attribute> outside an <entity>") }
                guard let attributeName = a["name"] else { return fail(parser, "an <attribute> has no name") }
                let typeName = a["attributeType"] ?? "Undefined"
                guard let type = AttributeType(modelName: typeName) else {
                    return fail(parser, "\(entity!.name).\(attributeName): unknown attribute type \(typeName)")
                }
                var rules = ValidationRules()
                if type == .string || type == .binaryData {
                    rules.minLength = a["minValueString"].flatMap { Int($0) }
                    rules.maxLength = a["maxValueString"].flatMap { Int($0) }
                } else {
                    // Xcode keeps a date's bounds as seconds since 2001 in attributes of their own.
                    func seconds(_ text: String?) -> Value? {
                        text.flatMap(Double.init).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
                    }
                    rules.minValue = a["minValueString"].flatMap(type.parseValue) ?? (type == .date ? seconds(a["minDateTimeInterval"]) : nil)
                    rules.maxValue = a["maxValueString"].flatMap(type.parseValue) ?? (type == .date ? seconds(a["maxDateTimeInterval"]) : nil)
                }
                rules.pattern = a["regularExpressionString"]
                var defaultValue: Value?
                // Xcode keeps a date's default as seconds since 2001 in defaultDateTimeInterval.
                if let text = a["defaultValueString"] ?? a["defaultDateTimeInterval"] {
                    defaultValue = type.parseValue(text)
                    // Xcode accepts YES/NO on numeric attributes and Core Data reads them as 1/0.
                    if defaultValue == nil, type.isNumeric, case .boolean(let flag)? = AttributeType.boolean.parseValue(text) {
                        defaultValue = type.coerce(.integer(flag ? 1 : 0))
                    }
                    if defaultValue == nil && type != .undefined && type != .transformable {
                        return fail(parser, "\(entity!.name).\(attributeName): default value \(String(reflecting: text)) is not a valid \(type.modelName)")
                    }
                }
                attribute = Attribute(
                    attributeName, type, optional: flag(a["optional"]), transient: flag(a["transient"]),
                    default: defaultValue, validation: rules, renamingIdentifier: a["elementID"],
                    versionHashModifier: a["versionHashModifier"],
                    allowsExternalBinaryDataStorage: flag(a["allowsExternalBinaryDataStorage"]),
                    preservesValueInHistoryOnDeletion: flag(a["preserveAfterDeletion"]),
                    valueTransformerName: a["valueTransformerName"])
            case "relationship":
                guard entity != nil else { return fail(parser, "a <relationship> outside an <entity>") }
                guard let relationshipName = a["name"] else { return fail(parser, "a <relationship> has no name") }
                guard let destination = a["destinationEntity"] else {
                    return fail(parser, "\(entity!.name).\(relationshipName): no destinationEntity")
                }
                let toMany = flag(a["toMany"])
                relationship = Relationship(
                    relationshipName, to: destination, inverse: a["inverseName"], toMany: toMany,
                    ordered: flag(a["ordered"]), minCount: a["minCount"].flatMap { Int($0) } ?? 0,
                    maxCount: toMany ? (a["maxCount"].flatMap { Int($0) } ?? 0) : 1,
                    deleteRule: deleteRule(a["deletionRule"]), optional: flag(a["optional"]),
                    transient: flag(a["transient"]), renamingIdentifier: a["elementID"],
                    versionHashModifier: a["versionHashModifier"])
            case "uniquenessConstraint": constraint = []
            case "constraint": if let v = a["value"] { constraint?.append(v) }
            case "fetchIndex": index = FetchIndex(name: a["name"] ?? "index", elements: [])
            case "fetchIndexElement":
                if let property = a["property"] {
                    index?.elements.append(.init(property, ascending: a["order"] != "descending"))
                }
            case "compoundIndex": compoundIndex = []
            case "index": if let v = a["value"] { compoundIndex?.append(v) }
            case "configuration": configuration = a["name"]
            case "memberEntity":
                if let configuration, let member = a["name"] { configurations[configuration, default: []].append(member) }
            case "entry":
                guard let key = a["key"] else { return }
                let value = a["value"] ?? ""
                if attribute != nil { attribute!.userInfo[key] = value }
                else if relationship != nil { relationship!.userInfo[key] = value }
                else if entity != nil { entity!.userInfo[key] = value }
            case "elements", "fetchRequest", "fetchedProperty":
                skipDepth = 1
            default:
                break
            }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard openElements.last == name else {
                return fail(parser, "</\(name)> does not close <\(openElements.last ?? "nothing")>", syntax: true)
            }
            openElements.removeLast()
            if skipDepth > 0 { skipDepth -= 1; return }
            switch name {
            case "entity":
                if let entity { entities.append(entity) }
                entity = nil
            case "attribute":
                if let attribute { entity?.attributes.append(attribute) }
                attribute = nil
            case "relationship":
                if let relationship { entity?.relationships.append(relationship) }
                relationship = nil
            case "uniquenessConstraint":
                if let constraint, !constraint.isEmpty { entity?.uniquenessConstraints.append(constraint) }
                constraint = nil
            case "fetchIndex":
                if let index { entity?.indexes.append(index) }
                index = nil
            case "compoundIndex":
                if let compoundIndex, !compoundIndex.isEmpty, entity != nil {
                    let name = "compound_" + compoundIndex.joined(separator: "_")
                    entity!.indexes.append(FetchIndex(name: name, elements: compoundIndex.map { .init($0) }))
                }
                compoundIndex = nil
            case "configuration": configuration = nil
            default: break
            }
        }

        private func flag(_ text: String?) -> Bool { text == "YES" || text == "true" || text == "1" }

        private func deleteRule(_ text: String?) -> DeleteRule {
            switch text {
            case "Cascade": .cascade
            case "Deny": .deny
            case "No Action": .noAction
            default: .nullify
            }
        }
    }
}
