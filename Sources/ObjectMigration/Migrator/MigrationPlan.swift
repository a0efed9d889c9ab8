import Foundation
import ObjectModel
import ObjectStore

/// One step of a ``MigrationPlan``: a store of one model version becomes a store of another.
public struct MigrationStep: Sendable, CustomStringConvertible {
    /// How a step moves the store.
    public enum Kind: Sendable, Hashable, CustomStringConvertible {
        /// The store's own schema change (`SchemaChanging`): its tables altered in one
        /// transaction, no object loaded. Consecutive in-place steps run in one transaction.
        case inPlace
        /// The inferred mapping, through the streaming manager into a new store.
        case lightweight
        /// A mapping given for this step (its name: a mapping file's), through the streaming manager.
        case custom(String)

        /// `in-place`, `lightweight`, or `mapping <name>`.
        public var description: String {
            switch self {
            case .inPlace: "in-place"
            case .lightweight: "lightweight"
            case .custom(let name): "mapping \(name)"
            }
        }
    }

    /// The version the step starts from.
    public var source: String
    /// The version the step leads to.
    public var destination: String
    /// How it moves the store.
    public var kind: Kind
    /// The mapping it runs.
    public var mapping: MappingModel
    /// The custom stage's closures around the step, when a stage declares them.
    public var hooks: MigrationStage.Hooks?
    /// The stored data of its source the step does not carry (``DataDrop``), counted in the store
    /// when the plan was made for one (``StoreMigrator/plan(forStoreAt:type:to:countingObjects:)``).
    public var drops: [DataDrop] = []

    /// `<source> -> <destination>: <kind>`, as `objectstore migrate` prints it, with the stage's
    /// closures when it has them (`, then didMigrate`) and the drops that lose data
    /// (`; drops Post.date (120 values)`; a drop of nothing the store holds is left out).
    public var description: String {
        var text = "\(source) -> \(destination): \(kind)"
        if hooks?.willMigrate != nil { text = "\(source) -> \(destination): willMigrate, then \(kind)" }
        if hooks?.didMigrate != nil { text += ", then didMigrate" }
        let losing = drops.filter(\.losesData)
        if !losing.isEmpty { text += "; drops " + losing.map(\.description).joined(separator: ", ") }
        return text
    }

}

/// A migration written as stages, SwiftData's model in our terms: each stage takes the store from
/// one version to the next, lightweight (the inferred mapping) or custom, with closures that get
/// a context on the store at the stage's source version before it (`willMigrate`) and at its
/// destination version after it (`didMigrate`).
///
/// A change that cannot be inferred — a required attribute computed from others — is three
/// versions and two stages: add it optional (a custom stage whose `didMigrate` fills it), then
/// make it required (a lightweight stage; each object is checked to have a value):
///
/// ```swift
/// let stages: [MigrationStage] = [
///     .custom(from: "v1", to: "v2", didMigrate: { context in
///         for person in try context.fetch(FetchRequest(entity: "Person")) {
///             try person.set("fullName", .string("\(person["first", as: String.self] ?? "") \(person["last", as: String.self] ?? "")"))
///         }
///         try context.save()
///     }),
///     .lightweight(from: "v2", to: "v3"),
/// ]
/// try StoreMigrator(versions: versions, stages: stages).migrateStore(at: url, type: SQLiteStoreType())
/// ```
///
/// The closures work on an intermediate store, never on the original: it is still replaced
/// only at the end, with everything the closures did.
public enum MigrationStage: Sendable {
    /// What a custom stage runs around its step.
    public struct Hooks: Sendable {
        /// Runs on a context of the store at the stage's source version, before the step.
        public var willMigrate: (@Sendable (ObjectContext) throws -> Void)?
        /// Runs on a context of the store at the stage's destination version, after the step.
        public var didMigrate: (@Sendable (ObjectContext) throws -> Void)?
    }

