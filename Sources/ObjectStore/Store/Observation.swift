import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// POSIX `close`, under a name no method shadows.
private func closeDescriptor(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #else
    _ = Darwin.close(fd)
    #endif
}

/// What wakes an observer when a store may have a new transaction: file notifications for
/// a store in files, `LISTEN` for a PostgreSQL store, and saves in this process
/// (``HistoryNotifier``) for every store. A wake-up is only a hint: the observer then reads
/// the history after the last token it has seen, so a spurious one costs a read, and a
/// missed one is made up by the next (observers also look every second, at most).
public protocol StoreChangeSignal: AnyObject, Sendable {
    /// Waits until something may have changed, or `timeout` seconds passed; says whether
    /// something woke it.
    @discardableResult
    func wait(timeout: Double) -> Bool
    /// Frees what it holds; a wait then returns at once.
    func close()
}

/// A store type's way of hearing about other processes' commits: a ``StoreType`` that
/// does not adopt it gets file notifications on its files (``FileChangeSignal``).
public protocol ChangeSignaling: StoreType {
    /// A signal for the store at `url` (with identifier `store`).
    func changeSignal(at url: URL, store: UUID) throws -> any StoreChangeSignal
}

extension StoreType {
    /// The signal of the store at `url`: the type's own (``ChangeSignaling``), else notifications
    /// on its files other than shared memory and lock files, which readers touch too; a store
    /// with no files hears this process's saves only.
    public func changeSignal(for store: any PersistentStore) throws -> any StoreChangeSignal {
        guard let url = store.url else { return FileChangeSignal(files: []) }
        if let own = self as? any ChangeSignaling { return try own.changeSignal(at: url, store: store.identifier) }
        let files = fileURLs(for: url).filter { !$0.lastPathComponent.hasSuffix("-shm") && !$0.lastPathComponent.hasSuffix("-lock") }
        return FileChangeSignal(files: files)
    }
}

/// Saves in this process, for observers of stores that have no files to watch (the in-memory
/// store) and to wake every observer of this process at once after a save.
public enum HistoryNotifier {
    private static let pipes = Mutex<[ObjectIdentifier: Int32]>([:])

    /// Wakes every observer in this process.
    public static func post() {
        let targets = pipes.withLock { Array($0.values) }
        var byte: UInt8 = 1
        for fd in targets { _ = write(fd, &byte, 1) }
    }

    static func register(_ signal: AnyObject, writing fd: Int32) { pipes.withLock { $0[ObjectIdentifier(signal)] = fd } }
    static func unregister(_ signal: AnyObject) { pipes.withLock { $0[ObjectIdentifier(signal)] = nil } }
}

/// A wake-up source made of file descriptors to poll: this process's saves (a pipe
/// ``HistoryNotifier`` writes to) and whatever ``descriptors`` gives (inotify, a server socket).
///
/// ``close()`` may come from any thread, also while another waits: the wait is woken and
/// returns, and what the signal holds is freed (``release()``) once no wait is under way, so no
/// wait ever polls or drains a descriptor already closed (or reused for another file).
///
/// `@unchecked Sendable` only because an open class cannot be checked: its state is in a `Mutex`.
open class PollingSignal: StoreChangeSignal, @unchecked Sendable {
    private struct State {
        /// The pipe this process's saves write to, until released.
        var wake: (read: Int32, write: Int32)?
        /// The waits under way.
        var waiting = 0
        var closing = false
        var released = false

        /// Whether the signal is to be released now (once: closing, and no wait under way).
        mutating func releasing() -> Bool {
            guard closing, waiting == 0, !released else { return false }
            released = true
            return true
        }
    }

    private let state = Mutex(State())

