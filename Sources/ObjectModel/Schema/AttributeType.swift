/// The type of an attribute, with Core Data's names and type numbers.
///
/// The raw value is the type number Core Data stores (`NSAttributeType`), which
/// also enters the entity version hash.
public enum AttributeType: Int32, Sendable, Hashable, CaseIterable, Codable {
    /// Core Data's `Undefined` type (only allowed on transient attributes).
    case undefined = 0
    /// A 16-bit signed integer (`Integer 16`).
    case integer16 = 100
    /// A 32-bit signed integer (`Integer 32`).
    case integer32 = 200
    /// A 64-bit signed integer (`Integer 64`).
    case integer64 = 300
    /// A base-10 decimal number (`Decimal`).
    case decimal = 400
    /// A 64-bit floating-point number (`Double`).
    case double = 500
    /// A 32-bit floating-point number (`Float`).
    case float = 600
    /// A Unicode string (`String`).
    case string = 700
    /// A Boolean (`Boolean`).
    case boolean = 800
    /// A point in time (`Date`).
    case date = 900
    /// Arbitrary bytes (`Binary`).
    case binaryData = 1000
    /// A UUID (`UUID`).
    case uuid = 1100
    /// A URI (`URI`).
    case uri = 1200
    /// A Codable payload stored as bytes (`Transformable`).
    case transformable = 1800
    /// An object ID (`ObjectID`).
    case objectID = 2000

    /// The name Core Data's model editor uses (`"Integer 64"`, `"Binary"`, ...).
    public var modelName: String {
        switch self {
        case .undefined: "Undefined"
        case .integer16: "Integer 16"
        case .integer32: "Integer 32"
        case .integer64: "Integer 64"
        case .decimal: "Decimal"
        case .double: "Double"
        case .float: "Float"
        case .string: "String"
        case .boolean: "Boolean"
        case .date: "Date"
        case .binaryData: "Binary"
        case .uuid: "UUID"
        case .uri: "URI"
        case .transformable: "Transformable"
        case .objectID: "ObjectID"
        }
    }

    /// The type whose ``modelName`` is `name`, or `nil`.
    ///
    /// Accepts the names Xcode writes (`"Integer 32"`, `"Binary"`) and the
    /// spelled-out alternatives (`"Binary Data"`, `"URL"`).
    public init?(modelName name: String) {
        switch name {
        case "Binary Data": self = .binaryData
        case "URL": self = .uri
        default:
            guard let match = AttributeType.allCases.first(where: { $0.modelName == name }) else { return nil }
            self = match
        }
    }

    /// Whether this is one of the three integer types.
    public var isInteger: Bool { self == .integer16 || self == .integer32 || self == .integer64 }

    /// Whether values of this type are numbers (integers, decimal, double, float).
    public var isNumeric: Bool { isInteger || self == .decimal || self == .double || self == .float }

    /// The range of values an integer type can hold, or `nil` for other types.
    public var integerRange: ClosedRange<Int64>? {
        switch self {
        case .integer16: Int64(Int16.min)...Int64(Int16.max)
        case .integer32: Int64(Int32.min)...Int64(Int32.max)
        case .integer64: Int64.min...Int64.max
        default: nil
        }
    }
}
