import Foundation
import Synchronization
import Testing
import TestSupport

/// `objectstore watch`, `history`, `update` and `delete` as a user runs them: a watch started on
/// a store prints what other processes save, and the history agrees with the data, also after
/// a batch delete is killed.
@Suite("Watching a store, its history and batch changes, from outside")
struct WatchTests {
    /// Lines a running process writes to a pipe, gathered as they come.
    final class Lines: @unchecked Sendable {
        private let lines = Mutex<[String]>([])
        private let partial = Mutex("")

        init(_ pipe: Pipe) {
            pipe.fileHandleForReading.readabilityHandler = { [self] handle in
                let data = handle.availableData
                guard !data.isEmpty else { handle.readabilityHandler = nil; return }
                let text = partial.withLock { partial in
                    partial += String(decoding: data, as: UTF8.self)
                    let parts = partial.split(separator: "\n", omittingEmptySubsequences: false)
                    partial = String(parts.last ?? "")
                    return parts.dropLast().map(String.init)
                }
                lines.withLock { $0 += text }
            }
        }

        var all: [String] { lines.withLock { $0 } }

        /// Waits until there are `count` lines, for at most `seconds`; returns how long it took.
        func wait(for count: Int, seconds: Double) -> Double? {
            let start = Date()
            while Date().timeIntervalSince(start) < seconds {
                if all.count >= count { return Date().timeIntervalSince(start) }
                usleep(5_000)
            }
            return nil
        }
    }

    static let stores = CLI.backends + ["postgresql"]

    func location(_ type: String, _ workspace: Harness) throws -> String {
        type == "postgresql" ? try PostgreSQLTestServer.location().absoluteString : workspace.path("watched.\(type)")
    }

