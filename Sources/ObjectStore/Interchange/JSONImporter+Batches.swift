import Foundation
import ObjectModel
import Synchronization

/// The import of a document of new objects (no upsert, no links to the store's objects) read
/// straight into batches, one per entity: no tree of the document, no dictionary per object.
///
/// It gives the objects, keys, values and relationships the record path (``Importer``) gives the
/// same document, and checks what it checks, but says nothing of what is wrong: at the first thing
/// it does not take (an error of any kind) it declines, and the record path reads the document
/// and says what and where. Nothing is written before the whole document is read and checked.
struct BatchImporter {
    let store: any PersistentStore
    let options: JSONInterchange.ImportOptions
    var model: ManagedObjectModel { store.model }

    /// The document is left to the record path, which reports what is wrong with it.
    struct Declined: Error {}

    /// The objects of one entity (one member of the top level), in document order.
    struct Part {
        let entity: EntityDescription
        /// The entity's name as the document spells it (parts are in the order of those bytes, as
        /// the record path takes them).
        var name = ""
        var batch: RecordBatch
        var ids: [String] = []
        /// Per stored relationship (in `entity.storedRelationships` order), the lists of its objects.
        var lists: [Lists]
        /// The global number of the part's first object (parts in entity-name order, objects in document order).
        var first = 0

        init(entity: EntityDescription) {
            self.entity = entity
            batch = RecordBatch(entity: entity)
            lists = Array(repeating: Lists(), count: entity.storedRelationships.count)
        }
    }

    /// One relationship's lists, object after object: object `r`'s are `members[starts[r] ..< starts[r + 1]]`.
    struct Lists {
        var starts: [Int32] = [0]
        /// Whether the document gives the relationship of the object (else it is derived from the inverse).
        var given: [Bool] = []
        /// `_id`s as the document names them, until they are resolved to object numbers.
        var names: [String] = []
        var members: [Int32] = []

        func range(_ row: Int) -> Range<Int> { Int(starts[row])..<Int(starts[row + 1]) }
    }

    var parts: [Part] = []

    /// Reads and checks the document; the objects are ready to write.
    /// - Throws: ``Declined``, or what the store says when keys are allocated.
    mutating func read(_ data: Data) throws {
        var scanner = JSONScanner(bytes: Array(data))
        do {
            try readDocument(&scanner)
        } catch is JSONValue.SyntaxError {
            throw Declined()
        }
        parts.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        var byID: [String: Int32] = [:]
        var owner: [(part: Int32, row: Int32)] = []
        for p in parts.indices {
            parts[p].first = owner.count
            byID.reserveCapacity(owner.count + parts[p].ids.count)
            for (row, id) in parts[p].ids.enumerated() {
                guard byID.updateValue(Int32(owner.count), forKey: id) == nil else { throw Declined() }
                owner.append((Int32(p), Int32(row)))
            }
        }
        try resolve(byID, owner)
        try deriveInverses(owner)
        try validate()
        try assignKeys()
    }

    /// Reads the top level, each entity's array on a core of its own: the arrays' bounds are found
    /// first (``skipValue(_:)``), then each is read by a scanner of its own.
    private mutating func readDocument(_ scanner: inout JSONScanner) throws {
        scanner.skipSpace()
        try Self.expect("{", &scanner)
        var seen: Set<String> = []
        var arrays: [(entity: EntityDescription, name: String, bounds: Range<Int>)] = []
        if try !closes("}", &scanner) {
            repeat {
                let name = try key(&scanner)
                guard seen.insert(name).inserted, let entity = model.entity(named: name), !entity.isAbstract else { throw Declined() }
                scanner.skipSpace()
                let start = scanner.index
                try Self.skipValue(&scanner)
                arrays.append((entity, name, start..<scanner.index))
            } while try next("}", &scanner)
        }
        scanner.skipSpace()
        guard scanner.index == scanner.bytes.count else { throw Declined() }
        // Each part in its place, read on several threads.
        let read = Mutex<[Result<Part, any Error>?]>(Array(repeating: nil, count: arrays.count))
        let (whole, reader, found) = (scanner, self, arrays)
        DispatchQueue.concurrentPerform(iterations: found.count) { i in
            var part = Part(entity: found[i].entity)
            part.name = found[i].name
            var scanner = whole
            scanner.index = found[i].bounds.lowerBound
            do {
                try reader.readObjects(into: &part, &scanner)
                guard scanner.index == found[i].bounds.upperBound else { throw Declined() }
                read.withLock { $0[i] = .success(part) }
            } catch {
                read.withLock { $0[i] = .failure(error) }
            }
        }
        parts = try read.withLock { results in try results.map { try $0!.get() } }
    }

