import ObjectModel

extension ModelVersions {
    /// The version a store was written with, found by its entity hashes.
    ///
    /// The version whose hashes equal the store's; when several do, the one whose
    /// version identifiers the store recorded too, else the newest of them.
    ///
    /// ```swift
    /// let versions = try ModelLoader.load(at: URL(filePath: "App.xcdatamodeld"))
    /// let version = try versions.version(matching: try SQLiteStoreType().readMetadata(at: storeURL))
    /// ```
    ///
    /// - Throws: ``StoreError`` with ``StoreError/Code/incompatibleModel`` when no
    ///   version matches, naming the closest version and, for it, the entities whose
    ///   hashes differ and those only one side has (its ``StoreError/compatibility``).
    public func version(matching metadata: StoreMetadata) throws -> Version {
        let hashes = metadata.versionHashes
        let matching = versions.filter { $0.model.versionHashes == hashes }
        // (An empty identifier is Core Data's "none", as ``StoreMetadata/versionIdentifiers`` reads it.)
        if let best = matching.last(where: { $0.model.versionIdentifiers.filter { !$0.isEmpty } == metadata.versionIdentifiers }) ?? matching.last {
            return best
        }
        let (closest, compatibility) = closestVersion(to: metadata)
        throw StoreError(.incompatibleModel,
                         "no model version matches the store's entity hashes (versions: \(names.joined(separator: ", "))); "
                         + "the closest is \(closest.name): \(compatibility)",
                         compatibility: compatibility)
    }

    /// The version whose entity hashes differ least from the store's (fewest entities changed,
    /// only in the store or only in the model); among equally close ones, the newest. With how it differs.
    public func closestVersion(to metadata: StoreMetadata) -> (version: Version, compatibility: ModelCompatibility) {
        let comparisons = versions.map { ($0, ModelCompatibility(storeHashes: metadata.versionHashes, modelHashes: $0.model.versionHashes)) }
        func distance(_ c: ModelCompatibility) -> Int { c.changedEntities.count + c.onlyInStore.count + c.onlyInModel.count }
        let (version, compatibility) = comparisons.reversed().min { distance($0.1) < distance($1.1) }!
        return (version, compatibility)
    }
}
