import ObjectStoreDataMacros
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// What the macros write, checked against the expansion written out by hand.
@Suite("ObjectStoreData macros: expansions")
struct ModelMacroTests {
    static let macros: [String: MacroSpec] = [
        "Model": MacroSpec(type: ModelMacro.self, conformances: ["PersistentModel"]),
        "_PersistedProperty": MacroSpec(type: PersistedPropertyMacro.self),
        "Attribute": MacroSpec(type: MarkerMacro.self),
        "Transient": MacroSpec(type: MarkerMacro.self),
        "Unique": MacroSpec(type: ConstraintMacro.self),
        "ModelActor": MacroSpec(type: ModelActorMacro.self, conformances: ["ModelActor"]),
    ]

    func expand(_ source: String, _ expanded: String, diagnostics: [DiagnosticSpec] = []) {
        assertMacroExpansion(source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: Self.macros, indentationWidth: .spaces(4)) { failure in
            Issue.record(Comment(rawValue: failure.message), sourceLocation: SourceLocation(
                fileID: failure.location.fileID, filePath: failure.location.filePath, line: failure.location.line, column: failure.location.column))
        }
    }

    @Test("@Model: persisted properties become accessors over the storage; the class gains its description, constraints, an initializer for fetched models and the conformance")
    func model() {
        expand("""
            @Model
            final class Tag {
                #Unique<Tag>([\\.label])
                @Attribute(.unique) var label: String
                var uses: Int = 0
                @Transient var scratch = 0
                var computed: Int { uses * 2 }
                init(label: String) { self.label = label }
            }
            """, """
            final class Tag {
                var label: String {
                    @storageRestrictions(accesses: _$storage, initializes: _label)
                    init(initialValue) {
                        _$storage.setValue(initialValue, forKey: "label")
                        _label = ObjectStoreData.PersistedSlot()
                    }
                    get {
                        _$storage.value(forKey: "label", as: (String).self)
                    }
                    set {
                        _$storage.setValue(newValue, forKey: "label")
                    }
                }

                private var _label: ObjectStoreData.PersistedSlot
                var uses: Int {
                    @storageRestrictions(accesses: _$storage, initializes: _uses)
                    init(initialValue) {
                        _$storage.setValue(initialValue, forKey: "uses")
                        _uses = ObjectStoreData.PersistedSlot()
                    }
                    get {
                        _$storage.value(forKey: "uses", as: (Int).self)
                    }
                    set {
                        _$storage.setValue(newValue, forKey: "uses")
                    }
                }

                private var _uses: ObjectStoreData.PersistedSlot
                var scratch = 0
                var computed: Int { uses * 2 }
                init(label: String) { self.label = label }

                public var _$storage = ObjectStoreData.ModelStorage()

                public static var entityName: String {
                    "Tag"
                }

                public static var _$properties: [ObjectStoreData.ModelProperty] {
                    [ObjectStoreData.ModelProperty.describe("label", \\Tag.label, attribute: .init(.unique)),
                        ObjectStoreData.ModelProperty.describe("uses", \\Tag.uses, initial: {
                                0
                            })]
                }

                public static var _$uniqueness: [[String]] {
                    [["label"]]
                }

                public static var _$indexes: [[String]] {
                    []
                }

                public required init(_$storage storage: ObjectStoreData.ModelStorage) {
                    self._$storage = storage
                    self._label = ObjectStoreData.PersistedSlot()
                    self._uses = ObjectStoreData.PersistedSlot()
                }
            }

            extension Tag: ObjectStoreData.PersistentModel {
            }
            """)
    }

    @Test("@Model refuses what it cannot make a model of, saying how to fix it")
    func diagnostics() {
        expand("""
            @Model
            struct Value {
            }
            """, """
            struct Value {
            }
            """, diagnostics: [DiagnosticSpec(message: "@Model applies to a class", line: 1, column: 1)])
        expand("""
            @Model
            final class Untyped {
                var count = 0
            }
            """, """
            final class Untyped {
                var count = 0

                public var _$storage = ObjectStoreData.ModelStorage()

                public static var entityName: String {
                    "Untyped"
                }

                public static var _$properties: [ObjectStoreData.ModelProperty] {
                    []
                }

                public static var _$uniqueness: [[String]] {
                    []
                }

                public static var _$indexes: [[String]] {
                    []
                }

                public required init(_$storage storage: ObjectStoreData.ModelStorage) {
                    self._$storage = storage

                }

                public init() {
                }
            }

            extension Untyped: ObjectStoreData.PersistentModel {
            }
            """, diagnostics: [DiagnosticSpec(message: "the persisted property count needs its type written out (`var count: Int = 0`)", line: 3, column: 9)])
    }

    @Test("@ModelActor: a container, a context of the actor's own, the initializer and the conformance")
    func modelActor() {
        expand("""
            @ModelActor
            actor Importer {
            }
            """, """
            actor Importer {

                public nonisolated let modelContainer: ObjectStoreData.ModelContainer

                public let modelContext: ObjectStoreData.ModelContext

                public init(modelContainer: ObjectStoreData.ModelContainer) {
                    self.modelContainer = modelContainer
                    self.modelContext = ObjectStoreData.ModelContext(modelContainer)
                }
            }

            extension Importer: ObjectStoreData.ModelActor {
            }
            """)
    }
}