    /// The JSON objects of some lines.
    func objects(_ lines: [String]) throws -> [[String: Any]] {
        try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    @Test("a watch prints another process's import, update and delete within 2 s; history lists them by author, --since and --delete-through work",
          arguments: stores)
    func watch(_ type: String) throws {
        let workspace = try Harness()
        let model = try workspace.write(TwoProcessTests.model, to: "model.json")
        let store = try location(type, workspace)
        defer { if type == "postgresql" { _ = try? CLI.run("destroy", store) } }
        let base = try CLI.run("import", store, try workspace.write(TwoProcessTests.document("a-", 20), to: "a.json"), "--model", model, "--author", "setup")
        #expect(base.status == 0, "\(base.stderr)")

        let watcher = try TwoProcessTests.start(["watch", store, "--json"])
        defer {
            // SIGTERM, as a user stops it; it must end by it.
            watcher.0.terminate()
            let deadline = Date().addingTimeInterval(5)
            while watcher.0.isRunning && Date() < deadline { usleep(10_000) }
            #expect(!watcher.0.isRunning, "watch did not end on SIGTERM")
            if watcher.0.isRunning { kill(watcher.0.processIdentifier, SIGKILL) }
            watcher.0.waitUntilExit()
        }
        let out = Lines(watcher.1), err = Lines(watcher.2)
        #expect(err.wait(for: 1, seconds: 10) != nil, "the watch says when it is ready")

        var delays: [Double] = []
        let imported = try CLI.run("import", store, try workspace.write(TwoProcessTests.document("b-", 5), to: "b.json"), "--author", "importer")
        #expect(imported.status == 0, "\(imported.stderr)")
        delays.append(out.wait(for: 1, seconds: 10) ?? .infinity)
        let updated = try CLI.run("update", store, "--entity", "Book", "--where", "title BEGINSWITH 'a- 1'", "--set", "title=renamed", "--author", "updater")
        #expect(updated.stdout == "updated 11\n", "\(updated.stdout)\(updated.stderr)")   // a- 1, a- 10 … a- 19
        delays.append(out.wait(for: 2, seconds: 10) ?? .infinity)
        let deleted = try CLI.run("delete", store, "--entity", "Shelf", "--where", "name == 'b- shelf 0'", "--author", "deleter")
        #expect(deleted.stdout == "deleted 1\n", "\(deleted.stdout)\(deleted.stderr)")
        delays.append(out.wait(for: 3, seconds: 10) ?? .infinity)
        #expect(delays.allSatisfy { $0 < 2 }, "seconds from each command's exit to its line: \(delays)")

        let lines = try objects(out.all)
        #expect(lines.map { $0["author"] as? String } == ["importer", "updater", "deleter"])
        guard lines.count == 3 else { return }
        #expect((lines[0]["inserted"] as? [String])?.count == 15)   // 10 shelves, 5 books
        #expect((lines[1]["updated"] as? [String])?.count == 11)
        #expect((lines[1]["updatedProperties"] as? [String: [String]])?.values.allSatisfy { $0 == ["title"] } == true)
        // The shelf deleted, and its book (b- 0) taken off it: the ids the export gives them.
        let export = try #require(try JSONSerialization.jsonObject(with: Data(try CLI.run("export", store).stdout.utf8)) as? [String: [[String: Any]]])
        let shelfIDs = Set((export["Shelf"] ?? []).compactMap { $0["_id"] as? String })
        let deletedIDs = try #require(lines[2]["deleted"] as? [String])
        #expect(deletedIDs.count == 1 && !shelfIDs.contains(deletedIDs[0]) && shelfIDs.count == 19)
        let unshelved = (export["Book"] ?? []).filter { $0["shelf"] is NSNull }.compactMap { $0["_id"] as? String }
        #expect(lines[2]["updated"] as? [String] == unshelved && unshelved.count == 1)

        // history: in order, by author, after a token, and deleted through one.
        let history = try objects(try CLI.run("history", store, "--json").stdout.split(separator: "\n").map(String.init))
        #expect(history.map { $0["author"] as? String } == ["setup", "importer", "updater", "deleter"])
        let tokens = history.compactMap { $0["token"] as? Int }
        #expect(tokens == tokens.sorted() && Set(tokens).count == 4)
        #expect(try CLI.run("history", store, "--author", "updater").stdout.split(separator: "\n").count == 1)
        #expect(try CLI.run("history", store, "--since", String(tokens[1])).stdout.split(separator: "\n").count == 2)
        let pruned = try CLI.run("history", store, "--delete-through", String(tokens[1]))
        #expect(pruned.stdout == "deleted 2 transactions\n", "\(pruned.stdout)\(pruned.stderr)")
        let left = try objects(try CLI.run("history", store, "--json").stdout.split(separator: "\n").map(String.init))
        #expect(left.compactMap { $0["token"] as? Int } == Array(tokens[2...]))
    }

    @Test("a watch ends, saying why, when its store is destroyed; --since refuses a token the store never gave", arguments: stores)
    func storeGoes(_ type: String) throws {
        let workspace = try Harness()
        let model = try workspace.write(TwoProcessTests.model, to: "model.json")
        let store = try location(type, workspace)
        defer { if type == "postgresql" { _ = try? CLI.run("destroy", store) } }
        #expect(try CLI.run("import", store, try workspace.write(TwoProcessTests.document("a-", 5), to: "a.json"), "--model", model).status == 0)
        let ahead = try CLI.run("watch", store, "--since", "99")
        #expect(ahead.status != 0 && ahead.stderr.contains("newest transaction is 1"), "\(ahead.stderr)")
        #expect(try CLI.run("history", store, "--since", "-1").status != 0)
        let watcher = try TwoProcessTests.start(["watch", store])
        let err = Lines(watcher.2)
        #expect(err.wait(for: 1, seconds: 10) != nil)
        #expect(try CLI.run("destroy", store).status == 0)
        let deadline = Date().addingTimeInterval(10)
        while watcher.0.isRunning && Date() < deadline { usleep(10_000) }
        if watcher.0.isRunning { kill(watcher.0.processIdentifier, SIGKILL) }
        watcher.0.waitUntilExit()
        // A file store is found replaced; a server store's schema is gone, which its next read says.
        _ = err.wait(for: 2, seconds: 5)   // the last line may still be in the pipe when the process is gone
        let said = err.all.joined(separator: "\n")
        #expect(watcher.0.terminationStatus == 1 && said.contains("objectstore:"), "\(watcher.0.terminationStatus): \(said)")
        if type != "postgresql" { #expect(said.contains("destroyed or replaced"), "\(said)") }
    }

    @Test("kill -9 during a batch delete: the books are all there and no delete is recorded, or the recorded delete names exactly the books that went",
          arguments: CLI.backends)
    func killedBatchDelete(_ type: String) throws {
        let workspace = try Harness()
        let model = try workspace.write(TwoProcessTests.model, to: "model.json")
        let document = try workspace.write(TwoProcessTests.document("k-", 20_000), to: "k.json")
        var outcomes: Set<String> = []
        for (round, delay) in [20_000, 80_000, 200_000, 600_000].enumerated() {
            let store = workspace.path("killed\(round).\(type)")
            #expect(try CLI.run("import", store, document, "--model", model).status == 0)
            let before = Set(try ids(store, "Book"))
            let deleter = try TwoProcessTests.start(["delete", store, "--entity", "Book", "--where", "title ENDSWITH '7'", "--author", "killed"])
            usleep(useconds_t(delay))
            kill(deleter.0.processIdentifier, SIGKILL)
            let result = TwoProcessTests.finish(deleter)
            let after = Set(try ids(store, "Book"))
            let recorded = try objects(try CLI.run("history", store, "--author", "killed", "--json").stdout.split(separator: "\n").map(String.init))
            if after == before {
                #expect(recorded.isEmpty, "nothing deleted, yet history says: \(recorded.count) transactions")
                outcomes.insert(result.signaled ? "killed before commit" : "finished?")
            } else {
                #expect(recorded.count == 1)
                #expect(Set(recorded.first?["deleted"] as? [String] ?? []) == before.subtracting(after))
                #expect(before.subtracting(after).count == 2_000)
                outcomes.insert("committed")
            }
            let validate = try CLI.run("validate", store)
            #expect(validate.status == 0, "\(validate.stdout)\(validate.stderr)")
        }
        #expect(!outcomes.isEmpty)
    }

    func ids(_ store: String, _ entity: String) throws -> [String] {
        let export = try CLI.run("export", store, "--entity", entity)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [String: [[String: Any]]])
        return (document[entity] ?? []).compactMap { $0["_id"] as? String }
    }
}