    /// Registers with ``HistoryNotifier``.
    public init() {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return }
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        state.withLock { $0.wake = (fds[0], fds[1]) }
        HistoryNotifier.register(self, writing: fds[1])
    }

    /// Other descriptors to wait on; when one is readable, ``drain(_:)`` reads it. Asked only
    /// while the signal is not released.
    open var descriptors: [Int32] { [] }
    /// Reads what made `fd` readable.
    open func drain(_ fd: Int32) {}
    /// Frees what a subclass holds (its descriptors, a connection): called once, after
    /// ``PollingSignal/close()``, when no wait is under way.
    open func release() {}

    @discardableResult
    public func wait(timeout: Double) -> Bool {
        let wake = state.withLock { state -> (read: Int32, write: Int32)? in
            guard !state.closing, let wake = state.wake else { return nil }
            state.waiting += 1
            return wake
        }
        guard let wake else { return false }
        defer { if state.withLock({ $0.waiting -= 1; return $0.releasing() }) { releaseAll() } }
        var polled = ([wake.read] + descriptors).map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let ready = poll(&polled, nfds_t(polled.count), Int32(Swift.max(0, timeout) * 1_000))
        guard ready > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 256)
        if polled[0].revents != 0 { while read(wake.read, &buffer, buffer.count) > 0 {} }
        if state.withLock({ $0.closing }) { return true }
        for entry in polled.dropFirst() where entry.revents != 0 { drain(entry.fd) }
        return true
    }

    /// Closes the signal: a wait under way is woken and returns; what the signal holds is freed
    /// now, or when that wait returns.
    public func close() {
        let now = state.withLock { state -> Bool in
            guard !state.closing else { return false }
            state.closing = true
            if state.waiting > 0, let wake = state.wake {
                var byte: UInt8 = 1
                _ = write(wake.write, &byte, 1)
            }
            return state.releasing()
        }
        HistoryNotifier.unregister(self)
        if now { releaseAll() }
    }

    private func releaseAll() {
        release()
        state.withLock { state in
            if let wake = state.wake { closeDescriptor(wake.read); closeDescriptor(wake.write) }
            state.wake = nil
        }
    }

    deinit { close() }
}

/// File notifications (inotify) on the folder of a store's files: any change to one of them
/// wakes the observer (SQLite's `-wal` growing, LMDB's file written, the atomic store's file
/// renamed into place).
public final class FileChangeSignal: PollingSignal, @unchecked Sendable {
    /// The inotify descriptor, or -1 (none, or closed).
    private let inotify = Mutex<Int32>(-1)

    /// Watches `files` (none: this process's saves only). Where there is no inotify (not
    /// Linux), the observer looks once a second.
    public init(files: [URL]) {
        super.init()
        #if os(Linux)
        guard let folder = files.first?.deletingLastPathComponent() else { return }
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return }
        let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB)
        guard inotify_add_watch(fd, folder.path, mask) >= 0 else { closeDescriptor(fd); return }
        inotify.withLock { $0 = fd }
        #endif
    }

    override public var descriptors: [Int32] { inotify.withLock { $0 >= 0 ? [$0] : [] } }

    override public func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while read(fd, &buffer, buffer.count) > 0 {}
    }

    override public func release() {
        inotify.withLock { fd in
            if fd >= 0 { closeDescriptor(fd) }
            fd = -1
        }
    }
}

/// The transactions a store records from now on (or after a given token), as they commit, in
/// order, in this process or another: what `objectstore watch` prints and what contexts merge.
///
/// ```swift
/// for try await transaction in HistoryObserver(store: store, type: SQLiteStoreType()).transactions() {
///     print(transaction.token, transaction.inserted)
/// }
/// ```
public final class HistoryObserver: Sendable {
    let store: any PersistentStore
    let signal: any StoreChangeSignal
    /// The token it observes after: what comes later is what it hands out.
    public let start: Int64
    /// The store's main file when observing began (nil for a server's or memory store).
    let fileIdentity: FileOperations.Identity?
    let type: any StoreType

    /// Observes `store` (of `type`) after `token`; nil starts after its newest transaction now,
    /// so every save that ends after this call is seen.
    public init(store: any PersistentStore, type: any StoreType, after token: Int64? = nil) throws {
        self.store = store
        self.type = type
        fileIdentity = store.url.flatMap { $0.isFileURL ? FileOperations.identity($0) : nil }
        start = try token ?? store.lastHistoryToken()
        signal = try type.changeSignal(for: store)
    }

    /// Hands `body` each transaction as it commits, in token order, until `body` returns false
    /// or the store fails, or `stop` says so (asked at least every second); blocks in between,
    /// waiting on the store's ``StoreChangeSignal``.
    public func run(until stop: () -> Bool = { false }, _ body: (StoreTransaction) throws -> Bool) throws {
        defer { signal.close() }
        var seen = start
        // A file is written before its commit is visible (SQLite updates its WAL index through
        // shared memory, which sends no notification): after a wake-up, the history is looked
        // at again within 1, 5, 20 and 50 ms while it shows nothing new, each wait cut short by
        // the next wake-up; then the long wait.
        let soon: [Double] = [0.001, 0.005, 0.02, 0.05]
        var looksLeft = 0
        while !stop() {
            let batch = try store.history(after: seen, limit: 1_000)
            for transaction in batch {
                guard try body(transaction) else { return }
                seen = transaction.token.value
            }
            if batch.count == 1_000 { continue }
            if !batch.isEmpty { looksLeft = 0 }
            var timeout = 1.0
            if looksLeft > 0 {
                timeout = soon[soon.count - looksLeft]
                looksLeft -= 1
            }
            if signal.wait(timeout: timeout) { looksLeft = soon.count }
            try checkStillThere()
        }
    }

