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
/// their records say. What it cannot: a changed byte inside a key or a value (LMDB
/// keeps no checksums; the store's own row decoding catches what breaks its format).
struct LMDBPageWalk {
    let data: Data
    let pageSize: Int
    let lastPage: UInt64
    let url: URL
    /// Called every 1,024 pages, to drop the pages walked so far from memory.
    let release: () -> Void
    private var visited: Set<UInt64> = []

    init(data: Data, pageSize: Int, lastPage: UInt64, url: URL, release: @escaping () -> Void = {}) {
        self.data = data
        self.pageSize = pageSize
        self.lastPage = lastPage
        self.url = url
        self.release = release
    }

    private mutating func visit(_ page: UInt64, _ name: String) throws {
        guard visited.insert(page).inserted else { throw fail("\(name) reaches page \(page) twice") }
        if visited.count % 1_024 == 0 { release() }
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
    /// named database the main tree lists.
    mutating func walk(metaOffset: Int) throws {
        for (index, name) in [(0, "the free-page tree"), (1, "the main tree")] {
            let record = metaOffset + 40 + index * 48
            try walkDatabase(record: record, name: name, subdatabases: index == 1)
        }
    }

    private mutating func walkDatabase(record: Int, name: String, subdatabases: Bool) throws {
        let depth = u16(record + 6)
        let root = u64(record + 40)
        guard root != Self.invalidPage else { return }
        guard depth >= 1, depth <= 64 else { throw fail("\(name) says it is \(depth) levels deep") }
        try walkPage(root, levelsLeft: depth, name: name, subdatabases: subdatabases)
    }

    private mutating func walkPage(_ number: UInt64, levelsLeft: Int, name: String, subdatabases: Bool) throws {
        guard number >= 2, number <= lastPage else { throw fail("\(name) names page \(number), outside pages 2–\(lastPage)") }
        try visit(number, name)
        let base = Int(number) * pageSize
        guard u64(base) == number else { throw fail("page \(number) says it is page \(u64(base))") }
        let flags = u16(base + 10)
        let isBranch = flags & 0x01 != 0, isLeaf = flags & 0x02 != 0
        guard isBranch != isLeaf, flags & (0x04 | 0x08) == 0 else { throw fail("page \(number) of \(name) has flags \(flags)") }
        guard isLeaf || levelsLeft > 1 else { throw fail("page \(number) of \(name) is a branch below the depth its tree has") }
        guard isBranch || levelsLeft == 1 else { throw fail("page \(number) of \(name) is a leaf above the depth its tree has") }
        let lower = u16(base + 12), upper = u16(base + 14)
        guard lower >= 16, lower <= upper, upper <= pageSize, (lower - 16) % 2 == 0 else {
            throw fail("page \(number) of \(name) has free-space bounds \(lower)–\(upper)")
        }
        if flags & 0x20 != 0 { return }   // LEAF2: fixed-size keys only (duplicate sets); nothing to follow
        let count = (lower - 16) / 2
        guard isLeaf || count >= 1 else { throw fail("branch page \(number) of \(name) has no children") }
        for i in 0..<count {
            let offset = u16(base + 16 + 2 * i)
            guard offset >= upper, offset + 8 <= pageSize else { throw fail("node \(i) of page \(number) lies outside its page") }
            let node = base + offset
            let low = u32(node) & 0xFFFF | (u32(node + 2) & 0xFFFF) << 16
            let nodeFlags = u16(node + 4)
            let keySize = u16(node + 6)
            guard offset + 8 + keySize <= pageSize else { throw fail("the key of node \(i) of page \(number) overruns its page") }
            if isBranch {
                let child = low | UInt64(nodeFlags) << 32
                try walkPage(child, levelsLeft: levelsLeft - 1, name: name, subdatabases: subdatabases)
                continue
            }
            let dataSize = Int(low)
            let dataStart = offset + 8 + keySize
            if nodeFlags & 0x01 != 0 {
                // Big data: the first overflow page, which says how many pages the value spans.
                guard dataStart + 8 <= pageSize else { throw fail("node \(i) of page \(number) overruns its page") }
                try walkOverflow(u64(base + dataStart), bytes: dataSize, name: name)
            } else {
                guard dataStart + dataSize <= pageSize else { throw fail("the value of node \(i) of page \(number) overruns its page") }
                if nodeFlags & 0x02 != 0 {
                    guard subdatabases, dataSize == 48 else { throw fail("node \(i) of page \(number) holds a malformed database record") }
                    let key = String(decoding: data[base + offset + 8 ..< base + offset + 8 + keySize], as: UTF8.self)
                    try walkDatabase(record: base + dataStart, name: "database \(key)", subdatabases: false)
                }
            }
        }
    }

    private mutating func walkOverflow(_ number: UInt64, bytes: Int, name: String) throws {
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
    }
}
