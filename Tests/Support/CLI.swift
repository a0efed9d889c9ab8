import BuiltInBackends
import Foundation

/// Runs the built `objectstore` binary, as a user would.
public struct CLI {
    public struct Result {
        public var status: Int32
        public var stdout: String
        public var stderr: String
        /// Whether the process ended by a signal (a crash: SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGTRAP).
        public var signaled = false

        public init(status: Int32, stdout: String, stderr: String, signaled: Bool = false) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
            self.signaled = signaled
        }
    }

    /// The tool's store types, each named by its usual file extension: the one list every
    /// CLI test runs over (a test checks it against the tool's own list).
    public static let backends = BuiltInBackends.types.filter { !$0.fileExtensions.isEmpty }.map(\.name)

    public static var binary: URL {
        // The test bundle lives in the same build folder as the executable.
        let bundle = Bundle.main.bundleURL
        for folder in [bundle.deletingLastPathComponent(), bundle, bundle.deletingLastPathComponent().deletingLastPathComponent()] {
            let candidate = folder.appending(path: "objectstore")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return URL(filePath: ".build/debug/objectstore")
    }

    public static func run(_ arguments: String...) throws -> Result {
        try run(arguments)
    }

    /// Runs the tool with `arguments`; `environment` replaces the variables it names.
    public static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self), signaled: process.terminationReason == .uncaughtSignal)
    }
}

