import Foundation
import ObjectModel

/// A store's metadata: property-list values under string keys, readable and
/// writable without the store's model.
///
/// The well-known keys are Core Data's; keys this library does not know are
/// kept as they are. The store's model is embedded (as the JSON model format)
/// under ``Key/embeddedModel``, so a store can be opened, inspected and migrated
/// without a model file.
///
/// ```swift
/// let metadata = try registry.type(named: "memory").readMetadata(at: url)
/// print(metadata.storeUUID, metadata.versionIdentifiers)
/// ```
public struct StoreMetadata: Sendable, Hashable {
    /// The well-known keys.
    public enum Key {
        /// The store type's name (`NSStoreType`).
        public static let storeType = "NSStoreType"
        /// The store's UUID, as a string (`NSStoreUUID`).
        public static let storeUUID = "NSStoreUUID"
        /// Entity name to 32-byte version hash (`NSStoreModelVersionHashes`).
        public static let versionHashes = "NSStoreModelVersionHashes"
        /// The version of the hashing scheme (`NSStoreModelVersionHashesVersion`, 3).
        public static let versionHashesVersion = "NSStoreModelVersionHashesVersion"
        /// The model's version identifiers (`NSStoreModelVersionIdentifiers`).
        public static let versionIdentifiers = "NSStoreModelVersionIdentifiers"
        /// The model's version checksum (`NSStoreModelVersionChecksumKey`).
        public static let versionChecksum = "NSStoreModelVersionChecksumKey"
        /// The digest of the entity hashes (`NSStoreModelVersionHashesDigest`): base64 of SHA-512
        /// over each entity's name (UTF-8) and hash, in ascending order of name.
        public static let versionHashesDigest = "NSStoreModelVersionHashesDigest"
        /// The store's model in ObjectStore's JSON model format (data).
        public static let embeddedModel = "ObjectStoreModel"
    }

    /// The hashing scheme version Core Data writes, and this library too.
    public static let currentHashesVersion: Int64 = 3

    /// Every entry, well-known or not.
    public var values: [String: PropertyListValue]

    /// Metadata with these entries.
    public init(_ values: [String: PropertyListValue] = [:]) {
        self.values = values
    }

    /// Fresh metadata for a new store of `type` with `model`: type, a new UUID,
    /// the model's hashes, identifiers and checksum, and the model embedded.
    public init(storeType: String, uuid: UUID = UUID(), model: ManagedObjectModel) throws {
        self.init()
        values[Key.storeType] = .string(storeType)
        values[Key.storeUUID] = .string(uuid.uuidString)
        try setModel(model)
    }

    /// Records `model` as the store's model: hashes, their digest, identifiers (`[""]` for none, as
    /// Core Data writes it), checksum and the embedded model.
    public mutating func setModel(_ model: ManagedObjectModel) throws {
        values[Key.versionHashes] = .dictionary(model.versionHashes.mapValues { .data($0) })
        values[Key.versionHashesDigest] = .string(model.versionHashesDigest)
        values[Key.versionHashesVersion] = .integer(Self.currentHashesVersion)
        values[Key.versionIdentifiers] = .array((model.versionIdentifiers.isEmpty ? [""] : model.versionIdentifiers).map { .string($0) })
        values[Key.versionChecksum] = .string(model.versionChecksum)
        values[Key.embeddedModel] = .data(try JSONModelFormat.encode(model))
    }

    /// Whether `key` describes the store itself rather than the application's data:
    /// Core Data's keys (`NS…`, `_NS…`) and ``Key/embeddedModel``. A store writes its
    /// own; copying them from another store (in a migration) would make them stale.
    public static func isStoreKey(_ key: String) -> Bool {
        key.hasPrefix("NS") || key.hasPrefix("_NS") || key == Key.embeddedModel
    }

    /// The value under `key`.
    public subscript(key: String) -> PropertyListValue? {
        get { values[key] }
        set { values[key] = newValue }
    }

    /// The store type's name.
    public var storeType: String? { values[Key.storeType]?.stringValue }

    /// The store's UUID.
    public var storeUUID: UUID? { values[Key.storeUUID]?.stringValue.flatMap(UUID.init(uuidString:)) }

    /// The model version identifiers recorded in the store (`[""]`, Core Data's "none", is none).
    public var versionIdentifiers: [String] {
        let identifiers = values[Key.versionIdentifiers]?.arrayValue?.compactMap(\.stringValue) ?? []
        return identifiers == [""] ? [] : identifiers
    }

    /// Entity name to version hash, as recorded in the store.
    public var versionHashes: [String: Data] {
        values[Key.versionHashes]?.dictionaryValue?.compactMapValues(\.dataValue) ?? [:]
    }

    /// The store's embedded model, or nil when the store has none.
    /// - Throws: `ModelError` when the embedded model is present but unreadable.
    public func embeddedModel() throws -> ManagedObjectModel? {
        guard let data = values[Key.embeddedModel]?.dataValue else { return nil }
        return try JSONModelFormat.decode(data, file: "embedded model")
    }

    /// How the store's recorded hashes compare with `model`'s.
    public func compatibility(with model: ManagedObjectModel) -> ModelCompatibility {
        ModelCompatibility(storeHashes: versionHashes, modelHashes: model.versionHashes)
    }

    /// Checks that the store was made with `model`: what every backend's open does before it
    /// reads a row, so that a store is never read or written through another model's layout.
    /// - Throws: `StoreError` with code `incompatibleModel`, carrying the comparison, naming `url`.
    public func checkCompatible(with model: ManagedObjectModel, url: URL?) throws {
        let compatibility = compatibility(with: model)
        guard compatibility.isCompatible else {
            throw StoreError(.incompatibleModel, "the store was made with another model: \(compatibility)",
                             url: url, compatibility: compatibility)
        }
    }
}

/// The comparison of a store's recorded entity hashes with a model's.
public struct ModelCompatibility: Sendable, Hashable, CustomStringConvertible {
    /// Entities in both whose hashes differ, in ascending order.
    public var changedEntities: [String]
    /// Entities the store has and the model lacks.
    public var onlyInStore: [String]
    /// Entities the model has and the store lacks.
    public var onlyInModel: [String]

    /// Compares two hash tables.
    public init(storeHashes: [String: Data], modelHashes: [String: Data]) {
        guard storeHashes != modelHashes else {
            (changedEntities, onlyInStore, onlyInModel) = ([], [], [])
            return
        }
        changedEntities = storeHashes.keys.filter { modelHashes[$0] != nil && modelHashes[$0] != storeHashes[$0] }.sorted()
        onlyInStore = storeHashes.keys.filter { modelHashes[$0] == nil }.sorted()
        onlyInModel = modelHashes.keys.filter { storeHashes[$0] == nil }.sorted()
    }

    /// Whether every entity hash matches and both have the same entities.
    public var isCompatible: Bool { changedEntities.isEmpty && onlyInStore.isEmpty && onlyInModel.isEmpty }

    /// One sentence per difference, joined with `; `.
    public var description: String {
        var parts: [String] = []
        if !changedEntities.isEmpty { parts.append("entities whose hash differs: \(changedEntities.joined(separator: ", "))") }
        if !onlyInStore.isEmpty { parts.append("entities only in the store: \(onlyInStore.joined(separator: ", "))") }
        if !onlyInModel.isEmpty { parts.append("entities only in the model: \(onlyInModel.joined(separator: ", "))") }
        return parts.isEmpty ? "compatible" : parts.joined(separator: "; ")
    }
}