    /// Steps over one value without reading it: strings by their quotes and escapes, arrays and
    /// objects by their brackets. Checks nothing else (the value is read afterwards, and must end
    /// where this ended).
    private static func skipValue(_ scanner: inout JSONScanner) throws {
        try scanner.bytes.withUnsafeBufferPointer { bytes in
            var i = scanner.index, depth = 0
            repeat {
                guard i < bytes.count else { throw Declined() }
                switch bytes[i] {
                case UInt8(ascii: "\""):
                    i += 1
                    while i < bytes.count, bytes[i] != UInt8(ascii: "\"") { i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1 }
                    i += 1
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    depth += 1
                    i += 1
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    depth -= 1
                    guard depth >= 0 else { throw Declined() }
                    i += 1
                default:
                    // Space, separators, numbers and words hold no bracket.
                    i += 1
                }
            } while depth > 0
            scanner.index = min(i, bytes.count)
        }
    }

    /// What a member name of an object is.
    private enum Member {
        case id
        case attribute(slot: Int)
        case relationship(index: Int, toMany: Bool)
    }

    /// An entity's member names, as bytes, and what each is.
    private struct Members {
        var names: [[UInt8]] = []
        var kinds: [Member] = []

        init(_ entity: EntityDescription) {
            append("_id", .id)
            for (slot, attribute) in entity.layout.attributes.enumerated() { append(attribute.name, .attribute(slot: slot)) }
            for (index, relationship) in entity.storedRelationships.enumerated() { append(relationship.name, .relationship(index: index, toMany: relationship.isToMany)) }
        }

        private mutating func append(_ name: String, _ kind: Member) {
            names.append(Array(name.utf8))
            kinds.append(kind)
        }

        /// The member the key at the scanner names, and its `:` read; `guess` is where the search
        /// starts (objects of an entity mostly list their members in one order) and becomes the
        /// next member's. Nil for a name the entity has no stored property by.
        func read(_ scanner: inout JSONScanner, guess: inout Int) throws -> Member? {
            scanner.skipSpace()
            guard scanner.index < scanner.bytes.count, scanner.bytes[scanner.index] == UInt8(ascii: "\"") else { throw Declined() }
            let start = scanner.index + 1
            var end = start
            while end < scanner.bytes.count, scanner.bytes[end] != UInt8(ascii: "\""), scanner.bytes[end] != UInt8(ascii: "\\") { end += 1 }
            var found: Int?
            if end < scanner.bytes.count, scanner.bytes[end] == UInt8(ascii: "\"") {
                // A name without escapes: its bytes are compared with the names'.
                found = scanner.bytes.withUnsafeBufferPointer { bytes in
                    let key = UnsafeBufferPointer(rebasing: bytes[start..<end])
                    for step in 0..<names.count {
                        let k = (guess + step) % names.count
                        if names[k].count == key.count, names[k].withUnsafeBufferPointer({ $0.elementsEqual(key) }) { return k }
                    }
                    return nil
                }
                scanner.index = end + 1
            } else {
                let key = Array(try scanner.string().utf8)
                found = names.firstIndex(of: key)
            }
            try BatchImporter.expect(":", &scanner)
            guard let found else { return nil }
            guess = found + 1
            return kinds[found]
        }
    }

