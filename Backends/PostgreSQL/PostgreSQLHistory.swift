import Foundation
import ObjectStore

/// The persistent history in a PostgreSQL store: table `os_transaction` in the store's schema,
/// one row per transaction (token, timestamp, author, the ``HistoryRecord`` bytes), written in
/// the same transaction as its data, its token from sequence `os_transaction__token`
/// (docs/postgresql-layout.md, "History").
///
/// Writers take a transaction-scoped advisory lock before they draw a token, so tokens commit
/// in the order they are drawn: a reader that has seen token n never later finds a smaller one
/// committed. Each commit also sends `NOTIFY` on the store's channel (``channel(_:)``) with
/// the token, which is how another process's observer learns of it without polling.
enum PostgreSQLHistory {
    static let table = "os_transaction"
    static let sequence = "os_transaction__token"

    /// The relations a store's layout adds for its history.
    static func relations(_ location: PostgreSQLLocation) -> [(kind: String, name: String, ddl: [String])] {
        [("sequence", sequence, ["CREATE SEQUENCE IF NOT EXISTS \(location.qualified(sequence)) MINVALUE 1 START 1"]),
         ("table", table, ["CREATE TABLE IF NOT EXISTS \(location.qualified(table)) (token bigint PRIMARY KEY, "
                           + "timestamp double precision NOT NULL, author text, record bytea NOT NULL)"])]
    }

