import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Model`: a class becomes a persistent model. Each stored property (not `@Transient`)
/// is marked `@_PersistedProperty`, which turns it into accessors over the model's storage; the
/// class gains that storage, a description of its properties for the schema, an initializer
/// the context uses to make fetched models, and conformance to `PersistentModel`.
public struct ModelMacro: MemberMacro, MemberAttributeMacro, ExtensionMacro {
    public static func expansion(of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
                                 conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        guard let model = ModelClass(declaration, context: context, report: true) else { return [] }
        let name = model.name
        let entries = model.properties.map { property in
            var arguments = "\"\(property.name)\", \\\(name).\(property.name)"
            if let attribute = property.attributeArguments { arguments += ", attribute: .init(\(attribute))" }
            if let relationship = property.relationshipArguments { arguments += ", relationship: .init(\(relationship))" }
            if let initial = property.initialValue { arguments += ", initial: { \(initial) }" }
            return "ObjectStoreData.ModelProperty.describe(\(arguments))"
        }
        let markers = model.properties.map { "self._\($0.name) = ObjectStoreData.PersistedSlot()" }.joined(separator: "\n")
        var members: [DeclSyntax] = [
            "public var _$storage = ObjectStoreData.ModelStorage()",
            "public static var entityName: String { \"\(raw: name)\" }",
            """
            public static var _$properties: [ObjectStoreData.ModelProperty] {
                [\(raw: entries.joined(separator: ",\n"))]
            }
            """,
            "public static var _$uniqueness: [[String]] { \(raw: arrayLiteral(model.uniqueness)) }",
            "public static var _$indexes: [[String]] { \(raw: arrayLiteral(model.indexes)) }",
            """
            public required init(_$storage storage: ObjectStoreData.ModelStorage) {
                self._$storage = storage
                \(raw: markers)
            }
            """,
        ]
        // No initializer of its own and every property with a value: the one Swift would have made.
        if !model.declaresInitializer && model.everyPropertyHasValue { members.append("public init() {}") }
        return members
    }

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingAttributesFor member: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [AttributeSyntax] {
        guard let variable = member.as(VariableDeclSyntax.self), ModelClass.isPersisted(variable) else { return [] }
        guard variable.bindings.first?.typeAnnotation != nil else { return [] }   // reported by the member expansion
        return ["@_PersistedProperty"]
    }

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
                                 in context: some MacroExpansionContext) throws -> [ExtensionDeclSyntax] {
        guard ModelClass(declaration, context: context, report: false) != nil else { return [] }
        return [try ExtensionDeclSyntax("extension \(type.trimmed): ObjectStoreData.PersistentModel {}")]
    }

    static func arrayLiteral(_ lists: [[String]]) -> String {
        "[" + lists.map { "[" + $0.map { "\"\($0)\"" }.joined(separator: ", ") + "]" }.joined(separator: ", ") + "]"
    }
}

/// What `@Model` reads from a class: its name, its persisted properties with the arguments of
/// their `@Attribute` and `@Relationship`, its `#Unique` and `#Index` declarations.
struct ModelClass {
    struct Property {
        let name: String
        let attributeArguments: String?
        let relationshipArguments: String?
        /// The property's initial value as written, for the attribute's default.
        let initialValue: String?
    }

    let name: String
    var properties: [Property] = []
    var uniqueness: [[String]] = []
    var indexes: [[String]] = []
    var declaresInitializer = false
    var everyPropertyHasValue = true

