import Foundation
import ObjectModel

/// ObjectStore's JSON interchange format (`docs/json-format.md`): import a
/// document into a store, export a store as one.
///
/// The document is an object keyed by concrete entity name, each an array of
/// objects with an `"_id"` and their values; relationships name `_id`s. Export
/// is deterministic: exporting a store imported from an export gives the same bytes.
public enum JSONInterchange {
    /// What an export includes.
    public struct ExportOptions: Sendable {
        /// Only objects of this entity (and its sub-entities); nil for all.
        public var entity: String?
        /// Only objects matching this predicate.
        public var predicate: ObjectPredicate?
        /// Objects read per batch.
        public var batchSize: Int
        /// Whether transformable values that are keyed archives are shown as the JSON they
        /// hold (``KeyedArchive``) instead of their bytes in base64: for reading, not for `import`.
        public var decodeTransformables: Bool
        /// The order of a page of ``entity``'s objects (with ``limit`` and ``offset``): the store
        /// sorts, skips and limits as a fetch does (in SQL where it can). Empty, with no limit and
        /// no offset: every object, entity by entity in primary-key order.
        public var sortDescriptors: [ObjectSortDescriptor]
        /// At most this many objects (a page; needs ``entity``).
        public var limit: Int?
        /// Objects skipped before the page (needs ``entity``).
        public var offset: Int

        /// Creates options.
        public init(entity: String? = nil, predicate: ObjectPredicate? = nil, batchSize: Int = 1_000, decodeTransformables: Bool = false,
                    sortDescriptors: [ObjectSortDescriptor] = [], limit: Int? = nil, offset: Int = 0) {
            self.entity = entity
            self.predicate = predicate
            self.batchSize = batchSize
            self.decodeTransformables = decodeTransformables
            self.sortDescriptors = sortDescriptors
            self.limit = limit
            self.offset = offset
        }

        /// Whether the export is one page of a fetch (a sort, a limit or an offset).
        var isPage: Bool { !sortDescriptors.isEmpty || limit != nil || offset != 0 }
    }

