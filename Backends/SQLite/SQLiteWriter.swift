import Foundation
import ObjectModel
import ObjectStore

/// Applies one change set inside the caller's transaction; any error rolls it all back.
struct SQLiteWriter {
    let reader: SQLiteReader
    let storeID: UUID
    /// The external data files this save writes and makes obsolete.
    let files: ExternalFileLedger
    var connection: SQLiteConnection { reader.connection }
    var schema: SQLiteSchema { reader.schema }
    var model: ManagedObjectModel { reader.model }

    /// Applies a change set, completing the inverse side of every relationship it gives
    /// (see ``PersistentStore/save(_:)``). Most inverse sides need nothing: a to-many whose
    /// inverse is a to-one is read from that to-one's foreign key, and a many-to-many is one
    /// join table for both sides. What is written besides: the second foreign key of a
    /// one-to-one, foreign keys of members a to-many drops, and the order number of an
    /// object a to-one moves to the end of an ordered to-many.
    func apply(_ changes: ChangeSet, checkingReferences: Bool = true) throws {
        try checkVersions(changes)
        try applyWithVersionsChecked(changes, checkingReferences: checkingReferences)
    }

    /// ``apply(_:checkingReferences:)`` once versions are checked: a stale change is a conflict
    /// first, then the model's rules (ChangeSet+Rules); the database checks keys in use and targets.
    private func applyWithVersionsChecked(_ changes: ChangeSet, checkingReferences: Bool) throws {
        try changes.checkShape(model: model)
        try checkUniqueness(changes)
        let given = changes.givenRelationships
        for deletion in changes.deleted { try delete(deletion) }
        var lastKeys: [Int: Int64] = [:]
        for record in changes.inserted {
            try insert(record)
            let root = schema.entities[model.entity(named: record.key.entity)!.rootName]!.number
            lastKeys[root] = max(lastKeys[root] ?? 0, record.key.primaryKey)
        }
        // A bulk insert that does not check references completes nothing: its caller writes both sides.
        let completing = checkingReferences && changes.completesInverses
        if completing {
            for record in changes.inserted {
                for (name, target) in record.toOne.sorted(by: { $0.key < $1.key }) {
                    try appendOrder(record.key, name, target, given: given, inserted: true)
                    try completeToOne(record.key, name, target, given: given, inserted: true)
                }
            }
        }
        for update in changes.updated { try self.update(update, bumpingVersion: !changes.keepsVersions, given: given) }
        let lists = changes.inserted.map { ($0.key, $0.toMany, $0.orderKeys) } + changes.updated.map { ($0.key, $0.toMany, $0.orderKeys) }
        // The lists of to-manys without an inverse this change writes: a member is in one of them only.
        var hidden: [String: HiddenList] = [:]
        for (owner, toMany, _) in lists {
            for (name, members) in toMany {
                if case .hiddenForeignKey(let table, let column, _)? = schema.entities[owner.entity]?.toMany[name] {
                    hidden["\(table).\(column)#\(owner.primaryKey)"] = HiddenList(owner: owner, name: name, table: table, column: column, count: members.count)
                }
            }
        }
        for (owner, toMany, orderKeys) in lists {
            for (name, members) in toMany {
                try writeToMany(owner, name, members, orderKeys: orderKeys[name] ?? OrderKeys.positions(members.count), rewritten: hidden)
            }
        }
        for list in hidden.values {
            let held = try connection.statement("SELECT count(*) FROM \(quote(list.table)) WHERE \(quote(list.column)) = ?1")
                .rows([.integer(list.owner.primaryKey)]) { $0.int64(0) }.first ?? 0
            if held != Int64(list.count) {
                throw StoreError(.invalidChange, "\(list.owner).\(list.name): a member of this list is in another's \(list.name) too; "
                                 + "this store keeps a member of a to-many without an inverse in one list only (Core Data's layout)")
            }
        }
        for (root, last) in lastKeys { try moveKeyCounter(root, past: last) }
        if checkingReferences && changes.checksReferences { try verifyTargets(changes) }
    }

