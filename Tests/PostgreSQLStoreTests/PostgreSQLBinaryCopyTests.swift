import Foundation
import ObjectModel
import ObjectStore
import PostgreSQLStore
import Testing
import TestSupport

/// Batches go into PostgreSQL in `COPY`'s binary format. The oracle is the server: each stored
/// value, as `psql` prints it, against what the server makes of the value's text itself
/// (`'…'::numeric`), or against the value's own bits (`float8send`).
@Suite("PostgreSQLStore: binary COPY")
struct PostgreSQLBinaryCopyTests {
    static let model = try! ManagedObjectModel {
        Entity("Sample") {
            Attribute("amount", .decimal)
            Attribute("x", .double)
            Attribute("at", .date)
            Attribute("label", .string)
            Attribute("ok", .boolean)
            Attribute("id", .uuid)
            Attribute("blob", .binaryData)
            Attribute("link", .uri)
            Attribute("n", .integer16)
        }
    }

    static let decimals = [
        "0", "1", "-1", "0.5", "-0.005", "19.990", "5000", "10000", "100000", "9999", "0.0001", "0.00010", "1E+5", "1e-20",
        "-99999999.99990001", "123456789012345678901234567890.123", "3.4028236692093846346337460743176821145e+37",
        "0.000000000000000000000000000000000000001", "-12345678901234567890123456789012345678", "NaN",
    ]

    static func decimal(_ text: String) -> Decimal {
        text == "NaN" ? .nan : Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))!
    }

    @Test("decimals, doubles, dates, text (marked or not), booleans, UUIDs, bytes, URIs and integers copied in binary are stored as the server stores their text, and read back equal",
          arguments: [false, true])
    func valuesStoredAsTheServerParsesThem(filledInOneGo: Bool) throws {
        let url = try PostgreSQLTestServer.location()
        defer { try? PostgreSQLStoreType().destroy(at: url) }
        let options = filledInOneGo ? StoreOptions(deferredDurability: true, recordsHistory: false) : StoreOptions()
        let store = try PostgreSQLStoreType().open(at: url, model: Self.model, options: options)
        defer { try? store.close() }
        let entity = Self.model.entity(named: "Sample")!
        let doubles: [Double] = [0, -0.0, .nan, .infinity, -.infinity, .pi, .leastNonzeroMagnitude, -Double.greatestFiniteMagnitude, 0.1]
        let labels = ["plain", "", "tab\there\nnew line\\back", "Zoë 👩‍👩‍👧 日本語", "nul \u{0} inside", "\u{FFFF}marker", "e\u{301}"]
        let bytes = [Data(), Data([0, 1, 2, 255]), Data("\\x00".utf8)]
        var batch = RecordBatch(entity: entity)
        var expected: [[String: Value]] = []
        for (index, text) in Self.decimals.enumerated() {
            var values: [String: Value] = ["amount": .decimal(Self.decimal(text))]
            values["x"] = .double(doubles[index % doubles.count])
            values["at"] = .date(Date(timeIntervalSinceReferenceDate: doubles[(index + 3) % doubles.count]))
            values["label"] = .string(labels[index % labels.count])
            values["ok"] = .boolean(index % 2 == 0)
            values["id"] = .uuid(UUID())
            values["blob"] = .data(bytes[index % bytes.count])
            values["link"] = .uri(URL(string: "https://example.com/\(index)?q=a%20b#f")!)
            values["n"] = .integer(index % 3 == 0 ? -32768 : Int64(index))
            if index == 7 { values = ["amount": values["amount"]!] }   // the rest NULL
            let row = batch.appendRow(primaryKey: Int64(index + 1))
            for (slot, attribute) in batch.layout.attributes.enumerated() { batch[row, attribute: slot] = values[attribute.name] }
            expected.append(values)
        }
        try store.bulkInsert(batch, checkingReferences: false)
        try store.close()

        let schema = url.absoluteString.components(separatedBy: "schema=")[1]
        let rows = try PostgreSQLTestServer.psql("""
            SELECT amount::text, encode(float8send(x), 'hex'), encode(float8send(at), 'hex'), ok, id, encode(blob, 'hex'), link, n, \
            label IS NULL, encode(convert_to(label, 'UTF8'), 'hex') FROM "\(schema)"."Sample" ORDER BY pk
            """).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.count == Self.decimals.count)
        // What the server makes of each decimal's text, in one statement.
        let parsed = try PostgreSQLTestServer.psql("SELECT v::numeric::text FROM unnest(ARRAY["
            + Self.decimals.map { "'\(ValueText.text(Self.decimal($0)))'" }.joined(separator: ", ")
            + "]) WITH ORDINALITY AS t(v, i) ORDER BY i").split(separator: "\n").map(String.init)
        func hex(_ double: Double) -> String { String(format: "%016llx", double.bitPattern) }
        for (index, (row, values)) in zip(rows, expected).enumerated() {
            guard row.count == 10 else { Issue.record("row \(row)"); continue }
            #expect(row[0] == parsed[index], "decimal \(Self.decimals[index])")
            if case .double(let x)? = values["x"] { #expect(row[1] == hex(x), "double \(x)") } else { #expect(row[1] == "") }
            if case .date(let at)? = values["at"] { #expect(row[2] == hex(at.timeIntervalSinceReferenceDate)) } else { #expect(row[2] == "") }
            if case .boolean(let ok)? = values["ok"] { #expect(row[3] == (ok ? "t" : "f")) } else { #expect(row[3] == "") }
            if case .uuid(let id)? = values["id"] { #expect(row[4] == id.uuidString.lowercased()) } else { #expect(row[4] == "") }
            if case .data(let blob)? = values["blob"] { #expect(row[5] == blob.map { String(format: "%02x", $0) }.joined()) } else { #expect(row[5] == "") }
            if case .uri(let link)? = values["link"] { #expect(row[6] == link.absoluteString) } else { #expect(row[6] == "") }
            if case .integer(let n)? = values["n"] { #expect(row[7] == String(n)) } else { #expect(row[7] == "") }
            // Text the layout does not mark is its UTF-8; marked text is the store's own form (read back below).
            if case .string(let label)? = values["label"], !label.unicodeScalars.contains(where: { $0 == "\u{0}" || $0 == "\u{FFFF}" }) {
                #expect(row[9] == Data(label.utf8).map { String(format: "%02x", $0) }.joined(), "label \(label.debugDescription)")
            } else if values["label"] == nil {
                #expect(row[8] == "t")
            }
        }

        // And the store reads back every value it was given (NaN as NaN, -0.0 as -0.0).
        let reopened = try PostgreSQLStoreType().open(at: url, model: Self.model, options: StoreOptions(readOnly: true))
        defer { try? reopened.close() }
        let read = try reopened.fetch(FetchRequest(entity: "Sample")).sorted { $0.key.primaryKey < $1.key.primaryKey }
        #expect(read.count == expected.count)
        for (record, values) in zip(read, expected) {
            for (name, value) in values {
                switch (record.attributes[name], value) {
                case (.double(let a)?, .double(let b)): #expect(a.bitPattern == b.bitPattern, "\(record.key).\(name)")
                case (.date(let a)?, .date(let b)):
                    #expect(a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern, "\(record.key).\(name)")
                case (.decimal(let a)?, .decimal(let b)) where b.isNaN: #expect(a.isNaN)
                default: #expect(record.attributes[name] == value, "\(record.key).\(name)")
                }
            }
            #expect(record.attributes.count == values.count, "\(record.key): no value stored that was not given")
        }
    }
}
