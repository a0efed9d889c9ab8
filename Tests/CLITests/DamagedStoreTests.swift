import Foundation
import Testing
import TestSupport

/// Bytes flipped anywhere in a store: the tool reads it, or fails with an error; it never
/// crashes, and what it reads is what the store held: an export that succeeds equals the
/// undamaged store's, or `validate --deep` says the store is damaged. The one damage no check
/// can see is a changed byte inside a SQLite value (SQLite, and Core Data's layout, keep no
/// checksums): such an export differs from the original in attribute values only.
/// (`scripts/reliability.sh` runs the same with thousands of damages.)
@Suite("objectstore: damaged stores never crash it")
struct DamagedStoreTests {
    static let count = Int(ProcessInfo.processInfo.environment["OBJECTSTORE_DAMAGES"] ?? "") ?? 40

    /// An export with every attribute value left out: its objects and the keys of their
    /// relationships (the names the model gives relationships), what is left when values may differ.
    static func structure(_ export: String) -> [String: [[String: String]]] {
        let relationships: Set<String> = ["color", "tags", "badge", "parent", "children", "siblings", "posts", "post"]
        guard let document = try? JSONSerialization.jsonObject(with: Data(export.utf8)) as? [String: [[String: Any]]] else { return [:] }
        return document.mapValues { objects in
            objects.map { object in
                var kept: [String: String] = ["_id": object["_id"] as? String ?? "?"]
                for (key, value) in object where relationships.contains(key) { kept[key] = "\(value)" }
                return kept
            }
        }
    }

