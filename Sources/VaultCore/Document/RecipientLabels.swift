import VaultSodium

/// The label people know a recipient by (`alice@laptop`), given with `vault recipients add KEY --label L`, with the
/// packed time of the labelling replica's clock: a merge keeps the later one per recipient. Informative: nothing
/// is decided by it (a recipient is its key).
public struct RecipientLabel: Sendable, Equatable {
    /// 1 to 64 bytes of UTF-8 without control characters, not starting with `age1` (``isValid(_:)``).
    public let label: String
    /// Packed time (milliseconds << 16 | counter) of the labelling replica's clock when it gave the label.
    public let time: UInt64

    public init(label: String, time: UInt64) {
        self.label = label
        self.time = time
    }

    /// Whether `label` can label a recipient: a replica's name's rules (1 to 64 bytes of UTF-8 without control
    /// characters), and not `age1…`, so that `vault recipients remove LABEL` is never taken for a key.
    public static func isValid(_ label: String) -> Bool {
        ReplicaName.isValid(label) && !label.hasPrefix("age1")
    }

    /// The later of two labels of one recipient (on the same time, the greater label as bytes, so that every order
    /// of merging picks the same).
    static func later(_ a: RecipientLabel, _ b: RecipientLabel) -> RecipientLabel { Self.later(a, b, a.label, b.label) }
}

extension RecipientLabel: TimedName {}

extension KeyStanza {
    /// The recipients' labels, sealed under a key derived from the data key (``RecipientLabelsStanza``): opens nothing.
    static let recipientLabels: UInt16 = 6
}

/// The `recipient_labels` stanza (type 6, docs/FORMAT.md "Recipient labels"): who the recipients are, in the header
/// so that a reader of version 2 or 3 that predates it skips it and writes it back (an unknown stanza), sealed as the
/// replicas' names are, so that the header shows no teammate's name:
///
/// ```
/// stanza_body = nonce (24) || SecretBox(labels_key, nonce, labels)
/// labels_key  = BLAKE2b-256(key = data_key, "vault v3 recipient labels")
/// labels      = count u16 || (recipient_length u16 || recipient || time u64 || label_length u8 || label)*
///               recipients strictly increasing as bytes
/// ```
enum RecipientLabelsStanza {
    static let context = Array("vault v3 recipient labels".utf8)
    /// The longest recipient a label names (an `age1pq1…` one: 1,959 bytes).
    static let maximumRecipientByteCount = 2048

    /// The stanza of `labels`, under `dataKey`, with a fresh nonce.
    static func seal(_ labels: [String: RecipientLabel], dataKey: SecureBytes) throws -> KeyStanza {
        var plain: [UInt8] = []
        plain.appendLittleEndian(UInt16(labels.count))
        for (recipient, label) in labels.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            plain.appendLittleEndian(UInt16(recipient.utf8.count))
            plain += recipient.utf8
            plain.appendLittleEndian(label.time)
            plain.append(UInt8(label.label.utf8.count))
            plain += label.label.utf8
        }
        return KeyStanza(type: KeyStanza.recipientLabels, body: try SealedStanza.seal(plain, key: VaultDocument.subkey(dataKey, context)))
    }

    /// The labels in `body`, or `nil` when it does not open under `dataKey` or is not well formed (a reader then keeps
    /// it as a stanza of a type it does not know, written back unchanged: the labels are informative).
    static func open(_ body: [UInt8], dataKey: SecureBytes) -> [String: RecipientLabel]? {
        guard let plain = SealedStanza.open(body, key: VaultDocument.subkey(dataKey, context)) else { return nil }
        return plain.withUnsafeBytes { bytes -> [String: RecipientLabel]? in
            var reader = ByteReader(bytes)
            guard reader.remaining >= 2 else { return nil }
            let count = Int(reader.readUInt16())
            var labels: [String: RecipientLabel] = [:]
            var previous: [UInt8]?
            for _ in 0..<count {
                guard reader.remaining >= 2 else { return nil }
                let recipientLength = Int(reader.readUInt16())
                guard (1...maximumRecipientByteCount).contains(recipientLength), reader.remaining >= recipientLength + 9 else { return nil }
                let recipientBytes = reader.readBytes(recipientLength)
                let time = reader.readUInt64()
                let length = Int(reader.readUInt8())
                guard reader.remaining >= length, previous.map({ $0.lexicographicallyPrecedes(recipientBytes) }) ?? true,
                      let recipient = String(validating: recipientBytes, as: UTF8.self), recipient.hasPrefix("age1")
                else { return nil }
                let label = String(decoding: reader.readBytes(length), as: UTF8.self)
                guard RecipientLabel.isValid(label), label.utf8.count == length else { return nil }
                labels[recipient] = RecipientLabel(label: label, time: time)
                previous = recipientBytes
            }
            return reader.remaining == 0 ? labels : nil
        }
    }
}

