import Foundation

/// Writes a model as an Xcode model version: a `.xcdatamodel` folder holding the `contents`
/// XML that Xcode's model editor reads and writes, and that ``ModelLoader`` reads back to the
/// same model (the same entity version hashes).
///
/// ```swift
/// let model = try ModelArchive.decodeModelCache(blob)
/// try XcodeModelWriter.write(model, to: URL(filePath: "Recovered.xcdatamodel"))
/// ```
public enum XcodeModelWriter {
    /// The `contents` document for `model`: entities in ascending order of name, each with its
    /// attributes, then its relationships, in ascending order of name (Xcode's order), then its
    /// fetch indexes, uniqueness constraints and user info; then the configurations.
    public static func contents(of model: ManagedObjectModel) -> String {
        var lines = [
            #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#,
            "<model" + attributes([
                ("type", "com.apple.IDECoreDataModeler.DataModel"), ("documentVersion", "1.0"),
                ("minimumToolsVersion", "Automatic"), ("sourceLanguage", "Swift"),
                ("userDefinedModelVersionIdentifier", model.versionIdentifiers.first ?? ""),
            ]) + ">",
        ]
        for entity in model.entities.sorted(by: { $0.name < $1.name }) { lines += self.entity(entity) }
        for (name, members) in model.configurations.sorted(by: { $0.key < $1.key }) {
            lines.append("    <configuration\(attributes([("name", name)]))>")
            lines += members.sorted().map { "        <memberEntity\(attributes([("name", $0)]))/>" }
            lines.append("    </configuration>")
        }
        lines.append("</model>")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes `model` as the Xcode model version folder `url` (`Name.xcdatamodel/contents`),
    /// creating the folder; an existing `contents` is replaced.
    /// - Throws: the file system's error when the folder or file cannot be written.
    public static func write(_ model: ManagedObjectModel, to url: URL) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try Data(contents(of: model).utf8).write(to: url.appending(path: "contents"), options: .atomic)
    }

    private static func entity(_ entity: Entity) -> [String] {
        var lines: [String] = []
        lines += entity.attributes.sorted { $0.name < $1.name }.map(attribute)
        lines += entity.relationships.sorted { $0.name < $1.name }.map(relationship)
        for index in entity.indexes {
            lines.append("        <fetchIndex\(attributes([("name", index.name)]))>")
            lines += index.elements.map {
                "            <fetchIndexElement\(attributes([("property", $0.property), ("type", "Binary"), ("order", $0.ascending ? "ascending" : "descending")]))/>"
            }
            lines.append("        </fetchIndex>")
        }
        if !entity.uniquenessConstraints.isEmpty {
            lines.append("        <uniquenessConstraints>")
            for constraint in entity.uniquenessConstraints {
                lines.append("            <uniquenessConstraint>")
                lines += constraint.map { "                <constraint\(attributes([("value", $0)]))/>" }
                lines.append("            </uniquenessConstraint>")
            }
            lines.append("        </uniquenessConstraints>")
        }
        lines += userInfo(entity.userInfo, indent: "        ")
        let head = "    <entity" + attributes([
            ("name", entity.name), ("representedClassName", entity.representedClassName), ("parentEntity", entity.parent),
            ("isAbstract", entity.isAbstract ? "YES" : nil), ("elementID", entity.renamingIdentifier),
            ("versionHashModifier", entity.versionHashModifier), ("syncable", "YES"),
        ])
        return lines.isEmpty ? [head + "/>"] : [head + ">"] + lines + ["    </entity>"]
    }

