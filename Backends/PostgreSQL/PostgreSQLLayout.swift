import Foundation
import ObjectModel
import ObjectStore

/// Where a PostgreSQL store is: the libpq connection URI (without `schema`) and the schema
/// its tables live in.
///
/// `postgresql://user@host:5432/db?schema=books`, `postgres:///db?host=/run/postgresql`; the
/// `schema` and `pool` query parameters are ours (libpq does not know them): `schema` defaults to
/// `public`, `pool` (the most connections an open store uses at once) to 8.
struct PostgreSQLLocation: Sendable, Hashable {
    let url: URL
    /// The URI libpq connects with: the store's URL without `schema` and `pool`.
    let conninfo: String
    /// The schema the store's tables are in.
    let schema: String
    /// The most connections an open store uses at once (`pool=`, 1 to 64).
    let poolSize: Int

    /// The connections a store uses at most when the URL does not say.
    static let defaultPoolSize = 8

    /// Whether `url` names a PostgreSQL store (`postgresql://` or `postgres://`).
    static func isPostgreSQL(_ url: URL) -> Bool {
        let scheme = url.scheme?.lowercased()
        return scheme == "postgresql" || scheme == "postgres"
    }

    init(_ url: URL) throws {
        guard Self.isPostgreSQL(url) else {
            throw StoreError(.notFound, "a PostgreSQL store is named by a postgresql:// or postgres:// URL", url: url)
        }
        self.url = url
        let text = url.absoluteString
        guard let mark = text.firstIndex(of: "?") else {
            conninfo = text
            schema = "public"
            poolSize = Self.defaultPoolSize
            return
        }
        var kept: [Substring] = []
        var schemas: [String] = []
        var pools: [Substring] = []
        for item in text[text.index(after: mark)...].split(separator: "&") {
            if item.hasPrefix("schema=") {
                schemas.append(String(item.dropFirst(7)).removingPercentEncoding ?? String(item.dropFirst(7)))
            } else if item.hasPrefix("pool=") {
                pools.append(item.dropFirst(5))
            } else {
                kept.append(item)
            }
        }
        guard schemas.count <= 1 else {
            throw StoreError(.invalidInput, "the URL names schema= \(schemas.count) times (\(schemas.joined(separator: ", "))): name one", url: url)
        }
        let schema = schemas.first ?? "public"
        guard !schema.isEmpty, schema.utf8.count <= 63 else {
            throw StoreError(.invalidInput, "the schema name must be 1 to 63 bytes", url: url)
        }
        // PostgreSQL's own: its catalogs, and every name starting with pg_, which it reserves.
        guard schema != "information_schema", !schema.hasPrefix("pg_") else {
            throw StoreError(.invalidInput, "schema=\(schema) is reserved by PostgreSQL for its own catalogs: name a schema of your own", url: url)
        }
        self.schema = schema
        guard pools.count <= 1, let size = Int(pools.first ?? "\(Self.defaultPoolSize)"), (1...64).contains(size) else {
            throw StoreError(.invalidInput, "pool= takes one number of connections, 1 to 64 (\(pools.joined(separator: ", ")))", url: url)
        }
        poolSize = size
        conninfo = String(text[..<mark]) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
    }

    /// The schema, quoted.
    var quotedSchema: String { PGConnection.quote(schema) }

    /// A relation of the store's schema, quoted and qualified.
    func qualified(_ name: String) -> String { quotedSchema + "." + PGConnection.quote(name) }
}

/// How the model maps to tables (docs/postgresql-layout.md): one table per inheritance root with
/// typed columns, to-one columns, order columns, join tables for to-many sides that have no to-one
/// inverse, one key sequence per root.
struct PostgreSQLLayout: Sendable {
    static let metadataTable = "objectstore_metadata"
    static let relationsTable = "objectstore_relations"

    /// How one to-many side is stored.
    enum ToMany: Sendable {
        /// Read from the members' to-one column (and their order column, for an ordered side).
        case inverseColumn(table: String, column: String, entityColumn: String, orderColumn: String?)
        /// A join table of its own: `owner`, `member`, `member_entity`, `position`.
        case joinTable(String)
    }

    /// One entity's columns.
    struct EntityColumns: Sendable {
        let entity: EntityDescription
        /// The root's table name (unqualified).
        let table: String
        /// A column per stored attribute, in ``EntityLayout`` slot order.
        let attributes: [String]
        /// A key column and an entity column per stored to-one, in slot order.
        let toOne: [(key: String, entity: String)]
        /// Per stored to-one, in slot order, the column of the member's order key when its inverse
        /// is an ordered to-many.
        let toOneOrder: [String?]
        /// Stored to-many sides by name.
        let toMany: [String: ToMany]
    }

    let model: ManagedObjectModel
    let entities: [String: EntityColumns]
    /// Every relation the store creates, with its DDL, in creation order: (kind, name, statements).
    let relations: [(kind: String, name: String, ddl: [String])]
    /// The indexes of the tables of ``relations`` beyond their primary keys: made with the tables,
    /// or, for a store filled in one go, once its bulk load is done (``PostgreSQLStore``).
    let indexes: [Index]
    /// Each root table's columns after `pk`, `entity` and `version`, with their types.
    let tableColumns: [String: [(name: String, type: String)]]
    /// The join tables (of ``relations``).
    let joinTables: Set<String>

