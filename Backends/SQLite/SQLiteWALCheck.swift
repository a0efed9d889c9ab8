import Foundation
import ObjectStore

/// Finds committed transactions a damaged `-wal` would lose.
///
/// SQLite reads a WAL frame by frame, each checked by a checksum that runs on from the
/// previous frame's, and stops at the first frame that fails: what follows is taken as never
/// committed, and the next writer overwrites it. A changed byte in the middle of a WAL thus
/// drops every transaction committed after it, silently. This check reads the WAL as SQLite
/// would, and then past the first bad frame: a later frame of the same WAL (its salts) whose
/// own checksum holds, counted on from the stored checksum of the frame before it, proves that
/// the file goes on, and a commit among those frames is a transaction SQLite would drop. The
/// same holds for a damaged header, which makes SQLite ignore the whole WAL (the page size is
/// then the database's, the salts the first frame's). A transaction whose pages the database
/// file holds already (a checkpoint copied them) loses nothing and is not counted.
///
/// A torn last frame (a writer killed in the middle of writing it) has nothing after it and is
/// what SQLite's recovery is for: it is not reported. A writer in another process appends and
/// restarts the WAL while it is read, so a finding is reported only when a second reading,
/// with the WAL header unchanged, makes it again.
///
/// Layout (sqlite.org/fileformat2.html, "The Write-Ahead Log"): a 32-byte header (magic
/// `0x377f0682` or `0x377f0683`, whose low bit says the checksums' byte order; version; page
/// size; checkpoint sequence; two salts; two checksum words), then frames of a 24-byte header
/// (page number; database size after a commit, else 0; the two salts; two checksum words) and a page.
enum SQLiteWALCheck {
    /// Throws when the WAL beside `database` holds committed transactions SQLite would drop.
    /// - Throws: ``StoreError`` `corrupt`, naming the frame and what would be lost.
    static func check(_ database: URL) throws {
        let wal = URL(filePath: database.path + "-wal")
        guard let first = finding(wal, database: database) else { return }
        // Once more, to tell damage from a writer caught in the middle of a frame or a restart.
        for _ in 0..<3 {
            usleep(20_000)
            guard let again = finding(wal, database: database) else { return }
            if again == first { break }
        }
        guard let confirmed = finding(wal, database: database), confirmed == first else { return }
        throw StoreError(.corrupt, "the -wal is damaged at frame \(confirmed.frame) (\(confirmed.what)): SQLite would drop \(confirmed.commits) "
                         + "committed transaction\(confirmed.commits == 1 ? "" : "s") after it. The store was not opened and its files are as they were; "
                         + "to open it as of the frame before, without those transactions, move the -wal aside", url: database)
    }

    /// What a damaged WAL would lose: from which frame (0: the header), why, how many commits.
    struct Finding: Equatable {
        var frame: Int
        var what: String
        var commits: Int
    }

    /// The WAL's damage, read once, a frame at a time: nil when SQLite would read every commit
    /// it holds, or when what it would drop is in the database file already (checkpointed).
    static func finding(_ wal: URL, database: URL) -> Finding? {
        guard let log = File(wal), let header = log.read(32, at: 0) else { return nil }
        let headerMagic = word(header, 0, bigEndian: true)
        let valid = headerMagic == 0x377F_0682 || headerMagic == 0x377F_0683
        let walPageSize = Int(word(header, 8, bigEndian: true))
        let headerRight = valid
            && checksum(header, 0..<24, (0, 0), bigEndian: headerMagic & 1 == 1) == (word(header, 24, bigEndian: true), word(header, 28, bigEndian: true))
        // A damaged header cannot be trusted for the page size: the database's own header says it.
        let main = File(database)
        let pageSize: Int
        if headerRight {
            pageSize = walPageSize
        } else if let head = main?.read(18, at: 0) {
            let raw = Int(head[16]) << 8 | Int(head[17])
            pageSize = raw == 1 ? 65_536 : raw
        } else {
            return nil
        }
        guard pageSize >= 512, pageSize <= 65_536, pageSize & (pageSize - 1) == 0 else { return nil }
        // Checksums in the byte order the magic says; with a damaged header, in either (the magic's
        // low bit, which gives the order, may be the damage).
        for bigEndian in headerRight ? [headerMagic & 1 == 1] : [false, true] {
            if let found = scan(log, header: header, headerRight: headerRight, pageSize: pageSize, bigEndian: bigEndian, main: main) { return found }
        }
        return nil
    }

