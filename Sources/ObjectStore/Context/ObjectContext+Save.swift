import Foundation
import ObjectModel

extension ObjectContext {
    /// Writes every change to the stores.
    ///
    /// In order: delete rules are applied to deleted objects (cascade deletes
    /// the related objects, nullify removes the deleted object from their
    /// inverse, deny refuses while a related object survives); every inserted
    /// and changed object is validated and every failure reported at once; then
    /// each store writes its change set atomically. An object changed in its
    /// store since this context read it makes the save fail with a conflict.
    ///
    /// - Throws: ``StoreError``: ``StoreError/Code/deleteDenied`` naming the
    ///   blocking object, ``StoreError/Code/validationFailed`` with every
    ///   ``ValidationFailure``, ``StoreError/Code/conflict`` naming the changed
    ///   object, or a store's failure. After a failure the context keeps its
    ///   changes, so they can be corrected and saved again.
    public func save() throws {
        guard hasChanges else { return }
        try processDeletes()
        let failures = try validateChanges()
        guard failures.isEmpty else {
            throw StoreError(.validationFailed, "\(failures.count) validation failure\(failures.count == 1 ? "" : "s")",
                             validationFailures: failures)
        }
        var changes: [UUID: ChangeSet] = [:]
        // Inserted objects that take part in no relationship go to their store in batches (values
        // by slot, see insertBatches); the others as records, relationships and all.
        for object in insertedOrder where !object.isDeletedFlag {
            if isBatchable(object) {
                if changes[object.objectID.storeIdentifier] == nil { changes[object.objectID.storeIdentifier] = ChangeSet() }
            } else {
                changes[object.objectID.storeIdentifier, default: ChangeSet()].inserted.append(try insertRecord(object))
            }
        }
        for id in updatedSet.sorted() {
            guard let object = registered[id], !object.isDeletedFlag, !object.isInsertedFlag else { continue }
            changes[id.storeIdentifier, default: ChangeSet()].updated.append(try update(object))
        }
        for id in deletedSet.sorted() {
            guard let object = registered[id], !object.isInsertedFlag else { continue }
            changes[id.storeIdentifier, default: ChangeSet()].deleted.append(ObjectDeletion(key: id.key, expectedVersion: object.version))
        }
        for (storeID, var changeSet) in changes.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
            changeSet.author = transactionAuthor
            guard let store = coordinator.store(withIdentifier: storeID) else {
                throw StoreError(.noStore, "no attached store has UUID \(storeID.uuidString)")
            }
            var position = 0
            try store.save(changeSet) { nextInsertBatch(for: storeID, from: &position) }
        }
        didSave()
    }

    /// The most objects one batch of a save carries.
    static let saveBatchSize = 1_024

    /// Whether an inserted object goes to its store in a batch: it sets no to-one and holds
    /// nothing in any to-many, so there is no relationship a batch would leave out.
    private func isBatchable(_ object: ManagedObject) -> Bool {
        object.state.toOne.isEmpty && object.state.toMany.values.allSatisfy(\.isEmpty)
    }

    /// The next batch of inserted objects of the store `storeID` that ``isBatchable(_:)``, from
    /// `position` in the insertion order on: consecutive ones of one entity, at most
    /// ``saveBatchSize``; nil when there are no more. Built as the store asks, so a save holds
    /// one batch at a time, not a copy of every new object.
    private func nextInsertBatch(for storeID: UUID, from position: inout Int) -> RecordBatch? {
        var batch: RecordBatch?
        while position < insertedOrder.count {
            let object = insertedOrder[position]
            guard object.objectID.storeIdentifier == storeID, !object.isDeletedFlag, isBatchable(object) else {
                position += 1
                continue
            }
            if let current = batch, current.entity !== object.entity || current.count >= Self.saveBatchSize { break }
            if batch == nil { batch = RecordBatch(entity: object.entity, capacity: Self.saveBatchSize) }
            let row = batch!.appendRow(primaryKey: object.objectID.primaryKey)
            for slot in 0..<object.entity.layout.attributes.count { batch![row, attribute: slot] = object.state.values[slot] }
            position += 1
        }
        return batch
    }

    /// The values of the object's stored attributes, by name.
    private func storedAttributes(_ object: ManagedObject) -> [String: Value] {
        var attributes: [String: Value] = [:]
        for (slot, attribute) in object.entity.layout.attributes.enumerated() {
            if let value = object.state.values[slot] { attributes[attribute.name] = value }
        }
        return attributes
    }

    private func insertRecord(_ object: ManagedObject) throws -> ObjectRecord {
        var record = ObjectRecord(key: object.objectID.key, attributes: storedAttributes(object))
        for relationship in object.entity.storedRelationships {
            if relationship.isToMany {
                record.toMany[relationship.name] = try toManyIDs(object, relationship).map(\.key)
            } else if let target = object.state.toOne[relationship.name] {
                record.toOne[relationship.name] = target.key
            }
        }
        return record
    }

    private func update(_ object: ManagedObject) throws -> ObjectUpdate {
        var update = ObjectUpdate(key: object.objectID.key, expectedVersion: object.version)
        for key in (object.changes?.keys ?? []).sorted() {
            if let attribute = object.entity.attributesByName[key] {
                if !attribute.isTransient { update.attributes[key] = .some(object.attributeValue(key)) }
            } else if let relationship = object.entity.relationshipsByName[key], !relationship.isTransient {
                if relationship.isToMany {
                    update.toMany[key] = try toManyIDs(object, relationship).map(\.key)
                } else {
                    update.toOne[key] = .some(object.state.toOne[key]?.key)
                }
            }
        }
        return update
    }

    private func didSave() {
        for object in insertedOrder where !object.isDeletedFlag { object.version = 1 }
        for id in updatedSet { if let object = registered[id], !object.isInsertedFlag { object.version += 1 } }
        for id in deletedSet {
            registered[id]?.context = nil
            registered[id] = nil
        }
        registered.forEach { object in
            object.isInsertedFlag = false
            object.changes = nil
        }
        insertedOrder = []
        updatedSet = []
        deletedSet = []
    }

    /// Validates every inserted and changed object that is not deleted.
    func validateChanges() throws -> [ValidationFailure] {
        var objects = insertedOrder.filter { !$0.isDeletedFlag }
        objects += updatedSet.sorted().compactMap { registered[$0] }.filter { !$0.isDeletedFlag && !$0.isInsertedFlag }
        var failures: [ValidationFailure] = []
        for object in objects { failures += try validate(object) }
        return failures
    }

    /// Checks every rule of the model on one object.
    public func validate(_ object: ManagedObject) throws -> [ValidationFailure] {
        try ObjectValidator.failures(entity: object.entity, id: object.objectID, value: { slot, _ in object.state.values[slot] }) { relationship in
            relationship.isToMany
                ? try toManyIDs(object, relationship).count
                : (object.state.toOne[relationship.name] == nil ? 0 : 1)
        }
    }
}

