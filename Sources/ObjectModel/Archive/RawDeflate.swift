internal import CZlib
import Foundation

/// Inflates a raw DEFLATE stream (RFC 1951: no zlib header, no gzip header), the form of
/// Core Data's model cache (`Z_MODELCACHE.Z_CONTENT`), with the system zlib.
package enum RawDeflate {
    /// The most an inflated stream may hold: a model archive is a few kilobytes; this bounds
    /// what a hostile stream (a "zip bomb") can make us allocate.
    package static let maximumInflatedSize = 64 << 20

    /// The bytes `data` inflates to.
    ///
    /// - Throws: ``ModelError`` (`unreadable`) when the stream is damaged, ends before its
    ///   last block, has bytes after it, or inflates to more than `limit` bytes.
    package static func inflate(_ data: Data, limit: Int = maximumInflatedSize) throws -> Data {
        var stream = z_stream()
        guard objectstore_inflate_init_raw(&stream) == Z_OK else {
            throw ModelError(.unreadable, problems: ["zlib cannot start inflating (\(message(stream, Z_MEM_ERROR)))"])
        }
        defer { inflateEnd(&stream) }
        var input = [UInt8](data)
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var status = Z_OK
        input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            repeat {
                chunk.withUnsafeMutableBufferPointer { buffer in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = uInt(buffer.count)
                    status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    output.append(buffer.baseAddress!, count: buffer.count - Int(stream.avail_out))
                }
            } while status == Z_OK && output.count <= limit && (stream.avail_in > 0 || stream.avail_out == 0)
            stream.next_in = nil
        }
        if output.count > limit {
            throw ModelError(.unreadable, problems: ["the compressed model inflates to more than \(limit) bytes"])
        }
        switch status {
        case Z_STREAM_END:
            guard stream.avail_in == 0 else {
                throw ModelError(.unreadable, problems: ["\(stream.avail_in) bytes follow the end of the compressed model"])
            }
            return output
        case Z_OK, Z_BUF_ERROR:
            throw ModelError(.unreadable, problems: ["the compressed model is truncated (the DEFLATE stream ends before its last block)"])
        default:
            throw ModelError(.unreadable, problems: ["the compressed model is not a valid DEFLATE stream (zlib: \(message(stream, status)))"])
        }
    }

    /// `data` compressed as a raw DEFLATE stream (what ``inflate(_:limit:)`` reads).
    package static func deflate(_ data: Data) -> Data {
        var stream = z_stream()
        guard objectstore_deflate_init_raw(&stream) == Z_OK else { fatalError("zlib cannot start deflating: out of memory") }
        defer { deflateEnd(&stream) }
        var input = [UInt8](data)
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))))
        input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                // deflateBound's room takes the whole stream in one call.
                let status = CZlib.deflate(&stream, Z_FINISH)
                precondition(status == Z_STREAM_END, "zlib: deflate into deflateBound's room did not finish (\(status))")
            }
        }
        return Data(output.prefix(Int(stream.total_out)))
    }

    /// zlib's message for the stream's last error, else for `status`.
    private static func message(_ stream: z_stream, _ status: Int32) -> String {
        if let text = stream.msg { return String(cString: text) }
        return zError(status).map { String(cString: $0) } ?? "error \(status)"
    }
}
