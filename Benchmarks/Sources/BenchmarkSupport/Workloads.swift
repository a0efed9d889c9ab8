import CSQLiteBench
import Foundation
import LMDBStore
import ObjectMigration
import ObjectModel
import ObjectStore
import SQLiteStore

/// The benchmark model: two entities, five attributes each, one to-one relationship between them.
public let benchmarkModel: ManagedObjectModel = {
    func attributes(_ p: String) -> [Attribute] {
        [Attribute("\(p)1", .integer64), Attribute("\(p)2", .double), Attribute("\(p)3", .string),
         Attribute("\(p)4", .date), Attribute("\(p)5", .boolean)]
    }
    return try! ManagedObjectModel(entities: [
        Entity("A", attributes: attributes("a"), relationships: [Relationship("partner", to: "B", inverse: "partner")]),
        Entity("B", attributes: attributes("b"), relationships: [Relationship("partner", to: "A", inverse: "partner")]),
    ])
}()

enum SQLite {
    static func open(_ path: String) -> OpaquePointer {
        var db: OpaquePointer?
        precondition(sqlite3_open(path, &db) == SQLITE_OK, "cannot open \(path)")
        return db!
    }

    static func exec(_ db: OpaquePointer, _ sql: String) {
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        precondition(rc == SQLITE_OK, "\(sql): \(String(cString: sqlite3_errmsg(db)))")
    }

    static func prepare(_ db: OpaquePointer, _ sql: String) -> OpaquePointer {
        var statement: OpaquePointer?
        precondition(sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, "\(sql): \(String(cString: sqlite3_errmsg(db)))")
        return statement!
    }
}

/// Builds a SQLite store of `count` objects (half A, half B, paired) with raw SQL, fast.
public func buildSourceStore(at url: URL, count: Int) throws {
    try? SQLiteStoreType().destroy(at: url)
    try SQLiteStoreType().open(at: url, model: benchmarkModel, options: StoreOptions()).close()
    let db = SQLite.open(url.path)
    defer { sqlite3_close(db) }
    let pairs = count / 2
    SQLite.exec(db, "PRAGMA synchronous = OFF; BEGIN")
    for (table, prefix, ent) in [("ZA", "A", 1), ("ZB", "B", 2)] {
        let insert = SQLite.prepare(db, "INSERT INTO \(table) (Z_PK, Z_ENT, Z_OPT, Z\(prefix)1, Z\(prefix)2, Z\(prefix)3, Z\(prefix)4, Z\(prefix)5, ZPARTNER) VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?7, ?1)")
        for pk in 1...pairs {
            sqlite3_bind_int64(insert, 1, Int64(pk))
            sqlite3_bind_int64(insert, 2, Int64(ent))
            sqlite3_bind_int64(insert, 3, Int64(pk) * 7)
            sqlite3_bind_double(insert, 4, Double(pk) / 3)
            _ = "object number \(pk)".withCString { sqlite3_bind_text(insert, 5, $0, -1, bench_sqlite_transient()) }
            sqlite3_bind_double(insert, 6, 700_000_000 + Double(pk))
            sqlite3_bind_int64(insert, 7, Int64(pk % 2))
            precondition(sqlite3_step(insert) == SQLITE_DONE)
            sqlite3_reset(insert)
        }
        sqlite3_finalize(insert)
    }
    SQLite.exec(db, "UPDATE Z_PRIMARYKEY SET Z_MAX = \(pairs); COMMIT")
}

/// The baseline: a plain C-API loop copying every row between two SQLite files of the same schema.
public func plainCopy(from source: URL, to destination: URL) throws {
    try? SQLiteStoreType().destroy(at: destination)
    try SQLiteStoreType().open(at: destination, model: benchmarkModel, options: StoreOptions()).close()
    let src = SQLite.open(source.path), dst = SQLite.open(destination.path)
    defer { sqlite3_close(src); sqlite3_close(dst) }
    SQLite.exec(dst, "PRAGMA synchronous = NORMAL; BEGIN")
    for table in ["ZA", "ZB"] {
        let select = SQLite.prepare(src, "SELECT * FROM \(table) ORDER BY Z_PK")
        let columns = sqlite3_column_count(select)
        let insert = SQLite.prepare(dst, "INSERT INTO \(table) VALUES (\((1...columns).map { "?\($0)" }.joined(separator: ", ")))")
        while sqlite3_step(select) == SQLITE_ROW {
            for i in 0..<columns { sqlite3_bind_value(insert, i + 1, sqlite3_column_value(select, i)) }
            precondition(sqlite3_step(insert) == SQLITE_DONE)
            sqlite3_reset(insert)
        }
        sqlite3_finalize(select)
        sqlite3_finalize(insert)
    }
    SQLite.exec(dst, "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ZA) WHERE Z_ENT = 1; UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ZB) WHERE Z_ENT = 2; COMMIT")
}

/// Migrates through the manager (identity mapping) into a new store of `type`.
public func migrate(from source: URL, to destination: URL, type: any StoreType) throws {
    try? type.destroy(at: destination)
    let manager = MigrationManager(sourceModel: benchmarkModel, destinationModel: benchmarkModel, mapping: .identity(for: benchmarkModel))
    try manager.migrateStore(at: source, type: SQLiteStoreType(), to: destination, type: type)
}

/// The process's peak resident memory so far, in bytes (Linux: VmHWM).
public func peakResidentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }
    return 0
}

/// Seconds `body` takes.
public func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// Seconds spent in each phase of one migration, from its progress reports.
public func phaseTimes(from source: URL, to destination: URL, type: any StoreType) throws -> [(String, Double)] {
    try? type.destroy(at: destination)
    final class Log: @unchecked Sendable { var marks: [(String, UInt64)] = [] }  // one thread: the migration's
    let log = Log()
    let manager = MigrationManager(sourceModel: benchmarkModel, destinationModel: benchmarkModel, mapping: .identity(for: benchmarkModel)) { p in
        let label = p.phase.rawValue
        if log.marks.last?.0 != label { log.marks.append((label, DispatchTime.now().uptimeNanoseconds)) }
    }
    let start = DispatchTime.now().uptimeNanoseconds
    try manager.migrateStore(at: source, type: SQLiteStoreType(), to: destination, type: type)
    let end = DispatchTime.now().uptimeNanoseconds
    var result: [(String, Double)] = [("setup", Double((log.marks.first?.1 ?? end) - start) / 1e9)]
    for (i, mark) in log.marks.enumerated() {
        let next = i + 1 < log.marks.count ? log.marks[i + 1].1 : end
        result.append((mark.0, Double(next - mark.1) / 1e9))
    }
    return result
}
