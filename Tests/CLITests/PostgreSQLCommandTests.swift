import Foundation
import Testing
import TestSupport

/// The tool with a store on the test process's private PostgreSQL server.
@Suite("objectstore with a PostgreSQL store")
struct PostgreSQLCommandTests {
    static let examples = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Examples")

    /// The example library imported into a SQLite store in `workspace`: its path, and the model's.
    static func library(in workspace: Workspace) throws -> (store: String, model: String) {
        let model = examples.appending(path: "Library.xcdatamodeld").path
        let store = workspace.url.appending(path: "lib.sqlite").path
        #expect(try CLI.run("import", store, examples.appending(path: "library.json").path, "--model", model).status == 0)
        return (store, model)
    }

    /// The schema a store URL names.
    static func schema(_ url: String) -> String { String(url[url.range(of: "schema=")!.upperBound...]) }

    @Test("a server that cannot be reached is said so, with libpq's reason, never 'no such store'; the URL's password is masked", arguments: ["inspect", "export", "validate"])
    func unreachable(_ command: String) throws {
        let result = try CLI.run(command, "postgresql://bob:s3cret-word@127.0.0.1:1/db?schema=x")
        #expect(result.status == 1)
        #expect(result.stderr.contains("postgresql://bob:********@127.0.0.1:1/db?schema=x"), "\(result.stderr)")
        #expect(result.stderr.contains("connection to server") && !result.stderr.contains("no such store"), "\(result.stderr)")
        #expect(!result.stderr.contains("s3cret-word"))
    }

    @Test("libpq is loaded by the first connection, never by a command on a file store (the dynamic linker's own account)")
    func libpqLoadedOnDemand() throws {
        let workspace = try Workspace()
        let (store, _) = try Self.library(in: workspace)
        let files = ["LD_DEBUG": "files"]
        let local = try CLI.run(["inspect", store], environment: files)
        #expect(local.status == 0 && local.stderr.contains("file=libc.so.6"), "LD_DEBUG reports the libraries: \(local.stderr.prefix(300))")
        #expect(!local.stderr.contains("libpq"), "a file store loaded libpq")
        let server = try CLI.run(["inspect", "postgresql://nobody@127.0.0.1:1/db?schema=x"], environment: files)
        #expect(server.status == 1 && server.stderr.contains("file=libpq.so.5"), "\(server.stderr.suffix(300))")
    }

    @Test("create makes a server store; convert onto the same store spelled otherwise is refused at once, the store kept")
    func createAndSameStore() throws {
        let pg = try PostgreSQLTestServer.location().absoluteString
        defer { _ = try? CLI.run("destroy", pg) }
        let model = Self.examples.appending(path: "Library.xcdatamodeld").path
        let created = try CLI.run("create", pg, "--model", model)
        #expect(created.status == 0, "\(created.stderr)")
        #expect(try CLI.run("inspect", pg).stdout.hasPrefix("type: postgresql\n"))
        #expect(try CLI.run("create", pg, "--model", model).status == 1, "already exists")
        let respelled = pg.replacingOccurrences(of: "postgresql://", with: "postgres://") + "&connect_timeout=5"
        let onto = try CLI.run("convert", pg, respelled, "--force")
        #expect(onto.status == 1 && onto.stderr.contains("the destination is the source"), "\(onto.stderr)")
        #expect(try CLI.run("inspect", pg).status == 0)
    }

    @Test("reserved and twice-given schema names are refused before anything is written, on the server as everywhere",
          arguments: ["schema=information_schema", "schema=pg_catalog", "schema=pg_mine", "schema=a&schema=b"])
    func reservedSchemas(_ schema: String) throws {
        let workspace = try Workspace()
        let (store, model) = try Self.library(in: workspace)
        let base = try PostgreSQLTestServer.location().absoluteString
        let url = String(base[..<base.range(of: "schema=")!.lowerBound]) + schema
        for command in [["convert", store, url], ["create", url, "--model", model], ["import", url, Self.examples.appending(path: "library.json").path, "--model", model]] {
            let result = try CLI.run(command)
            #expect(result.status == 1 && (result.stderr.contains("reserved by PostgreSQL") || result.stderr.contains("2 times")), "\(command): \(result.stderr)")
        }
        // Nothing was made in PostgreSQL's own schemas.
        let leaked = try PostgreSQLTestServer.psql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'objectstore_%' AND schemaname IN ('information_schema', 'pg_catalog')")
        #expect(leaked.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(leaked)")
    }