    private static func attribute(_ attribute: Attribute) -> String {
        let type = attribute.type
        let rules = attribute.validation
        let limits = type == .string || type == .binaryData
            ? (rules.minLength.map(String.init), rules.maxLength.map(String.init))
            : type == .date ? (nil, nil) : (rules.minValue.map(text), rules.maxValue.map(text))
        // Xcode keeps a date's bounds, as its default, as seconds since 2001 in attributes of their own.
        func seconds(_ value: Value?) -> String? {
            if case .date(let date)? = value { String(date.timeIntervalSinceReferenceDate) } else { nil }
        }
        let dateLimits = type == .date ? [("minDateTimeInterval", seconds(rules.minValue)), ("maxDateTimeInterval", seconds(rules.maxValue))] : []
        var defaults: [(String, String?)] = []
        if let value = attribute.defaultValue {
            // Xcode keeps a date's default as seconds since 2001 in its own attribute.
            if case .date(let date) = value { defaults.append(("defaultDateTimeInterval", String(date.timeIntervalSinceReferenceDate))) }
            else { defaults.append(("defaultValueString", text(value))) }
        }
        let head = "        <attribute" + attributes([
            ("name", attribute.name), ("optional", attribute.isOptional ? "YES" : nil),
            ("transient", attribute.isTransient ? "YES" : nil), ("attributeType", type.modelName),
            ("minValueString", limits.0), ("maxValueString", limits.1),
        ] + dateLimits + [("regularExpressionString", rules.pattern)] + defaults + [
            ("valueTransformerName", attribute.valueTransformerName),
            ("allowsExternalBinaryDataStorage", attribute.allowsExternalBinaryDataStorage ? "YES" : nil),
            ("preserveAfterDeletion", attribute.preservesValueInHistoryOnDeletion ? "YES" : nil),
            ("elementID", attribute.renamingIdentifier), ("versionHashModifier", attribute.versionHashModifier),
        ])
        let info = userInfo(attribute.userInfo, indent: "            ")
        return info.isEmpty ? head + "/>" : ([head + ">"] + info + ["        </attribute>"]).joined(separator: "\n")
    }

    private static func relationship(_ relationship: Relationship) -> String {
        let rules: [DeleteRule: String] = [.nullify: "Nullify", .cascade: "Cascade", .deny: "Deny", .noAction: "No Action"]
        let head = "        <relationship" + attributes([
            ("name", relationship.name), ("optional", relationship.isOptional ? "YES" : nil),
            ("transient", relationship.isTransient ? "YES" : nil), ("toMany", relationship.isToMany ? "YES" : nil),
            ("minCount", relationship.minCount != 0 ? String(relationship.minCount) : nil),
            ("maxCount", !relationship.isToMany ? "1" : relationship.maxCount != 0 ? String(relationship.maxCount) : nil),
            ("deletionRule", rules[relationship.deleteRule]), ("ordered", relationship.isOrdered ? "YES" : nil),
            ("destinationEntity", relationship.destination), ("inverseName", relationship.inverse),
            ("inverseEntity", relationship.inverse == nil ? nil : relationship.destination),
            ("elementID", relationship.renamingIdentifier), ("versionHashModifier", relationship.versionHashModifier),
        ])
        let info = userInfo(relationship.userInfo, indent: "            ")
        return info.isEmpty ? head + "/>" : ([head + ">"] + info + ["        </relationship>"]).joined(separator: "\n")
    }

    private static func userInfo(_ info: [String: String], indent: String) -> [String] {
        guard !info.isEmpty else { return [] }
        return ["\(indent)<userInfo>"]
            + info.sorted { $0.key < $1.key }.map { "\(indent)    <entry\(attributes([("key", $0.key), ("value", $0.value)]))/>" }
            + ["\(indent)</userInfo>"]
    }

    /// A value as Xcode writes it: Booleans `YES`/`NO`, everything else in its text form.
    private static func text(_ value: Value) -> String {
        if case .boolean(let flag) = value { return flag ? "YES" : "NO" }
        return value.textForm
    }

    /// ` name="value"` for each pair with a value, escaped for XML.
    private static func attributes(_ pairs: [(String, String?)]) -> String {
        pairs.compactMap { name, value in value.map { " \(name)=\"\(escape($0))\"" } }.joined()
    }

    private static func escape(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "\n": result += "&#10;"
            case "\r": result += "&#13;"
            case "\t": result += "&#9;"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
