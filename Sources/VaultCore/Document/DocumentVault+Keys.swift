import VaultSodium

/// Changing a vault's key: its passphrase, its recipients, a new data key; and the key a change replaced, kept sealed
/// in the rollback record until the change is published.
extension DocumentVault {
    public func changePassphrase(to newPassphrase: SecureBytes, parameters: Argon2id.Parameters?) throws {
        let old = store.dataKey, oldID = store.document?.dataKeyID
        try store.changePassphrase(to: newPassphrase, parameters: parameters)
        recordWrite(retiring: old, retiringID: oldID, pending: true)
    }

    /// The recipients (`age1…`) the vault is shared with, as last read.
    public var recipients: [String] { store.document?.recipients ?? [] }

    /// Whether the vault has a passphrase stanza, as last read.
    public var hasPassphraseStanza: Bool { store.document?.stanzas.contains { $0.type == KeyStanza.argon2id } ?? false }

    /// Whether `passphrase` opens a passphrase stanza of the vault as last read (one Argon2id run per stanza tried):
    /// what a key rotation that wraps the new key for it checks first, when the vault was opened without it.
    ///
    /// - Throws: ``VaultError/notOpen``; ``VaultError/cryptoFailure(function:)`` when the KDF fails.
    public func opens(passphrase: SecureBytes) throws -> Bool {
        guard let document = store.document else { throw VaultError.notOpen }
        for stanza in document.stanzas where stanza.type == KeyStanza.argon2id {
            if try Argon2idStanza(body: stanza.body)?.unwrap(passphrase: passphrase) != nil { return true }
        }
        return false
    }

    /// The labels of the recipients (recipient → label), as last read.
    public var recipientLabels: [String: String] { store.document?.sealedRecipientLabels.mapValues(\.label) ?? [:] }

    /// Sets the `x25519` stanzas under the current data key, and labels (``DocumentStore/setRecipients(attempts:labels:_:)``).
    public func setRecipients(
        labels: [String: String] = [:],
        _ recipients: (_ current: [RecipientStanza], _ dataKey: SecureBytes) throws -> [RecipientStanza]
    ) throws {
        try store.setRecipients(labels: labels, recipients)
        recordWrite()
    }

    /// A new data key, the body sealed again under it, and its stanzas (``DocumentStore/rotateKey(passphrase:parameters:keepingHeldPassphrase:reason:attempts:progress:recipients:)``);
    /// the old key is retired in the rollback record, so that a copy under it is refused here. Only a passphrase
    /// change is pending until published (a copy under the old key merged as content meanwhile: the machine one change
    /// behind, issue 33 §1); any other change, a recipient's removal above all, retires the old key at once: a copy the
    /// removed recipient writes under it after the removal is `stale_key`, never merged.
    public func rotateKey(
        passphrase: SecureBytes?, parameters: Argon2id.Parameters? = nil, keepingHeldPassphrase: Bool = false,
        reason: KeyChangeReason = .other,
        progress: ((_ done: Int, _ total: Int) -> Void)? = nil,
        recipients: (_ current: [RecipientStanza], _ newDataKey: SecureBytes) throws -> [RecipientStanza]
    ) throws {
        let old = store.dataKey, oldID = store.document?.dataKeyID
        try store.rotateKey(
            passphrase: passphrase, parameters: parameters, keepingHeldPassphrase: keepingHeldPassphrase, reason: reason,
            progress: progress, recipients: recipients)
        recordWrite(retiring: old, retiringID: oldID, pending: reason == .passphraseChange)
    }

    /// `key` sealed (secretbox, a fresh nonce before the box) under a key derived from `dataKey`: the key a change
    /// made here replaced, kept in the rollback record while the change is pending.
    static func seal(_ key: SecureBytes, under dataKey: SecureBytes) -> [UInt8] {
        let wrapping = VaultDocument.subkey(dataKey, pendingContext)
        let nonce = Sodium.randomBytes(count: VaultFormat.nonceByteCount)
        var box = [UInt8](repeating: 0, count: key.count + VaultFormat.macByteCount)
        key.withUnsafeBytes { plain in
            nonce.withUnsafeBytes { nonce in
                wrapping.withUnsafeBytes { wrapping in
                    box.withUnsafeMutableBytes { try? Sodium.secretBoxSeal(plain, nonce: nonce, key: wrapping, into: $0) }
                }
            }
        }
        return nonce + box
    }

    /// The key ``seal(_:under:)`` sealed, `nil` when it does not open under `dataKey`.
    static func open(_ sealed: [UInt8], under dataKey: SecureBytes) -> SecureBytes? {
        guard sealed.count == VaultFormat.nonceByteCount + VaultFormat.dataKeyByteCount + VaultFormat.macByteCount else { return nil }
        let wrapping = VaultDocument.subkey(dataKey, pendingContext)
        let nonce = Array(sealed.prefix(VaultFormat.nonceByteCount)), box = Array(sealed.dropFirst(VaultFormat.nonceByteCount))
        return try? SecureBytes(count: VaultFormat.dataKeyByteCount) { (out) throws in
            let opened = box.withUnsafeBytes { box in
                nonce.withUnsafeBytes { nonce in wrapping.withUnsafeBytes { Sodium.secretBoxOpen(box, nonce: nonce, key: $0, into: out) } }
            }
            guard opened else { throw VaultError.cryptoFailure(function: "crypto_secretbox_open_easy") }
        }
    }

    static let pendingContext = Array("vault pending key".utf8)

    /// A key change made here has reached another copy (`file`, under that key, was written to the remote by a sync):
    /// a copy under the key it retired is refused from now on (``VaultError/staleKey(path:)``).
    package static func keyChangePublished(_ file: [UInt8], protection: RollbackProtection) {
        guard DocumentHeader.isVersion2(file), let header = try? DocumentHeader.parse(file, label: "", policy: .insecureForTesting) else { return }
        RollbackGuard.clearPending(header.vaultID, keyID: header.dataKeyID, protection: protection)
    }
}
