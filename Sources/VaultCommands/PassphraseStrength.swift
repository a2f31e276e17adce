import FoundationEssentials
import Glibc
import VaultCore
import VaultSodium

/// How many guesses find a passphrase, estimated as zxcvbn does (Wheeler, "zxcvbn: Low-Budget Password Strength
/// Estimation", USENIX Security 2016), compactly: the passphrase is covered by the sequence of patterns an attacker
/// would try that needs the fewest guesses (the 1,000 most common passwords, with capitals, l33t substitutions and
/// reversal; keyboard walks on QWERTY and the keypad; sequences such as `abc` or `9876`; repeats; years and dates;
/// anything else tried character by character), and the guesses are those of the sequence:
/// `k! × Π guesses(pattern) + 10000^(k−1)` for `k` patterns. No word list besides the common passwords: a
/// passphrase of ordinary words counts as characters, which overestimates it, as zxcvbn without its dictionaries
/// would.
///
/// The passphrase is read as Unicode scalars into one array whose storage is zeroed before it is released; only the
/// first ``maximumScalarCount`` scalars are examined (more is strong in any case). Nothing of it is ever shown: the
/// reasons name kinds of pattern, not what matched.
package struct PassphraseStrength: Equatable {
    /// log10 of the estimated guesses.
    package let log10Guesses: Double
    /// Why it is weak, in words (kinds of pattern, never the passphrase or part of it); empty for a strong one.
    package let reasons: [String]

    /// The bound below which `vault init` warns: 10^10 guesses (zxcvbn's "very unguessable", its highest score).
    /// A vault file goes to git or S3, where whoever gets a copy can guess offline; Argon2id makes each guess cost
    /// about 0.1-1 s of a core and 64 MiB or more, so 10^10 guesses is years of a large cluster, 10^8 a week.
    package static let minimumLog10Guesses = 10.0
    package static let maximumScalarCount = 128

    package var isWeak: Bool { log10Guesses < Self.minimumLog10Guesses }

    /// The estimate for `passphrase` (its bytes as UTF-8; invalid sequences count as one unusual character each).
    package static func estimate(_ passphrase: SecureBytes) -> PassphraseStrength {
        var scalars: [UInt32] = []
        scalars.reserveCapacity(min(passphrase.count, maximumScalarCount))
        defer { scalars.withUnsafeMutableBytes { if let base = $0.baseAddress { Sodium.zero(base, byteCount: $0.count) } } }
        passphrase.withUnsafeBytes { bytes in
            var decoder = UTF8()
            var iterator = bytes.makeIterator()
            decoding: while scalars.count < maximumScalarCount {
                switch decoder.decode(&iterator) {
                case .scalarValue(let scalar): scalars.append(scalar.value)
                case .error: scalars.append(0xFFFD)
                case .emptyInput: break decoding
                }
            }
        }
        let sequence = PatternSearch(scalars).bestSequence()
        return PassphraseStrength(log10Guesses: sequence.log10Guesses, reasons: sequence.log10Guesses < minimumLog10Guesses ? reasons(sequence, count: scalars.count) : [])
    }

    /// The words for what made a weak passphrase weak.
    static func reasons(_ sequence: PatternSearch.Sequence, count: Int) -> [String] {
        var reasons: [String] = []
        func add(_ reason: String) { if !reasons.contains(reason) { reasons.append(reason) } }
        for pattern in sequence.patterns {
            switch pattern.kind {
            case .common where pattern.length == count: add("it is one of the 1,000 most common passwords")
            case .common: add("it contains a common password")
            case .keyboard: add("it has a keyboard pattern (like qwerty or 1qaz)")
            case .sequence: add("it has a sequence (like abc or 1234)")
            case .repeated: add("it has repeated characters or groups (like aaa or abcabc)")
            case .date: add("it has a year or a date")
            case .characters: break
            }
        }
        if count < 12 { add("it is short (\(count) character\(count == 1 ? "" : "s"))") }
        if reasons.isEmpty { add("it has too few characters of too few kinds") }
        return reasons
    }
}

/// A part of the passphrase that an attacker's guessing covers: characters `start..<end` and the guesses for them.
struct Pattern {
    enum Kind: Equatable { case common, keyboard, sequence, repeated, date, characters }
    var start: Int
    var end: Int
    var kind: Kind
    var log10Guesses: Double
    var length: Int { end - start }
}

/// zxcvbn's search: every pattern found, then the cheapest sequence covering the whole passphrase.
struct PatternSearch {
    let scalars: [UInt32]

    init(_ scalars: [UInt32]) { self.scalars = scalars }

    struct Sequence {
        var patterns: [Pattern]
        var log10Guesses: Double
    }

    /// The sequence of patterns with the fewest guesses (dynamic programming over the end position and the number of
    /// patterns, as zxcvbn's `most_guessable_match_sequence`). Between patterns, characters (one pattern per run).
    func bestSequence() -> Sequence {
        let count = scalars.count
        guard count > 0 else { return Sequence(patterns: [], log10Guesses: 0) }
        let found = Dictionary(grouping: PatternMatcher(scalars).all(), by: \.end)
        // best[end][k]: the cheapest sequence of k patterns covering 0..<end: log10 of its product of guesses, its
        // last pattern, (back pointer) its k − 1 patterns covering 0..<last.start.
        var best: [[Int: (product: Double, last: Pattern?)]] = Array(repeating: [:], count: count + 1)
        best[0][0] = (0, nil)
        func offer(_ pattern: Pattern) {
            for (k, previous) in best[pattern.start] {
                if pattern.kind == .characters, previous.last?.kind == .characters { continue }
                let product = previous.product + pattern.log10Guesses
                if let known = best[pattern.end][k + 1], known.product <= product { continue }
                best[pattern.end][k + 1] = (product, pattern)
            }
        }
        for end in 1...count {
            for pattern in found[end] ?? [] { offer(pattern) }
            for start in 0..<end { offer(PatternMatcher.characters(start, end, scalars)) }
        }
        var (k, _) = best[count].min { total($0.value.product, $0.key) < total($1.value.product, $1.key) }!
        let guesses = total(best[count][k]!.product, k)
        var patterns: [Pattern] = []
        var end = count
        while k > 0, let last = best[end][k]?.last {
            patterns.insert(last, at: 0)
            (end, k) = (last.start, k - 1)
        }
        return Sequence(patterns: patterns, log10Guesses: guesses)
    }

    /// log10(k! × 10^product + 10000^(k−1)).
    func total(_ product: Double, _ k: Int) -> Double {
        let ordered = product + (1...max(1, k)).reduce(0.0) { $0 + log10(Double($1)) }
        return Self.log10Sum(ordered, 4 * Double(k - 1))
    }

    /// log10(10^a + 10^b).
    static func log10Sum(_ a: Double, _ b: Double) -> Double {
        let (high, low) = a > b ? (a, b) : (b, a)
        return high + log10(1 + pow(10, low - high))
    }
}
