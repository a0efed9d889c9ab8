import PackagePlugin

/// Makes the `BuiltInBackends` target's list of store types from its dependencies: each module of
/// a folder under `Backends/` (in `Package.swift`'s order) is imported, and its `<module>Type`
/// listed. `Package.swift`'s `backends` is then the one place a backend is named.
@main
struct BackendList: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        // Paths as the file system spells them (not percent-encoded: a checkout may be under "My Projects").
        let backends = context.package.directoryURL.appending(path: "Backends").standardizedFileURL.path(percentEncoded: false) + "/"
        let modules = target.dependencies.compactMap { dependency -> String? in
            guard case .target(let module) = dependency, module is SwiftSourceModuleTarget,
                  module.directoryURL.standardizedFileURL.path(percentEncoded: false).hasPrefix(backends) else { return nil }
            return module.name
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "BuiltInBackendList.swift")
        return [
            .buildCommand(
                displayName: "Listing the built-in backends: \(modules.joined(separator: ", "))",
                executable: try context.tool(named: "BackendListGenerator").url,
                arguments: [output.path(percentEncoded: false)] + modules, inputFiles: [], outputFiles: [output]
            ),
        ]
    }
}