    /// Applies `changes` with the rows of the batches `nextBatch` hands out inserted as well (see
    /// ``PersistentStore/save(_:insertingBatches:)``). A row that sets no to-one relationship has
    /// nothing to complete or verify: it is bound slot by slot as its batch comes (a key in use
    /// fails on the table's primary key, as a record's does). Rows with a to-one, and batches laid
    /// out by another model, join the change set as records and are checked and completed as such.
    func apply(_ changes: ChangeSet, insertingBatches nextBatch: () throws -> RecordBatch?) throws {
        // A stale change is a conflict before anything else, batches included.
        try checkVersions(changes)
        var changes = changes
        while let batch = try nextBatch() {
            // A batch of another model, or carrying to-many lists, joins as records.
            guard model.entity(named: batch.entity.name) === batch.entity, batch.toMany.isEmpty else {
                changes.inserted += batch.records
                continue
            }
            let links = batch.layout.toOne.count
            let linked = links == 0 ? [] : (0..<batch.count).filter { row in (0..<links).contains { batch[row, toOne: $0] != nil } }
            changes.inserted += linked.map(batch.record(at:))
            try insert(batch, except: Set(linked))
        }
        try applyWithVersionsChecked(changes, checkingReferences: true)
    }

    /// ``ChangeSet/checkUniqueness(model:url:stored:holders:)`` against the rows: the holders of
    /// a constraint's values found with one SELECT, which its unique index answers.
    private func checkUniqueness(_ changes: ChangeSet) throws {
        guard model.entityDescriptions.contains(where: { !$0.uniquenessConstraints.isEmpty }) else { return }
        try changes.checkUniqueness(model: model, url: URL(filePath: connection.path), stored: { key, names in
            try reader.record(for: key).map { record in names.map { record.attributes[$0].map(UniqueField.value) ?? record.toOne[$0].map(UniqueField.object) } }
        }, holders: { constraint, values in
            guard let mapping = schema.entities[constraint.entity] else { return [] }
            var conditions: [String] = []
            for (i, name) in constraint.properties.enumerated() {
                guard let column = mapping.attributes[name] ?? mapping.toOne[name]?.key else { return [] }
                conditions.append("\(quote(column)) = ?\(i + 1)")
            }
            let sql = "SELECT Z_PK, Z_ENT FROM \(quote(mapping.table)) WHERE \(conditions.joined(separator: " AND ")) "
                + "AND Z_ENT IN (\(mapping.kinds.map(String.init).joined(separator: ", ")))"
            let arguments = zip(constraint.properties, values).map { name, field -> SQLValue in
                switch field {
                case .value(let value): SQLiteValues.sql(value, textDecimal: schema.isTextDecimal(constraint.entity, name))
                case .object(let key): .integer(key.primaryKey)
                }
            }
            return try connection.statement(sql).rows(arguments) { row in (row.int64(0), row.int64(1)) }.compactMap { pk, number in
                schema.byNumber[Int(number)].map { ObjectKey($0, pk) }
            }
        })
    }

    /// ``ChangeSet/checkVersions(storeID:version:)`` against the rows' `Z_OPT`.
    private func checkVersions(_ changes: ChangeSet) throws {
        try changes.checkVersions(storeID: storeID) { key in
            guard let mapping = schema.entities[key.entity] else { return nil }
            return try connection.statement("SELECT Z_OPT FROM \(quote(mapping.table)) WHERE Z_PK = ?1 AND Z_ENT = ?2")
                .rows([.integer(key.primaryKey), .integer(Int64(mapping.number))]) { $0.int64(0) }.first
        }
    }

