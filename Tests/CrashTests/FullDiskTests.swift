import Foundation
import Testing
import TestSupport

/// A file system that fills up in the middle of a write: a typed error, the old store whole,
/// no partial store, nothing left behind. Runs where the machine lets the test mount a small
/// tmpfs (root with CAP_SYS_ADMIN); elsewhere it is skipped, and says why.
@Suite("A full disk")
struct FullDiskTests {
    /// A small tmpfs of `kilobytes`, mounted for the duration of `body`.
    static func withSmallFileSystem(kilobytes: Int, _ body: (URL) throws -> Void) throws {
        let point = FileManager.default.temporaryDirectory.appending(path: "objectstore-full-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: point, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: point) }
        guard mount("tmpfs", point.path, "tmpfs", 0, "size=\(kilobytes)k,mode=0755") == 0 else {
            throw CocoaError(.fileWriteNoPermission)
        }
        defer { umount(point.path) }
        try body(point)
    }

    static let canMount: Bool = (try? withSmallFileSystem(kilobytes: 64) { _ in }) != nil

    /// The last line of a failed command's standard error (progress lines come before it).
    static func lastLine(_ text: String) -> String {
        text.split(separator: "\n").last.map(String.init) ?? ""
    }

    @Test("convert and import onto a full disk fail cleanly, for every backend", .enabled(if: canMount, "cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)"),
          arguments: CLI.backends)
    func fullDisk(_ type: String) throws {
        let workspace = try Harness()
        let model = try workspace.write(LosslessData.modelJSON, to: "model.json")
        var big = LosslessData.document()
        // Enough text that the store is a few hundred KiB.
        big["Post"] = big["Post"]!.map { post in
            var post = post
            post["note"] = String(repeating: "full disk ", count: 1_000)
            return post
        }
        let data = try workspace.write(try LosslessData.json(big), to: "data.json")
        let source = workspace.path("source.sqlite")
        #expect(try CLI.run("import", source, data, "--model", model).status == 0)
        let expected = try CLI.run("export", source).stdout
        // The file systems are sized against what the converted store takes on an ample disk.
        let ample = workspace.path("ample.\(type)")
        #expect(try CLI.run("convert", source, ample).status == 0)
        let needed = workspace.names.filter { $0.hasPrefix("ample.") }
            .map { (try? FileManager.default.attributesOfItem(atPath: workspace.path($0))[.size] as? Int) ?? 0 }
            .reduce(0, +) / 1024
        var failures = 0
        for size in [needed / 4, needed / 2, needed * 3 / 4, needed - 16].map({ max($0, 64) }) {
            try Self.withSmallFileSystem(kilobytes: size) { disk in
                let destination = disk.appending(path: "converted.\(type)").path
                let converted = try CLI.run("convert", source, destination)
                let label = "\(type) on \(size) of \(needed) KiB"
                #expect(!converted.signaled, "\(label): the convert crashed")
                if converted.status == 0 {
                    #expect(try CLI.run("export", destination).stdout == expected, "\(label): a convert that succeeded is incomplete")
                } else {
                    failures += 1
                    let error = Self.lastLine(converted.stderr)
                    #expect(error.hasPrefix("objectstore: ") && (error.contains("full") || error.contains("No space left")), "\(label): \(converted.stderr)")
                    let left = (try? FileManager.default.contentsOfDirectory(atPath: disk.path)) ?? []
                    #expect(left.isEmpty, "\(label): left behind \(left)")
                }
                // An existing store that a second import does not fit: the store as it was.
                let store = disk.appending(path: "grown.\(type)").path
                let small = try workspace.write(#"{"Tag": [{"_id": "Tag/1", "label": "first"}]}"#, to: "small.json")
                guard try CLI.run("import", store, small, "--model", model).status == 0 else { return }
                let before = try CLI.run("export", store).stdout
                let grown = try CLI.run("import", store, data)
                #expect(!grown.signaled, "\(label): the import crashed")
                if grown.status != 0 {
                    #expect(Self.lastLine(grown.stderr).hasPrefix("objectstore: "), "\(label): \(grown.stderr)")
                    let after = try CLI.run("export", store)
                    #expect(after.status == 0 && after.stdout == before, "\(label): a failed import changed the store: \(after.stderr)")
                    #expect(try CLI.run("validate", store).status == 0, "\(label)")
                }
            }
        }
        #expect(failures > 0, "no size was small enough to fill up: the test tested nothing")
    }

    @Test("a disk with no byte free: create, convert, import and a migration step onto it fail with the disk named full, never a SIGBUS, nothing left behind (LMDB maps its lock file)",
          .enabled(if: canMount, "cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)"), arguments: CLI.backends)
    func noByteFree(_ type: String) throws {
        let workspace = try Harness()
        // Two versions: a step from the first to the second copies the store (LMDB and atomic have no in-place step).
        for (name, extra) in [("Notes", ""), ("Notes 2", #"<attribute name="body" optional="YES" attributeType="String"/>"#)] {
            try FileManager.default.createDirectory(at: workspace.url.appending(path: "Notes.xcdatamodeld/\(name).xcdatamodel"), withIntermediateDirectories: true)
            _ = try workspace.write("""
                <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
                <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                    <entity name="Note"><attribute name="title" optional="YES" attributeType="String"/>\(extra)</entity>
                </model>
                """, to: "Notes.xcdatamodeld/\(name).xcdatamodel/contents")
        }
        let bundle = workspace.path("Notes.xcdatamodeld")
        let notes = (0..<500).map { #"{"_id": "n\#($0)", "title": "note \#($0) \#(String(repeating: "x", count: 100))"}"# }
        let data = try workspace.write(#"{"Note": [\#(notes.joined(separator: ", "))]}"#, to: "data.json")
        let source = workspace.path("source.sqlite")
        #expect(try CLI.run("import", source, data, "--model", bundle, "--model-version", "Notes").status == 0)
        try Self.withSmallFileSystem(kilobytes: 1_024) { disk in
            // A store that fits, then a file that takes every byte left.
            let store = disk.appending(path: "kept.\(type)").path
            #expect(try CLI.run("convert", source, store).status == 0)
            let before = try CLI.run("export", store).stdout
            let filler = disk.appending(path: "filler")
            #expect(FileManager.default.createFile(atPath: filler.path, contents: nil))
            let handle = try FileHandle(forWritingTo: filler)
            let chunk = Data(count: 4_096)
            while (try? handle.write(contentsOf: chunk)) != nil {}
            try? handle.close()
            let commands = [["create", disk.appending(path: "new.\(type)").path, "--model", bundle],
                            ["convert", source, disk.appending(path: "converted.\(type)").path],
                            ["import", disk.appending(path: "imported.\(type)").path, data, "--model", bundle],
                            ["migrate", store, "--model", bundle]]
            for command in commands {
                let result = try CLI.run(command)
                #expect(!result.signaled, "\(command[0]) \(type): a signal: \(result.stderr.prefix(300))")
                #expect(result.status == 1, "\(command[0]) \(type): \(result.stdout)")
                #expect(Self.lastLine(result.stderr).contains("full") || result.stderr.contains("No space left"), "\(command[0]) \(type): \(result.stderr)")
            }
            let left = Set((try? FileManager.default.contentsOfDirectory(atPath: disk.path)) ?? [])
            #expect(left.subtracting(["filler", "kept.\(type)", "kept.\(type)-lock", "kept.\(type)-wal", "kept.\(type)-shm"]).isEmpty,
                    "\(type): left behind \(left.sorted())")
            // With room again (SQLite cannot even read a WAL store without room for its -shm), the store as it was, and it migrates.
            try FileManager.default.removeItem(at: filler)
            #expect(try CLI.run("export", store).stdout == before)
            #expect(try CLI.run("migrate", store, "--model", bundle).status == 0)
        }
    }
}
