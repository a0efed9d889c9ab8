import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The macros of `ObjectStoreData` (declared in Sources/ObjectStoreData/Macros.swift).
@main
struct ObjectStoreDataMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        ModelMacro.self, PersistedPropertyMacro.self, MarkerMacro.self, ConstraintMacro.self, ModelActorMacro.self,
    ]
}
