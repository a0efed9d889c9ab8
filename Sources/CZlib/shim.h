#ifndef OBJECTSTORE_CZLIB_SHIM_H
#define OBJECTSTORE_CZLIB_SHIM_H
#include <zlib.h>

/// inflateInit2 is a macro (it passes the library's version and the stream's size): a raw
/// DEFLATE stream, no zlib or gzip header, is window bits -15.
static inline int objectstore_inflate_init_raw(z_stream *stream) {
    return inflateInit2(stream, -15);
}

/// deflateInit2 likewise: a raw DEFLATE stream at the default level and memory use.
static inline int objectstore_deflate_init_raw(z_stream *stream) {
    return deflateInit2(stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
}
#endif
