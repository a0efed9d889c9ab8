import Foundation

/// Compares JSON value by value, naming each difference: numbers, Booleans, nulls and
/// strings exactly as JSON has them, objects key by key, arrays element by element.
public enum JSONComparison {
    /// The differences between the JSON text `actual` and the JSON value `expected`
    /// (built from Swift dictionaries, arrays, strings, numbers, Booleans and `NSNull`).
    public static func differences(_ actual: String, _ expected: Any) -> [String] {
        guard let parsed = try? JSONSerialization.jsonObject(with: Data(actual.utf8), options: [.fragmentsAllowed]) else {
            return ["the text is not JSON: \(actual.prefix(200))"]
        }
        guard let data = try? JSONSerialization.data(withJSONObject: expected, options: [.fragmentsAllowed]),
              let normalized = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
            return ["the expected value is not JSON"]
        }
        var found: [String] = []
        compare(parsed, normalized, path: "$", into: &found)
        return found
    }

    private static func canonical(_ value: Any) -> String {
        (try? JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "?"
    }

    private static func compare(_ a: Any, _ b: Any, path: String, into found: inout [String]) {
        if let a = a as? [String: Any], let b = b as? [String: Any] {
            let label = (b["_id"] as? String).map { "\(path)[\($0)]" } ?? path
            for key in Set(a.keys).union(b.keys).sorted() {
                guard let x = a[key] else { found.append("\(label).\(key): missing"); continue }
                guard let y = b[key] else { found.append("\(label).\(key): unexpected \(canonical(x))"); continue }
                compare(x, y, path: "\(label).\(key)", into: &found)
            }
        } else if let a = a as? [Any], let b = b as? [Any], a.first is [String: Any] || b.first is [String: Any] {
            if a.count != b.count { found.append("\(path): \(a.count) elements, expected \(b.count)") }
            for (i, (x, y)) in zip(a, b).enumerated() { compare(x, y, path: "\(path)[\(i)]", into: &found) }
        } else if canonical(a) != canonical(b) {
            found.append("\(path): \(canonical(a).dropFirst().dropLast()) instead of \(canonical(b).dropFirst().dropLast())")
        }
    }
}