    private func readObjects(into part: inout Part, _ scanner: inout JSONScanner) throws {
        let entity = part.entity, layout = entity.layout
        let members = Members(entity)
        let width = layout.attributes.count
        let defaults = layout.attributes.map(\.defaultValue)
        let failure = { (_: String) in StoreError(.invalidInput, "") }
        var givenAttribute = [Bool](repeating: false, count: width)
        var givenRelationship = [Bool](repeating: false, count: part.lists.count)
        try Self.expect("[", &scanner)
        if try closes("]", &scanner) { return }
        repeat {
            try Self.expect("{", &scanner)
            let row = part.batch.appendRow(primaryKey: 0)
            for slot in 0..<width { givenAttribute[slot] = false }
            for index in givenRelationship.indices { givenRelationship[index] = false }
            var id: String?
            var guess = 0
            if try !closes("}", &scanner) {
                repeat {
                    guard let member = try members.read(&scanner, guess: &guess) else { throw Declined() }
                    scanner.skipSpace()
                    switch member {
                    case .id:
                        guard id == nil, scanner.index < scanner.bytes.count, scanner.bytes[scanner.index] == UInt8(ascii: "\""),
                              case let text = try scanner.string(), !text.isEmpty else { throw Declined() }
                        id = text
                    case .attribute(let slot):
                        guard !givenAttribute[slot] else { throw Declined() }
                        givenAttribute[slot] = true
                        let raw = try leaf(&scanner)
                        do {
                            part.batch[row, attribute: slot] = try Importer.value(raw, for: layout.attributes[slot], place: "", fail: failure)
                        } catch {
                            throw Declined()
                        }
                    case .relationship(let index, let toMany):
                        guard !givenRelationship[index] else { throw Declined() }
                        givenRelationship[index] = true
                        if toMany {
                            try Self.expect("[", &scanner)
                            if try !closes("]", &scanner) {
                                repeat {
                                    guard case .string(let name) = try leaf(&scanner) else { throw Declined() }
                                    part.lists[index].names.append(name)
                                } while try next("]", &scanner)
                            }
                        } else {
                            switch try leaf(&scanner) {
                            case .string(let name): part.lists[index].names.append(name)
                            case .null: break
                            default: throw Declined()
                            }
                        }
                    }
                } while try next("}", &scanner)
            }
            guard let id else { throw Declined() }
            part.ids.append(id)
            for slot in 0..<width where !givenAttribute[slot] { part.batch[row, attribute: slot] = defaults[slot] }
            for index in givenRelationship.indices {
                part.lists[index].given.append(givenRelationship[index])
                part.lists[index].starts.append(Int32(part.lists[index].names.count))
            }
        } while try next("]", &scanner)
    }

    /// A value that is no array and no object (those are no attribute's and no `_id`'s).
    private func leaf(_ scanner: inout JSONScanner) throws -> JSONValue {
        scanner.skipSpace()
        guard scanner.index < scanner.bytes.count else { throw Declined() }
        switch scanner.bytes[scanner.index] {
        case UInt8(ascii: "["), UInt8(ascii: "{"): throw Declined()
        case UInt8(ascii: "\""): return .string(try scanner.string())
        default: return try scanner.value()
        }
    }

    private func key(_ scanner: inout JSONScanner) throws -> String {
        scanner.skipSpace()
        guard scanner.index < scanner.bytes.count, scanner.bytes[scanner.index] == UInt8(ascii: "\"") else { throw Declined() }
        let key = try scanner.string()
        try Self.expect(":", &scanner)
        return key
    }

    private static func expect(_ byte: Unicode.Scalar, _ scanner: inout JSONScanner) throws {
        scanner.skipSpace()
        guard scanner.index < scanner.bytes.count, scanner.bytes[scanner.index] == UInt8(ascii: byte) else { throw Declined() }
        scanner.index += 1
    }

    /// Whether the next byte closes the object or array just opened (an empty one).
    private func closes(_ byte: Unicode.Scalar, _ scanner: inout JSONScanner) throws -> Bool {
        scanner.skipSpace()
        guard scanner.index < scanner.bytes.count, scanner.bytes[scanner.index] == UInt8(ascii: byte) else { return false }
        scanner.index += 1
        return true
    }

    /// After an item: true at a comma (another follows), false at `close`.
    private func next(_ close: Unicode.Scalar, _ scanner: inout JSONScanner) throws -> Bool {
        scanner.skipSpace()
        guard scanner.index < scanner.bytes.count else { throw Declined() }
        let byte = scanner.bytes[scanner.index]
        scanner.index += 1
        if byte == UInt8(ascii: ",") { return true }
        guard byte == UInt8(ascii: close) else { throw Declined() }
        return false
    }

    /// The `_id`s the relationships name, as object numbers: each of the document, of the
    /// relationship's destination, and listed once.
    private mutating func resolve(_ byID: [String: Int32], _ owner: [(part: Int32, row: Int32)]) throws {
        for p in parts.indices {
            for (index, relationship) in parts[p].entity.storedRelationships.enumerated() {
                var lists = parts[p].lists[index]
                lists.members = try lists.names.map { name in
                    guard let number = byID[name], parts[Int(owner[Int(number)].part)].entity.isKind(of: relationship.destination) else { throw Declined() }
                    return number
                }
                lists.names = []
                for row in 0..<lists.given.count where !Self.areDistinct(lists.members[lists.range(row)]) { throw Declined() }
                parts[p].lists[index] = lists
            }
        }
    }

