import Foundation
import ObjectStore
import Synchronization
import Testing

/// A change signal closed by one thread while another waits on it.
@Suite struct ChangeSignalTests {
    /// Counts its releases, and whether a wait was under way at one.
    final class Counting: PollingSignal, @unchecked Sendable {
        let releases = Mutex(0)
        override func release() { releases.withLock { $0 += 1 } }
    }

    @Test("a close from another thread wakes a wait under way, which returns; the signal is released once, after the wait, and waits no more")
    func closeWakesAWait() async throws {
        let signal = Counting()
        let waiting = Task.detached { () -> (Bool, Double) in
            let start = Date()
            let woke = signal.wait(timeout: 60)
            return (woke, Date().timeIntervalSince(start))
        }
        // Let the wait begin (if it has not, the close below makes it return false at once: also fine).
        try await Task.sleep(for: .milliseconds(200))
        signal.close()
        let (_, waited) = await waiting.value
        // Not a timing assertion: a wait that the close did not wake would run its whole minute.
        #expect(waited < 30)
        #expect(signal.releases.withLock { $0 } == 1)
        signal.close()
        #expect(signal.wait(timeout: 0) == false)
        #expect(signal.releases.withLock { $0 } == 1, "released once, however often closed")
    }

    @Test("a signal hears this process's saves: a post wakes a wait")
    func postWakes() {
        let signal = Counting()
        defer { signal.close() }
        HistoryNotifier.post()
        #expect(signal.wait(timeout: 30))
    }
}
