import Foundation
import Testing
import TestSupport

/// What one store may touch: never another store's files, never a file that is no store, and
/// never a row it would silently leave out (found from outside, after issue 20's fixes).
@Suite("A store's boundaries: shared support folders, files that are no store, rows no read sees")
struct StoreBoundaryTests {
    /// A store with two books whose scans live in external data files; returns the store and the files' folder.
    func storeWithFiles(_ workspace: Workspace, name: String = "x.sqlite") throws -> (store: String, folder: URL, bytes: Data) {
        let model = try workspace.write(RealStoreFeatureCommandTests.model, to: "Books.xcdatamodel/contents")
        let bytes = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let data = try workspace.write("{\"Book\": [{\"_id\": \"b1\", \"title\": \"One\", \"scan\": \"\(bytes.base64EncodedString())\"}]}", to: "books.json")
        let store = workspace.url.appending(path: name).path
        #expect(try CLI.run("import", store, data, "--model", model).status == 0)
        let folder = workspace.url.appending(path: ".x_SUPPORT/_EXTERNAL_DATA")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).count == 1)
        return (store, folder, bytes)
    }

    @Test("a store whose name would share another's external data folder (x.db beside x.sqlite) is not made, by import, create or convert; the other's files stay")
    func sharedSupportFolder() throws {
        let workspace = try Workspace()
        let (store, folder, bytes) = try storeWithFiles(workspace)
        let model = workspace.url.appending(path: "Books.xcdatamodel").path
        let other = workspace.url.appending(path: "x.db").path
        for command in [["import", other, workspace.url.appending(path: "books.json").path, "--model", model, "--type", "sqlite"],
                        ["create", other, "--model", model, "--type", "sqlite"], ["convert", store, other]] {
            let result = try CLI.run(command)
            #expect(result.status == 1 && result.stderr.contains(".x_SUPPORT"), "\(command[0]): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: other), "\(command[0]) made x.db")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).count == 1)
        let export = try CLI.run("export", store)
        #expect(export.status == 0 && export.stdout.contains(bytes.base64EncodedString()))
    }

    @Test("a name that ends in a character joining what follows (U+0600, U+06DD) still shares the folder: the second store is not made",
          arguments: ["x\u{0600}", "\u{06DD}"])
    func sharedSupportFolderOtherNames(_ stem: String) throws {
        let otherStem = stem
        let workspace = try Workspace()
        let model = try workspace.write(RealStoreFeatureCommandTests.model, to: "Books.xcdatamodel/contents")
        let data = try workspace.write(#"{"Book": [{"_id": "b", "title": "one"}]}"#, to: "books.json")
        #expect(try CLI.run("import", workspace.url.appending(path: stem + ".sqlite").path, data, "--model", model).status == 0)
        let other = workspace.url.appending(path: otherStem + ".db").path
        let result = try CLI.run("import", other, data, "--model", model, "--type", "sqlite")
        #expect(result.status == 1 && result.stderr.contains("_SUPPORT"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: other))
    }

    @Test("a pair made before that shares the folder: destroying one leaves the folder, and the other's values, alone")
    func destroyLeavesSharedFolder() throws {
        let workspace = try Workspace()
        let (store, folder, bytes) = try storeWithFiles(workspace)
        // As an older version let it be made: a SQLite file of the same stem beside it.
        try FileManager.default.copyItem(atPath: store, toPath: workspace.url.appending(path: "x.db").path)
        let destroyed = try CLI.run("destroy", workspace.url.appending(path: "x.db").path)
        #expect(destroyed.status == 0, "\(destroyed.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).count == 1)
        #expect(try CLI.run("export", store).stdout.contains(bytes.base64EncodedString()))
    }

    @Test("destroy --type removes only a store of that type: any other file is refused and kept", arguments: ["sqlite", "lmdb", "atomic"])
    func destroyRefusesOtherFiles(_ type: String) throws {
        let workspace = try Workspace()
        let file = try workspace.write("{\"not\": \"a store\"}", to: "j.\(type)")
        let result = try CLI.run("destroy", file, "--type", type)
        #expect(result.status == 1 && result.stderr.contains("not destroyed"), "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: file))
    }

    @Test("a row no read sees (Z_ENT of no entity, a key below 1): export and convert refuse, naming it; validate lists it", arguments: ["Z_ENT = 99", "Z_ENT = NULL", "Z_PK = -4"])
    func rowsNoReadSees(_ damage: String) throws {
        let workspace = try Workspace()
        let store = workspace.url.appending(path: "lib.sqlite").path
        let examples = PostgreSQLCommandTests.examples
        #expect(try CLI.run("import", store, examples.appending(path: "library.json").path, "--model", examples.appending(path: "Library.xcdatamodeld").path).status == 0)
        let database = try RawDatabase(URL(filePath: store), readOnly: false)
        try database.execute("UPDATE ZITEM SET \(damage) WHERE Z_PK = 3")
        database.close()
        for command in [["export", store], ["convert", store, workspace.url.appending(path: "copy.lmdb").path]] {
            let result = try CLI.run(command)
            #expect(result.status == 1 && result.stderr.contains("ZITEM row") && result.stderr.contains("damaged"), "\(command[0]): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: workspace.url.appending(path: "copy.lmdb").path))
        let validate = try CLI.run("validate", store)
        #expect(validate.status == 1 && validate.stdout.contains("ZITEM row"), "\(validate.stdout)")
    }

    @Test("checkpoint on a store with no write-ahead log says there is nothing to do", arguments: ["lmdb", "atomic"])
    func checkpointWithoutLog(_ type: String) throws {
        let workspace = try Workspace()
        let store = workspace.url.appending(path: "s.\(type)").path
        let examples = PostgreSQLCommandTests.examples
        #expect(try CLI.run("import", store, examples.appending(path: "library.json").path, "--model", examples.appending(path: "Library.xcdatamodeld").path).status == 0)
        let result = try CLI.run("checkpoint", store)
        #expect(result.status == 0 && result.stdout.contains("nothing to checkpoint"), "\(result.stdout)")
    }

    @Test("a conversion's store goes on from the source's history tokens with one transaction by --author; a copying migration's likewise", arguments: ["lmdb", "atomic", "sqlite"])
    func historyGoesOn(_ type: String) throws {
        let workspace = try Workspace()
        let examples = PostgreSQLCommandTests.examples
        let source = workspace.url.appending(path: "s.sqlite").path, copy = workspace.url.appending(path: "c.\(type)").path
        #expect(try CLI.run("import", source, examples.appending(path: "library.json").path, "--model", examples.appending(path: "Library.xcdatamodeld").path).status == 0)
        #expect(try CLI.run("update", source, "--entity", "Book", "--set", "pageCount=1").status == 0)
        let converted = try CLI.run("convert", source, copy, "--author", "conv")
        #expect(converted.status == 0, "\(converted.stderr)")
        let history = try CLI.run("history", copy)
        #expect(history.stdout.split(separator: "\n").count == 1 && history.stdout.hasPrefix("3 ") && history.stdout.contains(" conv"), "\(history.stdout)")
        #expect(try CLI.run("update", copy, "--entity", "Book", "--set", "pageCount=2").status == 0)
        #expect(try CLI.run("history", copy, "--since", "3").stdout.hasPrefix("4 "))
    }
}
