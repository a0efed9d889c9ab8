import Foundation

/// Stores Apple's Core Data wrote (`Fixtures/CoreDataStores`, see its README), rebuilt from their
/// SQL dumps with SQLite's C API, and their rows as SQLite itself reads them: the oracle a
/// conversion's round trip is checked against.
public enum RealCoreDataStores {
    /// Every fixture, by name: a file missing from the folder fails the test that reads it.
    public static let names = [
        "bnr-coredatastack-testmodel", "bookmigration-model1", "cartkit-v1", "coredataplus-samplemodel-v1",
        "coredataplus-samplemodel-v2", "coredataplus-samplemodel3-v1", "ddg-bookmarks-v1", "ddg-bookmarks-v5",
        "wibosco-migration-wal", "wibosco-revised-v3",
    ]

    /// The folder holding the dumps, the one model and the README.
    public static var directory: URL {
        Bundle.module.resourceURL!.appending(path: "Fixtures/CoreDataStores")
    }

    /// The model to open fixture `name` with when its store carries none (`Z_MODELCACHE`), else nil.
    public static func model(_ name: String) -> URL? {
        let url = directory.appending(path: "\(name).xcdatamodel")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    /// Writes fixture `name`'s store at `url` (a new file) from its dump.
    public static func make(_ name: String, at url: URL) throws {
        let sql = try String(contentsOf: directory.appending(path: "\(name).sql"), encoding: .utf8)
        let db = try RawDatabase(url, readOnly: false, create: true)
        defer { db.close() }
        try db.execute(sql)
    }

    /// The tables whose rows a store's data is: every table but the metadata and the model cache
    /// (which a store rewrites for itself), `Z_PRIMARYKEY` included.
    public static func dataTables(_ url: URL) throws -> [String] {
        let db = try RawDatabase(url)
        defer { db.close() }
        return try db.strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z%' "
                              + "AND name NOT IN ('Z_METADATA', 'Z_MODELCACHE') ORDER BY name").map { $0[0] }
    }

    /// Every row of `table` as SQLite reads it, each value with its storage class and exact
    /// content (a real to 17 digits, text and blobs in hex), the rows sorted; the columns
    /// `leaving` names are left out.
    public static func rows(_ url: URL, table: String, leaving: Set<String> = []) throws -> [String] {
        let db = try RawDatabase(url)
        defer { db.close() }
        let columns = try db.columns(table).filter { !leaving.contains($0) }
        let exact = columns.map { c in
            let q = "\"\(c)\""
            return "CASE typeof(\(q)) WHEN 'null' THEN 'NULL' WHEN 'integer' THEN 'i' || \(q) WHEN 'real' THEN 'r' || printf('%!.17g', \(q)) "
                + "WHEN 'text' THEN 't' || hex(\(q)) ELSE 'b' || hex(\(q)) END"
        }
        return try db.strings("SELECT \(exact.joined(separator: " || '|' || ")) FROM \"\(table)\"").map { $0[0] }.sorted()
    }
}
