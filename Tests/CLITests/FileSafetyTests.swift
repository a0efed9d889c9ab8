import Foundation
import Testing
import TestSupport

/// The tool never replaces, truncates or re-types a file it should not, whatever path it is given.
@Suite("objectstore: files kept safe")
struct FileSafetyTests {
    func library(_ workspace: Workspace, _ name: String = "lib.sqlite") throws -> String {
        let model = try workspace.write(LosslessData.modelJSON, to: "model.json")
        let data = try workspace.write(try LosslessData.json(LosslessData.document()), to: "data.json")
        let store = workspace.url.appending(path: name).path
        let result = try CLI.run("import", store, data, "--model", model)
        #expect(result.status == 0, "\(result.stderr)")
        return store
    }

    func files(_ workspace: Workspace) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: workspace.url.path)) ?? []).sorted()
    }

    @Test("export --output onto the store itself is refused, under any spelling")
    func exportOntoItself() throws {
        let workspace = try Workspace()
        let store = try library(workspace)
        let link = workspace.url.appending(path: "link.json").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: store)
        let before = try Data(contentsOf: URL(filePath: store))
        for target in [store, link, workspace.url.appending(path: "./lib.sqlite").path, store + "-wal"] {
            let result = try CLI.run("export", store, "--output", target)
            #expect(result.status == 1, "\(target)")
            #expect(result.stderr.contains("that is the store being exported"), "\(result.stderr)")
        }
        #expect(try Data(contentsOf: URL(filePath: store)) == before)
        #expect(try CLI.run("validate", store).status == 0)
    }

    @Test("export --output through a link writes the file it names; into a FIFO, in place; a full device fails cleanly")
    func exportTargets() throws {
        let workspace = try Workspace()
        let store = try library(workspace)
        let real = workspace.url.appending(path: "real.json").path, link = workspace.url.appending(path: "link.json").path
        try Data("old".utf8).write(to: URL(filePath: real))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: real)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        #expect(try CLI.run("export", store, "--output", link).status == 0)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == real, "the link stays a link")
        #expect(try String(contentsOfFile: real, encoding: .utf8).hasPrefix("{"))
        #expect((try FileManager.default.attributesOfItem(atPath: real)[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        let fifo = workspace.url.appending(path: "pipe").path
        #expect(mkfifo(fifo, 0o644) == 0)
        let reader = Thread { _ = FileHandle(forReadingAtPath: fifo)?.readDataToEndOfFile() }
        reader.start()
        let piped = try CLI.run("export", store, "--output", fifo)
        #expect(piped.status == 0, "\(piped.stderr)")
        var info = stat()
        #expect(stat(fifo, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO, "the FIFO is still a FIFO")

        if FileManager.default.fileExists(atPath: "/dev/full") {
            let full = try CLI.run("export", store, "--output", "/dev/full")
            #expect(full.status == 1, "\(full.stderr)")
            #expect(full.stderr.hasPrefix("objectstore: /dev/full: cannot be written"), "\(full.stderr)")
            #expect(stat("/dev/full", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR, "/dev/full is still a device")
        }
        #expect(!files(workspace).contains { $0.contains(".partial") }, "\(files(workspace))")
    }

    @Test("convert refuses to write over its own source, under any spelling")
    func convertOntoItself() throws {
        let workspace = try Workspace()
        let store = try library(workspace)
        let before = try Data(contentsOf: URL(filePath: store))
        let folderLink = workspace.url.appending(path: "again").path
        try FileManager.default.createSymbolicLink(atPath: folderLink, withDestinationPath: workspace.url.path)
        let hard = workspace.url.appending(path: "hard.sqlite").path
        try FileManager.default.linkItem(atPath: store, toPath: hard)
        for target in [store, store + "/", "\(folderLink)/lib.sqlite", hard] {
            let result = try CLI.run("convert", store, target, "--force")
            #expect(result.status == 1, "\(target)")
            #expect(result.stderr.contains("the destination is the source"), "\(target): \(result.stderr)")
        }
        #expect(try Data(contentsOf: URL(filePath: store)) == before)
    }

    @Test("convert of a source that cannot be opened (another model) fails before anything is made beside the destination", arguments: CLI.backends)
    func unreadableSourceLeavesNothing(_ type: String) throws {
        let workspace = try Workspace()
        let store = try library(workspace)
        let other = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "Examples/Blog.xcdatamodeld").path
        let before = files(workspace)
        let result = try CLI.run("convert", store, workspace.url.appending(path: "out.\(type)").path, "--model", other, "--model-version", "Blog 3")
        #expect(result.status == 1 && result.stderr.contains("another model"), "\(result.stderr)")
        #expect(files(workspace) == before, "nothing left beside the destination, no lock file")
    }

    @Test("destroy and create sweep what an interrupted run left beside the store, and say so; destroy does so also when no store got in place", arguments: CLI.backends)
    func destroyAndCreateSweep(_ type: String) throws {
        let workspace = try Workspace()
        let store = try library(workspace)
        let name = "kept.\(type)"
        let target = workspace.url.appending(path: name).path
        #expect(try CLI.run("convert", store, target).status == 0)
        // What a killed import leaves: a staged store (here a copy of a real one) without a live lock.
        func leaveStaged() throws -> String {
            let staged = ".\(name).importing-\(UUID().uuidString)"
            try FileManager.default.copyItem(atPath: store, toPath: workspace.url.appending(path: staged).path)
            return staged
        }
        var staged = try leaveStaged()
        let destroyed = try CLI.run("destroy", target)
        #expect(destroyed.status == 0 && destroyed.stderr.contains("removed \(staged)"), "\(destroyed.stderr)")
        #expect(files(workspace).filter { $0.contains(name) }.isEmpty, "\(files(workspace))")
        // No store in place, only what the killed run left: destroy says there is no store, and sweeps.
        staged = try leaveStaged()
        let nothing = try CLI.run("destroy", target)
        #expect(nothing.status == 1 && nothing.stderr.contains("removed \(staged)"), "\(nothing.stderr)")
        #expect(files(workspace).filter { $0.contains(".\(name).") }.isEmpty, "\(files(workspace))")
        // create sweeps too.
        staged = try leaveStaged()
        let model = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "Examples/Library.xcdatamodeld").path
        let created = try CLI.run("create", target, "--model", model)
        #expect(created.status == 0 && created.stderr.contains("removed \(staged)"), "\(created.stderr)")
        #expect(!files(workspace).contains(where: { $0.hasPrefix(".\(name).importing-") }), "\(files(workspace))")
    }

    @Test("convert --force keeps the destination's mode", arguments: CLI.backends)
    func convertKeepsMode(_ type: String) throws {
        let workspace = try Workspace()
        let store = try library(workspace)
        let destination = workspace.url.appending(path: "private.\(type)").path
        #expect(try CLI.run("convert", store, destination).status == 0)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: destination)
        #expect(try CLI.run("convert", store, destination, "--force").status == 0)
        #expect((try FileManager.default.attributesOfItem(atPath: destination)[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test("convert --force onto a folder or a file that is no store is refused at once, before any object is converted; the file kept", arguments: CLI.backends)
    func forceOntoNonStore(_ type: String) throws {
        let workspace = try Workspace()
        let store = try library(workspace)
        let folder = workspace.url.appending(path: "folder.\(type)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let text = try workspace.write("my notes", to: "notes.\(type)")
        // Files that only begin like a store: another program's SQLite database, a SQLite header
        // followed by text, a store type's magic followed by text.
        let database = workspace.url.appending(path: "theirs.\(type)")
        let theirs = try RawDatabase(database, readOnly: false, create: true)
        try theirs.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
        theirs.close()
        let fakeSQLite = try workspace.write("SQLite format 3\0 and then my notes", to: "fake-sqlite.\(type)")
        let fakeAtomic = try workspace.write("OBJSTORE is the name of my diary", to: "diary.\(type)")
        let kept = try [database.path, fakeSQLite, fakeAtomic].map { ($0, try Data(contentsOf: URL(filePath: $0))) }
        for destination in [folder.path, text] + kept.map(\.0) {
            let result = try CLI.run("convert", store, destination, "--force")
            #expect(result.status == 1 && result.stderr.contains("--force replaces only a store"), "\(destination): \(result.stderr)")
            // Refused before converting: no progress line, no staged store left.
            #expect(!result.stderr.contains("create objects"), "\(result.stderr)")
        }
        #expect((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) == [])
        #expect(try String(contentsOfFile: text, encoding: .utf8) == "my notes")
        for (file, bytes) in kept { #expect(try Data(contentsOf: URL(filePath: file)) == bytes, "\(file) changed") }
        #expect(try RawDatabase(database).strings("SELECT x FROM t") == [["1"]])
        #expect(files(workspace).allSatisfy { !$0.contains(".converting-") })
    }

    @Test("new stores and exports follow the umask (077: owner only), as any new file", arguments: CLI.backends)
    func umask(_ type: String) throws {
        let workspace = try Workspace()
        let store = try library(workspace)
        let tool = CLI.binary.path
        let script = """
            umask 077 && "\(tool)" convert "\(store)" converted.\(type) && "\(tool)" create created.\(type) --model model.json \
              && "\(tool)" import imported.\(type) data.json --model model.json && "\(tool)" export imported.\(type) --output export.json
            """
        let shell = Process()
        shell.executableURL = URL(filePath: "/bin/sh")
        shell.arguments = ["-c", script]
        shell.currentDirectoryURL = workspace.url
        shell.standardOutput = FileHandle.nullDevice
        try shell.run()
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0)
        for name in ["converted.\(type)", "created.\(type)", "imported.\(type)", "export.json"] {
            let mode = (try FileManager.default.attributesOfItem(atPath: workspace.url.appending(path: name).path)[.posixPermissions] as? NSNumber)?.intValue
            #expect(mode.map { $0 & 0o077 } == 0, "\(name): mode \(String(mode ?? -1, radix: 8))")
        }
    }

    @Test("what a killed convert or import left beside a destination is removed by the next run, which says so")
    func leftovers() throws {
        let workspace = try Workspace()
        let store = try library(workspace)
        let stem = ".out.lmdb.converting-\(UUID().uuidString)"
        for suffix in ["", "-lock", ".lock"] { try Data("left".utf8).write(to: workspace.url.appending(path: stem + suffix)) }
        let imported = ".new.sqlite.importing-\(UUID().uuidString)"
        for suffix in ["", "-wal", ".lock"] { try Data("left".utf8).write(to: workspace.url.appending(path: imported + suffix)) }
        let result = try CLI.run("convert", store, workspace.url.appending(path: "out.lmdb").path)
        #expect(result.status == 0)
        #expect(result.stderr.contains("removed \(stem)"), "\(result.stderr)")
        #expect(!files(workspace).contains { $0.hasPrefix(stem) })
        let model = workspace.url.appending(path: "model.json").path, data = workspace.url.appending(path: "data.json").path
        let second = try CLI.run("import", workspace.url.appending(path: "new.sqlite").path, data, "--model", model)
        #expect(second.status == 0)
        #expect(second.stderr.contains("removed \(imported)"), "\(second.stderr)")
        #expect(!files(workspace).contains { $0.hasPrefix(".") }, "\(files(workspace))")
    }

    @Test("a FIFO, a folder or a link as a store path: said as such, never a hang")
    func oddPaths() throws {
        let workspace = try Workspace()
        let store = try library(workspace)
        let fifo = workspace.url.appending(path: "fifo.sqlite").path
        #expect(mkfifo(fifo, 0o644) == 0)
        let result = try CLI.run("inspect", fifo)
        #expect(result.status == 1)
        #expect(result.stderr.contains("it is a FIFO"), "\(result.stderr)")
        let folder = workspace.url.appending(path: "folder.sqlite").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        #expect(try CLI.run("export", folder).stderr.contains("it is a folder"))
        let link = workspace.url.appending(path: "link.sqlite").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: store)
        let viaLink = try CLI.run("export", link)
        #expect(viaLink.status == 0, "\(viaLink.stderr)")
        #expect(viaLink.stdout == (try CLI.run("export", store)).stdout)
    }
}
