import Foundation
import ObjectModel

/// A model, or the change between two models, as a Graphviz DOT graph (`objectstore model show
/// --dot`, `objectstore diff --dot`): each entity a table of its attributes, each relationship an
/// edge labelled with its name, cardinality and delete rule (a relationship and its inverse one
/// edge with a line for each: `Author.books [0..*] cascade`; a crow's foot at a to-many end, a
/// bar at a to-one end), each sub-entity a dashed edge with a hollow arrow to its parent.
///
/// In a diff, added parts are green, removed parts red (struck through), renamed parts blue
/// (`old → new`) and changed parts orange; unchanged parts are black.
public enum ModelGraph {
    /// How a part of a diff changed.
    enum Status {
        case unchanged, added, removed, renamed, changed

        /// How much of a change it is, to colour an edge by the larger of its two sides.
        var weight: Int {
            switch self {
            case .unchanged: 0
            case .changed: 1
            case .renamed: 2
            case .removed: 3
            case .added: 4
            }
        }

        var color: String {
            switch self {
            case .unchanged: "black"
            case .added: "#1a7f37"
            case .removed: "#cf222e"
            case .renamed: "#0550ae"
            case .changed: "#bc4c00"
            }
        }
    }

    /// One entity as drawn.
    struct Node {
        var name: String
        var title: String
        var status: Status
        var isAbstract: Bool
        var rows: [(text: String, status: Status)]
    }

    /// One relationship (with its inverse, when it has one) as drawn.
    struct Edge {
        var from: String
        var to: String
        /// The relationship's line (`Author.books [0..*] cascade`), and its inverse's.
        var head: String
        var tail: String?
        var headArrow: String
        var tailArrow: String
        var status: Status
    }

    /// The model as a DOT graph named `name`.
    public static func dot(_ model: ManagedObjectModel, name: String) -> String {
        let nodes = model.entities.map { entity in
            Node(name: entity.name, title: title(entity), status: .unchanged, isAbstract: entity.isAbstract,
                 rows: entity.attributes.map { (describe($0), .unchanged) })
        }
        return render(name: name, nodes: nodes, edges: edges(model.entities, status: { _, _ in .unchanged }),
                      parents: model.entities.compactMap { entity in entity.parent.map { (entity.name, $0, Status.unchanged) } })
    }