    private func description(_ key: ObjectKey, _ verb: String) throws -> (EntityDescription, SQLiteSchema.Entity) {
        guard let description = model.entity(named: key.entity), let mapping = schema.entities[key.entity] else {
            throw StoreError(.invalidChange, "cannot \(verb) \(key): no entity named \(key.entity)")
        }
        return (description, mapping)
    }

    private func conflictOrMissing(_ key: ObjectKey, expected: Int64?, verb: String, table: String, number: Int) throws -> Never {
        let versions = try connection.statement("SELECT Z_OPT FROM \(quote(table)) WHERE Z_PK = ?1 AND Z_ENT = ?2")
            .rows([.integer(key.primaryKey), .integer(Int64(number))]) { $0.int64(0) }
        if let version = versions.first {
            throw StoreError(.conflict, "\(key) was changed by someone else (version \(version), expected \(expected ?? 0))",
                             objectID: ObjectID(store: storeID, key: key))
        }
        throw StoreError(.invalidChange, "cannot \(verb) \(key): it does not exist")
    }

    private func delete(_ deletion: ObjectDeletion) throws {
        let (description, mapping) = try self.description(deletion.key, "delete")
        try retireFiles(of: deletion.key, mapping, description.storedAttributes.map(\.name))
        var sql = "DELETE FROM \(quote(mapping.table)) WHERE Z_PK = ?1 AND Z_ENT = ?2"
        var arguments: [SQLValue] = [.integer(deletion.key.primaryKey), .integer(Int64(mapping.number))]
        if let expected = deletion.expectedVersion { sql += " AND Z_OPT = ?3"; arguments.append(.integer(expected)) }
        try connection.statement(sql).run(arguments)
        if connection.changes == 0 {
            try conflictOrMissing(deletion.key, expected: deletion.expectedVersion, verb: "delete", table: mapping.table, number: mapping.number)
        }
        // References to the deleted object read as absent afterwards.
        for sql in reader.cleanupStatements(for: mapping.number) {
            try connection.statement(sql).run([.integer(deletion.key.primaryKey)])
        }
    }

    /// Column assignments for attributes and to-one relationships (names the change set's shape check passed).
    private func assignments(_ key: ObjectKey, _ mapping: SQLiteSchema.Entity,
                             attributes: [String: Value?], toOne: [String: ObjectKey?]) throws -> [(String, SQLValue)] {
        var columns: [(String, SQLValue)] = []
        for (name, value) in attributes.sorted(by: { $0.key < $1.key }) {
            guard let column = mapping.attributes[name] else { throw StoreError(.invalidChange, "\(key): no stored attribute named \(name)") }
            columns.append((column, try sql(value, of: model.entity(named: key.entity)?.attributesByName[name], in: key.entity)))
        }
        for (name, target) in toOne.sorted(by: { $0.key < $1.key }) {
            guard let column = mapping.toOne[name] else {
                throw StoreError(.invalidChange, "\(key): no stored to-one relationship named \(name)")
            }
            columns.append((column.key, target.map { .integer($0.primaryKey) } ?? .null))
            if let entityColumn = column.entity {
                columns.append((entityColumn, target.flatMap { schema.entities[$0.entity] }.map { .integer(Int64($0.number)) } ?? .null))
            }
        }
        return columns
    }

    private func insert(_ record: ObjectRecord) throws {
        let (description, mapping) = try self.description(record.key, "insert")
        // One statement per entity with every column; what the record leaves out is NULL.
        let plan = reader.insertPlan(for: mapping.number)
        var values = [SQLValue](repeating: .null, count: plan.width)
        values[0] = .integer(record.key.primaryKey)
        values[1] = .integer(Int64(mapping.number))
        values[2] = .integer(max(1, record.version))
        for (name, value) in record.attributes {
            guard let slot = plan.attributes[name] else {
                throw StoreError(.invalidChange, "\(record.key): no stored attribute named \(name)")
            }
            values[slot.index] = try sql(value, of: description.attributesByName[name], in: description.name)
        }
        for (name, target) in record.toOne {
            guard let slot = plan.toOne[name] else {
                throw StoreError(.invalidChange, "\(record.key): no stored to-one relationship named \(name)")
            }
            values[slot.key] = .integer(target.primaryKey)
            if let entity = slot.entity, let number = schema.entities[target.entity]?.number { values[entity] = .integer(Int64(number)) }
        }
        try run(connection.statement(plan.sql), values, inserting: record.key, root: description.rootName)
    }

