import Foundation
import ObjectModel
import ObjectStore

/// The models of a container, as entities: each model type an entity named after its class,
/// its persisted properties the entity's attributes and relationships, with the version
/// hashes an Xcode model of the same entities has (docs/typed-models.md).
///
/// ```swift
/// let schema = Schema([Trip.self, Stop.self])
/// let container = try ModelContainer(for: schema, configurations: [ModelConfiguration(isStoredInMemoryOnly: true)])
/// ```
///
/// Model types reached through relationships are included without being listed.
public final class Schema: Sendable, Hashable, CustomStringConvertible {
    /// A schema's version (`VersionedSchema/versionIdentifier`).
    public struct Version: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
        public var major: Int
        public var minor: Int
        public var patch: Int

        /// A version, `Schema.Version(1, 0, 0)`.
        public init(_ major: Int, _ minor: Int, _ patch: Int) {
            self.major = major
            self.minor = minor
            self.patch = patch
        }

        public static func < (a: Version, b: Version) -> Bool { (a.major, a.minor, a.patch) < (b.major, b.minor, b.patch) }
        public var description: String { "\(major).\(minor).\(patch)" }
    }

    /// What `@Attribute` says of an attribute.
    public struct Attribute: Sendable {
        /// An option of an attribute.
        public struct Option: Sendable, Hashable {
            let name: String
            /// Unique among the models of its type: inserting a model with a value already stored
            /// updates the stored model (an upsert). Also a single-property `#Unique`.
            public static let unique = Option(name: "unique")
            /// Large values may be kept in files beside the store (Core Data's external storage).
            public static let externalStorage = Option(name: "externalStorage")
            /// The value is kept in history after deletion (Core Data's flag of that name).
            public static let preserveValueOnDeletion = Option(name: "preserveValueOnDeletion")
            /// Accepted for source compatibility; it changes nothing here (no Spotlight on Linux).
            public static let spotlight = Option(name: "spotlight")
            /// Accepted for source compatibility; it changes nothing here (no CloudKit on Linux).
            public static let allowsCloudEncryption = Option(name: "allowsCloudEncryption")
            /// Accepted for source compatibility; changes of the value are not tracked apart.
            public static let ephemeral = Option(name: "ephemeral")
        }

        let options: [Option]
        let originalName: String?
        let hashModifier: String?

        /// The options, as `@Attribute` takes them.
        public init(_ options: Option..., originalName: String? = nil, hashModifier: String? = nil) {
            self.options = options
            self.originalName = originalName
            self.hashModifier = hashModifier
        }
    }

    /// What `@Relationship` says of a relationship.
    public struct Relationship {
        /// What happens to the related models when a model is deleted.
        public enum DeleteRule: String, Sendable, Hashable, Codable, CaseIterable {
            /// They are deleted too.
            case cascade
            /// The delete is refused while any remains.
            case deny
            /// Nothing: they keep a reference to the deleted model.
            case noAction
            /// They lose their reference to the deleted model (the default).
            case nullify
        }

        /// An option of a relationship.
        public struct Option: Sendable, Hashable {
            let name: String
            /// A to-one whose target is unique among the models of its type.
            public static let unique = Option(name: "unique")
        }

        let options: [Option]
        let deleteRule: DeleteRule
        let minimumModelCount: Int?
        let maximumModelCount: Int?
        let originalName: String?
        let inverse: AnyKeyPath?
        let hashModifier: String?

        /// The options, as `@Relationship` takes them.
        public init(_ options: Option..., deleteRule: DeleteRule = .nullify, minimumModelCount: Int? = 0, maximumModelCount: Int? = 0,
                    originalName: String? = nil, inverse: AnyKeyPath? = nil, hashModifier: String? = nil) {
            self.options = options
            self.deleteRule = deleteRule
            self.minimumModelCount = minimumModelCount
            self.maximumModelCount = maximumModelCount
            self.originalName = originalName
            self.inverse = inverse
            self.hashModifier = hashModifier
        }
    }

    /// The schema's version.
    public let version: Version
    /// The entities, as the store layer describes them.
    public let model: ManagedObjectModel
    /// The model types by entity name.
    let types: [String: any PersistentModel.Type]

    /// A schema of `types` and every model type their relationships reach.
    /// - Precondition: the models are consistent (each failure is named); use ``init(validating:version:)`` to get an error instead.
    public convenience init(_ types: [any PersistentModel.Type], version: Version = Version(1, 0, 0)) {
        do {
            try self.init(validating: types, version: version)
        } catch {
            preconditionFailure("the models do not make a schema: \(error)")
        }
    }

    /// A schema of `types` (and what they reach).
    public convenience init(_ types: any PersistentModel.Type..., version: Version = Version(1, 0, 0)) {
        self.init(types, version: version)
    }

    /// A schema of `types` (and what they reach), or an error naming each inconsistency (two
    /// models with one name, an inverse that does not point back).
    /// - Throws: `ModelError` from the model layer.
    public init(validating types: [any PersistentModel.Type], version: Version = Version(1, 0, 0)) throws {
        var found: [String: any PersistentModel.Type] = [:]
        var queue = types
        while let type = queue.popLast() {
            let name = type.entityName
            if let known = found[name] {
                guard known == type else {
                    throw ModelError(.inconsistentModel, problems: ["two model types are named \(name): \(String(reflecting: known)) and \(String(reflecting: type))"])
                }
                continue
            }
            found[name] = type
            queue += type.relationshipDestinations
        }
        self.types = found
        self.version = version
        let descriptions = Dictionary(uniqueKeysWithValues: found.map { ($0.key, $0.value.entityDescription) })
        let entities = Self.pairInverses(descriptions).values.sorted { $0.name < $1.name }
        model = try ManagedObjectModel(entities: entities, versionIdentifiers: ["\(version)"])
    }

    /// Every entity's inverses: those `@Relationship(inverse:)` names, on both sides, and, where
    /// none is named, the one relationship of the destination that points back (when there is
    /// exactly one, and it names no other inverse).
    static func pairInverses(_ entities: [String: DescribedEntity]) -> [String: ObjectModel.Entity] {
        var result = entities.mapValues(\.entity)
        func setInverse(_ entity: String, _ relationship: String, _ inverse: String) {
            guard let index = result[entity]?.relationships.firstIndex(where: { $0.name == relationship }) else { return }
            result[entity]!.relationships[index].inverse = inverse
        }
        // Named inverses first, then the unambiguous ones.
        for (name, described) in entities {
            for (relationship, inverse) in described.namedInverses {
                setInverse(name, relationship, inverse)
                if let destination = result[name]?.relationships.first(where: { $0.name == relationship })?.destination {
                    setInverse(destination, inverse, relationship)
                }
            }
        }
        for name in result.keys.sorted() {
            for relationship in result[name]!.relationships where relationship.inverse == nil {
                guard let destination = result[relationship.destination] else { continue }
                let candidates = destination.relationships.filter {
                    $0.destination == name && ($0.inverse == nil || $0.inverse == relationship.name) && !(name == destination.name && $0.name == relationship.name)
                }
                // Exactly one on each side: the pair is unambiguous.
                let pointing = result[name]!.relationships.filter { $0.destination == destination.name && $0.inverse == nil }
                guard candidates.count == 1, pointing.count == 1 || name == destination.name else { continue }
                setInverse(name, relationship.name, candidates[0].name)
                setInverse(destination.name, candidates[0].name, relationship.name)
            }
        }
        return result
    }

    /// The model type of `entity`.
    func type(of entity: String) -> (any PersistentModel.Type)? { types[entity] }

    public static func == (a: Schema, b: Schema) -> Bool { a.version == b.version && a.model.versionHashes == b.model.versionHashes }
    public func hash(into hasher: inout Hasher) { hasher.combine(model.versionHashesDigest) }
    public var description: String { "Schema \(version): " + types.keys.sorted().joined(separator: ", ") }
}

