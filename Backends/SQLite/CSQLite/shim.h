#ifndef OBJECTSTORE_CSQLITE_SHIM_H
#define OBJECTSTORE_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro (a cast of -1 to a function pointer) that Swift cannot import.
static inline sqlite3_destructor_type objectstore_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

/// sqlite3_db_config is variadic: SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, on or off.
static inline int objectstore_sqlite_no_checkpoint_on_close(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, on, (int *)0);
}

/// sqlite3_config is variadic: SQLITE_CONFIG_MEMSTATUS off (every allocation then skips a
/// process-wide mutex). SQLITE_MISUSE once SQLite is initialized.
static inline int objectstore_sqlite_memory_statistics_off(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