/// `nonce (24) || SecretBox(key, nonce, plaintext)`: the body of a header stanza that is sealed under a key derived
/// from the data key and opens nothing (`replica_names`, `recipient_labels`).
enum SealedStanza {
    /// `plain` sealed under `key` with a fresh nonce.
    static func seal(_ plain: [UInt8], key: SecureBytes) throws -> [UInt8] {
        let nonce = Sodium.randomBytes(count: VaultFormat.nonceByteCount)
        var box = [UInt8](repeating: 0, count: plain.count + VaultFormat.macByteCount)
        try plain.withUnsafeBytes { plain in
            try nonce.withUnsafeBytes { nonce in
                try key.withUnsafeBytes { key in
                    try box.withUnsafeMutableBytes { out in try sodium { try Sodium.secretBoxSeal(plain, nonce: nonce, key: key, into: out) } }
                }
            }
        }
        return nonce + box
    }

    /// The plaintext of `body`, or `nil` when it is too short or does not open under `key`.
    static func open(_ body: [UInt8], key: SecureBytes) -> [UInt8]? {
        let nonceCount = VaultFormat.nonceByteCount
        guard body.count >= nonceCount + VaultFormat.macByteCount else { return nil }
        var plain = [UInt8](repeating: 0, count: body.count - nonceCount - VaultFormat.macByteCount)
        let opened = body.withUnsafeBytes { bytes in
            key.withUnsafeBytes { key in
                plain.withUnsafeMutableBytes { out in
                    Sodium.secretBoxOpen(
                        UnsafeRawBufferPointer(rebasing: bytes[nonceCount...]), nonce: UnsafeRawBufferPointer(rebasing: bytes[..<nonceCount]),
                        key: key, into: out)
                }
            }
        }
        return opened ? plain : nil
    }
}

extension VaultDocument {
    /// Takes the labels from this document's `recipient_labels` stanza (the first one that opens under `dataKey`),
    /// which then leaves ``stanzas``: a seal writes it anew from ``recipientLabels``.
    func takeRecipientLabels(dataKey: SecureBytes) {
        guard let index = stanzas.firstIndex(where: { $0.type == KeyStanza.recipientLabels }),
              let labels = RecipientLabelsStanza.open(stanzas[index].body, dataKey: dataKey) else { return }
        recipientLabels = labels
        stanzas.removeAll { $0.type == KeyStanza.recipientLabels }
    }

    /// The labels a seal writes: those of the recipients the header has (a removed recipient's label goes with it).
    var sealedRecipientLabels: [String: RecipientLabel] {
        let current = Set(recipients)
        return recipientLabels.filter { current.contains($0.key) }
    }

    /// The label of `recipient`, or `nil` when it has none (or is no recipient of the vault).
    public func recipientLabel(of recipient: String) -> String? { sealedRecipientLabels[recipient]?.label }

    /// Gives `recipient` the label `label` (when it has another or none) as `replica`, at a time after the one it had,
    /// the replica's clock and `now`. Returns whether the label changed.
    @discardableResult
    func setRecipientLabel(_ label: String, of recipient: String, replica: ReplicaID, now: UInt64) -> Bool {
        guard RecipientLabel.isValid(label), recipientLabels[recipient]?.label != label else { return false }
        recipientLabels[recipient] = RecipientLabel(
            label: label, time: nameTime(by: replica, now: now, after: recipientLabels[recipient]?.time))
        return true
    }

    /// Both documents' labels, the later one per recipient.
    static func unitedLabels(_ a: [String: RecipientLabel], _ b: [String: RecipientLabel]) -> [String: RecipientLabel] {
        a.merging(b, uniquingKeysWith: RecipientLabel.later)
    }
}
