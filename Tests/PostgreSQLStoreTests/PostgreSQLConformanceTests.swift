import Foundation
import ObjectModel
import ObjectStore
import ObjectStoreTesting
import PostgreSQLStore
import Testing
import TestSupport

/// The whole contract against a private server (one per test process), each store in a schema
/// of its own: the checks run in parallel.
@Suite("PostgreSQLStore conformance")
struct PostgreSQLConformanceTests {
    static let suite = StoreConformance(type: PostgreSQLStoreType()) { try PostgreSQLTestServer.location() }

    @Test("contract", arguments: StoreConformance.Check.allCases)
    func contract(_ check: StoreConformance.Check) throws {
        try Self.suite.run(check)
    }
}
