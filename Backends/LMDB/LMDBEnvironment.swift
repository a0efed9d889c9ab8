import CLMDB
import CZlib
import Foundation
import ObjectStore
import Synchronization

/// An LMDB return code that is not `MDB_SUCCESS`.
struct LMDBError: Error {
    let code: Int32
    let what: String
    var message: String { "\(what): \(String(cString: mdb_strerror(code))) (LMDB code \(code))" }
}

/// One LMDB environment: a data file with `MDB_NOSUBDIR` and its `-lock` file.
///
/// Shared by threads as liblmdb allows: read transactions run at once (the environment is
/// opened with `MDB_NOTLS`), write transactions one at a time (liblmdb's writer lock, which
/// also orders them with other processes'), and the map's size is changed and databases are
/// opened only while no other transaction of this process runs. ``access`` keeps that last
/// rule: every transaction holds it shared, a resize, a database open and ``close()``
/// exclusively. ``databases`` and ``closed`` change only under it held exclusively; that is
/// what `@unchecked` stands for. Every return code is checked where the call is made; values
/// are copied out before their transaction ends.
final class LMDBEnvironment: @unchecked Sendable {
    let handle: OpaquePointer
    let path: String
    let readOnly: Bool
    /// Held shared by each transaction, exclusively to resize the map, open databases or close.
    private let access = ReadWriteLock()
    /// The databases opened so far: written holding ``access`` exclusively, read holding it shared.
    private(set) var databases: [String: MDB_dbi] = [:]
    /// Written holding ``access`` exclusively.
    private var closed = false
    /// Whether every value carries its checksum (format version 3, `docs/lmdb-format.md`): set
    /// when a store of that version is opened or created, before any value is read or written.
    private let checksums = Atomic<Bool>(false)
    var checksummed: Bool {
        get { checksums.load(ordering: .relaxed) }
        set { checksums.store(newValue, ordering: .relaxed) }
    }
    /// Commits are not flushed one by one; ``sync()`` owes them to the disk.
    private let deferSync: Bool
    /// How many times this process changed the map's size (it may then be at another address):
    /// a snapshot that remembers where the map was checks it before releasing pages there.
    let mapGeneration = Atomic<Int>(0)
    /// Where the map was found (``mapRegion()``), at which ``mapGeneration``: each transaction
    /// drops the pages it reads there (``LMDBMapResidency``).
    private let foundRegion = Mutex<(generation: Int, base: UInt, size: Int)?>(nil)
    /// The resident size after the map was last dropped (``LMDBMapResidency``).
    let residencyBaseline = LMDBMapResidency.Baseline()

    static let maxDatabases: UInt32 = 2_048
    /// Reader slots in the lock file, shared by every process that opens the store (64 bytes each).
    static let maxReaders: UInt32 = 510
    static let minimumMapSize = 64 << 20

    /// Opens the environment; `mapSize` is the first map size (it grows when full).
    init(path: String, readOnly: Bool, mapSize: Int? = nil, deferSync: Bool = false) throws {
        var env: OpaquePointer?
        try Self.check(mdb_env_create(&env), "cannot create an LMDB environment")
        guard let env else { throw LMDBError(code: EINVAL, what: "mdb_env_create returned no environment") }
        do {
            try Self.check(mdb_env_set_maxdbs(env, Self.maxDatabases), "cannot set the number of databases")
            // Reads run at once, each in a reader slot of its own (MDB_NOTLS): more than liblmdb's 126.
            try Self.check(mdb_env_set_maxreaders(env, Self.maxReaders), "cannot set the number of readers")
            let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
            try Self.check(mdb_env_set_mapsize(env, max(mapSize ?? Self.minimumMapSize, size * 2)), "cannot set the map size")
            var flags: LMDBEnvironmentFlags = [.noSubdirectory, .noThreadLocalStorage]
            if readOnly { flags.insert(.readOnly) }
            if deferSync && !readOnly { flags.insert(.noSync) }
            try Self.reserveLockFile(path + "-lock")
            try Self.check(mdb_env_open(env, path, flags.rawValue, 0o644), "cannot open the LMDB environment")
        } catch {
            mdb_env_close(env)
            throw error
        }
        handle = env
        self.path = path
        self.readOnly = readOnly
        self.deferSync = deferSync && !readOnly
    }

