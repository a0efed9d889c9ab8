import Foundation
import Synchronization

/// A read of the source started on a thread of its own, so that the migration writes one batch
/// while the source gives the next: two cores are busy where one waited on the other. Its
/// result (or error) is taken where the read would have run, so failures come in the same order.
///
/// The read uses only the source store, which serializes its own calls: the migration's thread
/// may read the source meanwhile (a policy, a count), and waits its turn. Each read has a thread
/// of its own, not one of a shared pool: migrations running on that pool's threads and waiting
/// for their reads could otherwise take every thread the reads need (found with 16 at once).
final class ReadAhead<Value: Sendable>: Sendable {
    private let result = Mutex<Result<Value, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ read: @escaping @Sendable () throws -> Value) {
        let thread = Thread { [self] in
            let outcome = Result { try read() }
            result.withLock { $0 = outcome }
            done.signal()
        }
        thread.name = "objectstore read-ahead"
        thread.start()
    }

    /// A read already done: its value.
    init(done value: Value) {
        result.withLock { $0 = .success(value) }
        done.signal()
    }

    /// The read's value, once it is there.
    /// - Throws: what the read threw.
    func value() throws -> Value {
        done.wait()
        done.signal()   // a second call finds it done
        return try result.withLock { $0! }.get()
    }
}
