// The floor of the atomic file benchmarks: a C program that keeps the benchmark model's
// objects in plain structs and writes and reads them in the atomic store's own layout
// (docs/atomic-format.md), SHA-256 (OpenSSL's libcrypto) included.
#include "cbaseline.h"
#include <fcntl.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    long long pk, version;
    long long integer;      // a1 / b1
    double real;            // a2 / b2
    const char *text;       // a3 / b3, into the store's string arena
    int textLength;
    double date;            // a4 / b4
    int boolean;            // a5 / b5
    int partnerEntity;      // index into the name list, -1 for none
    long long partner;
} cb_record;

typedef struct {
    cb_record *rows;
    long long count;
} cb_table;

struct cbaseline_atomic_store {
    cb_table tables[2];     // A, B (the name list is "A", "B")
    long long lastKey[2];
    char *strings;          // every string value, back to back
};

static const char *entityNames[2] = {"A", "B"};
static const char *columnNames[2][5] = {{"a1", "a2", "a3", "a4", "a5"}, {"b1", "b2", "b3", "b4", "b5"}};

cbaseline_atomic_store *cbaseline_atomic_make(long long pairs) {
    cbaseline_atomic_store *store = calloc(1, sizeof *store);
    store->strings = malloc((size_t)(pairs * 2) * 32);
    char *next = store->strings;
    for (int e = 0; e < 2; e++) {
        store->tables[e].rows = malloc((size_t)pairs * sizeof(cb_record));
        store->tables[e].count = pairs;
        store->lastKey[e] = pairs;
        for (long long pk = 1; pk <= pairs; pk++) {
            cb_record *r = &store->tables[e].rows[pk - 1];
            r->pk = pk;
            r->version = 1;
            r->integer = pk * 7;
            r->real = (double)pk / 3;
            r->textLength = sprintf(next, "object number %lld", pk);
            r->text = next;
            next += r->textLength;
            r->date = 700000000.0 + (double)pk;
            r->boolean = (int)(pk % 2);
            r->partnerEntity = 1 - e;
            r->partner = pk;
        }
    }
    return store;
}

void cbaseline_atomic_free(cbaseline_atomic_store *store) {
    if (!store) return;
    free(store->tables[0].rows);
    free(store->tables[1].rows);
    free(store->strings);
    free(store);
}

long long cbaseline_atomic_count(const cbaseline_atomic_store *store) {
    return store->tables[0].count + store->tables[1].count;
}

double cbaseline_atomic_digest(const cbaseline_atomic_store *store) {
    double sum = 0;
    for (int e = 0; e < 2; e++) {
        for (long long i = 0; i < store->tables[e].count; i++) {
            const cb_record *r = &store->tables[e].rows[i];
            sum += (double)(r->pk + r->version + r->integer + r->textLength + r->boolean + r->partner) + r->real + r->date
                + (r->textLength > 0 ? (unsigned char)r->text[r->textLength - 1] : 0);
        }
    }
    return sum;
}

// MARK: Writing

typedef struct {
    unsigned char *bytes;
    size_t count, capacity;
} buffer;

static void reserve(buffer *b, size_t n) {
    if (b->count + n <= b->capacity) return;
    while (b->count + n > b->capacity) b->capacity = b->capacity ? b->capacity * 2 : 1 << 16;
    b->bytes = realloc(b->bytes, b->capacity);
}

static inline void put(buffer *b, const void *bytes, size_t n) {
    reserve(b, n);
    memcpy(b->bytes + b->count, bytes, n);
    b->count += n;
}

static inline void byte(buffer *b, unsigned char v) { reserve(b, 1); b->bytes[b->count++] = v; }

static inline void varint(buffer *b, unsigned long long v) {
    reserve(b, 10);
    while (v >= 0x80) { b->bytes[b->count++] = (unsigned char)(v | 0x80); v >>= 7; }
    b->bytes[b->count++] = (unsigned char)v;
}

static inline void svarint(buffer *b, long long v) { varint(b, ((unsigned long long)v << 1) ^ (unsigned long long)(v >> 63)); }
static inline void string(buffer *b, const char *s, size_t n) { varint(b, n); put(b, s, n); }
static inline void fixed64(buffer *b, double v) { put(b, &v, 8); }  // little-endian machines only

static int fail(char *error, int errorSize, const char *what, const char *path) {
    snprintf(error, (size_t)errorSize, "%s %s failed", what, path);
    return -1;
}