    /// Runs one row's INSERT; the only way it fails with a constraint is a key in use.
    private func run(_ insert: Statement, _ values: [SQLValue], inserting key: ObjectKey, root: String) throws {
        do {
            try insert.run(values)
        } catch let error as StoreError where error.code == .invalidChange {
            // A unique index of a uniqueness constraint the checks before did not see (one the file has and the model not).
            if !error.message.contains(".Z_PK") && error.message.contains("UNIQUE") {
                throw StoreError(.uniquenessViolated, "cannot insert \(key): \(error.message)", url: URL(filePath: connection.path), cause: error)
            }
            throw StoreError(.invalidChange, "cannot insert \(key): primary key \(key.primaryKey) is in use in \(root)'s hierarchy")
        }
    }

    /// A value as its column holds it; for an attribute with external storage, tagged (a large
    /// value written to a file, see ``SQLiteExternalData``).
    private func sql(_ value: Value?, of attribute: Attribute?, in entity: String) throws -> SQLValue {
        guard let attribute, attribute.allowsExternalBinaryDataStorage, case .data(let data)? = value else {
            return SQLiteValues.sql(value, textDecimal: attribute?.type == .decimal && schema.isTextDecimal(entity, attribute!.name))
        }
        return .blob(try reader.external.write(data, files: files, url: URL(filePath: connection.path)))
    }

    /// Notes the external data files the stored values of `names` (those with external storage)
    /// name: the save that replaces or deletes them makes them obsolete.
    private func retireFiles(of key: ObjectKey, _ mapping: SQLiteSchema.Entity, _ names: [String]) throws {
        guard reader.external.isTagged, let entity = model.entity(named: key.entity) else { return }
        let columns = names.sorted().compactMap { name in
            entity.attributesByName[name].flatMap { $0.allowsExternalBinaryDataStorage ? mapping.attributes[name] : nil }
        }
        guard !columns.isEmpty else { return }
        let sql = "SELECT \(columns.map(quote).joined(separator: ", ")) FROM \(quote(mapping.table)) WHERE Z_PK = ?1 AND Z_ENT = ?2"
        for row in try connection.statement(sql).rows([.integer(key.primaryKey), .integer(Int64(mapping.number))], { row in columns.indices.map { row.column(Int32($0)) } }) {
            for case .blob(let blob) in row {
                if let name = try? SQLiteExternalData.fileName(blob, at: { "" }, url: nil) { files.retire(reader.external.folder.appending(path: name)) }
            }
        }
    }

    /// Moves the key counter of the hierarchy numbered `root` past `last`.
    private func moveKeyCounter(_ root: Int, past last: Int64) throws {
        try connection.statement("UPDATE Z_PRIMARYKEY SET Z_MAX = max(Z_MAX, ?1) WHERE Z_ENT = ?2").run([.integer(last), .integer(Int64(root))])
    }

