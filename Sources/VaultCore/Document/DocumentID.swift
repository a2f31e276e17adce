import VaultSodium

/// 16 random bytes naming something for life: a vault (``VaultDocument/vaultID``), an entry (its name may change,
/// its id does not), a data key.
public struct DocumentID: Hashable, Comparable, Sendable, CustomStringConvertible {
    let high: UInt64
    let low: UInt64

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A new random id.
    public static func random() -> DocumentID {
        var bytes = (UInt64(0), UInt64(0))
        withUnsafeMutableBytes(of: &bytes) { Sodium.fillRandom($0) }
        return DocumentID(high: bytes.0, low: bytes.1)
    }

    /// The id of 16 bytes (big-endian halves, as the file stores it), `nil` for another count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.init(high: bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }, low: bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) })
    }

    /// The 16 bytes, as the file stores them.
    public var bytes: [UInt8] {
        withUnsafeBytes(of: (high.bigEndian, low.bigEndian), Array.init)
    }

    public static func < (a: DocumentID, b: DocumentID) -> Bool { (a.high, a.low) < (b.high, b.low) }

    /// The hash tables' hash: two multiplications (the halves, each mixed with a key drawn once per process, then
    /// their fold with the table's seed) (the default runs a SipHash per lookup: a merge of two 10,000-entry copies makes
    /// ~100,000 lookups, and hashing was a fifth of its time). Ids are random, but whoever can seal the vault (a
    /// passphrase holder, a recipient, a copy we merge) chooses the ids in it: the unknown key keeps them from
    /// choosing ids that collide (one bucket for all, every open and merge quadratic) in every process.
    public func _rawHashValue(seed: Int) -> Int {
        let key = Self.hashKey
        // The halves multiplied, each under a key word (wyhash's "mum"), then the fold and the seed multiplied again,
        // so that every bit of the id reaches the low bits a table uses.
        let halves = (high ^ key.0).multipliedFullWidth(by: low ^ key.1)
        let mixed = (halves.high ^ halves.low ^ UInt64(UInt(bitPattern: seed)) ^ key.2).multipliedFullWidth(by: key.3)
        return Int(truncatingIfNeeded: mixed.high ^ mixed.low)
    }

    /// Four random words, drawn once per process (``_rawHashValue(seed:)``); the last odd.
    private static let hashKey: (UInt64, UInt64, UInt64, UInt64) = {
        var key = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        withUnsafeMutableBytes(of: &key) { Sodium.fillRandom($0) }
        return (key.0, key.1, key.2, key.3 | 1)
    }()

    public func hash(into hasher: inout Hasher) {
        hasher.combine(high)
        hasher.combine(low)
    }

    /// 32 lowercase hex digits.
    public var description: String { Posix.hex(bytes) }

    /// The id of 32 hex digits (``description``), `nil` for anything else.
    init?(hex: String) {
        guard let bytes = Posix.unhex(hex) else { return nil }
        self.init(bytes: bytes)
    }
}