    /// An index beyond a table's primary key.
    struct Index: Sendable {
        /// The table (unqualified).
        let table: String
        /// Its columns, each with `DESC` when descending.
        let keys: [(column: String, descending: Bool)]
        /// The statement that makes it.
        let statement: String

        init(_ location: PostgreSQLLocation, _ table: String, _ keys: [(column: String, descending: Bool)]) {
            self.table = table
            self.keys = keys
            statement = "CREATE INDEX ON \(location.qualified(table)) ("
                + keys.map { PGConnection.quote($0.column) + ($0.descending ? " DESC" : "") }.joined(separator: ", ") + ")"
        }

        /// What tells two indexes apart: the table and the keys, as ``PostgreSQLSchemaChange`` reads them from the catalog.
        var signature: String { table + "\u{1F}" + keys.map { $0.column + ($0.descending ? " DESC" : "") }.joined(separator: "\u{1F}") }
    }

    /// A table of a hierarchy: its columns by (declaring entity, property) and their types.
    private struct HierarchyTable {
        var columns: [(name: String, type: String)] = []
        var byProperty: [String: String] = [:]   // "<declaring entity>\0<property>" → column
        var used: Set<String> = ["pk", "entity", "version"]

        mutating func add(_ base: String, _ type: String, for property: String) -> String {
            if let column = byProperty[property] { return column }
            var name = PostgreSQLLayout.identifier(base)
            var n = 2
            while used.contains(name) { name = PostgreSQLLayout.identifier("\(base)_\(n)"); n += 1 }
            used.insert(name)
            columns.append((name, type))
            byProperty[property] = name
            return name
        }
    }

