import Foundation
import ObjectModel
import ObjectStore
import StoreToolkit

/// The store's row format (version 3, `docs/lmdb-format.md`): which number each entity
/// has and in which order its values are written, read from the store's `schema`
/// database when it opens, written there when it is created.
///
/// A row names nothing: its values follow the order the `schema` database gives, so a
/// model that lists the same attributes in another order still reads every value into
/// its own slot.
final class LMDBRowFormat: Sendable {
    /// The version this build writes: 3, every value followed by its checksum.
    static let version: UInt32 = 3
    /// The versions this build reads (and writes, in a store of that version): 2 has no checksums.
    static let readable: Set<UInt32> = [2, 3]
    /// The key of the version in the `meta` database (a 4-byte little-endian integer;
    /// stores of version 1 have none).
    static let versionKey = Data("format".utf8)
    /// The database that holds one record per entity.
    static let schema = "schema"

    /// Each entity's format, by name.
    let entities: [String: LMDBEntityFormat]
    /// Entity names by number − 1.
    private let names: [String]

    private init(entities: [LMDBEntityFormat]) {
        self.entities = Dictionary(uniqueKeysWithValues: entities.map { ($0.name, $0) })
        names = entities.sorted { $0.number < $1.number }.map(\.name)
    }

    /// The format of a new store: entities numbered 1, 2, 3… in name order, values in
    /// the order of each entity's layout.
    convenience init(model: ManagedObjectModel) {
        self.init(entities: model.entityNames.sorted().enumerated().map { index, name in
            let entity = model.entity(named: name)!
            return LMDBEntityFormat(name: name, number: index + 1, attributes: entity.layout.attributes.map(\.name),
                                    toOne: entity.layout.toOne.map(\.name), toMany: Self.toMany(of: entity), layout: entity.layout)
        })
    }

    /// The format a store records, checked against `model`.
    /// - Throws: ``StoreError`` `corrupt` for a record that cannot be read or numbers that
    ///   collide; `incompatibleModel` naming the entity and property where the store and
    ///   the model differ.
    convenience init(reading txn: LMDBTransaction, model: ManagedObjectModel, url: URL) throws {
        var formats: [LMDBEntityFormat] = []
        var numbers: Set<Int> = []
        try txn.walk(Self.schema, from: nil) { key, value in
            guard let name = String(bytes: key, encoding: .utf8) else {
                throw StoreError(.corrupt, "the schema database holds a name that is not UTF-8", url: url)
            }
            guard let entity = model.entity(named: name) else {
                throw StoreError(.incompatibleModel, "the store has an entity \(name) that the model does not", url: url)
            }
            let damaged = StoreError(.corrupt, "the schema record of \(name) is damaged", url: url)
            var reader = BinaryReader(bytes: Array(value), file: url.path)
            guard let raw = try? reader.varint(), let number = Int(exactly: raw), let lists = try? (0..<3).map({ _ in
                try (0..<(try reader.count())).map { _ in try reader.string() }
            }), reader.offset == reader.end, number > 0, number <= model.entityNames.count, numbers.insert(number).inserted else {
                throw damaged
            }
            let format = LMDBEntityFormat(name: name, number: number, attributes: lists[0], toOne: lists[1], toMany: lists[2], layout: entity.layout)
            try format.check(against: entity, toMany: Self.toMany(of: entity), url: url)
            formats.append(format)
            return true
        }
        if let missing = model.entityNames.sorted().first(where: { name in !formats.contains { $0.name == name } }) {
            throw StoreError(.incompatibleModel, "the store has no entity \(missing), which the model has", url: url)
        }
        self.init(entities: formats)
    }

    /// Records the format: the version in `meta`, one record per entity in `schema`.
    func write(_ txn: LMDBTransaction) throws {
        try txn.put(LMDBLayout.meta, Self.versionKey, withUnsafeBytes(of: Self.version.littleEndian) { Data($0) })
        for entity in entities.values {
            var writer = BinaryWriter()
            writer.varint(UInt64(entity.number))
            for list in [entity.attributes, entity.toOne, entity.toMany] {
                writer.varint(UInt64(list.count))
                for name in list { writer.string(name) }
            }
            try txn.put(Self.schema, Data(entity.name.utf8), writer.buffer)
        }
    }

