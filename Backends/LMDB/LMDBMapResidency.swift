import Foundation
import Synchronization

/// When reading a map has faulted in enough of it that its pages should be dropped from the
/// process's resident set (a transaction's reads and writes, ``LMDBTransaction``; the check of a
/// file, ``LMDBPageWalk``).
///
/// A read faults in more than the page it touches: up to 15 neighbours on kernels that fault
/// around by 64 KiB, the whole large folio of the page cache on those that map one at a time
/// (Linux 6.18 on ext4: about 1 MiB for a lookup at a random place in a file read before), so
/// no count of pages says what a read maps. Reads are counted in units of a page (16 a lookup,
/// one a cursor step or a page walked, with their values' pages); every so many units the
/// process's resident size is read (`/proc/self/statm`, a `pread` of a descriptor kept open), and
/// once it has grown by ``target`` since the map was last dropped, the map is dropped. The size
/// is the process's: another map dropped meanwhile hides this one's growth by what that one held
/// (at most about ``target`` too), so each map stays within a few times ``target``. Where the
/// resident size cannot be read, every 1,024 units.
struct LMDBMapResidency {
    /// How much the resident size may grow between two drops of a map.
    static let target = 4 << 20

    /// The process's resident size after one map's last drop, shared by its readers.
    final class Baseline: Sendable {
        fileprivate let bytes = Atomic<Int>(0)
        init() {}
    }

    private let baseline: Baseline

    /// `/proc/self/statm`, open for the process's life; -1 where there is none.
    private static let statm: Int32 = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)

    /// Units between two readings of the resident size.
    private let every: Int
    private var counted = 0

    /// `every`: the units between two readings of the resident size (which costs about half a
    /// microsecond); `baseline`: the map's, shared by everything that reads it.
    init(every: Int, baseline: Baseline) {
        self.every = Self.statm >= 0 ? every : 1_024
        self.baseline = baseline
    }

    /// Counts `units` of reading; runs `drop` (which drops the map's pages) when the process
    /// has grown by ``target`` since the last drop.
    mutating func count(_ units: Int, drop: () -> Void) {
        counted += units
        guard counted >= every else { return }
        counted = 0
        guard let resident = Self.residentBytes() else { return drop() }
        guard resident - baseline.bytes.load(ordering: .relaxed) >= Self.target else { return }
        drop()
        baseline.bytes.store(Self.residentBytes() ?? 0, ordering: .relaxed)
    }

    /// The process's resident size in bytes (`statm`'s second field, in pages), or nil.
    private static func residentBytes() -> Int? {
        guard statm >= 0 else { return nil }
        var buffer = (0 as UInt64, 0 as UInt64, 0 as UInt64, 0 as UInt64, 0 as UInt64, 0 as UInt64, 0 as UInt64, 0 as UInt64)
        return withUnsafeMutableBytes(of: &buffer) { bytes -> Int? in
            let count = pread(statm, bytes.baseAddress, bytes.count, 0)
            guard count > 0 else { return nil }
            // "size resident shared …": the number after the first space.
            var i = 0, pages = 0
            while i < count, bytes[i] != UInt8(ascii: " ") { i += 1 }
            i += 1
            guard i < count else { return nil }
            while i < count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
                pages = pages * 10 + Int(bytes[i] - UInt8(ascii: "0"))
                i += 1
            }
            return pages * pageSize
        }
    }

    private static let pageSize = sysconf(Int32(_SC_PAGESIZE))
}
