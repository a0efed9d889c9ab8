import Foundation
import ObjectStoreData
import Testing
import TestSupport

enum Mood: Int, Codable, CaseIterable {
    case calm = 1, busy = 2
}

struct Point: Codable, Equatable {
    var x: Double
    var y: Double
}

/// Every attribute type a model property can have, required and optional.
@Model
final class Sample {
    var text: String = ""
    var flag: Bool = false
    var int: Int = 0
    var int64: Int64 = 0
    var int32: Int32 = 0
    var int16: Int16 = 0
    var int8: Int8 = 0
    var uint8: UInt8 = 0
    var uint16: UInt16 = 0
    var uint32: UInt32 = 0
    var uint64: UInt64 = 0
    var double: Double = 0
    var float: Float = 0
    var decimal: Decimal = 0
    var date: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute(.externalStorage) var data: Data = Data()
    var uuid: UUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
    var url: URL = URL(string: "https://example.com")!
    var mood: Mood = Mood.calm
    var point: Point = Point(x: 0, y: 0)
    var tags: [String] = []
    var maybeText: String?
    var maybeInt: Int?
    var maybeDate: Date?
    var maybeMood: Mood?
    var maybePoint: Point?

    init() {}
}

@Suite("Typed models: every attribute type, on every backend")
struct AttributeTypesTests {
    @Test("the extremes of every type come back as they went in, and nil as nil", arguments: TypedBackends.all)
    func roundTrip(_ backend: String) throws {
        let place = try TypedBackends.Place()
        let configuration = try place.configuration(backend, "samples")
        let big = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        do {
            let context = ModelContext(try ModelContainer(for: Sample.self, configurations: configuration))
            let sample = Sample()
            sample.text = "Zoë 👩‍💻 \u{0}"
            sample.flag = true
            sample.int = Int.min
            sample.int64 = Int64.max
            sample.int32 = Int32.min
            sample.int16 = Int16.max
            sample.int8 = Int8.min
            sample.uint8 = UInt8.max
            sample.uint16 = UInt16.max
            sample.uint32 = UInt32.max
            sample.uint64 = UInt64.max
            sample.double = -0.1
            sample.float = 1.5
            sample.decimal = Decimal(string: "12345678901234567890.123456789")!
            sample.date = Date(timeIntervalSinceReferenceDate: 123_456.789)
            sample.data = big
            sample.uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
            sample.url = URL(string: "https://example.com/a?b=c")!
            sample.mood = .busy
            sample.point = Point(x: 1.25, y: -2)
            sample.tags = ["a", "b"]
            sample.maybeMood = .calm
            context.insert(sample)
            context.insert(Sample())
            try context.save()
        }
        guard backend != "memory" else { return }
        let context = ModelContext(try ModelContainer(for: Sample.self, configurations: configuration))
        let samples = try context.fetch(FetchDescriptor<Sample>(sortBy: [SortDescriptor(\.int)]))
        #expect(samples.count == 2)
        let s = samples[0]
        #expect(s.text == "Zoë 👩‍💻 \u{0}" && s.flag && s.int == Int.min && s.int64 == Int64.max && s.int32 == Int32.min)
        #expect(s.int16 == Int16.max && s.int8 == Int8.min && s.uint8 == UInt8.max && s.uint16 == UInt16.max && s.uint32 == UInt32.max)
        #expect(s.uint64 == UInt64.max && s.double == -0.1 && s.float == 1.5)
        #expect(s.decimal == Decimal(string: "12345678901234567890.123456789")!)
        #expect(s.date == Date(timeIntervalSinceReferenceDate: 123_456.789) && s.data == big)
        #expect(s.uuid.uuidString == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F" && s.url.absoluteString == "https://example.com/a?b=c")
        #expect(s.mood == .busy && s.point == Point(x: 1.25, y: -2) && s.tags == ["a", "b"])
        #expect(s.maybeText == nil && s.maybeInt == nil && s.maybeDate == nil && s.maybeMood == .calm && s.maybePoint == nil)
        let empty = samples[1]
        #expect(empty.text == "" && empty.data.isEmpty && empty.maybeMood == nil && empty.tags.isEmpty)
        if backend == "sqlite" {
            // As SQLite holds them: the enum by its raw value, the Codable value as JSON, nil as NULL,
            // the large value in a file (tag 0x02), not in the row.
            let raw = try RawDatabase(configuration.url)
            defer { raw.close() }
            let row = try raw.strings("SELECT ZMOOD, CAST(ZPOINT AS TEXT), ZMAYBETEXT IS NULL, hex(substr(ZDATA, 1, 1)), ZUINT64 FROM ZSAMPLE ORDER BY ZINT LIMIT 1")
            #expect(row == [["2", #"{"x":1.25,"y":-2}"#, "1", "02", "-1"]], "\(row)")
        }
    }
}
