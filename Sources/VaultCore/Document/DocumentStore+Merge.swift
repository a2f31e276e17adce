/// Merging another copy's bytes into the stored vault, conditionally as every write; following the copy's key along
/// its key links.
extension DocumentStore {
    /// Merges `other` (a copy of this vault: the same vault id) into what is stored, conditionally as
    /// ``update(_:attempts:)`` writes (``VaultDocument/merge(_:_:now:)``); nothing is written when the merge changes
    /// nothing, or with `dryRun`.
    ///
    /// A copy under another data key is followed only along its key links from our key (``KeyLinks``: a link signed
    /// with our key's signing key, then each with the one before, up to its key; else
    /// ``VaultError/unauthorizedKey(path:)``, or ``VaultError/staleKey(path:)`` for a key our own links retired),
    /// checked before its key is asked for; it opens then with the passphrase's key held when the copy's passphrase
    /// stanza has the same salt (a recipient's removal made where that key was held: nothing asked), else with
    /// `otherKey` or `otherPassphrase`, and the result takes
    /// the other copy's key stanzas and data key (a key change made elsewhere is followed, not undone). `mayFollow`
    /// is the caller's further check (``DocumentVault``: no key this vault retired). A copy under `previousKey` (the
    /// key a change made here replaced, not yet published) is merged into our key as content.
    ///
    /// - Throws: ``VaultError/notTheSameVault(path:)``; ``VaultError/needsVersion2(path:)`` for a version-1
    ///   `other`; ``VaultError/otherKey(path:reason:)`` when it is sealed with another data key and no
    ///   `otherPassphrase` was given (``VaultError/removedRecipient(path:)`` when `otherKey`, an identity's, has no
    ///   stanza there and the key links from ours record a recipient's removal); ``VaultError/wrongPassphrase(path:)``
    ///   when that passphrase does not open it; what opening it throws.
    public func merge(
        _ otherBytes: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes? = nil,
        otherKey: ((DocumentHeader) throws -> DocumentKey?)? = nil, previousKey: (id: DocumentID, key: SecureBytes)? = nil,
        mayFollow: ((DocumentHeader) throws -> Void)? = nil, acceptDeletions: Bool = false, attempts: Int = 5
    ) throws -> MergeReport {
        guard let dataKey, let held = document else { throw VaultError.notOpen }
        guard DocumentHeader.isVersion2(otherBytes) else { throw VaultError.needsVersion2(path: label) }
        let header = try DocumentHeader.parse(otherBytes, label: label, policy: policy)
        guard header.vaultID == held.vaultID else { throw VaultError.notTheSameVault(path: label) }
        let other: VaultDocument
        var adopted: SecureBytes?
        var followed: KeyChangeReason?
        if header.dataKeyID == held.dataKeyID {
            other = try VaultDocument.open(otherBytes, with: .dataKey(dataKey), label: label, policy: policy, against: held).document
        } else if let previousKey, header.dataKeyID == previousKey.id {
            // A copy under the key a change made here replaced, before that change reached any other copy: its
            // content is what a sync made before the change would have brought; merged into our key, never its key.
            other = try VaultDocument.open(otherBytes, with: .dataKey(previousKey.key), label: label, policy: policy, against: held).document
        } else if !KeyLinks.authorizes(header, from: held.dataKeyID, signingKey: KeySigning.publicKey(of: dataKey), vaultID: held.vaultID) {
            // No link signed with our key leads to the copy's: nobody who holds our key handed it over. Refused before
            // any key of the copy is asked for (a stranger's copy prompts for nothing).
            if KeyLinks.links(in: held.stanzas).contains(where: { $0.link.oldKeyID == header.dataKeyID }) {
                throw VaultError.staleKey(path: label)
            }
            throw VaultError.unauthorizedKey(path: label)
        } else {
            try mayFollow?(header)
            // The other copy's key: from an identity (an `x25519` stanza, above this library), else its passphrase.
            // Why it has another key (its links from ours) names the error: an identity that a removal left out
            // opens no later version, whatever passphrase there is.
            let reason = KeyLinks.reason(header.stanzas, from: held.dataKeyID)
            let key: DocumentKey
            do {
                if let unwrapped = unwrapWithPassphraseKey(header.stanzas) {
                    // The passphrase this store was opened with, kept as its key: a change that kept the passphrase
                    // (a recipient's removal made where the passphrase's key was held) opens with it, nothing asked.
                    key = .unwrapped(unwrapped)
                } else if let unwrapped = try otherKey?(header) {
                    key = unwrapped
                } else if let otherPassphrase {
                    key = .passphrase(otherPassphrase)
                } else if otherKey != nil, reason == .recipientRemoval {
                    throw VaultError.removedRecipient(path: label)
                } else {
                    throw VaultError.otherKey(path: label, reason: reason)
                }
            } catch VaultError.notARecipient(let path) where reason == .recipientRemoval {
                throw VaultError.removedRecipient(path: path)
            }
            let opened = try VaultDocument.open(otherBytes, with: key, label: label, policy: policy, against: held)
            other = opened.document
            adopted = opened.dataKey
            followed = reason ?? .other
        }
        var report = MergeReport()
        if dryRun {
            try reload()
            guard let current = document else { throw VaultError.notOpen }
            let now = clock.milliseconds()
            report = try VaultDocument.merge(current, other, now: now, replica: replica).1
            try other.checkClaims(about: replica, ownClock: current.replicas[replica]?.packed ?? 0, mergingInto: current, now: now)
            report.followedKey = followed
            return report
        }
        try write(attempts: attempts) { stored in
            // The document held when it is what is stored (the merge changes neither input), else the stored bytes.
            let ours: VaultDocument
            if let held = self.held(ifStoredAs: stored.version) {
                try verify(held, dataKey)
                ours = held
            } else {
                ours = try openHeld(stored, dataKey: dataKey)
            }
            let now = clock.milliseconds()
            // (Clocks from the future first: the merge refuses them, naming the clock.)
            let (merged, made) = try VaultDocument.merge(ours, other, now: now, replica: replica)
            try other.checkClaims(about: replica, ownClock: ours.replicas[replica]?.packed ?? 0, mergingInto: ours, now: now)
            if !acceptDeletions, made.isMassDeletion(outOf: ours.entries.count) {
                throw VaultError.massDeletion(path: label, names: made.deleted)
            }
            report = made
            // (Settling changes only the sync bookkeeping, which the other copy need not be sent for its own sake:
            // ``VaultDocument/isHeld(by:)``.)
            merged.settle(replica: replica, now: now)
            if let adopted {
                // The other copy's passphrase change, followed: its stanzas and data key.
                merged.stanzas = other.stanzas
                merged.dataKeyID = other.dataKeyID
                report.written = true
                report.followedKey = followed
                return (merged, adopted)
            }
            report.written = !merged.sameContent(as: ours)
            return report.written ? (merged, dataKey) : nil
        }
        return report
    }
}

extension DocumentStore {
    /// The data key one of `stanzas`' `argon2id` stanzas wraps under the passphrase's key held (``PassphraseKey``:
    /// the same salt and parameters), `nil` when none does or none is held.
    func unwrapWithPassphraseKey(_ stanzas: [KeyStanza]) -> SecureBytes? {
        guard let kek = passphraseKey.withLock({ $0 }) else { return nil }
        for stanza in stanzas where stanza.type == KeyStanza.argon2id {
            if let key = Argon2idStanza(body: stanza.body)?.unwrap(with: kek) { return key }
        }
        return nil
    }
}
