/// What a function of an entity name gave for the last name asked, so that a list of keys
/// (nearly always of one or two entities) looks each name up once per run of equal names
/// instead of hashing it once per key. Names read from one store share their storage, and
/// `==` on them compares no characters.
package struct EntityMemo<Value> {
    private var last: (entity: String, value: Value)?
    private let compute: (String) -> Value

    package init(_ compute: @escaping (String) -> Value) { self.compute = compute }

    package mutating func callAsFunction(_ entity: String) -> Value {
        if let last, last.entity == entity { return last.value }
        let value = compute(entity)
        last = (entity, value)
        return value
    }
}

extension ObjectKey {
    /// Whether a key is in `keys` twice: keys of one entity (the usual list) are told apart by
    /// their numbers alone.
    package static func hasDuplicates(_ keys: [ObjectKey]) -> Bool {
        guard let entity = keys.first?.entity else { return false }
        if keys.allSatisfy({ $0.entity == entity }) { return Set(keys.lazy.map(\.primaryKey)).count != keys.count }
        return Set(keys).count != keys.count
    }
}
