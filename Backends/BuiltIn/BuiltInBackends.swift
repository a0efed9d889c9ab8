import ObjectStore

/// The backends that come with ObjectStore: the one list the `objectstore` tool, the typed layer's
/// containers, their help text and the tests take. A backend is its own folder under `Backends/`
/// and one line of `Package.swift`'s `backends`, from which the BackendList plugin writes this
/// list; nothing else names it (docs/writing-a-backend.md).
///
/// ```swift
/// BuiltInBackends.register()          // into StoreTypeRegistry.shared
/// let type = try StoreTypeRegistry.shared.type(named: "lmdb")
/// ```
public enum BuiltInBackends {
    /// Every built-in store type, in the order the tool lists them.
    public static let types: [any StoreType] = listedStoreTypes

    /// The type a store of no other type's extension or URL scheme is made with: the first.
    public static var defaultType: any StoreType { types[0] }

    /// Registers every built-in type with `registry` (the shared one by default).
    public static func register(in registry: StoreTypeRegistry = .shared) {
        for type in types { registry.register(type) }
    }

    /// Makes every built-in type's process-wide settings (``ObjectStore/StoreType/configureOwnProcess()``):
    /// for a program that owns its process, before any store is opened; a library never calls it.
    public static func configureOwnProcess() {
        for type in types { type.configureOwnProcess() }
    }

    /// The types whose stores the tool names on its command line: by a path (files) or a URL.
    public static var namedTypes: [any StoreType] { types.filter { !$0.fileExtensions.isEmpty || !$0.urlSchemes.isEmpty } }
}