    /// The change from `source` to `destination` as one DOT graph: the destination's entities and
    /// the source's removed ones, every part coloured by how it changed.
    public static func dot(from source: ManagedObjectModel, to destination: ManagedObjectModel, name: String) -> String {
        let counterpart = MappingInference.counterparts(source, destination)
        let mappedFrom = Dictionary(counterpart.map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let diff = ModelDiff(from: source, to: destination)
        let changed = Set(diff.entities.filter { $0.status == "changed" }.map(\.entity))
        var nodes: [Node] = []
        // Relationship statuses by "<destination entity>.<name>" (removed ones by their source names).
        var relationshipStatus: [String: Status] = [:]
        // Old names of renamed relationships, by "<destination entity>.<name>".
        var formerNames: [String: String] = [:]
        for entity in destination.entities {
            guard let oldName = mappedFrom[entity.name], let old = source.entities.first(where: { $0.name == oldName }) else {
                nodes.append(Node(name: entity.name, title: title(entity), status: .added, isAbstract: entity.isAbstract,
                                  rows: entity.attributes.map { (describe($0), .added) }))
                for relationship in entity.relationships { relationshipStatus["\(entity.name).\(relationship.name)"] = .added }
                continue
            }
            let status: Status = oldName != entity.name ? .renamed : changed.contains(entity.name) ? .changed : .unchanged
            var rows: [(String, Status)] = []
            let id = MappingInference.identity as (Attribute) -> String
            for attribute in entity.attributes {
                guard let before = old.attributes.first(where: { id($0) == id(attribute) }) else {
                    rows.append((describe(attribute), .added))
                    continue
                }
                if before.name != attribute.name {
                    rows.append(("\(before.name) → \(describe(attribute))", .renamed))
                } else {
                    var same = before
                    same.renamingIdentifier = attribute.renamingIdentifier
                    rows.append((same == attribute ? describe(attribute) : "\(describe(attribute)) (was \(describeType(before)))",
                                 same == attribute ? .unchanged : .changed))
                }
            }
            // An attribute that moved to a parent is still the entity's: changed, not removed.
            let inherited = destination.entity(named: entity.name)?.attributes ?? []
            for attribute in old.attributes where !entity.attributes.contains(where: { id($0) == id(attribute) }) {
                let kept = inherited.contains { id($0) == id(attribute) }
                rows.append((describe(attribute) + (kept ? " (now inherited)" : ""), kept ? .changed : .removed))
            }
            let rid = MappingInference.identity as (Relationship) -> String
            for relationship in entity.relationships {
                let key = "\(entity.name).\(relationship.name)"
                guard let before = old.relationships.first(where: { rid($0) == rid(relationship) }) else {
                    relationshipStatus[key] = .added
                    continue
                }
                var same = before
                same.renamingIdentifier = relationship.renamingIdentifier
                same.destination = counterpart[before.destination] ?? before.destination
                relationshipStatus[key] = before.name != relationship.name ? .renamed : same == relationship ? .unchanged : .changed
                if before.name != relationship.name { formerNames[key] = before.name }
            }
            nodes.append(Node(name: entity.name, title: oldName != entity.name ? "\(oldName) → \(title(entity))" : title(entity),
                              status: status, isAbstract: entity.isAbstract, rows: rows))
        }
        // Removed entities, and relationships the destination no longer has, drawn from the source.
        var removedEdges: [Entity] = []
        for entity in source.entities {
            let rid = MappingInference.identity as (Relationship) -> String
            guard let newName = counterpart[entity.name] else {
                nodes.append(Node(name: entity.name, title: title(entity), status: .removed, isAbstract: entity.isAbstract,
                                  rows: entity.attributes.map { (describe($0), .removed) }))
                removedEdges.append(entity)
                continue
            }
            // What the entity has now, inherited relationships included (one that moved to a parent is kept).
            let now = destination.entity(named: newName)?.relationships ?? []
            var gone = entity
            gone.relationships = entity.relationships.filter { r in !now.contains { rid($0) == rid(r) } }
            gone.name = newName
            if !gone.relationships.isEmpty { removedEdges.append(gone) }
        }
        let names = Set(nodes.map(\.name))
        let removed = edges(removedEdges, status: { _, _ in .removed }).map { edge in
            // A removed relationship to an entity that is still there points at its new name.
            var edge = edge
            if !names.contains(edge.to), let renamed = counterpart[edge.to] { edge.to = renamed }
            return edge
        }
        let kept = edges(destination.entities, status: { entity, relationship in relationshipStatus["\(entity).\(relationship)"] ?? .unchanged },
                         formerName: { entity, relationship in formerNames["\(entity).\(relationship)"] })
        var parents: [(String, String, Status)] = destination.entities.compactMap { entity in
            guard let parent = entity.parent else { return nil }
            let old = mappedFrom[entity.name].flatMap { name in source.entities.first { $0.name == name }?.parent }
            return (entity.name, parent, old.map { counterpart[$0] ?? $0 } == parent ? .unchanged : .added)
        }
        parents += source.entities.compactMap { entity in
            guard let parent = entity.parent else { return nil }
            let child = counterpart[entity.name] ?? entity.name, newParent = counterpart[parent] ?? parent
            let now = destination.entities.first { $0.name == child }?.parent
            return now == newParent ? nil : (child, names.contains(newParent) ? newParent : parent, .removed)
        }
        return render(name: name, nodes: nodes, edges: kept + removed, parents: parents)
    }

    /// Relationship edges of `entities`: a relationship and its inverse are one edge, drawn once.
    private static func edges(_ entities: [Entity], status: (String, String) -> Status,
                              formerName: (String, String) -> String? = { _, _ in nil }) -> [Edge] {
        var edges: [Edge] = []
        var drawn: Set<String> = []
        for entity in entities {
            for relationship in entity.relationships where !drawn.contains("\(entity.name).\(relationship.name)") {
                drawn.insert("\(entity.name).\(relationship.name)")
                let inverse = relationship.inverse.flatMap { name in
                    entities.first { $0.name == relationship.destination }?.relationships.first { $0.name == name && $0.inverse == relationship.name }
                }
                if let inverse { drawn.insert("\(relationship.destination).\(inverse.name)") }
                // A renamed side shows its old name (`Book.pages → pageCount …`); the edge takes the larger change of its two sides.
                func line(_ owner: String, _ r: Relationship) -> String {
                    "\(owner)." + (formerName(owner, r.name).map { "\($0) → " } ?? "") + label(r)
                }
                let statuses = [status(entity.name, relationship.name)] + (inverse.map { [status(relationship.destination, $0.name)] } ?? [])
                edges.append(Edge(from: entity.name, to: relationship.destination, head: line(entity.name, relationship),
                                  tail: inverse.map { line(relationship.destination, $0) },
                                  headArrow: relationship.isToMany ? "crow" : "tee", tailArrow: inverse.map { $0.isToMany ? "crow" : "tee" } ?? "none",
                                  status: statuses.max { $0.weight < $1.weight } ?? .unchanged))
            }
        }
        return edges
    }

    private static func title(_ entity: Entity) -> String {
        entity.name + (entity.parent.map { " : \($0)" } ?? "")
    }

    /// `name: Type` with `?` for an optional attribute, `= default`, and `(transient)`.
    private static func describe(_ attribute: Attribute) -> String {
        "\(attribute.name): \(describeType(attribute))" + (attribute.defaultValue.map { " = \($0)" } ?? "")
            + (attribute.isTransient ? " (transient)" : "")
    }

    private static func describeType(_ attribute: Attribute) -> String {
        attribute.type.modelName + (attribute.isOptional ? "?" : "")
    }

    /// `name [0..1] nullify`, `name [1..*] cascade, ordered`.
    private static func label(_ relationship: Relationship) -> String {
        let low = relationship.isOptional ? 0 : max(1, relationship.minCount)
        let cardinality = relationship.isToMany
            ? "\(relationship.isOptional ? 0 : max(1, relationship.minCount))..\(relationship.maxCount == 0 ? "*" : "\(relationship.maxCount)")"
            : low == 0 ? "0..1" : "1"
        let rule = switch relationship.deleteRule {
        case .noAction: "no action"
        default: relationship.deleteRule.rawValue
        }
        return "\(relationship.name) [\(cardinality)] \(rule)" + (relationship.isOrdered ? ", ordered" : "")
    }

    private static func render(name: String, nodes: [Node], edges: [Edge], parents: [(String, String, Status)]) -> String {
        var lines = [
            "digraph \(quote(name)) {",
            "  graph [rankdir=LR, fontname=\"Helvetica\", nodesep=0.6, ranksep=1.2];",
            "  node [shape=plain, fontname=\"Helvetica\", fontsize=11];",
            "  edge [fontname=\"Helvetica\", fontsize=9];",
        ]
        for node in nodes {
            var title = escape(node.title)
            if node.isAbstract { title = "<I>\(title)</I> «abstract»" }
            var table = "<TABLE BORDER=\"1\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"4\" COLOR=\"\(node.status.color)\">"
            table += "<TR><TD BGCOLOR=\"#eaeef2\"><FONT COLOR=\"\(node.status.color)\"><B>\(strike(title, node.status))</B></FONT></TD></TR>"
            for row in node.rows {
                table += "<TR><TD ALIGN=\"LEFT\"><FONT COLOR=\"\(row.status.color)\">\(strike(escape(row.text), row.status))</FONT></TD></TR>"
            }
            if node.rows.isEmpty { table += "<TR><TD> </TD></TR>" }
            table += "</TABLE>"
            lines.append("  \(quote(node.name)) [label=<\(table)>];")
        }
        for edge in edges {
            var attributes = ["dir=both", "arrowhead=\(edge.headArrow)", "arrowtail=\(edge.tailArrow)", "color=\(quote(edge.status.color))",
                              "fontcolor=\(quote(edge.status.color))", "label=\(quote(([edge.head] + (edge.tail.map { [$0] } ?? [])).joined(separator: "\n")))"]
            if edge.status == .removed { attributes.append("style=dashed") }
            lines.append("  \(quote(edge.from)) -> \(quote(edge.to)) [\(attributes.joined(separator: ", "))];")
        }
        for (child, parent, status) in parents {
            lines.append("  \(quote(child)) -> \(quote(parent)) [arrowhead=empty, style=dashed, color=\(quote(status.color))];")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func strike(_ text: String, _ status: Status) -> String { status == .removed ? "<S>\(text)</S>" : text }

    /// A DOT string: quoted, with `"` and `\` escaped.
    private static func quote(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// Text inside an HTML-like label.
    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
