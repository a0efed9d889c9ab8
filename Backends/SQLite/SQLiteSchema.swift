import Foundation
import ObjectModel
import ObjectStore

/// Core Data's table layout for a model (`shared/specs/sqlite-layout.md`):
/// entity numbers, one table per inheritance root, `Z`-prefixed columns,
/// foreign keys, order columns and join tables.
struct SQLiteSchema {
    /// Where a to-many relationship's members are found.
    enum ToMany {
        /// Rows of the destination's table whose foreign key (the inverse to-one) points here;
        /// `entity` is that to-one's column of the target's Z_ENT, when it has one.
        case inverseForeignKey(table: String, column: String, entity: String?, order: String?)
        /// A hidden foreign-key column on the destination's table (a to-many with no inverse).
        case hiddenForeignKey(table: String, column: String, order: String?)
        /// A join table: rows pairing this object (`own`) with a member (`other`).
        case join(table: String, own: String, other: String, order: String?, otherOrder: String?, otherTable: String)
    }

    struct Entity {
        let name: String
        let number: Int
        let superNumber: Int
        let table: String
        /// This entity's number and its descendants'.
        let kinds: [Int]
        /// Attribute name to column.
        let attributes: [String: String]
        /// To-one relationship name to its foreign-key column and, when the
        /// destination has sub-entities, the column holding the target's Z_ENT.
        let toOne: [String: (key: String, entity: String?)]
        let toMany: [String: ToMany]
    }

    struct Table {
        let name: String
        /// Each column's name, SQL type, what it holds (`Post.title`, `key`) and its place in
        /// `CREATE TABLE` (``place(type:entity:kind:)``; columns of equal place by name).
        var columns: [(name: String, type: String, purpose: String, place: Int)]
        var indexes: [(name: String, columns: [String])]
        /// The unique index of each uniqueness constraint: Core Data's name and shape
        /// (`CREATE UNIQUE INDEX Z_Car_UNIQUE_numberPlate ON ZCAR (ZNUMBERPLATE COLLATE BINARY ASC)`);
        /// `kinds` limits one declared below the root to its entity numbers (`WHERE Z_ENT IN (…)`).
        var uniqueIndexes: [(name: String, columns: [String], kinds: [Int]?)] = []
    }

    let entities: [String: Entity]
    let byNumber: [Int: String]
    let tables: [String: Table]
    /// Entity names in entity-number order.
    let ordered: [String]
    /// `Entity.attribute` of every decimal attribute whose column the file declares with TEXT
    /// affinity, as earlier versions of this library did (`DECIMAL TEXT`): such a column keeps
    /// a decimal as its text (``SQLiteValues/sql(_:textDecimal:)``), as the rows already there do.
    var textDecimals: Set<String> = []

    /// Whether `entity`'s decimal `attribute` has a TEXT-affinity column (``textDecimals``).
    func isTextDecimal(_ entity: String, _ attribute: String) -> Bool {
        !textDecimals.isEmpty && textDecimals.contains("\(entity).\(attribute)")
    }

    /// The column of `entity`'s table that holds each row's order key in the ordered to-many
    /// that is the inverse of its to-one `relationship` (Core Data's `Z_FOK_`), if there is one.
    func inverseOrderColumn(of relationship: Relationship, in entity: Entity) -> String? {
        guard !relationship.isToMany, let inverse = relationship.inverse, let target = entities[relationship.destination],
              case .inverseForeignKey(let table, _, _, let order?)? = target.toMany[inverse], table == entity.table else { return nil }
        return order
    }

