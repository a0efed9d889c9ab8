import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@_PersistedProperty`, which `@Model` puts on each persisted property: the property becomes
/// accessors over the model's storage (an init accessor, so the class's own initializers and
/// the property's initial value write through it), with an empty marker (`_<name>`) for the
/// init accessor to initialize.
public struct PersistedPropertyMacro: AccessorMacro, PeerMacro {
    public static func expansion(of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [AccessorDeclSyntax] {
        guard let name = propertyName(declaration),
              let type = declaration.as(VariableDeclSyntax.self)?.bindings.first?.typeAnnotation?.type.trimmedDescription else { return [] }
        return [
            """
            @storageRestrictions(accesses: _$storage, initializes: _\(raw: name))
            init(initialValue) {
                _$storage.setValue(initialValue, forKey: "\(raw: name)")
                _\(raw: name) = ObjectStoreData.PersistedSlot()
            }
            """,
            "get { _$storage.value(forKey: \"\(raw: name)\", as: (\(raw: type)).self) }",
            "set { _$storage.setValue(newValue, forKey: \"\(raw: name)\") }",
        ]
    }

    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        guard let name = propertyName(declaration) else { return [] }
        return ["private var _\(raw: name): ObjectStoreData.PersistedSlot"]
    }

    static func propertyName(_ declaration: some DeclSyntaxProtocol) -> String? {
        declaration.as(VariableDeclSyntax.self)?.bindings.first?.pattern.as(IdentifierPatternSyntax.self)?.identifier.text
    }
}

/// `@Attribute`, `@Relationship` and `@Transient`: they add nothing themselves; `@Model` reads them.
public struct MarkerMacro: PeerMacro {
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        []
    }
}

/// `#Unique<T>([\.a], [\.b, \.c])` and `#Index<T>(…)`: nothing of their own; `@Model` reads them.
public struct ConstraintMacro: DeclarationMacro {
    public static func expansion(of node: some FreestandingMacroExpansionSyntax,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        []
    }
}

/// `@ModelActor`: an actor with a model container and a context of its own, isolated to it.
public struct ModelActorMacro: MemberMacro, ExtensionMacro {
    public static func expansion(of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
                                 conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        [
            "public nonisolated let modelContainer: ObjectStoreData.ModelContainer",
            "public let modelContext: ObjectStoreData.ModelContext",
            """
            public init(modelContainer: ObjectStoreData.ModelContainer) {
                self.modelContainer = modelContainer
                self.modelContext = ObjectStoreData.ModelContext(modelContainer)
            }
            """,
        ]
    }

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
                                 in context: some MacroExpansionContext) throws -> [ExtensionDeclSyntax] {
        [try ExtensionDeclSyntax("extension \(type.trimmed): ObjectStoreData.ModelActor {}")]
    }
}
