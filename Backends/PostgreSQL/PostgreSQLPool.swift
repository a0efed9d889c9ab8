import Foundation
import ObjectStore

/// The connections of one store: each call takes one for itself, so several contexts and tasks
/// read and save at once, each in its own transaction on the server. Connections are opened as
/// calls need them, up to ``limit`` (the URL's `pool=`, 8 by default), and kept for the next call;
/// a call that finds every one busy waits for one. A connection a failure left unusable (the
/// server gone, a transaction it could not end) is closed, not handed out again.
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
            if opened < limit {
                opened += 1
                condition.unlock()
                do {
                    return try open()
                } catch {
                    condition.lock()
                    opened -= 1
                    condition.signal()
                    condition.unlock()
                    throw error
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
            connection.close()
        } else {
            idle.append(connection)
        }
        condition.signal()
    }

    /// Closes the pool: `last` runs on one of its connections first (the store's closing work),
    /// then every connection is closed (one still busy, when its call gives it back).
    /// - Returns: what `last` returns, or nil when the pool was closed already.
    func close<T>(_ last: (PGConnection) -> T) -> T? {
        condition.lock()
        guard !closed else {
            condition.unlock()
            return nil
        }
        // Waits for a connection to come back, unless none is open at all.
        while idle.isEmpty && opened > 0 { condition.wait() }
        closed = true
        let connections = idle
        idle = []
        opened -= connections.count
        condition.broadcast()
        condition.unlock()
        defer { for connection in connections { connection.close() } }
        guard let first = connections.first else { return nil }
        return last(first)
    }
}
