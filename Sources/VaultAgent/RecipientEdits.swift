import VaultAge
import VaultCore

/// What `vault recipients add/remove/list` does to an open version-2 vault, the same here (a vault the CLI opened)
/// and in the agent (a vault it holds: ``AgentRequest/Recipients``), so that the two never differ.
public enum RecipientEdits {
    /// The recipients of a vault, in the header's order, with their labels and whether a passphrase opens it.
    public struct Listing: Sendable, Equatable {
        public var recipients: [String]
        /// Recipient → label, for those that have one.
        public var labels: [String: String]
        public var hasPassphrase: Bool

        public init(recipients: [String], labels: [String: String], hasPassphrase: Bool) {
            self.recipients = recipients
            self.labels = labels
            self.hasPassphrase = hasPassphrase
        }

        /// The recipients labelled `label`, in the header's order.
        public func recipients(labelled label: String) -> [String] { recipients.filter { labels[$0] == label } }
    }

    /// `vault`'s recipients and labels, as last read.
    public static func listing(of vault: DocumentVault) -> Listing {
        Listing(recipients: vault.recipients, labels: vault.recipientLabels, hasPassphrase: vault.hasPassphraseStanza)
    }

    /// Wraps the data key for each of `recipients` the vault does not have yet (the key is kept), and gives the one
    /// recipient `label` when it is given (a recipient already present only takes the label). `check` gets the
    /// recipients given and the vault's, under the write lock (age's rule on kinds: the caller's). Returns the
    /// recipients added and those already present, in the order given.
    ///
    /// - Throws: ``VaultError/invalidEntryName(reason:)`` for a label that is not 1 to 64 bytes without control
    ///   characters, or starts with `age1`, or is given with several recipients; what `check` and the wrapping throw.
    public static func add(
        _ recipients: [any AgeStanzaRecipient], label: String?, to vault: DocumentVault,
        check: (_ adding: [String], _ current: [String]) throws -> Void
    ) throws -> (added: [String], present: [String]) {
        var labels: [String: String] = [:]
        if let label {
            guard RecipientLabel.isValid(label) else {
                throw VaultError.invalidEntryName(reason: "a recipient's label is 1 to \(ReplicaName.maximumByteCount) bytes of UTF-8 without control characters, not starting with 'age1'")
            }
            guard recipients.count == 1 else { throw VaultError.invalidEntryName(reason: "a label names one recipient: give one with --label") }
            labels[recipients[0].description] = label
        }
        var added: [String] = [], present: [String] = []
        try vault.setRecipients(labels: labels) { current, dataKey in
            try check(recipients.map(\.description), current.map(\.recipient))
            var stanzas = current
            added = []
            present = []
            for recipient in recipients {
                let text = recipient.description
                if stanzas.contains(where: { $0.recipient == text }) {
                    if !present.contains(text) { present.append(text) }
                    continue
                }
                stanzas.append(try recipient.wrapStanza(dataKey))
                added.append(text)
            }
            return stanzas
        }
        return (added, present)
    }

    /// Removes `recipient` and rotates the vault's key (a new key wrapped for every other recipient and for the
    /// passphrase; the body sealed again). A vault with a passphrase stanza wraps the new key for the passphrase the
    /// vault was opened with (``DocumentStore``'s passphrase key, the stanza's salt kept: an agent unlocked with the
    /// passphrase asks for nothing, and the owner's other machines follow with nothing asked), also when
    /// `passphraseVerified` (the caller opened the vault with `passphrase`); else for `passphrase` (checked against
    /// the vault first, else it would be dropped; a fresh salt). Returns the entries the removed key could read (names,
    /// sorted). `progress` is told how many of the entries are sealed under the new key (of how many).
    ///
    /// - Throws: ``VaultError/wrongPassphrase(path:)`` when `passphrase` does not open the vault, or none is given,
    ///   the vault has a passphrase and was not opened with it (or it changed since): the caller asks for it; what
    ///   the rotation throws.
    public static func remove(
        _ recipient: String, passphrase: SecureBytes?, from vault: DocumentVault, passphraseVerified: Bool = false,
        progress: ((_ done: Int, _ total: Int) -> Void)? = nil
    ) throws -> [String] {
        let keepsPassphrase = vault.hasPassphraseStanza
        if keepsPassphrase, let passphrase, !passphraseVerified, try !vault.opens(passphrase: passphrase) {
            throw VaultError.wrongPassphrase(path: vault.path)
        }
        // What the removed key could read: every entry, as the vault is now.
        let exposed = try vault.keys()
        func rotate(_ passphrase: SecureBytes?) throws {
            try vault.rotateKey(
                passphrase: keepsPassphrase ? passphrase : nil, keepingHeldPassphrase: keepsPassphrase, reason: .recipientRemoval, progress: progress
            ) { current, newKey in
                try current.filter { $0.recipient != recipient }.map { stanza in
                    try AgeKeys.recipient(parsing: stanza.recipient).wrapStanza(newKey)
                }
            }
        }
        if keepsPassphrase, passphraseVerified, let passphrase {
            // Opened with it: its key is held. Wrapped under it (the stanza's salt kept), the owner's other machines,
            // opened with the passphrase, follow the change with nothing asked (DocumentStore's merge).
            do { try rotate(nil) } catch VaultError.wrongPassphrase { try rotate(passphrase) }
        } else {
            try rotate(passphrase)
        }
        return exposed
    }
}