    init?(_ declaration: some DeclGroupSyntax, context: some MacroExpansionContext, report: Bool) {
        guard let type = declaration.as(ClassDeclSyntax.self) else {
            if report { context.diagnose(Diagnostic(node: declaration, message: ModelDiagnostic.notAClass)) }
            return nil
        }
        name = type.name.text
        defer {
            var seen: Set<[String]> = []
            uniqueness = uniqueness.filter { seen.insert($0).inserted }
        }
        for member in type.memberBlock.members {
            if member.decl.is(InitializerDeclSyntax.self) { declaresInitializer = true }
            if let macro = member.decl.as(MacroExpansionDeclSyntax.self) {
                let lists = macro.arguments.compactMap { Self.keyPathNames($0.expression) }
                switch macro.macroName.text {
                case "Unique": uniqueness += lists
                case "Index": indexes += lists
                default: break
                }
                continue
            }
            guard let variable = member.decl.as(VariableDeclSyntax.self), Self.isPersisted(variable),
                  let binding = variable.bindings.first, let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else { continue }
            guard binding.typeAnnotation != nil else {
                if report { context.diagnose(Diagnostic(node: binding, message: ModelDiagnostic.noType(pattern.identifier.text))) }
                continue
            }
            let attribute = Self.arguments(of: "Attribute", on: variable)
            if Self.isUniqueOption(variable), !uniqueness.contains([pattern.identifier.text]) { uniqueness.append([pattern.identifier.text]) }
            properties.append(Property(name: pattern.identifier.text, attributeArguments: attribute,
                                       relationshipArguments: Self.arguments(of: "Relationship", on: variable),
                                       initialValue: binding.initializer?.value.trimmedDescription))
            if binding.initializer == nil && !Self.isOptional(binding.typeAnnotation!.type) { everyPropertyHasValue = false }
        }
    }

    /// Whether a member is a stored property the model persists: an instance `var` without
    /// accessors, not `@Transient`, not lazy.
    static func isPersisted(_ variable: VariableDeclSyntax) -> Bool {
        guard variable.bindingSpecifier.tokenKind == .keyword(.var), variable.bindings.count == 1,
              let binding = variable.bindings.first, binding.pattern.is(IdentifierPatternSyntax.self), binding.accessorBlock == nil else { return false }
        if variable.modifiers.contains(where: { [.keyword(.static), .keyword(.class), .keyword(.lazy)].contains($0.name.tokenKind) }) { return false }
        return !variable.attributes.contains { attribute in
            guard let name = attribute.as(AttributeSyntax.self)?.attributeName.trimmedDescription else { return false }
            return name == "Transient" || name.hasSuffix(".Transient") || name == "_PersistedProperty"
        }
    }

    /// The arguments of the attribute `name` on `variable`, as written ("" for none), or nil when it has none.
    static func arguments(of name: String, on variable: VariableDeclSyntax) -> String? {
        for element in variable.attributes {
            guard let attribute = element.as(AttributeSyntax.self) else { continue }
            let written = attribute.attributeName.trimmedDescription
            guard written == name || written.hasSuffix("." + name) else { continue }
            if case .argumentList(let list) = attribute.arguments { return list.trimmedDescription }
            return ""
        }
        return nil
    }

    /// Whether `@Attribute` on `variable` lists `.unique` among its options.
    static func isUniqueOption(_ variable: VariableDeclSyntax) -> Bool {
        for element in variable.attributes {
            guard let attribute = element.as(AttributeSyntax.self), attribute.attributeName.trimmedDescription.hasSuffix("Attribute"),
                  case .argumentList(let list) = attribute.arguments else { continue }
            return list.contains { $0.label == nil && $0.expression.trimmedDescription.hasSuffix(".unique") }
        }
        return false
    }

    static func isOptional(_ type: TypeSyntax) -> Bool {
        type.is(OptionalTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self)
            || type.as(IdentifierTypeSyntax.self)?.name.text == "Optional"
    }

    /// The property names of an array of key paths (`[\.a, \Person.b]`).
    static func keyPathNames(_ expression: ExprSyntax) -> [String]? {
        guard let array = expression.as(ArrayExprSyntax.self) else { return nil }
        return array.elements.compactMap { element in
            element.expression.as(KeyPathExprSyntax.self)?.components.last?.component
                .as(KeyPathPropertyComponentSyntax.self)?.declName.baseName.text
        }
    }
}

enum ModelDiagnostic: DiagnosticMessage {
    case notAClass
    case noType(String)

    var message: String {
        switch self {
        case .notAClass: "@Model applies to a class"
        case .noType(let name): "the persisted property \(name) needs its type written out (`var \(name): Int = 0`)"
        }
    }
    var diagnosticID: MessageID { MessageID(domain: "ObjectStoreData", id: "\(self)") }
    var severity: DiagnosticSeverity { .error }
}