    /// Completes each side the document leaves out from the other side's lists, as the record path
    /// does: an object's list is what the document gives, then the objects that name it through the
    /// inverse (in document order); a side given must list every object that names it.
    private mutating func deriveInverses(_ owner: [(part: Int32, row: Int32)]) throws {
        // Per part and relationship: (row named, number of the object naming it), in naming order.
        var naming: [[[(row: Int32, by: Int32)]]] = parts.map { Array(repeating: [], count: $0.lists.count) }
        for part in parts {
            for (index, relationship) in part.entity.storedRelationships.enumerated() {
                guard let inverse = relationship.inverse else { continue }
                let lists = part.lists[index]
                for row in 0..<lists.given.count where lists.given[row] {
                    for member in lists.members[lists.range(row)] {
                        let (q, named) = owner[Int(member)]
                        guard let i = parts[Int(q)].entity.storedRelationships.firstIndex(where: { $0.name == inverse }) else { continue }
                        naming[Int(q)][i].append((named, Int32(part.first + row)))
                    }
                }
            }
        }
        for p in parts.indices {
            for (index, relationship) in parts[p].entity.storedRelationships.enumerated() where !naming[p][index].isEmpty {
                // Grouped by the object named, each group in document order.
                let pairs = naming[p][index].sorted { ($0.row, $0.by) < ($1.row, $1.by) }
                let lists = parts[p].lists[index]
                var merged = Lists()
                merged.given = lists.given
                var k = 0
                for row in 0..<lists.given.count {
                    let given = lists.members[lists.range(row)]
                    merged.members.append(contentsOf: given)
                    let first = k
                    while k < pairs.count, pairs[k].row == row { k += 1 }
                    let namers = pairs[first..<k].lazy.map(\.by)
                    if lists.given[row] {
                        // A side the document gives lists every object that names it.
                        let listed = given.count > 16 ? Set(given) : nil
                        guard namers.allSatisfy({ listed?.contains($0) ?? given.contains($0) }) else { throw Declined() }
                    } else {
                        merged.members.append(contentsOf: namers)
                    }
                    merged.starts.append(Int32(merged.members.count))
                    // A to-one names one object.
                    if !relationship.isToMany && merged.range(row).count > 1 { throw Declined() }
                }
                parts[p].lists[index] = merged
            }
        }
    }

    /// Whether no member is listed twice.
    private static func areDistinct(_ members: ArraySlice<Int32>) -> Bool {
        guard members.count > 1 else { return true }
        if members.count <= 8 {
            for i in members.indices where members[(i + 1)...].contains(members[i]) { return false }
            return true
        }
        return Set(members).count == members.count
    }

    /// Keeps the keys of `Entity/pk` `_id`s where a whole hierarchy has them free, else allocates
    /// them (``Importer/newKeys(_:store:)``), and sets the to-one relationships.
    private mutating func assignKeys() throws {
        var objects: [(entity: EntityDescription, id: String)] = []
        for part in parts { for id in part.ids { objects.append((part.entity, id)) } }
        let keys = try Importer.newKeys(objects, store: store)
        for p in parts.indices {
            let first = parts[p].first
            parts[p].batch.setPrimaryKeys(keys[first..<first + parts[p].ids.count].map(\.primaryKey))
            let layout = parts[p].entity.layout
            for (index, relationship) in parts[p].entity.storedRelationships.enumerated() where !relationship.isToMany {
                let slot = layout.toOneSlot(relationship.name)!
                let lists = parts[p].lists[index]
                for row in 0..<lists.given.count {
                    if let member = lists.members[lists.range(row)].first { parts[p].batch[row, toOne: slot] = keys[Int(member)] }
                }
            }
        }
        self.keys = keys
    }

    /// Every object's key, by object number.
    private(set) var keys: [ObjectKey] = []

