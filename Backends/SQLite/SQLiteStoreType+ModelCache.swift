import Foundation
import ObjectModel
import ObjectStore

extension SQLiteStoreType: CarriedModelReading {
    /// The model a Core Data store carries: the one row of `Z_MODELCACHE`, whose `Z_CONTENT` is
    /// a raw DEFLATE stream of the archived `NSManagedObjectModel` (``ModelArchive``). Nil when
    /// the store has no such table (Core Data before about 2015) or it is empty (a model this
    /// library cannot archive, ``writeModelCache(_:to:)``). Read-only: the store's files are not changed.
    /// - Throws: ``StoreError`` when the file cannot be read, `corrupt` when the table holds
    ///   more than one row or no blob; `ModelError` when the blob cannot be decoded.
    public func carriedModel(at url: URL) throws -> ManagedObjectModel? {
        let resolved = FileOperations.resolved(url)
        let (connection, _) = try Self.openExisting(resolved, readOnly: true)
        defer { connection.close() }
        guard try connection.exists("Z_MODELCACHE") else { return nil }
        let rows = try connection.statement("SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 2").rows { $0.column(0) }
        guard let first = rows.first else { return nil }
        guard rows.count == 1, case .blob(let content) = first else {
            throw StoreError(.corrupt, "Z_MODELCACHE holds \(rows.count == 1 ? "no blob" : "more than one row")", url: resolved)
        }
        do {
            return try ModelArchive.decodeModelCache(content)
        } catch let error as ModelError {
            throw error.located(in: "\(resolved.path) (Z_MODELCACHE)")
        }
    }

    /// Replaces the store's model cache with `model`'s, archived as Core Data archives it, so that
    /// Core Data can open the store without the app's model file. A model whose archived form is
    /// not established (``ModelArchive/encodeModelCache(_:)``) leaves the table empty: no cache
    /// is better than a wrong one.
    static func writeModelCache(_ model: ManagedObjectModel, to connection: SQLiteConnection) throws {
        if try !connection.exists("Z_MODELCACHE") { try connection.execute("CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)") }
        try connection.execute("DELETE FROM Z_MODELCACHE")
        guard let content = try? ModelArchive.encodeModelCache(model) else { return }
        try connection.statement("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?1)").run([.blob(content)])
    }
}
