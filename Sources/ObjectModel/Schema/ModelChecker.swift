import Foundation

/// The consistency rules of a model, each producing one sentence per problem.
enum ModelChecker {
    /// Problems visible from the declarations alone: names, parents, cycles,
    /// destinations, duplicate properties in a hierarchy, default values.
    static func problems(entities: [Entity], configurations: [String: [String]]) -> [String] {
        var problems: [String] = []
        var declared: [String: Entity] = [:]
        var folded: [String: String] = [:]
        for entity in entities {
            if entity.name.isEmpty {
                problems.append("an entity has an empty name")
            } else if !(entity.name.unicodeScalars.first.map { CharacterSet.letters.contains($0) } ?? false) {
                // As in Core Data; it also keeps entity tables clear of Z_METADATA, Z_PRIMARYKEY, Z_MODELCACHE and join tables.
                problems.append("entity \(entity.name): a name must start with a letter")
            }
            if declared[entity.name] != nil {
                problems.append("entity \(entity.name) is declared twice")
            } else {
                declared[entity.name] = entity
                // Stores name tables by the upper-cased entity name: two names that differ only in case would share one.
                if let other = folded[entity.name.uppercased()] {
                    problems.append("entities \(other) and \(entity.name) differ only in case, and a store would give them one table")
                }
                folded[entity.name.uppercased()] = entity.name
            }
        }
        if entities.isEmpty { problems.append("the model has no entities") }

        var cyclic: Set<String> = []
        for entity in entities {
            guard let parent = entity.parent else { continue }
            guard declared[parent] != nil else {
                problems.append("\(entity.name): parent entity \(parent) does not exist")
                continue
            }
            var seen: Set<String> = [entity.name]
            var current: String? = parent
            while let name = current, let next = declared[name] {
                if seen.contains(name) {
                    problems.append("\(entity.name): inheritance cycle through \(name)")
                    cyclic.insert(entity.name)
                    break
                }
                seen.insert(name)
                current = next.parent
            }
        }

        for entity in entities {
            var inherited: [String: String] = [:]  // property name -> declaring entity
            if !cyclic.contains(entity.name) {
                var current = entity.parent.flatMap { declared[$0] }
                while let ancestor = current {
                    for name in propertyNames(ancestor) where inherited[name] == nil { inherited[name] = ancestor.name }
                    current = ancestor.parent.flatMap { declared[$0] }
                }
            }
            var own: Set<String> = []
            for name in propertyNames(entity) {
                if name.isEmpty {
                    problems.append("\(entity.name): a property has an empty name")
                } else if !(name.unicodeScalars.first.map { CharacterSet.letters.contains($0) } ?? false) {
                    problems.append("\(entity.name).\(name): a name must start with a letter")
                }
                if !own.insert(name).inserted {
                    problems.append("\(entity.name).\(name): declared twice")
                } else if let ancestor = inherited[name] {
                    problems.append("\(entity.name).\(name): already declared by ancestor \(ancestor)")
                }
            }
            for attribute in entity.attributes {
                problems += attributeProblems(attribute, in: entity.name)
            }
            for relationship in entity.relationships {
                let place = "\(entity.name).\(relationship.name)"
                if declared[relationship.destination] == nil {
                    problems.append("\(place): destination entity \(relationship.destination) does not exist")
                }
                if relationship.minCount < 0 || relationship.maxCount < 0 {
                    problems.append("\(place): negative minimum or maximum count")
                } else if relationship.minCount > Int(Int32.max) || relationship.maxCount > Int(Int32.max) {
                    // Core Data keeps counts in 32 bits, and hashes them so.
                    problems.append("\(place): a minimum or maximum count above \(Int32.max) (Core Data keeps counts in 32 bits)")
                } else if relationship.maxCount > 0 && relationship.minCount > relationship.maxCount {
                    problems.append("\(place): minimum count \(relationship.minCount) exceeds maximum \(relationship.maxCount)")
                }
                if !relationship.isToMany && relationship.maxCount != 1 {
                    problems.append("\(place): a to-one relationship must have maximum count 1")
                }
            }
        }
        for (configuration, names) in configurations.sorted(by: { $0.key < $1.key }) {
            for name in names where declared[name] == nil {
                problems.append("configuration \(configuration): entity \(name) does not exist")
            }
        }
        return problems
    }

