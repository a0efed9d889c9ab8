import Foundation
import ObjectModel

/// The text and JSON forms of `objectstore model show`.
enum ModelDescription {
    static func text(_ model: ManagedObjectModel, version: String, versions: [String]) -> String {
        var lines: [String] = []
        lines.append("version: \(version)" + (versions.count > 1 ? " (of \(versions.joined(separator: ", ")))" : ""))
        lines.append("version identifiers: \(model.versionIdentifiers.isEmpty ? "(none)" : model.versionIdentifiers.joined(separator: ", "))")
        lines.append("entities: \(model.entityNames.count)")
        for entity in model.entityDescriptions {
            var header = "\nentity \(entity.name)"
            if let parent = entity.parent { header += " : \(parent)" }
            if entity.isAbstract { header += " (abstract)" }
            lines.append(header)
            for attribute in entity.attributes {
                var line = "  attribute \(attribute.name): \(attribute.type.modelName)"
                line += attribute.isOptional ? ", optional" : ", required"
                if attribute.isTransient { line += ", transient" }
                if attribute.allowsExternalBinaryDataStorage { line += ", external storage" }
                if let value = attribute.defaultValue { line += ", default \(value)" }
                if entity.declaration.attributes.contains(where: { $0.name == attribute.name }) == false { line += ", inherited" }
                lines.append(line)
            }
            for relationship in entity.relationships {
                var line = "  relationship \(relationship.name) -> \(relationship.destination)"
                line += relationship.isToMany ? ", to-many" : ", to-one"
                if relationship.isOrdered { line += ", ordered" }
                line += ", inverse \(relationship.inverse ?? "(none)")"
                line += ", delete rule \(relationship.deleteRule.rawValue)"
                line += relationship.isOptional ? ", optional" : ", required"
                if relationship.isTransient { line += ", transient" }
                if entity.declaration.relationships.contains(where: { $0.name == relationship.name }) == false { line += ", inherited" }
                lines.append(line)
            }
            for constraint in entity.uniquenessConstraints {
                lines.append("  unique (\(constraint.properties.joined(separator: ", ")))" + (constraint.entity == entity.name ? "" : ", inherited from \(constraint.entity)"))
            }
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ model: ManagedObjectModel, version: String, versions: [String]) throws -> String {
        let entities: [[String: Any]] = model.entityDescriptions.map { entity in
            var item: [String: Any] = [
                "name": entity.name,
                "abstract": entity.isAbstract,
                "versionHash": entity.versionHash.hexString,
                "attributes": entity.attributes.map { a -> [String: Any] in
                    var attribute: [String: Any] = [
                        "name": a.name, "type": a.type.modelName, "optional": a.isOptional, "transient": a.isTransient,
                    ]
                    if let v = a.defaultValue { attribute["default"] = v.textForm }
                    if a.allowsExternalBinaryDataStorage { attribute["externalStorage"] = true }
                    return attribute
                },
                "relationships": entity.relationships.map { r -> [String: Any] in
                    var relationship: [String: Any] = [
                        "name": r.name, "destination": r.destination, "toMany": r.isToMany, "ordered": r.isOrdered,
                        "deleteRule": r.deleteRule.rawValue, "optional": r.isOptional, "transient": r.isTransient,
                    ]
                    relationship["inverse"] = r.inverse ?? NSNull()
                    return relationship
                },
            ]
            item["parent"] = entity.parent ?? NSNull()
            if !entity.uniquenessConstraints.isEmpty {
                item["uniquenessConstraints"] = entity.uniquenessConstraints.map { ["entity": $0.entity, "properties": $0.properties] as [String: Any] }
            }
            return item
        }
        let document: [String: Any] = [
            "version": version,
            "versions": versions,
            "versionIdentifiers": model.versionIdentifiers,
            "versionChecksum": model.versionChecksum,
            "entities": entities,
        ]
        let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
