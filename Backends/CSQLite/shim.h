#ifndef OBJECTSTORE_CSQLITE_SHIM_H
#define OBJECTSTORE_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro (a cast of -1 to a function pointer) that Swift cannot import.
static inline sqlite3_destructor_type objectstore_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}
#endif
