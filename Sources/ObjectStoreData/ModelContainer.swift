import BuiltInBackends
import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore

/// A schema and the store that holds its models: open it once, then make contexts on it.
///
/// ```swift
/// let container = try ModelContainer(for: Trip.self, configurations: ModelConfiguration(url: URL(filePath: "trips.store")))
/// let context = ModelContext(container)
/// context.insert(Trip(name: "Lisbon", start: .now))
/// try context.save()
/// ```
///
/// Opening a store made with an earlier schema migrates it: along the `migrationPlan`'s
/// versions when one is given (its stages, or inferred lightweight steps), else by one
/// inferred lightweight step from the model the store records. A store that cannot be
/// brought to the schema is an error; it is left as it was.
public final class ModelContainer: Sendable {
    /// The container's schema.
    public let schema: Schema
    /// The container's configurations (one).
    public let configurations: [ModelConfiguration]
    /// The store layer's coordinator, with the store attached.
    let coordinator: StoreCoordinator
    /// The main actor's context, made when first asked for.
    @MainActor private var main: ModelContext?
    /// Whether the container opened its store (and closes it when it goes).
    private let ownsStore: Bool

    /// A container of these model types (and those they reach).
    public convenience init(for types: any PersistentModel.Type..., migrationPlan: (any SchemaMigrationPlan.Type)? = nil,
                            configurations: ModelConfiguration...) throws {
        try self.init(for: Schema(validating: types, version: migrationPlan?.schemas.last?.versionIdentifier ?? Schema.Version(1, 0, 0)),
                      migrationPlan: migrationPlan, configurations: configurations)
    }

    /// A container of `schema`.
    public convenience init(for schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)? = nil,
                            configurations: ModelConfiguration...) throws {
        try self.init(for: schema, migrationPlan: migrationPlan, configurations: configurations)
    }

    /// A container of `schema` in the store `configurations` names (one; none: the default).
    /// - Throws: ``ModelContainerError`` when the store cannot be opened or migrated, with the
    ///   store layer's error as its cause.
    public init(for schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)? = nil, configurations: [ModelConfiguration]) throws {
        guard configurations.count <= 1 else {
            throw ModelContainerError("a container holds one store: give one configuration, not \(configurations.count)")
        }
        let configuration = configurations.first ?? ModelConfiguration()
        if let unsupported = configuration.unsupported { throw ModelContainerError("\(configuration.name): \(unsupported)") }
        ownsStore = true
        self.schema = schema
        self.configurations = [configuration]
        let registry = StoreTypeRegistry()
        BuiltInBackends.register(in: registry)
        coordinator = StoreCoordinator(model: schema.model, registry: registry)
        let type: any StoreType
        do {
            type = try registry.type(named: configuration.resolvedStoreType(in: registry))
        } catch {
            throw ModelContainerError("\(configuration.url): \(error)", cause: error)
        }
        if configuration.url.isFileURL {
            try? FileManager.default.createDirectory(at: configuration.url.deletingLastPathComponent(), withIntermediateDirectories: true)
        }
        do {
            if type.storeExists(at: configuration.url) {
                try Self.migrateIfNeeded(configuration.url, type: type, schema: schema, plan: migrationPlan, registry: registry,
                                         allowsDataLoss: configuration.allowsDataLoss)
            }
            try coordinator.addStore(type: type.name, at: configuration.url, options: StoreOptions(readOnly: !configuration.allowsSave))
        } catch let error as ModelContainerError {
            throw error
        } catch {
            throw ModelContainerError("\(configuration.url.isFileURL ? configuration.url.path : configuration.url.absoluteString): the store cannot be opened: \(error)", cause: error)
        }
    }

    /// A container over a coordinator that is open already (a migration stage's store).
    init(schema: Schema, coordinator: StoreCoordinator) {
        self.schema = schema
        configurations = []
        self.coordinator = coordinator
        ownsStore = false
    }

    deinit {
        // The store closes with the last reference to the container (its contexts hold it).
        if ownsStore { for store in coordinator.stores { try? store.close() } }
    }

    /// The main actor's context, with autosave on (``ModelContext/autosaveEnabled``).
    @MainActor public var mainContext: ModelContext {
        if let main { return main }
        let context = ModelContext(self)
        context.autosaveEnabled = true
        main = context
        return context
    }

    /// Removes every model from the store, in one save.
    public func deleteAllData() throws {
        let context = ObjectContext(coordinator: coordinator)
        for entity in schema.model.entityDescriptions where !entity.isAbstract && entity.parent == nil {
            for object in try context.fetch(FetchRequest(entity: entity.name)) { context.delete(object) }
        }
        try context.save()
    }

    /// Brings a store written with another schema to this one: along the plan's versions, or
    /// by one lightweight step from the model the store records.
    static func migrateIfNeeded(_ url: URL, type: any StoreType, schema: Schema, plan: (any SchemaMigrationPlan.Type)?,
                                registry: StoreTypeRegistry, allowsDataLoss: Bool) throws {
        let metadata = try type.readMetadata(at: url)
        guard !metadata.compatibility(with: schema.model).isCompatible else { return }
        let migrator: StoreMigrator
        if let plan {
            migrator = try plan.migrator(ending: schema, allowsDataLoss: allowsDataLoss)
        } else {
            guard let own = try type.ownModel(at: url, metadata: metadata) else {
                throw ModelContainerError("\(url.path): the store was made with another schema and records no model to migrate from; give a migration plan")
            }
            let versions = try ModelVersions(versions: [.init(name: "store", model: own), .init(name: "\(schema.version)", model: schema.model)])
            migrator = StoreMigrator(versions: versions, allowsDataLoss: allowsDataLoss)
        }
        do {
            try migrator.migrateStore(at: url, type: type)
        } catch {
            throw ModelContainerError("\(url.path): the store cannot be migrated to the schema: \(error)", cause: error)
        }
    }
}

/// Why a container could not be made.
public struct ModelContainerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong and where.
    public let message: String
    /// The store layer's error, when one caused it.
    public let cause: (any Error & Sendable)?

    init(_ message: String, cause: (any Error & Sendable)? = nil) {
        self.message = message
        self.cause = cause
    }

    public var description: String { message }
}
