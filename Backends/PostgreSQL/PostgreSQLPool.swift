import Foundation
import ObjectStore

/// The connections of one store: each call takes one for itself, so several contexts and tasks
/// read and save at once, each in its own transaction on the server. Connections are opened as
/// calls need them, up to ``limit`` (the URL's `pool=`, 8 by default), and kept for the next call;
/// a call that finds every one busy waits for one, as it does when the server refuses another
/// connection (its `max_connections`, the role's limit). A connection a failure left unusable (the
/// server gone) is closed, not handed out again.
final class PGConnectionPool: @unchecked Sendable {
    /// At most this many connections.
    let limit: Int
    private let open: () throws -> PGConnection
    private let condition = NSCondition()
    // Under `condition`. Each idle connection is reached by one thread at a time: the one
    // `withConnection` hands it to, until it gives it back.
    private var idle: [PGConnection]
    private var opened: Int
    private var closed = false
    /// The server refused a connection while the store had others: calls wait for those, until one
    /// of them is dropped.
    private var serverFull = false

    /// A pool holding `first`, opening others with `open` (each set up as `first` was).
    init(first: PGConnection, limit: Int, open: @escaping () throws -> PGConnection) {
        self.limit = max(1, limit)
        self.open = open
        idle = [first]
        opened = 1
    }

    /// Runs `body` with a connection no other call has meanwhile.
    /// - Throws: `closed` (``StoreError``) once the pool is closed; what opening a connection or `body` throws.
    func withConnection<T>(closedError: @autoclosure () -> StoreError, _ body: (PGConnection) throws -> T) throws -> T {
        let connection = try take(closedError)
        defer { give(connection) }
        return try body(connection)
    }

    private func take(_ closedError: () -> StoreError) throws -> PGConnection {
        condition.lock()
        while true {
            if closed {
                condition.unlock()
                throw closedError()
            }
            if let connection = idle.popLast() {
                condition.unlock()
                return connection
            }
            if opened < limit && !serverFull {
                opened += 1
                condition.unlock()
                do {
                    return try open()
                } catch {
                    condition.lock()
                    opened -= 1
                    // A server that takes no more connections (its or the role's limit) is waited
                    // out on the connections the store has; with none, the call fails.
                    guard opened > 0 else {
                        condition.signal()
                        condition.unlock()
                        throw error
                    }
                    serverFull = true
                    continue
                }
            }
            condition.wait()
        }
    }

    private func give(_ connection: PGConnection) {
        condition.lock()
        defer { condition.unlock() }
        if closed || !connection.isUsable {
            opened -= 1
            serverFull = false
            connection.close()
        } else {
            idle.append(connection)
        }
        condition.signal()
    }

    /// Closes the pool once no call is using a connection: `last` runs on one of them first (the
    /// store's closing work; on a new one when none is open), then every connection is closed.
    /// Calls made from then on throw. Nil when the pool was closed already.
    func close<T>(_ last: (PGConnection) throws -> T) throws -> T? {
        condition.lock()
        // Calls still running finish first: what they write is before the close.
        while !closed && idle.count < opened { condition.wait() }
        guard !closed else {
            condition.unlock()
            return nil
        }
        closed = true
        let connections = idle
        idle = []
        opened = 0
        condition.broadcast()
        condition.unlock()
        defer { for connection in connections { connection.close() } }
        if let first = connections.first { return try last(first) }
        let connection = try open()
        defer { connection.close() }
        return try last(connection)
    }
}