/// The validation rules, in one place: used by contexts at save and by tools that check whole stores.
public enum ObjectValidator {
    /// The rules an attribute value breaks, each with a message.
    public static func check(_ attribute: Attribute, _ value: Value?) -> [(ValidationRule, String)] {
        guard let value else {
            return attribute.isOptional ? [] : [(.required, "a value is required")]
        }
        guard attribute.type.accepts(value) else {
            return [(.type, "\(value.kindName) value \(value) is not a valid \(attribute.type.modelName)")]
        }
        var broken: [(ValidationRule, String)] = []
        let rules = attribute.validation
        if let min = rules.minValue, let order = ValueOrdering.compare(value, min), order < 0 {
            broken.append((.minValue, "\(value) is less than the minimum \(min)"))
        }
        if let max = rules.maxValue, let order = ValueOrdering.compare(value, max), order > 0 {
            broken.append((.maxValue, "\(value) is greater than the maximum \(max)"))
        }
        let length: Int? = switch value {
        // A string within its bounds is told so counting no further than they need; one outside is counted whole, for the message.
        case .string(let s) where rules.minLength != nil || rules.maxLength != nil:
            s.utf8.withContiguousStorageIfAvailable { isText($0, lengthFrom: rules.minLength, to: rules.maxLength, knownUTF8: true) } == true ? nil : characterCount(s)
        case .data(let d): d.count
        default: nil
        }
        if let length, let min = rules.minLength, length < min {
            broken.append((.minLength, "length \(length) is less than the minimum \(min)"))
        }
        if let length, let max = rules.maxLength, length > max {
            broken.append((.maxLength, "length \(length) is greater than the maximum \(max)"))
        }
        if let pattern = rules.pattern, case .string(let s) = value, !matchesWhole(s, pattern) {
            broken.append((.pattern, "\(String(reflecting: s)) does not match \(String(reflecting: pattern))"))
        }
        return broken
    }

