#ifndef CBASELINE_H
#define CBASELINE_H

/// The floor the benchmarks measure against: what a plain C program does to copy the tables
/// of one SQLite file into another of the same schema. Each function opens both files, runs
/// in one transaction on a destination with SQLite's defaults (a rollback journal, which a
/// new file's pages never enter, and synchronous=FULL: the sqlite3 shell's), runs `finish`
/// (SQL, may be NULL) before the commit, and returns the number of rows copied, or -1 with a
/// message in `error`.

/// One prepared SELECT and one prepared INSERT per table, sqlite3_bind_value per column.
long long cbaseline_copy_loop(const char *source, const char *destination, const char *const *tables, int tableCount,
                              const char *finish, char *error, int errorSize);

/// ATTACH the source, then INSERT INTO main.T SELECT * FROM source.T per table.
long long cbaseline_attach_copy(const char *source, const char *destination, const char *const *tables, int tableCount,
                                const char *finish, char *error, int errorSize);

/// The floor of the context benchmarks: inserts `count` rows into `path` (opened in WAL mode with
/// synchronous=NORMAL) in one transaction through one prepared `insert` whose parameters are
/// ?1 the key (1…count), ?2 an integer ((key × 7919) mod count), ?3 a double (key / 3), ?4 text
/// ("item <key>"), ?5 a date as seconds (700,000,000 + key), ?6 a boolean (key mod 2): the values
/// `context-bench` gives every side. Runs `finish` (may be NULL) before the commit; returns the rows
/// inserted, or -1 with a message in `error`.
long long cbaseline_insert_loop(const char *path, const char *insert, long long count, const char *finish,
                                char *error, int errorSize);

/// Reads every row `select` gives (one prepared statement, every column read as its storage class
/// gives it, text and blobs by pointer) twice on one connection, the second time timed (`seconds`);
/// returns the rows read, or -1 with a message in `error`.
long long cbaseline_read_loop(const char *path, const char *select, double *seconds, char *error, int errorSize);
/// The atomic store benchmarks' floor (atomic.c): the benchmark model's objects (`pairs` of A and
/// as many of B, the values migration-bench's source store holds) in plain C structs, written and
/// read in the atomic store's layout (docs/atomic-format.md), SHA-256 included.
typedef struct cbaseline_atomic_store cbaseline_atomic_store;

/// Builds the objects in memory.
cbaseline_atomic_store *cbaseline_atomic_make(long long pairs);
void cbaseline_atomic_free(cbaseline_atomic_store *store);
/// How many objects.
long long cbaseline_atomic_count(const cbaseline_atomic_store *store);
/// A sum over every value (so nothing parsed goes unused).
double cbaseline_atomic_digest(const cbaseline_atomic_store *store);

/// Serializes the objects with `metadata` (a binary property list) as the metadata, writes
/// `<path>-tmp-c`, fsyncs it, renames it over `path` and fsyncs the folder. Returns the file's
/// size, or -1 with a message in `error`.
long long cbaseline_atomic_save(const cbaseline_atomic_store *store, const char *path, const unsigned char *metadata,
                                long long metadataLength, char *error, int errorSize);

/// Reads a file of the benchmark model whole, checks it (magic, version, length, SHA-256)
/// and parses every object into structs. Returns NULL with a message in `error`.
cbaseline_atomic_store *cbaseline_atomic_load(const char *path, char *error, int errorSize);

#endif
