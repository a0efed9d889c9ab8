import Foundation
import Synchronization

/// libpq, the PostgreSQL client library, loaded when the first connection is made.
///
/// The tool is not linked against libpq: libpq brings about twenty libraries (Kerberos, LDAP,
/// GnuTLS, OpenSSL…) that every process would otherwise load, relocate and map at start, about
/// 3 ms and 6 MB for commands that never reach a server. A process that opens a `postgresql://`
/// store loads it once (`dlopen`); one without libpq installed gets a ``PostgreSQLError`` naming
/// the library instead of failing to start.
///
/// The entry points are libpq's stable C API (`libpq-fe.h`), with its pointer types as opaque
/// pointers and its enums as their C values.
struct LibPQ: Sendable {
    typealias Connection = OpaquePointer
    typealias Result = OpaquePointer

    let connectdb: @convention(c) (UnsafePointer<CChar>?) -> Connection?
    let status: @convention(c) (Connection?) -> Int32
    let errorMessage: @convention(c) (Connection?) -> UnsafeMutablePointer<CChar>?
    let finish: @convention(c) (Connection?) -> Void
    let setNoticeProcessor: @convention(c) (
        Connection?, (@convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?) -> Void)?, UnsafeMutableRawPointer?
    ) -> UnsafeMutableRawPointer?
    let socket: @convention(c) (Connection?) -> Int32
    let consumeInput: @convention(c) (Connection?) -> Int32
    let notifies: @convention(c) (Connection?) -> UnsafeMutableRawPointer?
    let freemem: @convention(c) (UnsafeMutableRawPointer?) -> Void
    let transactionStatus: @convention(c) (Connection?) -> Int32
    let exec: @convention(c) (Connection?, UnsafePointer<CChar>?) -> Result?
    let execParams: @convention(c) (
        Connection?, UnsafePointer<CChar>?, Int32, UnsafePointer<UInt32>?, UnsafePointer<UnsafePointer<CChar>?>?,
        UnsafePointer<Int32>?, UnsafePointer<Int32>?, Int32
    ) -> Result?
    let putCopyData: @convention(c) (Connection?, UnsafePointer<CChar>?, Int32) -> Int32
    let putCopyEnd: @convention(c) (Connection?, UnsafePointer<CChar>?) -> Int32
    let getResult: @convention(c) (Connection?) -> Result?
    let resultStatus: @convention(c) (Result?) -> Int32
    let resultErrorField: @convention(c) (Result?, Int32) -> UnsafeMutablePointer<CChar>?
    let resultErrorMessage: @convention(c) (Result?) -> UnsafeMutablePointer<CChar>?
    let clear: @convention(c) (Result?) -> Void
    let ntuples: @convention(c) (Result?) -> Int32
    let nfields: @convention(c) (Result?) -> Int32
    let getisnull: @convention(c) (Result?, Int32, Int32) -> Int32
    let getvalue: @convention(c) (Result?, Int32, Int32) -> UnsafeMutablePointer<CChar>?
    let getlength: @convention(c) (Result?, Int32, Int32) -> Int32

    // `ConnStatusType`, `PGTransactionStatusType` and `ExecStatusType` values.
    static let connectionOK: Int32 = 0
    static let inTransaction: Int32 = 2, inFailedTransaction: Int32 = 3
    static let emptyQuery: Int32 = 0, commandOK: Int32 = 1, tuplesOK: Int32 = 2, copyIn: Int32 = 4

    /// The names libpq's shared library goes by, tried in order until one has every entry point.
    private static let libraryNames = [
        "libpq.so.5", "libpq.so", "libpq.5.dylib", "/opt/homebrew/opt/libpq/lib/libpq.5.dylib", "/usr/local/opt/libpq/lib/libpq.5.dylib",
    ]

    /// The library once loaded (loading is tried again by each connection until it succeeds: a
    /// process may outlive the installation of libpq).
    private static let library = Mutex<LibPQ?>(nil)

    /// The library.
    /// - Throws: ``PostgreSQLError`` (`08001`) when libpq is not installed or lacks an entry point.
    static func loaded() throws(PostgreSQLError) -> LibPQ {
        try library.withLock { (library: inout LibPQ?) throws(PostgreSQLError) -> LibPQ in
            if let library { return library }
            let loaded = try load().get()
            library = loaded
            return loaded
        }
    }

    private static func load() -> Swift.Result<LibPQ, PostgreSQLError> {
        var reasons: [String] = []
        for name in libraryNames {
            guard let library = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
                reasons.append(dlerror().map { String(cString: $0) } ?? name)
                continue
            }
            // Kept open for the life of the process: connections may exist until it ends.
            var missing: [String] = []
            func symbol<F>(_ name: String) -> F {
                guard let address = dlsym(library, name) else {
                    missing.append(name)
                    return unsafeBitCast(UnsafeRawPointer(bitPattern: 1)!, to: F.self)
                }
                return unsafeBitCast(address, to: F.self)
            }
            let api = LibPQ(
                connectdb: symbol("PQconnectdb"),
                status: symbol("PQstatus"),
                errorMessage: symbol("PQerrorMessage"),
                finish: symbol("PQfinish"),
                setNoticeProcessor: symbol("PQsetNoticeProcessor"),
                socket: symbol("PQsocket"),
                consumeInput: symbol("PQconsumeInput"),
                notifies: symbol("PQnotifies"),
                freemem: symbol("PQfreemem"),
                transactionStatus: symbol("PQtransactionStatus"),
                exec: symbol("PQexec"),
                execParams: symbol("PQexecParams"),
                putCopyData: symbol("PQputCopyData"),
                putCopyEnd: symbol("PQputCopyEnd"),
                getResult: symbol("PQgetResult"),
                resultStatus: symbol("PQresultStatus"),
                resultErrorField: symbol("PQresultErrorField"),
                resultErrorMessage: symbol("PQresultErrorMessage"),
                clear: symbol("PQclear"),
                ntuples: symbol("PQntuples"),
                nfields: symbol("PQnfields"),
                getisnull: symbol("PQgetisnull"),
                getvalue: symbol("PQgetvalue"),
                getlength: symbol("PQgetlength"))
            guard missing.isEmpty else {
                reasons.append("\(name) lacks \(missing.joined(separator: ", "))")
                dlclose(library)
                continue
            }
            return .success(api)
        }
        return .failure(PostgreSQLError(
            sqlState: "08001",
            message: "PostgreSQL stores need the client library libpq, which could not be loaded (Debian: apt-get install libpq5): "
                + reasons.joined(separator: "; ")))
    }
}
