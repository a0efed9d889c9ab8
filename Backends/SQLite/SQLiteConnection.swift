import CSQLite
import Foundation
import ObjectModel
import ObjectStore

/// One connection to a SQLite database: statements, bindings, transactions.
///
/// Not `Sendable`: a connection lives inside its store's mutex. Every C result
/// is checked where the call is made.
final class SQLiteConnection {
    let handle: OpaquePointer
    let path: String
    /// Whether a read-only connection leaves the WAL unfolded at close (the store had one when it opened).
    let keepsWAL: Bool
    /// Prepared statements by SQL text, with when each was last used; at most
    /// ``statementCacheCapacity``, the least recently used dropped first. A dropped one
    /// is finalized when the last ``Statement`` holding it is gone.
    private var cache: [String: (statement: PreparedStatement, used: Int)] = [:]
    private var uses = 0
    static let statementCacheCapacity = 256

    /// Opens `path`; nothing is created unless `create` is set.
    ///
    /// A `readOnly` connection never writes a row: it is opened read-write with
    /// `PRAGMA query_only`, so that SQLite can do what every reader must — roll back a
    /// hot journal a crashed writer left (its changes were never committed), and index
    /// a WAL — and it never folds into the main file a WAL it found there (so a store
    /// copied with its `-wal` keeps its files as they were); sidecars SQLite had to
    /// create for a store that had none, it removes at close. Where the file cannot be
    /// written at all, SQLite opens it read-only, and a store that needs a rollback is
    /// refused with an error that says so. Nothing is ever opened `immutable`: a
    /// writer may come at any moment.
    ///
    /// - Parameter keepingWAL: for a read-only connection, whether to leave the WAL as it is
    ///   at close; by default, whether the store had a `-wal` when this connection opened (a
    ///   second connection of the same store passes what the store found).
    init(path: String, readOnly: Bool, create: Bool, keepingWAL: Bool? = nil) throws {
        var db: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI | SQLITE_OPEN_READWRITE
        if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
        let hadWAL = keepingWAL ?? FileManager.default.fileExists(atPath: path + "-wal")
        self.keepsWAL = hadWAL
        let rc = sqlite3_open_v2(URL(filePath: path).absoluteString, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw StoreError(.io, "cannot open the database: \(message) (SQLite code \(rc))", url: URL(filePath: path))
        }
        if readOnly {
            let configured = hadWAL ? objectstore_sqlite_no_checkpoint_on_close(db, 1) : SQLITE_OK
            let queryOnly = sqlite3_exec(db, "PRAGMA query_only = 1", nil, nil, nil)
            guard configured == SQLITE_OK, queryOnly == SQLITE_OK else {
                sqlite3_close_v2(db)
                throw StoreError(.io, "cannot make the connection read-only (SQLite code \(configured == SQLITE_OK ? queryOnly : configured))",
                                 url: URL(filePath: path))
            }
        }
        let registered = SQLiteFunctions.register(on: db)
        guard registered == SQLITE_OK else {
            sqlite3_close_v2(db)
            throw StoreError(.io, "cannot register the SQL functions (SQLite code \(registered))", url: URL(filePath: path))
        }
        handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 5_000)
    }

    deinit { close() }

    private var closed = false

    func close() {
        guard !closed else { return }
        closed = true
        cache = [:]
        // A statement still held somewhere is finalized when it goes; close_v2 waits for it.
        sqlite3_close_v2(handle)
    }

    func error(_ rc: Int32, _ what: String) -> StoreError {
        if rc == SQLITE_READONLY | (3 << 8) {   // SQLITE_READONLY_ROLLBACK, a macro Swift does not import
            return StoreError(.readOnly, "\(what): the store has a hot rollback journal (a writer stopped in the middle of a "
                              + "transaction), and SQLite cannot roll it back because the file cannot be written (SQLite code \(rc))",
                              url: URL(filePath: path))
        }
        let message = String(cString: sqlite3_errmsg(handle))
        let primary = rc & 0xff
        let code: StoreError.Code = switch primary {
        case SQLITE_CORRUPT, SQLITE_NOTADB: .corrupt
        case SQLITE_READONLY: .readOnly
        case SQLITE_CONSTRAINT: .invalidChange
        case SQLITE_BUSY, SQLITE_LOCKED: .busy
        default: .io
        }
        var hint = code == .busy ? "; the store is busy: another process held it for 5 s; try again when it is done" : ""
        if primary == SQLITE_IOERR || primary == SQLITE_FULL, let full = FileOperations.fullDiskExplanation(primary == SQLITE_FULL ? ENOSPC : EIO, at: URL(filePath: path)) {
            hint = ": \(full)"
        }
        return StoreError(code, "\(what): \(message) (SQLite code \(rc))\(hint)", url: URL(filePath: path))
    }

    /// Runs SQL without results (several statements allowed).
    func execute(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, "SQL failed") }
    }

    /// A cached prepared statement, reset and cleared of bindings.
    func statement(_ sql: String) throws -> Statement {
        uses += 1
        if let cached = cache[sql] {
            cache[sql]!.used = uses
            sqlite3_reset(cached.statement.handle)
            sqlite3_clear_bindings(cached.statement.handle)
            return Statement(prepared: cached.statement, connection: self)
        }
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(rc, "cannot prepare \(sql)") }
        if cache.count >= Self.statementCacheCapacity {
            // Drop the least recently used quarter.
            let oldest = cache.sorted { $0.value.used < $1.value.used }.prefix(Self.statementCacheCapacity / 4)
            for (text, _) in oldest { cache[text] = nil }
        }
        let prepared = PreparedStatement(handle: raw)
        cache[sql] = (prepared, uses)
        return Statement(prepared: prepared, connection: self)
    }

    /// How many prepared statements the cache holds (for tests).
    var cachedStatementCount: Int { cache.count }

    /// Runs `body` in one transaction: committed if it returns, rolled back if it throws.
    /// A store whose file was moved or replaced since this connection opened it is not
    /// written (``checkNotMoved()``).
    func transaction<T>(immediate: Bool = true, _ body: () throws -> T) throws -> T {
        try run(immediate ? "BEGIN IMMEDIATE" : "BEGIN", checkingMoved: true, body)
    }

    /// Runs `body` in one read transaction (`BEGIN`, which takes its moment at the first read, then
    /// `COMMIT`): every statement of it reads the same moment.
    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try run("BEGIN", checkingMoved: false, body)
    }

    /// `begin`, `body`, then `COMMIT`, or `ROLLBACK` when anything throws.
    private func run<T>(_ begin: String, checkingMoved: Bool, _ body: () throws -> T) throws -> T {
        try execute(begin)
        do {
            if checkingMoved { try checkNotMoved() }
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Throws ``StoreError/Code/storeReplaced`` when the path this connection opened names
    /// another file now, or none (another process moved the store aside or recreated it):
    /// a commit would land in a file that is no longer the store (`SQLITE_FCNTL_HAS_MOVED`).
    func checkNotMoved() throws {
        var moved: Int32 = 0
        let rc = sqlite3_file_control(handle, "main", SQLITE_FCNTL_HAS_MOVED, &moved)
        guard rc == SQLITE_OK else { throw error(rc, "cannot tell whether the store's file was moved") }
        if moved != 0 {
            throw StoreError(.storeReplaced, "not written: another process moved this store aside or replaced it after it was opened; open it again",
                             url: URL(filePath: path))
        }
    }

    /// Makes this connection leave the `-wal` and `-shm` files where they are when it closes
    /// (`SQLITE_FCNTL_PERSIST_WAL`): a connection that holds the write lock while the store's
    /// files are moved must not remove, by name, the logs of the store that is there by then.
    func keepLogFilesAtClose() throws {
        var on: Int32 = 1
        let rc = sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &on)
        guard rc == SQLITE_OK else { throw error(rc, "cannot keep the log files at close") }
    }

    /// Whether a table (or index) of that name exists.
    func exists(_ name: String) throws -> Bool {
        try !statement("SELECT 1 FROM sqlite_master WHERE name = ?1").rows([.text(name)]) { _ in 1 }.isEmpty
    }
}