    static func sqlType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: "INTEGER"
        case .double, .float: "FLOAT"
        // NUMERIC affinity, as Core Data declares it; ``SQLiteValues`` keeps what a double cannot hold exactly.
        case .decimal: "DECIMAL"
        case .date: "TIMESTAMP"
        case .string, .uri: "VARCHAR"
        default: "BLOB"
        }
    }

    /// What a column of an entity's table is, for its place in `CREATE TABLE`.
    enum ColumnKind: Int {
        case attribute, toOne, hiddenForeignKey, order
    }

    /// Where Core Data puts a column in `CREATE TABLE` (docs/sqlite-layout.md, "Column order"):
    /// by declared type (`INTEGER`, `TIMESTAMP`, `FLOAT`, `DECIMAL`, `VARCHAR`, `BLOB`), then by
    /// the entity it serves in entity-number order, then attributes, to-ones, hidden foreign keys
    /// and order columns; then by name.
    static func place(type: String, entity: Int, kind: ColumnKind) -> Int {
        let types = ["INTEGER", "TIMESTAMP", "FLOAT", "DECIMAL", "VARCHAR", "BLOB"]
        return (types.firstIndex(of: type) ?? types.count) * 1_000_000 + entity * 10 + kind.rawValue
    }

    /// The layout of a new store of `model`, its entities numbered as ``newStoreOrder(of:)`` gives them.
    init(model: ManagedObjectModel) {
        self.init(model: model, numbers: Dictionary(uniqueKeysWithValues: Self.newStoreOrder(of: model).enumerated().map { ($1, $0 + 1) }),
                  existingTables: nil)
    }

    /// Entity names in the order a new store numbers them: roots by name, each followed by its
    /// sub-tree depth-first, siblings by name (what Core Data gives a new store).
    static func newStoreOrder(of model: ManagedObjectModel) -> [String] {
        var ordered: [String] = []
        func visit(_ name: String) {
            ordered.append(name)
            for child in model.entity(named: name)!.subentities { visit(child) }
        }
        for root in model.entityDescriptions where root.parent == nil { visit(root.name) }
        return ordered
    }

    /// The layout of an existing store of `model`, as its file has it: entity numbers from
    /// `Z_PRIMARYKEY` (a store written by another program may number its entities otherwise),
    /// the join table of a many-to-many under the name the file uses (Core Data's stores do not
    /// agree on which side names it), and every table and column the model needs checked to be
    /// there.
    ///
    /// An entity's row in `Z_PRIMARYKEY` is found by its name, else by its renaming identifier
    /// (Core Data keeps an entity's old name there when a migration renames it), else as the
    /// one row left under its parent when it is the one entity left there.
    ///
    /// - Throws: ``StoreError/Code/corrupt`` naming the entity, table or column that does not fit.
    init(model: ManagedObjectModel, file: SQLiteFileLayout, url: URL) throws {
        let rows = Dictionary(uniqueKeysWithValues: file.entities.map { ($0.number, $0) })
        var numbers: [String: Int] = [:]
        var taken: Set<Int> = []
        func assign(_ entity: String, _ number: Int) {
            numbers[entity] = number
            taken.insert(number)
        }
        for entity in model.entityDescriptions {
            if let row = file.entities.first(where: { $0.name == entity.name }) { assign(entity.name, row.number) }
        }
        for entity in model.entityDescriptions where numbers[entity.name] == nil {
            guard let old = entity.declaration.renamingIdentifier, model.entity(named: old) == nil,
                  let row = file.entities.first(where: { $0.name == old && !taken.contains($0.number) }) else { continue }
            assign(entity.name, row.number)
        }
        // By place, parents before children so that a child's parent number is known.
        for entity in model.entityDescriptions.sorted(by: { $0.ancestors.count < $1.ancestors.count }) where numbers[entity.name] == nil {
            guard let parent = entity.parent.map({ numbers[$0] }) ?? 0 else { continue }
            let rowsLeft = file.entities.filter { $0.superNumber == parent && !taken.contains($0.number) }
            let entitiesLeft = model.entityDescriptions.filter { $0.parent == entity.parent && numbers[$0.name] == nil }
            if rowsLeft.count == 1, entitiesLeft.count == 1 { assign(entity.name, rowsLeft[0].number) }
        }
        for entity in model.entityDescriptions {
            guard let number = numbers[entity.name] else {
                throw StoreError(.corrupt, "Z_PRIMARYKEY has no row for entity \(entity.name), which the model has", url: url)
            }
            let parent = entity.parent.map { numbers[$0]! } ?? 0
            guard rows[number]!.superNumber == parent else {
                throw StoreError(.corrupt, "Z_PRIMARYKEY gives entity \(entity.name) the parent entity number \(rows[number]!.superNumber), "
                                 + "but its model parent is \(entity.parent.map { "\($0) (\(parent))" } ?? "none (0)")", url: url)
            }
        }
        self.init(model: model, numbers: numbers, existingTables: Set(file.columns.keys))
        for (name, entity) in entities {
            for (attribute, column) in entity.attributes
            where model.entity(named: name)!.attributesByName[attribute]!.type == .decimal && file.textColumns.contains("\(entity.table.uppercased()).\(column.uppercased())") {
                textDecimals.insert("\(name).\(attribute)")
            }
        }
        for table in tables.values.sorted(by: { $0.name < $1.name }) {
            guard let columns = file.columns[table.name.uppercased()] else {
                throw StoreError(.corrupt, "the store has no table \(table.name), which its model needs", url: url)
            }
            if let missing = table.columns.first(where: { !columns.contains($0.name.uppercased()) }) {
                throw StoreError(.corrupt, "table \(table.name) has no column \(missing.name), which the model needs for \(missing.purpose)", url: url)
            }
        }
    }

    /// The layout of `model` with these entity numbers; a many-to-many's join table takes the
    /// name of `existingTables` has, when it has one of the two names.
    init(model: ManagedObjectModel, numbers number: [String: Int], existingTables: Set<String>?) {
        let ordered = number.keys.sorted { number[$0]! < number[$1]! }

        var tables: [String: Table] = [:]
        var attributeColumns: [String: [String: String]] = [:]
        var toOneColumns: [String: [String: (key: String, entity: String?)]] = [:]
        func tableName(_ entity: String) -> String { "Z" + model.entity(named: entity)!.rootName.uppercased() }
        func addColumn(_ table: String, _ base: String, _ type: String, for purpose: String, entity: String, kind: ColumnKind) -> String {
            var name = base
            var suffix = 1
            while tables[table]!.columns.contains(where: { $0.name == name }) { name = base + String(suffix); suffix += 1 }
            tables[table]!.columns.append((name, type, purpose, Self.place(type: type, entity: number[entity]!, kind: kind)))
            return name
        }
        for name in ordered where model.entity(named: name)!.parent == nil {
            let table = tableName(name)
            tables[table] = Table(name: table, columns: [
                ("Z_PK", "INTEGER PRIMARY KEY", "the primary key", -3), ("Z_ENT", "INTEGER", "the entity number", -2), ("Z_OPT", "INTEGER", "the version", -1),
            ], indexes: [])
            // Core Data indexes the entity column of a table that holds more than one entity.
            if !model.entity(named: name)!.subentities.isEmpty { tables[table]!.indexes.append(("\(table)_Z_ENT_INDEX", ["Z_ENT"])) }
        }
        // Own stored attributes and to-one columns, in entity-number order; inherited ones reuse the parent's.
        for name in ordered {
            let entity = model.entity(named: name)!
            let table = tableName(name)
            var attributes = entity.parent.flatMap { attributeColumns[$0] } ?? [:]
            var toOne = entity.parent.flatMap { toOneColumns[$0] } ?? [:]
            for attribute in entity.declaration.attributes where !attribute.isTransient {
                attributes[attribute.name] = addColumn(table, "Z" + attribute.name.uppercased(), Self.sqlType(attribute.type), for: "\(name).\(attribute.name)",
                                                       entity: name, kind: .attribute)
            }
            for relationship in entity.declaration.relationships where !relationship.isTransient && !relationship.isToMany {
                let key = addColumn(table, "Z" + relationship.name.uppercased(), "INTEGER", for: "\(name).\(relationship.name)", entity: name, kind: .toOne)
                tables[table]!.indexes.append(("\(table)_\(key)_INDEX", [key]))
                var entityColumn: String?
                if let destination = model.entity(named: relationship.destination), !destination.subentities.isEmpty {
                    entityColumn = addColumn(table, "Z\(number[relationship.destination]!)_\(relationship.name.uppercased())", "INTEGER",
                                             for: "the entity of \(name).\(relationship.name)", entity: name, kind: .toOne)
                }
                toOne[relationship.name] = (key, entityColumn)
            }
            attributeColumns[name] = attributes
            toOneColumns[name] = toOne
        }
        // To-many storage.
        var toManyStorage: [String: [String: ToMany]] = [:]
        for name in ordered {
            let entity = model.entity(named: name)!
            var storage = entity.parent.flatMap { toManyStorage[$0] } ?? [:]
            for relationship in entity.declaration.relationships where !relationship.isTransient && relationship.isToMany {
                let destinationTable = tableName(relationship.destination)
                let inverse = relationship.inverse.flatMap { model.entity(named: relationship.destination)?.relationshipsByName[$0] }
                if let inverse, !inverse.isToMany {
                    let columns = toOneColumns[relationship.destination]?[inverse.name]
                    let key = columns?.key ?? "Z" + inverse.name.uppercased()
                    var order: String?
                    if relationship.isOrdered {
                        order = addColumn(destinationTable, "Z_FOK_" + inverse.name.uppercased(), "INTEGER", for: "the order of \(name).\(relationship.name)",
                                          entity: Self.declaringEntity(of: inverse.name, from: relationship.destination, model: model), kind: .order)
                    }
                    storage[relationship.name] = .inverseForeignKey(table: destinationTable, column: key, entity: columns?.entity, order: order)
                } else if inverse == nil {
                    let column = addColumn(destinationTable, "Z\(number[name]!)\(relationship.name.uppercased())", "INTEGER", for: "\(name).\(relationship.name)",
                                           entity: relationship.destination, kind: .hiddenForeignKey)
                    tables[destinationTable]!.indexes.append(("\(destinationTable)_\(column)_INDEX", [column]))
                    var order: String?
                    if relationship.isOrdered {
                        order = addColumn(destinationTable, "Z_FOK_\(number[name]!)\(relationship.name.uppercased())", "INTEGER",
                                          for: "the order of \(name).\(relationship.name)", entity: relationship.destination, kind: .order)
                    }
                    storage[relationship.name] = .hiddenForeignKey(table: destinationTable, column: column, order: order)
                }
            }
            toManyStorage[name] = storage
        }
        // Many-to-many join tables: one per pair, named `Z_<n><NAME>` by the side whose relationship
        // name sorts last (what Apple's stores show: `Z_1BOOKS` for books/authors, `Z_1FAVORITES` for
        // favorites/favoriteFolders); an existing store's own name wins. Columns do not depend on it.
        for name in ordered {
            let entity = model.entity(named: name)!
            for relationship in entity.declaration.relationships where !relationship.isTransient && relationship.isToMany {
                guard let inverse = relationship.inverse.flatMap({ model.entity(named: relationship.destination)?.relationshipsByName[$0] }),
                      inverse.isToMany else { continue }
                let declaring = Self.declaringEntity(of: inverse.name, from: relationship.destination, model: model)
                let mine = (number[name]!, relationship.name)
                let theirs = (number[declaring]!, inverse.name)
                let owner = mine.1 > theirs.1 || (mine.1 == theirs.1 && mine.0 <= theirs.0)
                guard owner else { continue }
                var table = "Z_\(mine.0)\(relationship.name.uppercased())"
                let alternative = "Z_\(theirs.0)\(inverse.name.uppercased())"
                if let existingTables, !existingTables.contains(table.uppercased()), existingTables.contains(alternative.uppercased()) { table = alternative }
                // Each column is named by the entity number of the rows it holds and the relationship that reaches them.
                let ownColumn = "Z_\(mine.0)\(inverse.name.uppercased())"
                var otherColumn = "Z_\(theirs.0)\(relationship.name.uppercased())"
                if otherColumn == ownColumn { otherColumn += "1" }
                let purpose = "\(name).\(relationship.name)"
                var columns = [(ownColumn, "INTEGER", purpose, 0), (otherColumn, "INTEGER", purpose, 1)]
                let order: String? = relationship.isOrdered ? "Z_FOK_\(otherColumn.dropFirst(2))" : nil
                let otherOrder: String? = inverse.isOrdered && relationship.name != inverse.name ? "Z_FOK_\(ownColumn.dropFirst(2))" : nil
                if let order { columns.append((order, "INTEGER", "the order of \(purpose)", 2)) }
                if let otherOrder { columns.append((otherOrder, "INTEGER", "the order of \(declaring).\(inverse.name)", 3)) }
                tables[table] = Table(name: table, columns: columns, indexes: [("\(table)_\(otherColumn)_INDEX", [otherColumn, ownColumn])])
                toManyStorage[name]![relationship.name] = .join(
                    table: table, own: ownColumn, other: otherColumn, order: order, otherOrder: otherOrder, otherTable: tableName(relationship.destination))
                if relationship.name != inverse.name || name != declaring {
                    toManyStorage[declaring]![inverse.name] = .join(
                        table: table, own: otherColumn, other: ownColumn, order: otherOrder, otherOrder: order, otherTable: tableName(name))
                }
            }
        }
        // Sub-entities inherit join storage declared on ancestors after their own pass.
        for name in ordered {
            let entity = model.entity(named: name)!
            for ancestor in entity.ancestors.reversed() {
                for (relationship, storage) in toManyStorage[ancestor] ?? [:] where toManyStorage[name]?[relationship] == nil {
                    toManyStorage[name]![relationship] = storage
                }
            }
        }
        for (name, entity) in model.entityDescriptions.map({ ($0.name, $0) }) {
            for index in entity.declaration.indexes {
                let columns = index.elements.compactMap { attributeColumns[name]?[$0.property] ?? toOneColumns[name]?[$0.property]?.key }
                guard !columns.isEmpty else { continue }
                tables[tableName(name)]!.indexes.append(("Z_\(name)_\(index.name)", columns))
            }
            for properties in entity.declaration.uniquenessConstraints where !properties.isEmpty {
                let columns = properties.compactMap { attributeColumns[name]?[$0] ?? toOneColumns[name]?[$0]?.key }
                guard columns.count == properties.count else { continue }
                let kinds = entity.parent == nil ? nil : entity.kindNames.map { number[$0]! }.sorted()
                tables[tableName(name)]!.uniqueIndexes.append((UniquenessConstraint(entity: name, properties: properties).indexName, columns, kinds))
            }
        }
        var entities: [String: Entity] = [:]
        for name in ordered {
            let description = model.entity(named: name)!
            entities[name] = Entity(
                name: name, number: number[name]!, superNumber: description.parent.map { number[$0]! } ?? 0,
                table: tableName(name), kinds: description.kindNames.map { number[$0]! }.sorted(),
                attributes: attributeColumns[name]!, toOne: toOneColumns[name]!, toMany: toManyStorage[name]!)
        }
        self.entities = entities
        self.byNumber = Dictionary(uniqueKeysWithValues: number.map { ($1, $0) })
        self.tables = tables
        self.ordered = ordered
    }

    private static func declaringEntity(of relationship: String, from entity: String, model: ManagedObjectModel) -> String {
        var current = model.entity(named: entity)!
        while let parent = current.parent, let p = model.entity(named: parent), p.relationshipsByName[relationship] != nil { current = p }
        return current.name
    }

    /// The statements that create the schema.
    var createStatements: [String] {
        var sql = [
            "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)",
            "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)",
            "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)",
        ]
        for table in tables.values.sorted(by: { $0.name < $1.name }) { sql += Self.createStatements(for: table) }
        return sql
    }

    /// The statements that create one table and its indexes.
    static func createStatements(for table: Table) -> [String] {
        let columns = table.columns.sorted { ($0.place, $0.name) < ($1.place, $1.name) }.map { "\(quote($0.name)) \($0.type)" }
        let primary = table.name.hasPrefix("Z_") ? ", PRIMARY KEY (\(quote(table.columns[0].name)), \(quote(table.columns[1].name)))" : ""
        let unique = table.uniqueIndexes.map { index in
            let columns = index.columns.map { "\(quote($0)) COLLATE BINARY ASC" }.joined(separator: ", ")
            let partial = index.kinds.map { " WHERE Z_ENT IN (\($0.map(String.init).joined(separator: ", ")))" } ?? ""
            return "CREATE UNIQUE INDEX \(quote(index.name)) ON \(quote(table.name)) (\(columns))\(partial)"
        }
        return ["CREATE TABLE \(quote(table.name)) (\(columns.joined(separator: ", "))\(primary))"]
            + table.indexes.map { createStatement(for: $0, on: table.name) } + unique
    }

    /// The statement that creates one index of `table`.
    static func createStatement(for index: (name: String, columns: [String]), on table: String) -> String {
        "CREATE INDEX \(quote(index.name)) ON \(quote(table)) (\(index.columns.map(quote).joined(separator: ", ")))"
    }
}

