#include "cbaseline.h"
#include <sqlite3.h>
#include <stdio.h>
#include <time.h>

static long long failed(sqlite3 *db, const char *what, char *error, int errorSize) {
    snprintf(error, (size_t)errorSize, "%s: %s", what, db ? sqlite3_errmsg(db) : "cannot open");
    return -1;
}

long long cbaseline_insert_loop(const char *path, const char *insert, long long count, const char *finish,
                                char *error, int errorSize) {
    sqlite3 *db = NULL;
    sqlite3_stmt *statement = NULL;
    long long rows = 0;
    if (sqlite3_open(path, &db) != SQLITE_OK
        || sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        rows = failed(db, path, error, errorSize);
    } else if (sqlite3_prepare_v2(db, insert, -1, &statement, NULL) != SQLITE_OK) {
        rows = failed(db, insert, error, errorSize);
    } else {
        char text[32];
        for (long long key = 1; key <= count; key++) {
            int length = snprintf(text, sizeof text, "item %lld", key);
            sqlite3_bind_int64(statement, 1, key);
            sqlite3_bind_int64(statement, 2, (key * 7919) % count);
            sqlite3_bind_double(statement, 3, (double)key / 3);
            sqlite3_bind_text(statement, 4, text, length, SQLITE_TRANSIENT);
            sqlite3_bind_double(statement, 5, 700000000.0 + (double)key);
            sqlite3_bind_int64(statement, 6, key % 2);
            if (sqlite3_step(statement) != SQLITE_DONE) { rows = failed(db, "INSERT", error, errorSize); break; }
            sqlite3_reset(statement);
            rows++;
        }
    }
    sqlite3_finalize(statement);
    if (rows >= 0 && finish && sqlite3_exec(db, finish, NULL, NULL, NULL) != SQLITE_OK) rows = failed(db, finish, error, errorSize);
    if (rows >= 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) rows = failed(db, "COMMIT", error, errorSize);
    sqlite3_close(db);
    return rows;
}

static long long read_all(sqlite3_stmt *statement) {
    volatile long long sink = 0;
    long long rows = 0;
    int columns = sqlite3_column_count(statement), rc;
    while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
        for (int c = 0; c < columns; c++) {
            switch (sqlite3_column_type(statement, c)) {
            case SQLITE_INTEGER: sink += sqlite3_column_int64(statement, c); break;
            case SQLITE_FLOAT: sink += (long long)sqlite3_column_double(statement, c); break;
            case SQLITE_TEXT: sink += sqlite3_column_text(statement, c)[0] + sqlite3_column_bytes(statement, c); break;
            case SQLITE_BLOB: sink += sqlite3_column_bytes(statement, c); break;
            default: break;
            }
        }
        rows++;
    }
    sqlite3_reset(statement);
    return rc == SQLITE_DONE ? rows : -1;
}

long long cbaseline_read_loop(const char *path, const char *select, double *seconds, char *error, int errorSize) {
    sqlite3 *db = NULL;
    sqlite3_stmt *statement = NULL;
    long long rows = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rows = failed(db, path, error, errorSize);
    } else if (sqlite3_prepare_v2(db, select, -1, &statement, NULL) != SQLITE_OK) {
        rows = failed(db, select, error, errorSize);
    } else if (read_all(statement) < 0) {
        rows = failed(db, "SELECT", error, errorSize);
    } else {
        struct timespec start, end;
        clock_gettime(CLOCK_MONOTONIC, &start);
        rows = read_all(statement);
        clock_gettime(CLOCK_MONOTONIC, &end);
        *seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
        if (rows < 0) rows = failed(db, "SELECT", error, errorSize);
    }
    sqlite3_finalize(statement);
    sqlite3_close(db);
    return rows;
}
