import Foundation
import ObjectModel
import ObjectStore

/// Reads the `NSExpression` Xcode archives into a mapping model's `valueexpressiondata` (an
/// `NSKeyedArchiver` archive, the expression under `root`) into a ``MappingExpression``.
///
/// Only the forms that map exactly are read; classes are recognised by name and never
/// instantiated (docs/coredata-formats.md, "Xcode mapping models", gives each key's source):
///
/// - `NSConstantValueExpression` (`NSConstantValue`): a string, a number, a Boolean, a date or nil.
/// - `NSVariableExpression` (`NSVariable`): `$source` only.
/// - `NSKeyPathExpression` (`NSOperand`, `NSSelectorName` `valueForKeyPath:` or `valueForKey:`,
///   `NSArguments` one `NSKeyPathSpecifierExpression` (`NSKeyPath`) or constant string): a key
///   path on `$source`, or on a key path on `$source`.
/// - `NSFunctionExpression`: `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "<mapping>", <objects>)`.
///
/// Every object's `NSExpressionType`, when present, must be its class's (0 constant, 2 variable,
/// 3 key path, 4 function); an unknown key, class, variable, selector or constant class is a
/// ``Refusal`` naming it, never a guess.
struct ArchivedExpressionReader {
    /// Why an expression is not read; the message names the class or key.
    struct Refusal: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// The deepest nesting read (an archive can nest without end; Xcode's forms nest two or three levels).
    static let maximumDepth = 64
    /// The selector of the one `$manager` function Xcode writes.
    static let destinationInstancesSelector = "destinationInstancesForEntityMappingNamed:sourceInstances:"

    private let archive: KeyedArchiveObjects
    private let reader: ArchivedModelReader

    /// The expression archived in `data`.
    /// - Throws: ``ObjectModel/ModelError`` when `data` is not a readable keyed archive; ``Refusal``
    ///   for an expression that does not map exactly.
    static func expression(in data: Data) throws -> MappingExpression {
        let archive = try KeyedArchiveObjects(data)
        let reader = ArchivedExpressionReader(archive: archive, reader: ArchivedModelReader(archive: archive))
        guard let root = try archive.object(archive.root, from: "the archive's root") else {
            throw Refusal("the archive's root is $null, not an expression")
        }
        return try reader.expression(root, depth: 0)
    }

    private func expression(_ object: ArchivedObject, depth: Int) throws -> MappingExpression {
        guard depth < Self.maximumDepth else { throw Refusal("the expression nests deeper than \(Self.maximumDepth) levels") }
        switch object.className {
        case "NSConstantValueExpression":
            try object.requireKnownKeys(["NSExpressionType", "NSConstantValue"])
            try requireType(object, 0)
            return .constant(try constant(object))
        case "NSVariableExpression":
            try object.requireKnownKeys(["NSExpressionType", "NSVariable"])
            try requireType(object, 2)
            let name = try reader.string(in: object, "NSVariable") ?? ""
            guard name == "source" else {
                throw Refusal("\(object.label) is the variable $\(name): only $source has a meaning in a value expression here")
            }
            return .source("")
        case "NSKeyPathExpression":
            try object.requireKnownKeys(["NSExpressionType", "NSOperand", "NSSelectorName", "NSArguments"])
            try requireType(object, 3)
            let selector = try reader.string(in: object, "NSSelectorName")
            guard selector == "valueForKeyPath:" || selector == "valueForKey:" else {
                throw Refusal("\(object.label) has the selector \(selector ?? "(none)"), not valueForKeyPath: or valueForKey:")
            }
            let arguments = try self.arguments(of: object)
            guard arguments.count == 1 else { throw Refusal("\(object.label) has \(arguments.count) arguments, not one key path") }
            let path = try keyPath(arguments[0])
            guard selector == "valueForKeyPath:" || !path.contains(".") else {
                throw Refusal("\(object.label): valueForKey: with the key \(path), which holds a dot (one key, not a key path)")
            }
            guard let operand = try reader.referenced(in: object, "NSOperand") else {
                throw Refusal("\(object.label) has no operand: a key path on the evaluated object has no meaning here (write $source.\(path))")
            }
            guard case .source(let base) = try expression(operand, depth: depth + 1) else {
                throw Refusal("\(object.label) is a key path on \(operand.label), not on $source")
            }
            return .source(base.isEmpty ? path : base + "." + path)
        case "NSFunctionExpression":
            try object.requireKnownKeys(["NSExpressionType", "NSOperand", "NSSelectorName", "NSArguments"])
            try requireType(object, 4)
            let selector = try reader.string(in: object, "NSSelectorName") ?? "(none)"
            let operand = try reader.referenced(in: object, "NSOperand")
            var onManager = false
            if let operand, operand.className == "NSVariableExpression" {
                onManager = try reader.string(in: operand, "NSVariable") == "manager"
            }
            guard onManager, selector == Self.destinationInstancesSelector else {
                throw Refusal("\(object.label) calls \(selector) on \(operand?.label ?? "nothing"): the only function read is $manager's \(Self.destinationInstancesSelector)")
            }
            try operand?.requireKnownKeys(["NSExpressionType", "NSVariable"])
            let arguments = try self.arguments(of: object)
            guard arguments.count == 2 else { throw Refusal("\(object.label): \(selector) takes 2 arguments, the archive has \(arguments.count)") }
            guard case .constant(.string(let mapping)?) = try expression(arguments[0], depth: depth + 1) else {
                throw Refusal("\(object.label): the first argument of \(selector) (\(arguments[0].label)) is not a constant string naming an entity mapping")
            }
            return .destinations(mapping: mapping, of: try expression(arguments[1], depth: depth + 1))
        default:
            throw Refusal("\(object.label) is not an expression this reader maps exactly (it reads constants, $source, key paths on $source and $manager's \(Self.destinationInstancesSelector))")
        }
    }

