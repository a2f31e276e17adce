import Crypto
import VaultAge

/// An age post-quantum hybrid recipient: the ML-KEM-768 + X25519 (X-Wing) public key files are encrypted to,
/// written `age1pq1…` (Bech32, human-readable part `age1pq`, lower case; about 1,960 characters), as age 1.3's
/// `age-keygen -pq` prints it.
///
/// C2SP `age.md`, "The MLKEM768-X25519 (i.e. X-Wing) hybrid post-quantum recipient type":
/// `recipient = PrivateKeyToPublicKey(identity)`, 1,216 bytes (ML-KEM-768's 1,184, then X25519's 32).
public struct AgeHybridRecipient: Hashable, Sendable, CustomStringConvertible {
    /// The Bech32 human-readable part of a hybrid recipient.
    public static let humanReadablePart = "age1pq"
    /// How every hybrid recipient starts.
    public static let prefix = AgeRecipient.hybridPrefix
    /// The size of the public key.
    public static let publicKeyByteCount = 1216

    /// The X-Wing public key (1,216 bytes).
    public let publicKey: [UInt8]
    /// The same key as swift-crypto holds it.
    let key: XWingMLKEM768X25519.PublicKey

    /// A recipient from its raw public key.
    ///
    /// - Throws: ``VaultAge/AgeError/wrongKeyLength(expected:actual:)`` unless `publicKey` is 1,216 bytes;
    ///   ``VaultAge/AgeError/invalidHybridRecipientKey`` when its ML-KEM part is not well formed (a coefficient
    ///   not below q = 3329, as age refuses it).
    public init(publicKey: some Collection<UInt8>) throws(AgeError) {
        guard publicKey.count == Self.publicKeyByteCount else {
            throw .wrongKeyLength(expected: Self.publicKeyByteCount, actual: publicKey.count)
        }
        let bytes = Array(publicKey)
        // FIPS 203's modulus check on the ML-KEM-768 part (as Go's mlkem, under age, makes it; BoringSSL's X-Wing
        // parser does not): 768 12-bit coefficients, each below q = 3329. The last 32 + 32 bytes are ρ and X25519's.
        guard Self.mlkemCoefficientsAreReduced(bytes) else { throw .invalidHybridRecipientKey }
        do {
            key = try XWingMLKEM768X25519.PublicKey(rawRepresentation: bytes)
        } catch {
            throw .invalidHybridRecipientKey
        }
        self.publicKey = bytes
    }

    /// Whether the ML-KEM-768 encapsulation key's 768 coefficients (1,152 bytes, two 12-bit values per 3 bytes)
    /// are all below 3329.
    static func mlkemCoefficientsAreReduced(_ key: [UInt8]) -> Bool {
        stride(from: 0, to: 1152, by: 3).allSatisfy { i in
            let low = UInt16(key[i]) | UInt16(key[i + 1] & 0x0F) << 8
            let high = UInt16(key[i + 1] >> 4) | UInt16(key[i + 2]) << 4
            return low < 3329 && high < 3329
        }
    }

    init(key: XWingMLKEM768X25519.PublicKey) {
        self.key = key
        self.publicKey = Array(key.rawRepresentation)
    }

    /// Parses `age1pq1…`, as age's `ParseHybridRecipient` does: Bech32 with the human-readable part `age1pq`
    /// exactly (so upper case is refused) and a well-formed 1,216-byte X-Wing public key.
    ///
    /// - Throws: ``VaultAge/AgeError/wrongKeyType(expected:)`` for a string that does not start with `age1pq1`,
    ///   ``VaultAge/AgeError/invalidBech32(_:)``, ``VaultAge/AgeError/wrongKeyLength(expected:actual:)``,
    ///   ``VaultAge/AgeError/invalidHybridRecipientKey``.
    public init(parsing string: String) throws(AgeError) {
        guard string.hasPrefix(Self.prefix) else { throw .wrongKeyType(expected: Self.prefix) }
        let (humanReadablePart, data) = try Bech32.decode(string)
        guard humanReadablePart == Self.humanReadablePart else { throw .wrongKeyType(expected: Self.prefix) }
        try self.init(publicKey: data)
    }

    /// The `age1pq1…` encoding.
    public var description: String {
        Bech32.encode(humanReadablePart: Self.humanReadablePart, data: publicKey)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.publicKey == rhs.publicKey }
    public func hash(into hasher: inout Hasher) { hasher.combine(publicKey) }
}
