import VaultSodium

/// A `key_link` stanza (type 4, docs/FORMAT.md, "Key changes"): a statement, signed with the signing key of the data
/// key a change replaced, that the vault's next data key is `newKeyID`, whose signing key is `newSigningKey`:
///
/// ```
/// old_key_id (16) || new_key_id (16) || new_signing_key (32) || reason u8 || signature (64)        (129 bytes)
/// signature = Ed25519(old signing secret, "vault key link v1" || vault_id || old_key_id || new_key_id
///                     || new_signing_key || reason)
/// ```
///
/// Every change of data key appends one (at most ``maximumCount`` are kept, the oldest dropped); the links of a
/// header form a chain that ends at its data key. A merge follows another copy's key only along links that start at
/// this vault's current key (``KeyLinks/authorizes(_:from:signingKey:vaultID:)``): nobody who lacks the key the others
/// hold can hand them a key.
struct KeyLink: Equatable, Sendable {
    /// Why the key changed (informative: every reason is followed alike).
    enum Reason: UInt8, Sendable {
        case passphraseChange = 1
        case recipientRemoval = 2
        case other = 3
    }

    static let byteCount = 16 + 16 + 32 + 1 + 64
    /// The most links a header keeps.
    static let maximumCount = 64
    static let context = Array("vault key link v1".utf8)

    var oldKeyID: DocumentID
    var newKeyID: DocumentID
    var newSigningKey: [UInt8]
    var reason: UInt8
    var signature: [UInt8]

    /// The link of a stanza body: 129 bytes and a known reason, else `nil` (`bad_key_link`).
    init?(body: [UInt8]) {
        guard body.count == Self.byteCount, (1...3).contains(body[64]) else { return nil }
        oldKeyID = DocumentID(bytes: Array(body[0..<16]))!
        newKeyID = DocumentID(bytes: Array(body[16..<32]))!
        newSigningKey = Array(body[32..<64])
        reason = body[64]
        signature = Array(body[65..<129])
    }

    /// A link from `oldKey` (id `oldKeyID`) to `newKey` (id `newKeyID`), signed with the old key's signing key.
    init(vaultID: DocumentID, from oldKey: SecureBytes, id oldKeyID: DocumentID, to newKey: SecureBytes, id newKeyID: DocumentID,
         reason: Reason) {
        self.oldKeyID = oldKeyID
        self.newKeyID = newKeyID
        newSigningKey = KeySigning.publicKey(of: newKey)
        self.reason = reason.rawValue
        let message = Self.message(vaultID: vaultID, oldKeyID: oldKeyID, newKeyID: newKeyID, newSigningKey: newSigningKey, reason: reason.rawValue)
        signature = KeySigning.sign(message, with: oldKey)
    }

    static func message(vaultID: DocumentID, oldKeyID: DocumentID, newKeyID: DocumentID, newSigningKey: [UInt8], reason: UInt8) -> [UInt8] {
        context + vaultID.bytes + oldKeyID.bytes + newKeyID.bytes + newSigningKey + [reason]
    }

    /// Whether the signature verifies under `signingKey` (the old key's public signing key).
    func verifies(vaultID: DocumentID, signingKey: [UInt8]) -> Bool {
        let message = Self.message(vaultID: vaultID, oldKeyID: oldKeyID, newKeyID: newKeyID, newSigningKey: newSigningKey, reason: reason)
        return signature.withUnsafeBytes { signature in
            message.withUnsafeBytes { message in
                signingKey.withUnsafeBytes { Sodium.ed25519Verify(signature, message: message, publicKey: $0) }
            }
        }
    }

    var body: [UInt8] { oldKeyID.bytes + newKeyID.bytes + newSigningKey + [reason] + signature }

    var stanza: KeyStanza { KeyStanza(type: KeyStanza.keyLink, body: body) }
}

/// Why a vault's data key changes, as its key link records it (informative: every reason is followed alike; messages
/// name it).
public enum KeyChangeReason: String, Sendable, Equatable {
    case passphraseChange, recipientRemoval, other

    /// What the key changes from one key to another had for reasons, as one: a passphrase change among them (the
    /// other side's passphrase is then needed), else only removals of recipients, else another reason; `nil` for none.
    static func summary(of reasons: [KeyLink.Reason]) -> KeyChangeReason? {
        guard !reasons.isEmpty else { return nil }
        if reasons.contains(.passphraseChange) { return .passphraseChange }
        return reasons.allSatisfy { $0 == .recipientRemoval } ? .recipientRemoval : .other
    }

    var link: KeyLink.Reason {
        switch self {
        case .passphraseChange: return .passphraseChange
        case .recipientRemoval: return .recipientRemoval
        case .other: return .other
        }
    }
}

/// The Ed25519 key pair derived from a data key: `seed = BLAKE2b-256(key = data_key, "vault key change signing")`,
/// `crypto_sign_seed_keypair(seed)`. The seed and the secret key live in guarded memory.
enum KeySigning {
    static let context = Array("vault key change signing".utf8)

