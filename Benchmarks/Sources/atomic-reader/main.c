// The floor of a whole command that loads an atomic store: a C process that reads the file of
// the benchmark model, checks it (magic, version, length, SHA-256), parses every object into
// structs (CBaseline's cbaseline_atomic_load) and prints how many objects it holds.
#include <stdio.h>
#include "cbaseline.h"

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: atomic-reader FILE\n"); return 2; }
    char error[512];
    cbaseline_atomic_store *store = cbaseline_atomic_load(argv[1], error, sizeof error);
    if (!store) { fprintf(stderr, "%s\n", error); return 1; }
    printf("%lld objects\n", cbaseline_atomic_count(store));
    cbaseline_atomic_free(store);
    return 0;
}
