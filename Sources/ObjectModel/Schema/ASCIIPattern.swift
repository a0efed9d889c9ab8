import Foundation

/// A regular expression of a common part of ICU's syntax, compiled to an automaton that says
/// whether it matches all of a text of ASCII characters, in one pass over the text and without
/// backtracking: `[a-z_]+`, `[A-Z]{3}-[0-9]{4}`, `^[^@ ]+@[^@ ]+\.[a-z]{2,}$`.
///
/// The part: literal characters, `.`, bracket classes without nesting or set operations, the
/// escapes `\d \D \w \W \s \S \t \n \r \f \e \a` and escaped punctuation, groups `(…)` and
/// `(?:…)`, alternation, the greedy quantifiers `* + ? {n} {n,} {n,m}` over what cannot match the
/// empty text, `^`, and `$` as the pattern's last character. A pattern with anything else (lazy or
/// possessive forms included), more than 63 single-character items once counts are written out,
/// or other than ASCII, is not compiled (``WholeMatch`` asks ICU).
///
/// Which ASCII characters each single-character item matches is asked of ICU itself, once per
/// item when the pattern is compiled, so the answers are ICU's: `\s`, `.` and case-insensitive
/// letters included.
struct ASCIIPattern: Sendable {
    /// The characters (ASCII) one item matches.
    struct CharacterSet: Sendable, Equatable {
        var low: UInt64 = 0
        var high: UInt64 = 0

        func contains(_ byte: UInt8) -> Bool {
            byte < 64 ? low & (1 << UInt64(byte)) != 0 : high & (1 << UInt64(byte & 63)) != 0
        }

        mutating func insert(_ byte: UInt8) {
            if byte < 64 { low |= 1 << UInt64(byte) } else { high |= 1 << UInt64(byte & 63) }
        }
    }

    /// The most states a pattern may compile to (a counted repetition copies its item).
    static let stateLimit = 512

    /// The consuming states, each a bit of a word: what each matches and the state it leads to.
    /// Bit `sets.count` is the match, so a pattern has at most 63 consuming states.
    private let sets: [CharacterSet]
    private let targets: [Int]
    /// For each ASCII character, the consuming states that take it.
    private let accepting: [UInt64]
    /// The consuming states (and the match) reached from each state without consuming, at a
    /// position that is or is not the text's start and its end (four variants per state,
    /// `closures[state * 4 + variant]`; the match's row is 0).
    private let closures: [UInt64]
    private let entry: Int

    /// Compiles `pattern`, asking `matching` for the ASCII characters each single-character item
    /// matches (nil when ICU does not take the item alone); nil when the pattern is outside the part.
    init?(_ pattern: String, matching: @escaping (String) -> CharacterSet?) {
        let bytes = Array(pattern.utf8)
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        var parser = Parser(bytes: bytes, matching: matching)
        guard let tree = parser.parseWhole() else { return nil }
        var builder = Builder()
        guard let entry = builder.emit(tree, next: Builder.match) else { return nil }
        // Renumber: consuming states first, then the match; split and assertion states vanish into the closures.
        let states = builder.states
        var number = [Int](repeating: -1, count: states.count)
        var sets: [CharacterSet] = []
        for (index, state) in states.enumerated() {
            if case .consume(let set, _) = state { number[index] = sets.count; sets.append(set) }
        }
        let match = sets.count
        guard match < 64 else { return nil }
        var closures = [UInt64](repeating: 0, count: (states.count + 1) * 4)
        for start in -1..<states.count {
            for variant in 0..<4 {
                var seen = Set<Int>()
                var stack = [start]
                while let s = stack.popLast() {
                    guard seen.insert(s).inserted else { continue }
                    let reached: Int?
                    if s == Builder.match { reached = match } else {
                        switch states[s] {
                        case .consume: reached = number[s]
                        case .split(let a, let b): stack.append(a); stack.append(b); reached = nil
                        case .atStart(let next): if variant & 1 != 0 { stack.append(next) }; reached = nil
                        case .atEnd(let next): if variant & 2 != 0 { stack.append(next) }; reached = nil
                        }
                    }
                    if let reached { closures[(start + 1) * 4 + variant] |= 1 << UInt64(reached) }
                }
            }
        }
        // Each consuming state's target, as a row of `closures`.
        targets = states.compactMap { state in
            if case .consume(_, let next) = state { return next + 1 }
            return nil
        }
        accepting = (UInt8(0)..<0x80).map { byte in
            sets.enumerated().reduce(UInt64(0)) { $1.element.contains(byte) ? $0 | 1 << UInt64($1.offset) : $0 }
        }
        self.sets = sets
        self.closures = closures
        self.entry = entry + 1
    }

