import Foundation
import LMDBStore
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import Testing

@Suite("LMDBStore conformance")
struct LMDBConformanceTests {
    static let suite = StoreConformance(type: LMDBStoreType()) { try StoreConformance.temporaryLocation(extension: "lmdb") }

    @Test("contract", arguments: StoreConformance.Check.allCases)
    func contract(_ check: StoreConformance.Check) throws {
        try Self.suite.run(check)
    }
}
