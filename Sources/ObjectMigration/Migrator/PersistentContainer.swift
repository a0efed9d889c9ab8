import Foundation
import ObjectModel
import ObjectStore

/// Core Data's `NSPersistentContainer`, with the traps removed: a model's versions, one store,
/// and what to do when the store is at an older version or cannot be opened at all.
///
/// ```swift
/// let container = PersistentContainer(name: "Notes", versions: try ModelLoader.load(at: bundle),
///                                     storeURL: url, storeType: SQLiteStoreType(),
///                                     options: .init(onIncompatibleStore: .moveAside))
/// let loaded = try container.load()
/// if let old = loaded.movedAside { print("the old store is at \(old.path)") }
/// let note = try loaded.viewContext.insert("Note")
/// ```
public final class PersistentContainer: Sendable {
    /// What to do with a store that cannot be opened or migrated to the current version.
    ///
    /// Either policy acts only on a store of the container's type that is damaged, or readable
    /// and written with none of the model's versions (``IncompatibleStore``); a store at a version
    /// the model has, of another type or of another model is refused with the reason
    /// (``MigrationError/Code/recoveryRefused``), untouched.
    public enum IncompatibleStorePolicy: String, Sendable, CaseIterable {
        /// A typed error; the store is untouched (the default).
        case fail
        /// The whole file set moves into an `Incompatible` folder beside the store under a
        /// timestamped name, and a fresh store is created; ``LoadedContainer/movedAside`` says where.
        case moveAside = "move-aside"
        /// The store is destroyed and created anew (for caches). A damaged store is moved aside
        /// instead, never deleted.
        case recreate
    }

    /// How the container loads its store.
    public struct Options: Sendable {
        /// Migrate a store at an older version to the current one (else an older store is refused).
        public var migratesAutomatically: Bool
        /// Infer the mapping of a step that has none given (else such a step is refused).
        public var infersMappingsAutomatically: Bool
        /// What to do with a store that cannot be opened or migrated.
        public var onIncompatibleStore: IncompatibleStorePolicy
        /// Mappings for steps that cannot be inferred.
        public var mappings: [StepMapping]
        /// Policies those mappings name.
        public var policies: PolicyRegistry
        /// Whether a migration may drop data the store holds (``StoreMigrator/allowsDataLoss``):
        /// by default a step that would is refused and the store is left as it is.
        public var allowsDataLoss: Bool

        /// Options; by default an older store is migrated with inferred mappings and an
        /// incompatible one is an error.
        public init(migratesAutomatically: Bool = true, infersMappingsAutomatically: Bool = true,
                    onIncompatibleStore: IncompatibleStorePolicy = .fail, mappings: [StepMapping] = [], policies: PolicyRegistry = .shared,
                    allowsDataLoss: Bool = false) {
            self.allowsDataLoss = allowsDataLoss
            self.migratesAutomatically = migratesAutomatically
            self.infersMappingsAutomatically = infersMappingsAutomatically
            self.onIncompatibleStore = onIncompatibleStore
            self.mappings = mappings
            self.policies = policies
        }
    }

    /// The container's name.
    public let name: String
    /// The model's versions; the store is loaded at the current one.
    public let versions: ModelVersions
    /// Where the store is.
    public let storeURL: URL
    /// The store's type (registered in ``registry``).
    public let storeType: any StoreType
    /// How the store is loaded.
    public let options: Options
    /// The registry the coordinator opens the store through.
    public let registry: StoreTypeRegistry

    /// Creates a container; nothing is opened until ``load()``.
    public init(name: String, versions: ModelVersions, storeURL: URL, storeType: any StoreType, options: Options = Options(),
                registry: StoreTypeRegistry = .shared) {
        self.name = name
        self.versions = versions
        self.storeURL = storeURL
        self.storeType = storeType
        self.options = options
        self.registry = registry
    }

    /// Opens the store at the current version: creates it if missing, migrates it if it is at an
    /// older version (as ``options`` allow), and applies ``Options/onIncompatibleStore`` when it
    /// cannot be opened or migrated.
    /// - Throws: ``MigrationError`` (with ``IncompatibleStorePolicy/fail``, the store untouched),
    ///   `StoreError` when the store cannot be opened for another reason (it is busy, the disk is full).
    public func load() throws -> LoadedContainer {
        var migration: MigrationResult?
        var movedAside: URL?
        if storeType.storeExists(at: storeURL) {
            let assessed = storeType.filesState(at: storeURL)
            do {
                migration = try migrate()
            } catch let error where Self.isIncompatibility(error) && options.onIncompatibleStore != .fail {
                // Only a store of the container's type, readable and of no version of the model, is
                // set aside or recreated (``IncompatibleStore``); a damaged one is moved aside, never deleted.
                let assessment = try IncompatibleStore.assess(at: storeURL, type: storeType, versions: versions, failure: error, registry: registry)
                if options.onIncompatibleStore == .recreate && assessment == .unknownVersion {
                    try storeType.recreate(at: storeURL, model: versions.current, unchangedSince: assessed)
                } else {
                    movedAside = try storeType.moveAside(at: storeURL, fresh: versions.current)
                }
            }
        }
        if registry.names.contains(storeType.name) == false { registry.register(storeType) }
        let coordinator = StoreCoordinator(model: versions.current, registry: registry)
        try coordinator.addStore(type: storeType.name, at: storeURL)
        return LoadedContainer(coordinator: coordinator, viewContext: ObjectContext(coordinator: coordinator),
                               migration: migration, movedAside: movedAside)
    }

    /// Brings an existing store to the current version, or throws why it cannot be.
    private func migrate() throws -> MigrationResult? {
        let migrator = StoreMigrator(versions: versions, mappings: options.mappings, policies: options.policies,
                                     infersMappings: options.infersMappingsAutomatically, allowsDataLoss: options.allowsDataLoss)
        let plan = try migrator.plan(for: try storeType.readMetadata(at: storeURL))
        guard !plan.steps.isEmpty else { return nil }
        guard options.migratesAutomatically else {
            throw MigrationError(.noMapping, "\(storeURL.path) is at \(plan.storeVersion), not \(plan.targetVersion), and the container does not migrate automatically")
        }
        return try migrator.migrateStore(at: storeURL, type: storeType)
    }

    /// Whether `error` says the store cannot be brought to the current version (as opposed to a
    /// moment's trouble: another process busy with it, a cancellation, a full disk).
    public static func isIncompatibility(_ error: any Error) -> Bool {
        switch error {
        case let error as MigrationError:
            if error.code == .store, let cause = error.cause { return isIncompatibility(cause) }
            // A step refused for the data it would drop is no incompatibility: recreating or moving
            // the store aside would lose all of it.
            return ![.cancelled, .storeChanged, .store, .dataLoss].contains(error.code)
        case let error as StoreError:
            return [.corrupt, .incompatibleModel, .unsupportedFormat].contains(error.code)
        default:
            return false
        }
    }
}

/// A loaded ``PersistentContainer``: the coordinator with the store attached, a context on it,
/// and what loading did.
public struct LoadedContainer {
    /// The coordinator, with the store attached at the current model version.
    public let coordinator: StoreCoordinator
    /// A context on the coordinator, for the main work of the application.
    public let viewContext: ObjectContext
    /// The migration that brought the store to the current version, if one ran.
    public let migration: MigrationResult?
    /// Where an incompatible store was moved (``PersistentContainer/IncompatibleStorePolicy/moveAside``).
    public let movedAside: URL?
}
