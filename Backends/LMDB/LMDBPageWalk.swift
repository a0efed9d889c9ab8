import Foundation
import ObjectStore

/// Walks every page an LMDB file's current meta page reaches, checking each before
/// liblmdb would follow it: liblmdb trusts its pages, so a damaged one makes it read
/// out of bounds (a crash) instead of failing.
///
/// The on-disk layout walked (LMDB data version 1, 64-bit): a page begins with its
/// own number (8 bytes), 2 bytes of padding, its flags (2 bytes: branch 0x01, leaf
/// 0x02, overflow 0x04, meta 0x08, leaf2 0x20), then either the lower and upper
/// bounds of its free space (2 + 2 bytes) or, for an overflow page, its page count
/// (4 bytes); 16 bytes in all. A branch or leaf page then holds 2-byte offsets of
/// its nodes. A node is 8 bytes — the data size (leaf) or the child page number
/// (branch, with the flags as its high bits) in 4 bytes, flags (2: big data 0x01,
/// sub-database 0x02, duplicates 0x04), key size (2) — then the key and, in a leaf,
/// the data: inline, or for big data the 8-byte number of its first overflow page,
/// or for a sub-database its 48-byte record (whose last 8 bytes are its root page).
/// A meta page holds the two main records (free pages, main database) at offset 40.
///
/// What it detects: page numbers out of the file, pages that are not what their
/// parent says (number, kind), bounds and offsets outside the page, keys and data
/// that overrun their page, overflow runs out of the file, loops, trees deeper than
/// their records say; tree and node flags no store writes (sorted duplicates, which liblmdb
/// would follow into structures that are not there); keys out of order (in a page, or outside the range their parent
/// gives them); a tree holding other numbers of entries, branch, leaf or overflow pages
/// than its record says; and pages neither in a tree nor free, or both (liblmdb's own
/// audit: every page below the last is a meta page, a page of a tree, or listed free).
/// What it cannot: a changed byte inside a value (a store of format version 3 checks each
/// value's checksum when it reads it; `docs/lmdb-format.md`).
struct LMDBPageWalk {
    let data: Data
    let pageSize: Int
    let lastPage: UInt64
    let url: URL
    /// Drops the pages walked so far from memory; called as often as ``LMDBMapResidency`` says.
    let release: () -> Void
    private var residency = LMDBMapResidency(every: 1, baseline: LMDBMapResidency.Baseline())
    private var visited: Set<UInt64> = []
    /// The pages the free-page tree lists as free.
    private var free: [UInt64] = []

    /// What one tree holds, counted while it is walked, against what its record says.
    private struct Counts: Equatable {
        var branch: UInt64 = 0, leaf: UInt64 = 0, overflow: UInt64 = 0, entries: UInt64 = 0
    }

    /// A key: where it is in the file and how long it is.
    private typealias Key = (at: Int, count: Int)

    init(data: Data, pageSize: Int, lastPage: UInt64, url: URL, release: @escaping () -> Void = {}) {
        self.data = data
        self.pageSize = pageSize
        self.lastPage = lastPage
        self.url = url
        self.release = release
    }

    private mutating func visit(_ page: UInt64, _ name: String) throws {
        guard visited.insert(page).inserted else { throw fail("\(name) reaches page \(page) twice") }
        residency.count(1, drop: release)
    }

    private func fail(_ message: String) -> StoreError {
        StoreError(.corrupt, "damaged page: \(message)", url: url)
    }

