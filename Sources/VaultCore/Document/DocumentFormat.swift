import VaultSodium

/// The byte layout of a vault file, versions 2 and 3: the constants, the header (``DocumentHeader``) and opening and
/// sealing a document (``VaultDocument/open(_:with:label:policy:)``, ``VaultDocument/seal(dataKey:)``); the
/// stanzas are in KeyStanzas.swift, the plaintext in DocumentBody.swift and DocumentBodyWriter.swift (written) and
/// DocumentBodyParse.swift, DocumentBodyParse+Entries.swift (read). `docs/FORMAT.md` ("Version 3, the current format"; "Version 2") is the specification; this code obeys it.
public enum DocumentFormat {
    /// The versions read (2 and 3: docs/FORMAT.md), and the one a new vault is made in.
    static let versions: ClosedRange<UInt16> = 2...3
    public static let currentVersion: UInt16 = 3
    /// magic, version, header length, vault id, generation, data key id, stanza count.
    static let fixedHeaderByteCount = 8 + 2 + 4 + 16 + 8 + 16 + 2
    static let maximumHeaderByteCount = 1 << 16
    /// The most key stanzas a header may list (a passphrase and 217 recipients fill the 64 KiB header first).
    public static let maximumStanzaCount = 256
    static let macByteCount = 32
    static let timestampByteCount = 16
    /// 1 GiB of plaintext behind the largest header: 1 GiB + 65,608 bytes.
    static let maximumFileByteCount = maximumHeaderByteCount + macByteCount + VaultFormat.nonceByteCount
        + VaultFormat.macByteCount + VaultFormat.maximumPlaintextByteCount

    static let macContext = Array("vault v2 header mac".utf8)
    static let bodyKeyContext = Array("vault v2 body key".utf8)
}

/// What a version-2 header says before any key: checked for structure and KDF bounds, not yet authenticated
/// (its MAC is checked once a key opens it).
public struct DocumentHeader: Sendable {
    public let vaultID: DocumentID
    public let generation: UInt64
    public let dataKeyID: DocumentID
    /// 2 or 3.
    public let version: UInt16
    let stanzas: [KeyStanza]
    /// The header's bytes as read, which its MAC covers.
    let bytes: [UInt8]

    /// Why the key changed from `keyID` to this header's data key, as the header's key links say (read, not verified:
    /// a merge verifies them); `nil` when no link starts at `keyID`. Words for an error, never a reason to trust.
    public func keyChange(from keyID: DocumentID) -> KeyChangeReason? { KeyLinks.reason(stanzas, from: keyID) }

    /// The key stanza types, in order (`argon2id`, `x25519`, … and `unknown(N)`; not the `replica_names` and
    /// `recipient_labels` stanzas, which open nothing).
    public var stanzaTypes: [String] {
        stanzas.filter { $0.type != KeyStanza.replicaNames && $0.type != KeyStanza.recipientLabels }.map {
            switch $0.type {
            case KeyStanza.argon2id: return "argon2id"
            case KeyStanza.x25519: return "x25519"
            case KeyStanza.mlkem768x25519: return "mlkem768x25519"
            case KeyStanza.keyLink: return "key_link"
            default: return "unknown(\($0.type))"
            }
        }
    }

    /// The Argon2id parameters of the first passphrase stanza.
    public var kdfParameters: Argon2id.Parameters? {
        stanzas.lazy.filter { $0.type == KeyStanza.argon2id }.compactMap { Argon2idStanza(body: $0.body)?.parameters }.first
    }

    /// The recipient (`x25519` and `mlkem768x25519`) stanzas, in order (their shape was checked by
    /// ``parse(_:label:policy:)``).
    public var recipientStanzas: [RecipientStanza] { indexedRecipientStanzas.map(\.stanza) }

    /// The recipient stanzas with their index among all the header's stanzas (as errors name them).
    public var indexedRecipientStanzas: [(index: Int, stanza: RecipientStanza)] {
        stanzas.enumerated().compactMap { index, stanza in
            guard let kind = RecipientStanza.Kind(stanzaType: stanza.type),
                  let parsed = try? RecipientStanza(body: stanza.body, kind: kind, index: index)
            else { return nil }
            return (index, parsed)
        }
    }

    /// Whether the header has a passphrase (`argon2id`) stanza.
    public var hasPassphraseStanza: Bool { stanzas.contains { $0.type == KeyStanza.argon2id } }