    /// Whether some stored attribute of the entity has a rule a value of the right type can
    /// break (required, or a range, length or pattern): when none has, values the model's
    /// types already hold need not be checked again.
    public static func hasAttributeRules(_ entity: EntityDescription) -> Bool {
        entity.layout.attributes.contains { !$0.isOptional || $0.validation != ValidationRules() }
    }

    /// Whether some relationship of the entity has a rule a count can break (required, or a
    /// minimum or maximum count): when none has, its relationships need not be read to validate it.
    public static func hasRelationshipRules(_ entity: EntityDescription) -> Bool {
        entity.storedRelationships.contains(where: hasRule)
    }

    /// Whether a relationship has a rule a count can break (required, or a minimum or maximum count).
    public static func hasRule(_ relationship: Relationship) -> Bool {
        !relationship.isOptional || (relationship.isToMany && (relationship.minCount > 0 || relationship.maxCount > 0))
    }

    /// The rules a relationship holding `count` objects breaks, each with a message.
    public static func check(_ relationship: Relationship, count: Int) -> [(ValidationRule, String)] {
        if count == 0 {
            return relationship.isOptional ? [] : [(.required, relationship.isToMany ? "at least one object is required" : "an object is required")]
        }
        guard relationship.isToMany else { return [] }
        var broken: [(ValidationRule, String)] = []
        if relationship.minCount > 0 && count < relationship.minCount {
            broken.append((.minCount, "\(count) objects, fewer than the minimum \(relationship.minCount)"))
        }
        if relationship.maxCount > 0 && count > relationship.maxCount {
            broken.append((.maxCount, "\(count) objects, more than the maximum \(relationship.maxCount)"))
        }
        return broken
    }

    /// A string's length in characters (grapheme clusters), as length rules count it.
    private static func characterCount(_ s: String) -> Int {
        s.utf8.withContiguousStorageIfAvailable(characterCount(utf8:)) ?? s.count
    }

    /// The length in characters (grapheme clusters) of the text whose UTF-8 is `utf8`; text that
    /// is not valid UTF-8 is counted as Swift decodes it (each bad sequence one U+FFFD).
    package static func characterCount(utf8: UnsafeBufferPointer<UInt8>) -> Int {
        characterCount(utf8: utf8, upTo: .max) ?? String(decoding: utf8, as: UTF8.self).count
    }

    /// Whether `utf8` is text a reader takes (valid UTF-8) whose length in characters lies within
    /// `minLength...maxLength` (either may be nil). Characters are counted only as far as the bounds
    /// need: a text has no more characters than bytes and at least one when it has a byte, so a
    /// maximum its bytes keep needs no count, and a minimum is met once that many are counted.
    /// With `knownUTF8` (a Swift string's bytes), the bytes are not checked again.
    package static func isText(_ utf8: UnsafeBufferPointer<UInt8>, lengthFrom minLength: Int?, to maxLength: Int?, knownUTF8: Bool = false) -> Bool {
        let bytes = utf8.count
        if let minLength, bytes < minLength { return false }
        let cap: Int
        if let maxLength, bytes > maxLength {
            cap = maxLength + 1
        } else if let minLength, minLength > 1 {
            cap = minLength
        } else {
            return knownUTF8 || isUTF8(utf8)
        }
        guard let count = characterCount(utf8: utf8, upTo: cap, checkingRest: !knownUTF8) else { return false }
        return count >= (minLength ?? 0) && count <= (maxLength ?? .max)
    }

