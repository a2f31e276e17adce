import FoundationEssentials
import Glibc
import VaultSodium

/// The patterns of ``PassphraseStrength``, each with zxcvbn's guesses (its `scoring.py`, simplified where noted).
struct PatternMatcher {
    let scalars: [UInt32]
    var count: Int { scalars.count }

    init(_ scalars: [UInt32]) { self.scalars = scalars }

    func all() -> [Pattern] {
        (common() + keyboard(Keyboard.qwerty) + keyboard(Keyboard.keypad) + sequences() + repeats() + dates()).map(floored)
    }

    /// A part shorter than the whole counts at least 10 guesses (one character) or 50 (more), as in zxcvbn.
    func floored(_ pattern: Pattern) -> Pattern {
        guard pattern.length < count else { return pattern }
        var pattern = pattern
        pattern.log10Guesses = max(pattern.log10Guesses, log10(pattern.length == 1 ? 10 : 50))
        return pattern
    }

    /// Characters tried one by one: 10 guesses each (zxcvbn's bruteforce cardinality), at least 11 or 51.
    static func characters(_ start: Int, _ end: Int, _ scalars: [UInt32]) -> Pattern {
        let length = end - start
        return Pattern(start: start, end: end, kind: .characters, log10Guesses: max(Double(length), log10(length == 1 ? 11 : 51)))
    }

    static func isLower(_ c: UInt32) -> Bool { (0x61...0x7A).contains(c) }
    static func isUpper(_ c: UInt32) -> Bool { (0x41...0x5A).contains(c) }
    static func isDigit(_ c: UInt32) -> Bool { (0x30...0x39).contains(c) }

    /// log10 of the binomial coefficient.
    static func log10Choose(_ n: Int, _ k: Int) -> Double {
        guard k >= 0, k <= n else { return -.infinity }
        return (0..<k).reduce(0.0) { $0 + log10(Double(n - $1)) - log10(Double($1 + 1)) }
    }

    /// log10 of Σ_{i=1..min(a,b)} C(a+b, i), or log10(2) when either is 0: the ways `a` changed and `b` unchanged
    /// characters could be placed (zxcvbn's capitals, l33t and shifted variations).
    static func log10Variations(_ a: Int, _ b: Int) -> Double {
        guard a > 0, b > 0 else { return log10(2.0) }
        let terms = (1...min(a, b)).map { log10Choose(a + b, $0) }
        let high = terms.max()!
        return high + log10(terms.reduce(0.0) { $0 + pow(10, $1 - high) })
    }

    // MARK: Common passwords, with capitals, l33t and reversed

    /// l33t substitutions: the character typed and the letters it stands for.
    static let l33t: [UInt32: [UInt8]] = [
        0x34: [0x61], 0x40: [0x61], 0x38: [0x62], 0x28: [0x63], 0x7B: [0x63], 0x5B: [0x63], 0x3C: [0x63], 0x33: [0x65],
        0x36: [0x67], 0x39: [0x67], 0x31: [0x69, 0x6C], 0x21: [0x69], 0x7C: [0x69, 0x6C], 0x37: [0x6C, 0x74], 0x30: [0x6F],
        0x24: [0x73], 0x35: [0x73], 0x2B: [0x74], 0x25: [0x78], 0x32: [0x7A],
    ]

    static let words: [(word: [UInt8], rank: Int)] = CommonPasswords.text.split(separator: " ").enumerated().map { (Array($1.utf8), $0 + 1) }

    func common() -> [Pattern] {
        var found: [Pattern] = []
        for (word, rank) in Self.words where word.count <= count {
            for start in 0...(count - word.count) {
                for reversed in [false, true] {
                    var upper = 0, lower = 0, firstUpper = false, lastUpper = false
                    var substituted: [UInt32: (typed: Int, letter: UInt8)] = [:]
                    var matches = true
                    for offset in 0..<word.count {
                        let index = start + (reversed ? word.count - 1 - offset : offset)
                        let c = scalars[index], w = word[offset]
                        let folded = Self.isUpper(c) ? c + 0x20 : c
                        if folded == UInt32(w) {
                            if Self.isUpper(c) {
                                upper += 1
                                if index == start { firstUpper = true }
                                if index == start + word.count - 1 { lastUpper = true }
                            } else if Self.isLower(c) {
                                lower += 1
                            }
                        } else if Self.l33t[c]?.contains(w) == true {
                            substituted[c, default: (0, w)].typed += 1
                        } else {
                            matches = false
                            break
                        }
                    }
                    guard matches, !(reversed && word.count < 3) else { continue }
                    var guesses = log10(Double(rank))
                    if upper > 0 {
                        let simple = lower == 0 || (upper == 1 && (firstUpper || lastUpper))
                        guesses += simple ? log10(2.0) : Self.log10Variations(upper, lower)
                    }
                    for (_, sub) in substituted {
                        let plain = max(0, word.filter { $0 == sub.letter }.count - sub.typed)
                        guesses += Self.log10Variations(sub.typed, plain)
                    }
                    if reversed { guesses += log10(2.0) }
                    found.append(Pattern(start: start, end: start + word.count, kind: .common, log10Guesses: guesses))
                }
            }
        }
        return found
    }