    /// Inserts a batch whose references are not checked (see ``PersistentStore/bulkInsert(_:checkingReferences:)-(RecordBatch,_)``):
    /// checked as every store checks one (``RecordBatch/checkInsertable(in:)``), then one prepared
    /// INSERT bound slot by slot.
    /// Rows in `skipped` are left out (checked all the same).
    func insert(_ batch: RecordBatch, except skipped: Set<Int> = []) throws {
        let description = batch.entity
        guard let mapping = schema.entities[description.name] else { throw StoreError(.invalidChange, "no entity named \(description.name)") }
        try batch.checkInsertable(in: model)
        guard !batch.isEmpty else { return }
        if !description.uniquenessConstraints.isEmpty {
            try checkUniqueness(ChangeSet(inserted: batch.records.enumerated().filter { !skipped.contains($0.offset) }.map(\.element)))
        }
        let plan = reader.insertPlan(for: mapping.number)
        let layout = batch.layout
        let attributes = layout.attributes.map { plan.attributes[$0.name]! }
        // Per slot, whether its value takes the path of ``sql(_:of:in:)`` (external data, decimals
        // kept as text); the others convert alone, without the attribute's description per row.
        let special = layout.attributes.map { $0.allowsExternalBinaryDataStorage || $0.type == .decimal }
        let links = layout.toOne.map { plan.toOne[$0.name]! }
        // The order keys the batch carries, where the table keeps them; the others stay NULL.
        let orders = plan.inverseOrder.compactMap { name, place in batch.inverseOrderKeys[name].map { (place, $0) } }
        let statement = try connection.statement(plan.sql)
        var values = [SQLValue](repeating: .null, count: plan.width)
        var last: Int64 = 0
        for row in 0..<batch.count where !skipped.contains(row) {
            let key = batch.primaryKeys[row]
            last = max(last, key)
            values[0] = .integer(key)
            values[1] = .integer(Int64(mapping.number))
            values[2] = .integer(max(1, batch.versions[row]))
            for (slot, place) in attributes.enumerated() {
                values[place.index] = special[slot] ? try sql(batch[row, attribute: slot], of: layout.attributes[slot], in: description.name)
                                                    : SQLiteValues.sql(batch[row, attribute: slot], textDecimal: false)
            }
            for (slot, place) in links.enumerated() {
                let target = batch[row, toOne: slot]
                values[place.key] = target.map { .integer($0.primaryKey) } ?? .null
                if let entity = place.entity {
                    values[entity] = target.flatMap { schema.entities[$0.entity] }.map { .integer(Int64($0.number)) } ?? .null
                }
            }
            for (place, keys) in orders { values[place] = keys[row].map { .integer($0) } ?? .null }
            try run(statement, values, inserting: batch.key(at: row), root: description.rootName)
        }
        if last > 0 { try moveKeyCounter(schema.entities[description.rootName]!.number, past: last) }
    }

    private func update(_ update: ObjectUpdate, bumpingVersion: Bool, given: [RelationshipSide: [ObjectKey]]) throws {
        let (_, mapping) = try self.description(update.key, "update")
        try retireFiles(of: update.key, mapping, Array(update.attributes.keys))
        let columns = try assignments(update.key, mapping, attributes: update.attributes, toOne: update.toOne)
        // Moving to the end of an ordered to-many is decided on the foreign key before it changes.
        for (name, target) in update.toOne.sorted(by: { $0.key < $1.key }) { try appendOrder(update.key, name, target, given: given, inserted: false) }
        var values: [SQLValue] = [.integer(update.key.primaryKey), .integer(Int64(mapping.number))] + columns.map(\.1)
        if let expected = update.expectedVersion { values.append(.integer(expected)) }
        let sql = reader.updateStatement(table: mapping.table, columns: columns.map(\.0), checksVersion: update.expectedVersion != nil,
                                         bumpsVersion: bumpingVersion)
        try connection.statement(sql).run(values)
        if connection.changes == 0 {
            try conflictOrMissing(update.key, expected: update.expectedVersion, verb: "update", table: mapping.table, number: mapping.number)
        }
        for (name, target) in update.toOne.sorted(by: { $0.key < $1.key }) {
            try completeToOne(update.key, name, target, given: given, inserted: false)
        }
    }

