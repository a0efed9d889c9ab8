import Foundation
import Synchronization
import ObjectStore

extension StagedLocation {
    /// The error to report when writing `destination` failed with `error`: it names the
    /// destination, and the staged name in its text is the destination's.
    func failure(_ error: any Error, writing destination: String) -> any Error {
        guard let (code, text) = ObjectStoreCommand.describe(error) else { return error }
        let staged = url.isFileURL ? url.path : url.absoluteString
        let message = text.replacingOccurrences(of: staged, with: destination)
        return CLIError(message.hasPrefix(destination + ":") ? message : "\(destination): not written: " + message, code: code)
    }
}

extension StoreType {
    /// Sweeps what interrupted runs left beside `destination`, telling the user on stderr.
    func sweepAndSay(beside destination: URL) {
        for leftover in sweepStaged(beside: destination) {
            printError("objectstore: removed \(leftover), left by an interrupted run\n")
        }
    }
}

/// Whether a signal asked work that stages a store to stop (``stoppingOnSignals(_:_:)``).
final class StopRequest: Sendable {
    private let requested = Atomic<Bool>(false)
    /// Whether a signal came.
    var isRequested: Bool { requested.load(ordering: .relaxed) }
    fileprivate func request() { requested.store(true, ordering: .relaxed) }
}

/// Work that stages a store and can stop between batches (a conversion, a migration, an import): an
/// interrupt (SIGINT, as Ctrl-C sends), SIGTERM or SIGHUP while `body` runs calls `cancel`, so the
/// work stops at its next batch, and marks the request `body` gets, which it checks before it
/// puts the staged store in place; it then removes what it staged and says so, instead of the
/// process dying with its staged files left for the next run to sweep. `body` is to cover the
/// work up to and including the install. A second signal ends the process at once, as it would
/// have without this.
func stoppingOnSignals<T>(_ cancel: @escaping @Sendable () -> Void, _ body: (StopRequest) throws -> T) throws -> T {
    let signals = [SIGINT, SIGTERM, SIGHUP]
    let request = StopRequest()
    let sources = signals.map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
            for number in signals { signal(number, SIG_DFL) }
            printError("objectstore: stopping (signal \(number))\n")
            request.request()
            cancel()
        }
        source.resume()
        return source
    }
    defer {
        for source in sources { source.cancel() }
        for number in signals { signal(number, SIG_DFL) }
    }
    return try body(request)
}
