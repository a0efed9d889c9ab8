import Foundation
import ObjectModel
import ObjectStore

extension RecordTables {
    /// Inserts new objects given as batches (at most one per entity, each laid out by `model`)
    /// as one bulk insert: exactly what ``validate(_:model:storeID:checkingReferences:)`` and
    /// ``apply(_:model:completing:)`` do with their records, checked and written by slot.
    ///
    /// Everything is checked before anything changes, so nothing of the batches lands on an
    /// error: the model's rules (`RecordBatch.checkInsertable(in:)`), keys given twice in a
    /// hierarchy or in use there, the sides of inverse pairs the batches give (as
    /// `ChangeSet.checkInverses(model:)`), and with `checkingReferences` every target existing
    /// among the batches or the tables. With `checkingReferences` the inverse sides the batches
    /// do not give are completed (the rows that changes written decoded); without it they are not:
    /// the caller writes them, as for records.
    ///
    /// A batch whose keys ascend past the table's last key is encoded straight into the table's
    /// ``PackedRows`` (`file` names them in errors), no dictionary per object; any other is kept
    /// as decoded rows.
    /// - Throws: `StoreError` with code `invalidChange` naming the object.
    public mutating func insert(_ batches: [RecordBatch], model: ManagedObjectModel, checkingReferences: Bool, file: String) throws {
        // Rows are laid out by slot: to-many lists go in as records (`RecordTablesStore.bulkInsert`).
        if let carrying = batches.first(where: { !$0.toMany.isEmpty }) {
            throw StoreError(.invalidChange, "a batch of \(carrying.entity.name) carries to-many lists: insert its records")
        }
        let batches = batches.filter { !$0.isEmpty }
        guard !batches.isEmpty else { return }
        let members = try BatchMembers(batches)
        let completes = try check(members, model: model, checkingReferences: checkingReferences)
        let completed = completes ? try completion(of: members, model: model) : []
        // Nothing has changed so far; readying packed rows keeps their meaning; the rest cannot fail.
        for batch in batches { try tables[batch.entity.name]?.prepare(for: batch) }
        for batch in batches {
            tables[batch.entity.name, default: RecordTable()].insert(batch, file: file)
            let root = batch.entity.rootName
            lastKey[root] = Swift.max(lastKey[root, default: 0], batch.primaryKeys.max()!)
        }
        for (key, row) in completed { tables[key.entity, default: RecordTable()].insert(key.primaryKey, row) }
    }

    /// Checks batches as ``validate(_:model:storeID:checkingReferences:)`` checks their records;
    /// returns whether inserting them completes inverse sides they do not give.
    private func check(_ members: BatchMembers, model: ManagedObjectModel, checkingReferences: Bool) throws -> Bool {
        for batch in members.batches { try batch.checkInsertable(in: model) }
        try checkKeys(members, model: model)
        let constrained = members.batches.filter { !$0.entity.uniquenessConstraints.isEmpty }
        if !constrained.isEmpty { try checkUniqueness(ChangeSet(inserted: constrained.flatMap(\.records)), model: model) }
        var claims: [Claim: Claims] = [:]
        var completes = false
        for (b, batch) in members.batches.enumerated() {
            let links = batch.layout.toOne.count
            for (slot, relationship) in batch.layout.toOne.enumerated() {
                // What is known of the targets' entity, found again only when it changes.
                var entity: String? = nil
                var member: Int? = nil, table: RecordTable? = nil, inverse: Relationship? = nil, backSlot: Int? = nil
                // Claims through a to-one inverse, gathered for one target entity at a time.
                var claimed: (claim: Claim, claims: Claims)? = nil
                func gather() {
                    if let (claim, list) = claimed { claims[claim, default: Claims()].add(list) }
                    claimed = nil
                }
                for row in 0..<batch.count {
                    guard let target = batch.toOne[row * links + slot] else { continue }
                    if entity != target.entity {
                        gather()
                        entity = target.entity
                        member = members.index[target.entity]
                        table = tables[target.entity]
                        inverse = relationship.inverse.flatMap { model.entity(named: target.entity)?.relationshipsByName[$0] }
                        backSlot = member.flatMap { m in relationship.inverse.flatMap { members.batches[m].layout.toOneSlot($0) } }
                    }
                    let targetRow = member.flatMap { members.row(of: target.primaryKey, in: $0) }
                    if checkingReferences, targetRow == nil, table?.contains(target.primaryKey) != true {
                        throw StoreError(.invalidChange, "\(batch.key(at: row)).\(relationship.name): \(target) does not exist")
                    }
                    guard let inverseName = relationship.inverse else { continue }
                    // The batches give the other side too: it must name this object.
                    var backGiven = false
                    if let m = member, let targetRow, let backSlot, let back = members.batches[m][targetRow, toOne: backSlot] {
                        backGiven = true
                        guard back.primaryKey == batch.primaryKeys[row], back.entity == batch.entity.name else {
                            throw StoreError(.invalidChange, "the change set's sides disagree: \(batch.key(at: row)).\(relationship.name) names \(target), "
                                             + "but \(target).\(inverseName) does not name \(batch.key(at: row))")
                        }
                    }
                    guard let inverse else { continue }
                    if !backGiven { completes = completes || checkingReferences }
                    if !inverse.isToMany {
                        if claimed == nil { claimed = (Claim(entity: target.entity, inverse: inverseName), Claims()) }
                        claimed!.claims.add(target.primaryKey, batch: b, row: row)
                    }
                }
                gather()
            }
        }
        // No object is claimed through a to-one inverse by two others.
        for (claim, list) in claims {
            guard let (first, second) = list.twice() else { continue }
            let target = ObjectKey(claim.entity, list.keys[first])
            let (one, other) = (members.batches[list.batches[first]].key(at: list.rows[first]),
                                members.batches[list.batches[second]].key(at: list.rows[second]))
            throw StoreError(.invalidChange, "the change set's sides disagree: \(one) and \(other) both name \(target), "
                             + "whose \(claim.inverse) is to-one")
        }
        return completes
    }