    /// The length in characters (grapheme clusters) of the text whose UTF-8 is `utf8`, counted no
    /// further than `cap` (a result of `cap` or more says "at least that many"), or nil when the
    /// bytes are not UTF-8, which is checked to the end whatever the cap.
    ///
    /// A scalar that no neighbour joins (``isCharacterAlone(_:)``: ASCII but CR, Latin, Greek,
    /// Cyrillic, Hebrew and Arabic letters, CJK, kana, Hangul syllables, pictographs…) after another
    /// such is a character of its own, counted without building a string. Around any other (marks,
    /// joiners, modifiers, CR LF) Swift counts a stretch, from the alone scalar before it to the next
    /// two alone scalars in a row (between which characters always break). The count so far never
    /// exceeds the whole text's (appending text may join a last character to what follows, never
    /// two earlier ones), so it may stop at the cap.
    /// Without `checkingRest` (bytes known to be UTF-8), nothing past the cap is read.
    package static func characterCount(utf8: UnsafeBufferPointer<UInt8>, upTo cap: Int, checkingRest: Bool = true) -> Int? {
        guard let base = UnsafeRawPointer(utf8.baseAddress) else { return 0 }
        var count = 0, i = 0
        let n = utf8.count
        // Where the stretch Swift counts began (nil outside one); where the last scalar began, and
        // whether it was alone.
        var stretch: Int?
        var previous = 0, previousAlone = false
        while i < n {
            if count >= cap { return !checkingRest || isUTF8(utf8, from: i) ? count : nil }
            // Outside a stretch, eight bytes at a time: ASCII but CR, a character each, up to the first other.
            if stretch == nil, i + 8 <= n {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                let crossed = word ^ 0x0D0D_0D0D_0D0D_0D0D
                // The lowest byte flagged is a CR or not ASCII (a borrow flags only bytes above a CR).
                let carriageReturn = (crossed &- 0x0101_0101_0101_0101) & ~crossed & 0x8080_8080_8080_8080
                let other = (word & 0x8080_8080_8080_8080) | carriageReturn
                let plain = other == 0 ? 8 : other.trailingZeroBitCount >> 3
                if plain > 0 {
                    count += plain
                    previous = i + plain - 1
                    previousAlone = true
                    i += plain
                    if plain == 8 { continue }
                }
            }
            let start = i
            guard let (scalar, length) = scalar(in: utf8, at: i) else { return nil }
            let alone = scalar < 0x80 ? scalar != 0x0D : isCharacterAlone(scalar)
            i += length
            if let begun = stretch {
                // Two alone scalars in a row: a break before this one ends the stretch.
                if alone && previousAlone && previous > begun {
                    count += String(decoding: UnsafeBufferPointer(rebasing: utf8[begun..<start]), as: UTF8.self).count + 1
                    stretch = nil
                }
            } else if alone {
                count += 1
            } else {
                // The stretch takes in the alone scalar before this one, which this one may join.
                stretch = previousAlone ? previous : start
                if previousAlone { count -= 1 }
            }
            previous = start
            previousAlone = alone
        }
        if let begun = stretch { count += String(decoding: UnsafeBufferPointer(rebasing: utf8[begun..<n]), as: UTF8.self).count }
        return count
    }

