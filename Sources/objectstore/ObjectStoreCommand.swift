import ArgumentParser
import BuiltInBackends
import Foundation
import ObjectMigration
import ObjectModel
import Logging
import ObjectStore

/// The `objectstore` command-line tool.
@main
struct ObjectStoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "objectstore",
        abstract: "Inspect, validate, migrate and convert ObjectStore and Core Data models and stores.",
        discussion: "--verbose, anywhere on the line, prints the libraries' diagnostics on stderr (what is opened, planned, copied, installed and swept).",
        subcommands: [
            ModelCommand.self, CreateCommand.self, ImportCommand.self, ExportCommand.self, InspectCommand.self,
            DestroyCommand.self, CheckpointCommand.self, DiffCommand.self, ConvertCommand.self, MigrateCommand.self, ValidateCommand.self,
            WatchCommand.self, HistoryCommand.self, UpdateCommand.self, DeleteCommand.self,
        ]
    )

    /// The tool's version, printed by `objectstore --version`.
    static let version = "0.1.0"

    // `--version` is the root command's own flag, not ArgumentParser's built-in one: the built-in
    // one answers `--version` anywhere on the line, so `import … --version V` (the old spelling
    // of --model-version) would print the version and exit 0 without importing.
    @Flag(name: .customLong("version"), help: "Show the tool's version.") var showVersion = false

    func run() throws {
        guard showVersion else { throw CleanExit.helpRequest(self) }
        output(Self.version)
    }

    static func main() {
        BuiltInBackends.configureOwnProcess()
        BuiltInBackends.register()
        // `--json` means JSON, errors included: `{"error": {"code": …, "message": …}}` on stdout
        // (one line, so a JSON Lines reader of watch or history reads it too), the line on stderr as always.
        var arguments = Array(CommandLine.arguments.dropFirst())
        // Options end at `--`: what follows is arguments, whatever they spell.
        let options = arguments.prefix { $0 != "--" }
        let json = options.contains("--json")
        // --verbose shows the libraries' diagnostics (swift-log, debug level) on stderr; without
        // it they go nowhere. It is the tool's, not a command's, so it may stand anywhere.
        let verbose = options.contains("--verbose")
        if verbose, let index = arguments.firstIndex(of: "--verbose") { arguments.remove(at: index) }
        LoggingSystem.bootstrap { label in
            guard verbose else { return SwiftLogNoOpLogHandler() }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .debug
            return MaskingLogHandler(inner: handler)
        }
        do {
            var command = try parseAsRoot(arguments)
            do {
                try command.run()
            } catch let error as ValidationError {
                // A usage mistake found once the command runs (a --type that does not fit the store):
                // one line and the usage status, not the root command's usage text.
                if json { printErrorDocument(code: "usage", message: maskingPasswords(error.message)) }
                printError("objectstore: \(maskingPasswords(error.message))\n")
                Foundation.exit(64)
            }
        } catch {
            guard let (code, message) = describe(error) else {
                // ArgumentParser's own: a usage error (exit 64), or help and the like (exit 0).
                if json && exitCode(for: error) != .success {
                    let line = fullMessage(for: error).split(separator: "\n").first.map(String.init) ?? ""
                    printErrorDocument(code: "usage", message: line.hasPrefix("Error: ") ? String(line.dropFirst(7)) : line)
                }
                exit(withError: error)
            }
            if json { printErrorDocument(code: code, message: message) }
            fail(message)
        }
    }

    /// The code and message of one of the tool's own errors (nil for ArgumentParser's, which it reports itself).
    static func describe(_ error: any Error) -> (code: String, message: String)? {
        switch error {
        case let error as ModelError: ("\(error.code)", error.description)
        case let error as StoreError: ("\(error.code)", error.description)
        case let error as CLIError: (error.code, error.message)
        case let error as MigrationError: ("\(error.code)", error.description)
        case let error as InferenceError: ("noMapping", error.description)
        default: nil
        }
    }

    /// `{"error": {"code": …, "message": …}}` on one line of stdout, passwords masked.
    static func printErrorDocument(code: String, message: String) {
        let document = ["error": ["code": code, "message": maskingPasswords(message)]]
        let data = (try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        output(String(decoding: data, as: UTF8.self))
    }

    /// Prints one line on stderr and exits with status 1.
    static func fail(_ message: String) -> Never {
        let line = message.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " | ")
        printError("objectstore: \(maskingPasswords(line))\n")
        Foundation.exit(1)
    }

    /// `text` with the password of every URL in it (`scheme://user:password@host`) masked: an
    /// error names the store it is about, and a server store's URL may carry its password.
    static func maskingPasswords(_ text: String) -> String {
        text.replacing(/(?<head>[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\/\s:@]*):[^@\s\/]*@/) { match in "\(match.output.head):********@" }
    }
}

/// A runtime failure of the tool that is neither a model nor a store error.
struct CLIError: Error {
    /// What `--json` reports as the error's code: `notFound` for a missing file or store, else `failed`.
    var code: String
    var message: String
    init(_ message: String, code: String = "failed") {
        self.message = message
        self.code = code
    }

    /// A file or store that is not there, in the one wording every command uses.
    static func missing(_ path: String, _ what: String = "file or directory", _ hint: String = "") -> CLIError {
        CLIError("\(path): no such \(what)\(hint)", code: "notFound")
    }
}

/// Writes text to standard output (a write that fails, to a closed pipe or a full disk, is dropped, never a crash).
func output(_ text: String) {
    try? FileHandle.standardOutput.write(contentsOf: Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
}

/// Writes text to standard error, the same way.
func printError(_ text: String) {
    try? FileHandle.standardError.write(contentsOf: Data(text.utf8))
}

/// The bytes of the file at `path`, read to its end: a regular file, or a pipe, a FIFO or a
/// terminal (`/dev/stdin`, `<(…)`), which have no size to read up to; `-` is standard input.
/// - Throws: ``CLIError`` naming the file and saying why it cannot be read.
func readInput(_ path: String) throws -> Data {
    let fd = path == "-" ? dup(STDIN_FILENO) : open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
        if errno == ENOENT { throw CLIError.missing(path) }
        throw CLIError("\(path): cannot be read (\(String(cString: strerror(errno))))")
    }
    defer { close(fd) }
    var info = stat()
    if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { throw CLIError("\(path): cannot be read (it is a folder)") }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count == 0 { return data }
        if count < 0 {
            if errno == EINTR { continue }
            throw CLIError("\(path): cannot be read (\(String(cString: strerror(errno))))")
        }
        data.append(contentsOf: buffer[..<count])
    }
}

/// The diagnostics `--verbose` prints, with the password of every URL in them masked.
struct MaskingLogHandler: LogHandler {
    var inner: StreamLogHandler

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var masked = event
        masked.message = "\(ObjectStoreCommand.maskingPasswords(event.message.description))"
        inner.log(event: masked)
    }
}

/// A store's name as the tool prints it: a URL's password masked.
func shown(_ store: String) -> String { ObjectStoreCommand.maskingPasswords(store) }