    private func u16(_ at: Int) -> Int {
        data.withUnsafeBytes { Int(UInt16(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt16.self))) }
    }

    private func u32(_ at: Int) -> UInt64 {
        data.withUnsafeBytes { UInt64(UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt32.self))) }
    }

    private func u64(_ at: Int) -> UInt64 {
        data.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
    }

    private static let invalidPage = UInt64.max

    /// Walks the free-page and main trees of the meta page at `metaOffset`, and every
    /// named database the main tree lists; then checks that every page is accounted for.
    mutating func walk(metaOffset: Int) throws {
        for (index, name) in [(0, "the free-page tree"), (1, "the main tree")] {
            let record = metaOffset + 40 + index * 48
            try walkDatabase(record: record, name: name, subdatabases: index == 1, freeList: index == 0)
        }
        // Meta pages 0 and 1, the trees' pages, the free ones: every page once, all of them.
        for page in free {
            guard page >= 2, page <= lastPage else { throw fail("the free-page tree lists page \(page), outside pages 2–\(lastPage)") }
            guard !visited.contains(page) else { throw fail("page \(page) is both in use and listed free") }
        }
        let accounted = UInt64(visited.count) + UInt64(Set(free).count) + 2
        guard accounted == lastPage + 1, Set(free).count == free.count else {
            throw fail("\(lastPage + 1) pages, of which \(visited.count) are in use, \(free.count) listed free and 2 meta pages: "
                       + (accounted < lastPage + 1 ? "\(lastPage + 1 - accounted) pages are lost" : "pages are counted twice"))
        }
    }

    private mutating func walkDatabase(record: Int, name: String, subdatabases: Bool, freeList: Bool = false) throws {
        // The tree's flags: integer keys for the free-page tree, none for the others (a store opens
        // its databases without flags; a flag such as sorted duplicates sends liblmdb down
        // structures the pages do not hold). The free-page tree's record also keeps the
        // environment's flags, of which a store's environment has `MDB_NOSUBDIR` (0x4000).
        let flags = u16(record + 4)
        guard (freeList ? flags & ~0x4000 : flags) == (freeList ? 0x08 : 0) else { throw fail("\(name) has database flags \(flags), which no store writes") }
        let depth = u16(record + 6)
        let root = u64(record + 40)
        let recorded = Counts(branch: u64(record + 8), leaf: u64(record + 16), overflow: u64(record + 24), entries: u64(record + 32))
        guard root != Self.invalidPage else {
            guard recorded == Counts() else { throw fail("\(name) is empty but records \(recorded.entries) entries") }
            return
        }
        guard depth >= 1, depth <= 64 else { throw fail("\(name) says it is \(depth) levels deep") }
        var counts = Counts()
        try walkPage(root, levelsLeft: depth, name: name, subdatabases: subdatabases, freeList: freeList, lower: nil, upper: nil, counts: &counts)
        guard counts == recorded else {
            throw fail("\(name) holds \(counts.entries) entries in \(counts.branch) branch, \(counts.leaf) leaf and \(counts.overflow) overflow pages; "
                       + "its record says \(recorded.entries) in \(recorded.branch), \(recorded.leaf) and \(recorded.overflow)")
        }
    }

    /// The order of two keys: liblmdb's default (bytes, then length), or for the free-page tree
    /// its integer keys (transaction numbers, native byte order).
    private func compare(_ a: Key, _ b: Key, integers: Bool) -> Int {
        if integers, a.count == 8, b.count == 8 {
            let (x, y) = (u64(a.at), u64(b.at))
            return x < y ? -1 : x > y ? 1 : 0
        }
        let order = data.withUnsafeBytes { memcmp($0.baseAddress! + a.at, $0.baseAddress! + b.at, min(a.count, b.count)) }
        return order != 0 ? Int(order) : a.count - b.count
    }

    private mutating func walkPage(_ number: UInt64, levelsLeft: Int, name: String, subdatabases: Bool, freeList: Bool,
                                   lower: Key?, upper: Key?, counts: inout Counts) throws {
        guard number >= 2, number <= lastPage else { throw fail("\(name) names page \(number), outside pages 2–\(lastPage)") }
        try visit(number, name)
        let base = Int(number) * pageSize
        guard u64(base) == number else { throw fail("page \(number) says it is page \(u64(base))") }
        let flags = u16(base + 10)
        let isBranch = flags & 0x01 != 0, isLeaf = flags & 0x02 != 0
        guard isBranch != isLeaf, flags & (0x04 | 0x08) == 0 else { throw fail("page \(number) of \(name) has flags \(flags)") }
        guard isLeaf || levelsLeft > 1 else { throw fail("page \(number) of \(name) is a branch below the depth its tree has") }
        guard isBranch || levelsLeft == 1 else { throw fail("page \(number) of \(name) is a leaf above the depth its tree has") }
        let lowerBound = u16(base + 12), upperBound = u16(base + 14)
        guard lowerBound >= 16, lowerBound <= upperBound, upperBound <= pageSize, (lowerBound - 16) % 2 == 0 else {
            throw fail("page \(number) of \(name) has free-space bounds \(lowerBound)–\(upperBound)")
        }
        if isBranch { counts.branch += 1 } else { counts.leaf += 1 }
        let count = (lowerBound - 16) / 2
        if flags & 0x20 != 0 {   // LEAF2: fixed-size keys only (duplicate sets); nothing to follow
            counts.entries += UInt64(count)
            return
        }
        guard isLeaf || count >= 1 else { throw fail("branch page \(number) of \(name) has no children") }
        var nodes: [(offset: Int, key: Key)] = []
        for i in 0..<count {
            let offset = u16(base + 16 + 2 * i)
            guard offset >= upperBound, offset + 8 <= pageSize else { throw fail("node \(i) of page \(number) lies outside its page") }
            let keySize = u16(base + offset + 6)
            guard offset + 8 + keySize <= pageSize else { throw fail("the key of node \(i) of page \(number) overruns its page") }
            nodes.append((offset, (base + offset + 8, keySize)))
        }
        // Keys in order, and inside the range the parent gives this page (a branch's first key is not used).
        let keyed = isBranch ? Array(nodes.dropFirst()) : nodes
        for (index, node) in keyed.enumerated() {
            if index > 0, compare(keyed[index - 1].key, node.key, integers: freeList) >= 0 {
                throw fail("the keys of page \(number) of \(name) are out of order")
            }
            if let lower, compare(node.key, lower, integers: freeList) < 0 { throw fail("a key of page \(number) of \(name) sorts before its parent's") }
            if let upper, compare(node.key, upper, integers: freeList) >= 0 { throw fail("a key of page \(number) of \(name) sorts after its parent's") }
        }
        for (i, (offset, key)) in nodes.enumerated() {
            let node = base + offset
            let low = u32(node) & 0xFFFF | (u32(node + 2) & 0xFFFF) << 16
            let nodeFlags = u16(node + 4)
            if isBranch {
                let child = low | UInt64(nodeFlags) << 32
                try walkPage(child, levelsLeft: levelsLeft - 1, name: name, subdatabases: subdatabases, freeList: freeList,
                             lower: i == 0 ? lower : key, upper: i + 1 < nodes.count ? nodes[i + 1].key : upper, counts: &counts)
                continue
            }
            counts.entries += 1
            // A leaf's node is plain, big data, or (in the main tree) a database record: nothing else.
            guard nodeFlags == 0 || nodeFlags == 0x01 || (nodeFlags == 0x02 && subdatabases) else {
                throw fail("node \(i) of page \(number) of \(name) has flags \(nodeFlags), which no store writes")
            }
            let dataSize = Int(low)
            let dataStart = offset + 8 + key.count
            var value = base + dataStart
            if nodeFlags & 0x01 != 0 {
                // Big data: the first overflow page, which says how many pages the value spans.
                guard dataStart + 8 <= pageSize else { throw fail("node \(i) of page \(number) overruns its page") }
                let first = u64(base + dataStart)
                counts.overflow += try walkOverflow(first, bytes: dataSize, name: name)
                value = Int(first) * pageSize + 16
            } else {
                guard dataStart + dataSize <= pageSize else { throw fail("the value of node \(i) of page \(number) overruns its page") }
                if nodeFlags == 0x02 {
                    guard dataSize == 48 else { throw fail("node \(i) of page \(number) holds a malformed database record") }
                    let name = String(decoding: data[key.at ..< key.at + key.count], as: UTF8.self)
                    try walkDatabase(record: base + dataStart, name: "database \(name)", subdatabases: false)
                }
            }
            if freeList { try readFreePages(at: value, bytes: dataSize, page: number) }
        }
    }

    /// The page numbers a value of the free-page tree lists: a count, then that many numbers (8 bytes each).
    private mutating func readFreePages(at offset: Int, bytes: Int, page: UInt64) throws {
        guard bytes >= 8 else { throw fail("a value of page \(page) of the free-page tree is \(bytes) bytes") }
        let count = u64(offset)
        guard count <= UInt64(bytes / 8 - 1) else { throw fail("a value of page \(page) of the free-page tree lists \(count) pages in \(bytes) bytes") }
        for index in 0..<Int(count) { free.append(u64(offset + 8 + 8 * index)) }
    }

    /// Visits the pages of the overflow run that starts at `number`, and returns how many it spans.
    private mutating func walkOverflow(_ number: UInt64, bytes: Int, name: String) throws -> UInt64 {
        guard number >= 2, number <= lastPage else { throw fail("\(name) names overflow page \(number), outside the file") }
        let base = Int(number) * pageSize
        guard u64(base) == number, u16(base + 10) & 0x04 != 0 else { throw fail("page \(number) of \(name) is not the overflow page it should be") }
        let pages = u32(base + 12)
        guard pages >= 1, number + pages - 1 <= lastPage, Int(pages) * pageSize >= bytes + 16 else {
            throw fail("overflow page \(number) of \(name) spans \(pages) pages, which do not hold its \(bytes) bytes")
        }
        for page in number ..< number + pages {
            try visit(page, name)
        }
        return pages
    }
}