    /// The `LISTEN`/`NOTIFY` channel of the store with `identifier`.
    static func channel(_ identifier: UUID) -> String {
        "objectstore_" + identifier.uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    /// Writes `record` under the next token and notifies the channel, inside the caller's transaction.
    /// `tableKnown` says the table was found before this transaction; the check is made only until it is.
    static func append(_ record: HistoryRecord, _ connection: PGConnection, _ location: PostgreSQLLocation, store: UUID, tableKnown: inout Bool) throws {
        try connection.query("SELECT pg_advisory_xact_lock(hashtext($1))", [.text(location.qualified(table))])
        if !tableKnown, try exists(connection, location) {
            tableKnown = true
        } else if !tableKnown {
            for relation in relations(location) {
                for statement in relation.ddl { try connection.execute(statement) }
                try connection.query("INSERT INTO \(location.qualified(PostgreSQLLayout.relationsTable)) (name, kind) VALUES ($1, $2) "
                                     + "ON CONFLICT DO NOTHING", [.text(relation.name), .text(relation.kind)])
            }
        }
        // Token, row and notification in one round trip.
        try connection.query("WITH written AS (INSERT INTO \(location.qualified(table)) (token, timestamp, author, record) "
                             + "VALUES (nextval($1::regclass), $2, $3, $4) RETURNING token) SELECT pg_notify($5, token::text) FROM written",
                             [.text(location.qualified(sequence)), .text(String(record.timestamp.timeIntervalSince1970)), record.author.map(PGParameter.text),
                              .bytes(record.encoded()), .text(channel(store))])
    }

    /// Moves the token sequence to at least `token` (the next token is greater).
    static func continueAfter(_ token: Int64, _ connection: PGConnection, _ location: PostgreSQLLocation) throws {
        guard token > 0 else { return }
        try connection.query("SELECT pg_advisory_xact_lock(hashtext($1))", [.text(location.qualified(table))])
        for relation in relations(location) { for statement in relation.ddl { try connection.execute(statement) } }
        if try last(connection, location) < token {
            try connection.query("SELECT setval($1::regclass, $2, true)", [.text(location.qualified(sequence)), .text(String(token))])
        }
    }

    static func exists(_ connection: PGConnection, _ location: PostgreSQLLocation) throws -> Bool {
        try connection.query("SELECT to_regclass($1) IS NOT NULL", [.text(location.qualified(table))]).text(0, 0) == "t"
    }

    static func last(_ connection: PGConnection, _ location: PostgreSQLLocation) throws -> Int64 {
        guard try exists(connection, location) else { return 0 }
        return try connection.query("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM \(location.qualified(sequence))").int64(0, 0) ?? 0
    }

    static func read(after token: Int64?, limit: Int, _ connection: PGConnection, _ location: PostgreSQLLocation, store: UUID) throws -> [StoreTransaction] {
        guard try exists(connection, location) else { return [] }
        let rows = try connection.query("SELECT token, record FROM \(location.qualified(table)) WHERE token > $1 ORDER BY token LIMIT $2",
                                        [.text(String(token ?? 0)), .text(String(Swift.max(0, limit)))])
        return try (0..<rows.count).map { row in
            let token = rows.int64(row, 0) ?? 0
            let place = "\(location.url.absoluteString), \(table) token \(token)"
            guard let bytes = rows.bytes(row, 1) else { throw StoreError(.corrupt, "\(place): the record is not bytea", url: location.url) }
            return try HistoryRecord(decoding: bytes, place: place).transaction(HistoryToken(store: store, value: token))
        }
    }

    /// Rewrites every record under the names `steps` give entities and properties (an in-place
    /// schema change's, in its transaction), so history read after it names what the model does.
    /// A thousand records at a time; a record that cannot be read is left as it is (reading history reports it).
    static func rename(through steps: [SchemaStep], _ connection: PGConnection, _ location: PostgreSQLLocation) throws {
        guard try exists(connection, location) else { return }
        var after: Int64 = 0
        while true {
            let rows = try connection.query("SELECT token, record FROM \(location.qualified(table)) WHERE token > $1 ORDER BY token LIMIT 1000",
                                            [.text(String(after))])
            for row in 0..<rows.count {
                guard let token = rows.int64(row, 0), let bytes = rows.bytes(row, 1), let record = try? HistoryRecord(decoding: bytes, place: ""),
                      let renamed = SchemaStep.renaming(record, through: steps) else { continue }
                try connection.query("UPDATE \(location.qualified(table)) SET record = $2 WHERE token = $1", [.text(String(token)), .bytes(renamed.encoded())])
            }
            guard rows.count == 1000, let last = rows.int64(rows.count - 1, 0) else { return }
            after = last
        }
    }

    static func delete(through token: Int64, _ connection: PGConnection, _ location: PostgreSQLLocation) throws -> Int {
        guard try exists(connection, location) else { return 0 }
        return try connection.query("WITH gone AS (DELETE FROM \(location.qualified(table)) WHERE token <= $1 RETURNING 1) SELECT count(*) FROM gone",
                                    [.text(String(token))]).int64(0, 0).map(Int.init) ?? 0
    }
}

/// Another process's commits, heard with `LISTEN` on the store's channel: each history write
/// sends `NOTIFY` with its token (``PostgreSQLHistory/append(_:_:_:store:tableKnown:)``), delivered when
/// it commits. The connection is the signal's own, so reads never wait for it.
final class PostgreSQLChangeSignal: PollingSignal, @unchecked Sendable {
    private let connection: PGConnection

    init(location: PostgreSQLLocation, store: UUID) throws {
        let connection = try PostgreSQLStoreType.connect(location)
        try PostgreSQLStoreType.mapping(location) {
            try connection.execute("LISTEN " + PGConnection.quote(PostgreSQLHistory.channel(store)))
        }
        self.connection = connection
        super.init()
    }

    override var descriptors: [Int32] { connection.socket >= 0 ? [connection.socket] : [] }

    override func drain(_ fd: Int32) { connection.consumeNotifications() }

    override func release() {
        connection.close()
    }
}

extension PostgreSQLStoreType: ChangeSignaling {
    public func changeSignal(at url: URL, store: UUID) throws -> any StoreChangeSignal {
        try PostgreSQLChangeSignal(location: PostgreSQLLocation(url), store: store)
    }
}
