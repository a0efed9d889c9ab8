import Foundation
import Testing
@testable import ObjectStore

/// The binary property-list reader against property lists laid out by hand from the format's
/// description and written by Foundation, and against damaged ones.
@Suite("Binary property lists")
struct BinaryPropertyListTests {
    /// A binary property list of `objects` (each one's bytes), object `top` at the top,
    /// references of `referenceSize` bytes, offsets of 2 bytes.
    static func layout(_ objects: [[UInt8]], top: Int = 0, referenceSize: UInt8 = 1) -> Data {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(bytes.count)
            bytes += object
        }
        let table = bytes.count
        for offset in offsets { bytes += [UInt8(offset >> 8), UInt8(offset & 0xFF)] }
        bytes += [0, 0, 0, 0, 0, 0, 2, referenceSize]
        for value in [objects.count, top, table] { bytes += (0..<8).reversed().map { UInt8((value >> ($0 * 8)) & 0xFF) } }
        return Data(bytes)
    }

    @Test("a property list laid out by hand reads as the values it spells")
    func handWritten() throws {
        let data = Self.layout([
            [0xD3, 1, 2, 7, 3, 4, 8],            // {a: 1, b: [true, "é"], c: -2}
            [0x51, 0x61], [0x51, 0x62],
            [0x10, 0x01],
            [0xA2, 5, 6],
            [0x09],
            [0x61, 0x00, 0xE9],
            [0x51, 0x63],
            [0x13, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE],
        ])
        #expect(PropertyListValue.decodeDictionary(data) == [
            "a": .integer(1), "b": .array([.boolean(true), .string("é")]), "c": .integer(-2),
        ])
        // A 16-byte integer is read when it fits 64 bits; Foundation writes one for values above Int64.max.
        let wide = Self.layout([[0xD1, 1, 2], [0x51, 0x77], [0x14] + [UInt8](repeating: 0xFF, count: 15) + [0xF0]])
        #expect(PropertyListValue.decodeDictionary(wide) == ["w": .integer(-16)])
        let tooWide = Self.layout([[0xD1, 1, 2], [0x51, 0x77], [0x14, 1] + [UInt8](repeating: 0, count: 15)])
        #expect(PropertyListValue.decodeDictionary(tooWide) == nil)
    }

    @Test("Core Data's metadata as an Apple system wrote it (a real store's Z_PLIST) reads as Python's plistlib reads it")
    func appleWritten() throws {
        let data = try #require(Data(base64Encoded: """
            YnBsaXN0MDDZAQIDBAUGBwgJCgsNDg8QEQoYXxAkTlNQZXJzaXN0ZW5jZU1heGltdW1GcmFtZXdvcmtWZXJzaW9uXxAeTlNTdG9yZU1vZGVsVmVyc2lvbklk
            ZW50aWZpZXJzW05TU3RvcmVUeXBlXxASX05TQXV0b1ZhY3V1bUxldmVsXxAfTlNTdG9yZU1vZGVsVmVyc2lvbkhhc2hlc0RpZ2VzdF8QHk5TU3RvcmVNb2Rl
            bFZlcnNpb25DaGVja3N1bUtleV8QGU5TU3RvcmVNb2RlbFZlcnNpb25IYXNoZXNfEB1OU1BlcnNpc3RlbmNlRnJhbWV3b3JrVmVyc2lvbl8QIE5TU3RvcmVN
            b2RlbFZlcnNpb25IYXNoZXNWZXJzaW9uEQXzoQxQVlNRTGl0ZVEyXxBYQ1Q0TDdJd2RvNWVXTHBGTnhYaklidnJPOFkzSG1MZkl4L0EzWDg0SlBrVWNGbFMz
            ZWFEUHNWTHozU2pLYUh2RklHbzFYbS9veFVxdTJXSG4yKzJFRlE9PV8QLGJKM0JlZXU4MlNmSXRIdUpYNnY0b0RpU29ZSEdSMnk3SjhxRXJ1K1EzZmM90xIT
            FBUWF1ZDRENhcnRfEBJDRENhcnRJdGVtTW9kaWZpZXJaQ0RDYXJ0SXRlbU8QIE2UsWwmJfwV0Oq/4tYgqw3RyfLkWmDma5bGGVXu4AkuTxAgz9kMF7x+Ve/V
            azcV1z7J9XEyWjsHhSK+yqrhgnPxz5pPECCXZwS9Pbg7hiwOR69VKWPCwtD+dN6VQ9yiRe1qADwiZhADAAgAGwBCAGMAbwCEAKYAxwDjAQMBJgEpASsBLAEz
            ATUBkAG/AcYBzQHiAe0CEAIzAlYAAAAAAAACAQAAAAAAAAAZAAAAAAAAAAAAAAAAAAACWA==
            """, options: .ignoreUnknownCharacters))
        func hex(_ text: String) -> PropertyListValue {
            .data(Data(stride(from: 0, to: text.count, by: 2).map { UInt8(text.dropFirst($0).prefix(2), radix: 16)! }))
        }
        #expect(PropertyListValue.decodeDictionary(data) == [
            "NSPersistenceFrameworkVersion": .integer(1523),
            "NSPersistenceMaximumFrameworkVersion": .integer(1523),
            "NSStoreModelVersionChecksumKey": .string("bJ3Beeu82SfItHuJX6v4oDiSoYHGR2y7J8qEru+Q3fc="),
            "NSStoreModelVersionHashes": .dictionary([
                "CDCart": hex("4d94b16c2625fc15d0eabfe2d620ab0dd1c9f2e45a60e66b96c61955eee0092e"),
                "CDCartItem": hex("976704bd3db83b862c0e47af552963c2c2d0fe74de9543dca245ed6a003c2266"),
                "CDCartItemModifier": hex("cfd90c17bc7e55efd56b3715d73ec9f571325a3b078522becaaae18273f1cf9a"),
            ]),
            "NSStoreModelVersionHashesDigest": .string("CT4L7Iwdo5eWLpFNxXjIbvrO8Y3HmLfIx/A3X84JPkUcFlS3eaDPsVLz3SjKaHvFIGo1Xm/oxUqu2WHn2+2EFQ=="),
            "NSStoreModelVersionHashesVersion": .integer(3),
            "NSStoreModelVersionIdentifiers": .array([.string("")]),
            "NSStoreType": .string("SQLite"),
            "_NSAutoVacuumLevel": .string("2"),
        ])
    }

    @Test("what Foundation writes, every kind of value, reads back the same")
    func foundationWritten() throws {
        let values: [String: PropertyListValue] = [
            "strings": .array(["", "ascii", "é", "😀 and 中文", String(repeating: "long ", count: 80), String(repeating: "ü", count: 300)].map { .string($0) }),
            "integers": .array([0, 1, 255, 256, 65_535, 65_536, 1 << 32, -1, -129, Int64.min, Int64.max].map { .integer($0) }),
            "reals": .array([0.1, 1e308, -2.5, .leastNonzeroMagnitude, .infinity, -.infinity].map { .real($0) }),
            "dates": .array([0, 1.5, -978_307_200.25, 1e10].map { .date(Date(timeIntervalSinceReferenceDate: $0)) }),
            "data": .array([0, 1, 14, 15, 16, 300, 70_000].map { .data(Data((0..<$0).map { UInt8($0 % 251) })) }),
            "booleans": .array([.boolean(true), .boolean(false)]),
            "nested": .dictionary(Dictionary(uniqueKeysWithValues: (0..<20).map { ("key\($0)", .array([.integer(Int64($0)), .dictionary([:])])) })),
        ]
        let data = try PropertyListValue.binaryPropertyList(values)
        #expect(data.starts(with: Data("bplist00".utf8)))
        #expect(PropertyListValue.decodeDictionary(data) == values)
        let signed = try PropertyListValue.binaryPropertyList(["zero": .real(-0.0), "nan": .real(.nan)])
        let read = try #require(PropertyListValue.decodeDictionary(signed))
        guard case .real(let zero)? = read["zero"], case .real(let nan)? = read["nan"] else { Issue.record("\(read)"); return }
        #expect(zero.bitPattern == (-0.0).bitPattern && nan.isNaN)
    }

    @Test("damaged ones are nil: cycles, references and offsets out of range, lengths past the end, duplicate keys, bad text")
    func damaged() throws {
        let bad: [(String, Data)] = [
            ("an array holding itself", Self.layout([[0xD1, 1, 2], [0x51, 0x61], [0xA1, 2]])),
            ("a dictionary holding itself", Self.layout([[0xD1, 1, 0], [0x51, 0x61]])),
            ("a reference past the objects", Self.layout([[0xD1, 1, 9], [0x51, 0x61]])),
            ("a top object past the objects", Self.layout([[0xD0]], top: 3)),
            ("data longer than the file", Self.layout([[0xD1, 1, 2], [0x51, 0x61], [0x4F, 0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]])),
            ("a string longer than the file", Self.layout([[0xD1, 1, 2], [0x51, 0x61], [0x5E, 0x61]])),
            ("a duplicate key", Self.layout([[0xD2, 1, 1, 2, 2], [0x51, 0x61], [0x10, 0x01]])),
            ("a key that is no string", Self.layout([[0xD1, 1, 1], [0x10, 0x01]])),
            ("an unpaired surrogate", Self.layout([[0xD1, 1, 2], [0x51, 0x61], [0x61, 0xD8, 0x00]])),
            ("non-ASCII bytes in an ASCII string", Self.layout([[0xD1, 1, 2], [0x51, 0x61], [0x51, 0xE9]])),
            ("a set", Self.layout([[0xD1, 1, 2], [0x51, 0x61], [0xC1, 1]])),
            ("a UID", Self.layout([[0xD1, 1, 2], [0x51, 0x61], [0x80, 0x01]])),
            ("null", Self.layout([[0xD1, 1, 2], [0x51, 0x61], [0x00]])),
            ("a top level that is no dictionary", Self.layout([[0xA0]])),
            ("an integer of 32 bytes", Self.layout([[0xD1, 1, 2], [0x51, 0x61], [0x15] + [UInt8](repeating: 0, count: 32)])),
        ]
        for (what, data) in bad { #expect(PropertyListValue.decodeDictionary(data) == nil, "\(what)") }
        // Offsets and the table: every byte of the trailer and the table changed in turn.
        let good = Self.layout([[0xD1, 1, 2], [0x51, 0x61], [0x10, 0x01]])
        #expect(PropertyListValue.decodeDictionary(good) == ["a": .integer(1)])
        for index in 8..<good.count {
            for byte: UInt8 in [0x00, 0x01, 0x7F, 0xFF] {
                var changed = good
                changed[index] = byte
                _ = PropertyListValue.decodeDictionary(changed)
            }
        }
        for length in 0..<good.count { #expect(PropertyListValue.decodeDictionary(good.prefix(length)) == nil) }
    }

    @Test("nesting: 512 levels read, deeper ones are nil, and shared objects are read once")
    func nesting() throws {
        func chain(_ depth: Int, twice: Bool) -> Data {
            var objects: [[UInt8]] = [[0xD1, 1, 2], [0x51, 0x61]]
            for level in 0..<depth {
                let next = 3 + level
                let reference = [UInt8(next >> 8), UInt8(next & 0xFF)]
                objects.append(level == depth - 1 ? [0xA0] : twice ? [0xA2] + reference + reference : [0xA1] + reference)
            }
            // References of 2 bytes: rewrite the dictionary's too.
            objects[0] = [0xD1, 0, 1, 0, 2]
            return Self.layout(objects, referenceSize: 2)
        }
        #expect(PropertyListValue.decodeDictionary(chain(BinaryPropertyList.maximumDepth, twice: false)) != nil)
        #expect(PropertyListValue.decodeDictionary(chain(BinaryPropertyList.maximumDepth + 2, twice: false)) == nil)
        // 100 levels of two references to the next: 2^100 paths, one read each.
        let shared = try #require(PropertyListValue.decodeDictionary(chain(100, twice: true)))
        var level = shared["a"]
        var depth = 0
        while case .array(let items)? = level, let first = items.first { level = first; depth += 1 }
        #expect(depth == 99)
    }

    @Test("the input that crashed Foundation's reader (found by fuzzing the atomic store) reads without a crash")
    func fuzzFound() throws {
        let data = try #require(Data(base64Encoded: """
        YnBsaXN0MDDOAQIDBAUGBwgJCgwNGBlbTlNTdG9yZVR5cGVfEB5OU1N0b3JlTW9kZWxWSXRlbW9uQ2hlY2tzdW1LZXlfEB5OU1N0b3JlTW9kZWxWZXJzaW9u
        SWRlbnRpZmllcnNbTlNTdG9yZVVVSURfEBlOU1N0b3JlTW9kZWxWZXJzaW9uSGFzaGVzXxAQT2JqZWN0U3RvcmVNb2RlbF8QIE5TU3RvcmVNb2RlbFZlcnNp
        b25IYXNoZXNWZXJzaW9uVmF0b21pY18QLDBtMGx4RldrUmxoQW5iQlR3QmdnZEc2UjV1eDFPOFlQUGtUdk5IMUFqZzA9oQtRMl8QJDFCOUQ1OTE2LUFCQjUt
        NDA4MS04QURGLTI1RjYyNEM3NkNENtUODxAREhMUFRYXVVNoZWxmVEl0ZW1UQm9va1ZBdXRob3JYTWFnYXppbmVPECCCuamL1N1kPnXMNukgJw04pHlPR2ys
        RqkVN1fgIjDoSk8QIPcOFrr6LYzQG2+W2IBhh/UDz4jaN40qFNM+L0jhNrtBTxAgvmNUVb3+qnm6Nr2EBlUIs/T7n3gl1L9h8TdUHY286DtPECCcQC3ve/Yl
        JNT7WSti4k0bQb7UB5Ma04YU4s9VDUs9W08QII3r6mpoQDj5DHiz6X2xsC31s7tmy0kyujqfZmbrZ2luYXRpb24iIDogIkF1dGhvciIsCiAgICAgICAgICAi
        aW52ZXJzZSIgOiAiYm9va3MiLAogICAgICAgICAgIm5hbWUiIDogImF1dGhvciIsCiAgICAgICAgICAib3B0aW9uYWwiIDogZmFsc2UsCiAgICAgICAgICAi
        dG9NYW55IiA6IGZhbHNlCiAgICAgICAgfQogICAgICBdLAogICAgICAicmVKTxAg9w4WuvotjNAbb5fYgGGH9QPPiNo3jSoU0z4vSOE2u0FPECC+Y1RVvap5
        Nv66vYQGVQiz9PufeCXUv2HxN1QdjbzoO08QIJxALe979iUk1PtZK2LiTRtBvtQHkxrThhTiz1UNSz1bTxAgjevqamhAOPkMeLPpfbGwLfWzu2bLSTK6Op9m
        ZutnaW5hdGlvbiIgOiAiQXV0aG9yIiwKICAgICAgICAgICJpbnZlcnNlIiA6ICJib29rcyIsCiAgICAgICAgICAibmFtZSIgOiAgICJuYW1lIiA6ICJib29r
        cyIsCiAgICAgICAgICAib3B0aW9uYWwiZGVsZXRlUnVsZSIgOiAibnVsbGlmeSIsCiAgICAgICAgICAiZGVzdGluYXRpb24iIDogIkl0ZW0iLAogICAgICAg
        ICAgImludmVyc2UiIDogInNoZWx2ZXMiLAogICAgICAgICAgIm5hbWUiIDogIml0ZW1zIiwKICAgICAgICAgICJvcHRpb25hbCIgOiB0cnVlLAogICAgICAg
        ICAgIm9yZGVyZWQiIDogdHJ1ZSwKICAgICAgICAgICJyZW5hbWluZ0lkZW50aWZpZXIiIDogImJvb2tzIiwKICAgICAgICAgICJ0b01hbnkiIDogdHJ1ZQog
        ICAgICAgIH0KICAgICAgXSwKICAgICAgInJlcHJlc2VudGVkQ2xhc3NOYW1lIiA6ICJTaGVsZiIKICAgIH0KICBdLAogICJmb3JtYXQiIDogIm9iamVjdHN0
        b3JlLW1vZGVsIiwKICAiZm9ybWF0VmVyc2lvbiIgOiA1LAogICJ2ZXJzaW9uSWRlbnRpZmllcnMiIDogWwogICAgIjIiCiAgXQp9EAMACAAXACMARABlAHEA
        jQCgAMMAygD///////8Mqy8BNQE6AT8BRgFPAXIBlQG4AdsB/g0oAAAAAAAAAgEAAAAAAAAAGgAAAAAAACAgICAgICAgICAicmVuYW1pbmdJZGVudGlmaWVy
        IiA6ICJib29rcyIsCiAgICAgICAgICAidG9NYW55IiA6IHRydWUKICAgICAgICB9CiAgICAgIF0sCiAgICAgICJyZXByZXNlbnRlZENsYXNzTmFtZSIgOiAi
        U2hlbGYiCiAgICB9CiAgXSwKICAiZm9ybWF0IiA6ICJvYmplY3RzdG9yZS1tb2RlbCIsCiAgImZvcm1hdFZlcnNpb24iIDogNSwKICAidmVyc2lvbklkZW50
        aWZpZXJzIiA6IFsKICAgICIyIgogIF0KfRADAAgAFwAjAEQAZQBxAI0AoADDAMoA+QD7AP0BJAEvATUBOgE/AUYBTwFyAZUBuAHbAf4NKAAAAAAAAAIBAAAA
        AAAAABoAAAAAAAAAAAAAAAAAAA0qBQZBdXRob3IEQm9vawRJdGVtCE1hZ2F6aW5lBVNoZWxmAwAEAggEBAQAAwRib3JuB2NvdW50cnkEbmFtZQEFYm9va3MC
        AgIHAAAA8H294MEEAlVTBBFVcnN1bGEgSy4gTGUgR3VpbgMBAgEEBAIHAAAAIHOlICJwYWdlcyIsCiAgICAgICAgICAgInJlbmFtaW5nSWRlbnRpZmllciIg
        OiAicGFnZXMiLAogICAgICAgICAgInR5cGUgOiAiIkludGVnZXIgMTYiCiAgICAgICAgfSwKICAgICAgICB7CiAgICAgICAgICAibmFtZSIgOiAiaXNibiIs
        CiAgICAgICAgICAib3B0aW9uYWwiIDogdHJ1ZSwKICAgICAgICAgICJwYXR0ZXJuIiA6ICJbMC05LV17MTAsMTd9IiwKICAgICAgICAgICJ0eXBlIiA6ICJT
        dHJpbmciCiAgICAgICAgfQogICAgICBdLAogICAgICAibmFtZSIgOiAiQm9vayIsCiAgICAgICJwYXJlbnQiIDogIkl0ZW0iLAogICAgICAicmVsYXRpb25z
        aGlwcyIgOiBbCiAgICAgICAgewogICAgICAgICAgImRlbGV0ZVJ1bGUiIDogIm51bGxpZnkiLAogICAgICAgICAgImRlc3RpbmF0aW9uIiA6ICJBdXRob3Ii
        LAogICAgICAgICAgImludmVyc2UiIDogImJvb2tzIiwKICAgICAgICAgICJuYW1lIiA6ICJhdXRob3IiLAogICAgICAgICAgIm9wdGlvbmFsIiA6IGZhbHNl
        LAogICAgICAgICAgInRvTWFueSIgOiBmYWxzZQogICAgICAgIH0KICAgICAgXSwKICAgICAgInJlcHJlc2VudGVkQ2xhc3NOYW1lImluTGVuZ3RoIiA6IDEs
        CiAgICAgICAgICAibmFtZSIgOiAibmFtZSIsCiAgICAgICAgICAib3B0aW9uYWwiIDogZmFsc2UsCiAgICAgICAgICAidHlwZSIgOiAiU3RyaW5nIgogICAg
        ICAgIH0sCiAgICAgICAgewogICAgICAgICAgIm5hiWUiIDogImJvcm4iLAogICAgICAgICAgIm9wdGlvbmFsIiA6IHRydWUsCiAgICAgICAgICAidHlwZSIg
        OiAiRGF0ZSIKICAgICAgICB9LAogICAgICAgIHsKICAgICAg2iAgICJuYW1lIiA6ICJjb3VudHJ5IiwKICAgICAgICAgICJvcHRpb25hbCIgOiB0cnVlLAog
        ICAgICAgICAgInR5cGUiIDogIlN0cmluZyIKICAgICAgICB9CiAgICAgIF0sCiAgICAgICJuYW1lIiA6ICJBdXRob3IiLAogICAgICAicmVsYXRpb25zaGlw
        cyIgOiBbCiAgICAgICAgewogICAgICAgICAgImRlbGV0ZVJ1bGUiIDogImNhc2NhZGUiLAogICAgICAgICAgImRlc3RpbmF0aW9uIiA6ICJCb29rIiwKICAg
        ICAgICAgICJpbnZlcnNlIiA6ICJhdXRob3IiLAogICAgICAgICAgIm5hbWUiIDogImJvb2tzIiwKICAgICAgICAgICJvcHRpb25hbCJkZWxldGVSdWxlIiA6
        ICJudWxsaWZ5IiwKICAgICAgICAgICJkZXN0aW5hdGlvbiIgOiAiSXRlbSIsCiAgICAgICAgICAiaW52ZXJzZSIgOiAic2hlbHZlcyIsCiAgICAgICAgICAi
        bmFtZSIgOiAiaXRlbXMiLAogICAgICAgICAgIm9wdGlvbmFsIiA6IHRydWUsCiAgICAgICAgICAib3JkZXJlZCIgvSB0cnVlLAogICAgICAgICAgInJlbmFt
        aW5nSWRlbnRpZmllciIgOiAiYm9va3MiLAogICAgICAgICAgInRvTWFueSIgOiB0cnVlCiAgICAgICAgfQogICAgICBdLAogICAgICAicmVwcmVzZW50ZWRD
        bGFzc05hbWUiIDogIlNoZWxmIgogICAgfQogIF0sCiAgImZvcm1hdCIgOiAib2JqZWN0c3RvcmUtbW9kZWwiLAogICJmb3JtYXRWZXJzaW9uIiA6IDUsCiAg
        InZlcnNpb25JZGVudGlmaWVycyIgOiBbCiAgICAiMiIKICBdCn0QAwAIABcAIwBEAGUAcQCNAKAAwwDKAPkA+wD9ASQBLwE1AToBPwFGAU8BcgGVAbgB2wH+
        DSgAAAAAAAACAQAAAAAAAAAaAAAAAAAAAAAAAAAAAAANKg==
""", options: .ignoreUnknownCharacters))
        #expect(data.starts(with: Data("bplist00".utf8)))
        _ = PropertyListValue.decodeDictionary(data)
        // And damage at random places (a fixed sequence) to a metadata dictionary: never a crash.
        let model = try PropertyListValue.binaryPropertyList([
            "NSStoreType": .string("SQLite"), "NSStoreUUID": .string(UUID().uuidString),
            "NSStoreModelVersionHashes": .dictionary(["Event": .data(Data(repeating: 7, count: 32)), "Tag": .data(Data(repeating: 9, count: 32))]),
            "NSStoreModelVersionIdentifiers": .array([.string("")]),
        ])
        var seed: UInt64 = 0x5EED
        for _ in 0..<3_000 {
            var damaged = model
            for _ in 0..<(1 + Int(seed % 4)) {
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                damaged[Int(seed >> 33) % damaged.count] = UInt8(truncatingIfNeeded: seed >> 17)
            }
            _ = PropertyListValue.decodeDictionary(damaged)
        }
    }
}