    /// Whether the header has a `recipient_labels` stanza (sealed: which labels it holds needs the data key).
    public var hasRecipientLabels: Bool { stanzas.contains { $0.type == KeyStanza.recipientLabels } }

    /// The recipients (`age1…`) of its `x25519` stanzas, in order.
    public var recipients: [String] { recipientStanzas.map(\.recipient) }

    /// Whether `file` starts as a document vault does (magic and version 2 or 3), whatever follows.
    public static func isVersion2(_ file: [UInt8]) -> Bool {
        file.count >= 10 && file.prefix(8).elementsEqual(VaultFormat.magic) && DocumentFormat.versions.contains(UInt16(file[8])) && file[9] == 0
    }

    /// How many leading bytes of `file` name its content, when it is shaped as a version-2 vault: the header, its
    /// MAC, the body nonce and the body's Poly1305 tag, which depends on every plaintext byte under a nonce made
    /// afresh by every seal (two seals never share it; a body changed without the key no longer opens). `nil` for
    /// anything else (a version-1 file, a truncated one, not a vault): then only all of its bytes name it.
    public static func identifyingPrefixLength(_ file: [UInt8]) -> Int? {
        guard isVersion2(file), file.count >= 14 else { return nil }
        let headerLength = Int(file[10]) | Int(file[11]) << 8 | Int(file[12]) << 16 | Int(file[13]) << 24
        let prefix = headerLength + DocumentFormat.macByteCount + VaultFormat.nonceByteCount + VaultFormat.macByteCount
        guard headerLength >= DocumentFormat.fixedHeaderByteCount, headerLength <= DocumentFormat.maximumHeaderByteCount,
              file.count >= prefix
        else { return nil }
        return prefix
    }

    /// Parses the header of `file`: magic, size bounds, version, the header's length, the stanzas (each known
    /// type's fields and, for `argon2id`, the KDF bounds of `policy`, so that a forged header is refused before
    /// any KDF runs), then the sizes of what follows.
    public static func parse(_ file: [UInt8], label: String, policy: Argon2id.KDFPolicy) throws -> DocumentHeader {
        try file.withUnsafeBytes { file in
            func corrupt(_ reason: Corruption) -> VaultError { .corrupt(path: label, reason: reason) }
            guard file.count >= VaultFormat.magic.count, file.prefix(VaultFormat.magic.count).elementsEqual(VaultFormat.magic) else {
                if file.count < VaultFormat.magic.count, file.elementsEqual(VaultFormat.magic.prefix(file.count)) {
                    throw corrupt(.truncated(byteCount: file.count))
                }
                throw corrupt(.badMagic)
            }
            guard file.count <= DocumentFormat.maximumFileByteCount else { throw corrupt(.tooLarge(byteCount: file.count)) }
            guard file.count >= 14 else { throw corrupt(.truncated(byteCount: file.count)) }
            var reader = ByteReader(file)
            reader.skip(VaultFormat.magic.count)
            let version = reader.readUInt16()
            guard DocumentFormat.versions.contains(version) else {
                throw VaultError.unsupportedVersion(path: label, version: Int(version))
            }
            let headerLength = Int(reader.readUInt32())
            guard headerLength >= DocumentFormat.fixedHeaderByteCount, headerLength <= DocumentFormat.maximumHeaderByteCount else {
                throw corrupt(.badHeaderLength(headerLength))
            }
            guard file.count >= headerLength else { throw corrupt(.truncated(byteCount: file.count)) }
            let vaultID = DocumentID(bytes: reader.readBytes(16))!
            let generation = reader.readUInt64()
            let dataKeyID = DocumentID(bytes: reader.readBytes(16))!
            let stanzaCount = Int(reader.readUInt16())
            guard stanzaCount <= DocumentFormat.maximumStanzaCount else { throw corrupt(.tooManyStanzas(count: stanzaCount)) }
            var stanzas: [KeyStanza] = []
            var recipients = Set<String>()
            for index in 0..<stanzaCount {
                guard headerLength - reader.offset >= 6 else { throw corrupt(.badStanza(index: index)) }
                let type = reader.readUInt16()
                let length = Int(reader.readUInt32())
                guard length <= headerLength - reader.offset else { throw corrupt(.badStanza(index: index)) }
                let body = reader.readBytes(length)
                if type == KeyStanza.argon2id {
                    guard let stanza = Argon2idStanza(body: body) else { throw corrupt(.badStanza(index: index)) }
                    guard policy.accepts(stanza.parameters) else {
                        throw VaultError.kdfParametersOutOfRange(
                            path: label, opsLimit: stanza.parameters.opsLimit, memLimitBytes: stanza.parameters.memLimitBytes)
                    }
                } else if let kind = RecipientStanza.Kind(stanzaType: type) {
                    let stanza = try RecipientStanza(body: body, kind: kind, index: index, label: label)
                    guard recipients.insert(stanza.recipient).inserted else { throw corrupt(.duplicateRecipient(index: index)) }
                } else if type == KeyStanza.keyLink {
                    guard KeyLink(body: body) != nil else { throw corrupt(.badKeyLink(index: index)) }
                }
                stanzas.append(KeyStanza(type: type, body: body))
            }
            guard reader.offset == headerLength else { throw corrupt(.badHeaderLength(headerLength)) }
            // The links chain (each from the key the one before leads to, signed with its signing key) and end at
            // this header's data key; the first link's signature and the last one's signing key need a key.
            if let broken = KeyLinks.check(KeyLinks.links(in: stanzas), vaultID: vaultID, dataKeyID: dataKeyID) {
                throw corrupt(.badKeyLink(index: broken))
            }
            guard stanzas.contains(where: { $0.type == KeyStanza.argon2id || RecipientStanza.Kind(stanzaType: $0.type) != nil }) else {
                throw corrupt(.noUsableStanza)
            }
            let minimum = headerLength + DocumentFormat.macByteCount + VaultFormat.nonceByteCount + VaultFormat.macByteCount
                + VaultFormat.paddingQuantum
            guard file.count >= minimum else { throw corrupt(.truncated(byteCount: file.count)) }
            let boxed = file.count - headerLength - DocumentFormat.macByteCount - VaultFormat.nonceByteCount - VaultFormat.macByteCount
            guard boxed % VaultFormat.paddingQuantum == 0 else { throw corrupt(.sizeMismatch(byteCount: file.count)) }
            // A short header leaves room for more than 1 GiB of plaintext within the file bound: not for a vault.
            guard boxed <= VaultFormat.maximumPlaintextByteCount else { throw corrupt(.tooLarge(byteCount: file.count)) }
            return DocumentHeader(
                vaultID: vaultID, generation: generation, dataKeyID: dataKeyID, version: version, stanzas: stanzas,
                bytes: Array(file[0..<headerLength]))
        }
    }

