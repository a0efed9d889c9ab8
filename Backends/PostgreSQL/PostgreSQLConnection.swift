import Foundation
import ObjectModel
import ObjectStore

/// An error the PostgreSQL server (or libpq) reported: its SQLSTATE code and message.
///
/// Stores turn it into a ``StoreError`` (carried as the cause) at the module boundary:
/// `40001` (serialization failure) and `40P01` (deadlock) are conflicts, `23505` (unique
/// violation) a key in use, `25006` (read-only transaction) read-only, `08…` (connection)
/// an I/O failure.
///
/// ```swift
/// catch let error as StoreError { if let pg = error.cause as? PostgreSQLError { print(pg.sqlState) } }
/// ```
public struct PostgreSQLError: Error, Sendable, CustomStringConvertible {
    /// The five-character SQLSTATE (`42P01`), or `08006` for a connection libpq lost.
    public var sqlState: String
    /// The server's primary message.
    public var message: String
    /// The server's detail line, if any.
    public var detail: String?

    /// Creates an error.
    public init(sqlState: String, message: String, detail: String? = nil) {
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
    }

    public var description: String {
        "\(message)\(detail.map { " (\($0))" } ?? "") [SQLSTATE \(sqlState)]"
    }

    /// The store error kind this SQLSTATE means.
    var storeCode: StoreError.Code {
        switch sqlState {
        case "40001", "40P01": .conflict
        case "23505", "23503", "23502", "23514": .invalidChange
        case "25006": .readOnly
        case "3D000", "42P01", "3F000": .notFound
        case "55P03": .busy
        default: .io
        }
    }
}

/// A parameter of a statement: text the server parses as the column's type, or bytes (`bytea`).
enum PGParameter {
    case text(String)
    case bytes(Data)
}

/// One result of a statement, read as text (`bytea` as hex).
///
/// Not `Sendable`: it lives inside one call.
final class PGRows {
    let handle: OpaquePointer
    let count: Int
    let columns: Int
    /// The library that made the result (read per value: taken once, not looked up each time).
    private let pq: LibPQ

    init(_ handle: OpaquePointer, pq: LibPQ) {
        self.handle = handle
        self.pq = pq
        count = Int(pq.ntuples(handle))
        columns = Int(pq.nfields(handle))
    }

    deinit { pq.clear(handle) }

    /// Whether the value at `row`, `column` is NULL.
    func isNull(_ row: Int, _ column: Int) -> Bool { pq.getisnull(handle, Int32(row), Int32(column)) == 1 }

    /// The text of a value, nil for NULL.
    func text(_ row: Int, _ column: Int) -> String? {
        guard !isNull(row, column), let raw = pq.getvalue(handle, Int32(row), Int32(column)) else { return nil }
        return String(cString: raw)
    }

    /// A `bigint` value, nil for NULL or text that is no integer.
    func int64(_ row: Int, _ column: Int) -> Int64? {
        guard !isNull(row, column), let raw = pq.getvalue(handle, Int32(row), Int32(column)) else { return nil }
        var end: UnsafeMutablePointer<CChar>?
        errno = 0
        let value = strtoll(raw, &end, 10)
        guard errno == 0, let end, end != raw, end.pointee == 0 else { return nil }
        return Int64(value)
    }

    /// A `bytea` value (hex output), nil for NULL or a malformed value.
    func bytes(_ row: Int, _ column: Int) -> Data? {
        guard !isNull(row, column), let raw = pq.getvalue(handle, Int32(row), Int32(column)) else { return nil }
        // The `\x…` hex form of `bytea`.
        let length = Int(pq.getlength(handle, Int32(row), Int32(column)))
        let text = UnsafeRawBufferPointer(start: raw, count: length)
        guard length >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return nil }
        return Data(hexString: String(decoding: text.dropFirst(2), as: UTF8.self))
    }
}

/// One connection to a PostgreSQL server through libpq's blocking API.
///
/// Not `Sendable`: a connection lives inside its store's lock. Every statement goes through
/// `PQexecParams` with bound parameters (text, or binary for `bytea`); every result is checked
/// where the call is made and a failure becomes a ``PostgreSQLError``.
final class PGConnection {
    private let pq: LibPQ
    private let handle: OpaquePointer
    private var closed = false
    /// Whether the `COPY` under way takes the binary format (``beginCopy(_:)``).
    private var copyingBinary = false

