import Foundation
import ObjectStore

/// The persistent history in a SQLite store: table `OS_TRANSACTION`, one row per transaction,
/// written in the same SQLite transaction as its data (docs/sqlite-layout.md, "History").
///
/// Core Data names its own tables `Z<ENTITY>` and `Z_<something>`; this one's `OS_` prefix is
/// outside both, so Core Data and tools that read Core Data's layout pass it by. The table is
/// made by the first write that records history, so a store no one wrote since it was made
/// (or one Core Data wrote) has none. `AUTOINCREMENT` keeps tokens from being handed out twice
/// after history is deleted (SQLite keeps the greatest in `sqlite_sequence`).
enum SQLiteHistory {
    static let table = "OS_TRANSACTION"
    static let createStatement = """
        CREATE TABLE IF NOT EXISTS OS_TRANSACTION (Z_PK INTEGER PRIMARY KEY AUTOINCREMENT, ZTIMESTAMP REAL NOT NULL, \
        ZAUTHOR TEXT, ZRECORD BLOB NOT NULL)
        """

    /// Writes `record` under the next token, inside the caller's write transaction.
    /// `tableKnown` says the table was found before this transaction (so no rollback can take it
    /// away); the check and the CREATE are made only until it is: not on every save.
    static func append(_ record: HistoryRecord, _ connection: SQLiteConnection, tableKnown: inout Bool) throws {
        if !tableKnown {
            if try exists(connection) { tableKnown = true } else { try connection.execute(createStatement) }
        }
        try connection.statement("INSERT INTO OS_TRANSACTION (ZTIMESTAMP, ZAUTHOR, ZRECORD) VALUES (?1, ?2, ?3)")
            .run([.real(record.timestamp.timeIntervalSince1970), record.author.map(SQLValue.text) ?? .null, .blob(record.encoded())])
    }

    static func exists(_ connection: SQLiteConnection) throws -> Bool {
        try connection.statement("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'OS_TRANSACTION'").rows { $0.int64(0) }.first == 1
    }

    static func last(_ connection: SQLiteConnection) throws -> Int64 {
        guard try exists(connection) else { return 0 }
        return try connection.statement("SELECT seq FROM sqlite_sequence WHERE name = 'OS_TRANSACTION'").rows { $0.int64(0) }.first ?? 0
    }

    static func read(after token: Int64?, limit: Int, _ connection: SQLiteConnection, store: UUID, url: URL?) throws -> [StoreTransaction] {
        guard try exists(connection) else { return [] }
        return try connection.statement("SELECT Z_PK, ZRECORD FROM OS_TRANSACTION WHERE Z_PK > ?1 ORDER BY Z_PK LIMIT ?2")
            .rows([.integer(token ?? 0), .integer(Int64(Swift.max(0, limit)))]) { row in (row.int64(0), row.column(1)) }
            .map { token, value in
                let place = "\(url?.path ?? "store"), OS_TRANSACTION row \(token)"
                guard case .blob(let bytes) = value else { throw StoreError(.corrupt, "\(place): ZRECORD is not a blob", url: url) }
                return try HistoryRecord(decoding: bytes, place: place).transaction(HistoryToken(store: store, value: token))
            }
    }

    /// Rewrites every record under the names `steps` give entities and properties (an in-place
    /// schema change's, in its transaction), so history read after it names what the model does.
    /// A thousand records at a time; a record that cannot be read is left as it is (reading history reports it).
    static func rename(through steps: [SchemaStep], _ connection: SQLiteConnection, url: URL?) throws {
        guard try exists(connection) else { return }
        let page = try connection.statement("SELECT Z_PK, ZRECORD FROM OS_TRANSACTION WHERE Z_PK > ?1 ORDER BY Z_PK LIMIT 1000")
        let update = try connection.statement("UPDATE OS_TRANSACTION SET ZRECORD = ?2 WHERE Z_PK = ?1")
        var after: Int64 = 0
        while true {
            let rows = try page.rows([.integer(after)]) { row in (row.int64(0), row.column(1)) }
            for (token, value) in rows {
                guard case .blob(let bytes) = value, let record = try? HistoryRecord(decoding: bytes, place: ""),
                      let renamed = SchemaStep.renaming(record, through: steps) else { continue }
                try update.run([.integer(token), .blob(renamed.encoded())])
            }
            guard rows.count == 1000, let last = rows.last else { return }
            after = last.0
        }
    }

    /// Moves the token counter to at least `token`.
    static func continueAfter(_ token: Int64, _ connection: SQLiteConnection) throws {
        try connection.execute(createStatement)
        try connection.statement("UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = 'OS_TRANSACTION'").run([.integer(token)])
        if connection.changes == 0 {
            try connection.statement("INSERT INTO sqlite_sequence (name, seq) VALUES ('OS_TRANSACTION', ?1)").run([.integer(token)])
        }
    }

    static func delete(through token: Int64, _ connection: SQLiteConnection) throws -> Int {
        guard try exists(connection) else { return 0 }
        try connection.statement("DELETE FROM OS_TRANSACTION WHERE Z_PK <= ?1").run([.integer(token)])
        return connection.changes
    }
}