    // MARK: Keyboard walks

    /// A keyboard as rows of keys (unshifted, shifted) and each row's offset in key widths.
    struct Keyboard {
        let position: [UInt32: (row: Int, x: Double, shifted: Bool)]
        let startingPositions: Double
        let averageDegree: Double

        init(rows: [(plain: String, shifted: String?, offset: Double)]) {
            var position: [UInt32: (row: Int, x: Double, shifted: Bool)] = [:]
            for (row, keys) in rows.enumerated() {
                for (column, scalar) in keys.plain.unicodeScalars.enumerated() { position[scalar.value] = (row, keys.offset + Double(column), false) }
                for (column, scalar) in (keys.shifted ?? "").unicodeScalars.enumerated() { position[scalar.value] = (row, keys.offset + Double(column), true) }
            }
            self.position = position
            startingPositions = Double(position.count)
            let degrees = position.keys.map { key in position.keys.filter { Keyboard.adjacent(position[key]!, position[$0]!) }.count }
            averageDegree = Double(degrees.reduce(0, +)) / Double(max(1, degrees.count))
        }

        static func adjacent(_ a: (row: Int, x: Double, shifted: Bool), _ b: (row: Int, x: Double, shifted: Bool)) -> Bool {
            abs(a.row - b.row) <= 1 && abs(a.x - b.x) <= 1 && !(a.row == b.row && a.x == b.x)
        }

        static let qwerty = Keyboard(rows: [
            ("`1234567890-=", "~!@#$%^&*()_+", 0), ("qwertyuiop[]\\", "QWERTYUIOP{}|", 1.5), ("asdfghjkl;'", "ASDFGHJKL:\"", 1.75),
            ("zxcvbnm,./", "ZXCVBNM<>?", 2.25),
        ])
        static let keypad = Keyboard(rows: [("/*-", nil, 1), ("789+", nil, 0), ("456", nil, 0), ("123", nil, 0), ("0.", nil, 0)])
    }

    func keyboard(_ keyboard: Keyboard) -> [Pattern] {
        var found: [Pattern] = []
        var start = 0
        while start < count {
            var end = start + 1
            var turns = 0, shifted = 0
            var direction: (Int, Double)?
            if keyboard.position[scalars[start]]?.shifted == true { shifted += 1 }
            while end < count, let a = keyboard.position[scalars[end - 1]], let b = keyboard.position[scalars[end]], Keyboard.adjacent(a, b) {
                let step = (b.row - a.row, b.x - a.x)
                if direction.map({ $0.0 != step.0 || $0.1 != step.1 }) ?? true { turns += 1 }
                direction = step
                if b.shifted { shifted += 1 }
                end += 1
            }
            let length = end - start
            if length >= 3 {
                // Σ_{i=2..L} Σ_{j=1..min(t,i−1)} C(i−1, j−1) × s × d^j
                var guesses = 0.0
                for i in 2...length {
                    for j in 1...min(turns, i - 1) {
                        guesses += pow(10, Self.log10Choose(i - 1, j - 1)) * keyboard.startingPositions * pow(keyboard.averageDegree, Double(j))
                    }
                }
                var log = log10(guesses)
                if shifted > 0 { log += Self.log10Variations(shifted, length - shifted) }
                found.append(Pattern(start: start, end: end, kind: .keyboard, log10Guesses: log))
            }
            start = max(start + 1, end - 1)
        }
        return found
    }

    // MARK: Sequences, repeats, dates