    /// The inferred mapping from `from` to `to`; an attribute that becomes required without a
    /// default is inferable here (every object is checked to have a value, as a stage before
    /// filled it), which Core Data's rules alone refuse.
    case lightweight(from: String, to: String)
    /// The step from `from` to `to` (a mapping given for it, else the inferred one, as in a
    /// lightweight stage), with closures before and after.
    case custom(from: String, to: String, willMigrate: (@Sendable (ObjectContext) throws -> Void)? = nil,
                didMigrate: (@Sendable (ObjectContext) throws -> Void)? = nil)

    var versions: (from: String, to: String) {
        switch self {
        case .lightweight(let from, let to), .custom(let from, let to, _, _): (from, to)
        }
    }

    var hooks: Hooks? {
        guard case .custom(_, _, let willMigrate, let didMigrate) = self else { return nil }
        return Hooks(willMigrate: willMigrate, didMigrate: didMigrate)
    }
}

/// How a store gets from the version it was written with to a target version: the steps,
/// each with its mapping, found before anything is written (`StoreMigrator/plan(forStoreAt:type:to:)`).
public struct MigrationPlan: Sendable {
    /// The version the store was written with.
    public var storeVersion: String
    /// The version the plan leads to.
    public var targetVersion: String
    /// The steps, in order; empty when the store is at the target already.
    public var steps: [MigrationStep]
    /// The store's objects per entity (exactly that entity) when the plan was made.
    public var objectCounts: [String: Int]
    /// Mappings that were given but match no step of this plan, by name.
    public var unusedMappings: [String]
}

/// Progress of one step of a migration: which step, and the manager's progress within it.
public struct StepProgress: Sendable {
    /// The step's position in the plan, from 0.
    public var step: Int
    /// How many steps the plan has.
    public var steps: Int
    /// The step itself.
    public var description: String
    /// Progress within the step (entity mapping, phase, objects).
    public var progress: MigrationProgress
}

/// A mapping given to a ``StoreMigrator`` for the step it fits, with a name to show in plans.
///
/// It fits the step between the versions its ``MappingModel/sourceVersion`` and
/// ``MappingModel/destinationVersion`` name; a mapping that names no versions fits the step
/// whose models have the version hashes its entity mappings record; an Xcode mapping model that
/// records neither (no model paths) fits a step whose models have every entity and
/// property it names, and no concrete entity it does not map.
public struct StepMapping: Sendable {
    /// The name plans show (a mapping file's name).
    public var name: String
    /// The mapping.
    public var mapping: MappingModel

    /// Names a mapping.
    public init(name: String, mapping: MappingModel) {
        self.name = name
        self.mapping = mapping
    }

    /// Whether the mapping records neither version names nor hashes and is matched to a step by
    /// the names of its entities and properties (an Xcode mapping model without model paths).
    var matchesByNamesOnly: Bool {
        mapping.fitsStepsByNames && mapping.sourceVersion == nil && mapping.destinationVersion == nil
            && !mapping.entityMappings.contains { $0.sourceVersionHash != nil || $0.destinationVersionHash != nil }
    }

    /// Whether the mapping fits the step from `source` to `destination`: by the version names
    /// it gives, else by the hashes it records, else by the names of entities and properties.
    func fits(_ source: ModelVersions.Version, _ destination: ModelVersions.Version) -> Bool {
        if mapping.sourceVersion != nil || mapping.destinationVersion != nil {
            return (mapping.sourceVersion ?? source.name) == source.name && (mapping.destinationVersion ?? destination.name) == destination.name
        }
        var recorded = false
        for m in mapping.entityMappings {
            if let hash = m.sourceVersionHash {
                recorded = true
                guard let entity = m.sourceEntity, source.model.entity(named: entity)?.versionHash == hash else { return false }
            }
            if let hash = m.destinationVersionHash {
                recorded = true
                guard let entity = m.destinationEntity, destination.model.entity(named: entity)?.versionHash == hash else { return false }
            }
        }
        return recorded || (mapping.fitsStepsByNames && mapping.fitsByNames(from: source.model, to: destination.model))
    }
}
