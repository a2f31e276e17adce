import VaultCore
import VaultSodium

/// age's `X25519` recipient stanza (C2SP `age.md`, "X25519 recipient stanza"): a 16-byte file key wrapped for one
/// ``AgeRecipient``, unwrapped with its ``AgeIdentity``.
///
///     -> X25519 <base64(ephemeral share)>
///     <base64(body)>
///
///     ephemeral secret = read(CSPRNG, 32)
///     ephemeral share  = X25519(ephemeral secret, basepoint)
///     salt             = ephemeral share || recipient
///     shared secret    = X25519(ephemeral secret, recipient)
///     wrap key         = HKDF-SHA-256(ikm = shared secret, salt, info = "age-encryption.org/v1/X25519")
///     body             = ChaCha20-Poly1305(key = wrap key, nonce = 12 zero bytes, plaintext = file key)
///
/// The ephemeral secret, the shared secret and the wrap key live only in guarded memory; the file key unwrapped
/// is ``SecureBytes``.
public struct X25519Stanza: Equatable, Sendable {
    /// The stanza's type, its first argument.
    public static let stanzaType = "X25519"
    /// The HKDF `info` of the wrap key.
    public static let label = "age-encryption.org/v1/X25519"
    /// The size of the file key it wraps.
    public static let fileKeyByteCount = AgeHeader.fileKeyByteCount
    /// The size of the ephemeral share.
    public static let shareByteCount = AgeRecipient.publicKeyByteCount
    /// The size of the body: the file key and the Poly1305 tag.
    public static let bodyByteCount = fileKeyByteCount + Sodium.chaCha20Poly1305TagByteCount

    /// The ephemeral share (an X25519 public key, 32 bytes).
    public let ephemeralShare: [UInt8]
    /// The wrapped file key and its tag (32 bytes).
    public let body: [UInt8]

    /// The fixed all-zero ChaCha20-Poly1305 nonce: every wrap key is used once.
    static let nonce = [UInt8](repeating: 0, count: Sodium.chaCha20Poly1305NonceByteCount)

    private init(ephemeralShare: [UInt8], body: [UInt8]) {
        self.ephemeralShare = ephemeralShare
        self.body = body
    }

    /// Reads an `X25519` stanza with the checks the spec requires of an identity implementation: exactly one
    /// argument after the type, a canonical base64 share of 32 bytes, a body of exactly 32 bytes (before any
    /// decryption, against partitioning oracles).
    ///
    /// - Throws: ``AgeError/malformedStanza(_:)``: `.notX25519` for a stanza of another type (which a header's
    ///   reader skips rather than refuses: see ``AgeHeader/unwrapFileKey(with:)``), or what is wrong.
    public init(_ stanza: AgeStanza) throws(AgeError) {
        guard stanza.type == Self.stanzaType else { throw .malformedStanza(.notX25519) }
        guard stanza.arguments.count == 1 else { throw .malformedStanza(.wrongArgumentCount) }
        let share = try AgeBase64.decode(stanza.arguments[0].utf8, failure: .malformedStanza(.shareNotCanonical))
        guard share.count == Self.shareByteCount else { throw .malformedStanza(.wrongShareLength) }
        guard stanza.body.count == Self.bodyByteCount else { throw .malformedStanza(.wrongBodyLength) }
        self.init(ephemeralShare: share, body: stanza.body)
    }

    /// The stanza as it goes into a header.
    public var stanza: AgeStanza {
        AgeStanza(type: Self.stanzaType, arguments: [AgeBase64.encode(ephemeralShare)], body: body)
    }

    /// Wraps `fileKey` (16 bytes) for `recipient` under a fresh ephemeral secret.
    ///
    /// - Throws: ``AgeError/wrongKeyLength(expected:actual:)`` unless `fileKey` is 16 bytes;
    ///   ``AgeError/invalidRecipientKey`` when the recipient's key is a point of small order.
    public static func wrap(_ fileKey: SecureBytes, for recipient: AgeRecipient) throws(AgeError) -> X25519Stanza {
        try wrap(fileKey, for: recipient, ephemeralSecret: .random(count: Sodium.x25519ScalarByteCount))
    }

