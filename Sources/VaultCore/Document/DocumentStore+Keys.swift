import VaultSodium

/// Changing the stored vault's key, conditionally as every write: a new passphrase, its recipients' stanzas, a new
/// data key (each change signed with the key it replaces: ``KeyLinks``).
extension DocumentStore {
    /// A new data key wrapped for `passphrase`, and the stored vault re-sealed under it, conditionally as
    /// ``update(_:attempts:)`` writes (the KDF runs once, before any attempt). The store keeps the new passphrase's
    /// key (``PassphraseKey``).
    public func changePassphrase(to passphrase: SecureBytes, parameters: Argon2id.Parameters?, attempts: Int = 5) throws {
        guard let held else { throw VaultError.notOpen }
        let kek = try PassphraseKey.fresh(from: passphrase, parameters: parameters ?? held.document.kdfParameters ?? .interactive)
        let newKey = SecureBytes(count: VaultFormat.dataKeyByteCount) { Sodium.fillRandom($0) }
        let stanza = try Argon2idStanza.wrap(newKey, under: kek).stanza
        try write(attempts: attempts) { stored in
            let document = try openHeld(stored, dataKey: held.dataKey)
            // The change, signed with the key it replaces: every copy that holds that key follows it (KeyLinks).
            let newID = DocumentID.random()
            document.stanzas = [stanza] + KeyLinks.changed(document, from: held.dataKey, to: newKey, id: newID, reason: .passphraseChange)
            document.dataKeyID = newID
            return (document, newKey)
        }
        keep(kek)
    }

    /// Sets the vault's `x25519` stanzas to what `recipients` makes from the data key held, keeping the data key and
    /// every other stanza (an addition: whoever could read the vault still can, and the new recipients too),
    /// conditionally as ``update(_:attempts:)`` writes. `recipients` gets the current stanzas and the data key and
    /// returns the new ones; then each recipient of the result named in `labels` takes its label there (by recipient,
    /// ``RecipientLabel``).
    ///
    /// - Throws: ``VaultError/notOpen``; ``VaultError/keyChanged(path:)``; what `recipients` throws.
    public func setRecipients(
        attempts: Int = 5, labels: [String: String] = [:],
        _ recipients: (_ current: [RecipientStanza], _ dataKey: SecureBytes) throws -> [RecipientStanza]
    ) throws {
        guard let dataKey else { throw VaultError.notOpen }
        try write(attempts: attempts) { stored in
            let document = try openHeld(stored, dataKey: dataKey)
            let made = try recipients(document.recipientStanzas, dataKey)
            document.stanzas = document.stanzas.filter { RecipientStanza.Kind(stanzaType: $0.type) == nil } + made.map(\.stanza)
            let now = clock.milliseconds()
            for stanza in made {
                if let label = labels[stanza.recipient] { document.setRecipientLabel(label, of: stanza.recipient, replica: replica, now: now) }
            }
            return (document, dataKey)
        }
    }

    /// A new data key (and data key id): the stored vault re-sealed under it, with an `argon2id` stanza for
    /// `passphrase` (when given; a fresh salt) or, with `keepingHeldPassphrase`, for the passphrase this store was
    /// opened with (its ``PassphraseKey``: the same salt and parameters, no KDF, nothing asked), and the recipient
    /// stanzas `recipients` makes for the new key from the current ones (a removal: the recipients left, each wrapped
    /// again). Every other stanza is dropped: it wraps the old key. No ciphertext made under the old key remains in
    /// the file. Conditionally as ``update(_:attempts:)`` writes; the KDF runs once, before any attempt.
    ///
    /// - Throws: ``VaultError/notOpen``; ``VaultError/keyChanged(path:)``; ``VaultError/corrupt(path:reason:)``
    ///   (`no_usable_stanza`) when neither a passphrase nor a recipient would open the result;
    ///   ``VaultError/wrongPassphrase(path:)`` with `keepingHeldPassphrase` and no passphrase when the store holds
    ///   no passphrase key that opens a stanza of the vault as stored now to its data key (opened without the
    ///   passphrase, or the passphrase changed since): the caller asks for it; what `recipients` throws.
    public func rotateKey(
        passphrase: SecureBytes?, parameters: Argon2id.Parameters?, keepingHeldPassphrase: Bool = false,
        reason: KeyChangeReason = .other, attempts: Int = 5,
        progress: ((_ done: Int, _ total: Int) -> Void)? = nil,
        recipients: (_ current: [RecipientStanza], _ newDataKey: SecureBytes) throws -> [RecipientStanza]
    ) throws {
        guard let held else { throw VaultError.notOpen }
        let newKey = SecureBytes(count: VaultFormat.dataKeyByteCount) { Sodium.fillRandom($0) }
        var kek: PassphraseKey?
        if let passphrase {
            kek = try PassphraseKey.fresh(from: passphrase, parameters: parameters ?? held.document.kdfParameters ?? .interactive)
        } else if keepingHeldPassphrase {
            guard let heldKey = passphraseKey.withLock({ $0 }) else { throw VaultError.wrongPassphrase(path: storage.label) }
            kek = heldKey
        }
        let passphraseStanzas = try kek.map { [try Argon2idStanza.wrap(newKey, under: $0).stanza] } ?? []
        try write(attempts: attempts, progress: progress) { stored in
            let document = try openHeld(stored, dataKey: held.dataKey)
            if passphrase == nil, let kek, !Self.opens(document, with: kek, to: held.dataKey) {
                throw VaultError.wrongPassphrase(path: storage.label)
            }
            let made = try recipients(document.recipientStanzas, newKey)
            guard !passphraseStanzas.isEmpty || !made.isEmpty else {
                throw VaultError.corrupt(path: storage.label, reason: .noUsableStanza)
            }
            // The key links the vault has, and this change's, signed with the key it replaces (KeyLinks).
            let newID = DocumentID.random()
            document.stanzas = passphraseStanzas + made.map(\.stanza)
                + KeyLinks.changed(document, from: held.dataKey, to: newKey, id: newID, reason: reason.link)
            document.dataKeyID = newID
            return (document, newKey)
        }
        keep(kek)
    }

    /// Whether `kek` opens one of `document`'s `argon2id` stanzas to `dataKey`.
    static func opens(_ document: VaultDocument, with kek: PassphraseKey, to dataKey: SecureBytes) -> Bool {
        document.stanzas.contains { stanza in
            stanza.type == KeyStanza.argon2id && Argon2idStanza(body: stanza.body)?.unwrap(with: kek) == dataKey
        }
    }
}
