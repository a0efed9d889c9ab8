#ifndef CBASELINE_H
#define CBASELINE_H

/// The floor the benchmarks measure against: what a plain C program does to copy the tables
/// of one SQLite file into another of the same schema. Each function opens both files, runs
/// in one transaction on a destination in WAL mode with synchronous=NORMAL, runs `finish`
/// (SQL, may be NULL) before the commit, and returns the number of rows copied, or -1 with a
/// message in `error`.

/// One prepared SELECT and one prepared INSERT per table, sqlite3_bind_value per column.
long long cbaseline_copy_loop(const char *source, const char *destination, const char *const *tables, int tableCount,
                              const char *finish, char *error, int errorSize);

/// ATTACH the source, then INSERT INTO main.T SELECT * FROM source.T per table.
long long cbaseline_attach_copy(const char *source, const char *destination, const char *const *tables, int tableCount,
                                const char *finish, char *error, int errorSize);

#endif
