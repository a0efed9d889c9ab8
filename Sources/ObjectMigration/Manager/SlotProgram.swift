import ObjectModel
import ObjectStore

/// An entity mapping compiled once into a program from source slots to destination slots,
/// so phase 1 turns a batch of source objects into a batch of destination objects without a
/// record per object. Only mappings the default policy runs and whose objects keep their
/// keys compile (``MigrationContext`` calls them implicit); an expression other than a copy
/// or a constant is evaluated on a record of its source object, built only for the rows
/// such an expression reads.
///
/// It does what ``MigrationContext/insertMappedDestination(for:mapping:)`` does for one
/// record: an attribute the mapping leaves out takes its default, a copied nil stays nil
/// unless the attribute is required and has a default, values are coerced to the
/// destination's type, and the to-one relationships whose targets keep their keys are set.
struct SlotProgram {
    private enum Argument {
        case slot(Int)
        case constant(Value?)
    }

    private enum Source {
        /// A source attribute slot, and whether its value needs coercing to the destination type.
        case copy(Int, coercing: Bool)
        case given(MappingExpression)
        /// A standard function of source attribute slots and constants, called on the values.
        case call(String, [Argument])
        /// No source value to copy: the destination's default (already coerced).
        case absent(Value?)
    }

    let mapping: EntityMapping
    let destination: EntityDescription
    private let attributes: [Source]
    /// Destination to-one slot, source to-one slot.
    private let toOne: [(destination: Int, source: Int)]
    /// The destination to-one relationships copied as they are, with the source's names.
    let toOneNames: [(destination: String, source: String)]
    private let needsRecord: Bool
    /// Per destination slot: its type, and the value a copied nil becomes (the default of a
    /// required attribute). Read per row without copying the attribute's description.
    private let types: [AttributeType]
    private let nilBecomes: [Value?]
    /// The destination slots whose rules a value can break (required, or with validation rules).
    private let checked: [(slot: Int, attribute: Attribute)]
    /// Whether every stored attribute and to-one relationship is copied unchanged from the
    /// source's property of the same name (no coercion, expression or default) and every
    /// to-many relationship from the source's of the same name: the objects move as they are.
    let copiesAsIs: Bool

    /// Nil when the mapping needs the record path (a policy, new keys, a filter, or
    /// something the record path reports as an error).
    init?(_ m: EntityMapping, context: MigrationContext) {
        guard context.isImplicit(m), let s = m.sourceEntity, let d = m.destinationEntity,
              let source = context.sourceModel.entity(named: s), let destination = context.destinationModel.entity(named: d),
              !source.isAbstract, !destination.isAbstract else { return nil }
        let layout = destination.layout
        // A mapping naming no stored destination attribute: the record path names the mistake.
        guard m.attributeMappings.keys.allSatisfy({ layout.attributeSlot($0) != nil }) else { return nil }
        var attributes: [Source] = []
        for attribute in layout.attributes {
            switch m.attributeMappings[attribute.name] {
            case nil:
                // A default that does not coerce: the record path names the mistake.
                let value = attribute.defaultValue.map(attribute.type.coerce)
                if case .some(nil) = value { return nil }
                attributes.append(.absent(value ?? nil))
            case .source(let path)? where !path.contains(".") && source.layout.attributeSlot(path) != nil:
                let slot = source.layout.attributeSlot(path)!
                attributes.append(.copy(slot, coercing: source.layout.attributes[slot].type != attribute.type))
            case .call(let name, let arguments)? where arguments.allSatisfy({ Self.argument($0, source.layout) != nil }):
                attributes.append(.call(name, arguments.map { Self.argument($0, source.layout)! }))
            case let expression?:
                attributes.append(.given(expression))
            }
        }
        var toOne: [(Int, Int)] = []
        for (name, path) in context.phaseOneRelationships(of: m) {
            guard let to = layout.toOneSlot(name), let from = source.layout.toOneSlot(path) else { return nil }
            toOne.append((to, from))
        }
        self.mapping = m
        self.destination = destination
        self.attributes = attributes
        self.toOne = toOne
        toOneNames = toOne.map { (layout.toOne[$0.0].name, source.layout.toOne[$0.1].name) }
        types = layout.attributes.map(\.type)
        nilBecomes = layout.attributes.map { $0.isOptional ? nil : $0.defaultValue }
        checked = layout.attributes.enumerated().filter { !$0.element.isOptional || $0.element.validation != ValidationRules() }
            .map { ($0.offset, $0.element) }
        needsRecord = attributes.contains { if case .given = $0 { true } else { false } }
        copiesAsIs = s == d && zip(attributes, layout.attributes).allSatisfy { compiled, attribute in
            if case .copy(let slot, coercing: false) = compiled { source.layout.attributes[slot].name == attribute.name } else { false }
        } && toOne.count == layout.toOne.count && toOne.allSatisfy { layout.toOne[$0.0].name == source.layout.toOne[$0.1].name }
            && destination.storedRelationships.filter(\.isToMany).allSatisfy { relationship in
                if case .source(relationship.name)? = m.relationshipMappings[relationship.name] { true } else { false }
            }
    }

