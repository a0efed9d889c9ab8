import ObjectModel

/// Objects of one entity, their values by slot (`EntityLayout`): what moves through the
/// store contract's batch forms (``PersistentStore/scanBatch(entity:after:limit:)`` and
/// ``PersistentStore/bulkInsert(_:checkingReferences:)-(RecordBatch,_)``) without a
/// dictionary per object.
///
/// Rows are slot-ordered: the attribute values of row `r` are `values[r * width ..< (r + 1) * width]`.
///
/// ```swift
/// var batch = RecordBatch(entity: model.entity(named: "Book")!)
/// let row = batch.appendRow(primaryKey: 7)
/// batch[row, attribute: batch.layout.attributeSlot("title")!] = .string("Dune")
/// ```
public struct RecordBatch: Sendable {
    /// The entity every object of the batch is exactly (no sub-entities).
    public let entity: EntityDescription
    /// Primary keys, by row.
    public private(set) var primaryKeys: [Int64] = []
    /// Versions (Core Data's `Z_OPT`), by row.
    public private(set) var versions: [Int64] = []
    /// Attribute values, row after row, each row in slot order; nil is no value.
    public private(set) var values: [Value?] = []
    /// To-one relationships, row after row, each row in slot order; nil is no object.
    public private(set) var toOne: [ObjectKey?] = []
    /// The to-many relationships the batch carries, by name: each row's members, with their
    /// order keys. None unless given with ``setToMany(_:_:)``: a conversion gives them when it
    /// writes into a store that keeps both sides of a relationship in its rows
    /// (``WholeRowInserting``), so each object is written once, whole. A batch with lists is
    /// inserted as the records ``records`` gives (their ``ObjectRecord/toMany``) are.
    public private(set) var toMany: [String: [OrderedMembers]] = [:]
    /// Each row's order key in the ordered list its to-one's target holds it in, by to-one
    /// relationship name (the to-one's inverse is an ordered to-many): what a store that keeps a
    /// member's order key in the member's own row (SQLite's `Z_FOK_` columns, as Core Data's) reads
    /// with the row. Nil for a row that has none. None unless given with
    /// ``setInverseOrderKeys(_:_:)``: a store that reads them with its rows gives them, and a
    /// store that writes them with its rows (``ForeignKeyRelationships/writesInverseOrderKeys``)
    /// writes them as given, so that a conversion need not write the ordered list again from its
    /// owner's side. Other stores ignore them: the owner's list says the order.
    public private(set) var inverseOrderKeys: [String: [Int64?]] = [:]

    /// An empty batch of `entity`'s objects; `capacity` is a hint (room for at most 4,096
    /// rows is reserved, so a scan's limit can be passed as it is).
    public init(entity: EntityDescription, capacity: Int = 0) {
        self.entity = entity
        let capacity = Swift.min(Swift.max(0, capacity), 4_096)
        primaryKeys.reserveCapacity(capacity)
        versions.reserveCapacity(capacity)
        values.reserveCapacity(capacity * entity.layout.attributes.count)
        toOne.reserveCapacity(capacity * entity.layout.toOne.count)
    }

    /// The slots.
    public var layout: EntityLayout { entity.layout }
    /// How many objects.
    public var count: Int { primaryKeys.count }
    /// Whether it has no objects.
    public var isEmpty: Bool { primaryKeys.isEmpty }

    /// Adds an object with no values; returns its row.
    @discardableResult
    public mutating func appendRow(primaryKey: Int64, version: Int64 = 1) -> Int {
        primaryKeys.append(primaryKey)
        versions.append(version)
        values.append(contentsOf: repeatElement(nil, count: layout.attributes.count))
        toOne.append(contentsOf: repeatElement(nil, count: layout.toOne.count))
        for name in toMany.keys { toMany[name]!.append(OrderedMembers([])) }
        for name in inverseOrderKeys.keys { inverseOrderKeys[name]!.append(nil) }
        return primaryKeys.count - 1
    }

    /// Gives every row its members across the to-many relationship `name`: `lists[r]` for row `r`
    /// (a stored to-many of the entity; ``checkInsertable(in:)`` checks the name and the members).
    public mutating func setToMany(_ name: String, _ lists: [OrderedMembers]) {
        precondition(lists.count == count, "one list per row")
        toMany[name] = lists
    }

    /// Gives every row its order key in the ordered list of the target its to-one relationship
    /// `name` names: `keys[r]` for row `r` (``inverseOrderKeys``).
    public mutating func setInverseOrderKeys(_ name: String, _ keys: [Int64?]) {
        precondition(keys.count == count, "one order key per row")
        inverseOrderKeys[name] = keys
    }