    deinit { close() }

    /// The smallest lock file reserved: more than liblmdb's own size for ``maxReaders`` readers
    /// (about 32 KiB), which then keeps the file's size (a larger file only means more reader slots).
    static let lockFileSize = 64 << 10

    /// Allocates the lock file's blocks before liblmdb maps it. liblmdb sizes a new lock file with
    /// `ftruncate` (a sparse file) and writes it through a shared map: on a full file system the
    /// first write to an unallocated page is a `SIGBUS`, not an error. Allocated here, a full disk
    /// is an `ENOSPC` error. A lock file that cannot be opened for writing is left to liblmdb.
    static func reserveLockFile(_ path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        defer { closeDescriptor(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return }
        let rc = posix_fallocate(fd, 0, off_t(max(Int(info.st_size), lockFileSize)))
        guard rc == 0 || rc == EOPNOTSUPP || rc == EINVAL else {
            let reason = FileOperations.fullDiskExplanation(rc, at: URL(filePath: path)) ?? String(cString: strerror(rc))
            if info.st_size == 0 { unlink(path) }
            throw LMDBError(code: rc, what: "cannot make the lock file \((path as NSString).lastPathComponent): \(reason)")
        }
    }

    /// Forces every commit to stable storage (what a store opened with deferred durability
    /// owes at close); a failure is an error, never ignored.
    func sync() throws {
        try access.shared {
            guard deferSync, !closed else { return }
            let rc = mdb_env_sync(handle, 1)
            if let full = FileOperations.fullDiskExplanation(rc, at: URL(filePath: path)) {
                throw LMDBError(code: rc, what: "cannot flush the store to disk: \(full)")
            }
            try Self.check(rc, "cannot flush the store to disk")
        }
    }

    func close() {
        access.exclusive {
            guard !closed else { return }
            closed = true
            if deferSync { mdb_env_sync(handle, 1) }
            mdb_env_close(handle)
        }
    }

    static func check(_ rc: Int32, _ what: @autoclosure () -> String) throws {
        guard rc == MDB_SUCCESS else { throw LMDBError(code: rc, what: what()) }
    }

    /// Opens (creating when `create`) the named databases; missing ones are skipped when not creating.
    /// No other transaction of the process runs meanwhile (liblmdb's rule for `mdb_dbi_open`).
    func openDatabases(_ names: [String], create: Bool) throws {
        let opening = { (txn: LMDBTransaction) in try Self.openHandles(names, create: create, txn) }
        try access.exclusive {
            try retrying(alone: true) { try create ? attemptWrite(opening) : attemptRead(opening) }
        }
    }

    private static func openHandles(_ names: [String], create: Bool, _ txn: LMDBTransaction) throws {
        for name in names where txn.environment.databases[name] == nil {
            var dbi: MDB_dbi = 0
            let rc = mdb_dbi_open(txn.handle, name, create ? LMDBDatabaseFlags.create.rawValue : 0, &dbi)
            if rc == MDB_NOTFOUND && !create { continue }
            try Self.check(rc, "cannot open database \(name)")
            txn.opened.append((name, dbi))
        }
        // Committed by the caller (the handles are the environment's once their transaction commits).
    }

    /// What one try at a transaction came to: its result, or a map to grow or adopt first
    /// (which needs every other transaction of the process ended: ``access`` held exclusively).
    private enum Attempt<T> {
        case done(T)
        /// The map is full: grow it and run the transaction again.
        case mapFull
        /// Another process grew the map: adopt its size and begin again.
        case mapResized
    }

    /// Begins a read-only transaction; nil when another process grew the map (``adoptMapSize()`` first).
    private func beginRead() throws -> OpaquePointer? {
        var txn: OpaquePointer?
        let rc = mdb_txn_begin(handle, nil, LMDBTransactionFlags.readOnly.rawValue, &txn)
        if rc == MDB_MAP_RESIZED { return nil }
        try Self.check(rc, "cannot begin a read transaction")
        return txn!
    }

    /// Takes the map size another process set (``access`` held exclusively).
    private func adoptMapSize() throws {
        mapGeneration.add(1, ordering: .relaxed)
        try Self.check(mdb_env_set_mapsize(handle, 0), "cannot adopt the new map size")
    }

    /// Runs `body`, which reads through a snapshot's transaction, while the map cannot move
    /// (``access`` held shared, as every transaction of the environment holds it).
    func reading<T>(_ body: () throws -> T) rethrows -> T {
        try access.shared(body)
    }

    /// Whether the database `name` is open.
    func hasDatabase(_ name: String) -> Bool {
        access.shared { databases[name] != nil }
    }

    /// Returns once no transaction of this process is running (every one holds ``access``
    /// shared): what a store's close waits for before it syncs.
    func drain() {
        access.exclusive {}
    }

    /// Runs `attempt` holding ``access`` shared until it is done; a map to grow or adopt is
    /// grown or adopted holding it exclusively, in between. `alone`: the caller holds ``access``
    /// exclusively already, for the attempts and the resizes both.
    private func retrying<T>(alone: Bool = false, _ attempt: () throws -> Attempt<T>) throws -> T {
        while true {
            let seen = mapGeneration.load(ordering: .relaxed)
            let outcome = try alone ? attempt() : access.shared(attempt)
            if case .done(let result) = outcome { return result }
            let resize = {
                // Two writers that both found the map full grow it once: the second finds it grown.
                if case .mapFull = outcome, self.mapGeneration.load(ordering: .relaxed) == seen { try self.grow() }
                if case .mapResized = outcome { try self.adoptMapSize() }
            }
            try alone ? resize() : access.exclusive(resize)
        }
    }

    /// A read-only transaction that stays open until the returned object is released:
    /// every read through it sees the environment at this moment. It keeps the
    /// environment open, and takes the databases opened so far with it.
    func snapshot() throws -> LMDBSnapshotTransaction {
        try retrying {
            let region = currentRegion()
            guard let txn = try beginRead() else { return .mapResized }
            return .done(LMDBSnapshotTransaction(environment: self, handle: txn, databases: databases, region: region))
        }
    }

    /// Runs `body` in a read-only transaction, at the same time as other threads' transactions.
    func read<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        try retrying { try attemptRead(body) }
    }

