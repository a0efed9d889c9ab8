import ObjectModel
import ObjectStore
import Testing

@Suite("Record batches")
struct RecordBatchTests {
    private let model = try! ManagedObjectModel {
        Entity("List") { Relationship("items", to: "Item", inverse: "list", toMany: true, ordered: true) }
        Entity("Item") { Relationship("list", to: "List", inverse: "items") }
    }

    @Test("a row's order key in its to-one's list goes with its rows, and is forgotten when the to-one is set anew")
    func inverseOrderKeys() throws {
        var batch = RecordBatch(entity: model.entity(named: "Item")!)
        let slot = try #require(batch.layout.toOneSlot("list"))
        for key in 1...3 { batch[batch.appendRow(primaryKey: Int64(key)), toOne: slot] = ObjectKey("List", 1) }
        batch.setInverseOrderKeys("list", [30, nil, 10])
        batch.appendRow(primaryKey: 4)
        #expect(batch.inverseOrderKeys["list"] == [30, nil, 10, nil])
        #expect(batch.rows(1..<3).inverseOrderKeys["list"] == [nil, 10])
        batch[0, toOne: slot] = ObjectKey("List", 2)
        #expect(batch.inverseOrderKeys["list"] == [nil, nil, 10, nil], "another list: the old position means nothing there")
        try batch.checkInsertable(in: model)
        var other = RecordBatch(entity: model.entity(named: "Item")!)
        other.appendRow(primaryKey: 1)
        other.setInverseOrderKeys("items", [1])
        #expect(throws: StoreError.self) { try other.checkInsertable(in: model) }
    }
}