    /// Wraps `fileKey` for `recipient` under a given ephemeral secret: for reproducible tests only (an ephemeral
    /// secret used twice ties the two stanzas' wrap keys together).
    package static func wrap(
        _ fileKey: SecureBytes, for recipient: AgeRecipient, ephemeralSecret: SecureBytes
    ) throws(AgeError) -> X25519Stanza {
        guard fileKey.count == fileKeyByteCount else {
            throw .wrongKeyLength(expected: fileKeyByteCount, actual: fileKey.count)
        }
        precondition(ephemeralSecret.count == Sodium.x25519ScalarByteCount)
        let share = try ephemeralSecret.withUnsafeBytes { (scalar) throws(AgeError) in try AgeRecipient(secretKey: scalar) }.publicKey
        var body = [UInt8](repeating: 0, count: bodyByteCount)
        try withWrapKey(scalar: ephemeralSecret, point: recipient.publicKey, share: share, recipient: recipient.publicKey,
                        lowOrder: .invalidRecipientKey) { (wrapKey) throws(AgeError) in
            do throws(SodiumFailure) {
                try fileKey.withUnsafeBytes { (plaintext) throws(SodiumFailure) in
                    try body.withMutableBytes { (output) throws(SodiumFailure) in
                        try nonce.withBytes { (nonce) throws(SodiumFailure) in
                            try Sodium.chaCha20Poly1305Seal(plaintext, nonce: nonce, key: wrapKey, into: output)
                        }
                    }
                }
            } catch {
                throw AgeError(error)
            }
        }
        return X25519Stanza(ephemeralShare: share, body: body)
    }

    /// Unwraps the file key with `identity`.
    ///
    /// - Throws: ``AgeError/noMatch`` when the body does not decrypt: the stanza is for another recipient (or was
    ///   altered; the two cannot be told apart); ``AgeError/malformedStanza(_:)`` `.lowOrderShare` when the share is
    ///   a point of small order (the shared secret is all zero, which the spec says to abort on).
    public func unwrap(with identity: AgeIdentity) throws(AgeError) -> SecureBytes {
        try Self.withWrapKey(scalar: identity.secretKey, point: ephemeralShare, share: ephemeralShare,
                             recipient: identity.recipient.publicKey, lowOrder: .malformedStanza(.lowOrderShare)) { (wrapKey) throws(AgeError) in
            try SecureBytes(count: Self.fileKeyByteCount) { (fileKey) throws(AgeError) in
                let opened = body.withUnsafeBytes { sealed in
                    Self.nonce.withUnsafeBytes { nonce in
                        Sodium.chaCha20Poly1305Open(sealed, nonce: nonce, key: wrapKey, into: fileKey)
                    }
                }
                guard opened else { throw .noMatch }
            }
        }
    }

    /// Runs `body` with the wrap key `HKDF-SHA-256(ikm = X25519(scalar, point), salt = share || recipient,
    /// info = label)`, the shared secret and the key in guarded scratch memory.
    ///
    /// - Throws: `lowOrder` when the shared secret is all zero.
    private static func withWrapKey<R>(
        scalar: SecureBytes, point: [UInt8], share: [UInt8], recipient: [UInt8], lowOrder: AgeError,
        _ body: (UnsafeRawBufferPointer) throws(AgeError) -> R
    ) throws(AgeError) -> R {
        let pointByteCount = Sodium.x25519PointByteCount
        return try withGuardedScratch(byteCount: pointByteCount + Sodium.chaCha20Poly1305KeyByteCount) { (scratch) throws(AgeError) in
            let sharedSecret = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<pointByteCount])
            let wrapKey = UnsafeMutableRawBufferPointer(rebasing: scratch[pointByteCount...])
            do throws(SodiumFailure) {
                try scalar.withUnsafeBytes { (scalar) throws(SodiumFailure) in
                    try point.withBytes { (point) throws(SodiumFailure) in
                        try Sodium.x25519(scalar: scalar, point: point, into: sharedSecret)
                    }
                }
            } catch where error.function == "crypto_scalarmult_curve25519" {
                throw lowOrder  // the all-zero shared secret
            } catch {
                throw AgeError(error)
            }
            let salt = share + recipient
            salt.withUnsafeBytes { salt in
                Array(label.utf8).withUnsafeBytes { info in
                    Sodium.hkdfSHA256(inputKeyingMaterial: UnsafeRawBufferPointer(sharedSecret), salt: salt, info: info, into: wrapKey)
                }
            }
            return try body(UnsafeRawBufferPointer(wrapKey))
        }
    }
}