    /// Connects with a libpq connection string or URI.
    /// - Throws: ``PostgreSQLError`` with libpq's message when the connection fails.
    init(conninfo: String) throws {
        let pq = try LibPQ.loaded()
        guard let connection = pq.connectdb(conninfo) else {
            throw PostgreSQLError(sqlState: "08001", message: "libpq could not allocate a connection")
        }
        guard pq.status(connection) == LibPQ.connectionOK else {
            let message = (pq.errorMessage(connection).map { String(cString: $0) } ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            pq.finish(connection)
            // libpq gives a failed connection no SQLSTATE: the server's message says which it was.
            let state = message.contains("role \"") && message.contains("does not exist") ? "28000"
                : message.contains("password authentication failed") ? "28P01"
                : message.contains("does not exist") ? "3D000" : "08001"
            throw PostgreSQLError(sqlState: state, message: message)
        }
        self.pq = pq
        handle = connection
        // Notices (`… already exists, skipping`) are not errors and not the tool's output.
        _ = pq.setNoticeProcessor(handle, { _, _ in }, nil)
        try execute("SET client_min_messages = warning; SET extra_float_digits = 3")
    }

    deinit { close() }

    func close() {
        guard !closed else { return }
        closed = true
        pq.finish(handle)
    }

    /// The socket the server's messages arrive on (for `poll`), or -1.
    var socket: Int32 { closed ? -1 : pq.socket(handle) }

    /// Reads what arrived and drops the notifications it held (`LISTEN`); returns how many there were.
    @discardableResult
    func consumeNotifications() -> Int {
        guard !closed, pq.consumeInput(handle) == 1 else { return 0 }
        var count = 0
        while let notification = pq.notifies(handle) {
            pq.freemem(notification)
            count += 1
        }
        return count
    }

    /// Whether the connection is open and the server still answers on it.
    var isUsable: Bool { !closed && pq.status(handle) == LibPQ.connectionOK }

    /// Whether the server is in a transaction block (or a failed one).
    var inTransaction: Bool {
        let status = pq.transactionStatus(handle)
        return status == LibPQ.inTransaction || status == LibPQ.inFailedTransaction
    }

    /// Runs SQL without parameters (several statements allowed).
    func execute(_ sql: String) throws {
        guard let result = pq.exec(handle, sql) else { throw lost() }
        _ = try check(result)
    }

    /// Runs one statement with bound parameters; returns its rows.
    @discardableResult
    func query(_ sql: String, _ parameters: [PGParameter?] = []) throws -> PGRows {
        // Each parameter's bytes (malloc'd copies) stay alive until PQexecParams returns.
        let count = parameters.count
        var lengths = [Int32](repeating: 0, count: count)
        var formats = [Int32](repeating: 0, count: count)
        var buffers: [UnsafeMutablePointer<CChar>?] = []
        buffers.reserveCapacity(count)
        defer { for buffer in buffers { free(buffer) } }
        for (index, parameter) in parameters.enumerated() {
            switch parameter {
            case nil:
                buffers.append(nil)
            case .text(let text):
                buffers.append(strdup(text))
            case .bytes(let data):
                let buffer = malloc(max(1, data.count))!.assumingMemoryBound(to: CChar.self)
                data.withUnsafeBytes { raw in if let base = raw.baseAddress { memcpy(buffer, base, raw.count) } }
                buffers.append(buffer)
                lengths[index] = Int32(data.count)
                formats[index] = 1
            }
        }
        let values = buffers.map { UnsafePointer($0) }
        guard let result = pq.execParams(handle, sql, Int32(count), nil, values, lengths, formats, 0) else { throw lost() }
        return try check(result)
    }

    /// Sends `COPY … FROM STDIN` data: `body` hands chunks to `send`, then the copy ends.
    func copyIn(_ sql: String, _ body: (_ send: (Data) throws -> Void) throws -> Void) throws {
        try beginCopy(sql)
        do {
            try body(putCopyData)
        } catch {
            abortCopy()
            throw error
        }
        try endCopy()
    }

    /// Starts `COPY … FROM STDIN`: until ``endCopy()`` or ``abortCopy()`` the connection takes only
    /// ``putCopyData(_:)``. The server reads each chunk as it comes, while the next is made. A
    /// statement that ends with ``PGBinaryCopy/option`` takes rows in the binary format: the
    /// connection sends the format's header now and its trailer at ``endCopy()``.
    func beginCopy(_ sql: String) throws {
        guard let start = pq.exec(handle, sql) else { throw lost() }
        guard pq.resultStatus(start) == LibPQ.copyIn else { _ = try check(start); throw lost() }
        pq.clear(start)
        copyingBinary = sql.hasSuffix(PGBinaryCopy.option)
        if copyingBinary { try putCopyData(Data(PGBinaryCopy.header)) }
    }

    /// Sends a chunk of the copy's data.
    func putCopyData(_ chunk: Data) throws {
        let sent = chunk.withUnsafeBytes { raw in
            pq.putCopyData(handle, raw.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(raw.count))
        }
        guard sent == 1 else { throw lost() }
    }

    /// Ends the copy; throws what the server said of its data (a key in use, a value it refused).
    func endCopy() throws {
        if copyingBinary {
            copyingBinary = false
            try putCopyData(Data(PGBinaryCopy.trailer))
        }
        guard pq.putCopyEnd(handle, nil) == 1 else { throw lost() }
        var failure: PostgreSQLError?
        while let result = pq.getResult(handle) {
            do { _ = try check(result) } catch let error as PostgreSQLError { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    /// Ends the copy as failed: the server keeps none of it.
    func abortCopy() {
        copyingBinary = false
        _ = pq.putCopyEnd(handle, "the writer failed")
        while let result = pq.getResult(handle) { pq.clear(result) }
    }

    private func lost() -> PostgreSQLError {
        PostgreSQLError(sqlState: "08006", message: (pq.errorMessage(handle).map { String(cString: $0) } ?? "").trimmingCharacters(in: .whitespacesAndNewlines))
    }

    private func check(_ result: OpaquePointer) throws -> PGRows {
        let status = pq.resultStatus(result)
        guard status == LibPQ.commandOK || status == LibPQ.tuplesOK || status == LibPQ.emptyQuery else {
            func field(_ code: Character) -> String? {
                pq.resultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) }
            }
            let error = PostgreSQLError(
                sqlState: field("C") ?? "08006",
                message: field("M") ?? (pq.resultErrorMessage(result).map { String(cString: $0) } ?? "").trimmingCharacters(in: .whitespacesAndNewlines),
                detail: field("D"))
            pq.clear(result)
            throw error
        }
        return PGRows(result, pq: pq)
    }

    /// A double-quoted identifier.
    static func quote(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// A string constant, for the statements that take no parameters (`COMMENT ON`): the escape
    /// form `E'…'` with quotes and backslashes doubled, whatever `standard_conforming_strings` says.
    static func literal(_ text: String) -> String {
        "E'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "''") + "'"
    }
}