    private static func scan(_ log: File, header: [UInt8], headerRight: Bool, pageSize: Int, bigEndian: Bool, main: File?) -> Finding? {
        let frameSize = 24 + pageSize
        // The salts of this WAL: the header's, or with a damaged header its first frame's.
        var salts = (word(header, 16, bigEndian: true), word(header, 20, bigEndian: true))
        if !headerRight {
            guard let first = log.read(24, at: 32) else { return nil }
            salts = (word(first, 8, bigEndian: true), word(first, 12, bigEndian: true))
        }
        var seed = (word(header, 24, bigEndian: true), word(header, 28, bigEndian: true))
        var bad: Int? = headerRight ? nil : 0
        var badIsCommit = false
        // What the committed transactions after the bad frame leave each page as, and how many there are.
        var transaction: [(page: Int, image: ArraySlice<UInt8>)] = []
        var final: [Int: ArraySlice<UInt8>] = [:]
        var lost = 0
        var goesOn = false
        var index = 1
        while let frame = log.read(frameSize, at: 32 + (index - 1) * frameSize) {
            let stored = (word(frame, 16, bigEndian: true), word(frame, 20, bigEndian: true))
            let ofThisFile = (word(frame, 8, bigEndian: true), word(frame, 12, bigEndian: true)) == salts
            let holds = ofThisFile && checksum(frame, 24..<frameSize, checksum(frame, 0..<8, seed, bigEndian: bigEndian), bigEndian: bigEndian) == stored
            let isCommit = word(frame, 4, bigEndian: true) != 0
            if bad == nil {
                if !holds {
                    bad = index
                    badIsCommit = ofThisFile && isCommit
                }
            } else if holds {
                goesOn = true
                transaction.append((Int(word(frame, 0, bigEndian: true)), frame[24...]))
                if isCommit {
                    for (page, image) in transaction { final[page] = image }
                    transaction = []
                    lost += 1
                }
            }
            seed = stored
            index += 1
        }
        // A commit frame that fails with later frames holding is lost too (its header still says commit).
        if goesOn, badIsCommit { lost += 1 }
        guard let bad, goesOn, lost > 0 else { return nil }
        // Nothing is lost when the database file holds every page as those transactions left it
        // (a checkpoint copied them there before the damage).
        guard final.contains(where: { page, image in main?.read(pageSize, at: (page - 1) * pageSize).map { $0[...] != image } ?? true })
                || (final.isEmpty && badIsCommit) else { return nil }
        let what = !headerRight ? "its header is damaged, so SQLite ignores the whole file" : "it fails its checksum, or its salts are not the file's"
        return Finding(frame: bad, what: what, commits: lost)
    }

    /// A file read with `pread`, closed when it goes.
    private final class File {
        let fd: Int32
        init?(_ url: URL) {
            fd = open(url.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
        }
        deinit { closeFile(fd) }

        /// `count` bytes at `offset`, or nil when the file ends before.
        func read(_ count: Int, at offset: Int) -> [UInt8]? {
            var buffer = [UInt8](repeating: 0, count: count)
            var done = 0
            while done < count {
                let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return nil }
                done += n
            }
            return buffer
        }
    }

    /// The 32-bit word at `at`, in the byte order the WAL's magic gives its checksums (the
    /// header's and frame headers' fields are big-endian).
    private static func word(_ bytes: [UInt8], _ at: Int, bigEndian: Bool) -> UInt32 {
        let (a, b, c, d) = (UInt32(bytes[at]), UInt32(bytes[at + 1]), UInt32(bytes[at + 2]), UInt32(bytes[at + 3]))
        return bigEndian ? a << 24 | b << 16 | c << 8 | d : d << 24 | c << 16 | b << 8 | a
    }

    /// SQLite's WAL checksum over `range` (a multiple of 8 bytes), from `seed`.
    private static func checksum(_ bytes: [UInt8], _ range: Range<Int>, _ seed: (UInt32, UInt32), bigEndian: Bool) -> (UInt32, UInt32) {
        var (s0, s1) = seed
        var at = range.lowerBound
        while at + 8 <= range.upperBound {
            s0 = s0 &+ word(bytes, at, bigEndian: bigEndian) &+ s1
            s1 = s1 &+ word(bytes, at + 4, bigEndian: bigEndian) &+ s0
            at += 8
        }
        return (s0, s1)
    }
}

/// POSIX `close`, under a name no method shadows.
private func closeFile(_ fd: Int32) {
    _ = close(fd)
}