    /// No key is given twice in a hierarchy, or in use there.
    private func checkKeys(_ members: BatchMembers, model: ManagedObjectModel) throws {
        func inUse(_ key: ObjectKey, _ root: String) -> StoreError {
            StoreError(.invalidChange, "cannot insert \(key): primary key \(key.primaryKey) is in use in \(root)'s hierarchy")
        }
        var byRoot: [String: [Int]] = [:]
        for (b, batch) in members.batches.enumerated() { byRoot[batch.entity.rootName, default: []].append(b) }
        for (root, indexes) in byRoot {
            // Given twice: adjacent in key order.
            var given: [(pk: Int64, batch: Int, row: Int)] = []
            for b in indexes { given += members.sortedRows(b).map { (members.batches[b].primaryKeys[$0], b, $0) } }
            if indexes.count > 1 { given.sort { $0.pk < $1.pk } }
            for (a, b) in zip(given, given.dropFirst()) where a.pk == b.pk {
                throw inUse(members.batches[b.batch].key(at: b.row), root)
            }
            // In use: only where a table's keys overlap the batches'.
            guard let low = given.first?.pk, let high = given.last?.pk else { continue }
            for kind in model.entity(named: root)!.kindNames {
                guard let table = tables[kind], let first = table.order.first, let last = table.order.last,
                      first <= high, low <= last else { continue }
                for key in given where table.contains(key.pk) { throw inUse(members.batches[key.batch].key(at: key.row), root) }
            }
        }
    }

    /// The rows whose inverse sides inserting the batches moves, as ``completeInverses(_:_:_:model:deleted:read:)``
    /// completes them for the same records (dictionary work, only for batches that need it).
    private func completion(of members: BatchMembers, model: ManagedObjectModel) throws -> [(ObjectKey, StoredRow)] {
        var given: [RelationshipSide: [ObjectKey]] = [:]
        for batch in members.batches {
            let links = batch.layout.toOne.count
            for (slot, relationship) in batch.layout.toOne.enumerated() where relationship.inverse != nil {
                for row in 0..<batch.count {
                    if let target = batch.toOne[row * links + slot] { given[RelationshipSide(batch.key(at: row), relationship.name)] = [target] }
                }
            }
        }
        var rows = PendingRows()
        try completeInverses(given, [:], &rows, model: model, deleted: []) { key in
            if let m = members.index[key.entity], let row = members.row(of: key.primaryKey, in: m) {
                return members.batches[m].storedRow(row)
            }
            return try self.row(key)
        }
        rows.finish()
        return rows.order.map { ($0, rows.rows[$0]!) }
    }
}

/// The batches of one bulk insert, found by key.
private struct BatchMembers {
    let batches: [RecordBatch]
    /// The batch of each entity.
    let index: [String: Int]
    /// For each batch whose keys do not ascend, its rows in key order.
    private let sorted: [[Int]?]

    init(_ batches: [RecordBatch]) throws {
        self.batches = batches
        var index: [String: Int] = [:]
        for (b, batch) in batches.enumerated() {
            precondition(index.updateValue(b, forKey: batch.entity.name) == nil, "one batch per entity")
        }
        self.index = index
        sorted = batches.map { batch in
            let keys = batch.primaryKeys
            return zip(keys, keys.dropFirst()).allSatisfy({ $0 < $1 }) ? nil : keys.indices.sorted { keys[$0] < keys[$1] }
        }
    }