    init(model: ManagedObjectModel, location: PostgreSQLLocation) {
        self.model = model
        let descriptions = model.entityDescriptions
        // The entity that declares a property: the highest ancestor that has it.
        func declaring(_ entity: EntityDescription, _ name: String, attribute: Bool) -> String {
            var owner = entity.name
            for ancestor in entity.ancestors {
                guard let parent = model.entity(named: ancestor) else { break }
                let has = attribute ? parent.attributesByName[name] != nil : parent.relationshipsByName[name] != nil
                if has { owner = ancestor } else { break }
            }
            return owner
        }
        var tables: [String: HierarchyTable] = [:]
        var joinTables: [String: String] = [:]   // "<declaring entity>\0<relationship>" → table
        var relations = PostgreSQLHistory.relations(location)
        var usedNames: Set<String> = [Self.metadataTable, Self.relationsTable]
        for root in descriptions where root.parent == nil {
            usedNames.insert(Self.identifier(root.name))
            usedNames.insert(Self.identifier(root.name + "__pk"))
        }
        // Columns, root first within each hierarchy (an inherited property has its ancestor's column).
        for entity in descriptions.sorted(by: { $0.ancestors.count < $1.ancestors.count }) {
            var table = tables[entity.rootName, default: HierarchyTable()]
            for attribute in entity.storedAttributes {
                let owner = declaring(entity, attribute.name, attribute: true)
                _ = table.add(attribute.name, Self.columnType(attribute.type), for: owner + "\0a\0" + attribute.name)
            }
            for relationship in entity.storedRelationships where !relationship.isToMany {
                let owner = declaring(entity, relationship.name, attribute: false)
                let property = owner + "\0r\0" + relationship.name
                _ = table.add(relationship.name, "bigint", for: property)
                _ = table.add(relationship.name + "_entity", "text", for: property + "\0entity")
                if let inverse = relationship.inverse, let back = model.entity(named: relationship.destination)?.relationshipsByName[inverse],
                   back.isToMany, back.isOrdered {
                    _ = table.add(relationship.name + "_order", "bigint", for: property + "\0order")
                }
            }
            tables[entity.rootName] = table
        }
        for entity in descriptions {
            for relationship in entity.storedRelationships where relationship.isToMany {
                let owner = declaring(entity, relationship.name, attribute: false)
                let key = owner + "\0" + relationship.name
                guard joinTables[key] == nil else { continue }
                let inverse = relationship.inverse.flatMap { model.entity(named: relationship.destination)?.relationshipsByName[$0] }
                if inverse.map({ !$0.isToMany && !$0.isTransient }) == true { continue }
                var name = Self.identifier(owner + "__" + relationship.name)
                var n = 2
                while usedNames.contains(name) { name = Self.identifier("\(owner)__\(relationship.name)_\(n)"); n += 1 }
                usedNames.insert(name)
                joinTables[key] = name
            }
        }
        var entities: [String: EntityColumns] = [:]
        for entity in descriptions {
            let table = tables[entity.rootName]!
            let attributes = entity.layout.attributes.map {
                table.byProperty[declaring(entity, $0.name, attribute: true) + "\0a\0" + $0.name]!
            }
            let toOne = entity.layout.toOne.map { relationship -> (key: String, entity: String) in
                let property = declaring(entity, relationship.name, attribute: false) + "\0r\0" + relationship.name
                return (table.byProperty[property]!, table.byProperty[property + "\0entity"]!)
            }
            let toOneOrder = entity.layout.toOne.map { relationship in
                table.byProperty[declaring(entity, relationship.name, attribute: false) + "\0r\0" + relationship.name + "\0order"]
            }
            var toMany: [String: ToMany] = [:]
            for relationship in entity.storedRelationships where relationship.isToMany {
                let owner = declaring(entity, relationship.name, attribute: false)
                if let join = joinTables[owner + "\0" + relationship.name] {
                    toMany[relationship.name] = .joinTable(join)
                } else if let destination = model.entity(named: relationship.destination), let inverseName = relationship.inverse {
                    let inverseOwner = declaring(destination, inverseName, attribute: false)
                    let memberTable = tables[destination.rootName]!
                    let property = inverseOwner + "\0r\0" + inverseName
                    toMany[relationship.name] = .inverseColumn(
                        table: Self.identifier(destination.rootName), column: memberTable.byProperty[property]!,
                        entityColumn: memberTable.byProperty[property + "\0entity"]!,
                        orderColumn: relationship.isOrdered ? memberTable.byProperty[property + "\0order"] : nil)
                }
            }
            entities[entity.name] = EntityColumns(entity: entity, table: Self.identifier(entity.rootName), attributes: attributes,
                                                  toOne: toOne, toOneOrder: toOneOrder, toMany: toMany)
        }
        self.entities = entities

        // DDL: each root's table and sequence, indexes for every to-one and fetch index, join tables.
        var indexes: [Index] = []
        var tableColumns: [String: [(name: String, type: String)]] = [:]
        for root in descriptions where root.parent == nil {
            let name = Self.identifier(root.name)
            let table = tables[root.name]!
            tableColumns[name] = table.columns
            let qualified = location.qualified(name)
            let ddl = ["CREATE TABLE \(qualified) (pk bigint PRIMARY KEY, entity text NOT NULL, version bigint NOT NULL"
                       + table.columns.map { ", \(PGConnection.quote($0.name)) \($0.type)" }.joined() + ")"]
            // (entity, pk): one entity's rows in key order, what scans and counts ask, answered by the
            // index alone whatever statistics the planner has (none, right after a bulk load).
            indexes.append(Index(location, name, [("entity", false), ("pk", false)]))
            for (column, type) in table.columns where type == "bigint" && table.columns.contains(where: { $0.name == column + "_entity" }) {
                indexes.append(Index(location, name, [(column, false)]))
            }
            for entity in descriptions where entity.rootName == root.name {
                for index in entity.declaration.indexes {
                    let keys = index.elements.compactMap { element -> (column: String, descending: Bool)? in
                        guard let slot = entity.layout.attributeSlot(element.property) else {
                            return entity.layout.toOneSlot(element.property).map { (entities[entity.name]!.toOne[$0].key, false) }
                        }
                        return (entities[entity.name]!.attributes[slot], !element.ascending)
                    }
                    if !keys.isEmpty { indexes.append(Index(location, name, keys)) }
                }
            }
            relations.append(("table", name, ddl))
            let sequence = Self.identifier(root.name + "__pk")
            relations.append(("sequence", sequence, ["CREATE SEQUENCE \(location.qualified(sequence)) MINVALUE 0 START 0"]))
        }
        for name in Set(joinTables.values).sorted() {
            let qualified = location.qualified(name)
            relations.append(("table", name, [
                "CREATE TABLE \(qualified) (owner bigint NOT NULL, member bigint NOT NULL, member_entity text NOT NULL, "
                    + "position bigint NOT NULL, PRIMARY KEY (owner, member))",
            ]))
            indexes.append(Index(location, name, [("member", false)]))
        }
        self.relations = relations
        self.indexes = indexes
        self.tableColumns = tableColumns
        self.joinTables = Set(joinTables.values)
    }

    /// The sequence of `root`'s keys.
    static func sequence(_ root: String) -> String { identifier(root + "__pk") }

    /// The column type of an attribute type.
    static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64: "bigint"
        case .double, .float, .date: "double precision"
        case .decimal: "numeric"
        case .string, .uri: "text"
        case .boolean: "boolean"
        case .binaryData, .transformable, .undefined, .objectID: "bytea"
        case .uuid: "uuid"
        }
    }

    /// A name PostgreSQL keeps whole: at most 63 bytes (a longer one is cut and given a hash).
    static func identifier(_ name: String) -> String {
        guard name.utf8.count > 63 else { return name }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        var cut = ""
        for scalar in name.unicodeScalars {
            if cut.utf8.count + String(scalar).utf8.count > 46 { break }
            cut.unicodeScalars.append(scalar)
        }
        return cut + "_" + String(hash, radix: 16)
    }
}
