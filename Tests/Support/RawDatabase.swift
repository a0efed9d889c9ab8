import CSQLite
import Foundation

/// A database read and written through the SQLite C API directly: SQLite's own view
/// of a file, independent of the store code under test.
public struct RawDatabase {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let handle: OpaquePointer

    /// Opens `url` (a file URL, or a `file:` URI string in `url.absoluteString`).
    public init(_ url: URL, readOnly: Bool = true, create: Bool = false) throws {
        var db: OpaquePointer?
        var flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_URI
        if create { flags |= SQLITE_OPEN_CREATE }
        guard sqlite3_open_v2(url.isFileURL ? url.path : url.absoluteString, &db, flags, nil) == SQLITE_OK, let db else {
            throw Failure(description: "cannot open \(url.path)")
        }
        handle = db
    }

    public func close() { sqlite3_close_v2(handle) }

    /// Every row of a query, each column as text ("NULL" for NULL).
    public func strings(_ sql: String) throws -> [[String]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw Failure(description: String(cString: sqlite3_errmsg(handle)))
        }
        defer { sqlite3_finalize(statement) }
        var rows: [[String]] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            rows.append((0..<sqlite3_column_count(statement)).map { i in
                sqlite3_column_text(statement, i).map { String(cString: $0) } ?? "NULL"
            })
        }
        return rows
    }

    /// Runs SQL (several statements allowed).
    public func execute(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
            throw Failure(description: "\(String(cString: sqlite3_errmsg(handle))) in \(sql.prefix(200))")
        }
    }

    /// Runs one statement with a blob bound to `?1`.
    public func execute(_ sql: String, blob: Data) throws {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw Failure(description: String(cString: sqlite3_errmsg(handle)))
        }
        defer { sqlite3_finalize(statement) }
        let bound = blob.withUnsafeBytes { bytes in
            sqlite3_bind_blob(statement, 1, bytes.baseAddress, Int32(bytes.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        }
        guard bound == SQLITE_OK, sqlite3_step(statement) == SQLITE_DONE else {
            throw Failure(description: String(cString: sqlite3_errmsg(handle)))
        }
    }

    /// The column names of a table, in order.
    public func columns(_ table: String) throws -> [String] { try strings("PRAGMA table_info(\"\(table)\")").map { $0[1] } }
}