    /// Adds `count` objects (primary key 0, version 1, no values) and lets `body` fill them in
    /// place: it gets the new rows' primary keys, versions, attribute values (row after row, in
    /// slot order) and to-one keys (likewise). For a decoder that fills many rows at once without
    /// a subscript per value. When `body` throws, the rows stay with what it set so far.
    public mutating func appendRows(
        count: Int,
        _ body: (_ primaryKeys: UnsafeMutableBufferPointer<Int64>, _ versions: UnsafeMutableBufferPointer<Int64>,
                 _ values: UnsafeMutableBufferPointer<Value?>, _ toOne: UnsafeMutableBufferPointer<ObjectKey?>) throws -> Void
    ) rethrows {
        guard count > 0 else { return }
        let first = primaryKeys.count, width = layout.attributes.count, links = layout.toOne.count
        primaryKeys.append(contentsOf: repeatElement(0, count: count))
        versions.append(contentsOf: repeatElement(1, count: count))
        values.append(contentsOf: repeatElement(nil, count: count * width))
        toOne.append(contentsOf: repeatElement(nil, count: count * links))
        for name in toMany.keys { toMany[name]!.append(contentsOf: repeatElement(OrderedMembers([]), count: count)) }
        for name in inverseOrderKeys.keys { inverseOrderKeys[name]!.append(contentsOf: repeatElement(nil, count: count)) }
        try primaryKeys.withUnsafeMutableBufferPointer { keys in
            try versions.withUnsafeMutableBufferPointer { versions in
                try values.withUnsafeMutableBufferPointer { values in
                    try toOne.withUnsafeMutableBufferPointer { toOne in
                        try body(UnsafeMutableBufferPointer(rebasing: keys[first...]), UnsafeMutableBufferPointer(rebasing: versions[first...]),
                                 UnsafeMutableBufferPointer(rebasing: values[(first * width)...]),
                                 UnsafeMutableBufferPointer(rebasing: toOne[(first * links)...]))
                    }
                }
            }
        }
    }

    /// The value of an attribute slot of a row.
    public subscript(row: Int, attribute slot: Int) -> Value? {
        get { values[row * layout.attributes.count + slot] }
        set { values[row * layout.attributes.count + slot] = newValue }
    }

    /// The object a to-one slot of a row names. Setting it forgets the row's order key in the
    /// list of the object it named (``inverseOrderKeys``).
    public subscript(row: Int, toOne slot: Int) -> ObjectKey? {
        get { toOne[row * layout.toOne.count + slot] }
        set {
            toOne[row * layout.toOne.count + slot] = newValue
            if !inverseOrderKeys.isEmpty, inverseOrderKeys[layout.toOne[slot].name] != nil { inverseOrderKeys[layout.toOne[slot].name]![row] = nil }
        }
    }

    /// Gives the rows these primary keys, one per row in order (a reader that learns the keys
    /// after the values).
    mutating func setPrimaryKeys(_ keys: [Int64]) {
        precondition(keys.count == count, "one key per row")
        primaryKeys = keys
    }

    /// The rows in `range`, as a batch of their own (with the lists the batch carries).
    public func rows(_ range: Range<Int>) -> RecordBatch {
        var part = RecordBatch(entity: entity)
        let width = layout.attributes.count, links = layout.toOne.count
        part.primaryKeys = Array(primaryKeys[range])
        part.versions = Array(versions[range])
        part.values = Array(values[(range.lowerBound * width)..<(range.upperBound * width)])
        part.toOne = Array(toOne[(range.lowerBound * links)..<(range.upperBound * links)])
        part.toMany = toMany.mapValues { Array($0[range]) }
        part.inverseOrderKeys = inverseOrderKeys.mapValues { Array($0[range]) }
        return part
    }

    /// The key of a row's object.
    public func key(at row: Int) -> ObjectKey { ObjectKey(entity.name, primaryKeys[row]) }

    /// A row as a record (attributes, to-one relationships and the to-many lists the batch carries).
    public func record(at row: Int) -> ObjectRecord {
        var record = ObjectRecord(key: key(at: row), version: versions[row])
        let width = layout.attributes.count, links = layout.toOne.count
        for slot in 0..<width { if let value = values[row * width + slot] { record.attributes[layout.attributes[slot].name] = value } }
        for slot in 0..<links { if let target = toOne[row * links + slot] { record.toOne[layout.toOne[slot].name] = target } }
        for (name, lists) in toMany {
            record.toMany[name] = lists[row].keys
            if !OrderKeys.arePositions(lists[row].orderKeys) { record.orderKeys[name] = lists[row].orderKeys }
        }
        return record
    }

    /// Every row as a record.
    public var records: [ObjectRecord] { (0..<count).map(record(at:)) }