long long cbaseline_atomic_save(const cbaseline_atomic_store *store, const char *path, const unsigned char *metadata,
                                long long metadataLength, char *error, int errorSize) {
    buffer b = {0};
    put(&b, "OBJSTORE", 8);
    unsigned char header[16] = {1, 0};     // version 1, flags, reserved, length patched below
    put(&b, header, 16);
    varint(&b, (unsigned long long)metadataLength);
    put(&b, metadata, (size_t)metadataLength);
    varint(&b, 2);
    for (int e = 0; e < 2; e++) string(&b, entityNames[e], 1);
    varint(&b, 2);
    for (int e = 0; e < 2; e++) { varint(&b, (unsigned long long)e); svarint(&b, store->lastKey[e]); }
    varint(&b, 2);
    for (int e = 0; e < 2; e++) {
        const cb_table *t = &store->tables[e];
        varint(&b, (unsigned long long)e);
        varint(&b, 5);
        for (int c = 0; c < 5; c++) string(&b, columnNames[e][c], 2);
        varint(&b, 1);
        string(&b, "partner", 7);
        varint(&b, (unsigned long long)t->count);
        for (long long i = 0; i < t->count; i++) {
            const cb_record *r = &t->rows[i];
            svarint(&b, r->pk);
            svarint(&b, r->version);
            byte(&b, 1); svarint(&b, r->integer);
            byte(&b, 2); fixed64(&b, r->real);
            byte(&b, 4); string(&b, r->text, (size_t)r->textLength);
            byte(&b, 7); fixed64(&b, r->date);
            byte(&b, r->boolean ? 6 : 5);
            if (r->partnerEntity < 0) { varint(&b, 0); continue; }
            varint(&b, 2);
            varint(&b, (unsigned long long)r->partnerEntity);
            svarint(&b, r->partner);
        }
    }
    unsigned long long total = b.count + SHA256_DIGEST_LENGTH;
    memcpy(b.bytes + 16, &total, 8);
    reserve(&b, SHA256_DIGEST_LENGTH);
    SHA256(b.bytes, b.count, b.bytes + b.count);
    b.count += SHA256_DIGEST_LENGTH;

    char temporary[4096];
    snprintf(temporary, sizeof temporary, "%s-tmp-c", path);
    int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) { free(b.bytes); return fail(error, errorSize, "open", temporary); }
    for (size_t done = 0; done < b.count;) {
        ssize_t n = write(fd, b.bytes + done, b.count - done);
        if (n < 0) { close(fd); free(b.bytes); return fail(error, errorSize, "write", temporary); }
        done += (size_t)n;
    }
    free(b.bytes);
    if (fsync(fd) != 0 || close(fd) != 0) return fail(error, errorSize, "fsync", temporary);
    if (rename(temporary, path) != 0) return fail(error, errorSize, "rename", path);
    char folder[4096];
    snprintf(folder, sizeof folder, "%s", path);
    char *slash = strrchr(folder, '/');
    if (slash) *slash = 0; else snprintf(folder, sizeof folder, ".");
    int dir = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || fsync(dir) != 0) { if (dir >= 0) close(dir); return fail(error, errorSize, "fsync", folder); }
    close(dir);
    return (long long)total;
}

// MARK: Reading

typedef struct {
    const unsigned char *at, *end;
    int bad;
} reader;

static inline unsigned long long rvarint(reader *r) {
    unsigned long long v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->at >= r->end) { r->bad = 1; return 0; }
        unsigned char c = *r->at++;
        v |= (unsigned long long)(c & 0x7f) << shift;
        if (!(c & 0x80)) return v;
    }
    r->bad = 1;
    return 0;
}

static inline long long rsvarint(reader *r) {
    unsigned long long v = rvarint(r);
    return (long long)((v >> 1) ^ (0 - (v & 1)));
}

static inline const unsigned char *rbytes(reader *r, unsigned long long n) {
    if (n > (unsigned long long)(r->end - r->at)) { r->bad = 1; return r->end; }
    const unsigned char *p = r->at;
    r->at += n;
    return p;
}

static inline double rdouble(reader *r) {
    double v = 0;
    const unsigned char *p = rbytes(r, 8);
    if (!r->bad) memcpy(&v, p, 8);
    return v;
}

