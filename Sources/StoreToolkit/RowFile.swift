#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ObjectStore
import Synchronization

/// A file read a range at a time through a descriptor held open: what ``PackedRows`` read
/// on demand lie in. A file renamed over this path later changes nothing read here (the
/// descriptor keeps the file it opened). A file written or cut short in place since it was
/// opened gives a `storeReplaced` error at the next read from the file, never bytes of two
/// versions or a read past its end: every read compares the file's size and modification
/// time with those it had when it was opened, and its status-change time while it still has
/// a name (so a write whose time is set back is seen too; a write within the same clock tick
/// as the file's last change before the open goes unseen, and a `chmod` is taken for a write).
/// Bytes already read into the last blocks (by `readRows`, for rows) are served from them.
/// Closed when the last rows holding it are gone.
public final class RowFile: Sendable {
    /// The path the file was opened at, named in errors.
    public let path: String
    /// The file's size when it was opened.
    public let size: Int
    /// The modification and status-change times when the file was opened.
    private let modified: timespec, changed: timespec
    private let descriptor: Int32
    /// The bytes from where each of the last few small reads that missed began: rows read one
    /// after another, in a few tables at once (an object and the objects it refers to), come
    /// from one `pread` a block, not one each.
    private let blocks = Mutex<(blocks: [(start: Int, bytes: [UInt8])], next: Int)>(([], 0))
    private static let blockSize = 64 << 10, blockCount = 4

    /// Opens the file at `path` for reading.
    /// - Throws: `StoreError` with code `io` when it cannot be opened.
    public init(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Self.failure("open", path, errno) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            _ = close(fd)
            throw Self.failure("fstat", path, code)
        }
        self.path = path
        self.size = Int(info.st_size)
        self.modified = info.st_mtim
        self.changed = info.st_ctim
        self.descriptor = fd
    }

    deinit { _ = close(descriptor) }

    /// The bytes of `range`, which must lie within ``size``.
    /// - Throws: `StoreError` with code `io` when the read fails, `corrupt` when the file has
    ///   become shorter than `range` since it was opened.
    public func read(_ range: Range<Int>) throws -> [UInt8] {
        precondition(range.lowerBound >= 0 && range.upperBound <= size, "a range within the file")
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: range.count) { buffer, count in
            while count < buffer.count {
                let n = pread(descriptor, buffer.baseAddress! + count, buffer.count - count, off_t(range.lowerBound + count))
                if n < 0, errno == EINTR { continue }
                if n < 0 { failure = errno }
                if n <= 0 { return }
                count += n
            }
        }
        if failure != 0 { throw Self.failure("read", path, failure) }
        // After the read: a write that came before it has changed the file's time by now.
        try checkUnchanged(at: range.lowerBound + bytes.count)
        guard bytes.count == range.count else {
            throw StoreError(.corrupt, "the file ends before byte offset \(range.upperBound), short of the \(size) bytes it had when it was opened",
                             url: URL(filePath: path))
        }
        return bytes
    }

    /// Throws when the file's size or modification time is no longer what it was at open.
    private func checkUnchanged(at offset: Int) throws {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw Self.failure("fstat", path, errno) }
        func same(_ a: timespec, _ b: timespec) -> Bool { a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec }
        // The status-change time moves with every write and with a modification time set back
        // (`touch -r`); it also moves when the file is renamed over (its last link goes), which
        // changes nothing in it, so it counts only while the file still has a name.
        guard Int(info.st_size) == size, same(info.st_mtim, modified), info.st_nlink == 0 || same(info.st_ctim, changed) else {
            let what = Int(info.st_size) < size ? "cut short (\(info.st_size) bytes, \(size) when it was opened)"
                                                 : Int(info.st_size) > size ? "lengthened (\(info.st_size) bytes, \(size) when it was opened)"
                                                 : same(info.st_mtim, modified) ? "changed (written with its time set back, or given another mode or owner)" : "written"
            throw StoreError(.storeReplaced, "the file was \(what) in place since it was opened and checked, so what it holds now is not what was checked; open it again (reading at byte offset \(offset))",
                             url: URL(filePath: path))
        }
    }

    /// The bytes of `range` as ``read(_:)`` reads them, a short range from the blocks last read
    /// for rows when one holds it (rows read one at a time).
    func readRows(_ range: Range<Int>) throws -> [UInt8] {
        guard range.count <= Self.blockSize / 4 else { return try read(range) }
        let cached = blocks.withLock { cache -> [UInt8]? in
            for block in cache.blocks where range.lowerBound >= block.start && range.upperBound <= block.start + block.bytes.count {
                return Array(block.bytes[(range.lowerBound - block.start)..<(range.upperBound - block.start)])
            }
            return nil
        }
        if let cached { return cached }
        let bytes = try read(range.lowerBound..<Swift.min(size, range.lowerBound + Self.blockSize))
        blocks.withLock { cache in
            if cache.blocks.count < Self.blockCount { cache.blocks.append((range.lowerBound, bytes)) } else { cache.blocks[cache.next] = (range.lowerBound, bytes) }
            cache.next = (cache.next + 1) % Self.blockCount
        }
        return Array(bytes[..<range.count])
    }

    private static func failure(_ call: String, _ path: String, _ code: Int32) -> StoreError {
        StoreError(.io, "cannot read the file: \(call)(\(path)) failed: \(String(cString: strerror(code)))", url: URL(filePath: path))
    }
}
