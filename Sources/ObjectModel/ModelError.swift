/// An error raised while building, loading or checking a model.
///
/// It lists every problem found, not only the first, and where it was found.
///
/// ```swift
/// do { _ = try ManagedObjectModel(entities: entities) }
/// catch let error as ModelError { print(error.problems.joined(separator: "\n")) }
/// ```
public struct ModelError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure; new kinds may be added.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Kind: String, Sendable, Hashable {
            case inconsistentModel, syntax, unreadable, unsupported, unknownVersion, notFound
        }
        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }

        /// The model's parts do not fit together (unknown entity, bad inverse, ...).
        public static let inconsistentModel = Code(.inconsistentModel)
        /// The file is not well-formed XML or JSON.
        public static let syntax = Code(.syntax)
        /// The file or folder cannot be read, or is empty.
        public static let unreadable = Code(.unreadable)
        /// The file is well-formed but describes something this library does not handle.
        public static let unsupported = Code(.unsupported)
        /// A model version that was asked for does not exist.
        public static let unknownVersion = Code(.unknownVersion)
        /// There is no file or folder at the path.
        public static let notFound = Code(.notFound)

        public var description: String { kind.rawValue }
    }

    /// The kind of failure.
    public var code: Code
    /// Every problem found, one sentence each.
    public var problems: [String]
    /// The file the model came from, when it came from one.
    public var file: String?
    /// The 1-based line of a syntax error.
    public var line: Int?
    /// The 1-based column of a syntax error.
    public var column: Int?

    /// Creates an error.
    public init(_ code: Code, problems: [String], file: String? = nil, line: Int? = nil, column: Int? = nil) {
        self.code = code
        self.problems = problems
        self.file = file
        self.line = line
        self.column = column
    }

    /// A copy that names `file` as the source, unless one is already named.
    public func located(in file: String) -> ModelError {
        var copy = self
        if copy.file == nil { copy.file = file }
        return copy
    }

    /// One line: the file, the position, and every problem separated by `; `.
    public var description: String {
        var place = file ?? "model"
        if let line { place += ":\(line)" + (column.map { ":\($0)" } ?? "") }
        return "\(place): " + problems.joined(separator: "; ")
    }
}