    /// The version a store records (1 when it records none).
    /// - Throws: ``StoreError`` `corrupt` when the record is not 4 bytes.
    static func recordedVersion(_ txn: LMDBTransaction, url: URL) throws -> UInt32 {
        guard let data = try txn.get(LMDBLayout.meta, versionKey) else { return 1 }
        // 4 bytes; 8 in a store whose values carry checksums (of a version this build does not read, when they are not checked).
        guard data.count == 4 || (data.count == 8 && !txn.environment.checksummed) else {
            throw StoreError(.corrupt, "the store's format version is \(data.count) bytes, not 4", url: url)
        }
        return data.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
    }

    /// Turns on the environment's checksums when its store is of version 3, before any other
    /// value is read: the version record of such a store is 8 bytes, the version and its checksum.
    static func adoptChecksums(_ environment: LMDBEnvironment, url: URL) throws {
        try environment.read { txn in
            try txn.withStoredValue(LMDBLayout.meta, versionKey) { stored in
                // Checked with the version itself (``checkVersion(_:url:)``): a damaged record is refused then.
                guard let stored, stored.count == 8, stored.loadUnaligned(as: UInt32.self).littleEndian == 3 else { return }
                environment.checksummed = true
            }
        }
    }

    /// Refuses a store written in a version of the format this build does not read, naming them.
    static func checkVersion(_ txn: LMDBTransaction, url: URL) throws {
        let recorded = try recordedVersion(txn, url: url)
        guard readable.contains(recorded) else {
            let how = recorded < version
                ? "it was written by an earlier ObjectStore: export it to JSON with that build and import it with this one"
                : "it was written by a later ObjectStore"
            throw StoreError(.unsupportedFormat, "the store's LMDB row format is version \(recorded); this build reads versions \(readable.sorted().map(String.init).joined(separator: " and ")) (\(how))", url: url)
        }
    }

    /// An entity's stored to-many relationships, in model order.
    static func toMany(of entity: EntityDescription) -> [String] {
        entity.storedRelationships.filter(\.isToMany).map(\.name)
    }

    /// The format of `entity`'s rows; `url` is made only for the error (a hot path: once per row read).
    func format(of entity: String, url: @autoclosure () -> URL) throws -> LMDBEntityFormat {
        guard let format = entities[entity] else { throw StoreError(.invalidFetch, "no entity named \(entity)", url: url()) }
        return format
    }

    // MARK: Rows

    /// A row's bytes: the version, the attribute values, the to-one keys, then each
    /// to-many's count and keys, in the entity's recorded order.
    func encode(_ row: StoredRow, of format: LMDBEntityFormat) throws -> [UInt8] {
        var writer = BinaryWriter()
        writer.signed(row.version)
        for name in format.attributes { writer.value(row.attributes[name]) }
        for name in format.toOne {
            let keys = row.relationships[name] ?? []
            guard keys.count <= 1 else { throw StoreError(.invalidChange, "\(format.name).\(name) is a to-one but holds \(keys.count) objects") }
            try key(keys.first, into: &writer)
        }
        for name in format.toMany {
            let keys = row.relationships[name] ?? []
            writer.varint(UInt64(keys.count))
            for key in keys { try self.key(key, into: &writer) }
        }
        // Order keys, only for the lists that keep some: the list's number in the format, then one key per member.
        let ordered = format.toMany.indices.filter { i in
            row.orderKeys[format.toMany[i]].map { $0.count == (row.relationships[format.toMany[i]] ?? []).count } ?? false
        }
        if !ordered.isEmpty {
            writer.varint(UInt64(ordered.count))
            for i in ordered {
                writer.varint(UInt64(i))
                for number in row.orderKeys[format.toMany[i]]! { writer.signed(number) }
            }
        }
        return writer.buffer
    }