    @Test("convert SQLite into PostgreSQL and back: every export equals the SQLite store's, byte for byte; inspect shows UUID, version and the server's counts")
    func convertBothWays() throws {
        let workspace = try Workspace()
        let lib = workspace.url.appending(path: "lib.sqlite").path
        let imported = try CLI.run("import", lib, Self.examples.appending(path: "library.json").path,
                                   "--model", Self.examples.appending(path: "Library.xcdatamodeld").path)
        #expect(imported.status == 0, "\(imported.stderr)")
        let sqliteExport = try CLI.run("export", lib)
        #expect(sqliteExport.status == 0 && !sqliteExport.stdout.isEmpty)

        let pg = try PostgreSQLTestServer.location().absoluteString
        let converted = try CLI.run("convert", lib, pg)
        #expect(converted.status == 0, "\(converted.stderr)")
        let pgExport = try CLI.run("export", pg)
        #expect(pgExport.status == 0, "\(pgExport.stderr)")
        #expect(pgExport.stdout == sqliteExport.stdout)

        // The server's own count of each entity's rows, against what inspect says and what the
        // SQLite store holds.
        let schema = Self.schema(pg)
        var serverCounts: [String: Int] = [:]
        for table in try PostgreSQLTestServer.psql("SELECT name FROM \"\(schema)\".objectstore_relations WHERE kind = 'table'")
            .split(separator: "\n") where !table.contains("__") && table != "os_transaction" {
            for line in try PostgreSQLTestServer.psql("SELECT entity, count(*) FROM \"\(schema)\".\"\(table)\" GROUP BY entity").split(separator: "\n") {
                let parts = line.split(separator: "|")
                serverCounts[String(parts[0])] = Int(parts[1])
            }
        }
        #expect(serverCounts == ["Author": 2, "Book": 3, "Magazine": 1, "Shelf": 2])
        // The conversion is one transaction of the new store's history, after the source's last token.
        let history = try CLI.run("history", pg, "--json")
        #expect(history.status == 0, "\(history.stderr)")
        let lines = history.stdout.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.contains("\"token\": 2") == true, "\(history.stdout)")
        let inspect = try CLI.run("inspect", pg)
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(inspect.stdout.hasPrefix("type: postgresql\n"))
        #expect(inspect.stdout.contains("\nserver: \(pg)\n"), "where a server store is, in place of its files")
        for (entity, count) in serverCounts { #expect(inspect.stdout.contains("  \(entity) \(count)\n") || inspect.stdout.hasSuffix("  \(entity) \(count)")) }
        let uuidLine = try #require(inspect.stdout.split(separator: "\n").first { $0.hasPrefix("store UUID: ") })
        #expect(UUID(uuidString: String(uuidLine.dropFirst("store UUID: ".count))) != nil)
        let sqliteInspect = try CLI.run("inspect", lib).stdout
        let identifiers = { (text: String) in text.split(separator: "\n").first { $0.hasPrefix("model version identifiers:") } }
        #expect(identifiers(inspect.stdout) != nil && identifiers(inspect.stdout) == identifiers(sqliteInspect))

        let back = workspace.url.appending(path: "back.sqlite").path
        let returned = try CLI.run("convert", pg, back)
        #expect(returned.status == 0, "\(returned.stderr)")
        #expect(try CLI.run("export", back).stdout == sqliteExport.stdout)

        // An existing destination is kept unless --force; with it, replaced whole.
        let again = try CLI.run("convert", lib, pg)
        #expect(again.status != 0 && again.stderr.contains("already exists"), "\(again.stderr)")
        #expect(try CLI.run("convert", lib, pg, "--force").status == 0)
        #expect(try CLI.run("export", pg).stdout == sqliteExport.stdout)
        #expect(try CLI.run("destroy", pg).status == 0)
        #expect(try PostgreSQLTestServer.psql("SELECT count(*) FROM pg_namespace WHERE nspname = '\(schema)'") == "0\n")
    }

    @Test("a store filled in one go (convert, import into a new store) has every index a store made by create has, built once its rows are in")
    func indexesOfBulkLoadedStores() throws {
        let workspace = try Workspace()
        let (lib, model) = try Self.library(in: workspace)
        // The server's own list of a schema's indexes, the schema's name taken out.
        func indexes(_ url: String) throws -> [String] {
            let schema = Self.schema(url)
            return try PostgreSQLTestServer.psql("SELECT indexdef FROM pg_indexes WHERE schemaname = '\(schema)' ORDER BY indexdef")
                .replacingOccurrences(of: "\"\(schema)\".", with: "").replacingOccurrences(of: "\(schema).", with: "")
                .split(separator: "\n").map(String.init).sorted()
        }
        let created = try PostgreSQLTestServer.location().absoluteString
        #expect(try CLI.run("create", created, "--model", model).status == 0)
        let made = try indexes(created)
        #expect(made.contains { $0.contains("(entity, pk)") } && made.contains { $0.contains("UNIQUE") }, "\(made)")
        let converted = try PostgreSQLTestServer.location().absoluteString
        let conversion = try CLI.run("convert", lib, converted)
        #expect(conversion.status == 0, "\(conversion.stderr)")
        #expect(try indexes(converted) == made)
        let imported = try PostgreSQLTestServer.location().absoluteString
        let importing = try CLI.run("import", imported, Self.examples.appending(path: "library.json").path, "--model", model)
        #expect(importing.status == 0, "\(importing.stderr)")
        #expect(try indexes(imported) == made)
        #expect(try CLI.run("export", imported).stdout == CLI.run("export", lib).stdout)
    }
}