    /// The header's bytes for `vaultID`, `generation`, `dataKeyID` and `stanzas`.
    static func encode(vaultID: DocumentID, generation: UInt64, dataKeyID: DocumentID, version: UInt16, stanzas: [KeyStanza]) -> [UInt8] {
        let length = DocumentFormat.fixedHeaderByteCount + stanzas.reduce(0) { $0 + 6 + $1.body.count }
        var out = [UInt8]()
        out.reserveCapacity(length)
        out += VaultFormat.magic
        out.appendLittleEndian(version)
        out.appendLittleEndian(UInt32(length))
        out += vaultID.bytes
        out.appendLittleEndian(generation)
        out += dataKeyID.bytes
        out.appendLittleEndian(UInt16(stanzas.count))
        for stanza in stanzas {
            out.appendLittleEndian(stanza.type)
            out.appendLittleEndian(UInt32(stanza.body.count))
            out += stanza.body
        }
        return out
    }
}

/// How a version-2 vault is opened.
public enum DocumentKey: Sendable {
    /// A passphrase, through the `argon2id` stanzas.
    case passphrase(SecureBytes)
    /// A data key unwrapped from one of the header's `x25519` stanzas (by `VaultAge`, with an age identity): a
    /// header MAC that does not match it means the header was changed (as after a passphrase), not another key.
    case unwrapped(SecureBytes)
    /// The data key itself, as an agent that unlocked the vault holds it.
    case dataKey(SecureBytes)
}

extension VaultDocument {
    /// A key derived from the data key for one use (`context`), in guarded memory.
    static func subkey(_ dataKey: SecureBytes, _ context: [UInt8]) -> SecureBytes {
        SecureBytes(count: 32) { out in
            dataKey.withUnsafeBytes { key in context.withUnsafeBytes { Sodium.blake2b($0, key: key, into: out) } }
        }
    }

