import Foundation
import ObjectStore
import Testing

/// The history record every backend keeps (docs/observation.md): what it encodes comes back,
/// and bytes it did not write are a typed error, never a crash or a wrong record.
@Suite("History records")
struct HistoryRecordTests {
    static let record = HistoryRecord(
        timestamp: Date(timeIntervalSince1970: 1_795_635_568.25), author: "Zoë ✍︎",
        inserted: [ObjectKey("Book", 9), ObjectKey("Author", 1), ObjectKey("Book", 3)],
        updated: [UpdatedObject(key: ObjectKey("Author", 2), properties: ["books", "name"]), UpdatedObject(key: ObjectKey("Tag", 5), properties: ["books"])],
        deleted: [ObjectKey("Book", 4), ObjectKey("Book", Int64.max)])

    @Test("a record comes back as it was written: keys in order, names and author, the time to the bit")
    func roundTrip() throws {
        let decoded = try HistoryRecord(decoding: Self.record.encoded(), place: "test")
        #expect(decoded == Self.record)
        #expect(decoded.inserted == [ObjectKey("Author", 1), ObjectKey("Book", 3), ObjectKey("Book", 9)])
        #expect(decoded.timestamp.timeIntervalSince1970.bitPattern == Self.record.timestamp.timeIntervalSince1970.bitPattern)
        let anonymous = HistoryRecord(author: nil)
        #expect(try HistoryRecord(decoding: anonymous.encoded(), place: "test").author == nil)
    }

    @Test("every truncation, and bytes added after the end, are corrupt records naming the place")
    func truncated() throws {
        let bytes = Array(Self.record.encoded())
        for length in 0..<bytes.count {
            let error = try #require(throws: StoreError.self) { _ = try HistoryRecord(decoding: bytes[..<length], place: "store, transaction 7") }
            #expect(error.code == .corrupt && error.message.contains("store, transaction 7"))
        }
        let longer = try #require(throws: StoreError.self) { _ = try HistoryRecord(decoding: bytes + [0], place: "x") }
        #expect(longer.message.contains("after its end"))
    }

    @Test("a changed byte is a corrupt record or another valid one, never a crash", arguments: 0..<8)
    func changed(_ seed: Int) throws {
        var bytes = Array(Self.record.encoded())
        var state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 | 1
        for _ in 0..<200 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let index = Int(state >> 33) % bytes.count
            let original = bytes[index]
            bytes[index] ^= UInt8(truncatingIfNeeded: state >> 20) | 1
            do { _ = try HistoryRecord(decoding: bytes, place: "x") } catch let error as StoreError { #expect(error.code == .corrupt) }
            bytes[index] = original
        }
        #expect(try HistoryRecord(decoding: bytes, place: "x") == Self.record)
    }
}