    /// Reads the order keys that may follow a row's to-many lists (`counts`: each list's length).
    private func orderKeys(_ reader: inout BinaryReader, format: LMDBEntityFormat, counts: [Int]) throws -> [String: [Int64]] {
        guard reader.offset < reader.end else { return [:] }
        var found: [String: [Int64]] = [:]
        for _ in 0..<(try reader.count()) {
            let at = reader.offset
            let i = try reader.varint()
            guard i < UInt64(format.toMany.count), found[format.toMany[Int(i)]] == nil else {
                throw reader.corrupt("order keys of no to-many list (\(i))", at: at)
            }
            found[format.toMany[Int(i)]] = try (0..<counts[Int(i)]).map { _ in try reader.signed() }
        }
        return found
    }

    /// The row of `bytes`.
    func decode(_ bytes: UnsafeRawBufferPointer, of format: LMDBEntityFormat, file: String) throws -> StoredRow {
        try read(bytes, file: file) { reader in
            var row = StoredRow(version: try reader.signed(), attributes: [:], relationships: [:])
            for name in format.attributes { if let value = try reader.value() { row.attributes[name] = value } }
            for name in format.toOne { if let key = try key(&reader) { row.relationships[name] = [key] } }
            var counts: [Int] = []
            for name in format.toMany {
                let keys = try (0..<(try reader.count())).map { _ in try member(&reader) }
                if !keys.isEmpty { row.relationships[name] = keys }
                counts.append(keys.count)
            }
            row.orderKeys = try orderKeys(&reader, format: format, counts: counts)
            return row
        }
    }

    /// The members of the to-many list at `index` of the row of `bytes`, with the order keys it
    /// keeps (nil: numbered 1, 2, 3…): every other value stepped over and checked, none built.
    func list(_ bytes: UnsafeRawBufferPointer, at index: Int, of format: LMDBEntityFormat, file: String) throws -> (keys: [ObjectKey], orderKeys: [Int64]?) {
        try read(bytes, file: file) { reader in
            _ = try reader.signed()
            for _ in format.attributes { try reader.skipValue() }
            for _ in format.toOne { _ = try key(&reader) }
            var counts: [Int] = [], keys: [ObjectKey] = []
            for i in format.toMany.indices {
                let count = try reader.count()
                if i == index { keys.reserveCapacity(count) }
                for _ in 0..<count {
                    let member = try member(&reader)
                    if i == index { keys.append(member) }
                }
                counts.append(count)
            }
            return (keys, try orderKeys(&reader, format: format, counts: counts)[format.toMany[index]])
        }
    }

    /// Appends the row of `bytes` to `batch` (an entity of this format); `exists` says
    /// whether a to-one's target is there (a to-one whose target is gone is left out, as
    /// the record forms leave it out).
    func decode(_ bytes: UnsafeRawBufferPointer, primaryKey: Int64, into batch: inout RecordBatch, of format: LMDBEntityFormat,
                file: String, exists: (ObjectKey) throws -> Bool) throws {
        try read(bytes, file: file) { reader in
            let row = batch.appendRow(primaryKey: primaryKey, version: try reader.signed())
            for slot in format.attributeSlots { batch[row, attribute: slot] = try reader.value() }
            for slot in format.toOneSlots {
                if let target = try key(&reader), try exists(target) { batch[row, toOne: slot] = target }
            }
            var counts: [Int] = []
            for _ in format.toMany {
                let count = try reader.count()
                for _ in 0..<count { _ = try member(&reader) }
                counts.append(count)
            }
            _ = try orderKeys(&reader, format: format, counts: counts)
        }
    }

