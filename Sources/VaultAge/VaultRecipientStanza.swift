import VaultCore
import VaultSodium

/// A vault's recipient key stanza (docs/FORMAT.md, "The x25519 stanza", "The mlkem768x25519 stanza"): the 32-byte
/// data key as the plaintext of a minimal age v1 file for one recipient (one `X25519` or `mlkem768x25519` stanza,
/// the header MAC, a one-chunk STREAM payload), beside the recipient's `age1…` or `age1pq1…`. VaultCore keeps it as opaque bytes (``RecipientStanza``); this is where it
/// is made, checked in full and opened. Any age implementation opens the embedded file with the identity
/// (`age -d -i key.txt`), so a vault shared this way is recoverable with stock tools.
public enum VaultRecipientStanza {
    /// The size of what the age file encrypts: the vault's data key.
    public static let dataKeyByteCount = 32

    /// Wraps `dataKey` for `recipient`: a fresh 16-byte file key, an `X25519` stanza for it, the header's MAC and
    /// the payload under a fresh nonce.
    ///
    /// - Throws: ``AgeError/invalidRecipientKey`` for a point of small order.
    public static func wrap(_ dataKey: SecureBytes, for recipient: AgeRecipient) throws(AgeError) -> RecipientStanza {
        try wrap(dataKey, recipient: recipient.description) { (fileKey) throws(AgeError) in
            try X25519Stanza.wrap(fileKey, for: recipient).stanza
        }
    }

    /// Wraps `dataKey` for `recipient` (its `age1…` encoding) with the age stanza `stanza` makes for a fresh file
    /// key (VaultAgePQ's `mlkem768x25519` stanza, for instance): the header's MAC and the payload under a fresh
    /// nonce.
    ///
    /// - Throws: what `stanza` throws.
    public static func wrap(
        _ dataKey: SecureBytes, recipient: String, _ stanza: (SecureBytes) throws(AgeError) -> AgeStanza
    ) throws(AgeError) -> RecipientStanza {
        precondition(dataKey.count == dataKeyByteCount)
        let fileKey = SecureBytes.random(count: AgeHeader.fileKeyByteCount)
        let header = try AgeHeader(stanzas: [try stanza(fileKey)], fileKey: fileKey)
        let file = header.serialized() + (try AgePayload.encrypt(dataKey, fileKey: fileKey))
        guard let made = RecipientStanza(recipient: recipient, ageFile: file) else {
            fatalError("an age file of \(file.count) bytes for \(recipient.prefix(20))… does not have its stanza's shape")
        }
        return made
    }

    /// The parts of a stanza, every rule of docs/FORMAT.md checked: the recipient is a valid recipient of
    /// `identityType`'s kind (`age1…` X25519 by default; Bech32 checksum included); the age file is a v1 header
    /// (age's grammar, canonical) with exactly one stanza of that kind's type and form, then a payload of exactly
    /// one chunk holding 32 bytes.
    ///
    /// - Throws: ``VaultCore/VaultError/corrupt(path:reason:)`` with `bad_recipient` or `bad_age_file`.
    public static func check(
        _ stanza: RecipientStanza, index: Int, label: String, as identityType: any AgeStanzaIdentity.Type = AgeIdentity.self
    ) throws -> (header: AgeHeader, payload: [UInt8]) {
        guard identityType.isValidRecipient(stanza.recipient) else {
            throw VaultError.corrupt(path: label, reason: .badRecipient(index: index))
        }
        let bad = VaultError.corrupt(path: label, reason: .badAgeFile(index: index))
        guard let (header, length) = try? AgeHeader.parse(stanza.ageFile), header.stanzas.count == 1,
              header.stanzas[0].type == identityType.stanzaType, (try? identityType.checkForm(of: header.stanzas[0])) != nil
        else { throw bad }
        let payload = Array(stanza.ageFile[length...])
        guard payload.count == AgePayload.encryptedByteCount(plaintextByteCount: dataKeyByteCount) else { throw bad }
        return (header, payload)
    }

    /// The data key in `stanza`, opened with `identity` (whose recipient it names).
    ///
    /// - Throws: ``VaultCore/VaultError/wrongIdentity(path:)`` when it does not open (another recipient's, or
    ///   altered); ``VaultCore/VaultError/corrupt(path:reason:)`` from ``check(_:index:label:as:)``.
    public static func unwrap(_ stanza: RecipientStanza, index: Int, with identity: any AgeStanzaIdentity, label: String) throws -> SecureBytes {
        let parts = try check(stanza, index: index, label: label, as: type(of: identity))
        let dataKey: SecureBytes
        do throws(AgeError) {
            let fileKey = try identity.unwrap(parts.header.stanzas[0])
            try parts.header.verifyMAC(fileKey: fileKey)
            dataKey = try AgePayload.decrypt(parts.payload, fileKey: fileKey)
        } catch {
            switch error {
            case .malformedStanza, .malformedPayload(.truncated), .malformedPayload(.trailingData), .malformedPayload(.missingNonce),
                 .malformedPayload(.emptyFinalChunk):
                throw VaultError.corrupt(path: label, reason: .badAgeFile(index: index))
            default:
                // No match, a MAC or a chunk that does not authenticate: another key's, or altered; one answer.
                throw VaultError.wrongIdentity(path: label)
            }
        }
        guard dataKey.count == dataKeyByteCount else { throw VaultError.corrupt(path: label, reason: .badAgeFile(index: index)) }
        return dataKey
    }

    /// The data key of the vault whose header is `header`, for the first of `identities` that has a stanza
    /// there: the stanza is found by its recipient (a scan of strings), so one key agreement (X25519, or X-Wing's
    /// decapsulation) is made however many recipients the vault has.
    ///
    /// - Throws: ``VaultCore/VaultError/wrongIdentity(path:)`` when no stanza names any of them (or the one that
    ///   does does not open); what ``unwrap(_:index:with:label:)`` throws.
    /// How a merge opens another copy of a vault (one under a key change it may follow: ``DocumentVault/setOtherKey(_:)``)
    /// with `identities`: the data key of the copy's stanza for one of them; `nil` (then its passphrase) when the copy
    /// has no recipient stanza. A copy shared with others but not (or no longer) with these identities, or whose stanza
    /// for them does not open, is ``VaultCore/VaultError/notARecipient(path:)`` (exit code 3), not a question for a
    /// passphrase they never had.
    public static func followingKey(_ identities: [any AgeStanzaIdentity]) -> @Sendable (DocumentHeader, String) throws -> DocumentKey? {
        { header, label in
            guard header.recipients.contains(where: { recipient in identities.contains { $0.recipientEncoding == recipient } }) else {
                if header.recipients.isEmpty { return nil }
                throw VaultError.notARecipient(path: label)
            }
            do {
                return .unwrapped(try dataKey(of: header, identities: identities, label: label))
            } catch VaultError.wrongIdentity {
                throw VaultError.notARecipient(path: label)
            }
        }
    }

    public static func dataKey(of header: DocumentHeader, identities: [any AgeStanzaIdentity], label: String) throws -> SecureBytes {
        let stanzas = header.indexedRecipientStanzas
        for identity in identities {
            let recipient = identity.recipientEncoding
            if let found = stanzas.first(where: { $0.stanza.recipient == recipient }) {
                return try unwrap(found.stanza, index: found.index, with: identity, label: label)
            }
        }
        throw VaultError.wrongIdentity(path: label)
    }
}
