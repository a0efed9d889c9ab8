import Foundation
import ObjectStore

// `#Predicate { $0.name.localizedStandardContains(text) }`, the search SwiftData's samples write:
// the macro makes it `PredicateExpressions.build_localizedStandardContains(_:_:)`, which
// Foundation on Linux does not have. This is that expression: the text contains the other,
// ignoring case and diacritics (Foundation's own is also locale-aware; here the comparison is
// the same in every locale). It translates to the store's `CONTAINS[cd]`.

extension PredicateExpressions {
    /// Whether a string contains another, ignoring case and diacritics.
    public struct StringLocalizedStandardContains<Root: Foundation.PredicateExpression, Other: Foundation.PredicateExpression>: Foundation.PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        public typealias Output = Bool
        /// The string searched.
        public let root: Root
        /// The string searched for.
        public let other: Other

        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            let needle = String(try other.evaluate(bindings))
            let text = String(try root.evaluate(bindings))
            return needle.isEmpty || text.range(of: needle, options: [.caseInsensitive, .diacriticInsensitive]) != nil
        }
    }

    /// What `#Predicate` makes of `root.localizedStandardContains(other)`.
    public static func build_localizedStandardContains<Root, Other>(_ root: Root, _ other: Other) -> StringLocalizedStandardContains<Root, Other> {
        StringLocalizedStandardContains(root: root, other: other)
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: Sendable where Root: Sendable, Other: Sendable {}
extension PredicateExpressions.StringLocalizedStandardContains: Codable where Root: Codable, Other: Codable {}
extension PredicateExpressions.StringLocalizedStandardContains: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}

extension PredicateExpressions.StringLocalizedStandardContains: TranslatableExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslator.Term {
        guard case .path(let path, false) = try translator.term(root), case .constant(let value) = try translator.term(other) else {
            throw Untranslatable()
        }
        return .condition(.compare(path, .contains, value, [.caseInsensitive, .diacriticInsensitive]))
    }
}
