import Dispatch
import Synchronization

/// Whether `second` can run to its end while another thread is inside `first`, for tests of
/// stores that let transactions run at once (a read beside a read, or beside a write).
///
/// `first` runs on another thread and is handed a wait: called inside its transaction, the wait
/// returns true once `second` (run on this thread meanwhile) is done, or false after `patience` seconds.
/// The answer is false when `second` could not finish while `first` held its transaction, or
/// when `first` failed before it waited.
public func overlaps(patience: Double = 5, _ first: @escaping @Sendable (_ waitForSecond: () -> Bool) throws -> Void, _ second: () throws -> Void) throws -> Bool {
    let inside = DispatchSemaphore(value: 0), secondDone = DispatchSemaphore(value: 0), firstDone = DispatchSemaphore(value: 0)
    let overlapped = Atomic<Bool>(false)
    DispatchQueue.global().async {
        try? first {
            inside.signal()
            let done = secondDone.wait(timeout: .now() + patience) == .success
            overlapped.store(done, ordering: .relaxed)
            return done
        }
        inside.signal()   // when `first` failed before its wait: `second` runs, the answer is false
        firstDone.signal()
    }
    inside.wait()
    try second()
    secondDone.signal()
    firstDone.wait()
    return overlapped.load(ordering: .relaxed)
}