    /// `NSExpressionType`, when the object has it, must be `expected`.
    private func requireType(_ object: ArchivedObject, _ expected: Int64) throws {
        guard let type = try reader.integer(in: object, "NSExpressionType"), type != expected else { return }
        throw Refusal("\(object.label) has NSExpressionType \(type), where a \(object.className) has \(expected)")
    }

    /// The objects of `NSArguments`, in order.
    private func arguments(of object: ArchivedObject) throws -> [ArchivedObject] {
        guard let list = try reader.referenced(in: object, "NSArguments") else { return [] }
        return try reader.elements(of: list).map { node in
            guard let argument = try reader.referencedObject(node, from: "\(list.label).NS.objects") else {
                throw Refusal("\(list.label) holds $null where an expression was expected")
            }
            return argument
        }
    }

    /// The key path of a key path expression's argument: dot-separated keys, no collection operators.
    private func keyPath(_ argument: ArchivedObject) throws -> String {
        let path: String?
        switch argument.className {
        case "NSKeyPathSpecifierExpression":
            try argument.requireKnownKeys(["NSExpressionType", "NSKeyPath"])
            path = try reader.string(in: argument, "NSKeyPath")
        case "NSConstantValueExpression":
            try argument.requireKnownKeys(["NSExpressionType", "NSConstantValue"])
            try requireType(argument, 0)
            path = try reader.string(in: argument, "NSConstantValue")
        default:
            throw Refusal("\(argument.label) where a key path was expected")
        }
        guard let path, !path.isEmpty, path.split(separator: ".", omittingEmptySubsequences: false).allSatisfy({ !$0.isEmpty }) else {
            throw Refusal("\(argument.label) holds the key path \(String(reflecting: path ?? "")), not keys separated by dots")
        }
        guard !path.contains("@") else { throw Refusal("\(argument.label): the key path \(path) uses a collection operator, which is not read") }
        return path
    }

    /// The value of a constant expression.
    private func constant(_ object: ArchivedObject) throws -> Value? {
        guard let field = object.fields["NSConstantValue"] else { return nil }
        let place = "\(object.label).NSConstantValue"
        var node = field
        if case .uid(let uid) = field {
            guard let target = try archive.node(uid, from: place) else { return nil }
            node = target
        }
        switch node {
        case .string(let text): return .string(text)
        case .integer(let n): return .integer(n)
        case .real(let d): return .double(d)
        case .boolean(let b): return .boolean(b)
        case .dictionary:
            guard case .uid(let uid) = field, let value = try archive.object(uid, from: place) else { break }
            switch value.className {
            case "NSString", "NSMutableString": return .string(try reader.text(node, from: place))
            case "NSDate":
                try value.requireKnownKeys(["NS.time"])
                guard case .real(let seconds)? = value.fields["NS.time"] else { throw Refusal("\(value.label) has no NS.time number") }
                return .date(Date(timeIntervalSinceReferenceDate: seconds))
            default:
                throw Refusal("\(place) is \(value.label): constants read are strings, numbers, Booleans, dates and nil")
            }
        default: break
        }
        throw Refusal("\(place) is \(KeyedArchiveObjects.describe(node)): constants read are strings, numbers, Booleans, dates and nil")
    }
}