    /// Throws ``StoreError/Code/storeReplaced`` once the store observed is no longer the one at
    /// its place (destroyed, replaced by a migration or another store): its history is no longer
    /// the place's, and the observer would wait on a store nobody writes.
    private func checkStillThere() throws {
        let replaced: Bool
        if let url = store.url, url.isFileURL {
            // A store whose every save renames a new file into place (the atomic store) is the same
            // store while the file there carries its UUID; any other's file is replaced only when
            // it is destroyed, migrated or overwritten.
            replaced = FileOperations.identity(url) != fileIdentity
                && (!type.replacesFileOnSave || (try? type.readMetadata(at: url).storeUUID) != store.identifier)
        } else {
            replaced = try store.metadata().storeUUID.map { $0 != store.identifier } ?? false
        }
        if replaced {
            throw StoreError(.storeReplaced, "the store was destroyed or replaced while it was observed; observe it again", url: store.url)
        }
    }

    /// The transactions, one by one, until the sequence is dropped or the store fails.
    public func transactions() -> AsyncThrowingStream<StoreTransaction, any Error> {
        transactions { $0 }
    }

    /// The transactions as `transform` makes them, one by one, until the sequence is dropped or
    /// the store fails. Each is handed to the sequence from the observer's own thread, as it
    /// commits: no task has to run for it to arrive.
    public func transactions<T: Sendable>(_ transform: @escaping @Sendable (StoreTransaction) -> T) -> AsyncThrowingStream<T, any Error> {
        let (stream, continuation) = AsyncThrowingStream<T, any Error>.makeStream(bufferingPolicy: .unbounded)
        let stopped = Self.stopSwitch(continuation)
        start(until: stopped) { continuation.yield(transform($0)) } finished: { error in continuation.finish(throwing: error) }
        return stream
    }

    /// Runs ``run(until:_:)`` on a thread of its own, handing `deliver` every transaction, then
    /// `finished` the failure that ended it, or nil.
    func start(until stop: @escaping @Sendable () -> Bool, deliver: @escaping @Sendable (StoreTransaction) -> Void,
               finished: @escaping @Sendable ((any Error)?) -> Void) {
        let thread = Thread { [self] in
            do {
                try run(until: stop) { transaction in
                    deliver(transaction)
                    return true
                }
                finished(nil)
            } catch {
                finished(error)
            }
        }
        thread.name = "objectstore history observer"
        thread.start()
    }

    /// A stop flag that a sequence's end sets (waking every observer of this process to see it).
    static func stopSwitch<T>(_ continuation: AsyncThrowingStream<T, any Error>.Continuation) -> @Sendable () -> Bool {
        let stopped = Stop()
        continuation.onTermination = { _ in
            stopped.flag.store(true, ordering: .releasing)
            HistoryNotifier.post()
        }
        return { stopped.flag.load(ordering: .acquiring) }
    }

    private final class Stop: Sendable {
        let flag = Atomic<Bool>(false)
    }
}

extension StoreCoordinator {
    /// The transactions saved to any of the coordinator's stores from now on, by this process or
    /// another, each store's in token order (``HistoryObserver``), as they commit.
    ///
    /// ```swift
    /// for try await transaction in coordinator.transactions() { try context.mergeChanges(from: transaction) }
    /// ```
    public func transactions() -> AsyncThrowingStream<StoreTransaction, any Error> {
        let (stream, continuation) = AsyncThrowingStream<StoreTransaction, any Error>.makeStream(bufferingPolicy: .unbounded)
        let stopped = HistoryObserver.stopSwitch(continuation)
        do {
            for store in stores {
                try HistoryObserver(store: store, type: try registry.type(named: store.storeType))
                    .start(until: stopped) { continuation.yield($0) } finished: { error in if let error { continuation.finish(throwing: error) } }
            }
        } catch {
            continuation.finish(throwing: error)
        }
        return stream
    }
}
