@testable import AtomicStore
import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import Testing

/// Reading an atomic store's metadata a chunk at a time (``AtomicFormat/readMetadata(file:chunkSize:)``)
/// against reading the file whole: the header, the metadata's length and the checksum may each fall
/// across a chunk's end.
@Suite("AtomicStore metadata, read in chunks")
struct AtomicMetadataTests {
    @Test("every chunk size from 1 byte to past the file gives the metadata the whole file gives; one changed byte anywhere is refused",
          arguments: [1, 2, 3, 7, 24, 25, 33, 64, 1_000, 1 << 20])
    func chunks(_ chunkSize: Int) throws {
        let folder = try TemporaryFolder()
        let bytes = try makeStore(at: folder.store, people: 40)
        var whole = try AtomicFormat.verify(Array(bytes), file: folder.store.path)
        let expected = try AtomicFormat.readMetadata(&whole)
        let read = try AtomicFormat.readMetadata(file: folder.store.path, chunkSize: chunkSize)
        #expect(read.storeUUID == expected.storeUUID && read.versionHashes == expected.versionHashes && read.storeType == "atomic")
        // The first byte, one in the metadata, one in the rows, one in the checksum.
        for offset in [0, 30, bytes.count / 2, bytes.count - 1] {
            var damaged = bytes
            damaged[offset] ^= 0x20
            try damaged.write(to: folder.store)
            #expect(throws: StoreError.self, "a byte changed at \(offset) of \(bytes.count)") {
                _ = try AtomicFormat.readMetadata(file: folder.store.path, chunkSize: chunkSize)
            }
        }
        // A metadata length as large as a varint holds, behind a valid checksum.
        let absurd = frame(varint(UInt64.max) + Data([1, 2, 3]))
        try absurd.write(to: folder.store)
        #expect(throws: StoreError.self) { _ = try AtomicFormat.readMetadata(file: folder.store.path, chunkSize: chunkSize) }
        // Shorter than it says, and longer.
        try bytes.dropLast(5).write(to: folder.store)
        #expect(throws: StoreError.self) { _ = try AtomicFormat.readMetadata(file: folder.store.path, chunkSize: chunkSize) }
        try (bytes + Data([0])).write(to: folder.store)
        #expect(throws: StoreError.self) { _ = try AtomicFormat.readMetadata(file: folder.store.path, chunkSize: chunkSize) }
    }
}
