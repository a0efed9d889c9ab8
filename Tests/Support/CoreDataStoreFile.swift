import Foundation

/// Writes SQLite files laid out the way Apple's Core Data writes its stores, for tests
/// that must not depend on real stores being present: the tables and rows are given as
/// SQL, the metadata as a property list Foundation serializes, the UUID in `Z_UUID`.
public enum CoreDataStoreFile {
    /// The bookkeeping tables every Core Data store has.
    public static let bookkeeping = [
        "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)",
        "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)",
        "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)",
    ]

    /// Writes a store at `url`.
    ///
    /// - Parameters:
    ///   - statements: the schema and the rows that are in the main file.
    ///   - walStatements: rows committed to the `-wal` file and never checkpointed, as a
    ///     store copied off a device while its app ran (the `-wal` and `-shm` are written).
    ///   - journalMode: `wal` or a rollback mode (`delete`).
    ///   - metadata: the `Z_PLIST` dictionary (without the UUID, which Core Data keeps in `Z_UUID`).
    ///   - keepsSharedMemory: whether the `-shm` beside a `-wal` is copied too (some stores
    ///     come without one, and the reader must rebuild it).
    public static func write(to url: URL, statements: [String], walStatements: [String] = [], journalMode: String = "wal",
                             uuid: String, metadata: [String: Any], keepsSharedMemory: Bool = true) throws {
        let scratch = url.deletingLastPathComponent().appending(path: ".scratch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let file = scratch.appending(path: url.lastPathComponent)
        let db = try RawDatabase(file, readOnly: false, create: true)
        try db.execute("PRAGMA journal_mode = \(journalMode)")
        try db.execute("BEGIN")
        for sql in bookkeeping + statements { try db.execute(sql) }
        let plist = try PropertyListSerialization.data(fromPropertyList: metadata, format: .binary, options: 0)
        try db.execute("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, '\(uuid)', ?1)", blob: plist)
        try db.execute("COMMIT")
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        var suffixes = [""]
        if !walStatements.isEmpty {
            try db.execute("PRAGMA wal_autocheckpoint = 0")
            for sql in walStatements { try db.execute(sql) }
            suffixes += keepsSharedMemory ? ["-wal", "-shm"] : ["-wal"]
        }
        // Copy the files while the writer still has them open: closing would fold the WAL in.
        for suffix in suffixes {
            let target = URL(filePath: url.path + suffix)
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: URL(filePath: file.path + suffix), to: target)
        }
        db.close()
    }

    /// The `Z_PLIST` Core Data writes, with these version hashes (entity → 32 bytes) and identifiers.
    public static func metadata(hashes: [String: Data], identifiers: [String] = [""], extra: [String: Any] = [:]) -> [String: Any] {
        var plist: [String: Any] = [
            "NSStoreType": "SQLite",
            "NSStoreModelVersionHashes": hashes,
            "NSStoreModelVersionHashesVersion": 3,
            "NSStoreModelVersionIdentifiers": identifiers,
            "NSPersistenceFrameworkVersion": 1251,
            "NSStoreModelVersionHashesDigest": "a stale digest of another model",
            "_NSAutoVacuumLevel": "2",
        ]
        for (key, value) in extra { plist[key] = value }
        return plist
    }

    /// SHA-256 of every file of the store at `url` (main file, `-wal`, `-journal`), by suffix;
    /// `-shm` is left out: it is a volatile index every reader may rebuild.
    public static func digests(_ url: URL) -> [String: Data] {
        var result: [String: Data] = [:]
        for suffix in ["", "-wal", "-journal"] {
            if let data = try? Data(contentsOf: URL(filePath: url.path + suffix)) { result[suffix] = data }
        }
        return result
    }
}
