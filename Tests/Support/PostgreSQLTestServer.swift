import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A private PostgreSQL server for one test process: `initdb` into a temporary directory,
/// `pg_ctl start` listening only on a Unix socket in that directory, stopped and removed when
/// the process exits. Started once, the first time a test asks for a store location.
///
/// PostgreSQL refuses to run as root: as root, both commands run as the `postgres` system user
/// (`runuser -u postgres -- …`) in a directory that user owns. When no server can be started,
/// ``location(schema:)`` throws with the reason: a test that needs the server fails, it is
/// never skipped.
///
/// ```swift
/// let url = try PostgreSQLTestServer.location()   // postgresql://postgres@/postgres?host=/tmp/…&schema=t_…
/// ```
public enum PostgreSQLTestServer {
    /// Why the server could not start.
    public struct StartFailure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The socket directory of the running server, or why it could not start.
    public static let started: Result<String, StartFailure> = start()

    /// The socket directory of the running server.
    /// - Throws: ``StartFailure`` naming the command that failed and what it printed.
    public static func socketDirectory() throws -> String { try started.get() }

    /// A store location in a schema of its own (a fresh unique name unless `schema` is given).
    public static func location(schema: String? = nil) throws -> URL {
        let name = schema ?? "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        return URL(string: "postgresql://postgres@/postgres?host=\(try socketDirectory())&schema=\(name)")!
    }

    /// What the server says: the rows `psql` prints for `sql` (unaligned, `|` between columns,
    /// one row per line), run on the test server's `postgres` database. The tests' oracle for a
    /// store's tables, independent of the backend's own reading code.
    public static func psql(_ sql: String) throws -> String {
        guard let bin = binaries() else { throw StartFailure(description: "no psql") }
        return try output(bin + "/psql", ["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d",
                                          "postgresql://postgres@/postgres?host=\(try socketDirectory())", "-c", sql])
    }

    /// The folder PostgreSQL's programs are in: `pg_config --bindir`'s when it has `initdb`,
    /// else the newest `/usr/lib/postgresql/*/bin` (Debian keeps the server programs there).
    static func binaries() -> String? {
        if let bindir = try? output("/bin/sh", ["-c", "pg_config --bindir 2>/dev/null"]).trimmingCharacters(in: .whitespacesAndNewlines),
           FileManager.default.isExecutableFile(atPath: bindir + "/initdb"), FileManager.default.isExecutableFile(atPath: bindir + "/pg_ctl") {
            return bindir
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.compactMap(Int.init).sorted().reversed().map { "/usr/lib/postgresql/\($0)/bin" }
            .first { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }
    }

    private static func start() -> Result<String, StartFailure> {
        guard let bin = binaries() else {
            return .failure(StartFailure(description: "no PostgreSQL server programs (initdb, pg_ctl): install the postgresql package"))
        }
        // A short path: a Unix socket's path must fit in 107 bytes.
        var template = Array("/tmp/objectstore-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            return .failure(StartFailure(description: "cannot make a temporary directory: \(String(cString: strerror(errno)))"))
        }
        let dir = String(cString: made)
        let asRoot = geteuid() == 0
        if asRoot {
            guard chmod(dir, 0o755) == 0, (try? output("/bin/chown", ["postgres", dir])) != nil else {
                try? FileManager.default.removeItem(atPath: dir)
                return .failure(StartFailure(description: "cannot give \(dir) to the postgres user (is there one?)"))
            }
        }
        func run(_ program: String, _ arguments: [String]) throws -> String {
            asRoot ? try output("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments) : try output(program, arguments)
        }
        do {
            _ = try run(bin + "/initdb", ["-D", dir + "/data", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"])
            _ = try run(bin + "/pg_ctl", ["-D", dir + "/data", "-l", dir + "/server.log", "-w", "-t", "60", "-o",
                                          "-k \(dir) -c listen_addresses='' -c max_connections=400 -c fsync=off -c full_page_writes=off", "start"])
        } catch {
            let log = (try? String(contentsOfFile: dir + "/server.log", encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(atPath: dir)
            return .failure(StartFailure(description: "cannot start a PostgreSQL server: \(error)\n\(log)"))
        }
        running = (bin, dir, asRoot)
        atexit { PostgreSQLTestServer.stop() }
        return .success(dir)
    }

    /// What ``stop()`` needs; set once, before `atexit` registers it.
    nonisolated(unsafe) private static var running: (bin: String, dir: String, asRoot: Bool)?

    private static func stop() {
        guard let (bin, dir, asRoot) = running else { return }
        let arguments = ["-D", dir + "/data", "-m", "immediate", "-w", "stop"]
        _ = try? (asRoot ? output("/usr/sbin/runuser", ["-u", "postgres", "--", bin + "/pg_ctl"] + arguments) : output(bin + "/pg_ctl", arguments))
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Runs a program with `posix_spawn` and waits for it; returns what it printed. Its output
    /// goes to a file, not a pipe, and `Foundation.Process` is not used: the server `pg_ctl`
    /// starts outlives it and keeps what it inherits open, so neither would see it end.
    /// - Throws: ``StartFailure`` with its exit status and output when it fails.
    @discardableResult
    static func output(_ program: String, _ arguments: [String]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appending(path: "objectstore-pg-\(UUID().uuidString).out").path
        defer { unlink(file) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, program, &actions, nil, argv, environ)
        guard spawned == 0 else { throw StartFailure(description: "cannot run \(program): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        let exited = status & 0x7f == 0, code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            throw StartFailure(description: "\(program) \(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
        return text
    }
}
