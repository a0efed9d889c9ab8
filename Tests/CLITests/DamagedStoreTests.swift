import Foundation
import Testing
import TestSupport

/// Bytes flipped anywhere in a store: the tool reads it, or fails with an error; it never crashes.
/// (`scripts/reliability.sh` runs the same with thousands of damages.)
@Suite("objectstore: damaged stores never crash it")
struct DamagedStoreTests {
    static let count = Int(ProcessInfo.processInfo.environment["OBJECTSTORE_DAMAGES"] ?? "") ?? 40

    @Test("random damage to every page, for every backend", arguments: CLI.backends)
    func damages(_ type: String) throws {
        let workspace = try Workspace()
        let model = try workspace.write(LosslessData.modelJSON, to: "model.json")
        let data = try workspace.write(try LosslessData.json(LosslessData.document()), to: "data.json")
        let store = workspace.url.appending(path: "good.\(type)")
        #expect(try CLI.run("import", store.path, data, "--model", model).status == 0)
        if type == "sqlite" { #expect(try CLI.run("checkpoint", store.path).status == 0) }
        let good = try Data(contentsOf: store)
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
            for command in [["validate", damaged.path, "--deep"], ["export", damaged.path]] {
                let result = try CLI.run(command)
                #expect(!result.signaled, "\(type) round \(round): \(command[0]) crashed (\(result.status)): \(result.stderr)")
                #expect(result.status == 0 || result.status == 1, "\(type) round \(round): \(command[0]) exited \(result.status)")
                // An error is one line on stderr; validate's findings are lines on stdout.
                if result.status == 1 {
                    #expect(result.stderr.hasPrefix("objectstore: ") || (command[0] == "validate" && !result.stdout.isEmpty), "\(result.stderr)")
                }
                outcomes[result.status, default: 0] += 1
            }
            try? FileManager.default.removeItem(at: damaged)
            try? FileManager.default.removeItem(atPath: damaged.path + "-lock")
        }
        #expect(outcomes.values.reduce(0, +) == 2 * Self.count)
        print("damaged \(type) stores: \(Self.count) damages, \(outcomes[0] ?? 0) commands read them, \(outcomes[1] ?? 0) reported an error")
    }
}