    /// The rows of batch `b` in key order.
    func sortedRows(_ b: Int) -> [Int] { sorted[b] ?? Array(batches[b].primaryKeys.indices) }

    /// The row of batch `b` with primary key `pk`, or nil.
    func row(of pk: Int64, in b: Int) -> Int? {
        let keys = batches[b].primaryKeys
        guard !keys.isEmpty else { return nil }
        if let order = sorted[b] {
            var (low, high) = (0, order.count)
            while low < high {
                let mid = (low + high) / 2
                if keys[order[mid]] < pk { low = mid + 1 } else { high = mid }
            }
            return low < order.count && keys[order[low]] == pk ? order[low] : nil
        }
        return keys.ascendingIndex(of: pk)
    }
}

/// Objects of one entity claimed through one to-one inverse.
private struct Claim: Hashable {
    let entity: String
    let inverse: String
}

/// The claims on the objects of a ``Claim``: each target's key and the row that claims it.
private struct Claims {
    var keys: [Int64] = []
    var batches: [Int] = []
    var rows: [Int] = []
    private var ascending = true

    mutating func add(_ pk: Int64, batch: Int, row: Int) {
        if let last = keys.last, last >= pk { ascending = false }
        keys.append(pk)
        batches.append(batch)
        rows.append(row)
    }

    mutating func add(_ other: Claims) {
        if let last = keys.last, let first = other.keys.first, last >= first { ascending = false }
        ascending = ascending && other.ascending
        keys += other.keys
        batches += other.batches
        rows += other.rows
    }

    /// Two claims on one object (their indexes), or nil.
    func twice() -> (Int, Int)? {
        guard !ascending else { return nil }
        let order = keys.indices.sorted { (keys[$0], $0) < (keys[$1], $1) }
        for (a, b) in zip(order, order.dropFirst()) where keys[a] == keys[b] { return (a, b) }
        return nil
    }
}

extension RecordBatch {
    /// The records laid out as one batch per entity, in `model`'s layouts, or nil when some
    /// record does not fit one (an unknown entity or name, a to-many relationship): those
    /// take the record path, which names what is wrong.
    static func grouping(_ records: [ObjectRecord], model: ManagedObjectModel) -> [RecordBatch]? {
        // Which batch each record goes to, and how many each gets.
        var entities: [EntityDescription] = [], counts: [Int] = []
        var index: [String: Int] = [:]
        var member = [Int](repeating: 0, count: records.count)
        var last: (entity: String, batch: Int)? = nil
        for (i, record) in records.enumerated() {
            guard record.toMany.isEmpty else { return nil }
            let b: Int
            if let last, last.entity == record.key.entity {
                b = last.batch
            } else if let known = index[record.key.entity] {
                b = known
            } else {
                guard let entity = model.entity(named: record.key.entity) else { return nil }
                b = entities.count
                index[entity.name] = b
                entities.append(entity)
                counts.append(0)
            }
            last = (record.key.entity, b)
            member[i] = b
            counts[b] += 1
        }
        var batches: [RecordBatch] = []
        for (b, entity) in entities.enumerated() {
            var batch = RecordBatch(entity: entity)
            let attributes = SlotNames(entity.layout.attributes.map(\.name)), toOnes = SlotNames(entity.layout.toOne.map(\.name))
            let width = entity.layout.attributes.count, links = entity.layout.toOne.count
            var fits = true
            batch.appendRows(count: counts[b]) { primaryKeys, versions, values, toOne in
                var row = 0
                for (i, record) in records.enumerated() where member[i] == b {
                    primaryKeys[row] = record.key.primaryKey
                    versions[row] = record.version
                    for (name, value) in record.attributes {
                        guard let slot = attributes.slot(name) else { fits = false; return }
                        values[row * width + slot] = value
                    }
                    for (name, target) in record.toOne {
                        guard let slot = toOnes.slot(name) else { fits = false; return }
                        toOne[row * links + slot] = target
                    }
                    row += 1
                }
            }
            guard fits else { return nil }
            batches.append(batch)
        }
        return batches
    }
}

/// Slot names found by name: a few compared one by one (short names compare as two words),
/// more looked up.
private struct SlotNames {
    let names: [String]
    let slots: [String: Int]?

    init(_ names: [String]) {
        self.names = names
        slots = names.count > 8 ? Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a }) : nil
    }

    func slot(_ name: String) -> Int? {
        if let slots { return slots[name] }
        return names.firstIndex(of: name)
    }
}