    /// The scalar whose UTF-8 begins at `i` and its length in bytes, or nil where the bytes are
    /// not UTF-8 (a stray or missing continuation byte, an overlong form, a surrogate, beyond U+10FFFF).
    @inline(__always)
    private static func scalar(in utf8: UnsafeBufferPointer<UInt8>, at i: Int) -> (UInt32, Int)? {
        let n = utf8.count, lead = utf8[i]
        if lead < 0x80 { return (UInt32(lead), 1) }
        if lead >= 0xC2 && lead <= 0xDF {
            guard i + 1 < n, utf8[i + 1] & 0xC0 == 0x80 else { return nil }
            return (UInt32(lead & 0x1F) << 6 | UInt32(utf8[i + 1] & 0x3F), 2)
        }
        if lead >= 0xE0 && lead <= 0xEF {
            // Neither overlong (E0 A0…) nor a surrogate (ED 80–9F…).
            guard i + 2 < n, utf8[i + 1] & 0xC0 == 0x80, utf8[i + 2] & 0xC0 == 0x80,
                  lead != 0xE0 || utf8[i + 1] >= 0xA0, lead != 0xED || utf8[i + 1] <= 0x9F else { return nil }
            return (UInt32(lead & 0x0F) << 12 | UInt32(utf8[i + 1] & 0x3F) << 6 | UInt32(utf8[i + 2] & 0x3F), 3)
        }
        if lead >= 0xF0 && lead <= 0xF4 {
            guard i + 3 < n, utf8[i + 1] & 0xC0 == 0x80, utf8[i + 2] & 0xC0 == 0x80, utf8[i + 3] & 0xC0 == 0x80,
                  lead != 0xF0 || utf8[i + 1] >= 0x90, lead != 0xF4 || utf8[i + 1] <= 0x8F else { return nil }
            return (UInt32(lead & 0x07) << 18 | UInt32(utf8[i + 1] & 0x3F) << 12 | UInt32(utf8[i + 2] & 0x3F) << 6 | UInt32(utf8[i + 3] & 0x3F), 4)
        }
        return nil
    }

    /// Whether `utf8` is UTF-8 (as a reader takes text).
    package static func isUTF8(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        isUTF8(utf8, from: 0)
    }

    /// Whether `utf8` is UTF-8 from byte `i` (a scalar's first) on, eight bytes at a time where
    /// they are ASCII and two-byte sequences (Latin, Greek, Cyrillic, Hebrew, Arabic letters),
    /// scalar by scalar up to and through a longer one.
    ///
    /// In a word, with each byte's top three bits moved to its bit 7: a two-byte lead (`110xxxxx`,
    /// not the overlong `C0`/`C1`, whose bits 1–4 are clear) must be followed by a continuation
    /// (`10xxxxxx`), and each continuation must follow a lead, the next word's first byte
    /// following this word's last.
    private static func isUTF8(_ utf8: UnsafeBufferPointer<UInt8>, from i: Int) -> Bool {
        guard let base = UnsafeRawPointer(utf8.baseAddress) else { return true }
        let high: UInt64 = 0x8080_8080_8080_8080
        var i = i
        // Whether the byte before `i` is a two-byte lead (whose continuation is at `i`).
        var pending = false
        let n = utf8.count
        while i + 8 <= n {
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let top = word & high
            if top == 0 {
                if pending { return false }
                i += 8
                continue
            }
            let six = (word << 1) & high, five = (word << 2) & high
            if top & six & five == 0 {
                let continuation = top & ~six, lead = top & six
                // Bit 7 set where bits 1–4 are not all clear (no carry crosses a byte: 0x1E + 0x7F < 0x100).
                let notOverlong = ((word & 0x1E1E_1E1E_1E1E_1E1E) &+ 0x7F7F_7F7F_7F7F_7F7F) & high
                guard lead & ~notOverlong == 0, continuation == (lead << 8) | (pending ? 0x80 : 0) else { return false }
                pending = lead >> 63 != 0
                i += 8
                continue
            }
            // A lead of three or four bytes: scalar by scalar from the first byte that is not ASCII
            // (or the lead whose continuation this word begins with) through the first such lead.
            var j = pending ? i - 1 : i + top.trailingZeroBitCount >> 3
            let longer = i + (top & six & five).trailingZeroBitCount >> 3
            pending = false
            while j <= longer {
                guard let (_, length) = scalar(in: utf8, at: j) else { return false }
                j += length
            }
            i = j
        }
        var j = pending ? i - 1 : i
        while j < n {
            guard let (_, length) = scalar(in: utf8, at: j) else { return false }
            j += length
        }
        return true
    }