    static func mac(of header: [UInt8], dataKey: SecureBytes) -> [UInt8] {
        let key = subkey(dataKey, DocumentFormat.macContext)
        return key.withUnsafeBytes { key in header.withUnsafeBytes { Sodium.blake2b($0, key: key, outputByteCount: 32) } }
    }

    /// A new, empty vault whose data key is wrapped for `passphrase`: the document and the data key.
    public static func create(
        passphrase: SecureBytes, parameters: Argon2id.Parameters, label: String, formatVersion: UInt16 = DocumentFormat.currentVersion
    ) throws -> (document: VaultDocument, dataKey: SecureBytes) {
        precondition(DocumentFormat.versions.contains(formatVersion), "a document is version 2 or 3")
        let dataKey = SecureBytes(count: VaultFormat.dataKeyByteCount) { Sodium.fillRandom($0) }
        let stanza = try Argon2idStanza.wrap(dataKey, passphrase: passphrase, parameters: parameters)
        let document = VaultDocument(
            vaultID: .random(), generation: 0, dataKeyID: .random(), stanzas: [stanza.stanza], label: label,
            formatVersion: formatVersion)
        return (document, dataKey)
    }

    /// The Argon2id parameters of the first passphrase stanza.
    public var kdfParameters: Argon2id.Parameters? {
        stanzas.lazy.filter { $0.type == KeyStanza.argon2id }.compactMap { Argon2idStanza(body: $0.body)?.parameters }.first
    }

    /// The recipient (`x25519` and `mlkem768x25519`) stanzas, in order.
    public var recipientStanzas: [RecipientStanza] {
        stanzas.enumerated().compactMap { index, stanza in
            RecipientStanza.Kind(stanzaType: stanza.type).flatMap { try? RecipientStanza(body: stanza.body, kind: $0, index: index) }
        }
    }

    /// The recipients the vault is shared with (`age1…`), in the header's order.
    public var recipients: [String] { recipientStanzas.map(\.recipient) }

    /// Whether the header has a passphrase (`argon2id`) stanza.
    public var hasPassphraseStanza: Bool { stanzas.contains { $0.type == KeyStanza.argon2id } }

    /// Opens a version-2 `file` with `key`: the header (``DocumentHeader/parse(_:label:policy:)``), the data key
    /// (each `argon2id` stanza with a passphrase), the header's MAC, then the body. With `reference` (another copy
    /// of the vault, which the result will be merged into), the entries both hold unchanged are shared, not parsed
    /// again (``DocumentBody/parse(_:binding:header:label:reference:)``).
    ///
    /// - Throws: ``VaultError/wrongPassphrase(path:)`` when no stanza opens with the passphrase, or the data key
    ///   given does not authenticate the header; ``VaultError/corrupt(path:reason:)`` for a header or body that
    ///   does not authenticate or parse.
    public static func open(
        _ file: [UInt8], with key: DocumentKey, label: String, policy: Argon2id.KDFPolicy, against reference: VaultDocument? = nil
    ) throws -> (document: VaultDocument, dataKey: SecureBytes) {
        let opened = try openKeepingPassphraseKey(file, with: key, label: label, policy: policy, against: reference)
        return (opened.document, opened.dataKey)
    }

