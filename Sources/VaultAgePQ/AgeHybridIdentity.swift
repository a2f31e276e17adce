import Crypto
import VaultAge
import VaultCore

/// An age post-quantum hybrid identity: the 32-byte X-Wing seed that unwraps `mlkem768x25519` stanzas addressed to
/// its ``recipient``, written `AGE-SECRET-KEY-PQ-1…` (Bech32, human-readable part `AGE-SECRET-KEY-PQ-`, upper case),
/// as age 1.3's `age-keygen -pq` writes it.
///
/// The seed lives in ``SecureBytes``; the expanded key swift-crypto derives from it (ML-KEM's and X25519's private
/// keys) lives in swift-crypto's own heap object for as long as the identity does: BoringSSL's `XWING_private_key`,
/// not guarded memory (SECURITY.md, "Post-quantum recipients"). `description` shows the recipient, never the key.
///
/// C2SP `age.md`: `identity = read(CSPRNG, 32)`.
public struct AgeHybridIdentity: Sendable, CustomStringConvertible {
    /// The Bech32 human-readable part of a hybrid identity.
    public static let humanReadablePart = "AGE-SECRET-KEY-PQ-"
    /// How every hybrid identity starts.
    public static let prefix = AgeIdentity.hybridPrefix
    /// The size of the seed.
    public static let seedByteCount = 32

    /// The seed (32 bytes).
    let seed: SecureBytes
    /// The private key swift-crypto expands from it.
    let privateKey: XWingMLKEM768X25519.PrivateKey
    /// The public key that goes with it.
    public let recipient: AgeHybridRecipient

    /// An identity from its seed.
    ///
    /// - Throws: ``VaultAge/AgeError/wrongKeyLength(expected:actual:)`` unless `seed` is 32 bytes.
    public init(seed: SecureBytes) throws(AgeError) {
        guard seed.count == Self.seedByteCount else {
            throw .wrongKeyLength(expected: Self.seedByteCount, actual: seed.count)
        }
        do {
            privateKey = try seed.withUnsafeBytes { try XWingMLKEM768X25519.PrivateKey(seedRepresentation: $0, publicKey: nil) }
        } catch {
            throw .cryptoFailure(function: "XWING_parse_private_key")
        }
        self.seed = seed
        self.recipient = AgeHybridRecipient(key: privateKey.publicKey)
    }

    /// A new identity: 32 bytes from the kernel's CSPRNG, as `age-keygen -pq` makes one.
    public static func generate() -> AgeHybridIdentity {
        do {
            return try AgeHybridIdentity(seed: .random(count: seedByteCount))
        } catch {
            // The length is right, and X-Wing expands any 32-byte seed.
            fatalError("a generated hybrid identity was refused: \(error)")
        }
    }

    /// Parses one `AGE-SECRET-KEY-PQ-1…` held as bytes (from a file read into guarded memory), as age's
    /// `ParseHybridIdentity` does: the human-readable part `AGE-SECRET-KEY-PQ-` exactly (so lower case is refused)
    /// and 32 bytes of data. Nothing else may be on the line.
    ///
    /// - Throws: ``VaultAge/AgeError/wrongKeyType(expected:)`` for anything that does not start with
    ///   `AGE-SECRET-KEY-PQ-1` (an X25519 `AGE-SECRET-KEY-1…` included), ``VaultAge/AgeError/invalidBech32(_:)``,
    ///   ``VaultAge/AgeError/wrongKeyLength(expected:actual:)``.
    public init(parsing text: UnsafeRawBufferPointer) throws(AgeError) {
        guard text.starts(with: Self.prefix.utf8) else { throw .wrongKeyType(expected: Self.prefix) }
        let (humanReadablePart, data) = try Bech32.decode(text)
        guard humanReadablePart == Self.humanReadablePart else { throw .wrongKeyType(expected: Self.prefix) }
        try self.init(seed: data)
    }

    /// Parses one `AGE-SECRET-KEY-PQ-1…` given as a `String` (tests; prefer guarded bytes).
    public init(parsing string: String) throws(AgeError) {
        self = try SecureBytes(string: string).withUnsafeBytes { (bytes) throws(AgeError) in try AgeHybridIdentity(parsing: bytes) }
    }

    /// The `AGE-SECRET-KEY-PQ-1…` encoding (upper case, as age writes it) in guarded memory.
    public func encoded() -> SecureBytes {
        let count = Bech32.encodedByteCount(
            humanReadablePartByteCount: Self.humanReadablePart.utf8.count, dataByteCount: Self.seedByteCount)
        return SecureBytes(count: count) { output in
            seed.withUnsafeBytes { Bech32.encode(humanReadablePart: Self.humanReadablePart, data: $0, into: output) }
        }
    }

    /// `AgeHybridIdentity(age1pq1…)`: the recipient's first characters; the key is never shown.
    public var description: String { "AgeHybridIdentity(\(recipient.description.prefix(20))…, secret key redacted)" }
}

extension AgeHybridIdentity: AgeStanzaIdentity {
    public static var stanzaType: String { MLKEM768X25519Stanza.stanzaType }

    public static func checkForm(of stanza: AgeStanza) throws(AgeError) {
        _ = try MLKEM768X25519Stanza(stanza)
    }

    public func unwrap(_ stanza: AgeStanza) throws(AgeError) -> SecureBytes {
        try MLKEM768X25519Stanza(stanza).unwrap(with: self)
    }

    public var recipientEncoding: String { recipient.description }

    public static func isValidRecipient(_ recipient: String) -> Bool { (try? AgeHybridRecipient(parsing: recipient)) != nil }
}