    /// The to-one `name` of `owner`, with its inverse, when the inverse is a side the change set does not give.
    private func inverseToComplete(_ owner: ObjectKey, _ name: String, _ target: ObjectKey?,
                                   given: [RelationshipSide: [ObjectKey]]) -> (Relationship, Relationship)? {
        guard let relationship = model.entity(named: owner.entity)?.relationshipsByName[name], let inverseName = relationship.inverse,
              let inverse = model.entity(named: relationship.destination)?.relationshipsByName[inverseName] else { return nil }
        if let target, given[RelationshipSide(target, inverseName)] != nil { return nil }
        return (relationship, inverse)
    }

    /// When `owner.name` (a to-one) moves to a new target whose inverse is an ordered to-many
    /// (or is inserted naming one), gives `owner` the order number after the target's last member.
    private func appendOrder(_ owner: ObjectKey, _ name: String, _ target: ObjectKey?, given: [RelationshipSide: [ObjectKey]],
                             inserted: Bool) throws {
        guard let (relationship, inverse) = inverseToComplete(owner, name, target, given: given), inverse.isOrdered,
              case .inverseForeignKey(let table, let column, _, let order?)? = schema.entities[relationship.destination]?.toMany[inverse.name]
        else { return }
        guard let target else {
            try connection.statement("UPDATE \(quote(table)) SET \(quote(order)) = NULL WHERE Z_PK = ?1").run([.integer(owner.primaryKey)])
            return
        }
        // An update moves the object only if it names another target (decided before its foreign key changes);
        // an inserted object already names its target.
        let moved = inserted ? "" : " AND \(quote(column)) IS NOT ?2"
        try connection.statement("UPDATE \(quote(table)) SET \(quote(order)) = (SELECT COALESCE(MAX(x.\(quote(order))), 0) + 1 FROM \(quote(table)) x "
                                 + "WHERE x.\(quote(column)) = ?2 AND x.Z_PK != ?1) WHERE Z_PK = ?1\(moved)")
            .run([.integer(owner.primaryKey), .integer(target.primaryKey)])
    }

    /// For a one-to-one: the target's foreign key back to `owner`, cleared on the partners
    /// either side had before (the change set gives only `owner`'s side).
    private func completeToOne(_ owner: ObjectKey, _ name: String, _ target: ObjectKey?, given: [RelationshipSide: [ObjectKey]],
                               inserted: Bool) throws {
        guard let (relationship, inverse) = inverseToComplete(owner, name, target, given: given), !inverse.isToMany,
              let own = schema.entities[owner.entity], let mine = own.toOne[name],
              let other = schema.entities[relationship.destination], let theirs = other.toOne[inverse.name] else { return }
        func clear(_ columns: (key: String, entity: String?)) -> String {
            "\(quote(columns.key)) = NULL" + (columns.entity.map { ", \(quote($0)) = NULL" } ?? "")
        }
        let pk = SQLValue.integer(owner.primaryKey)
        // The target's partner before: a new object has none.
        if !inserted {
            try connection.statement("UPDATE \(quote(other.table)) SET \(clear(theirs)) WHERE \(quote(theirs.key)) = ?1 AND Z_PK IS NOT ?2")
                .run([pk, target.map { .integer($0.primaryKey) } ?? .null])
        }
        guard let target else { return }
        let targetPK = SQLValue.integer(target.primaryKey)
        // The partner the target had before loses it; then the target names the owner.
        try connection.statement("UPDATE \(quote(own.table)) SET \(clear(mine)) WHERE \(quote(mine.key)) = ?1 AND Z_PK != ?2").run([targetPK, pk])
        var set = "\(quote(theirs.key)) = ?2"
        var values: [SQLValue] = [targetPK, pk]
        if let entityColumn = theirs.entity {
            set += ", \(quote(entityColumn)) = ?3"
            values.append(.integer(Int64(own.number)))
        }
        try connection.statement("UPDATE \(quote(other.table)) SET \(set) WHERE Z_PK = ?1").run(values)
    }

    /// A list of a to-many without an inverse that a change writes: its members' column names the owner.
    struct HiddenList {
        let owner: ObjectKey, name: String, table: String, column: String, count: Int
    }

