import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore

/// One version of an app's models, declared in code.
///
/// ```swift
/// enum TripsV1: VersionedSchema {
///     static let versionIdentifier = Schema.Version(1, 0, 0)
///     static var models: [any PersistentModel.Type] { [Trip.self] }
///     @Model final class Trip { var name: String; init(name: String) { self.name = name } }
/// }
/// ```
public protocol VersionedSchema: SendableMetatype {
    /// The version.
    static var versionIdentifier: Schema.Version { get }
    /// The version's model types.
    static var models: [any PersistentModel.Type] { get }
}

extension Schema {
    /// The schema of one version.
    public convenience init(versionedSchema: any VersionedSchema.Type) {
        self.init(versionedSchema.models, version: versionedSchema.versionIdentifier)
    }
}

/// How a store moves from each version of the app's schema to the next: the versions, oldest
/// first, and a stage for each step (a step without a stage is inferred, as a lightweight one).
///
/// ```swift
/// enum TripsPlan: SchemaMigrationPlan {
///     static var schemas: [any VersionedSchema.Type] { [TripsV1.self, TripsV2.self] }
///     static var stages: [MigrationStage] {
///         [.custom(fromVersion: TripsV1.self, toVersion: TripsV2.self, willMigrate: nil, didMigrate: { context in
///             for trip in try context.fetch(FetchDescriptor<TripsV2.Trip>()) { trip.title = trip.title.capitalized }
///             try context.save()
///         })]
///     }
/// }
/// let container = try ModelContainer(for: TripsV2.Trip.self, migrationPlan: TripsPlan.self, configurations: configuration)
/// ```
///
/// The store layer's migrator runs it: in place where the store can change its schema so
/// (SQLite), else into a new store beside the old one, which is replaced only at the end.
/// `willMigrate` sees the store at the stage's source version (its models are the source
/// schema's classes), `didMigrate` at its destination.
public protocol SchemaMigrationPlan {
    /// The versions, oldest first; the last is the container's.
    static var schemas: [any VersionedSchema.Type] { get }
    /// The stages, one per step that is not a plain lightweight one.
    static var stages: [MigrationStage] { get }
}

/// One step of a ``SchemaMigrationPlan``.
public enum MigrationStage: Sendable {
    /// The step's mapping is inferred (a rename needs `originalName`).
    case lightweight(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type)
    /// The step, with closures before (on the source version's models) and after (on the destination's).
    case custom(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type,
                willMigrate: (@Sendable (ModelContext) throws -> Void)?, didMigrate: (@Sendable (ModelContext) throws -> Void)?)
}

extension SchemaMigrationPlan {
    /// The store layer's migrator for this plan, whose last version is `schema`.
    static func migrator(ending schema: Schema, allowsDataLoss: Bool = false) throws -> StoreMigrator {
        var versions: [ModelVersions.Version] = []
        var schemasByName: [String: Schema] = [:]
        for versioned in Self.schemas {
            let versionSchema = versioned.versionIdentifier == schema.version ? schema : Schema(versionedSchema: versioned)
            let name = "\(versioned.versionIdentifier)"
            schemasByName[name] = versionSchema
            versions.append(.init(name: name, model: versionSchema.model))
        }
        guard versions.last?.model.versionHashes == schema.model.versionHashes else {
            throw ModelContainerError("the migration plan's last schema (\(versions.last?.name ?? "none")) is not the container's (\(schema.version))")
        }
        let stages: [ObjectMigration.MigrationStage] = Self.stages.map { stage in
            switch stage {
            case .lightweight(let from, let to):
                return .lightweight(from: "\(from.versionIdentifier)", to: "\(to.versionIdentifier)")
            case .custom(let from, let to, let willMigrate, let didMigrate):
                let (source, destination) = ("\(from.versionIdentifier)", "\(to.versionIdentifier)")
                return .custom(from: source, to: destination, willMigrate: hook(willMigrate, schemasByName[source] ?? schema),
                               didMigrate: hook(didMigrate, schemasByName[destination] ?? schema))
            }
        }
        return StoreMigrator(versions: try ModelVersions(versions: versions), stages: stages, allowsDataLoss: allowsDataLoss)
    }
}

/// A stage's closure as the store layer runs it: on a context of the intermediate store, seen
/// through the models of `schema`.
private func hook(_ body: (@Sendable (ModelContext) throws -> Void)?, _ schema: Schema) -> (@Sendable (ObjectContext) throws -> Void)? {
    guard let body else { return nil }
    return { objects in try body(ModelContext(objects, schema: schema)) }
}

extension ModelContext {
    /// A context over the store a migration stage's closure works on, with the models of `schema`.
    convenience init(_ objects: ObjectContext, schema: Schema) {
        self.init(ModelContainer(schema: schema, coordinator: objects.coordinator))
    }
}
