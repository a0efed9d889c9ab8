import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import SQLiteStore
import Testing

@Suite("SQLiteStore conformance")
struct SQLiteConformanceTests {
    static let suite = StoreConformance(type: SQLiteStoreType()) { try StoreConformance.temporaryLocation(extension: "sqlite") }

    @Test("contract", arguments: StoreConformance.Check.allCases)
    func contract(_ check: StoreConformance.Check) throws {
        try Self.suite.run(check)
    }
}
