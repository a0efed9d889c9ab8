#ifndef OBJECTSTORE_CLIBPQ_SHIM_H
#define OBJECTSTORE_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
