#ifndef OBJECTSTORE_CLMDB_SHIM_H
#define OBJECTSTORE_CLMDB_SHIM_H
#include <lmdb.h>
#endif