/// An entity described by a model type, with the inverses its `@Relationship`s name.
struct DescribedEntity {
    var entity: ObjectModel.Entity
    /// Relationship name to the inverse's name, as `@Relationship(inverse:)` gives it.
    var namedInverses: [String: String]
}

extension PersistentModel {
    /// The model types this model's relationships point to.
    static var relationshipDestinations: [any PersistentModel.Type] {
        _$properties.compactMap { property in
            if case .relationship(let destination, _, _) = property.kind { return destination }
            return nil
        }
    }

    /// The entity the model's properties describe.
    static var entityDescription: DescribedEntity {
        var attributes: [ObjectModel.Attribute] = []
        var relationships: [ObjectModel.Relationship] = []
        var inverses: [String: String] = [:]
        for property in _$properties {
            switch property.kind {
            case .attribute(let type, let optional):
                let options = property.attribute?.options ?? []
                attributes.append(ObjectModel.Attribute(
                    property.name, type, optional: optional, default: property.defaultValue, renamingIdentifier: property.attribute?.originalName,
                    versionHashModifier: property.attribute?.hashModifier,
                    allowsExternalBinaryDataStorage: options.contains(.externalStorage),
                    preservesValueInHistoryOnDeletion: options.contains(.preserveValueOnDeletion),
                    valueTransformerName: type == .transformable ? "ObjectStoreDataJSON" : nil))
            case .relationship(let destination, let toMany, let optional):
                let spec = property.relationship
                let rule: ObjectModel.DeleteRule = switch spec?.deleteRule ?? .nullify {
                case .cascade: .cascade
                case .deny: .deny
                case .noAction: .noAction
                case .nullify: .nullify
                }
                relationships.append(ObjectModel.Relationship(
                    property.name, to: destination.entityName, toMany: toMany, minCount: toMany ? spec?.minimumModelCount ?? 0 : 0,
                    maxCount: toMany ? spec?.maximumModelCount ?? 0 : nil, deleteRule: rule, optional: optional,
                    renamingIdentifier: spec?.originalName, versionHashModifier: spec?.hashModifier))
                if let inverse = spec?.inverse, let name = destination.propertyName(anyKeyPath: inverse) { inverses[property.name] = name }
            }
        }
        let entity = ObjectModel.Entity(entityName, attributes: attributes, relationships: relationships,
                                        uniquenessConstraints: _$uniqueness,
                                        indexes: _$indexes.map { FetchIndex(name: "\(entityName)_" + $0.joined(separator: "_"), elements: $0.map { FetchIndex.Element($0) }) },
                                        representedClassName: entityName)
        return DescribedEntity(entity: entity, namedInverses: inverses)
    }

    /// The name of the property at `keyPath`, a key path of this model type (nil when it is none).
    static func propertyName(anyKeyPath keyPath: AnyKeyPath) -> String? { propertyName(keyPath) }
}
