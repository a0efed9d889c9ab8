import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// File operations the store types share: renames, symbolic links resolved, file
/// identity, what a path names, modes kept across a replacement, and locks between processes.
public enum FileOperations {
    /// Renames `source` over `destination` in one step (POSIX `rename`), replacing it.
    public static func rename(_ source: URL, over destination: URL) throws {
        guard Foundation.rename(source.path, destination.path) == 0 else {
            let code = errno
            throw StoreError(.io, "cannot rename \(source.path) to \(destination.path): \(String(cString: strerror(code)))", url: destination)
        }
    }

    /// Whether `url` names a folder (following links).
    public static func isFolder(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// Moves every file under the folder `source` into the folder `destination` (made if
    /// missing), at the same relative paths, replacing files of the same name; then removes
    /// `source`. Files `destination` had and `source` not stay.
    public static func mergeFolder(_ source: URL, into destination: URL) throws {
        let fm = FileManager.default
        if !fm.fileExists(atPath: destination.path) {
            // Nothing to merge with: one rename moves it all.
            try rename(source, over: destination)
            return
        }
        for name in try fm.contentsOfDirectory(atPath: source.path) {
            let from = source.appending(path: name), to = destination.appending(path: name)
            if isFolder(from) { try mergeFolder(from, into: to) } else { try rename(from, over: to) }
        }
        try fm.removeItem(at: source)
    }

    /// Copies the folders of a store's file set from `source`'s set to `destination`'s (the
    /// files the main file names, like SQLite's external data, which a copy of the main file needs).
    public static func copyFolders(of source: [URL], to destination: [URL]) throws {
        for (from, to) in zip(source, destination).dropFirst() where isFolder(from) {
            try? FileManager.default.removeItem(at: to)
            try FileManager.default.copyItem(at: from, to: to)
        }
    }

    /// Moves `source` to `destination`, which must not exist: never replaces a file another
    /// process put there meanwhile (a hard link, then the old name removed; where the file
    /// system has no hard links, a rename after checking).
    /// - Throws: ``StoreError`` with ``StoreError/Code/alreadyExists`` when `destination` exists.
    public static func moveNew(_ source: URL, to destination: URL) throws {
        if link(source.path, destination.path) == 0 {
            unlink(source.path)
            return
        }
        let code = errno
        if code == EEXIST { throw StoreError(.alreadyExists, "already exists (another process made it meanwhile)", url: destination) }
        guard [EPERM, ENOTSUP, EOPNOTSUPP, EXDEV, EMLINK].contains(code), !FileManager.default.fileExists(atPath: destination.path) else {
            throw StoreError(.io, "cannot move \(source.lastPathComponent) to \(destination.path): \(String(cString: strerror(code)))", url: destination)
        }
        try rename(source, over: destination)
    }

    /// `url` with every symbolic link resolved: the file itself when it exists, else its
    /// folder resolved with the name appended. Two spellings of one store resolve alike,
    /// so a store reached through a link and through its real path is one store (one
    /// lock file, one set of sidecars).
    public static func resolved(_ url: URL) -> URL {
        guard url.isFileURL else { return url }
        if let real = realPath(url.path) { return URL(filePath: real) }
        let folder = url.deletingLastPathComponent()
        if let real = realPath(folder.path) { return URL(filePath: real).appending(path: url.lastPathComponent) }
        return url.standardizedFileURL
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// A file's identity on its device (following links): equal for two paths to one file.
    public struct Identity: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64
    }

    /// The identity of the file at `url`, or nil when there is none.
    public static func identity(_ url: URL) -> Identity? {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return nil }
        return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Checks that `url` names a regular file this process may read: a typed error that
    /// says what is true otherwise (no such file, permission denied, a folder, a FIFO, a
    /// device), before anything opens it (opening a FIFO would wait for a writer).
    public static func checkRegularFile(_ url: URL, kind: String = "store") throws {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            let code = errno
            if code == ENOENT { throw StoreError(.notFound, "no \(kind)", url: url) }
            throw StoreError(.io, "cannot read the file: \(String(cString: strerror(code)))", url: url)
        }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else {
            let what = switch type {
            case S_IFDIR: "a folder"
            case S_IFIFO: "a FIFO"
            case S_IFCHR: "a character device"
            case S_IFBLK: "a block device"
            case S_IFSOCK: "a socket"
            default: "not a regular file"
            }
            throw StoreError(.io, "not a \(kind) file: it is \(what)", url: url)
        }
        guard access(url.path, R_OK) == 0 else {
            let code = errno
            throw StoreError(.io, "cannot read the file: \(String(cString: strerror(code)))", url: url)
        }
    }

    /// A file's permission bits and owner, to keep across a replacement.
    public struct Attributes: Sendable, Hashable {
        /// The permission bits (`0o644`).
        public var mode: UInt32
        let owner: UInt32
        let group: UInt32
    }

