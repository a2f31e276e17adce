import VaultSodium
#if canImport(Glibc)
import Glibc
#endif

/// New random secrets, built in guarded memory: characters drawn from an alphabet, or words from a list, each
/// drawn with libsodium's `randombytes_uniform` (uniform: no modulo bias).
public enum SecretGenerator {
    /// `count` bytes, each drawn uniformly from `alphabet` (distinct ASCII characters).
    ///
    /// - Precondition: `alphabet` has 2 to 256 elements and `count` is positive.
    public static func characters(count: Int, from alphabet: [UInt8]) -> SecureBytes {
        precondition(count > 0 && (2...256).contains(alphabet.count))
        return SecureBytes(count: count) { buffer in
            for index in 0..<count {
                buffer[index] = alphabet[Int(Sodium.uniformRandom(below: UInt32(alphabet.count)))]
            }
        }
    }

    /// `count` words drawn uniformly from `list` (with repetition), joined by `separator`.
    ///
    /// - Precondition: `list` has at least 2 words and `count` is positive.
    public static func words(count: Int, from list: [String], separator: String) -> SecureBytes {
        precondition(count > 0 && list.count >= 2 && list.count <= Int(UInt32.max))
        // Drawn straight into guarded memory sized for the longest words: the picks never sit in ordinary memory.
        let longest = list.map(\.utf8.count).max() ?? 0
        return SecureBytes(capacity: count * longest + separator.utf8.count * (count - 1)) { out in
            for index in 0..<count {
                if index > 0 { out.append(separator) }
                out.append(list[Int(Sodium.uniformRandom(below: UInt32(list.count)))])
            }
        }
    }

    /// The entropy in bits of `count` uniform, independent draws from `choices` possibilities.
    public static func entropyBits(count: Int, choices: Int) -> Double {
        Double(count) * log2(Double(choices))
    }
}
