#ifndef OBJECTSTORE_CZLIB_SHIM_H
#define OBJECTSTORE_CZLIB_SHIM_H
#include <zlib.h>

/// inflateInit2 is a macro (it passes the library's version and the stream's size): a raw
/// DEFLATE stream, no zlib or gzip header, is window bits -15.
static inline int objectstore_inflate_init_raw(z_stream *stream) {
    return inflateInit2(stream, -15);
}
#endif