    /// Every rule of every object: the document is declined when one is broken. Attributes that
    /// are optional and have no rules have nothing to break but their type, which reading checked.
    private func validate() throws {
        for part in parts {
            let attributes = part.entity.layout.attributes.enumerated().filter { !$1.isOptional || $1.validation != ValidationRules() }
            let relationships = part.entity.storedRelationships.enumerated().filter { _, relationship in
                !relationship.isOptional || (relationship.isToMany && (relationship.minCount > 0 || relationship.maxCount > 0))
            }
            guard !attributes.isEmpty || !relationships.isEmpty else { continue }
            for row in 0..<part.ids.count {
                for (slot, attribute) in attributes where !ObjectValidator.check(attribute, part.batch[row, attribute: slot]).isEmpty { throw Declined() }
                for (index, relationship) in relationships where !ObjectValidator.check(relationship, count: part.lists[index].range(row).count).isEmpty {
                    throw Declined()
                }
            }
        }
    }

    /// The objects as records, each with every to-many relationship: what the record path saves.
    func records() -> [ObjectRecord] {
        var records: [ObjectRecord] = []
        records.reserveCapacity(keys.count)
        for part in parts {
            let toMany = part.entity.storedRelationships.enumerated().filter { $1.isToMany }
            for row in 0..<part.ids.count {
                var record = part.batch.record(at: row)
                for (index, relationship) in toMany {
                    record.toMany[relationship.name] = part.lists[index].members[part.lists[index].range(row)].map { keys[Int($0)] }
                }
                records.append(record)
            }
        }
        return records
    }

    /// Writes the objects: in one save, as the record path does; or, into a new store that keeps
    /// relationships as foreign keys (``JSONInterchange/ImportOptions/fillsNewStore``), as a
    /// conversion writes them: each entity's batch without checks (everything was checked), then
    /// the to-many sides no foreign key holds.
    func write() throws {
        guard options.fillsNewStore, let foreignKeys = store as? any ForeignKeyRelationships,
              let written = toManyWrites(sharedManyToMany: foreignKeys.sharesManyToManyTables) else {
            return try store.bulkInsert(records())
        }
        for part in parts where !part.ids.isEmpty {
            try options.checkCancelled()
            try store.bulkInsert(part.batch, checkingReferences: false)
        }
        // With one join table for both sides of a many-to-many, one side is written and the store
        // completes the other; with a table per side, each is written.
        let completes = foreignKeys.sharesManyToManyTables
        var updates: [ObjectUpdate] = []
        func flush() throws {
            guard !updates.isEmpty else { return }
            try options.checkCancelled()
            try store.save(ChangeSet(updated: updates, keepsVersions: true, checksReferences: false, completesInverses: completes))
            updates.removeAll(keepingCapacity: true)
        }
        for (p, part) in parts.enumerated() where !written[p].isEmpty {
            for row in 0..<part.ids.count {
                var update = ObjectUpdate(key: keys[part.first + row])
                for index in written[p] {
                    let range = part.lists[index].range(row)
                    if !range.isEmpty { update.toMany[part.entity.storedRelationships[index].name] = part.lists[index].members[range].map { keys[Int($0)] } }
                }
                guard !update.toMany.isEmpty else { continue }
                updates.append(update)
                if updates.count >= 1_000 { try flush() }
            }
        }
        try flush()
    }

    /// Per part, the to-many relationships written after the objects, in a store that keeps a
    /// to-many whose inverse is a to-one as that to-one (``ForeignKeyRelationships``): an ordered
    /// one (its order), and a many-to-many (one side when both are one table). Nil when a
    /// relationship is of a shape the record path writes (no inverse, an ordered many-to-many, a
    /// many-to-many that is its own inverse).
    private func toManyWrites(sharedManyToMany: Bool) -> [[Int]]? {
        var written: [[Int]] = []
        for part in parts {
            var indexes: [Int] = []
            for (index, relationship) in part.entity.storedRelationships.enumerated() where relationship.isToMany {
                guard let name = relationship.inverse, let inverse = model.entity(named: relationship.destination)?.relationshipsByName[name] else { return nil }
                if !inverse.isToMany {
                    if relationship.isOrdered { indexes.append(index) }
                    continue
                }
                guard !relationship.isOrdered, !inverse.isOrdered else { return nil }
                let here = (relationship.destination, relationship.name), there = (inverse.destination, inverse.name)
                guard here != there else { return nil }
                if !sharedManyToMany || there < here { indexes.append(index) }
            }
            written.append(indexes)
        }
        return written
    }
}