/// Reads the file whole, checks magic, version, length and checksum, and parses every row
/// into structs (strings copied into one arena). Returns NULL with a message in `error`.
cbaseline_atomic_store *cbaseline_atomic_load(const char *path, char *error, int errorSize) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) { if (fd >= 0) close(fd); fail(error, errorSize, "open", path); return NULL; }
    size_t size = (size_t)st.st_size;
    unsigned char *data = malloc(size ? size : 1);
    for (size_t done = 0; done < size;) {
        ssize_t n = read(fd, data + done, size - done);
        if (n <= 0) { close(fd); free(data); fail(error, errorSize, "read", path); return NULL; }
        done += (size_t)n;
    }
    close(fd);
    unsigned long long total = 0;
    unsigned char digest[SHA256_DIGEST_LENGTH];
    if (size < 24 + SHA256_DIGEST_LENGTH || memcmp(data, "OBJSTORE", 8) != 0 || data[8] != 1 || data[9] != 0
        || (memcpy(&total, data + 16, 8), total != size)
        || (SHA256(data, size - SHA256_DIGEST_LENGTH, digest), memcmp(digest, data + size - SHA256_DIGEST_LENGTH, SHA256_DIGEST_LENGTH) != 0)) {
        free(data);
        fail(error, errorSize, "checking", path);
        return NULL;
    }
    reader r = {data + 24, data + size - SHA256_DIGEST_LENGTH, 0};
    rbytes(&r, rvarint(&r));                           // metadata
    unsigned long long names = rvarint(&r);
    for (unsigned long long i = 0; i < names && !r.bad; i++) rbytes(&r, rvarint(&r));
    cbaseline_atomic_store *store = calloc(1, sizeof *store);
    store->strings = malloc(size);                     // the strings are shorter than the file
    char *next = store->strings;
    unsigned long long counters = rvarint(&r);
    for (unsigned long long i = 0; i < counters && !r.bad; i++) {
        unsigned long long e = rvarint(&r);
        long long last = rsvarint(&r);
        if (e < 2) store->lastKey[e] = last;
    }
    unsigned long long tables = rvarint(&r);
    for (unsigned long long t = 0; t < tables && !r.bad; t++) {
        unsigned long long e = rvarint(&r);
        unsigned long long columns = rvarint(&r);
        if (e >= 2 || columns > 5) { r.bad = 1; break; }
        int slot[5];
        for (unsigned long long c = 0; c < columns; c++) {
            unsigned long long n = rvarint(&r);
            const unsigned char *name = rbytes(&r, n);
            slot[c] = (n == 2 && !r.bad) ? name[1] - '1' : -1;
        }
        unsigned long long relationships = rvarint(&r);
        for (unsigned long long c = 0; c < relationships && !r.bad; c++) rbytes(&r, rvarint(&r));
        unsigned long long count = rvarint(&r);
        if (count > (unsigned long long)(r.end - r.at)) { r.bad = 1; break; }
        cb_table *table = &store->tables[e];
        table->rows = calloc(count ? count : 1, sizeof(cb_record));
        table->count = (long long)count;
        for (unsigned long long i = 0; i < count && !r.bad; i++) {
            cb_record *row = &table->rows[i];
            row->pk = rsvarint(&r);
            row->version = rsvarint(&r);
            row->partnerEntity = -1;
            for (unsigned long long c = 0; c < columns && !r.bad; c++) {
                unsigned char tag = *rbytes(&r, 1);
                switch (tag) {
                case 0: break;
                case 1: if (slot[c] == 0) row->integer = rsvarint(&r); else rsvarint(&r); break;
                case 2: { double v = rdouble(&r); if (slot[c] == 1) row->real = v; break; }
                case 4: {
                    unsigned long long n = rvarint(&r);
                    const unsigned char *s = rbytes(&r, n);
                    if (slot[c] == 2 && !r.bad) { memcpy(next, s, n); row->text = next; row->textLength = (int)n; next += n; }
                    break;
                }
                case 5: case 6: if (slot[c] == 4) row->boolean = tag == 6; break;
                case 7: { double v = rdouble(&r); if (slot[c] == 3) row->date = v; break; }
                default: r.bad = 1;
                }
            }
            for (unsigned long long c = 0; c < relationships && !r.bad; c++) {
                unsigned long long n = rvarint(&r);
                for (unsigned long long k = 1; k < n && !r.bad; k++) {
                    row->partnerEntity = (int)rvarint(&r);
                    row->partner = rsvarint(&r);
                }
            }
        }
    }
    // The sections that may follow the tables (header flags, docs/atomic-format.md): the history
    // (its records stepped over as bytes) and the order keys.
    unsigned flags = data[10] | (unsigned)data[11] << 8;
    if (flags & ~3u) r.bad = 1;
    if ((flags & 1) && !r.bad) {
        rsvarint(&r);                                  // the last token handed out
        unsigned long long transactions = rvarint(&r);
        for (unsigned long long i = 0; i < transactions && !r.bad; i++) { rsvarint(&r); rbytes(&r, rvarint(&r)); }
    }
    if ((flags & 2) && !r.bad) {
        unsigned long long rows = rvarint(&r);
        for (unsigned long long i = 0; i < rows && !r.bad; i++) {
            rvarint(&r);
            rsvarint(&r);
            unsigned long long lists = rvarint(&r);
            for (unsigned long long l = 0; l < lists && !r.bad; l++) {
                rbytes(&r, rvarint(&r));
                unsigned long long n = rvarint(&r);
                for (unsigned long long k = 0; k < n && !r.bad; k++) rsvarint(&r);
            }
        }
    }
    free(data);
    if (r.bad || r.at != r.end) {
        cbaseline_atomic_free(store);
        fail(error, errorSize, "parsing", path);
        return NULL;
    }
    return store;
}