    /// Problems that need the resolved hierarchy: inverses, constraints and indexes.
    static func relationshipProblems(_ entities: [String: EntityDescription]) -> [String] {
        var problems: [String] = []
        for entity in entities.values.sorted(by: { $0.name < $1.name }) {
            for relationship in entity.declaration.relationships {
                guard let inverseName = relationship.inverse else { continue }
                let place = "\(entity.name).\(relationship.name)"
                guard let destination = entities[relationship.destination] else { continue }
                guard let inverse = destination.relationshipsByName[inverseName] else {
                    problems.append("\(place): inverse \(inverseName) does not exist on \(destination.name)")
                    continue
                }
                if !entity.isKind(of: inverse.destination) {
                    problems.append(
                        "\(place): inverse \(destination.name).\(inverseName) points to \(inverse.destination), not back to \(entity.name)")
                } else if let back = inverse.inverse, back != relationship.name {
                    problems.append(
                        "\(place): inverse \(destination.name).\(inverseName) names \(back) as its inverse, not \(relationship.name)")
                }
            }
            for constraint in entity.declaration.uniquenessConstraints {
                for name in constraint {
                    if let attribute = entity.attributesByName[name] {
                        if attribute.isTransient { problems.append("\(entity.name): uniqueness constraint names transient attribute \(name)") }
                    } else if let relationship = entity.relationshipsByName[name] {
                        if relationship.isToMany || relationship.isTransient {
                            problems.append("\(entity.name): uniqueness constraint names \(relationship.isToMany ? "to-many" : "transient") relationship \(name) (only stored attributes and to-one relationships)")
                        }
                    } else {
                        problems.append("\(entity.name): uniqueness constraint names unknown property \(name)")
                    }
                }
            }
            for index in entity.declaration.indexes {
                for element in index.elements
                where entity.attributesByName[element.property] == nil && entity.relationshipsByName[element.property] == nil {
                    problems.append("\(entity.name): index \(index.name) names unknown property \(element.property)")
                }
            }
        }
        return problems
    }

    private static func propertyNames(_ entity: Entity) -> [String] {
        entity.attributes.map(\.name) + entity.relationships.map(\.name)
    }

    private static func attributeProblems(_ attribute: Attribute, in entity: String) -> [String] {
        let place = "\(entity).\(attribute.name)"
        var problems: [String] = []
        if (attribute.type == .undefined || attribute.type == .objectID) && !attribute.isTransient {
            problems.append("\(place): type \(attribute.type.modelName) is only allowed on a transient attribute")
        }
        if let value = attribute.defaultValue, !attribute.type.accepts(value) {
            problems.append("\(place): default value \(value) (\(value.kindName)) is not a valid \(attribute.type.modelName)")
        }
        let rules = attribute.validation
        for (label, limit) in [("minimum", rules.minValue), ("maximum", rules.maxValue)] {
            guard let limit else { continue }
            let comparable = attribute.type.isNumeric || attribute.type == .date
            if !comparable || !(attribute.type.accepts(limit) || (attribute.type.isNumeric && limit.numericValue != nil)) {
                problems.append("\(place): \(label) value \(limit) does not apply to \(attribute.type.modelName)")
            }
        }
        if let minLength = rules.minLength, let maxLength = rules.maxLength, minLength > maxLength {
            problems.append("\(place): minimum length \(minLength) exceeds maximum length \(maxLength)")
        }
        if let pattern = rules.pattern, (try? NSRegularExpression(pattern: pattern)) == nil {
            problems.append("\(place): regular expression \(String(reflecting: pattern)) does not compile")
        }
        return problems
    }
}
