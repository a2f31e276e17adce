import Crypto
import FoundationEssentials
import VaultAge
import VaultCore

/// age's `mlkem768x25519` recipient stanza (C2SP `age.md`, "mlkem768x25519 recipient stanza"): a 16-byte file
/// key sealed for one ``AgeHybridRecipient`` with HPKE (RFC 9180) base mode, unwrapped with its
/// ``AgeHybridIdentity``.
///
///     -> mlkem768x25519 <base64(enc)>
///     <base64(body)>
///
///     KEM  = MLKEM768-X25519 (X-Wing, HPKE KEM id 0x647a)    KDF = HKDF-SHA256    AEAD = ChaCha20Poly1305
///     enc, body = SealBase(pkR = recipient, info = "age-encryption.org/mlkem768x25519", aad = "", pt = file key)
///
/// `enc` is 1,120 bytes (ML-KEM-768's ciphertext, 1,088, then the X25519 ephemeral share, 32); the body 32 (the
/// file key and the Poly1305 tag). Both the KEM and HPKE's key schedule are swift-crypto's (BoringSSL's X-Wing).
public struct MLKEM768X25519Stanza: Equatable, Sendable {
    /// The stanza's type, its first argument.
    public static let stanzaType = "mlkem768x25519"
    /// HPKE's `info`.
    public static let label = "age-encryption.org/mlkem768x25519"
    /// The size of the encapsulated key.
    public static let encapsulationByteCount = 1120
    /// The size of the body: the file key and the Poly1305 tag.
    public static let bodyByteCount = AgeHeader.fileKeyByteCount + 16
    /// age's HPKE suite.
    static let ciphersuite = HPKE.Ciphersuite(kem: .XWingMLKEM768X25519, kdf: .HKDF_SHA256, aead: .chaChaPoly)

    /// The encapsulated key (`enc`, 1,120 bytes).
    public let encapsulation: [UInt8]
    /// The sealed file key and its tag (32 bytes).
    public let body: [UInt8]

    private init(encapsulation: [UInt8], body: [UInt8]) {
        self.encapsulation = encapsulation
        self.body = body
    }

    /// Reads an `mlkem768x25519` stanza with the checks the spec requires of an identity implementation: exactly
    /// one argument after the type, a canonical base64 `enc` of 1,120 bytes, a body of exactly 32 bytes (before
    /// any decryption, against partitioning oracles).
    ///
    /// - Throws: ``VaultAge/AgeError/malformedStanza(_:)``: `.notMLKEM768X25519` for a stanza of another type
    ///   (which a header's reader skips), or what is wrong.
    public init(_ stanza: AgeStanza) throws(AgeError) {
        guard stanza.type == Self.stanzaType else { throw .malformedStanza(.notMLKEM768X25519) }
        guard stanza.arguments.count == 1 else { throw .malformedStanza(.wrongArgumentCount) }
        let enc = try AgeBase64.decode(stanza.arguments[0].utf8, failure: .malformedStanza(.encapsulationNotCanonical))
        guard enc.count == Self.encapsulationByteCount else { throw .malformedStanza(.wrongEncapsulationLength) }
        guard stanza.body.count == Self.bodyByteCount else { throw .malformedStanza(.wrongBodyLength) }
        self.init(encapsulation: enc, body: stanza.body)
    }

    /// The stanza as it goes into a header.
    public var stanza: AgeStanza {
        AgeStanza(type: Self.stanzaType, arguments: [AgeBase64.encode(encapsulation)], body: body)
    }

    /// Seals `fileKey` (16 bytes) for `recipient`: a fresh X-Wing encapsulation (fresh ML-KEM and X25519 randomness).
    ///
    /// - Throws: ``VaultAge/AgeError/wrongKeyLength(expected:actual:)`` unless `fileKey` is 16 bytes;
    ///   ``VaultAge/AgeError/cryptoFailure(function:)`` if swift-crypto fails.
    public static func wrap(_ fileKey: SecureBytes, for recipient: AgeHybridRecipient) throws(AgeError) -> MLKEM768X25519Stanza {
        guard fileKey.count == AgeHeader.fileKeyByteCount else {
            throw .wrongKeyLength(expected: AgeHeader.fileKeyByteCount, actual: fileKey.count)
        }
        do {
            var sender = try HPKE.Sender(recipientKey: recipient.key, ciphersuite: ciphersuite, info: Data(label.utf8))
            let sealed = try fileKey.withUnsafeBytes { try sender.seal($0) }
            return MLKEM768X25519Stanza(encapsulation: Array(sender.encapsulatedKey), body: Array(sealed))
        } catch {
            throw .cryptoFailure(function: "HPKE.Sender.seal")
        }
    }

    /// Unwraps the file key with `identity`.
    ///
    /// - Throws: ``VaultAge/AgeError/noMatch`` when the body does not open: the stanza is for another recipient
    ///   (or was altered; ML-KEM's implicit rejection makes the two one answer);
    ///   ``VaultAge/AgeError/malformedStanza(_:)`` `.decapsulationFailed` when X-Wing refuses `enc` (its X25519
    ///   share is a point of small order).
    public func unwrap(with identity: AgeHybridIdentity) throws(AgeError) -> SecureBytes {
        var recipient: HPKE.Recipient
        do {
            recipient = try HPKE.Recipient(
                privateKey: identity.privateKey, ciphersuite: Self.ciphersuite, info: Data(Self.label.utf8),
                encapsulatedKey: Data(encapsulation))
        } catch {
            throw .malformedStanza(.decapsulationFailed)
        }
        var opened: Data
        do {
            opened = try recipient.open(body)
        } catch {
            throw .noMatch
        }
        // swift-crypto returns the plaintext in a `Data`: copied to guarded memory, then overwritten.
        defer { opened.resetBytes(in: 0..<opened.count) }
        guard opened.count == AgeHeader.fileKeyByteCount else { throw .noMatch }
        return SecureBytes(opened)
    }
}

extension VaultRecipientStanza {
    /// Wraps `dataKey` for a hybrid `recipient`: a vault's `mlkem768x25519` stanza (docs/FORMAT.md, "The
    /// mlkem768x25519 stanza"), an age file with one `mlkem768x25519` stanza.
    ///
    /// - Throws: ``VaultAge/AgeError/cryptoFailure(function:)`` if swift-crypto fails.
    public static func wrap(_ dataKey: SecureBytes, for recipient: AgeHybridRecipient) throws(AgeError) -> RecipientStanza {
        try wrap(dataKey, recipient: recipient.description) { (fileKey) throws(AgeError) in
            try MLKEM768X25519Stanza.wrap(fileKey, for: recipient).stanza
        }
    }

    /// Wraps `dataKey` for `recipient`, of either type.
    public static func wrap(_ dataKey: SecureBytes, for recipient: AnyAgeRecipient) throws(AgeError) -> RecipientStanza {
        switch recipient {
        case .x25519(let recipient): return try wrap(dataKey, for: recipient)
        case .hybrid(let recipient): return try wrap(dataKey, for: recipient)
        }
    }
}