    /// Hands `records` to `body` as batches, in order: each batch holds consecutive records of one
    /// entity of `model`, at most `batchSize` (at least 1).
    /// - Throws: ``StoreError/Code/invalidChange`` for a record of no entity of `model` or one
    ///   ``append(_:)`` refuses; whatever `body` throws.
    public static func runs(of records: [ObjectRecord], batchSize: Int, in model: ManagedObjectModel,
                            _ body: (RecordBatch) throws -> Void) throws {
        let size = Swift.max(1, batchSize)
        var batch: RecordBatch?
        for record in records {
            if batch == nil || batch!.entity.name != record.key.entity || batch!.count >= size {
                if let full = batch { try body(full) }
                guard let entity = model.entity(named: record.key.entity) else {
                    throw StoreError(.invalidChange, "\(record.key): no entity named \(record.key.entity)")
                }
                batch = RecordBatch(entity: entity, capacity: Swift.min(size, records.count))
            }
            try batch!.append(record)
        }
        if let last = batch { try body(last) }
    }

    /// Adds a record of exactly this entity.
    /// - Throws: ``StoreError/Code/invalidChange`` for another entity, a name that is no
    ///   stored attribute or to-one relationship, or to-many relationships (a batch takes them
    ///   for all its rows at once, ``setToMany(_:_:)``).
    public mutating func append(_ record: ObjectRecord) throws {
        guard record.key.entity == entity.name else {
            throw StoreError(.invalidChange, "\(record.key) is not a \(entity.name) (a batch holds one entity, sub-entities apart)")
        }
        guard record.toMany.isEmpty else { throw StoreError(.invalidChange, "\(record.key): a batch carries no to-many relationships") }
        let row = appendRow(primaryKey: record.key.primaryKey, version: record.version)
        for (name, value) in record.attributes {
            guard let slot = layout.attributeSlot(name) else { throw StoreError(.invalidChange, "\(record.key): no stored attribute named \(name)") }
            self[row, attribute: slot] = value
        }
        for (name, target) in record.toOne {
            guard let slot = layout.toOneSlot(name) else { throw StoreError(.invalidChange, "\(record.key): no stored to-one relationship named \(name)") }
            self[row, toOne: slot] = target
        }
    }

    /// Checks what every store checks before it inserts the batch without checking references
    /// (``PersistentStore/bulkInsert(_:checkingReferences:)-(RecordBatch,_)``): the entity is
    /// not abstract, keys are 1 or more, every value fits its attribute's type, every to-one and
    /// every member of a to-many list names an object of the relationship's destination (or a
    /// sub-entity of it) in `model`, and every list is of a stored to-many relationship, holds no
    /// object twice and has one ascending order key per member (1, 2, 3… unless ordered).
    /// Keys already in use, and whether targets exist, are the store's to check.
    /// - Throws: ``StoreError/Code/invalidChange`` naming the object and property.
    public func checkInsertable(in model: ManagedObjectModel) throws {
        if entity.isAbstract { throw StoreError(.invalidChange, "cannot insert \(entity.name) objects: the entity is abstract") }
        let width = layout.attributes.count, links = layout.toOne.count
        // Target entities already found to fit each to-one slot, and the last one found.
        var fitting = [Set<String>](repeating: [], count: links)
        var lastFitting = [String?](repeating: nil, count: links)
        let types = layout.attributes.map(\.type)
        for row in 0..<count {
            if primaryKeys[row] < 1 { try ContractRule.newKey(key(at: row)) }
            for slot in 0..<width {
                // The key is built only for the message of a value that does not fit.
                if let value = values[row * width + slot], !types[slot].accepts(value) {
                    try ContractRule.value(value, of: layout.attributes[slot], key(at: row))
                }
            }
            for (slot, relationship) in layout.toOne.enumerated() {
                guard let target = toOne[row * links + slot], target.entity != lastFitting[slot] else { continue }
                if !fitting[slot].contains(target.entity) {
                    try ContractRule.target(target, of: relationship, from: key(at: row), model: model)
                    fitting[slot].insert(target.entity)
                }
                lastFitting[slot] = target.entity
            }
        }
        for name in inverseOrderKeys.keys where layout.toOneSlot(name) == nil {
            throw StoreError(.invalidChange, "\(entity.name) has no stored to-one relationship named \(name) (order keys given for it)")
        }
        for (name, lists) in toMany {
            guard let relationship = entity.storedRelationships.first(where: { $0.name == name }), relationship.isToMany else {
                throw StoreError(.invalidChange, "\(entity.name) has no stored to-many relationship named \(name)")
            }
            var fitting: Set<String> = []
            for (row, list) in lists.enumerated() {
                if !OrderKeys.arePositions(list.orderKeys) {
                    try OrderKeys.check(list.orderKeys, count: list.keys.count, owner: key(at: row), relationship: relationship)
                }
                if list.keys.count > 1, Set(list.keys).count != list.keys.count {
                    throw StoreError(.invalidChange, "\(key(at: row)).\(name): an object appears twice")
                }
                for target in list.keys where !fitting.contains(target.entity) {
                    try ContractRule.target(target, of: relationship, from: key(at: row), model: model)
                    fitting.insert(target.entity)
                }
            }
        }
    }
}
