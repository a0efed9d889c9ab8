#include "cbaseline.h"
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

static long long fail(sqlite3 *db, const char *what, char *error, int errorSize) {
    snprintf(error, (size_t)errorSize, "%s: %s", what, db ? sqlite3_errmsg(db) : "cannot open");
    return -1;
}

/// Opens the destination with SQLite's own defaults, as the sqlite3 shell does (a rollback
/// journal, which a new file's pages never enter, and synchronous=FULL: each page is written
/// once, where WAL writes it twice), attaches `source` when given (outside a transaction, as
/// SQLite requires), then BEGIN.
static sqlite3 *open_destination(const char *destination, const char *source, char *error, int errorSize) {
    sqlite3 *db = NULL;
    sqlite3_stmt *attach = NULL;
    int ok = sqlite3_open(destination, &db) == SQLITE_OK
        && sqlite3_exec(db, "PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL", NULL, NULL, NULL) == SQLITE_OK;
    if (ok && source) {
        ok = sqlite3_prepare_v2(db, "ATTACH DATABASE ?1 AS source", -1, &attach, NULL) == SQLITE_OK
            && sqlite3_bind_text(attach, 1, source, -1, SQLITE_TRANSIENT) == SQLITE_OK
            && sqlite3_step(attach) == SQLITE_DONE;
        sqlite3_finalize(attach);
    }
    if (!ok || sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        fail(db, destination, error, errorSize);
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

static long long commit(sqlite3 *db, const char *finish, long long rows, char *error, int errorSize) {
    if (finish && sqlite3_exec(db, finish, NULL, NULL, NULL) != SQLITE_OK) rows = fail(db, finish, error, errorSize);
    if (rows >= 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) rows = fail(db, "COMMIT", error, errorSize);
    sqlite3_close(db);
    return rows;
}

long long cbaseline_copy_loop(const char *source, const char *destination, const char *const *tables, int tableCount,
                              const char *finish, char *error, int errorSize) {
    sqlite3 *src = NULL;
    if (sqlite3_open_v2(source, &src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        long long r = fail(src, source, error, errorSize);
        sqlite3_close(src);
        return r;
    }
    sqlite3 *dst = open_destination(destination, NULL, error, errorSize);
    if (!dst) { sqlite3_close(src); return -1; }
    long long rows = 0;
    char sql[4096];
    for (int t = 0; t < tableCount && rows >= 0; t++) {
        sqlite3_stmt *select = NULL, *insert = NULL;
        snprintf(sql, sizeof sql, "SELECT * FROM \"%s\"", tables[t]);
        if (sqlite3_prepare_v2(src, sql, -1, &select, NULL) != SQLITE_OK) { rows = fail(src, sql, error, errorSize); break; }
        int columns = sqlite3_column_count(select);
        int n = snprintf(sql, sizeof sql, "INSERT INTO \"%s\" VALUES (", tables[t]);
        for (int c = 0; c < columns && n < (int)sizeof sql - 4; c++) n += snprintf(sql + n, sizeof sql - (size_t)n, c ? ",?" : "?");
        snprintf(sql + n, sizeof sql - (size_t)n, ")");
        if (sqlite3_prepare_v2(dst, sql, -1, &insert, NULL) != SQLITE_OK) {
            rows = fail(dst, sql, error, errorSize);
        } else {
            while (sqlite3_step(select) == SQLITE_ROW) {
                for (int c = 0; c < columns; c++) sqlite3_bind_value(insert, c + 1, sqlite3_column_value(select, c));
                if (sqlite3_step(insert) != SQLITE_DONE) { rows = fail(dst, "INSERT", error, errorSize); break; }
                sqlite3_reset(insert);
                rows++;
            }
        }
        sqlite3_finalize(select);
        sqlite3_finalize(insert);
    }
    sqlite3_close(src);
    return commit(dst, finish, rows, error, errorSize);
}

long long cbaseline_attach_copy(const char *source, const char *destination, const char *const *tables, int tableCount,
                                const char *finish, char *error, int errorSize) {
    sqlite3 *dst = open_destination(destination, source, error, errorSize);
    if (!dst) return -1;
    long long rows = 0;
    char sql[4096];
    for (int t = 0; t < tableCount && rows >= 0; t++) {
        snprintf(sql, sizeof sql, "INSERT INTO main.\"%s\" SELECT * FROM source.\"%s\"", tables[t], tables[t]);
        if (sqlite3_exec(dst, sql, NULL, NULL, NULL) != SQLITE_OK) rows = fail(dst, sql, error, errorSize);
        else rows += sqlite3_changes64(dst);
    }
    return commit(dst, finish, rows, error, errorSize);
}