    /// Writes `owner`'s `name` list, an ordered one with `orderKeys` (one per member). A member of a to-many without an inverse is in one list only
    /// (its column names the owner): taking it from a list this change does not rewrite would
    /// silently shorten that list, so it is refused (`rewritten`: the lists this change writes).
    private func writeToMany(_ owner: ObjectKey, _ name: String, _ members: [ObjectKey], orderKeys: [Int64],
                             rewritten: [String: HiddenList]) throws {
        guard let storage = schema.entities[owner.entity]?.toMany[name] else { return }
        let pk = SQLValue.integer(owner.primaryKey)
        switch storage {
        case .inverseForeignKey(let table, let column, let entity, let order):
            // Members the relationship drops no longer name the owner; members name it (and their order).
            let wanted = Set(members.map(\.primaryKey))
            let clear = "\(quote(column)) = NULL" + (entity.map { ", \(quote($0)) = NULL" } ?? "") + (order.map { ", \(quote($0)) = NULL" } ?? "")
            for gone in try connection.statement("SELECT Z_PK FROM \(quote(table)) WHERE \(quote(column)) = ?1").rows([pk], { $0.int64(0) })
            where !wanted.contains(gone) {
                try connection.statement("UPDATE \(quote(table)) SET \(clear) WHERE Z_PK = ?1").run([.integer(gone)])
            }
            let number = Int64(schema.entities[owner.entity]!.number)
            let set = "\(quote(column)) = ?1" + (entity.map { ", \(quote($0)) = ?4" } ?? "") + (order.map { ", \(quote($0)) = ?3" } ?? "")
            let statement = try connection.statement("UPDATE \(quote(table)) SET \(set) WHERE Z_PK = ?2")
            let width = entity != nil ? 4 : (order != nil ? 3 : 2)
            for (i, member) in members.enumerated() {
                try statement.run(Array([pk, .integer(member.primaryKey), .integer(orderKeys[i]), .integer(number)].prefix(width)))
            }
        case .hiddenForeignKey(let table, let column, let order):
            try connection.statement("UPDATE \(quote(table)) SET \(quote(column)) = NULL\(order.map { ", \(quote($0)) = NULL" } ?? "") WHERE \(quote(column)) = ?1").run([pk])
            let set = "\(quote(column)) = ?1" + (order.map { ", \(quote($0)) = ?3" } ?? "")
            let holder = try connection.statement("SELECT \(quote(column)) FROM \(quote(table)) WHERE Z_PK = ?1")
            for (i, member) in members.enumerated() {
                if case .integer(let other)? = try holder.rows([.integer(member.primaryKey)], { $0.column(0) }).first,
                   other != owner.primaryKey, rewritten["\(table).\(column)#\(other)"] == nil {
                    throw StoreError(.invalidChange, "\(owner).\(name): \(member) is in the \(name) list of \(owner.entity)/\(other) already; "
                                     + "this store keeps a member of a to-many without an inverse in one list only (Core Data's layout)")
                }
                var values: [SQLValue] = [pk, .integer(member.primaryKey)]
                if order != nil { values.append(.integer(orderKeys[i])) }
                try connection.statement("UPDATE \(quote(table)) SET \(set) WHERE Z_PK = ?2").run(values)
            }
        case .join(let table, let own, let other, let order, _, _):
            let existing = Set(try connection.statement("SELECT \(quote(other)) FROM \(quote(table)) WHERE \(quote(own)) = ?1").rows([pk]) { $0.int64(0) })
            let wanted = Set(members.map(\.primaryKey))
            // A relationship that is its own inverse (Person.friends ↔ Person.friends) keeps a row for each
            // direction: its inverse reads the very same columns. (Book.links ↔ Tag.links share a name only.)
            var mirrored = false
            if let relationship = model.entity(named: owner.entity)?.relationshipsByName[name], relationship.inverse == name,
               case .join(_, let inverseOwn, let inverseOther, _, _, _)? = schema.entities[relationship.destination]?.toMany[name] {
                mirrored = inverseOwn == own && inverseOther == other
            }
            let delete = try connection.statement("DELETE FROM \(quote(table)) WHERE \(quote(own)) = ?1 AND \(quote(other)) = ?2")
            for gone in existing.subtracting(wanted) {
                try delete.run([pk, .integer(gone)])
                if mirrored { try delete.run([.integer(gone), pk]) }
            }
            // New members come with their order keys; members already there get theirs when they changed.
            let columns = "\(quote(own)), \(quote(other))" + (order.map { ", \(quote($0))" } ?? "")
            let insert = try connection.statement("INSERT INTO \(quote(table)) (\(columns)) VALUES (?1, ?2\(order == nil ? "" : ", ?3"))")
            let mirror = mirrored ? try connection.statement("INSERT OR IGNORE INTO \(quote(table)) (\(quote(own)), \(quote(other))) VALUES (?1, ?2)") : nil
            let reorder = try order.map { try connection.statement("UPDATE \(quote(table)) SET \(quote($0)) = ?3 WHERE \(quote(own)) = ?1 AND \(quote(other)) = ?2 AND \(quote($0)) IS NOT ?3") }
            for (i, member) in members.enumerated() {
                let values: [SQLValue] = [pk, .integer(member.primaryKey), .integer(orderKeys[i])]
                if existing.contains(member.primaryKey) {
                    try reorder?.run(values)
                } else {
                    try insert.run(order == nil ? Array(values.prefix(2)) : values)
                    try mirror?.run([.integer(member.primaryKey), pk])
                }
            }
        }
    }

