import Foundation
import Testing
import TestSupport

/// The real binary, killed with SIGKILL in the middle of its work. After every kill the
/// source is byte for byte what it was, the destination is absent, the old one or the
/// complete new one, and the next run finishes and leaves nothing behind.
///
/// `OBJECTSTORE_KILLS` sets the kill points per scenario (3 by default; `scripts/reliability.sh`
/// runs 40), spread evenly over the time an uninterrupted run takes.
@Suite("Killed at any moment")
struct CrashHarnessTests {
    static let kills = Int(ProcessInfo.processInfo.environment["OBJECTSTORE_KILLS"] ?? "") ?? 3
    static let durable = CLI.backends
    static let size = Int(ProcessInfo.processInfo.environment["OBJECTSTORE_CRASH_OBJECTS"] ?? "") ?? 600

    /// A model and a document big enough that a run takes a while.
    static func writeData(in workspace: Harness, objects: Int = size) throws -> (model: String, data: String, second: String) {
        let model = try workspace.write("""
            {"format": "objectstore-model", "formatVersion": 1, "entities": [
              {"name": "Shelf", "attributes": [{"name": "name", "type": "String"}],
               "relationships": [{"name": "books", "destination": "Book", "inverse": "shelf", "toMany": true, "ordered": true}]},
              {"name": "Book", "attributes": [{"name": "title", "type": "String"}, {"name": "added", "type": "Date"}, {"name": "pages", "type": "Integer 32"}],
               "relationships": [{"name": "shelf", "destination": "Shelf", "inverse": "books"},
                                 {"name": "related", "destination": "Book", "inverse": "related", "toMany": true}]}]}
            """, to: "model.json")
        func document(_ prefix: String, _ count: Int) -> String {
            let shelves = (0..<max(1, count / 100)).map { "{\"_id\": \"\(prefix)s\($0)\", \"name\": \"shelf \($0)\"}" }
            let books = (0..<count).map { i in
                "{\"_id\": \"\(prefix)b\(i)\", \"title\": \"book \(i) \(String(repeating: "x", count: i % 50))\", \"added\": \"2024-01-01T00:00:0\(i % 10).\(100 + i % 900)Z\", "
                    + "\"pages\": \(i), \"shelf\": \"\(prefix)s\(i % max(1, count / 100))\", "
                    + "\"related\": [\([i - 1, i + 1].filter { (0..<count).contains($0) }.map { "\"\(prefix)b\($0)\"" }.joined(separator: ", "))]}"
            }
            return "{\"Shelf\": [\(shelves.joined(separator: ", "))], \"Book\": [\(books.joined(separator: ", "))]}"
        }
        return (model, try workspace.write(document("", objects), to: "data.json"), try workspace.write(document("more-", objects / 3), to: "more.json"))
    }

    /// A SQLite store of ten times the usual document, big enough that a signal lands in the
    /// middle of most runs over it: its path, the model's and the documents'.
    static func bigStore(in workspace: Harness) throws -> (store: String, model: String, data: String, more: String) {
        let (model, data, more) = try writeData(in: workspace, objects: 10 * size)
        let store = workspace.path("source.sqlite")
        #expect(try CLI.run("import", store, data, "--model", model).status == 0)
        return (store, model, data, more)
    }

    /// Runs `arguments`, sending `signal` to the process after `delay` seconds (nil: let it finish).
    /// Whether the signal ended it, and its status.
    @discardableResult
    static func run(_ arguments: [String], killingAfter delay: Double?, with signal: Int32 = SIGKILL) throws -> (killed: Bool, status: Int32) {
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        if let delay {
            let deadline = Date().addingTimeInterval(delay)
            while process.isRunning && Date() < deadline { usleep(1_000) }
            if process.isRunning { kill(process.processIdentifier, signal) }
        }
        process.waitUntilExit()
        return (process.terminationReason == .uncaughtSignal, process.terminationStatus)
    }

    /// Runs `arguments`, sending `signal` at `fraction` of `total` seconds: the run's label and
    /// status, or nil when the signal ended the process. Before the tool takes signals (starting
    /// up) one ends the process as always, and the next run sweeps; later, up to the install, the
    /// tool has it, so the process must not end by it past the middle of a run.
    static func interrupt(_ arguments: [String], at fraction: Double, of total: Double, with signal: Int32) throws -> (label: String, status: Int32)? {
        let delay = total * fraction
        let (killed, status) = try run(arguments, killingAfter: delay, with: signal)
        let label = "signal \(signal) at \(String(format: "%.3f", delay)) s of \(String(format: "%.3f", total)) s"
        if killed {
            #expect(fraction < 0.5, "\(label): the signal ended the process: it was not taken")
            return nil
        }
        return (label, status)
    }

    /// How long an uninterrupted run takes.
    static func duration(_ arguments: [String], prepare: () throws -> Void) throws -> Double {
        try prepare()
        let start = Date()
        let result = try run(arguments, killingAfter: nil)
        #expect(result.status == 0, "\(arguments) failed uninterrupted")
        return Date().timeIntervalSince(start)
    }

    /// The kill points: evenly spread over the run, the first just after it starts.
    static func delays(_ total: Double) -> [Double] {
        (0..<kills).map { total * (Double($0) + 0.5) / Double(kills) }
    }

    @Test("convert, killed: the source untouched, the destination absent, old or complete, nothing left after the next run",
          arguments: durable.flatMap { a in durable.map { (a, $0) } })
    func convert(_ pair: (String, String)) throws {
        let (from, to) = pair
        let workspace = try Harness()
        let (model, data, more) = try Self.writeData(in: workspace)
        let source = workspace.path("source.\(from)")
        #expect(try CLI.run("import", source, data, "--model", model).status == 0)
        let sourceFiles = workspace.snapshot(excludingVolatile: true)
        let sourceExport = try CLI.run("export", source).stdout
        let destination = workspace.path("destination.\(to)")
        // An old destination to replace: a store of the same data with more objects, its last commit only in a WAL.
        func makeOldDestination() throws {
            workspace.remove(prefix: "destination.")
            workspace.remove(prefix: ".destination.")
            #expect(try CLI.run("import", destination, data, "--model", model).status == 0)
            #expect(try CLI.run("import", destination, more).status == 0)
            if to == "sqlite" { try workspace.leaveWALCommit(destination) }
        }
        try makeOldDestination()
        let oldExport = try CLI.run("export", destination).stdout
        for force in [false, true] {
            let arguments = ["convert", source, destination] + (force ? ["--force"] : [])
            func prepare() throws {
                if force {
                    try makeOldDestination()
                } else {
                    workspace.remove(prefix: "destination.")
                    workspace.remove(prefix: ".destination.")
                }
            }
            let total = try Self.duration(arguments, prepare: prepare)
            for delay in Self.delays(total) {
                try prepare()
                try Self.run(arguments, killingAfter: delay)
                let label = "\(from)→\(to)\(force ? " --force" : "") killed at \(String(format: "%.3f", delay)) s of \(String(format: "%.3f", total)) s"
                #expect(workspace.snapshot(excludingVolatile: true).filter { sourceFiles[$0.key] != nil } == sourceFiles, "\(label): the source changed")
                if FileManager.default.fileExists(atPath: destination) {
                    let now = try CLI.run("export", destination)
                    #expect(now.status == 0, "\(label): the destination does not read: \(now.stderr)")
                    let expected = force ? [oldExport, sourceExport] : [sourceExport]
                    #expect(expected.contains(now.stdout), "\(label): the destination is neither the old store nor the new one")
                } else {
                    #expect(!force, "\(label): the old destination is gone")   // absent is fine for a new one
                }
                // The next run finishes, and leaves only the stores' own files.
                let again = try CLI.run(["convert", source, destination, "--force"])
                #expect(again.status == 0, "\(label): the next run failed: \(again.stderr)")
                #expect(try CLI.run("export", destination).stdout == sourceExport, "\(label)")
                #expect(workspace.leftovers().isEmpty, "\(label): left behind \(workspace.leftovers())")
            }
        }
    }

    @Test("convert, interrupted (SIGINT, SIGTERM): it stops within a batch (or after SQLite's copy), up to the install, and removes what it staged; the old destination kept",
          arguments: [(SIGINT, "lmdb"), (SIGTERM, "sqlite")])
    func interrupted(_ signal: Int32, _ type: String) throws {
        let workspace = try Harness()
        let (source, model, _, more) = try Self.bigStore(in: workspace)
        let sourceExport = try CLI.run("export", source).stdout
        let destination = workspace.path("destination.\(type)")
        let arguments = ["convert", source, destination, "--force"]
        // The old destination holds other objects: which store is in place after a run tells whether it was stopped.
        func makeOld() throws {
            workspace.remove(prefix: "destination.")
            #expect(try CLI.run("import", destination, more, "--model", model).status == 0)
        }
        try makeOld()
        let oldExport = try CLI.run("export", destination).stdout
        #expect(oldExport != sourceExport)
        let total = try Self.duration(arguments, prepare: makeOld)
        var stopped = 0
        // Through the run, and late in it, where the last check comes before the install.
        for fraction in [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98] {
            try makeOld()
            guard let (label, status) = try Self.interrupt(arguments, at: fraction, of: total, with: signal) else { continue }
            let now = try CLI.run("export", destination).stdout
            if status == 0 {
                #expect(now == sourceExport, "\(label): exit 0, so the new store is in place")
            } else {
                stopped += 1
                #expect(now == oldExport, "\(label): stopped, so the old store is in place")
            }
            #expect(workspace.leftovers().isEmpty, "\(label): left behind \(workspace.leftovers())")
        }
        #expect(stopped > 0, "no run was stopped by the signal: the conversion takes \(total) s")
    }

    @Test("import into a new store, interrupted (SIGINT, SIGTERM, SIGHUP): it stops at its next write, up to the install, says so, and leaves no store and nothing staged",
          arguments: [(SIGINT, "sqlite"), (SIGTERM, "lmdb"), (SIGHUP, "atomic")])
    func importInterrupted(_ signal: Int32, _ type: String) throws {
        let workspace = try Harness()
        let (model, data, _) = try Self.writeData(in: workspace, objects: 10 * Self.size)
        let store = workspace.path("store.\(type)")
        let arguments = ["import", store, data, "--model", model]
        func clear() { workspace.remove(prefix: "store.") }
        let total = try Self.duration(arguments, prepare: clear)
        let complete = try CLI.run("export", store).stdout
        var stopped = 0
        for fraction in [0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98] {
            clear()
            guard let (label, status) = try Self.interrupt(arguments, at: fraction, of: total, with: signal) else { continue }
            if status == 0 {
                #expect(try CLI.run("export", store).stdout == complete, "\(label): exit 0, so the whole store is in place")
            } else {
                stopped += 1
                #expect(!FileManager.default.fileExists(atPath: store), "\(label): stopped, yet a store is in place")
            }
            #expect(workspace.leftovers().isEmpty, "\(label): left behind \(workspace.leftovers())")
        }
        #expect(stopped > 0, "no run was stopped by the signal: the import takes \(total) s")
    }

    @Test("export --output, interrupted: the file is whole or absent, and no partial file is left")
    func exportInterrupted() throws {
        let workspace = try Harness()
        let (store, _, _, _) = try Self.bigStore(in: workspace)
        let whole = try CLI.run("export", store).stdout
        let output = workspace.path("out.json")
        let arguments = ["export", store, "--output", output]
        let total = try Self.duration(arguments) { try? FileManager.default.removeItem(atPath: output) }
        var stopped = 0
        for fraction in [0.3, 0.5, 0.7, 0.9] {
            try? FileManager.default.removeItem(atPath: output)
            guard let (label, status) = try Self.interrupt(arguments, at: fraction, of: total, with: SIGINT) else { continue }
            if status == 0 {
                #expect(try String(contentsOfFile: output, encoding: .utf8) == whole, "\(label): exit 0, so the whole export")
            } else {
                stopped += 1
                #expect(!FileManager.default.fileExists(atPath: output), "\(label): stopped, yet the file is there")
            }
            #expect(workspace.leftovers().isEmpty, "\(label): left behind \(workspace.leftovers())")
            let partials = try FileManager.default.contentsOfDirectory(atPath: workspace.path(".")).filter { $0.contains(".partial-") }
            #expect(partials.isEmpty, "\(label): left \(partials)")
        }
        #expect(stopped > 0, "no run was stopped by the signal: the export takes \(total) s")
    }

    @Test("import, killed: a new store is absent or complete; an existing one has the old objects or all of them",
          arguments: durable)
    func importing(_ type: String) throws {
        let workspace = try Harness()
        let (model, data, more) = try Self.writeData(in: workspace)
        let store = workspace.path("store.\(type)")
        // Into a new store.
        let create = ["import", store, data, "--model", model]
        let newTotal = try Self.duration(create) { workspace.remove(prefix: "store."); workspace.remove(prefix: ".store.") }
        let complete = try CLI.run("export", store).stdout
        for delay in Self.delays(newTotal) {
            workspace.remove(prefix: "store.")
            workspace.remove(prefix: ".store.")
            try Self.run(create, killingAfter: delay)
            let label = "new \(type) killed at \(String(format: "%.3f", delay)) s"
            if FileManager.default.fileExists(atPath: store) {
                #expect(try CLI.run("export", store).stdout == complete, "\(label): the store is not complete")
                // Killed between moving the store into place and removing the staging's lock
                // file: that empty file is all it may leave, and the next write there sweeps it.
                let left = workspace.leftovers()
                if !left.isEmpty {
                    #expect(left.count == 1 && left[0].hasSuffix(".lock"), "\(label): left behind \(left)")
                    let swept = try CLI.run(["import", store, more])
                    #expect(swept.status == 0 && swept.stderr.contains("left by an interrupted run"), "\(label): \(swept.stderr)")
                }
            } else {
                let again = try CLI.run(create)
                #expect(again.status == 0, "\(label): the next run failed: \(again.stderr)")
                #expect(try CLI.run("export", store).stdout == complete, "\(label)")
            }
            #expect(workspace.leftovers().isEmpty, "\(label): left behind \(workspace.leftovers())")
        }
        // Into an existing store: all of the second document or none of it.
        let add = ["import", store, more]
        let addTotal = try Self.duration(add) {
            workspace.remove(prefix: "store.")
            let created = try CLI.run(create)
            #expect(created.status == 0)
        }
        let grown = try CLI.run("export", store).stdout
        for delay in Self.delays(addTotal) {
            workspace.remove(prefix: "store.")
            #expect(try CLI.run(create).status == 0)
            try Self.run(add, killingAfter: delay)
            let now = try CLI.run("export", store)
            #expect(now.status == 0 && [complete, grown].contains(now.stdout), "existing \(type) killed at \(String(format: "%.3f", delay)) s: half an import")
            #expect(try CLI.run("validate", store).status == 0)
        }
    }
}

