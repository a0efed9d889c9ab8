import Foundation
import ObjectModel
import ObjectStore

/// Mapping models written as data: a JSON document (`docs/migrations.md`, "Mapping files").
///
/// ```json
/// {"format": "objectstore-mapping", "formatVersion": 1, "entityMappings": [
///   {"name": "ContactToContact", "kind": "transform", "source": "Contact", "destination": "Contact",
///    "attributes": {"firstName": "before($source.fullName, ' ')", "identifier": "toString($source.identifier)"},
///    "relationships": {"owner": "$source.owner"}, "filter": "identifier > 0"}]}
/// ```
///
/// Expressions are in their text form; Swift closures cannot be written as data.
public enum MappingFormat {
    /// The value of the document's `format` key.
    public static let formatName = "objectstore-mapping"
    /// The format version this library writes and reads.
    public static let formatVersion = 1

    /// The mapping as JSON, keys sorted.
    /// - Throws: ``MigrationError`` with ``MigrationError/Code/invalidMapping`` for a mapping with a Swift closure.
    public static func encode(_ mapping: MappingModel) throws -> Data {
        let document = Document(format: formatName, formatVersion: formatVersion, sourceVersion: mapping.sourceVersion,
                                destinationVersion: mapping.destinationVersion, entityMappings: try mapping.entityMappings.map { m in
            func text(_ expressions: [String: MappingExpression]) throws -> [String: String]? {
                guard !expressions.isEmpty else { return nil }
                return try expressions.mapValues { expression in
                    if case .custom = expression {
                        throw MigrationError(.invalidMapping, "a Swift closure cannot be written as data", mapping: m.name)
                    }
                    return expression.description
                }
            }
            return EntityDocument(
                name: m.name, kind: m.kind, source: m.sourceEntity, destination: m.destinationEntity,
                sourceVersionHash: m.sourceVersionHash?.hexString, destinationVersionHash: m.destinationVersionHash?.hexString,
                attributes: try text(m.attributeMappings), relationships: try text(m.relationshipMappings),
                filter: m.sourceFilter?.description, policy: m.policyName, userInfo: m.userInfo.isEmpty ? nil : m.userInfo,
                uniqueBy: m.uniqueBy.isEmpty ? nil : m.uniqueBy)
        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(document)
    }

    /// Reads a mapping document.
    /// - Throws: ``MigrationError`` with ``MigrationError/Code/invalidMapping`` naming the entity mapping and property at fault.
    public static func decode(_ data: Data, file: String = "mapping.json") throws -> MappingModel {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: data)
        } catch {
            throw MigrationError(.invalidMapping, "\(file): not a mapping document (\(describe(error)))")
        }
        guard document.format == formatName, document.formatVersion == formatVersion else {
            throw MigrationError(.invalidMapping, "\(file): format \(document.format) version \(document.formatVersion) is not \(formatName) version \(formatVersion)")
        }
        // A key this format does not have is a mistake (`sourceEntity` for `source`): read as nothing, it
        // would drop what it meant to move.
        if let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
            if let unknown = Set(object.keys).subtracting(Self.documentKeys).sorted().first {
                throw MigrationError(.invalidMapping, "\(file): unknown key \(unknown) (a mapping document has \(Self.documentKeys.sorted().joined(separator: ", ")))")
            }
            for case let entry as [String: Any] in object["entityMappings"] as? [Any] ?? [] {
                if let unknown = Set(entry.keys).subtracting(Self.entityKeys).sorted().first {
                    throw MigrationError(.invalidMapping, "\(file): unknown key \(unknown) (an entity mapping has \(Self.entityKeys.sorted().joined(separator: ", ")))",
                                         mapping: entry["name"] as? String)
                }
            }
        }
        return MappingModel(entityMappings: try document.entityMappings.map { e in
            func parse(_ texts: [String: String]?) throws -> [String: MappingExpression] {
                var result: [String: MappingExpression] = [:]
                for (name, text) in texts ?? [:] {
                    do { result[name] = try MappingExpression(text) } catch let error as MigrationError {
                        throw MigrationError(.invalidMapping, "\(file): \(e.name).\(name): \(error.message)", mapping: e.name)
                    }
                }
                return result
            }
            func hash(_ text: String?) throws -> Data? {
                guard let text else { return nil }
                guard let data = Data(hexString: text), data.count == 32 else {
                    throw MigrationError(.invalidMapping, "\(file): \(e.name): \(text) is not a 64-digit version hash", mapping: e.name)
                }
                return data
            }
            var filter: ObjectPredicate?
            if let text = e.filter {
                do { filter = try ObjectPredicate(text) } catch let error as PredicateSyntaxError {
                    throw MigrationError(.invalidMapping, "\(file): \(e.name).filter: \(error)", mapping: e.name)
                }
            }
            return EntityMapping(
                name: e.name, kind: e.kind, sourceEntity: e.source, destinationEntity: e.destination,
                sourceVersionHash: try hash(e.sourceVersionHash), destinationVersionHash: try hash(e.destinationVersionHash),
                attributeMappings: try parse(e.attributes), relationshipMappings: try parse(e.relationships),
                sourceFilter: filter, policyName: e.policy, userInfo: e.userInfo ?? [:], uniqueBy: e.uniqueBy ?? [])
        }, sourceVersion: document.sourceVersion, destinationVersion: document.destinationVersion)
    }

    private static func describe(_ error: Error) -> String {
        if case DecodingError.keyNotFound(let key, _) = error { return "missing key \(key.stringValue)" }
        if case DecodingError.dataCorrupted(let context) = error { return context.debugDescription }
        if case DecodingError.typeMismatch(_, let context) = error {
            return "wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        }
        return "\(error)"
    }

    private static let documentKeys: Set<String> = ["format", "formatVersion", "sourceVersion", "destinationVersion", "entityMappings"]
    private static let entityKeys: Set<String> = ["name", "kind", "source", "destination", "sourceVersionHash", "destinationVersionHash",
                                                  "attributes", "relationships", "filter", "policy", "userInfo", "uniqueBy"]

    private struct Document: Codable {
        var format: String
        var formatVersion: Int
        var sourceVersion: String?
        var destinationVersion: String?
        var entityMappings: [EntityDocument]
    }

    private struct EntityDocument: Codable {
        var name: String
        var kind: EntityMapping.Kind
        var source: String?
        var destination: String?
        var sourceVersionHash: String?
        var destinationVersionHash: String?
        var attributes: [String: String]?
        var relationships: [String: String]?
        var filter: String?
        var policy: String?
        var userInfo: [String: String]?
        var uniqueBy: [String]?
    }
}