    /// A function argument read from a source slot or given as a constant, or nil.
    private static func argument(_ expression: MappingExpression, _ layout: EntityLayout) -> Argument? {
        switch expression {
        case .constant(let value): .constant(value)
        case .source(let path) where !path.contains("."): layout.attributeSlot(path).map(Argument.slot)
        default: nil
        }
    }

    /// What went wrong with one source object: the manager reports it as it reports a
    /// failure of the record path, naming the object.
    struct ObjectFailure: Error {
        let source: ObjectKey
        let error: any Error
    }

    /// The destination objects of a batch of source objects, each keeping its source key;
    /// the rules their attributes break are added to `failures` (phase 3 then reads only
    /// what needs the finished graph).
    /// - Throws: ``ObjectFailure``.
    func run(_ batch: RecordBatch, context: MigrationContext, failures: inout [ValidationFailure]) throws -> RecordBatch {
        var out = RecordBatch(entity: destination, capacity: batch.count)
        var targets: [String: String] = [:]   // source entity → destination entity of the objects made from it
        for row in 0..<batch.count {
            let key = batch.key(at: row)
            // The object keeps its key, so it keeps its version (Core Data's `Z_OPT`) too.
            let r = out.appendRow(primaryKey: key.primaryKey, version: batch.versions[row])
            do {
                try fill(row: r, of: &out, from: batch, row: row, context: context)
            } catch {
                throw ObjectFailure(source: key, error: error)
            }
            // An optional attribute without rules has nothing to break but its type, which filling checked.
            for (slot, attribute) in checked {
                for (rule, message) in ObjectValidator.check(attribute, out[r, attribute: slot]) {
                    let id = context.destinationStore.objectID(for: ObjectKey(destination.name, key.primaryKey))
                    failures.append(ValidationFailure(objectID: id, property: attribute.name, rule: rule, message: message))
                }
            }
            for link in toOne {
                guard let target = batch[row, toOne: link.source] else { continue }
                if targets[target.entity] == nil { targets[target.entity] = context.destinationEntity(madeFrom: target.entity) }
                guard let into = targets[target.entity] else { continue }
                out[r, toOne: link.destination] = ObjectKey(into, target.primaryKey)
            }
        }
        // Each row's order key in its to-one target's ordered list, as the source read it: one
        // destination row per source row, and the target keeps its key.
        for (to, from) in toOneNames { if let keys = batch.inverseOrderKeys[from] { out.setInverseOrderKeys(to, keys) } }
        return out
    }

    /// The attributes of one destination object.
    private func fill(row r: Int, of out: inout RecordBatch, from batch: RecordBatch, row: Int, context: MigrationContext) throws {
        let record = needsRecord ? batch.record(at: row) : nil
        for (slot, source) in attributes.enumerated() {
            let given: Value?
            var coercing = true
            switch source {
            case .absent(let value):
                out[r, attribute: slot] = value
                continue
            case .copy(let from, let coerce):
                given = batch[row, attribute: from]
                coercing = coerce
            case .given(let expression):
                given = try context.value(of: expression, on: record!)
            case .call(let name, let arguments):
                given = try MappingFunctions.call(name, arguments.map { argument in
                    switch argument {
                    case .slot(let from): batch[row, attribute: from]
                    case .constant(let value): value
                    }
                })
            }
            // A copied nil stays nil, unless the attribute is required and has a default.
            guard let value = given ?? nilBecomes[slot] else { continue }
            guard coercing else { out[r, attribute: slot] = value; continue }
            guard let coerced = types[slot].coerce(value) else {
                throw MigrationError(.expression, "\(destination.name).\(destination.layout.attributes[slot].name): \(value.kindName) \(value) "
                                     + "is not a valid \(types[slot].modelName)")
            }
            out[r, attribute: slot] = coerced
        }
    }
}
