import Foundation
import ObjectModel
import ObjectStore

/// The error of the migration layer: which entity mapping, which phase, which
/// source object, and what went wrong.
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure; new kinds may be added.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The source store does not fit the mapping (hashes differ, wrong model).
        public static let incompatibleSource = Code("incompatibleSource")
        /// A mapping expression failed (a value that does not convert, an unknown function).
        public static let expression = Code("expression")
        /// The mapping model is malformed (unknown entity, property or policy).
        public static let invalidMapping = Code("invalidMapping")
        /// A custom policy threw.
        public static let policy = Code("policy")
        /// Destination objects failed validation.
        public static let validationFailed = Code("validationFailed")
        /// The migration was cancelled.
        public static let cancelled = Code("cancelled")
        /// A store failed.
        public static let store = Code("store")
        /// The destination already exists.
        public static let destinationExists = Code("destinationExists")
        /// The store was written with none of the model versions given (the message names the closest).
        public static let unknownVersion = Code("unknownVersion")
        /// A step of a migration plan has neither a registered mapping nor an inferable one,
        /// or the versions give no way from the store's version to the target.
        public static let noMapping = Code("noMapping")
        /// The store changed while it was being migrated (another process wrote it): the
        /// migrated copy was not put in its place.
        public static let storeChanged = Code("storeChanged")
        /// A store that could not be migrated was not moved aside or recreated: it is at a
        /// version the model has, damaged, of another type or another model (the message says
        /// which, and why the migration failed). Nothing was changed.
        public static let recoveryRefused = Code("recoveryRefused")
        /// A step would drop data the store holds (``DataDrop``: an attribute, relationship or entity
        /// no mapping reads, objects a filter leaves out) and the loss was not allowed
        /// (``StoreMigrator/allowsDataLoss``). Nothing was changed.
        public static let dataLoss = Code("dataLoss")
        public var description: String { name }
    }

    /// The migration phase a failure happened in.
    public enum Phase: String, Sendable, Hashable, CaseIterable {
        /// Phase 1: destination objects from source objects, attributes only.
        case createObjects = "create objects"
        /// Phase 2: relationships, through the source → destination association.
        case createRelationships = "create relationships"
        /// Phase 3: validation of every destination object.
        case validate
    }

    /// The kind of failure.
    public var code: Code
    /// What went wrong, in one sentence.
    public var message: String
    /// The entity mapping at fault.
    public var mapping: String?
    /// The phase at fault.
    public var phase: Phase?
    /// The source object at fault.
    public var sourceObject: ObjectKey?
    /// Validation failures, for ``Code/validationFailed``.
    public var validationFailures: [ValidationFailure]
    /// The underlying error.
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, mapping: String? = nil, phase: Phase? = nil, sourceObject: ObjectKey? = nil,
                validationFailures: [ValidationFailure] = [], cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.mapping = mapping
        self.phase = phase
        self.sourceObject = sourceObject
        self.validationFailures = validationFailures
        self.cause = cause
    }

    public var description: String {
        var place: [String] = []
        if let mapping { place.append("mapping \(mapping)") }
        if let phase { place.append(phase.rawValue) }
        if let sourceObject { place.append("source object \(sourceObject)") }
        return (place.isEmpty ? "" : place.joined(separator: ", ") + ": ") + message
    }
}