    /// Writes a store as JSON, streaming it a batch at a time to `write`.
    ///
    /// Entities in name order, objects in primary-key order, keys sorted,
    /// `_id`s of the form `Entity/pk`, both sides of every relationship. A page
    /// (``ExportOptions/sortDescriptors``, ``ExportOptions/limit``, ``ExportOptions/offset``)
    /// holds the objects one fetch of ``ExportOptions/entity`` gives, each under its own
    /// entity, in the fetch's order.
    public static func export(_ store: any PersistentStore, options: ExportOptions = ExportOptions(),
                              write: (String) throws -> Void) throws {
        let model = store.model
        var names = model.entityDescriptions.filter { !$0.isAbstract }.map(\.name)
        if let only = options.entity {
            guard let entity = model.entity(named: only) else { throw StoreError(.invalidFetch, "no entity named \(only)") }
            names = names.filter { entity.kindNames.contains($0) }
        }
        // A predicate that does not apply is refused before the first byte is written.
        if let predicate = options.predicate {
            for name in names { try PredicateEvaluator.check(predicate, on: model.entity(named: name)!, in: model) }
        }
        // A page: one fetch, sorted, skipped and limited by the store.
        var page: [String: [ObjectRecord]]?
        if options.isPage {
            guard let entity = options.entity else {
                throw StoreError(.invalidFetch, "a sort, a limit or an offset pages the objects of one entity: name it")
            }
            guard options.limit.map({ $0 >= 0 }) ?? true, options.offset >= 0 else { throw StoreError(.invalidFetch, "a limit and an offset are 0 or more") }
            let records = try store.fetch(FetchRequest(entity: entity, predicate: options.predicate, sortDescriptors: options.sortDescriptors,
                                                       fetchLimit: options.limit, fetchOffset: options.offset))
            page = Dictionary(grouping: records, by: \.key.entity)
        }
        try write("{")
        var firstEntity = true
        for name in names.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let entity = model.entity(named: name)!
            var head = firstEntity ? "\n  " : ",\n  "
            JSONText.quote(name, into: &head)
            try write(head + ": [")
            firstEntity = false
            var firstObject = true
            // Without a page, the objects that match, a batch at a time (narrowed where the data is).
            let batches: AnySequence<Result<[ObjectRecord], any Error>> = page.map { page in AnySequence([.success(page[name] ?? [])]) }
                ?? AnySequence(options.predicate.map { store.batches(of: name, matching: $0, size: options.batchSize) }
                               ?? store.batches(of: name, size: options.batchSize))
            let toMany = entity.storedRelationships.filter(\.isToMany).map(\.name)
            for batch in batches {
                let records = try batch.get()
                // Each to-many side of the batch's objects in one read (a statement per batch on a server, not per object).
                var members: [String: [[ObjectKey]]] = [:]
                for name in toMany where !records.isEmpty {
                    members[name] = try store.orderedMembers(of: records.map(\.key), relationship: name).map(\.keys)
                }
                for (row, record) in records.enumerated() {
                    var entries: [(String, JSONText)] = [("_id", .string(id(record.key)))]
                    for attribute in entity.storedAttributes {
                        let value = record.attributes[attribute.name]
                        if options.decodeTransformables, attribute.type == .transformable, case .data(let bytes)? = value, KeyedArchive.isArchive(bytes) {
                            do {
                                entries.append((attribute.name, try KeyedArchive.decode(bytes)))
                            } catch let error as StoreError {
                                throw StoreError(.corrupt, "\(id(record.key)).\(attribute.name): the keyed archive cannot be read: \(error.message)", url: store.url)
                            }
                            continue
                        }
                        entries.append((attribute.name, JSONText.value(value)))
                    }
                    for relationship in entity.storedRelationships {
                        if relationship.isToMany {
                            let keys = members[relationship.name]?[row] ?? []
                            entries.append((relationship.name, .array(keys.map { .string(id($0)) })))
                        } else {
                            entries.append((relationship.name, record.toOne[relationship.name].map { .string(id($0)) } ?? .null))
                        }
                    }
                    var text = firstObject ? "\n    " : ",\n    "
                    JSONText.object(entries).write(to: &text, indent: 2)
                    try write(text)
                    firstObject = false
                }
            }
            try write(firstObject ? "]" : "\n  ]")
        }
        try write(firstEntity ? "}\n" : "\n}\n")
    }

    /// The whole export as one string.
    public static func exportString(_ store: any PersistentStore, options: ExportOptions = ExportOptions()) throws -> String {
        var out = ""
        try export(store, options: options) { out += $0 }
        return out
    }

    /// `Entity/pk`: an exported object's `_id`.
    public static func id(_ key: ObjectKey) -> String { key.description }

    /// A transaction as one line of JSON (`objectstore watch --json`, `history --json`):
    /// `{"author":…,"deleted":[…],"inserted":[…],"timestamp":…,"token":…,"updated":[…],"updatedProperties":{…}}`,
    /// objects as `_id`s, the timestamp in ISO 8601 (docs/observation.md).
    public static func json(of transaction: StoreTransaction) -> String {
        let ids: ([ObjectKey]) -> JSONText = { .array($0.map { .string(id($0)) }) }
        let document = JSONText.object([
            ("author", transaction.author.map(JSONText.string) ?? .null),
            ("deleted", ids(transaction.deleted)),
            ("inserted", ids(transaction.inserted)),
            ("timestamp", .string(ValueText.iso8601(transaction.timestamp))),
            ("token", .integer(transaction.token.value)),
            ("updated", ids(transaction.updated.map(\.key))),
            ("updatedProperties", .object(transaction.updated.map { (id($0.key), .array($0.properties.map(JSONText.string))) })),
        ])
        var out = ""
        document.write(to: &out, indent: -1)
        return out
    }

    /// The value `text` gives `attribute` (`objectstore update --set KEY=VALUE`): `null` clears
    /// it; a String attribute takes the text as it is (or, quoted, as a JSON string); any other
    /// type takes it as JSON (a number, `true`/`false`, a string) converted as import converts
    /// it (dates as ISO 8601, data as base64).
    /// - Throws: ``StoreError/Code/invalidInput`` naming the attribute, for text that does not fit it.
    public static func value(fromText text: String, for attribute: Attribute, place: String) throws -> Value? {
        if text == "null" { return nil }
        let fail = { (message: String) in StoreError(.invalidInput, message) }
        if attribute.type == .string, !(text.hasPrefix("\"") && text.hasSuffix("\"") && text.count >= 2) { return .string(text) }
        let raw: JSONValue
        do { raw = try JSONValue.parse(Data(text.utf8)) } catch { raw = .string(text) }
        return try Importer.value(raw, for: attribute, place: place, fail: fail)
    }

}
