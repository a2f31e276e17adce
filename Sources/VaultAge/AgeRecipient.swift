import VaultSodium

/// An age X25519 recipient: the public key files are encrypted to, written `age1…` (Bech32, human-readable part
/// `age`, lower case), as `age-keygen` prints it.
///
/// C2SP `age.md`, "The X25519 recipient type": `recipient = X25519(identity, basepoint)`.
public struct AgeRecipient: Hashable, Sendable, CustomStringConvertible {
    /// The Bech32 human-readable part of a recipient.
    public static let humanReadablePart = "age"
    /// How every X25519 recipient starts.
    public static let prefix = "age1"
    /// How age's post-quantum hybrid recipients start (VaultAgePQ's `AgeHybridRecipient`, not this type).
    public static let hybridPrefix = "age1pq1"
    /// The size of the public key.
    public static let publicKeyByteCount = 32

    /// The X25519 public key (a Curve25519 u-coordinate, 32 bytes).
    public let publicKey: [UInt8]

    /// A recipient from its raw public key.
    ///
    /// - Throws: ``AgeError/wrongKeyLength(expected:actual:)`` unless `publicKey` is 32 bytes.
    public init(publicKey: some Collection<UInt8>) throws(AgeError) {
        guard publicKey.count == Self.publicKeyByteCount else {
            throw .wrongKeyLength(expected: Self.publicKeyByteCount, actual: publicKey.count)
        }
        self.publicKey = Array(publicKey)
    }

    /// Parses `age1…`, as age's `ParseX25519Recipient` does: Bech32 with the human-readable part `age` exactly
    /// (so an upper-case `AGE1…` is refused, as age refuses it) and 32 bytes of data.
    ///
    /// - Throws: ``AgeError/unsupportedKeyType(prefix:)`` for a post-quantum `age1pq1…` recipient,
    ///   ``AgeError/wrongKeyType(expected:)`` for anything else that does not start with `age1`,
    ///   ``AgeError/invalidBech32(_:)``, ``AgeError/wrongKeyLength(expected:actual:)``.
    public init(parsing string: String) throws(AgeError) {
        if string.hasPrefix(Self.hybridPrefix) { throw .unsupportedKeyType(prefix: Self.hybridPrefix) }
        guard string.hasPrefix(Self.prefix) else { throw .wrongKeyType(expected: Self.prefix) }
        let (humanReadablePart, data) = try Bech32.decode(string)
        guard humanReadablePart == Self.humanReadablePart else { throw .wrongKeyType(expected: Self.prefix) }
        try self.init(publicKey: data)
    }

    /// The recipient of a private scalar: `X25519(scalar, basepoint)`.
    init(secretKey: UnsafeRawBufferPointer) throws(AgeError) {
        var publicKey = [UInt8](repeating: 0, count: Self.publicKeyByteCount)
        do throws(SodiumFailure) {
            try publicKey.withMutableBytes { (out) throws(SodiumFailure) in
                try Sodium.x25519PublicKey(scalar: secretKey, into: out)
            }
        } catch {
            throw AgeError(error)
        }
        self.publicKey = publicKey
    }

    /// The `age1…` encoding, as `age-keygen -y` prints it.
    public var description: String {
        Bech32.encode(humanReadablePart: Self.humanReadablePart, data: publicKey)
    }
}