    /// The bytes of a batch's row, with the to-many lists the batch carries (others empty).
    func encode(row: Int, of batch: RecordBatch, format: LMDBEntityFormat, into writer: inout BinaryWriter) throws {
        writer.signed(Swift.max(1, batch.versions[row]))
        for slot in format.attributeSlots { writer.value(batch[row, attribute: slot]) }
        for slot in format.toOneSlots { try key(batch[row, toOne: slot], into: &writer) }
        guard !batch.toMany.isEmpty else {
            for _ in format.toMany { writer.varint(0) }
            return
        }
        // The lists the batch carries, then the order keys of those not numbered 1, 2, 3…, as `encode(_:of:)` writes them.
        let lists = format.toMany.map { batch.toMany[$0]?[row] }
        for list in lists {
            writer.varint(UInt64(list?.keys.count ?? 0))
            for member in list?.keys ?? [] { try key(member, into: &writer) }
        }
        let ordered = lists.indices.filter { lists[$0].map { !OrderKeys.arePositions($0.orderKeys) } ?? false }
        guard !ordered.isEmpty else { return }
        writer.varint(UInt64(ordered.count))
        for i in ordered {
            writer.varint(UInt64(i))
            for number in lists[i]!.orderKeys { writer.signed(number) }
        }
    }

    private func read<T>(_ bytes: UnsafeRawBufferPointer, file: String, _ body: (inout BinaryReader) throws -> T) throws -> T {
        guard !bytes.isEmpty else { throw StoreError(.corrupt, "an empty row", url: URL(filePath: file)) }
        var reader = BinaryReader(bytes: Array(bytes), file: file)
        let result = try body(&reader)
        guard reader.offset == reader.end else { throw reader.corrupt("\(reader.end - reader.offset) unexpected bytes after a row", at: reader.offset) }
        return result
    }

    /// A key: its entity's number then its primary key; no object is the number 0.
    private func key(_ key: ObjectKey?, into writer: inout BinaryWriter) throws {
        guard let key else { writer.varint(0); return }
        guard let entity = entities[key.entity] else { throw StoreError(.invalidChange, "no entity named \(key.entity)") }
        writer.varint(UInt64(entity.number))
        writer.signed(key.primaryKey)
    }

    private func key(_ reader: inout BinaryReader) throws -> ObjectKey? {
        let at = reader.offset
        let number = try reader.varint()
        if number == 0 { return nil }
        guard number <= UInt64(names.count) else { throw reader.corrupt("no entity has the number \(number)", at: at) }
        return ObjectKey(names[Int(number) - 1], try reader.signed())
    }

    /// A key of a to-many list, where no object is damage.
    private func member(_ reader: inout BinaryReader) throws -> ObjectKey {
        let at = reader.offset
        guard let key = try key(&reader) else { throw reader.corrupt("a to-many relationship holds no object", at: at) }
        return key
    }
}

/// One entity's number and the order its values are written in.
struct LMDBEntityFormat: Sendable {
    let name: String
    let number: Int
    /// Attribute names, in the order rows hold their values.
    let attributes: [String]
    let toOne: [String]
    let toMany: [String]
    /// For each value a row holds, its slot in the entity's layout.
    let attributeSlots: [Int]
    let toOneSlots: [Int]

    init(name: String, number: Int, attributes: [String], toOne: [String], toMany: [String], layout: EntityLayout) {
        self.name = name
        self.number = number
        self.attributes = attributes
        self.toOne = toOne
        self.toMany = toMany
        attributeSlots = attributes.map { layout.attributeSlot($0) ?? -1 }
        toOneSlots = toOne.map { layout.toOneSlot($0) ?? -1 }
    }

    /// Checks that the store records exactly the entity's stored properties.
    func check(against entity: EntityDescription, toMany modelToMany: [String], url: URL) throws {
        let lists = [("attribute", attributes, entity.layout.attributes.map(\.name)),
                     ("to-one relationship", toOne, entity.layout.toOne.map(\.name)),
                     ("to-many relationship", toMany, modelToMany)]
        for (kind, stored, modelled) in lists {
            if let extra = stored.first(where: { !modelled.contains($0) }) {
                throw StoreError(.incompatibleModel, "the store's \(name) has a \(kind) \(extra) that the model does not", url: url)
            }
            if let missing = modelled.first(where: { !stored.contains($0) }) {
                throw StoreError(.incompatibleModel, "the store's \(name) has no \(kind) \(missing), which the model has", url: url)
            }
            if Set(stored).count != stored.count {
                throw StoreError(.corrupt, "the schema record of \(name) names a \(kind) twice", url: url)
            }
        }
    }
}