/// A SQL value for binding and reading.
enum SQLValue: Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
}

/// A prepared statement, finalized when nothing holds it any more.
final class PreparedStatement {
    let handle: OpaquePointer
    init(handle: OpaquePointer) { self.handle = handle }
    deinit { sqlite3_finalize(handle) }
}

/// A prepared statement borrowed from the connection's cache.
struct Statement {
    let prepared: PreparedStatement
    let connection: SQLiteConnection
    var handle: OpaquePointer { prepared.handle }

    func bind(_ index: Int32, _ value: SQLValue) throws {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(handle, index)
        case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
        case .real(let v): rc = sqlite3_bind_double(handle, index, v)
        case .text(var v):
            // The string's own UTF-8 (no copy for a native string); SQLite copies it.
            rc = v.isEmpty ? sqlite3_bind_text(handle, index, "", 0, objectstore_sqlite_transient()) : v.withUTF8 { bytes in
                bytes.withMemoryRebound(to: CChar.self) {
                    sqlite3_bind_text(handle, index, $0.baseAddress, Int32($0.count), objectstore_sqlite_transient())
                }
            }
        case .blob(let v):
            rc = v.withUnsafeBytes { bytes in
                // A zero-length blob still needs a non-null pointer to be a blob, not NULL.
                sqlite3_bind_blob(handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count),
                                  objectstore_sqlite_transient())
            }
        }
        guard rc == SQLITE_OK else { throw connection.error(rc, "cannot bind parameter \(index)") }
    }

    /// Resets the statement and binds `values` to ?1, ?2, …
    func bind(_ values: [SQLValue]) throws {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (i, v) in values.enumerated() { try bind(Int32(i + 1), v) }
    }

    /// Steps once: true when a row is available, false when done.
    @discardableResult
    func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(rc, "cannot run \(String(cString: sqlite3_sql(handle)))")
        }
    }

    /// Runs to the end, ignoring rows.
    func run(_ values: [SQLValue] = []) throws {
        defer { sqlite3_reset(handle) }
        try bind(values)
        while try step() {}
    }

    func column(_ index: Int32) -> SQLValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(handle, index))
            guard let pointer = sqlite3_column_text(handle, index) else { return .text("") }
            let bytes = UnsafeBufferPointer(start: pointer, count: count)
            // Text that is not UTF-8 is given as its bytes: never "repaired" into other characters.
            return String(validating: bytes, as: UTF8.self).map(SQLValue.text) ?? .blob(Data(bytes))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, index))
            guard count > 0, let pointer = sqlite3_column_blob(handle, index) else { return .blob(Data()) }
            return .blob(Data(bytes: pointer, count: count))
        default: return .null
        }
    }

    func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }
    /// An integer column's value, nil for NULL.
    func optionalInt64(_ index: Int32) -> Int64? {
        sqlite3_column_type(handle, index) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, index)
    }

    /// Hands every row to `body`, collecting nothing.
    func forEachRow(_ values: [SQLValue] = [], _ body: (Statement) throws -> Void) throws {
        defer { sqlite3_reset(handle) }
        try bind(values)
        while try step() { try body(self) }
    }

    /// Every row, each mapped by `body`.
    func rows<T>(_ values: [SQLValue] = [], _ body: (Statement) throws -> T) throws -> [T] {
        // Reset at the end, so no statement keeps a read transaction open between calls.
        defer { sqlite3_reset(handle) }
        try bind(values)
        var out: [T] = []
        while try step() { out.append(try body(self)) }
        return out
    }
}
