import Foundation
@testable import AtomicStore
import InMemoryStore
import ObjectMigration
@testable import ObjectModel
import ObjectStore

// One executable, eight readers: `OBJECTSTORE_FUZZ_TARGET` names the one to feed.
//   atomic     the atomic store file reader (AtomicFormat.decode) past its checksum: the input is the
//              body after the header, sealed with the right length and SHA-256 before it is read
//   xml        the Xcode model reader (contents XML)
//   jsonmodel  the JSON model format
//   import     the JSON interchange importer, into an in-memory store of a model with every feature
//   predicate  the NSPredicate-syntax parser and, for what parses, the evaluator on one object
//   mapping    the JSON mapping-file reader
//   plist      store metadata: binary property lists (our reader) and XML ones (Foundation's)
//   archive    NSKeyedArchiver archives as export --decode-transformables reads them (KeyedArchive)
// Errors are the expected answer to bad input; a crash, a hang or a sanitizer report is a bug.

let target = ProcessInfo.processInfo.environment["OBJECTSTORE_FUZZ_TARGET"] ?? "atomic"

let model: ManagedObjectModel = {
    do {
        return try ManagedObjectModel {
            Entity("Person") {
                Attribute("name", .string, optional: false)
                Attribute("age", .integer16, validation: ValidationRules(minValue: .integer(0)))
                Attribute("score", .double)
                Attribute("born", .date)
                Attribute("balance", .decimal)
                Attribute("photo", .binaryData)
                Attribute("id", .uuid)
                Attribute("site", .uri)
                Attribute("ok", .boolean)
                Relationship("pets", to: "Pet", inverse: "owner", toMany: true, ordered: true)
                Relationship("friends", to: "Person", inverse: "friends", toMany: true)
            }
            Entity("Pet") {
                Attribute("name", .string)
                Relationship("owner", to: "Person", inverse: "pets")
            }
        }
    } catch {
        fatalError("the fuzz model is inconsistent: \(error)")
    }
}()

final class Subject: PredicateSubject {
    let values: [String: Value] = ["name": .string("Ada"), "age": .integer(36), "score": .double(2.5), "ok": .boolean(true)]
    var identity: Value { .string("Person/1") }
    func resolve(_ key: String) throws -> ResolvedKey? { values[key].map { .value($0) } }
}

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzer(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
               _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

/// The entry point SwiftPM gives this executable: libFuzzer's driver, with the reader as its callback.
@_cdecl("fuzz_targets_main")
func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    var count = argc
    var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return runFuzzer(&count, &arguments) { bytes, size in fuzz(bytes, size) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let bytes else { return 0 }
    let data = Data(bytes: bytes, count: count)
    switch target {
    case "atomic":
        var header = AtomicFormat.magic
        withUnsafeBytes(of: AtomicFormat.version.littleEndian) { header.append(contentsOf: $0) }
        header.append(Data(count: AtomicFormat.headerSize - header.count))
        _ = try? AtomicFormat.decode(AtomicFormat.seal([UInt8](header + data)), file: "fuzz")
    case "xml":
        _ = try? XcodeModelReader.read(data, file: "fuzz")
    case "jsonmodel":
        _ = try? JSONModelFormat.decode(data, file: "fuzz")
    case "import":
        if let store = try? InMemoryStore(model: model) {
            _ = try? JSONInterchange.importDocument(data, into: store, file: "fuzz")
            _ = try? JSONInterchange.exportString(store)
        }
    case "predicate":
        if let text = String(data: data, encoding: .utf8), let predicate = try? ObjectPredicate(text) {
            _ = try? PredicateEvaluator.check(predicate, on: model.entity(named: "Person")!, in: model)
            _ = try? PredicateEvaluator.evaluate(predicate, on: Subject())
            _ = predicate.description
        }
    case "mapping":
        _ = try? MappingFormat.decode(data, file: "fuzz")
    case "plist":
        _ = PropertyListValue.decodeDictionary(data)
    case "archive":
        _ = try? KeyedArchive.json(data)
    default:
        fatalError("unknown OBJECTSTORE_FUZZ_TARGET \(target)")
    }
    return 0
}