    /// Every object a change points to must exist after the change (its entity the shape check
    /// passed). Targets are looked up a few hundred at a time, one query per table.
    private func verifyTargets(_ changes: ChangeSet) throws {
        var wanted: [String: Set<Int64>] = [:]   // "table|entity number" → primary keys
        var places: [ObjectKey: (ObjectKey, String)] = [:]
        func note(_ source: ObjectKey, _ name: String, _ target: ObjectKey) throws {
            guard let mapping = schema.entities[target.entity] else { throw StoreError(.invalidChange, "\(source).\(name): no entity named \(target.entity)") }
            wanted["\(mapping.table)|\(mapping.number)", default: []].insert(target.primaryKey)
            if places[target] == nil { places[target] = (source, name) }
        }
        for record in changes.inserted {
            for (name, target) in record.toOne { try note(record.key, name, target) }
            for (name, targets) in record.toMany { for target in targets { try note(record.key, name, target) } }
        }
        for update in changes.updated {
            for (name, target) in update.toOne { if let target { try note(update.key, name, target) } }
            for (name, targets) in update.toMany { for target in targets { try note(update.key, name, target) } }
        }
        for (place, keys) in wanted {
            let parts = place.split(separator: "|")
            let (table, number) = (String(parts[0]), Int64(parts[1])!)
            let all = Array(keys)
            var found: Set<Int64> = []
            for start in stride(from: 0, to: all.count, by: 500) {
                let chunk = all[start..<min(all.count, start + 500)]
                let sql = "SELECT Z_PK FROM \(quote(table)) WHERE Z_ENT = ?1 AND Z_PK IN (\(chunk.indices.map { "?\($0 - start + 2)" }.joined(separator: ",")))"
                for pk in try connection.statement(sql).rows([.integer(number)] + chunk.map { .integer($0) }, { $0.int64(0) }) { found.insert(pk) }
            }
            if let missing = keys.subtracting(found).min(), let entity = schema.byNumber[Int(number)] {
                let target = ObjectKey(entity, missing)
                let (source, name) = places[target] ?? (target, "?")
                throw StoreError(.invalidChange, "\(source).\(name): \(target) does not exist")
            }
        }
    }
}