/// What an existing store's file says about its layout: `Z_PRIMARYKEY`'s entity numbers
/// and every table's columns (names upper-cased: SQL identifiers ignore case).
struct SQLiteFileLayout {
    var entities: [(number: Int, name: String, superNumber: Int)]
    var columns: [String: Set<String>]
    /// `TABLE.COLUMN` (upper-cased) of every column declared with TEXT affinity for a decimal
    /// (`DECIMAL TEXT`, how earlier versions of this library declared decimal columns).
    var textColumns: Set<String> = []

    static func read(from connection: SQLiteConnection, url: URL) throws -> SQLiteFileLayout {
        var entities: [(number: Int, name: String, superNumber: Int)] = []
        let rows = try connection.statement("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT").rows { row in
            (row.column(0), row.column(1), row.column(2))
        }
        for (number, name, superNumber) in rows {
            guard case .integer(let number) = number, number > 0, case .text(let name) = name,
                  case .integer(let superNumber) = superNumber, superNumber >= 0 else {
                throw StoreError(.corrupt, "Z_PRIMARYKEY has a row that is not an entity number, a name and a parent number", url: url)
            }
            guard !entities.contains(where: { $0.name == name }) else { throw StoreError(.corrupt, "Z_PRIMARYKEY names entity \(name) twice", url: url) }
            entities.append((Int(number), name, Int(superNumber)))
        }
        var columns: [String: Set<String>] = [:]
        let pairs = try connection.statement(
            "SELECT m.name, p.name, p.type FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table'").rows { row in
            (row.column(0), row.column(1), row.column(2))
        }
        var textColumns: Set<String> = []
        for case (.text(let table), .text(let column), let type) in pairs {
            columns[table.uppercased(), default: []].insert(column.uppercased())
            if case .text(let declared) = type, declared.uppercased().contains("TEXT") { textColumns.insert("\(table.uppercased()).\(column.uppercased())") }
        }
        return SQLiteFileLayout(entities: entities, columns: columns, textColumns: textColumns)
    }
}

/// Quotes an SQL identifier.
func quote(_ identifier: String) -> String {
    guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
    return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