    /// Ranges of scalars whose grapheme-break property joins them to no neighbour (not a mark,
    /// joiner, prepend, control, regional indicator or Hangul jamo; pictographs join only across a
    /// joiner, which is not alone): a text of them alone has as many characters as scalars. Checked against Swift's own count, scalar by
    /// scalar, by `CharacterCountTests`.
    package static let charactersAlone: [ClosedRange<UInt32>] = [
        0x80...0x2FF,        // Latin-1, Latin Extended-A and -B, IPA, spacing modifiers
        0x370...0x3FF,       // Greek and Coptic
        0x400...0x482, 0x48A...0x52F,   // Cyrillic (not its combining marks, U+0483–0489)
        0x5D0...0x5EA,       // Hebrew letters
        0x621...0x64A,       // Arabic letters
        0x1E00...0x1EFF,     // Latin Extended Additional (Vietnamese)
        0x2010...0x2027,     // dashes, quotation marks, bullets, ellipsis
        0x20A0...0x20C0,     // currency signs
        0x2600...0x27BF,     // miscellaneous symbols and dingbats (☀, ✅, ❤)
        0x3001...0x3029,     // CJK punctuation (not the tone marks U+302A–302F)
        0x3041...0x3096, 0x30A1...0x30FA,   // kana (not the sound marks U+3099–309A)
        0x4E00...0x9FFF,     // CJK ideographs
        0xAC00...0xD7A3,     // Hangul syllables
        0xFF01...0xFF60,     // fullwidth forms
        0x1F300...0x1F3FA, 0x1F400...0x1F64F,   // pictographs and faces (not the skin tones U+1F3FB–1F3FF)
        0x1F680...0x1F6FF, 0x1F900...0x1F9FF,   // transport, supplemental pictographs
    ]

    private static func isCharacterAlone(_ scalar: UInt32) -> Bool {
        if scalar < 0x300 { return scalar >= 0x80 }
        for range in charactersAlone where range.contains(scalar) { return true }
        return false
    }

    private static func matchesWhole(_ s: String, _ pattern: String) -> Bool {
        (try? WholeMatch.matches(s, pattern: pattern)) ?? false
    }
}

extension ObjectValidator {
    /// Every rule a stored record breaks: its attributes, and its relationships'
    /// counts as `count` gives them.
    public static func failures(of record: ObjectRecord, entity: EntityDescription, id: ObjectID, checkingAttributes: Bool = true,
                                count: (Relationship) throws -> Int) rethrows -> [ValidationFailure] {
        try failures(entity: entity, id: id, checkingAttributes: checkingAttributes, value: { record.attributes[$1.name] }, count: count)
    }

    /// Every rule an object breaks: its stored attributes, with `value` giving each one's value
    /// from its layout slot and the attribute, and its relationships' counts as `count` gives them.
    static func failures(entity: EntityDescription, id: ObjectID, checkingAttributes: Bool = true,
                         value: (Int, Attribute) -> Value?, count: (Relationship) throws -> Int) rethrows -> [ValidationFailure] {
        var failures: [ValidationFailure] = []
        for (slot, attribute) in entity.layout.attributes.enumerated() where checkingAttributes {
            for (rule, message) in check(attribute, value(slot, attribute)) {
                failures.append(ValidationFailure(objectID: id, property: attribute.name, rule: rule, message: message))
            }
        }
        // A relationship without a rule breaks none whatever its count: it is not counted.
        for relationship in entity.storedRelationships where hasRule(relationship) {
            for (rule, message) in check(relationship, count: try count(relationship)) {
                failures.append(ValidationFailure(objectID: id, property: relationship.name, rule: rule, message: message))
            }
        }
        return failures
    }

    /// Every rule a record of `store` breaks; to-many counts are read from the store, a to-one
    /// counts as the record holds it (whether its object is there is the inverse check's to say:
    /// `objectstore validate` reports a key whose object is gone once, as such).
    /// `checkingAttributes` false checks the relationships alone (for attributes checked before).
    public static func failures(of record: ObjectRecord, in store: any PersistentStore, checkingAttributes: Bool = true) throws -> [ValidationFailure] {
        guard let entity = store.model.entity(named: record.key.entity) else { return [] }
        return try failures(of: record, entity: entity, id: store.objectID(for: record.key), checkingAttributes: checkingAttributes) { relationship in
            relationship.isToMany
                ? try store.relatedKeys(of: record.key, relationship: relationship.name).count
                : (record.toOne[relationship.name] == nil ? 0 : 1)
        }
    }
}