    /// Whether the pattern matches all of `text`; nil when it cannot say, at a character other
    /// than ASCII (the characters before it are matched exactly, so a text whose ASCII beginning
    /// cannot match is answered).
    func matches(_ text: UnsafeBufferPointer<UInt8>) -> Bool? {
        let n = text.count
        return closures.withUnsafeBufferPointer { closures in
            accepting.withUnsafeBufferPointer { accepting in
                targets.withUnsafeBufferPointer { targets -> Bool? in
                    var current = closures[entry * 4 + (n == 0 ? 3 : 1)]
                    for position in 0..<n {
                        let byte = text[position]
                        guard byte < 0x80 else { return nil }
                        var active = current & accepting[Int(byte)]
                        // No state left: no text with this beginning matches, whatever follows.
                        guard active != 0 else { return false }
                        let variant = position + 1 == n ? 2 : 0
                        var next: UInt64 = 0
                        repeat {
                            next |= closures[targets[active.trailingZeroBitCount] * 4 + variant]
                            active &= active - 1
                        } while active != 0
                        current = next
                    }
                    return current & (1 << UInt64(sets.count)) != 0
                }
            }
        }
    }

    // MARK: Parsing

    private indirect enum Node {
        case set(CharacterSet)
        case atStart, atEnd
        case sequence([Node])
        case choice([Node])
        case repeated(Node, min: Int, max: Int?)
    }

    private struct Parser {
        let bytes: [UInt8]
        let matching: (String) -> CharacterSet?
        var index = 0
        var depth = 0

        /// The most a counted repetition may say.
        static let countLimit = 1000

        mutating func parseWhole() -> Node? {
            guard let tree = parseChoice(), index == bytes.count else { return nil }
            return tree
        }

        private func peek(_ offset: Int = 0) -> UInt8? {
            index + offset < bytes.count ? bytes[index + offset] : nil
        }

        private mutating func parseChoice() -> Node? {
            var options: [Node] = []
            while true {
                guard let sequence = parseSequence() else { return nil }
                options.append(sequence)
                guard peek() == UInt8(ascii: "|") else { break }
                index += 1
            }
            return options.count == 1 ? options[0] : .choice(options)
        }

        private mutating func parseSequence() -> Node? {
            var items: [Node] = []
            while let c = peek(), c != UInt8(ascii: "|"), c != UInt8(ascii: ")") {
                guard let atom = parseAtom() else { return nil }
                guard let quantified = parseQuantifier(on: atom) else { return nil }
                items.append(quantified)
            }
            if peek() == UInt8(ascii: ")") && depth == 0 { return nil }
            return items.count == 1 ? items[0] : .sequence(items)
        }

        private mutating func parseAtom() -> Node? {
            let start = index
            let c = bytes[index]
            switch c {
            case UInt8(ascii: "("):
                index += 1
                if peek() == UInt8(ascii: "?") {
                    guard peek(1) == UInt8(ascii: ":") else { return nil }
                    index += 2
                }
                depth += 1
                guard let inner = parseChoice(), peek() == UInt8(ascii: ")") else { return nil }
                depth -= 1
                index += 1
                return inner
            case UInt8(ascii: "["):
                guard let end = classEnd() else { return nil }
                index = end + 1
            case UInt8(ascii: "\\"):
                guard let next = peek(1), Self.isPlainEscape(next) else { return nil }
                index += 2
            case UInt8(ascii: "^"):
                index += 1
                return .atStart
            case UInt8(ascii: "$"):
                // Only as the last character: there `$` and the end of the whole match are one.
                guard index == bytes.count - 1 else { return nil }
                index += 1
                return .atEnd
            case UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "?"), UInt8(ascii: "{"), UInt8(ascii: "#"):
                return nil
            default:
                index += 1
            }
            let item = String(decoding: bytes[start..<index], as: UTF8.self)
            return matching(item).map(Node.set)
        }

        /// `\` followed by `c` names one character: a class letter or escaped punctuation.
        private static func isPlainEscape(_ c: UInt8) -> Bool {
            if "dDwWsStnrfea".utf8.contains(c) { return true }
            let letterOrDigit = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
            return !letterOrDigit && c >= 0x20 && c < 0x7F
        }

