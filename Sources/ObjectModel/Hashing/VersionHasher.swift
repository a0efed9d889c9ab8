import Crypto
import Foundation

/// Core Data–compatible version hashes (see `docs/version-hash.md`).
///
/// This is the one place the scheme lives, so a correction is one change.
enum VersionHasher {
    private enum PropertyFlag {
        static let optional: UInt16 = 1
        static let transient: UInt16 = 2
    }

    static func entityHash(
        _ entity: Entity, attributes: [Attribute], relationships: [Relationship], parentHash: Data?,
        lineage: Set<String>
    ) -> Data {
        var bytes = Data(entity.name.utf8)
        bytes.append(entity.isAbstract ? 1 : 0)
        if let parentHash { bytes.append(parentHash) }
        var properties: [(String, Data)] = []
        for a in attributes where !a.isTransient { properties.append((a.name, attributeHash(a))) }
        for r in relationships where !r.isTransient { properties.append((r.name, relationshipHash(r, selfInverse: r.inverse == r.name && lineage.contains(r.destination)))) }
        for (_, hash) in properties.sorted(by: { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }) {
            bytes.append(hash)
        }
        if let modifier = entity.versionHashModifier { bytes.append(Data(modifier.utf8)) }
        let constraints = entity.uniquenessConstraints.filter { !$0.isEmpty }.map { $0.joined(separator: ".") }
        for constraint in constraints.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            bytes.append(Data(constraint.utf8))
        }
        return sha256(bytes)
    }

    static func attributeHash(_ a: Attribute) -> Data {
        var bytes = propertyHash(
            name: a.name, optional: a.isOptional, transient: a.isTransient, modifier: a.versionHashModifier)
        append(&bytes, a.type.rawValue)
        if a.allowsExternalBinaryDataStorage { bytes.append(1) }
        if a.preservesValueInHistoryOnDeletion { bytes.append(1) }
        return sha256(bytes)
    }

    /// - Parameter selfInverse: whether `r` is its own inverse (then its inverse name is not hashed).
    static func relationshipHash(_ r: Relationship, selfInverse: Bool) -> Data {
        var bytes = propertyHash(
            name: r.name, optional: r.isOptional, transient: r.isTransient, modifier: r.versionHashModifier)
        bytes.append(Data(r.destination.utf8))
        if let inverse = r.inverse, !selfInverse {
            bytes.append(Data(inverse.utf8))
        }
        // 32 bits, as Core Data hashes them (ModelChecker refuses larger counts; never a trap here).
        append(&bytes, Int32(truncatingIfNeeded: r.maxCount))
        append(&bytes, Int32(truncatingIfNeeded: r.minCount))
        if r.isOrdered { append(&bytes, UInt16(1)) }
        return sha256(bytes)
    }

    /// The model checksum: SHA-256 over the entity hashes in ascending order
    /// of entity name, base64-encoded.
    static func checksum(of hashes: [String: Data]) -> String {
        var bytes = Data()
        for name in hashes.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) { bytes.append(hashes[name]!) }
        return sha256(bytes).base64EncodedString()
    }

    /// Core Data's `NSStoreModelVersionHashesDigest`: SHA-512 over each entity's name (UTF-8)
    /// followed by its hash, in ascending order of name, base64-encoded (found on every store of
    /// `shared/fixtures/coredata-stores` that has the key; docs/sqlite-layout.md).
    static func hashesDigest(of hashes: [String: Data]) -> String {
        var bytes = Data()
        for name in hashes.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            bytes.append(Data(name.utf8))
            bytes.append(hashes[name]!)
        }
        return Data(SHA512.hash(data: bytes)).base64EncodedString()
    }

    private static func propertyHash(name: String, optional: Bool, transient: Bool, modifier: String?) -> Data {
        var flags: UInt16 = 0
        if optional { flags |= PropertyFlag.optional }
        if transient { flags |= PropertyFlag.transient }
        var bytes = Data(name.utf8)
        append(&bytes, flags)
        if let modifier { bytes.append(Data(modifier.utf8)) }
        return sha256(bytes)
    }

    private static func append<T: FixedWidthInteger>(_ data: inout Data, _ value: T) {
        withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }

    static func sha256(_ data: Data) -> Data { Data(SHA256.hash(data: data)) }
}

extension Data {
    /// The bytes as lowercase hexadecimal digits.
    public var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(count * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes from hexadecimal digits, or nil when `hex` is not an even run of hex digits.
    public init?(hexString hex: String) {
        let chars = Array(hex.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = Data.nibble(chars[i]), let lo = Data.nibble(chars[i + 1]) else { return nil }
            bytes.append(hi << 4 | lo)
            i += 2
        }
        self.init(bytes)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
