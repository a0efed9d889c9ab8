import Foundation
import ObjectModel
import ObjectStore
import Testing

/// The store contract's conformance suite, for any backend (ours or not).
///
/// Give it a store type and a way to make fresh locations; each ``Check``
/// opens its own stores, records failures with Swift Testing's `#expect`,
/// and destroys its stores afterwards.
///
/// ```swift
/// @Suite struct MyStoreConformance {
///     static let suite = StoreConformance(type: MyStoreType()) { StoreConformance.temporaryLocation(extension: "mine") }
///     @Test(arguments: StoreConformance.Check.allCases)
///     func conformance(_ check: StoreConformance.Check) throws { try Self.suite.run(check) }
/// }
/// ```
public struct StoreConformance: Sendable {
    /// One behaviour of the contract.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        case insertFetchUpdateDelete
        case attributeTypesRoundTrip
        case attributeExtremes
        case toOneRelationship
        case toManyRelationship
        case orderedRelationship
        case manyToManyRelationship
        case selfReferentialRelationships
        case oneSidedChangesAreCompleted
        case disagreeingSidesAreRefused
        case inheritance
        case predicateOperators
        case sortLimitOffset
        case metadataWithoutModel
        case incompatibleModelRefused
        case primaryKeysNeverReused
        case failedSaveLeavesNothing
        case optimisticLocking
        case streamingScan
        case snapshotIsOneMoment
        case bulkInsert
        case batchesMatchRecords
        case batchFetchAndSaveMatchRecords
        case batchInsertsCheckAndComplete
        case batchesCarryingListsMatchRecords
        case reopen
        case readOnly
        case destroyAndReplace
        case sameAnswersAsTheReferenceEvaluator
        case concurrentUse
        case uniquenessConstraints
        case historyRecordsEveryWrite
        case batchUpdateAndDelete
        case orderKeysKept
        case aggregatesMatchTheReference

        public var description: String { rawValue }
    }

    /// The store type under test.
    public let type: any StoreType
    /// Makes a fresh location for one store.
    public let location: @Sendable () throws -> URL

    /// Creates the suite for `type`, with stores at locations `location` makes.
    public init(type: any StoreType, location: @escaping @Sendable () throws -> URL) {
        self.type = type
        self.location = location
    }

    /// A fresh file location in a new temporary folder: `<tmp>/objectstore-conformance-<uuid>/store.<ext>`.
    /// The suite removes the folder after each check.
    public static func temporaryLocation(extension ext: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appending(path: "objectstore-conformance-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appending(path: "store.\(ext)")
    }

    /// Runs every check.
    public func runAll() throws {
        for check in Check.allCases { try run(check) }
    }

    /// Runs one check.
    public func run(_ check: Check) throws {
        let scope = Scope(suite: self)
        defer { scope.cleanUp() }
        switch check {
        case .insertFetchUpdateDelete: try crud(scope)
        case .attributeTypesRoundTrip: try attributeTypes(scope)
        case .attributeExtremes: try extremes(scope)
        case .toOneRelationship: try toOne(scope)
        case .toManyRelationship: try toMany(scope)
        case .orderedRelationship: try ordered(scope)
        case .manyToManyRelationship: try manyToMany(scope)
        case .selfReferentialRelationships: try selfReferential(scope)
        case .oneSidedChangesAreCompleted: try oneSidedChanges(scope)
        case .disagreeingSidesAreRefused: try disagreeingSides(scope)
        case .inheritance: try inheritance(scope)
        case .predicateOperators: try predicates(scope)
        case .sortLimitOffset: try sortLimitOffset(scope)
        case .metadataWithoutModel: try metadata(scope)
        case .incompatibleModelRefused: try incompatible(scope)
        case .primaryKeysNeverReused: try keysNeverReused(scope)
        case .failedSaveLeavesNothing: try failedSave(scope)
        case .optimisticLocking: try locking(scope)
        case .streamingScan: try streaming(scope)
        case .snapshotIsOneMoment: try snapshotIsOneMoment(scope)
        case .bulkInsert: try bulk(scope)
        case .batchesMatchRecords: try batches(scope)
        case .batchFetchAndSaveMatchRecords: try batchForms(scope)
        case .batchInsertsCheckAndComplete: try batchInserts(scope)
        case .batchesCarryingListsMatchRecords: try batchLists(scope)
        case .reopen: try reopen(scope)
        case .readOnly: try readOnly(scope)
        case .destroyAndReplace: try destroyAndReplace(scope)
        case .sameAnswersAsTheReferenceEvaluator: try referenceAnswers(scope)
        case .concurrentUse: try concurrentUse(scope)
        case .uniquenessConstraints: try uniqueness(scope)
        case .historyRecordsEveryWrite: try history(scope)
        case .batchUpdateAndDelete: try batchOperations(scope)
        case .orderKeysKept: try orderKeys(scope)
        case .aggregatesMatchTheReference: try aggregates(scope)
        }
    }
}

/// The stores one check made, destroyed when it ends.
final class Scope {
    let suite: StoreConformance
    private var urls: [URL] = []
    private var open: [any PersistentStore] = []

    init(suite: StoreConformance) { self.suite = suite }

    func newURL() throws -> URL {
        let url = try suite.location()
        urls.append(url)
        return url
    }

    func openStore(at url: URL? = nil, model: ManagedObjectModel = StoreConformance.model,
                   options: StoreOptions = StoreOptions()) throws -> any PersistentStore {
        let store = try suite.type.open(at: url ?? newURL(), model: model, options: options)
        open.append(store)
        return store
    }

    func cleanUp() {
        for store in open { try? store.close() }
        for url in urls {
            try? suite.type.destroy(at: url)
            let folder = url.deletingLastPathComponent()
            if url.isFileURL && folder.lastPathComponent.hasPrefix("objectstore-conformance-") {
                try? FileManager.default.removeItem(at: folder)
            }
        }
    }
}