/// A folder for one harness test, with what its checks need.
final class Harness {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appending(path: "objectstore-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appending(path: name).path }

    func write(_ text: String, to name: String) throws -> String {
        try Data(text.utf8).write(to: url.appending(path: name))
        return path(name)
    }

    var names: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted() }

    /// Every file's bytes, leaving out what readers may write by design: SQLite's -shm
    /// (an index of the WAL) and LMDB's -lock (its reader table), neither holding data.
    func snapshot(excludingVolatile: Bool) -> [String: Data] {
        var files: [String: Data] = [:]
        for name in names where !(excludingVolatile && (name.hasSuffix("-shm") || name.hasSuffix("-lock") || name.hasSuffix(".json"))) {
            files[name] = try? Data(contentsOf: url.appending(path: name))
        }
        return files
    }

    func remove(prefix: String) {
        for name in names where name.hasPrefix(prefix) { try? FileManager.default.removeItem(at: url.appending(path: name)) }
    }

    /// Files that belong to no store and no input: staged stores, temporary files.
    func leftovers() -> [String] {
        names.filter { $0.hasPrefix(".") || $0.contains("-tmp") || $0.contains(".partial") }
    }

    /// Commits one more change to a SQLite store and copies its files while the writer is
    /// still open: the store as a crash leaves it, the last commit only in its WAL.
    func leaveWALCommit(_ store: String) throws {
        let copy = url.appending(path: "wal-copy")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: copy) }
        let writer = try RawDatabase(URL(filePath: store), readOnly: false)
        try writer.execute("PRAGMA wal_autocheckpoint = 0; UPDATE ZSHELF SET ZNAME = 'renamed in the WAL' WHERE Z_PK = 1")
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: store + suffix, toPath: copy.appending(path: "s" + suffix).path)
        }
        writer.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store + suffix) }
        for suffix in ["", "-wal"] {
            try FileManager.default.moveItem(atPath: copy.appending(path: "s" + suffix).path, toPath: store + suffix)
        }
    }
}
