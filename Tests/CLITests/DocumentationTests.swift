import Foundation
import Testing
import TestSupport

/// The shell blocks of README.md and docs/*.md, run as written: a `sh` block must exit 0, a
/// `console` block is a transcript (`$ command`, then exactly what it prints, stdout and stderr
/// in order; a line `…` stands for any lines). Each file runs in a folder of its own holding a
/// copy of `Examples/`, with `objectstore` (and `.build/release/objectstore`) the tool as built
/// and `$PG` the URL of the tests' PostgreSQL server. What is not run, and why:
///
/// - the parts of a command line that set the machine up — `apt-get …`, `swift build …`,
///   `swift test` — which `.ci/run` itself does before this test runs;
/// - a block after the comment `<!-- docs-test: not run: <why> -->`.
///
/// Every fenced block says its language; commands outside `sh` and `console` blocks (a
/// synopsis with placeholders is `text`) would not be run, so a block that starts a line with
/// `$ objectstore` must be a `console` block.
@Suite("The docs run as written")
struct DocumentationTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var files: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: root.appending(path: "docs").path)) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }

    struct Block {
        var line: Int
        var language: String
        var text: String
        /// Why it is not run, when a `docs-test: not run` comment precedes it.
        var skipped: String?
    }

    static func blocks(of file: String) throws -> [Block] {
        let lines = try String(contentsOf: root.appending(path: file), encoding: .utf8).components(separatedBy: "\n")
        var blocks: [Block] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            guard line.hasPrefix("```") else { index += 1; continue }
            let language = String(line.dropFirst(3)).trimmingCharacters(in: .whitespaces)
            var body: [String] = []
            var end = index + 1
            while end < lines.count && !lines[end].hasPrefix("```") { body.append(lines[end]); end += 1 }
            let before = lines[..<index].last { !$0.trimmingCharacters(in: .whitespaces).isEmpty } ?? ""
            let skipped = before.hasPrefix("<!-- docs-test: not run:") ? String(before.dropFirst(24).dropLast(4)).trimmingCharacters(in: .whitespaces) : nil
            blocks.append(Block(line: index + 1, language: language, text: body.joined(separator: "\n"), skipped: skipped))
            index = end + 1
        }
        return blocks
    }

    @Test("every fenced block names its language, and every transcript is a console block", arguments: files)
    func languages(_ file: String) throws {
        for block in try Self.blocks(of: file) {
            #expect(!block.language.isEmpty, "\(file):\(block.line): a fenced block without a language")
            if block.text.components(separatedBy: "\n").contains(where: { $0.hasPrefix("$ ") }) {
                #expect(block.language == "console", "\(file):\(block.line): a transcript is a console block, run by this test")
            }
        }
    }

    /// What of a `sh` line runs here: without the set-up commands CI has run already.
    static func runnable(_ line: String) -> String {
        line.components(separatedBy: " && ").filter { part in
            !["apt-get ", "swift build", "swift test"].contains { part.trimmingCharacters(in: .whitespaces).hasPrefix($0) }
        }.joined(separator: " && ")
    }

    /// Runs `script` with bash in `folder`; its status and its stdout and stderr as one text, in order.
    static func bash(_ script: String, in folder: URL, environment: [String: String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(filePath: "/bin/bash")
        process.arguments = ["-c", "exec 2>&1\n" + script]
        process.currentDirectoryURL = folder
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Whether `output` is what `expected` says (a line `…` matches any lines).
    static func matches(_ output: [String], _ expected: [String]) -> Bool {
        guard let first = expected.first else { return output.isEmpty }
        if first == "…" { return (0...output.count).contains { matches(Array(output.dropFirst($0)), Array(expected.dropFirst())) } }
        return output.first == first && matches(Array(output.dropFirst()), Array(expected.dropFirst()))
    }

    @Test("each file's sh and console blocks run in order and do what they say", arguments: files)
    func run(_ file: String) throws {
        let blocks = try Self.blocks(of: file).filter { ["sh", "console"].contains($0.language) }
        guard !blocks.isEmpty else { return }
        let folder = FileManager.default.temporaryDirectory.appending(path: "objectstore-docs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let bin = folder.appending(path: "bin"), release = folder.appending(path: ".build/release")
        for path in [bin, release] { try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true) }
        try FileManager.default.copyItem(at: Self.root.appending(path: "Examples"), to: folder.appending(path: "Examples"))
        for path in [bin, release] { try FileManager.default.createSymbolicLink(at: path.appending(path: "objectstore"), withDestinationURL: CLI.binary) }
        var environment = ["PATH": bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]
        let everything = blocks.map(\.text).joined(separator: "\n")
        if everything.contains("$PG") {
            environment["PG"] = "postgresql://postgres@/postgres?host=\(try PostgreSQLTestServer.socketDirectory())"
            // The schemas the file's commands name start empty (an earlier run of this test left them).
            for schema in Set(everything.matches(of: /schema=([a-z_]+)/).map { String($0.output.1) }) {
                _ = try PostgreSQLTestServer.psql("DROP SCHEMA IF EXISTS \(schema) CASCADE")
            }
        }
        for block in blocks where block.skipped == nil {
            if block.language == "sh" {
                let script = block.text.components(separatedBy: "\n").map(Self.runnable).joined(separator: "\n")
                let (status, output) = try Self.bash("set -e -o pipefail\n" + script, in: folder, environment: environment)
                #expect(status == 0, "\(file):\(block.line): exit \(status)\n\(script)\n\(output)")
                continue
            }
            // A transcript: each command, then what it prints.
            var steps: [(command: String, expected: [String])] = []
            for line in block.text.components(separatedBy: "\n") {
                if line.hasPrefix("$ ") { steps.append((String(line.dropFirst(2)), [])) } else if !steps.isEmpty { steps[steps.count - 1].expected.append(line) }
            }
            for step in steps {
                let (_, output) = try Self.bash(step.command, in: folder, environment: environment)
                var lines = output.components(separatedBy: "\n")
                if lines.last == "" { lines.removeLast() }
                #expect(Self.matches(lines, step.expected),
                        "\(file):\(block.line): $ \(step.command)\nexpected:\n\(step.expected.joined(separator: "\n"))\ngot:\n\(output)")
            }
        }
        for block in blocks where block.skipped != nil {
            #expect(!block.skipped!.isEmpty, "\(file):\(block.line): a block not run says why")
        }
    }
}