    private func attemptRead<T>(_ body: (LMDBTransaction) throws -> T) throws -> Attempt<T> {
        let region = currentRegion()
        guard let txn = try beginRead() else { return .mapResized }
        let transaction = LMDBTransaction(handle: txn, environment: self)
        transaction.releasing = region
        let result: T
        do {
            result = try body(transaction)
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        // Commit frees the transaction whatever it returns: never abort after it.
        try Self.check(mdb_txn_commit(txn), "cannot end a read transaction")
        adopt(transaction.opened)
        return .done(result)
    }

    /// Runs `body` in a write transaction, committed if it returns; other threads' reads go on
    /// meanwhile, their writes wait (liblmdb's writer lock). When the map is full the transaction
    /// is abandoned, the map doubled, and `body` run again. A store whose file was moved or
    /// replaced since this environment opened it is not written (``checkNotMoved()``).
    func write<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        try retrying { try attemptWrite(body) }
    }

    private func attemptWrite<T>(_ body: (LMDBTransaction) throws -> T) throws -> Attempt<T> {
        let region = currentRegion()
        var txn: OpaquePointer?
        let begun = mdb_txn_begin(handle, nil, 0, &txn)
        if begun == MDB_MAP_RESIZED { return .mapResized }
        try Self.check(begun, "cannot begin a write transaction")
        do {
            try checkNotMoved()
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        let transaction = LMDBTransaction(handle: txn!, environment: self)
        // A store being filled (deferred syncs) drops the map after each write instead (each moves
        // a batch): reading the resident size every few writes made a 500,000-object conversion
        // into LMDB take 9.2 s instead of 8.5 s.
        if !deferSync { transaction.releasing = region }
        let result: T
        do {
            result = try body(transaction)
        } catch let error as LMDBError where error.code == MDB_MAP_FULL {
            mdb_txn_abort(txn)
            return .mapFull
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        // Commit frees the transaction whatever it returns: never abort after it.
        let rc = mdb_txn_commit(txn)
        if rc == MDB_MAP_FULL { return .mapFull }
        if let full = FileOperations.fullDiskExplanation(rc, at: URL(filePath: path)) {
            throw LMDBError(code: rc, what: "cannot commit: \(full)")
        }
        try Self.check(rc, "cannot commit")
        adopt(transaction.opened)
        if deferSync { releaseMapPages() }
        return .done(result)
    }

    /// The handles a transaction opened, the environment's once it committed: only transactions
    /// run while ``access`` is held exclusively open any (``openDatabases(_:create:)``).
    private func adopt(_ opened: [(String, MDB_dbi)]) {
        for (name, dbi) in opened { databases[name] = dbi }
    }

    /// Runs `body` holding the writer lock (a write transaction that writes nothing), then aborts it.
    func holdingWriteLock<T>(_ body: () throws -> T) throws -> T {
        try access.shared {
            var txn: OpaquePointer?
            try Self.check(mdb_txn_begin(handle, nil, 0, &txn), "cannot begin a write transaction")
            defer { mdb_txn_abort(txn) }
            return try body()
        }
    }

    /// Throws ``StoreError/Code/storeReplaced`` when the path this environment opened names
    /// another file now, or none (another process moved the store aside or recreated it): a
    /// commit would land in a file that is no longer the store.
    func checkNotMoved() throws {
        var fd: mdb_filehandle_t = -1
        var opened = stat(), current = stat()
        guard mdb_env_get_fd(handle, &fd) == MDB_SUCCESS, fstat(fd, &opened) == 0 else { return }
        if stat(path, &current) != 0 || current.st_ino != opened.st_ino || current.st_dev != opened.st_dev {
            throw StoreError(.storeReplaced, "not written: another process moved this store aside or replaced it after it was opened; open it again",
                             url: URL(filePath: path))
        }
    }

    /// Drops the map's pages from the process's resident set. Every page a read touches
    /// stays mapped, with the pages around it (the kernel maps neighbours on each fault),
    /// so a long scan or a bulk write would otherwise count the whole file as the process's
    /// memory. The map is a shared read-only file mapping: a page touched again is mapped
    /// again from the page cache, with the same bytes, so this is safe while other
    /// transactions read.
    ///
    /// liblmdb does not say where the map is (`me_mapaddr` is set only for `MDB_FIXEDMAP`),
    /// so it is found from a value a read transaction returns: the value lies in a page of
    /// the map, whose header holds its page number. The address is used only when meta
    /// pages 0 and 1 (page number and magic) are where it says. Call it outside a transaction of this thread.
    private func releaseMapPages() {
        if let region = currentRegion() { madvise(region.base, region.size, MADV_DONTNEED) }
    }

    /// Where the map is and how large, at the current ``mapGeneration``, found once per
    /// generation; nil when it cannot be told. Call it outside a transaction of this thread.
    private func currentRegion() -> (base: UnsafeMutableRawPointer, size: Int, generation: Int)? {
        let generation = mapGeneration.load(ordering: .relaxed)
        if let found = foundRegion.withLock({ $0 }), found.generation == generation, let base = UnsafeMutableRawPointer(bitPattern: found.base) {
            return (base, found.size, generation)
        }
        guard let (base, size) = mapRegion() else { return nil }
        foundRegion.withLock { $0 = (generation, UInt(bitPattern: base), size) }
        return (base, size, generation)
    }

    /// Where the map is and how large (see ``releaseMapPages()``); nil when it cannot be told.
    /// Touches the environment: call it inside its owner's lock.
    func mapRegion() -> (UnsafeMutableRawPointer, Int)? {
        var stat = MDB_stat()
        var info = MDB_envinfo()
        guard mdb_env_stat(handle, &stat) == MDB_SUCCESS, mdb_env_info(handle, &info) == MDB_SUCCESS,
              let meta = databases[LMDBLayout.meta], let txn = try? beginRead() else { return nil }
        defer { mdb_txn_abort(txn) }
        let pageSize = UInt(stat.ms_psize)
        var key = MDB_val()
        var value = MDB_val()
        let rc = LMDBLayout.metadataKey.withUnsafeBytes { bytes in
            key = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            return mdb_get(txn, meta, &key, &value)
        }
        guard rc == MDB_SUCCESS, let inside = value.mv_data, pageSize.nonzeroBitCount == 1 else { return nil }
        let page = UInt(bitPattern: inside) & ~(pageSize - 1)
        let number = UInt(UnsafeRawPointer(bitPattern: page)!.loadUnaligned(as: UInt64.self))
        guard number < UInt(info.me_mapsize) / pageSize, let base = UnsafeMutableRawPointer(bitPattern: page - number * pageSize) else { return nil }
        for meta in 0..<2 {
            let header = base + meta * Int(pageSize)
            guard header.loadUnaligned(as: UInt64.self) == UInt64(meta),
                  header.loadUnaligned(fromByteOffset: 16, as: UInt32.self) == LMDBStoreType.magic else { return nil }
        }
        return (base, info.me_mapsize)
    }

    /// The current map size in bytes.
    var mapSize: Int {
        var info = MDB_envinfo()
        return mdb_env_info(handle, &info) == MDB_SUCCESS ? info.me_mapsize : 0
    }

    private func grow() throws {
        mapGeneration.add(1, ordering: .relaxed)
        var info = MDB_envinfo()
        try Self.check(mdb_env_info(handle, &info), "cannot read the environment's size")
        try Self.check(mdb_env_set_mapsize(handle, info.me_mapsize * 2), "cannot grow the map")
        logger.debug("\((path as NSString).lastPathComponent): the map grew to \(info.me_mapsize * 2 >> 20) MiB")
    }
}

/// A read transaction kept open across calls (a store's snapshot). It holds its
/// environment open, and is aborted when released.
///
/// `@unchecked Sendable`: a read transaction may move between threads (`MDB_NOTLS`) and is used
/// by one at a time, under the lock of the snapshots that share it.
final class LMDBSnapshotTransaction: @unchecked Sendable {
    let environment: LMDBEnvironment
    let transaction: LMDBTransaction

    /// `region` is the map as it was when the transaction began. It moves when this process
    /// changes the map's size while the snapshot is open (a write that fills the map; a size
    /// another process set, adopted): no read of the snapshot runs meanwhile
    /// (``LMDBEnvironment/reading(_:)``), and its next read finds the map anew before it releases
    /// pages (``LMDBTransaction/releasing``).
    fileprivate init(environment: LMDBEnvironment, handle: OpaquePointer, databases: [String: MDB_dbi],
                     region: (base: UnsafeMutableRawPointer, size: Int, generation: Int)?) {
        self.environment = environment
        transaction = LMDBTransaction(handle: handle, environment: environment, databases: databases)
        transaction.releasing = region
    }

    deinit { mdb_txn_abort(transaction.handle) }
}

/// One transaction. Valid only inside the closure it was given to (or while its
/// ``LMDBSnapshotTransaction`` lives).
///
/// `@unchecked Sendable` for its snapshot's sake (which keeps it under a lock); a transaction
/// given to a closure never leaves that closure's thread.
final class LMDBTransaction: @unchecked Sendable {
    let handle: OpaquePointer
    unowned let environment: LMDBEnvironment
    fileprivate var opened: [(String, MDB_dbi)] = []
    /// The databases a snapshot took with it (it must not read the environment's, which its store changes).
    private let fixedDatabases: [String: MDB_dbi]?
    /// The map, for a transaction that drops the pages it reads from the resident set as it goes
    /// (every transaction whose environment could tell where its map is, but the writes of a store
    /// being filled, dropped after each: a conversion or an export reads the whole file through one
    /// snapshot, and a batch written may look up keys all over it). A lookup, a write or a delete
    /// counts 16 pages and a step of a cursor one, each with the pages of its value (a long row
    /// spans overflow pages); every 32, the process's resident size is read, and the map's pages
    /// are released (`madvise(MADV_DONTNEED)`) once it has grown by ``LMDBMapResidency/target``
    /// since they last were (``LMDBMapResidency``).
    /// Releasing is safe in a write transaction too: the map is read-only, its pages come back
    /// from the page cache at the same addresses, and the pages a transaction writes are its own.
    /// `generation` is the environment's ``LMDBEnvironment/mapGeneration`` when the region was
    /// found: a map resized since is found again (its old address may hold other memory now).
    var releasing: (base: UnsafeMutableRawPointer, size: Int, generation: Int)?
    private lazy var residency = LMDBMapResidency(every: 32, baseline: environment.residencyBaseline)

    private func touch(_ pages: Int) {
        guard let current = releasing else { return }
        residency.count(pages) {
            let generation = environment.mapGeneration.load(ordering: .relaxed)
            guard current.generation == generation else {
                releasing = environment.mapRegion().map { ($0.0, $0.1, generation) }
                return
            }
            madvise(current.base, current.size, MADV_DONTNEED)
        }
    }

    init(handle: OpaquePointer, environment: LMDBEnvironment, databases: [String: MDB_dbi]? = nil) {
        self.handle = handle
        self.environment = environment
        self.fixedDatabases = databases
    }

    func database(_ name: String) -> MDB_dbi? {
        (fixedDatabases ?? environment.databases)[name] ?? opened.first { $0.0 == name }?.1
    }

    /// The value under `key`, copied out of the map; nil when absent.
    func get(_ name: String, _ key: Data) throws -> Data? {
        try withValue(name, key) { $0.map { Data($0) } }
    }

    /// Runs `body` with the value under `key` in the map (nil when absent), its checksum
    /// checked and left out; the buffer is valid only during the call.
    func withValue<T>(_ name: String, _ key: Data, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        try withStoredValue(name, key) { stored in
            guard let stored else { return try body(nil) }
            return try key.withUnsafeBytes { try body(try checked(name, $0, stored)) }
        }
    }

    /// The value under `key` as the file holds it (with its checksum, in a checksummed store).
    func withStoredValue<T>(_ name: String, _ key: Data, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        guard let dbi = database(name) else { return try body(nil) }
        var v = MDB_val()
        let rc = key.withUnsafeBytes { keyBytes in
            var k = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            return mdb_get(handle, dbi, &k, &v)
        }
        touch(16 + v.mv_size / 4_096)
        if rc == MDB_NOTFOUND { return try body(nil) }
        try LMDBEnvironment.check(rc, "cannot read from \(name)")
        return try body(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    /// The checksum of a value: CRC-32 (zlib's) over the database's name, the key and the value,
    /// so that a value moved to another key or database fails it as surely as a changed byte.
    static func checksum(_ name: String, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> UInt32 {
        var crc = name.utf8.withContiguousStorageIfAvailable { crc32(0, $0.baseAddress, UInt32($0.count)) } ?? 0
        crc = crc32(crc, key.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt32(key.count))
        crc = crc32(crc, value.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt32(value.count))
        return UInt32(truncatingIfNeeded: crc)
    }

    /// `stored` without its checksum, once the checksum is found right (as it is, in a store
    /// without checksums).
    /// - Throws: ``StoreError`` (corrupt) naming the database and key when it is not.
    private func checked(_ name: String, _ key: UnsafeRawBufferPointer, _ stored: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        guard environment.checksummed else { return stored }
        let value = UnsafeRawBufferPointer(rebasing: stored.prefix(max(0, stored.count - 4)))
        guard stored.count >= 4, stored.loadUnaligned(fromByteOffset: stored.count - 4, as: UInt32.self).littleEndian == Self.checksum(name, key, value) else {
            let shown = key.prefix(24).map { String(format: "%02x", $0) }.joined()
            throw StoreError(.corrupt, "the value under key \(shown) of the database \(name) fails its checksum: the file is damaged",
                             url: URL(filePath: environment.path))
        }
        return value
    }

    /// Whether `key` is present, without copying its value.
    func contains(_ name: String, _ key: Data) throws -> Bool {
        guard let dbi = database(name) else { return false }
        return try key.withUnsafeBytes { keyBytes in
            var k = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            var v = MDB_val()
            let rc = mdb_get(handle, dbi, &k, &v)
            touch(16)
            if rc == MDB_NOTFOUND { return false }
            try LMDBEnvironment.check(rc, "cannot read from \(name)")
            return true
        }
    }

    /// Writes `value` under `key`, with its checksum in a checksummed store (the room reserved in
    /// the map and filled there, no copy made).
    func put(_ name: String, _ key: Data, _ value: some ContiguousBytes, flags: LMDBWriteFlags = []) throws {
        guard let dbi = database(name) else { throw LMDBError(code: MDB_NOTFOUND, what: "no database \(name)") }
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { valueBytes in
                var k = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                touch(16 + valueBytes.count / 4_096)
                guard environment.checksummed else {
                    var v = MDB_val(mv_size: valueBytes.count, mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                    try LMDBEnvironment.check(mdb_put(handle, dbi, &k, &v, flags.rawValue), "cannot write to \(name)")
                    return
                }
                var v = MDB_val(mv_size: valueBytes.count + 4, mv_data: nil)
                try LMDBEnvironment.check(mdb_put(handle, dbi, &k, &v, flags.union(.reserve).rawValue), "cannot write to \(name)")
                guard let room = v.mv_data else { throw LMDBError(code: EINVAL, what: "LMDB reserved no room in \(name)") }
                if let base = valueBytes.baseAddress { room.copyMemory(from: base, byteCount: valueBytes.count) }
                let sum = Self.checksum(name, keyBytes, valueBytes).littleEndian
                withUnsafeBytes(of: sum) { (room + valueBytes.count).copyMemory(from: $0.baseAddress!, byteCount: 4) }
            }
        }
    }

    @discardableResult
    func delete(_ name: String, _ key: Data) throws -> Bool {
        guard let dbi = database(name) else { return false }
        return try key.withUnsafeBytes { keyBytes in
            var k = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            let rc = mdb_del(handle, dbi, &k, nil)
            touch(16)
            if rc == MDB_NOTFOUND { return false }
            try LMDBEnvironment.check(rc, "cannot delete from \(name)")
            return true
        }
    }

    /// How many entries a database holds, from its own statistics (`mdb_stat`): nothing is read.
    func entryCount(_ name: String) throws -> Int {
        guard let dbi = database(name) else { return 0 }
        var stat = MDB_stat()
        try LMDBEnvironment.check(mdb_stat(handle, dbi, &stat), "cannot read the statistics of \(name)")
        return Int(stat.ms_entries)
    }

    /// Walks a database's entries in key order from the first key ≥ `from` (the first
    /// key when nil) with one cursor, while `body` returns true. The buffers point into the
    /// map and are valid only during the call.
    func walk(_ name: String, from: Data?, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        guard let dbi = database(name) else { return }
        var cursor: OpaquePointer?
        try LMDBEnvironment.check(mdb_cursor_open(handle, dbi, &cursor), "cannot open a cursor on \(name)")
        defer { mdb_cursor_close(cursor) }
        var k = MDB_val()
        var v = MDB_val()
        var rc: Int32
        if let from {
            rc = from.withUnsafeBytes { bytes in
                k = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
            }
        } else {
            rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
        }
        while rc == MDB_SUCCESS {
            let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
            guard try body(key, try checked(name, key, UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))) else { return }
            touch(1 + v.mv_size / 4_096)
            rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        if rc != MDB_NOTFOUND { try LMDBEnvironment.check(rc, "cannot walk \(name)") }
    }

    /// The last key of a database, or nil when it is empty.
    func lastKey(_ name: String) throws -> Data? {
        guard let dbi = database(name) else { return nil }
        var cursor: OpaquePointer?
        try LMDBEnvironment.check(mdb_cursor_open(handle, dbi, &cursor), "cannot open a cursor on \(name)")
        defer { mdb_cursor_close(cursor) }
        var k = MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(cursor, &k, &v, MDB_LAST)
        if rc == MDB_NOTFOUND { return nil }
        try LMDBEnvironment.check(rc, "cannot read the last key of \(name)")
        return Data(bytes: k.mv_data, count: k.mv_size)
    }
}

/// POSIX `close`, under a name no method shadows.
private func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}
