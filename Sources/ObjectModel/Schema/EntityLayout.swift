/// Where each stored value of an entity's objects goes, compiled once per entity: the
/// stored attributes (inherited ones first) are numbered 0, 1, 2…, and so are the stored
/// to-one relationships, in a space of their own.
///
/// Batches (`RecordBatch` in ObjectStore) keep values by slot, so code that moves many
/// objects looks a name up once per entity, not once per value.
public struct EntityLayout: Sendable {
    /// The entity.
    public let entity: String
    /// The stored attributes, by slot.
    public let attributes: [Attribute]
    /// The stored to-one relationships, by slot.
    public let toOne: [Relationship]
    private let attributeSlots: [String: Int]
    private let toOneSlots: [String: Int]

    /// The layout of stored `attributes` and stored `relationships` (the entity's own lists).
    init(entity: String, attributes: [Attribute], relationships: [Relationship]) {
        self.entity = entity
        self.attributes = attributes
        self.toOne = relationships.filter { !$0.isToMany }
        attributeSlots = Dictionary(self.attributes.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
        toOneSlots = Dictionary(self.toOne.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The slot of a stored attribute, or nil.
    public func attributeSlot(_ name: String) -> Int? { attributeSlots[name] }
    /// The slot of a stored to-one relationship, or nil.
    public func toOneSlot(_ name: String) -> Int? { toOneSlots[name] }
}
