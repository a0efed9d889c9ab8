import ArgumentParser
import Foundation
import ObjectModel
import ObjectStore

/// `objectstore model extract <store|model> --output X.xcdatamodel [--model-version V] [--type T]`.
struct ModelExtractCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extract",
        abstract: "Write a store's own model, or a compiled model (.momd, .mom), as an Xcode model version (.xcdatamodel).",
        discussion: """
            From a store: the ObjectStore model embedded in its metadata, else the model a Core Data store \
            carries (Z_MODELCACHE). From a model (.momd, .mom, .xcdatamodeld, .xcdatamodel, JSON): that model, \
            its current version unless --model-version names one. Prints each entity's version hash, as \
            `model hashes` does; the written model loads back to the same hashes.
            """
    )

    @Argument(help: "A store, or a .momd folder, a .mom file or any other model.") var source: String
    @Option(name: [.customShort("o"), .customLong("output")], help: "The .xcdatamodel folder to write (created; its contents file replaced).")
    var outputPath: String
    @Option(name: .customLong("model-version"), help: "The version of a model bundle to extract (default: its current one).")
    var version: String?
    @OptionGroup var typeOption: StoreTypeOption

    static let modelExtensions: Set<String> = ["momd", "mom", "xcdatamodeld", "xcdatamodel", "json"]

    func validate() throws {
        guard URL(filePath: outputPath).pathExtension == "xcdatamodel" else {
            throw ValidationError("--output names a .xcdatamodel folder, not \(outputPath)")
        }
    }

    func run() throws {
        let url = URL(filePath: source)
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory)
        let model: ManagedObjectModel
        if typeOption.type == nil && (isDirectory.boolValue || Self.modelExtensions.contains(url.pathExtension.lowercased())) {
            model = try ModelLoader.loadModel(at: url, version: version)
        } else {
            guard exists else { throw CLIError.missing(source, "store or model") }
            if version != nil { throw ValidationError("--model-version is for a model bundle, not a store") }
            let type = try StoreLocator.type(for: source, explicit: typeOption.type)
            let metadata = try type.readMetadata(at: url)
            guard let own = try ModelSelection.storeModel(at: source, type: type, metadata: metadata) else {
                throw CLIError("\(source): the store holds no model (neither an embedded ObjectStore model nor Core Data's Z_MODELCACHE)")
            }
            model = own
        }
        do {
            try XcodeModelWriter.write(model, to: URL(filePath: outputPath))
        } catch {
            throw CLIError("\(outputPath): cannot write it (\(error.localizedDescription))")
        }
        output(ModelHashesCommand.lines(model))
    }
}