    private static func keyPair(of dataKey: SecureBytes) -> (publicKey: [UInt8], secretKey: SecureBytes) {
        let seed = VaultDocument.subkey(dataKey, context)
        var publicKey = [UInt8](repeating: 0, count: Sodium.ed25519PublicKeyByteCount)
        let secretKey = SecureBytes(count: Sodium.ed25519SecretKeyByteCount) { secret in
            seed.withUnsafeBytes { seed in
                publicKey.withUnsafeMutableBytes { Sodium.ed25519KeyPair(seed: seed, publicKey: $0, secretKey: secret) }
            }
        }
        return (publicKey, secretKey)
    }

    /// The public signing key of `dataKey`.
    static func publicKey(of dataKey: SecureBytes) -> [UInt8] { keyPair(of: dataKey).publicKey }

    /// `message` signed with the signing key of `dataKey`.
    static func sign(_ message: [UInt8], with dataKey: SecureBytes) -> [UInt8] {
        let secret = keyPair(of: dataKey).secretKey
        return secret.withUnsafeBytes { secret in message.withUnsafeBytes { Sodium.ed25519Sign($0, secretKey: secret) } }
    }
}

/// The key links of a header, and the rule that decides whether a merge may follow another copy's key.
enum KeyLinks {
    /// The links among `stanzas`, in order, with their stanza index (their shape was checked by the header's parse).
    static func links(in stanzas: [KeyStanza]) -> [(index: Int, link: KeyLink)] {
        stanzas.enumerated().compactMap { index, stanza in
            stanza.type == KeyStanza.keyLink ? KeyLink(body: stanza.body).map { (index, $0) } : nil
        }
    }

    /// The reader's rules on a header's links (docs/FORMAT.md, "Key changes"), once every stanza was read: each
    /// continues the one before (its `old_key_id` is the previous `new_key_id`) and verifies under the previous
    /// link's signing key, and the last ends at the header's data key. Else `bad_key_link` (the index of the first
    /// link that breaks a rule).
    static func check(_ links: [(index: Int, link: KeyLink)], vaultID: DocumentID, dataKeyID: DocumentID) -> Int? {
        for (previous, next) in zip(links, links.dropFirst()) {
            guard next.link.oldKeyID == previous.link.newKeyID,
                  next.link.verifies(vaultID: vaultID, signingKey: previous.link.newSigningKey)
            else { return next.index }
        }
        if let last = links.last, last.link.newKeyID != dataKeyID { return last.index }
        return nil
    }

    /// Whether the links of `header` lead from the key `keyID` (whose public signing key is `signingKey`) to the
    /// header's data key: a link whose `old_key_id` is `keyID` verifies under `signingKey`, and every later one under
    /// the one before (the parse checked those, and that the chain ends at the header's key; checked again here).
    /// Once the copy is opened, its data key's signing key must be the last link's (``VaultDocument/open``).
    static func authorizes(_ header: DocumentHeader, from keyID: DocumentID, signingKey: [UInt8], vaultID: DocumentID) -> Bool {
        authorizes(header.stanzas, dataKeyID: header.dataKeyID, from: keyID, signingKey: signingKey, vaultID: vaultID)
    }

    /// ``authorizes(_:from:signingKey:vaultID:)`` on the stanzas of a copy whose data key is `dataKeyID` (a document
    /// opened: the rollback record's check of a file put in the vault's place, ``RollbackGuard/checkVault``).
    static func authorizes(_ stanzas: [KeyStanza], dataKeyID: DocumentID, from keyID: DocumentID, signingKey: [UInt8],
                           vaultID: DocumentID) -> Bool {
        let links = self.links(in: stanzas).map(\.link)
        guard let start = links.firstIndex(where: { $0.oldKeyID == keyID }) else { return false }
        var key = signingKey, id = keyID
        for link in links[start...] {
            guard link.oldKeyID == id, link.verifies(vaultID: vaultID, signingKey: key) else { return false }
            (key, id) = (link.newSigningKey, link.newKeyID)
        }
        return id == dataKeyID
    }

    /// Why the key changed from `keyID` to the data key of the copy whose stanzas are `stanzas` (``KeyChangeReason/summary(of:)``
    /// of the links from `keyID` on, read as they are: ``authorizes(_:from:signingKey:vaultID:)`` checks them); `nil`
    /// when no link starts at `keyID`.
    static func reason(_ stanzas: [KeyStanza], from keyID: DocumentID) -> KeyChangeReason? {
        let links = self.links(in: stanzas).map(\.link)
        guard let start = links.firstIndex(where: { $0.oldKeyID == keyID }) else { return nil }
        return KeyChangeReason.summary(of: links[start...].compactMap { KeyLink.Reason(rawValue: $0.reason) })
    }

    /// The stanzas of a key change from `document`'s key (`oldKey`) to `newKey` (id `newKeyID`): the links the
    /// document has, then the new one, the oldest dropped past ``KeyLink/maximumCount``.
    static func changed(_ document: VaultDocument, from oldKey: SecureBytes, to newKey: SecureBytes, id newKeyID: DocumentID,
                        reason: KeyLink.Reason) -> [KeyStanza] {
        let link = KeyLink(vaultID: document.vaultID, from: oldKey, id: document.dataKeyID, to: newKey, id: newKeyID, reason: reason)
        return Array((links(in: document.stanzas).map(\.link.stanza) + [link.stanza]).suffix(KeyLink.maximumCount))
    }
}
