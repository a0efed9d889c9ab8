import CBaseline
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

/// The benchmark model with one optional attribute added to A: a step SQLite takes in place.
public let benchmarkModelWithNote: ManagedObjectModel = {
    var entities = benchmarkModel.entities
    entities[entities.firstIndex { $0.name == "A" }!].attributes.append(Attribute("note", .string))
    return try! ManagedObjectModel(entities: entities)
}()

/// Seconds `StoreMigrator` takes to bring the SQLite store at `url` (of ``benchmarkModel``) to
/// ``benchmarkModelWithNote``: an in-place step (the store is changed).
public func addAttributeInPlace(at url: URL) throws -> Double {
    let versions = try ModelVersions(versions: [.init(name: "v1", model: benchmarkModel), .init(name: "v2", model: benchmarkModelWithNote)])
    let migrator = StoreMigrator(versions: versions)
    let plan = try migrator.plan(forStoreAt: url, type: SQLiteStoreType())
    guard plan.steps.map(\.kind) == [.inPlace] else { throw BenchmarkFailure("the step is not in place: \(plan.steps)") }
    return try seconds { try migrator.migrateStore(at: url, type: SQLiteStoreType()) }
}

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

/// The SQL that sets the destination's key counters the way the source has them.
private let copyKeyCounters = "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ZA) WHERE Z_ENT = 1; UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ZB) WHERE Z_ENT = 2"

/// A C baseline (``CBaseline``) run on a fresh destination store of the benchmark model's schema.
private func cBaseline(attach: Bool, from source: URL, to destination: URL) throws -> Int {
    try? SQLiteStoreType().destroy(at: destination)
    try SQLiteStoreType().open(at: destination, model: benchmarkModel, options: StoreOptions()).close()
    var error = [CChar](repeating: 0, count: 512)
    let names: [String] = ["ZA", "ZB"]
    let tables: [UnsafePointer<CChar>?] = names.map { UnsafePointer(strdup($0)) }
    defer { tables.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
    let rows = attach
        ? cbaseline_attach_copy(source.path, destination.path, tables, Int32(tables.count), copyKeyCounters, &error, Int32(error.count))
        : cbaseline_copy_loop(source.path, destination.path, tables, Int32(tables.count), copyKeyCounters, &error, Int32(error.count))
    guard rows >= 0 else {
        let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: message])
    }
    return Int(rows)
}

/// The floor of a copy: a plain C loop (one prepared SELECT and INSERT per table,
/// `sqlite3_bind_value` per column, one transaction, WAL, synchronous=NORMAL).
@discardableResult
public func plainCopy(from source: URL, to destination: URL) throws -> Int {
    try cBaseline(attach: false, from: source, to: destination)
}

/// The floor of a same-schema copy inside SQLite: ATTACH + INSERT … SELECT, from C.
@discardableResult
public func attachCopy(from source: URL, to destination: URL) throws -> Int {
    try cBaseline(attach: true, from: source, to: destination)
}

/// Migrates through the manager (identity mapping) into a new store of `type`: through the
/// batch pipeline, or with `bulkCopy` letting a destination that can copy the store do so.
public func migrate(from source: URL, sourceType: any StoreType = SQLiteStoreType(), to destination: URL, type: any StoreType,
                    bulkCopy: Bool = false) throws {
    try? type.destroy(at: destination)
    let manager = MigrationManager(sourceModel: benchmarkModel, destinationModel: benchmarkModel, mapping: .identity(for: benchmarkModel),
                                   usesBulkCopy: bulkCopy)
    try manager.migrateStore(at: source, type: sourceType, to: destination, type: type)
}

/// The benchmark model with every attribute renamed and one computed from another
/// (`label`, the upper-cased string): the destination of the transform workload.
public let transformedModel: ManagedObjectModel = {
    func attributes(_ p: String) -> [Attribute] {
        [Attribute("\(p)Count", .integer64), Attribute("\(p)Ratio", .double), Attribute("\(p)Title", .string),
         Attribute("\(p)When", .date), Attribute("\(p)Flag", .boolean), Attribute("\(p)Label", .string)]
    }
    return try! ManagedObjectModel(entities: [
        Entity("A", attributes: attributes("a"), relationships: [Relationship("partner", to: "B", inverse: "partner")]),
        Entity("B", attributes: attributes("b"), relationships: [Relationship("partner", to: "A", inverse: "partner")]),
    ])
}()

/// Migrates the benchmark store to ``transformedModel``: renames and one computed attribute per entity.
public func transform(from source: URL, to destination: URL) throws {
    try? SQLiteStoreType().destroy(at: destination)
    let mappings = ["A", "B"].map { entity in
        let p = entity.lowercased()
        return EntityMapping(name: "\(entity)To\(entity)", kind: .transform, sourceEntity: entity, destinationEntity: entity,
                             attributeMappings: ["\(p)Count": .source("\(p)1"), "\(p)Ratio": .source("\(p)2"), "\(p)Title": .source("\(p)3"),
                                                 "\(p)When": .source("\(p)4"), "\(p)Flag": .source("\(p)5"),
                                                 "\(p)Label": .call("uppercase", [.source("\(p)3")])],
                             relationshipMappings: ["partner": .source("partner")])
    }
    let manager = MigrationManager(sourceModel: benchmarkModel, destinationModel: transformedModel, mapping: MappingModel(entityMappings: mappings))
    try manager.migrateStore(at: source, type: SQLiteStoreType(), to: destination, type: SQLiteStoreType())
}

/// The peak resident memory of this process so far, in bytes: the memory map's own high-water
/// mark (Linux's VmHWM), else getrusage's ru_maxrss. In a child, VmHWM is the figure to use:
/// Linux carries ru_maxrss over an exec from the process that forked, so a child of a parent
/// that already used 140 MiB reports at least that; VmHWM belongs to the new program alone.
public func peakResidentBytes() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kib = Int(line.split(separator: " ").dropFirst().first ?? "") else { return usage.ru_maxrss * 1024 }
    return kib * 1024
}

/// A benchmark step that failed: what, and what it printed.
public struct BenchmarkFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Runs this executable again with `arguments` (one case in a process of its own, so its peak
/// memory is its own) and returns the number it prints.
/// - Throws: ``BenchmarkFailure`` when it fails or prints no number.
public func runChild(_ arguments: [String]) throws -> Int {
    let process = Process()
    process.executableURL = URL(filePath: CommandLine.arguments[0]).standardizedFileURL
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0, let value = Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
        throw BenchmarkFailure("\(arguments.joined(separator: " ")) exited with status \(process.terminationStatus): \(output)")
    }
    return value
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
