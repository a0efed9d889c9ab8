// Writes the built-in backends' list (the BackendList plugin's command):
// `BackendListGenerator OUTPUT MODULE...`, each module's store type being `<module>Type`.
import Foundation

let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: BackendListGenerator OUTPUT MODULE...\n".utf8))
    exit(2)
}
let modules = arguments.dropFirst()
let text = """
    // Written by the BackendList plugin from Package.swift's `backends`: do not edit.
    import ObjectStore
    \(modules.map { "import \($0)\n" }.joined())
    /// Every built-in store type, in `Package.swift`'s order.
    let listedStoreTypes: [any StoreType] = [
    \(modules.map { "    \($0)Type(),\n" }.joined())]

    """
do {
    // Unchanged text is not written again: the module is then not compiled again.
    if (try? String(contentsOfFile: output, encoding: .utf8)) != text {
        try text.write(toFile: output, atomically: true, encoding: .utf8)
    }
} catch {
    FileHandle.standardError.write(Data("BackendListGenerator: \(output): \(error)\n".utf8))
    exit(1)
}
