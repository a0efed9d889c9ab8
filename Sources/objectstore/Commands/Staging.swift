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

/// The signal ``stoppingOnSignals(_:_:)`` caught, or 0: set by its handler, which may only do
/// what is async-signal-safe (an atomic store, `signal`).
private let caughtSignal = Atomic<Int32>(0)

/// Whether a signal asked work that stages a store to stop (``stoppingOnSignals(_:_:)``).
final class StopRequest: Sendable {
    /// Whether a signal came.
    var isRequested: Bool { caughtSignal.load(ordering: .sequentiallyConsistent) != 0 }
}

/// Work that stages a store and can stop between batches (a conversion, a migration, an import): an
/// interrupt (SIGINT, as Ctrl-C sends), SIGTERM or SIGHUP while `body` runs calls `cancel`, so the
/// work stops at its next batch, and marks the request `body` gets, which it checks before it
/// puts the staged store in place; it then removes what it staged and says so, instead of the
/// process dying with its staged files left for the next run to sweep. `body` is to cover the
/// work up to and including the install. A second signal ends the process at once, as it would
/// have without this.
///
/// The handlers are the process's own (`signal`): from the moment each is set, its signal is
/// taken, never lost. A signal the process was started ignoring (`nohup`, a background job)
/// stays ignored. Once `body` has returned, a signal that had not come is ignored: the work is
/// done, and the exit status says so.
func stoppingOnSignals<T>(_ cancel: @escaping @Sendable () -> Void, _ body: (StopRequest) throws -> T) throws -> T {
    caughtSignal.store(0, ordering: .sequentiallyConsistent)   // initialized before a handler can read it
    var handled: [Int32] = []
    for number in [SIGINT, SIGTERM, SIGHUP] {
        let previous = signal(number) { number in
            _ = caughtSignal.compareExchange(expected: 0, desired: number, ordering: .sequentiallyConsistent)
            // A second signal ends the process, as it would have without this.
            signal(SIGINT, SIG_DFL)
            signal(SIGTERM, SIG_DFL)
            signal(SIGHUP, SIG_DFL)
        }
        // SIG_IGN is the handler with the value 1 (`<signal.h>`).
        if let previous, unsafeBitCast(previous, to: Int.self) == 1 {
            signal(number, SIG_IGN)
        } else {
            handled.append(number)
        }
    }
    // A process may start with these signals blocked (its parent's mask, as a test runner's): blocked,
    // they would wait, untaken, until the process ends.
    var unblocked = sigset_t()
    sigemptyset(&unblocked)
    for number in handled { sigaddset(&unblocked, number) }
    pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
    // Outside the handler: say so, and stop the work at its next batch.
    let finished = Atomic<Bool>(false)
    let watcher = Thread {
        while !finished.load(ordering: .relaxed) {
            let number = caughtSignal.load(ordering: .sequentiallyConsistent)
            if number != 0 {
                printError("objectstore: stopping (signal \(number))\n")
                cancel()
                return
            }
            usleep(5_000)
        }
    }
    watcher.start()
    defer {
        finished.store(true, ordering: .relaxed)
        if caughtSignal.load(ordering: .sequentiallyConsistent) == 0 { for number in handled { signal(number, SIG_IGN) } }
    }
    return try body(StopRequest())
}
