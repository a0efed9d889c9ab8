import Foundation
import ObjectModel
import ObjectStore

/// In-place lightweight migration: the changes Core Data's layout can take without copying a
/// row — attributes added (optional, or with a default, which SQLite gives old rows without
/// rewriting them) and attributes renamed (by renaming identifier) — done with `ALTER TABLE` in
/// one transaction, with the metadata's hashes and model.
extension SQLiteStoreType: SchemaChanging {
    public func schemaChangeBlockers(from source: ManagedObjectModel, to destination: ManagedObjectModel) -> [String] {
        let sourceNames = Set(source.entities.map(\.name)), destinationNames = Set(destination.entities.map(\.name))
        guard sourceNames == destinationNames else {
            return ["entities added, removed or renamed: \(sourceNames.symmetricDifference(destinationNames).sorted().joined(separator: ", "))"]
        }
        var blockers: [String] = []
        for new in destination.entities {
            let old = source.entity(named: new.name)!.declaration
            if old.parent != new.parent || old.isAbstract != new.isAbstract { blockers.append("\(new.name): its place in the hierarchy changed") }
            if old.relationships != new.relationships { blockers.append("\(new.name): its relationships changed") }
            if old.indexes != new.indexes || old.uniquenessConstraints != new.uniquenessConstraints {
                blockers.append("\(new.name): its indexes or uniqueness constraints changed")
            }
            for change in Self.attributeChanges(old, new) {
                if case .blocked(let reason) = change { blockers.append(reason) }
            }
        }
        return blockers
    }

    public func changeSchema(at given: URL, through models: [ManagedObjectModel]) throws {
        let url = FileOperations.resolved(given)
        guard let first = models.first else { return }
        let (connection, metadata) = try Self.openExisting(url, readOnly: false)
        defer { connection.close() }
        guard metadata.compatibility(with: first).isCompatible else {
            throw StoreError(.incompatibleModel, "the store was not made with the first model of the change", url: url)
        }
        try connection.transaction {
            for (source, destination) in zip(models, models.dropFirst()) {
                let blockers = schemaChangeBlockers(from: source, to: destination)
                guard blockers.isEmpty else { throw StoreError(.invalidChange, "cannot change the schema in place: " + blockers.joined(separator: "; "), url: url) }
                try Self.alter(connection, url: url, from: source, to: destination)
            }
            let last = models.last!
            // The tables now fit the last model, or nothing is committed.
            _ = try SQLiteSchema(model: last, file: SQLiteFileLayout.read(from: connection, url: url), url: url)
            var updated = try Self.readMetadata(from: connection, url: url)
            try updated.setModel(last)
            try Self.writeMetadata(updated, to: connection)
            // Core Data's cached model describes the old version now: no cache is better than a wrong one.
            if try connection.exists("Z_MODELCACHE") { try connection.execute("DELETE FROM Z_MODELCACHE") }
        }
    }

    /// One step's `ALTER TABLE` statements, run on `connection` inside the caller's transaction.
    private static func alter(_ connection: SQLiteConnection, url: URL, from source: ManagedObjectModel, to destination: ManagedObjectModel) throws {
        let current = try SQLiteSchema(model: source, file: SQLiteFileLayout.read(from: connection, url: url), url: url)
        let fresh = SQLiteSchema(model: destination)
        for new in destination.entities {
            let old = source.entity(named: new.name)!.declaration
            guard let table = current.entities[new.name]?.table, let names = fresh.entities[new.name]?.attributes else { continue }
            var columns = Set(try connection.statement("SELECT upper(name) FROM pragma_table_info(?1)").rows([.text(table)]) { row -> String in
                if case .text(let name) = row.column(0) { return name }
                return ""
            })
            func checkFree(_ column: String) throws {
                guard columns.insert(column.uppercased()).inserted else {
                    throw StoreError(.invalidChange, "cannot change the schema in place: table \(table) already has a column \(column)", url: url)
                }
            }
            for change in attributeChanges(old, new) {
                switch change {
                case .kept(let was, let attribute):
                    guard let from = current.entities[new.name]?.attributes[was.name], let to = names[attribute.name], from != to else { continue }
                    try checkFree(to)
                    try connection.execute("ALTER TABLE \(quote(table)) RENAME COLUMN \(quote(from)) TO \(quote(to))")
                case .added(let attribute):
                    guard let column = names[attribute.name] else { continue }
                    try checkFree(column)
                    var sql = "ALTER TABLE \(quote(table)) ADD COLUMN \(quote(column)) \(SQLiteSchema.sqlType(attribute.type))"
                    if let value = attribute.defaultValue {
                        guard let literal = literal(SQLiteValues.sql(value)) else {
                            throw StoreError(.invalidChange, "cannot change the schema in place: \(new.name).\(attribute.name)'s default has no SQL literal", url: url)
                        }
                        sql += " DEFAULT \(literal)"
                    }
                    try connection.execute(sql)
                case .blocked(let reason):
                    throw StoreError(.invalidChange, "cannot change the schema in place: \(reason)", url: url)
                }
            }
        }
    }

    /// What happens to each stored attribute of an entity between two versions.
    enum AttributeChange {
        /// Kept (perhaps renamed): the old declaration and the new.
        case kept(Attribute, Attribute)
        /// New: a column for it, old rows given its default (or nil).
        case added(Attribute)
        /// Not expressible in place; why.
        case blocked(String)
    }

    /// The entity's own stored attributes, matched by renaming identifier or name as inference
    /// matches them.
    static func attributeChanges(_ old: Entity, _ new: Entity) -> [AttributeChange] {
        let stored = old.attributes.filter { !$0.isTransient }
        var changes: [AttributeChange] = []
        var matched: Set<String> = []
        for attribute in new.attributes where !attribute.isTransient {
            let identity = attribute.renamingIdentifier ?? attribute.name
            guard let was = stored.first(where: { $0.name == identity }) ?? stored.first(where: { $0.name == attribute.name }) else {
                changes.append(attribute.isOptional || attribute.defaultValue != nil ? .added(attribute)
                               : .blocked("\(new.name).\(attribute.name): required, with no default"))
                continue
            }
            matched.insert(was.name)
            if was.type != attribute.type || was.allowsExternalBinaryDataStorage != attribute.allowsExternalBinaryDataStorage
                || was.valueTransformerName != attribute.valueTransformerName {
                changes.append(.blocked("\(new.name).\(attribute.name): its type or storage changed"))
            } else if (was.isOptional && !attribute.isOptional) || was.validation != attribute.validation {
                changes.append(.blocked("\(new.name).\(attribute.name): its rules changed, so every object must be checked"))
            } else {
                changes.append(.kept(was, attribute))
            }
        }
        for attribute in stored where !matched.contains(attribute.name) {
            changes.append(.blocked("\(new.name).\(attribute.name): removed (a copy drops its values)"))
        }
        return changes
    }

    /// A value as an SQL literal, for a column's DEFAULT; nil for a double SQL cannot write.
    static func literal(_ value: SQLValue) -> String? {
        switch value {
        case .null: "NULL"
        case .integer(let n): String(n)
        case .real(let d): d.isFinite ? "\(d)" : nil
        case .text(let text): "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let data): "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }
}