    /// The permission bits and owner of the file at `url` (following links), or nil.
    public static func attributes(_ url: URL) -> Attributes? {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return nil }
        return Attributes(mode: UInt32(info.st_mode) & 0o7777, owner: UInt32(info.st_uid), group: UInt32(info.st_gid))
    }

    /// Gives the file at `url` these permission bits, and this owner where the process may.
    public static func apply(_ attributes: Attributes, to url: URL) throws {
        guard chmod(url.path, mode_t(attributes.mode)) == 0 else {
            let code = errno
            throw StoreError(.io, "cannot set the file's mode: \(String(cString: strerror(code)))", url: url)
        }
        var info = stat()
        if stat(url.path, &info) == 0, info.st_uid != attributes.owner || info.st_gid != attributes.group {
            _ = chown(url.path, uid_t(attributes.owner), gid_t(attributes.group))   // only a privileged process may; the mode is what protects
        }
    }

    /// Says so when a failed write (`code`, an errno) is explained by a full file system at `url`:
    /// `ENOSPC`, a quota, or a short write (reported as `EIO`) with less than 1 MiB left there.
    /// What a writer changes in a store's files: the main file's identity, size and
    /// modification time, and those of every other non-empty file of the set but shared-memory
    /// and lock files (which readers touch too). Two equal fingerprints taken apart mean no
    /// process committed to the store in between (a log that appears empty and goes is no commit).
    public struct Fingerprint: Hashable, Sendable {
        private var files: [String: [Int64]] = [:]

        /// The fingerprint of a store's files, main file first (`StoreType.fileURLs(for:)`).
        public init(of urls: [URL]) {
            for (index, url) in urls.enumerated() where !url.lastPathComponent.hasSuffix("-shm") && !url.lastPathComponent.hasSuffix("-lock") {
                var status = stat()
                guard stat(url.path, &status) == 0, index == 0 || status.st_size > 0 else { continue }
                files[url.lastPathComponent] = [Int64(status.st_dev), Int64(status.st_ino), Int64(status.st_size),
                                                Int64(status.st_mtim.tv_sec), Int64(status.st_mtim.tv_nsec)]
            }
        }
    }

    public static func fullDiskExplanation(_ code: Int32, at url: URL) -> String? {
        guard code == ENOSPC || code == EDQUOT || code == EIO else { return nil }
        var info = statvfs()
        let folder = url.hasDirectoryPath ? url.path : url.deletingLastPathComponent().path
        guard statvfs(folder, &info) == 0 else { return code == ENOSPC ? "the disk is full" : nil }
        let free = Int(info.f_bavail) * Int(info.f_frsize)
        guard code != EIO || free < 1 << 20 else { return nil }
        return "the disk is full (\(free) bytes free on the file system of \(folder))"
    }
}

/// An exclusive lock between processes (and between separate opens in one process):
/// `flock` on a lock file, held until released or the process ends (a killed
/// process's locks are released by the system, so a lock never outlives its owner).
///
/// ```swift
/// let lock = try FileLock(url: storeURL.appending… "-lock", waiting: 5, what: storeURL)
/// defer { lock.release() }
/// ```
public final class FileLock: Sendable {
    private let descriptor: Int32
    /// The lock file.
    public let url: URL

    /// Takes the lock, creating the lock file if needed; waits up to `waiting` seconds
    /// for another holder to release it.
    /// - Throws: ``StoreError`` with ``StoreError/Code/busy`` naming `what` when it stays
    ///   held, ``StoreError/Code/io`` when the lock file cannot be opened.
    public init(url: URL, waiting: Double, what: URL) throws {
        let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let code = errno
            throw StoreError(.io, "cannot open the lock file \(url.lastPathComponent): \(String(cString: strerror(code)))", url: what)
        }
        let deadline = Date().addingTimeInterval(waiting)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK || code == EINTR else {
                close(fd)
                throw StoreError(.io, "cannot lock \(url.lastPathComponent): \(String(cString: strerror(code)))", url: what)
            }
            guard Date() < deadline else {
                close(fd)
                throw StoreError(.busy, "the store is busy: another process is writing it (its lock \(url.lastPathComponent) is held); try again when it is done", url: what)
            }
            usleep(20_000)
        }
        descriptor = fd
        self.url = url
    }

    /// Takes the lock on an existing file or folder itself (`flock`, which SQLite's and LMDB's
    /// own locks do not touch), without waiting.
    /// - Throws: ``StoreError`` with ``StoreError/Code/busy`` naming `what` when another
    ///   process holds it, ``StoreError/Code/notFound`` when there is no such file.
    public init(existing url: URL, what: URL) throws {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw StoreError(code == ENOENT ? .notFound : .io, "cannot open \(url.lastPathComponent): \(String(cString: strerror(code)))", url: what)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            throw code == EWOULDBLOCK
                ? StoreError(.busy, "the store is busy: another process is migrating it", url: what)
                : StoreError(.io, "cannot lock \(url.lastPathComponent): \(String(cString: strerror(code)))", url: what)
        }
        descriptor = fd
        self.url = url
    }

    /// Whether a lock on `url` could be taken now, without waiting (and without keeping it):
    /// false while a live process holds it.
    public static func isFree(_ url: URL) -> Bool {
        let fd = open(url.path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return true }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) == 0
    }

    /// Releases the lock (closing the descriptor releases it).
    public func release() {
        close(descriptor)
    }
}