        /// The index of the `]` that ends the bracket class at `index`; nil for a class outside the part.
        private func classEnd() -> Int? {
            var i = index + 1
            if i < bytes.count && bytes[i] == UInt8(ascii: "^") { i += 1 }
            guard i < bytes.count, bytes[i] != UInt8(ascii: "]") else { return nil }
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "]"): return i
                case UInt8(ascii: "["): return nil
                case UInt8(ascii: "\\"):
                    guard i + 1 < bytes.count, Self.isPlainEscape(bytes[i + 1]) else { return nil }
                    i += 2
                case UInt8(ascii: "&"), UInt8(ascii: "-"):
                    // `&&` and `--` are set operations.
                    if i + 1 < bytes.count && bytes[i + 1] == bytes[i] { return nil }
                    i += 1
                default: i += 1
                }
            }
            return nil
        }

        private mutating func parseQuantifier(on atom: Node) -> Node? {
            guard let c = peek() else { return atom }
            let bounds: (Int, Int?)
            switch c {
            case UInt8(ascii: "*"): bounds = (0, nil); index += 1
            case UInt8(ascii: "+"): bounds = (1, nil); index += 1
            case UInt8(ascii: "?"): bounds = (0, 1); index += 1
            case UInt8(ascii: "{"):
                index += 1
                guard let min = number() else { return nil }
                var max: Int? = min
                if peek() == UInt8(ascii: ",") {
                    index += 1
                    max = peek() == UInt8(ascii: "}") ? nil : number()
                    if max == nil && peek() != UInt8(ascii: "}") { return nil }
                }
                guard peek() == UInt8(ascii: "}"), max.map({ $0 >= min }) ?? true else { return nil }
                index += 1
                bounds = (min, max)
            default: return atom
            }
            switch atom {
            case .atStart, .atEnd: return nil
            default: break
            }
            // Lazy and possessive forms, and a second quantifier, are left to ICU: its loops treat an
            // iteration that matches nothing in ways of their own (found by a differential review).
            if let next = peek(), "*+?{".utf8.contains(next) { return nil }
            // So is a loop whose body can match nothing.
            if bounds.1.map({ $0 > 1 }) ?? true, Self.canMatchNothing(atom) { return nil }
            return .repeated(atom, min: bounds.0, max: bounds.1)
        }

        /// Whether `node` can match the empty text.
        private static func canMatchNothing(_ node: Node) -> Bool {
            switch node {
            case .set: false
            case .atStart, .atEnd: true
            case .sequence(let items): items.allSatisfy(canMatchNothing)
            case .choice(let options): options.contains(where: canMatchNothing)
            case .repeated(let item, let min, _): min == 0 || canMatchNothing(item)
            }
        }

        private mutating func number() -> Int? {
            var value = 0
            let start = index
            while let c = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) {
                value = value * 10 + Int(c - UInt8(ascii: "0"))
                guard value <= Self.countLimit else { return nil }
                index += 1
            }
            return index > start ? value : nil
        }
    }

    // MARK: Building

    /// Thompson's construction, from the end backwards: each node is emitted knowing the state it leads to.
    private struct Builder {
        enum State {
            case consume(CharacterSet, next: Int)
            case split(Int, Int)
            case atStart(next: Int)
            case atEnd(next: Int)
        }

        /// The match, as a state number.
        static let match = -1
        var states: [State] = []

        private mutating func add(_ state: State) -> Int? {
            guard states.count < ASCIIPattern.stateLimit else { return nil }
            states.append(state)
            return states.count - 1
        }

        mutating func emit(_ node: Node, next: Int) -> Int? {
            switch node {
            case .set(let set): return add(.consume(set, next: next))
            case .atStart: return add(.atStart(next: next))
            case .atEnd: return add(.atEnd(next: next))
            case .sequence(let items):
                var entry = next
                for item in items.reversed() {
                    guard let e = emit(item, next: entry) else { return nil }
                    entry = e
                }
                return entry
            case .choice(let options):
                var entries: [Int] = []
                for option in options {
                    guard let e = emit(option, next: next) else { return nil }
                    entries.append(e)
                }
                var entry = entries[entries.count - 1]
                for e in entries.dropLast().reversed() {
                    guard let s = add(.split(e, entry)) else { return nil }
                    entry = s
                }
                return entry
            case .repeated(let item, let min, let max):
                var entry = next
                if let max {
                    // x{0,k}: each copy may stop and go to `next`.
                    for _ in 0..<(max - min) {
                        guard let e = emit(item, next: entry), let s = add(.split(e, next)) else { return nil }
                        entry = s
                    }
                } else {
                    guard let loop = add(.split(next, next)), let e = emit(item, next: loop) else { return nil }
                    states[loop] = .split(e, next)
                    entry = loop
                }
                for _ in 0..<min {
                    guard let e = emit(item, next: entry) else { return nil }
                    entry = e
                }
                return entry
            }
        }
    }
}
