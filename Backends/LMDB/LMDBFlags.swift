import CLMDB

/// Swift names for LMDB's environment flags (`mdb_env_open`).
public struct LMDBEnvironmentFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `MDB_NOSUBDIR`: the path is the data file itself; the lock file is `<path>-lock`.
    public static let noSubdirectory = LMDBEnvironmentFlags(rawValue: UInt32(MDB_NOSUBDIR))
    /// `MDB_RDONLY`: open the environment read-only.
    public static let readOnly = LMDBEnvironmentFlags(rawValue: UInt32(MDB_RDONLY))
    /// `MDB_NOTLS`: tie read transactions to their object, not to the thread.
    public static let noThreadLocalStorage = LMDBEnvironmentFlags(rawValue: UInt32(MDB_NOTLS))
    /// `MDB_NOSYNC`: do not fsync at commit (not used by ObjectStore: commits are durable).
    public static let noSync = LMDBEnvironmentFlags(rawValue: UInt32(MDB_NOSYNC))
    /// `MDB_NOMETASYNC`: do not fsync the meta page at commit.
    public static let noMetaSync = LMDBEnvironmentFlags(rawValue: UInt32(MDB_NOMETASYNC))
}

/// Swift names for LMDB's database flags (`mdb_dbi_open`).
public struct LMDBDatabaseFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `MDB_CREATE`: create the named database if it does not exist.
    public static let create = LMDBDatabaseFlags(rawValue: UInt32(MDB_CREATE))
    /// `MDB_REVERSEKEY`: compare keys from the end (a database flag, not an environment one).
    public static let reverseKey = LMDBDatabaseFlags(rawValue: UInt32(MDB_REVERSEKEY))
    /// `MDB_INTEGERKEY`: keys are native unsigned integers.
    public static let integerKey = LMDBDatabaseFlags(rawValue: UInt32(MDB_INTEGERKEY))
}

/// Swift names for LMDB's write flags (`mdb_put`).
public struct LMDBWriteFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `MDB_NOOVERWRITE`: fail with `MDB_KEYEXIST` rather than replace an existing key.
    public static let noOverwrite = LMDBWriteFlags(rawValue: UInt32(MDB_NOOVERWRITE))
    /// `MDB_APPEND`: the key sorts after every key of the database (fails with `MDB_KEYEXIST` otherwise).
    public static let append = LMDBWriteFlags(rawValue: UInt32(MDB_APPEND))
    /// `MDB_RESERVE`: make room for the value and return it, for the caller to fill before the transaction ends.
    public static let reserve = LMDBWriteFlags(rawValue: UInt32(MDB_RESERVE))
}

/// Swift names for LMDB's transaction flags (`mdb_txn_begin`).
public struct LMDBTransactionFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `MDB_RDONLY`: a read-only transaction.
    public static let readOnly = LMDBTransactionFlags(rawValue: UInt32(MDB_RDONLY))
}