    /// Runs of 3 or more letters of one case or digits whose code points go up or down by one step of 1 to 5.
    func sequences() -> [Pattern] {
        func kind(_ c: UInt32) -> Int? { Self.isLower(c) ? 0 : Self.isUpper(c) ? 1 : Self.isDigit(c) ? 2 : nil }
        var found: [Pattern] = []
        var start = 0
        while start + 2 < count {
            let delta = Int64(scalars[start + 1]) - Int64(scalars[start])
            var end = start + 1
            if let k = kind(scalars[start]), (1...5).contains(abs(delta)) {
                while end < count, kind(scalars[end]) == k, Int64(scalars[end]) - Int64(scalars[end - 1]) == delta { end += 1 }
            }
            if end - start >= 3 {
                let first = scalars[start]
                let base: Double = [0x61, 0x41, 0x7A, 0x5A, 0x30, 0x31, 0x39].contains(first) ? 4 : Self.isDigit(first) ? 10 : 26
                let log = log10(base * Double(end - start) * (delta < 0 ? 2 : 1))
                found.append(Pattern(start: start, end: end, kind: .sequence, log10Guesses: log))
                start = end - 1
            } else {
                start += 1
            }
        }
        return found
    }

    /// A group of characters typed twice or more in a row: the group's own guesses times the count.
    func repeats() -> [Pattern] {
        var found: [Pattern] = []
        var start = 0
        while start < count {
            var bestEnd = start, bestUnit = 0
            for unit in 1...max(1, (count - start) / 2) where start + 2 * unit <= count {
                var end = start + unit
                while end + unit <= count, (0..<unit).allSatisfy({ scalars[end + $0] == scalars[start + $0] }) { end += unit }
                if end - start >= 2 * unit, end > bestEnd { (bestEnd, bestUnit) = (end, unit) }
            }
            guard bestUnit > 0 else {
                start += 1
                continue
            }
            var unit = Array(scalars[start..<(start + bestUnit)])
            let base = PatternSearch(unit).bestSequence().log10Guesses
            unit.withUnsafeMutableBytes { if let base = $0.baseAddress { Sodium.zero(base, byteCount: $0.count) } }
            found.append(Pattern(start: start, end: bestEnd, kind: .repeated, log10Guesses: base + log10(Double((bestEnd - start) / bestUnit))))
            start = bestEnd
        }
        return found
    }

    /// Years 1900-2099 (4 digits) and dates of 6 or 8 digits (day, month and year in any usual order): an attacker
    /// tries years near now first (at least 20 of them), 365 days each.
    func dates(now: Int = 2026) -> [Pattern] {
        func number(_ start: Int, _ length: Int) -> Int? {
            guard start + length <= count, (start..<(start + length)).allSatisfy({ Self.isDigit(scalars[$0]) }) else { return nil }
            return (start..<(start + length)).reduce(0) { $0 * 10 + Int(scalars[$1] - 0x30) }
        }
        func span(_ year: Int) -> Double { Double(max(abs(year - now), 20)) }
        var found: [Pattern] = []
        for start in 0..<count {
            if let year = number(start, 4), (1900...2099).contains(year) {
                found.append(Pattern(start: start, end: start + 4, kind: .date, log10Guesses: log10(span(year))))
            }
            for length in [6, 8] {
                guard let digits = number(start, length) else { continue }
                let yearLength = length - 4
                let first = digits / Int(pow(10, Double(length - 2))), rest = digits % Int(pow(10, Double(length - 2)))
                // yyyy|yy then mm dd; dd mm then yyyy|yy; mm dd then yyyy|yy.
                let head = digits / Int(pow(10, Double(4))), tail = digits % 10_000
                let readings = [
                    (year: head, month: tail / 100, day: tail % 100),
                    (year: rest % Int(pow(10, Double(yearLength))), month: rest / Int(pow(10, Double(yearLength))), day: first),
                    (year: rest % Int(pow(10, Double(yearLength))), month: first, day: rest / Int(pow(10, Double(yearLength)))),
                ]
                for reading in readings where (1...12).contains(reading.month) && (1...31).contains(reading.day) {
                    let year = yearLength == 2 ? (reading.year > 50 ? 1900 : 2000) + reading.year : reading.year
                    guard (1900...2099).contains(year) else { continue }
                    found.append(Pattern(start: start, end: start + length, kind: .date, log10Guesses: log10(365 * span(year))))
                    break
                }
            }
        }
        return found
    }
}
