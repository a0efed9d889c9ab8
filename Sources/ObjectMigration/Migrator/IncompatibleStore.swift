import Foundation
import ObjectModel
import ObjectStore

/// The rule for when a store that cannot be migrated may be moved aside or recreated, so that
/// `--on-incompatible` and ``PersistentContainer/IncompatibleStorePolicy`` never take a usage
/// mistake or a damaged file for an incompatible store.
///
/// A store may be set aside or recreated only when it is **of the type its content says**,
/// **readable** (its own model matches its recorded hashes; every page and every object reads)
/// and **of no version of the model** (its hashes match none, and it shares entities with the
/// model, so it is not another model's store). A store at a version the model has (a step with
/// no mapping, a target before it, a migration that failed) is left alone with the reason; a
/// damaged one is reported as such, to be moved aside, never deleted.
///
/// ```swift
/// switch try IncompatibleStore.assess(at: url, type: type, versions: versions, failure: error) {
/// case .unknownVersion: try type.recreate(at: url, model: versions.current)
/// case .damaged(let why): _ = try type.moveAside(at: url, fresh: versions.current)
/// }
/// ```
public enum IncompatibleStore {
    /// What a store that cannot be migrated is, when something may be done with it.
    public enum Assessment: Sendable, Equatable {
        /// Readable, and written with none of the model's versions: it may be moved aside or recreated.
        case unknownVersion
        /// It cannot be read (the reason): it may be moved aside, never deleted.
        case damaged(String)
    }

    /// What the store at `url` is, given that migrating it failed with `failure`.
    /// - Parameters:
    ///   - url: the store.
    ///   - type: the type it was to be migrated as.
    ///   - versions: the model versions it was to be migrated with.
    ///   - failure: why the migration could not run.
    ///   - registry: the types the store's content is recognized by.
    /// - Throws: ``MigrationError`` with ``MigrationError/Code/recoveryRefused`` saying why
    ///   nothing may be done: the store is of another type than `type`, of another model, at a
    ///   version `versions` has, or a server store.
    public static func assess(at url: URL, type: any StoreType, versions: ModelVersions, failure: any Error,
                              registry: StoreTypeRegistry = .shared) throws -> Assessment {
        let place = url.isFileURL ? url.relativePath : url.absoluteString
        func refuse(_ why: String) -> MigrationError {
            MigrationError(.recoveryRefused, "\(place): left as it is: \(why)", cause: failure)
        }
        guard !type.fileURLs(for: url).isEmpty else {
            throw refuse("a \(type.name) store is not moved aside or recreated in place (remove it with destroy and create it anew)")
        }
        if let found = registry.detectType(at: url), found.name != type.name {
            throw refuse("its content says it is a store of type \(found.name), not \(type.name)")
        }
        let metadata: StoreMetadata
        do {
            metadata = try type.readMetadata(at: url)
        } catch {
            guard isDamage(error) else { throw refuse("it cannot be read: \(error)") }
            return .damaged("\(error)")
        }
        let own: ManagedObjectModel
        do {
            guard let model = try type.ownModel(at: url, metadata: metadata) else {
                throw refuse("it has no model of its own to be read with, so it cannot be checked for damage")
            }
            own = model
        } catch let error as MigrationError {
            throw error
        } catch {
            return .damaged("its own model cannot be read: \(error)")
        }
        if let damage = damage(at: url, type: type, metadata: metadata, model: own) { return .damaged(damage) }
        let reason = (failure as? MigrationError)?.message ?? "\(failure)"
        if let version = try? versions.version(matching: metadata) {
            throw refuse("it is at version \(version.name) of the model, and it was not migrated: \(reason)")
        }
        let storeEntities = Set(metadata.versionHashes.keys)
        let modelEntities = Set(versions.versions.flatMap { $0.model.versionHashes.keys })
        if storeEntities.isDisjoint(with: modelEntities) {
            throw refuse("it shares no entity with the model (the store has \(storeEntities.sorted().joined(separator: ", ")); the model "
                         + "has \(modelEntities.sorted().joined(separator: ", "))): it is another model's store")
        }
        return .unknownVersion
    }

    /// Whether `error` says a store's files are damaged (not busy, missing or unreachable).
    static func isDamage(_ error: any Error) -> Bool {
        switch error {
        case let error as StoreError: [.corrupt, .unsupportedFormat].contains(error.code)
        case let error as MigrationError: error.cause.map(isDamage) ?? false
        case is ModelError: true
        default: false
        }
    }

    /// Why the store cannot be read in full, or nil when it can: its own model (embedded, or
    /// carried) must give the hashes its metadata records, and every page (the store's deep
    /// integrity check) and every object must read.
    static func damage(at url: URL, type: any StoreType, metadata: StoreMetadata, model own: ManagedObjectModel) -> String? {
        do {
            let compatibility = metadata.compatibility(with: own)
            guard compatibility.isCompatible else {
                return "its recorded entity hashes do not match its own model's (\(compatibility))"
            }
            let store = try type.open(at: url, model: own, options: StoreOptions(readOnly: true, createIfMissing: false))
            defer { try? store.close() }
            if let problem = try (store as? any IntegrityChecking)?.integrityProblems(deep: true).first { return problem }
            for entity in own.entityDescriptions where !entity.isAbstract {
                for batch in store.batches(of: entity.name) { _ = try batch.get() }
            }
            return nil
        } catch {
            return "\(error)"
        }
    }
}
