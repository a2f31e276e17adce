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
    ///   ``VaultAge/AgeError/invalidHybridRecipientKey`` when its ML-KEM part is not well formed.
    public init(publicKey: some Collection<UInt8>) throws(AgeError) {
        guard publicKey.count == Self.publicKeyByteCount else {
            throw .wrongKeyLength(expected: Self.publicKeyByteCount, actual: publicKey.count)
        }
        let bytes = Array(publicKey)
        do {
            key = try XWingMLKEM768X25519.PublicKey(rawRepresentation: bytes)
        } catch {
            throw .invalidHybridRecipientKey
        }
        self.publicKey = bytes
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
