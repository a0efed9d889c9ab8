import Foundation
import ObjectMigration
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import Testing
import TestSupport

/// An ordered to-many whose inverse is a to-one keeps its order keys in the members' rows in
/// SQLite (`Z_FOK_`): a conversion in batches reads each with its row and writes it with the row.
@Suite("Order keys in the members' rows")
struct MemberOrderKeyTests {
    /// The conformance store in SQLite, its tracks given these order keys in the playlist by raw SQL
    /// (One, Two, Three), and where its copy goes.
    private func source(_ keys: (String, String, String), in workspace: Workspace) throws -> (from: URL, to: URL) {
        let (from, to) = try BulkCopyTests.conformanceSource(in: workspace)
        let raw = try RawDatabase(from, readOnly: false)
        defer { raw.close() }
        try raw.execute("UPDATE ZTRACK SET Z_FOK_PLAYLIST = CASE ZTITLE WHEN 'One' THEN \(keys.0) WHEN 'Two' THEN \(keys.1) ELSE \(keys.2) END")
        #expect(try raw.strings("SELECT count(*) FROM ZTRACK WHERE ZPLAYLIST IS NOT NULL") == [["3"]])
        return (from, to)
    }

    private func tracks(at url: URL) throws -> OrderedMembers {
        let store = try Backends.type("sqlite").open(at: url, model: StoreConformance.model, options: StoreOptions(readOnly: true, createIfMissing: false))
        defer { try? store.close() }
        let mix = try #require(try store.fetch(FetchRequest(entity: "Playlist")).first?.key)
        return try store.orderedMembers(of: mix, relationship: "tracks")
    }

    @Test("a conversion in batches copies each member's order key as SQLite holds it: ties, gaps, negatives, NULL",
          arguments: [("7", "7", "NULL"), ("-5", "1099511627776", "2"), ("NULL", "NULL", "NULL")])
    func asSQLiteHoldsThem(_ one: String, _ two: String, _ three: String) throws {
        let workspace = try Workspace()
        let (from, to) = try source((one, two, three), in: workspace)
        #expect(try identityMigration(from, to: to, model: StoreConformance.model, bulkCopy: false), "in batches")
        let rows = try rawRows(from)
        #expect(rows["ZTRACK"]?.count == 3)
        #expect(try rawRows(to) == rows)
        #expect(try tracks(at: to) == tracks(at: from))
    }

    @Test("an order key held as a real is not copied as the integer it reads as: the list is written from its owner, in the source's order")
    func realOrderKey() throws {
        let workspace = try Workspace()
        // SQLite orders Two (2), One (2.5), Three (3); 2.5 reads as 2, so the keys read are 2, 3, 4.
        let (from, to) = try source(("2.5", "2", "3"), in: workspace)
        let read = try tracks(at: from)
        #expect(read.orderKeys == [2, 3, 4])
        #expect(try identityMigration(from, to: to, model: StoreConformance.model, bulkCopy: false), "in batches")
        #expect(try tracks(at: to) == read)
        let raw = try RawDatabase(to)
        defer { raw.close() }
        #expect(try raw.strings("SELECT ZTITLE, typeof(Z_FOK_PLAYLIST), Z_FOK_PLAYLIST FROM ZTRACK ORDER BY Z_FOK_PLAYLIST")
                == [["Two", "integer", "2"], ["One", "integer", "3"], ["Three", "integer", "4"]])
    }

    /// How many objects of each entity, and every to-many list of every object, as `store` reads them.
    private func lists(_ store: any PersistentStore) throws -> [String] {
        var lines: [String] = []
        for entity in StoreConformance.model.entityDescriptions where !entity.isAbstract {
            lines.append("\(entity.name): \(try store.objectCount(exactly: entity.name)) objects, \(try store.objectCount(exactly: entity.name)) again")
            let keys = try store.fetch(FetchRequest(entity: entity.name)).map(\.key).filter { $0.entity == entity.name }
            for relationship in entity.storedRelationships where relationship.isToMany {
                for (key, members) in zip(keys, try store.orderedMembers(of: keys, relationship: relationship.name)) {
                    lines.append("\(key).\(relationship.name): \(members.keys) \(members.orderKeys)")
                }
            }
        }
        return lines
    }

    @Test("a snapshot that found every row of a table to be of its one entity reads that table's lists and counts without the rows' Z_ENT, and reads the same; a table with a stray row is read as before",
          arguments: [false, true])
    func listsOfOneEntityTables(stray: Bool) throws {
        let workspace = try Workspace()
        let (from, _) = try BulkCopyTests.conformanceSource(in: workspace)
        if stray {
            // A pet of Ada's whose Z_ENT names no entity: no read sees it, in her list or anywhere.
            let raw = try RawDatabase(from, readOnly: false)
            try raw.execute("INSERT INTO ZPET (Z_PK, Z_ENT, Z_OPT, ZNAME, ZOWNER) SELECT 90, 99, 1, 'Ghost', Z_PK FROM ZPERSON WHERE ZNAME = 'Ada'")
            raw.close()
        }
        let store = try Backends.type("sqlite").open(at: from, model: StoreConformance.model, options: StoreOptions(readOnly: true, createIfMissing: false))
        defer { try? store.close() }
        let expected = try lists(store)
        #expect(expected.contains { $0.contains(".pets: [Pet/") })
        let snapshot = try store.snapshot()
        defer { try? snapshot.close() }
        #expect(try (snapshot as? any IntegrityChecking)?.rowsNoReadSees(limit: 10).isEmpty == !stray)
        #expect(try lists(snapshot) == expected)
    }
}
