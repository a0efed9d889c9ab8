import Foundation
import ObjectModel

/// The error of the store layer: stores, coordinator and context.
///
/// Its ``code`` says what kind of failure it is, its ``message`` what and where,
/// and the optional fields carry the details a caller can act on.
///
/// ```swift
/// do { try context.save() }
/// catch let error as StoreError where error.code == .validationFailed {
///     for failure in error.validationFailures { print(failure) }
/// }
/// ```
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure; new kinds may be added.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The store's entity hashes differ from the model's.
        public static let incompatibleModel = Code("incompatibleModel")
        /// An object changed underneath the save (optimistic locking).
        public static let conflict = Code("conflict")
        /// Objects failed validation; see ``StoreError/validationFailures``.
        public static let validationFailed = Code("validationFailed")
        /// A delete was refused by a `deny` rule; see ``StoreError/objectID``.
        public static let deleteDenied = Code("deleteDenied")
        /// Two objects would have equal values for a uniqueness constraint; see ``StoreError/uniquenessViolation``.
        public static let uniquenessViolated = Code("uniquenessViolated")
        /// A change names an object, entity or property that does not exist, or a key already in use.
        public static let invalidChange = Code("invalidChange")
        /// A fetch names an unknown entity or key path, or a predicate does not apply.
        public static let invalidFetch = Code("invalidFetch")
        /// An input document (JSON data, a mapping) is malformed or does not fit the model.
        public static let invalidInput = Code("invalidInput")
        /// No store is at the URL.
        public static let notFound = Code("notFound")
        /// A store already exists where a new one was to be created.
        public static let alreadyExists = Code("alreadyExists")
        /// The file is not a store of the expected type, or is damaged.
        public static let corrupt = Code("corrupt")
        /// The store is written in a version of its backend's file format that this build does not read.
        public static let unsupportedFormat = Code("unsupportedFormat")
        /// A file operation failed.
        public static let io = Code("io")
        /// The store was opened read-only, or its file is read-only.
        public static let readOnly = Code("readOnly")
        /// Another process is writing the store; try again later.
        public static let busy = Code("busy")
        /// The store is closed.
        public static let closed = Code("closed")
        /// No store type of that name is registered.
        public static let unknownStoreType = Code("unknownStoreType")
        /// No store of the coordinator holds the entity or object.
        public static let noStore = Code("noStore")
        /// The store's files were moved aside or replaced (by another process) after this one
        /// opened them: nothing was written; open the store again.
        public static let storeReplaced = Code("storeReplaced")
        /// The store type does not offer the operation.
        public static let unsupported = Code("unsupported")

        public var description: String { name }
    }

    /// The kind of failure.
    public var code: Code
    /// What went wrong and where, in one sentence.
    public var message: String
    /// The store's URL, when the failure concerns a store on disk.
    public var url: URL?
    /// The object concerned (the conflicting or denying object).
    public var objectID: ObjectID?
    /// Every validation failure, for ``Code/validationFailed``.
    public var validationFailures: [ValidationFailure]
    /// The hash comparison, for ``Code/incompatibleModel``.
    public var compatibility: ModelCompatibility?
    /// The underlying error.
    public var cause: (any Error & Sendable)?
    /// The constraint, values and objects, for ``Code/uniquenessViolated``.
    public var uniquenessViolation: UniquenessViolation?

    /// Creates an error.
    public init(_ code: Code, _ message: String, url: URL? = nil, objectID: ObjectID? = nil,
                validationFailures: [ValidationFailure] = [], compatibility: ModelCompatibility? = nil,
                cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.url = url
        self.objectID = objectID
        self.validationFailures = validationFailures
        self.compatibility = compatibility
        self.cause = cause
    }

    public var description: String {
        // A file's path; any other store's whole URL (a server's: `postgresql://…/db?schema=s`).
        var text = url.map { "\($0.isFileURL ? $0.path : $0.absoluteString): " } ?? ""
        text += message
        if !validationFailures.isEmpty {
            text += "\n" + validationFailures.map { "  \($0)" }.joined(separator: "\n")
        }
        return text
    }
}

/// The validation rules a save checks.
public enum ValidationRule: String, Sendable, Hashable, CaseIterable {
    /// A non-optional attribute or relationship has no value.
    case required
    /// A value is not of the attribute's type.
    case type
    /// A number or date is below the minimum.
    case minValue
    /// A number or date is above the maximum.
    case maxValue
    /// A string or data is shorter than the minimum length.
    case minLength
    /// A string or data is longer than the maximum length.
    case maxLength
    /// A string does not match the regular expression.
    case pattern
    /// A to-many holds fewer objects than its minimum count.
    case minCount
    /// A to-many holds more objects than its maximum count.
    case maxCount
}

/// One failed rule on one property of one object.
public struct ValidationFailure: Sendable, Hashable, CustomStringConvertible {
    /// The object.
    public var objectID: ObjectID
    /// The property's name.
    public var property: String
    /// The rule that failed.
    public var rule: ValidationRule
    /// What was expected and what was found.
    public var message: String

    /// Creates a failure.
    public init(objectID: ObjectID, property: String, rule: ValidationRule, message: String) {
        self.objectID = objectID
        self.property = property
        self.rule = rule
        self.message = message
    }

    /// `<Entity>/<pk> <property> <rule>: <message>` (the object's key; the store is named by
    /// whoever reports the failure, never a store's UUID, which may be a staging store's).
    /// `Entity/pk property rule: message`; an object that has no key yet (primary key 0: one a
    /// refused import would have made) is named by its entity alone.
    public var description: String {
        "\(objectID.key.primaryKey == 0 ? objectID.key.entity : objectID.key.description) \(property) \(rule.rawValue): \(message)"
    }
}

extension StoreError {
    /// The error of a call on a store (or a snapshot) that is closed: every backend's, worded once.
    public static func closed(_ url: URL?, snapshot: Bool = false) -> StoreError {
        StoreError(.closed, snapshot ? "the snapshot is closed" : "the store is closed", url: url)
    }

    /// The error of a write on a store opened read-only (or a snapshot): every backend's, worded once.
    public static func readOnly(_ url: URL?, snapshot: Bool = false) -> StoreError {
        StoreError(.readOnly, snapshot ? "a snapshot is read-only" : "the store was opened read-only", url: url)
    }
}