    @Test("random damage to every page, for every backend", arguments: CLI.backends)
    func damages(_ type: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write(LosslessData.modelJSON, to: "model.json")
        let data = try workspace.write(try LosslessData.json(LosslessData.document()), to: "data.json")
        let store = workspace.url.appending(path: "good.\(type)")
        #expect(try CLI.run("import", store.path, data, "--model", model).status == 0)
        if type == "sqlite" { #expect(try CLI.run("checkpoint", store.path).status == 0) }
        let good = try Data(contentsOf: store)
        let original = try CLI.run("export", store.path).stdout
        var valueOnly = 0
        var state: UInt64 = 0xC0FFEE &+ UInt64(type.utf8.count)
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33)
        }
        var outcomes: [Int32: Int] = [:]
        for round in 0..<Self.count {
            var bad = good
            // One to eight bytes, or a run of up to 64, anywhere past the first 100 bytes (the headers have their own tests).
            if round % 3 == 0 {
                let start = 100 + next() % (bad.count - 164)
                for i in start..<start + 1 + next() % 64 { bad[i] = UInt8(truncatingIfNeeded: next()) }
            } else {
                for _ in 0..<(1 + next() % 8) { bad[100 + next() % (bad.count - 100)] ^= UInt8(1 + next() % 255) }
            }
            let damaged = workspace.url.appending(path: "damaged-\(round).\(type)")
            try bad.write(to: damaged)
            var results: [String: CLI.Result] = [:]
            for command in [["validate", damaged.path, "--deep"], ["export", damaged.path]] {
                let result = try CLI.run(command)
                results[command[0]] = result
                #expect(!result.signaled, "\(type) round \(round): \(command[0]) crashed (\(result.status)): \(result.stderr)")
                #expect(result.status == 0 || result.status == 1, "\(type) round \(round): \(command[0]) exited \(result.status)")
                // An error is one line on stderr; validate's findings are lines on stdout.
                if result.status == 1 {
                    #expect(result.stderr.hasPrefix("objectstore: ") || (command[0] == "validate" && !result.stdout.isEmpty), "\(result.stderr)")
                }
                outcomes[result.status, default: 0] += 1
            }
            // What a read gives without a word is what the store held, or validate --deep says otherwise.
            if let export = results["export"], export.status == 0, export.stdout != original, results["validate"]?.status == 0 {
                if type == "sqlite" {
                    #expect(Self.structure(export.stdout) == Self.structure(original),
                            "sqlite round \(round): objects or relationships changed, and validate --deep saw nothing")
                    valueOnly += 1
                } else {
                    Issue.record("\(type) round \(round): the export differs from the store's, and validate --deep saw nothing")
                }
            }
            try? FileManager.default.removeItem(at: damaged)
            try? FileManager.default.removeItem(atPath: damaged.path + "-lock")
        }
        #expect(outcomes.values.reduce(0, +) == 2 * Self.count)
        print("damaged \(type) stores: \(Self.count) damages, \(outcomes[0] ?? 0) commands read them, \(outcomes[1] ?? 0) reported an error, "
              + "\(valueOnly) changed a value no check sees")
    }

    @Test("a damaged -wal: every committed transaction read, or an error saying which frame; only a damaged last transaction, which a torn write looks like, may go without a word")
    func damagedLog() throws {
        let workspace = try Workspace()
        let model = try workspace.write(LosslessData.modelJSON, to: "model.json")
        let data = try workspace.write(try LosslessData.json(LosslessData.document()), to: "data.json")
        let store = workspace.url.appending(path: "good.sqlite")
        #expect(try CLI.run("import", store.path, data, "--model", model).status == 0)
        #expect(try CLI.run("checkpoint", store.path).status == 0)
        // Ten transactions committed into the -wal, one tag each, copied as a crash leaves them.
        let logged = workspace.url.appending(path: "logged.sqlite")
        do {
            let db = try RawDatabase(store, readOnly: false)
            try db.execute("PRAGMA journal_mode = WAL")
            try db.execute("PRAGMA wal_autocheckpoint = 0")
            let entity = try db.strings("SELECT Z_ENT, Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Tag'")[0]
            for i in 1...10 {
                let key = Int(entity[1])! + i
                try db.execute("BEGIN; INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZLABEL) VALUES (\(key), \(entity[0]), 1, 'logged \(i)'); "
                               + "UPDATE Z_PRIMARYKEY SET Z_MAX = \(key) WHERE Z_NAME = 'Tag'; COMMIT")
            }
            try FileManager.default.copyItem(at: store, to: logged)
            try FileManager.default.copyItem(atPath: store.path + "-wal", toPath: logged.path + "-wal")
            db.close()
        }
        let main = try Data(contentsOf: logged), wal = try Data(contentsOf: URL(filePath: logged.path + "-wal"))
        // The WAL's own layout, read here: page size, then each frame's commit field.
        let pageSize = Int(wal[8]) << 24 | Int(wal[9]) << 16 | Int(wal[10]) << 8 | Int(wal[11])
        let frameSize = 24 + pageSize
        let commits = (0..<(wal.count - 32) / frameSize).filter { i in wal[32 + i * frameSize + 4 ..< 32 + i * frameSize + 8].contains { $0 != 0 } }
        #expect(commits.count >= 10)
        let lastTransaction = 32 + (commits[commits.count - 2] + 1) * frameSize
        let undamaged = try CLI.run("export", logged.path)
        #expect((1...10).allSatisfy { undamaged.stdout.contains("\"logged \($0)\"") }, "the -wal's transactions are read")
        var generator = SeededGenerator(state: 0xBAD_106)
        var refused = 0
        // First the low bit of each header byte (the magic's low bit gives the checksums' byte
        // order: flipped, SQLite ignores the whole -wal), then bytes changed at random.
        for round in 0..<(32 + Self.count) {
            var bad = wal
            var places: [Int] = []
            if round < 32 {
                bad[round] ^= 1
                places.append(round)
            }
            for _ in 0..<(round < 32 ? 0 : Int.random(in: 1...8, using: &generator)) {
                let at = Int.random(in: 0..<bad.count, using: &generator)
                bad[at] ^= UInt8.random(in: 1...255, using: &generator)
                places.append(at)
            }
            let damaged = workspace.url.appending(path: "damaged.sqlite")
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: damaged.path + suffix) }
            try main.write(to: damaged)
            try bad.write(to: URL(filePath: damaged.path + "-wal"))
            let export = try CLI.run("export", damaged.path)
            #expect(!export.signaled)
            if export.status != 0 {
                refused += 1
                #expect(export.stderr.contains("-wal is damaged") || export.stderr.contains("objectstore: "), "round \(round): \(export.stderr)")
                // Left as it was: the damaged -wal is not folded in nor removed.
                #expect(try Data(contentsOf: URL(filePath: damaged.path + "-wal")) == bad, "round \(round)")
                continue
            }
            let read = (1...10).filter { export.stdout.contains("\"logged \($0)\"") }
            if read.count < 10 {
                #expect(read == Array(1...9) && places.allSatisfy { $0 >= lastTransaction },
                        "round \(round): transactions \(Set(1...10).subtracting(read).sorted()) dropped without a word (damage at \(places.sorted()))")
            }
        }
        #expect(refused > 0)
    }
}