    /// ``open(_:with:label:policy:against:)``, and with a passphrase the key it gave under the stanza that opened
    /// (``PassphraseKey``: a store keeps it while open).
    static func openKeepingPassphraseKey(
        _ file: [UInt8], with key: DocumentKey, label: String, policy: Argon2id.KDFPolicy, against reference: VaultDocument? = nil
    ) throws -> (document: VaultDocument, dataKey: SecureBytes, passphraseKey: PassphraseKey?) {
        let header = try DocumentHeader.parse(file, label: label, policy: policy)
        let dataKey: SecureBytes
        var passphraseKey: PassphraseKey?
        switch key {
        case .dataKey(let given), .unwrapped(let given):
            dataKey = given
        case .passphrase(let passphrase):
            var found: SecureBytes?
            for stanza in header.stanzas where stanza.type == KeyStanza.argon2id {
                let parsed = Argon2idStanza(body: stanza.body)!
                let kek = try parsed.passphraseKey(passphrase)
                if let unwrapped = parsed.unwrap(with: kek) {
                    (found, passphraseKey) = (unwrapped, kek)
                    break
                }
            }
            guard let found else { throw VaultError.wrongPassphrase(path: label) }
            dataKey = found
        }
        let macStart = header.bytes.count
        let stored = Array(file[macStart..<macStart + DocumentFormat.macByteCount])
        let expected = mac(of: header.bytes, dataKey: dataKey)
        let matches = stored.withUnsafeBytes { a in expected.withUnsafeBytes { b in Sodium.constantTimeEqual(a, b) } }
        guard matches else {
            // With a data key given (the agent's), another vault's key: the same answer as a wrong passphrase.
            if case .dataKey = key { throw VaultError.wrongPassphrase(path: label) }
            throw VaultError.corrupt(path: label, reason: .headerMACMismatch)
        }
        // The last key link's signing key is this data key's (the links are authenticated now, by the MAC).
        if let last = KeyLinks.links(in: header.stanzas).last, last.link.newSigningKey != KeySigning.publicKey(of: dataKey) {
            throw VaultError.corrupt(path: label, reason: .badKeyLink(index: last.index))
        }
        let bodyKey = subkey(dataKey, DocumentFormat.bodyKeyContext)
        let nonceStart = macStart + DocumentFormat.macByteCount
        let boxStart = nonceStart + VaultFormat.nonceByteCount
        let plaintext = try file.withUnsafeBytes { (bytes) throws in
            let nonce = UnsafeRawBufferPointer(rebasing: bytes[nonceStart..<boxStart])
            let box = UnsafeRawBufferPointer(rebasing: bytes[boxStart...])
            return try SecureBytes(count: box.count - VaultFormat.macByteCount) { (out) throws in
                let ok = bodyKey.withUnsafeBytes { key in Sodium.secretBoxOpen(box, nonce: nonce, key: key, into: out) }
                guard ok else { throw VaultError.corrupt(path: label, reason: .bodyMACMismatch) }
            }
        }
        let binding = file.withUnsafeBytes { Sodium.blake2b256(UnsafeRawBufferPointer(rebasing: $0[0..<nonceStart])) }
        let document = try DocumentBody.parse(plaintext, binding: binding, header: header, label: label, reference: reference)
        document.takeReplicaNames(dataKey: dataKey)
        document.takeRecipientLabels(dataKey: dataKey)
        return (document, dataKey, passphraseKey)
    }

    /// The file of this document under `dataKey`, at the next generation (which it takes): the header with its
    /// stanzas, its MAC, a fresh body nonce and the sealed body.
    ///
    /// - Throws: ``VaultError/generationExhausted(path:)``; ``VaultError/vaultTooLarge(path:byteCount:)`` (also
    ///   for a header past 65,536 bytes: too many recipient stanzas).
    public func seal(dataKey: SecureBytes) throws -> [UInt8] {
        try seal(dataKey: dataKey, recycling: nil)
    }

    /// ``seal(dataKey:)`` with the plaintext in `spare`'s region when it is large enough and nobody else holds it (a
    /// zeroed one: ``RegionPool``).
    /// `progress`: how many of the entries are written (``DocumentBody/encode(_:binding:reusing:recycling:progress:)``).
    func seal(dataKey: SecureBytes, recycling spare: consuming SecureBytes?, progress: ((Int) -> Void)? = nil) throws -> [UInt8] {
        guard generation < UInt64.max else { throw VaultError.generationExhausted(path: label) }
        let header = DocumentHeader.encode(
            vaultID: vaultID, generation: generation + 1, dataKeyID: dataKeyID, version: formatVersion,
            stanzas: try stanzasToSeal(dataKey: dataKey))
        // A header past its bound (18 mlkem768x25519 stanzas, or 218 x25519 ones) would be refused by every reader.
        guard header.count <= DocumentFormat.maximumHeaderByteCount else {
            throw VaultError.vaultTooLarge(path: label, byteCount: header.count)
        }
        let mac = Self.mac(of: header, dataKey: dataKey)
        let binding = Sodium.blake2b256FromArray(header + mac)
        let body = try DocumentBody.encode(
            self, binding: binding, reusing: encoded.withLock { $0 }, recycling: spare.take(), progress: progress)
        let file = try VaultEnvelope.seal(
            prefix: header + mac, plaintext: body.plaintext, key: Self.subkey(dataKey, DocumentFormat.bodyKeyContext))
        encoded.withLock { $0 = body }
        changed = [:]
        generation += 1
        return file
    }
}

extension Sodium {
    static func blake2b256FromArray(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { blake2b256($0) }
    }
}
