import Foundation
import ObjectStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A file-system failure: the call, the path and the `errno` it returned.
public struct FileSystemError: Error, Sendable, CustomStringConvertible {
    /// The system call that failed (`open`, `write`, `fsync`, `rename`, ...).
    public var call: String
    /// The path it worked on.
    public var path: String
    /// The `errno` value (`EIO`, `ENOSPC`, ...).
    public var errno: Int32

    /// Creates an error.
    public init(call: String, path: String, errno: Int32) {
        self.call = call
        self.path = path
        self.errno = errno
    }

    public var description: String { "\(call)(\(path)) failed: \(String(cString: strerror(errno)))" }
}

/// Every file-system call the atomic writer makes, one function each, so
/// tests can inject failures (`EIO`, `ENOSPC`) at any step.
public protocol AtomicFileSystem: Sendable {
    /// Creates a new file for writing (failing if it exists) and returns its descriptor: with
    /// exactly these permission bits, or with nil, `0666` less the process's umask, as any new file.
    func createFile(_ path: String, mode: UInt32?) throws -> Int32
    /// Writes all of `bytes` to `fd`.
    func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws
    /// Flushes `fd` to stable storage.
    func synchronize(_ fd: Int32, path: String) throws
    /// Closes `fd`.
    func closeFile(_ fd: Int32, path: String) throws
    /// Renames `from` over `to` atomically.
    func move(_ from: String, _ to: String) throws
    /// Flushes a directory's entries (after a rename) to stable storage.
    func synchronizeDirectory(_ path: String) throws
    /// Removes a file.
    func remove(_ path: String) throws
}

/// The real file system.
public struct SystemFileSystem: AtomicFileSystem {
    /// Creates the real file system.
    public init() {}

    public func createFile(_ path: String, mode: UInt32?) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(mode ?? 0o666))
        guard fd >= 0 else { throw FileSystemError(call: "open", path: path, errno: errno) }
        // The creation mode passes through the umask: a file replacing another gets exactly its mode.
        if let mode { _ = fchmod(fd, mode_t(mode)) }
        return fd
    }

    public func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw FileSystemError(call: "write", path: path, errno: errno)
            }
            offset += written
        }
    }

    public func synchronize(_ fd: Int32, path: String) throws {
        guard fsync(fd) == 0 else { throw FileSystemError(call: "fsync", path: path, errno: errno) }
    }

    public func closeFile(_ fd: Int32, path: String) throws {
        guard close(fd) == 0 else { throw FileSystemError(call: "close", path: path, errno: errno) }
    }

    public func move(_ from: String, _ to: String) throws {
        guard rename(from, to) == 0 else { throw FileSystemError(call: "rename", path: to, errno: errno) }
    }

    public func synchronizeDirectory(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FileSystemError(call: "open", path: path, errno: errno) }
        defer { _ = close(fd) }
        guard fsync(fd) == 0 else { throw FileSystemError(call: "fsync", path: path, errno: errno) }
    }

    public func remove(_ path: String) throws {
        guard unlink(path) == 0 else { throw FileSystemError(call: "unlink", path: path, errno: errno) }
    }
}

extension AtomicFileSystem {
    /// Replaces the file at `path` with `parts`, one after another: write a temporary file beside it (with
    /// the old file's permission bits and, where the process may, its owner; a new file's follow
    /// the umask), fsync it,
    /// rename it over `path`, fsync the directory. A failure at any step leaves the old
    /// file as it was and removes the temporary file.
    func replaceAtomically(_ path: String, temporary: String, with parts: [ArraySlice<UInt8>]) throws {
        let kept = FileOperations.attributes(URL(filePath: path))
        let fd = try createFile(temporary, mode: kept?.mode)
        if let kept { try? FileOperations.apply(kept, to: URL(filePath: temporary)) }
        do {
            for part in parts { try part.withUnsafeBytes { try writeAll(fd, $0, path: temporary) } }
            try synchronize(fd, path: temporary)
        } catch {
            try? closeFile(fd, path: temporary)
            try? remove(temporary)
            throw error
        }
        do {
            try closeFile(fd, path: temporary)
            try move(temporary, path)
        } catch {
            try? remove(temporary)
            throw error
        }
        try synchronizeDirectory((path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent)
    }
}
