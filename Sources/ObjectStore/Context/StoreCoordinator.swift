import Foundation
import ObjectModel
import Synchronization

/// Attaches stores to a model and routes entities to them.
///
/// Each store holds the entities of one configuration (or, with no
/// configuration, every entity no other store claims). Adding a store checks
/// that it was made with the coordinator's model and otherwise throws a
/// ``StoreError`` with code ``StoreError/Code/incompatibleModel`` that names each
/// entity whose hash differs and the entities only one side has.
///
/// ```swift
/// InMemoryStore.register()
/// let coordinator = StoreCoordinator(model: model)
/// try coordinator.addStore(type: "memory", at: nil)
/// let context = ObjectContext(coordinator: coordinator)
/// ```
public final class StoreCoordinator: Sendable {
    /// The model every attached store uses.
    public let model: ManagedObjectModel
    /// Where store types are looked up by name.
    public let registry: StoreTypeRegistry

    private struct Attachment: Sendable {
        let store: any PersistentStore
        let configuration: String?
    }

    private let attachments = Mutex<[Attachment]>([])

    /// Creates a coordinator with no stores.
    public init(model: ManagedObjectModel, registry: StoreTypeRegistry = .shared) {
        self.model = model
        self.registry = registry
    }

    /// Opens (creating if needed) a store and attaches it.
    ///
    /// - Parameters:
    ///   - type: the registered store type name (`memory`, `sqlite`, ...).
    ///   - url: where the store lives; nil for an anonymous in-memory store.
    ///   - configuration: the configuration whose entities this store holds; nil for the rest.
    ///   - options: how to open it.
    /// - Throws: ``StoreError``: ``StoreError/Code/unknownStoreType``,
    ///   ``StoreError/Code/incompatibleModel``, or the backend's failure.
    @discardableResult
    public func addStore(type: String, at url: URL?, configuration: String? = nil,
                         options: StoreOptions = StoreOptions()) throws -> any PersistentStore {
        let storeType = try registry.type(named: type)
        if let url, storeType.storeExists(at: url) {
            try storeType.readMetadata(at: url).checkCompatible(with: model, url: url)
        }
        let store = try storeType.open(at: url, model: model, options: options)
        try addStore(store, configuration: configuration)
        return store
    }

    /// Attaches a store that is already open.
    /// - Throws: ``StoreError`` with ``StoreError/Code/incompatibleModel`` when it uses another model,
    ///   or ``StoreError/Code/invalidChange`` for an unknown configuration.
    public func addStore(_ store: any PersistentStore, configuration: String? = nil) throws {
        if store.model != model {
            let compatibility = ModelCompatibility(storeHashes: store.model.versionHashes, modelHashes: model.versionHashes)
            if !compatibility.isCompatible {
                throw StoreError(.incompatibleModel, "the store uses another model: \(compatibility)",
                                 url: store.url, compatibility: compatibility)
            }
        }
        if let configuration, model.configurations[configuration] == nil {
            throw StoreError(.invalidChange, "the model has no configuration named \(configuration)")
        }
        attachments.withLock { $0.append(Attachment(store: store, configuration: configuration)) }
    }

    /// Detaches and closes a store.
    public func removeStore(_ store: any PersistentStore) throws {
        attachments.withLock { $0.removeAll { $0.store === store } }
        try store.close()
    }

    /// The attached stores, in the order they were added.
    public var stores: [any PersistentStore] { attachments.withLock { $0.map(\.store) } }

    /// The store that holds `entity`.
    /// - Throws: ``StoreError`` with ``StoreError/Code/noStore``.
    public func store(forEntity entity: String) throws -> any PersistentStore {
        let attached = attachments.withLock { $0 }
        if let match = attached.first(where: { $0.configuration.flatMap { model.configurations[$0] }?.contains(entity) == true }) {
            return match.store
        }
        if let fallback = attached.first(where: { $0.configuration == nil }) { return fallback.store }
        throw StoreError(.noStore, "no attached store holds entity \(entity)")
    }

    /// The attached store whose UUID is `identifier`.
    public func store(withIdentifier identifier: UUID) -> (any PersistentStore)? {
        attachments.withLock { $0.first { $0.store.identifier == identifier }?.store }
    }

    /// Reads the metadata of a store that is not open, without a model.
    public func metadataForStore(type: String, at url: URL) throws -> StoreMetadata {
        try registry.type(named: type).readMetadata(at: url)
    }

    /// Removes every file of a closed store. This destroys the store's data.
    public func destroyStore(type: String, at url: URL) throws {
        try registry.type(named: type).destroy(at: url)
    }

    /// Moves the closed store at `source` over the one at `destination`, sidecar files included.
    public func replaceStore(type: String, at destination: URL, withStoreAt source: URL) throws {
        try registry.type(named: type).replace(at: destination, with: source)
    }
}
