import VaultSodium

/// The byte layout of a vault file, version 2. `docs/FORMAT.md` ("Version 2") is the specification; this file
/// follows it.
///
/// ```
/// file      = header || header MAC (32) || body nonce (24) || body box (>= 16 + 256)
/// header    = magic (8) || version u16 = 2 || header length u32 || vault id (16) || generation u64
///             || data key id (16) || stanza count u16 || stanzas                   (integers little-endian)
/// stanza    = type u16 || body length u32 || body
/// argon2id  = opslimit u64 || memlimit u64 || salt (16) || key nonce (24) || wrapped data key (48)   (type 1, 104 bytes)
/// MAC       = BLAKE2b-256(header; key = BLAKE2b-256("vault v2 header mac"; key = data key))
/// body box  = crypto_secretbox_easy(plaintext, body nonce, BLAKE2b-256("vault v2 body key"; key = data key))
/// plaintext = BLAKE2b-256(header || MAC) || replica count u32 || replicas || entry count u32 || entries
///             || tombstone count u32 || tombstones || zero padding to a multiple of 256
/// replica   = replica id u64 || time u64                       (time = milliseconds << 16 | counter)
/// timestamp = time u64 || replica id u64
/// entry     = id (16) || name length u16 || name || created timestamp || modified timestamp
///             || field count u16 || fields || version count u8 || versions
/// field     = flags u8 (bit 0: secret) || name length u8 || name || value length u32 || value
/// version   = modified timestamp || flags u8 (bit 0: conflict) || field count u16 || fields
/// tombstone = id (16) || deleted timestamp
/// ```
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

/// A key stanza of a version-2 header: the data key made available to one way of opening the vault. A reader
/// keeps stanzas of types it does not know and writes them back as they were.
public struct KeyStanza: Equatable, Sendable {
    /// A passphrase through Argon2id (``Argon2idStanza``).
    static let argon2id: UInt16 = 1
    /// An age X25519 recipient (``RecipientStanza``), opened above this library (VaultAge).
    static let x25519: UInt16 = 2
    /// An age ML-KEM-768 + X25519 hybrid recipient (``RecipientStanza``), opened above this library (VaultAgePQ).
    static let mlkem768x25519: UInt16 = 3

    public internal(set) var type: UInt16
    public internal(set) var body: [UInt8]
}

/// The `argon2id` stanza: the data key wrapped (secretbox) under a key derived from the passphrase.
struct Argon2idStanza: Equatable, Sendable {
    static let byteCount = 8 + 8 + Argon2id.saltByteCount + VaultFormat.nonceByteCount + VaultFormat.wrappedKeyByteCount

    var parameters: Argon2id.Parameters
    var salt: [UInt8]
    var keyNonce: [UInt8]
    var wrappedKey: [UInt8]

    init(parameters: Argon2id.Parameters, salt: [UInt8], keyNonce: [UInt8], wrappedKey: [UInt8]) {
        self.parameters = parameters
        self.salt = salt
        self.keyNonce = keyNonce
        self.wrappedKey = wrappedKey
    }

    init?(body: [UInt8]) {
        guard body.count == Self.byteCount else { return nil }
        let parsed = body.withUnsafeBytes { bytes -> Argon2idStanza in
            var reader = ByteReader(bytes)
            let parameters = Argon2id.Parameters(opsLimit: reader.readUInt64(), memLimitBytes: reader.readUInt64())
            return Argon2idStanza(
                parameters: parameters, salt: reader.readBytes(Argon2id.saltByteCount),
                keyNonce: reader.readBytes(VaultFormat.nonceByteCount),
                wrappedKey: reader.readBytes(VaultFormat.wrappedKeyByteCount))
        }
        self = parsed
    }

    var stanza: KeyStanza {
        var body = [UInt8]()
        body.appendLittleEndian(parameters.opsLimit)
        body.appendLittleEndian(parameters.memLimitBytes)
        body += salt + keyNonce + wrappedKey
        return KeyStanza(type: KeyStanza.argon2id, body: body)
    }

    /// Wraps `dataKey` under a key derived from `passphrase` with a fresh salt.
    static func wrap(_ dataKey: SecureBytes, passphrase: SecureBytes, parameters: Argon2id.Parameters) throws -> Argon2idStanza {
        let header = try VaultEnvelope.wrap(dataKey, passphrase: passphrase, parameters: parameters, generation: 0)
        return Argon2idStanza(parameters: parameters, salt: header.salt, keyNonce: header.keyNonce, wrappedKey: header.wrappedKey)
    }

    /// The data key, or `nil` when `passphrase` does not open this stanza.
    func unwrap(passphrase: SecureBytes, label: String) throws -> SecureBytes? {
        let header = VaultFormat.Header(parameters: parameters, salt: salt, generation: 0, keyNonce: keyNonce, wrappedKey: wrappedKey)
        do {
            return try VaultEnvelope.unwrapDataKey(of: header, passphrase: passphrase, path: label)
        } catch VaultError.wrongPassphrase {
            return nil
        }
    }
}

/// A recipient stanza: the `x25519` stanza (type 2) or the `mlkem768x25519` stanza (type 3), the data key wrapped
/// for one age recipient as a complete minimal age v1 file (docs/FORMAT.md, "The x25519 stanza", "The
/// mlkem768x25519 stanza"):
///
/// ```
/// x25519:         recipient_length u8 (= 62)      || recipient ("age1…", 62 bytes)      || age file (232 bytes)
/// mlkem768x25519: recipient_length u16 (= 1959)   || recipient ("age1pq1…", 1959 bytes) || age file (1691 bytes)
/// age file        = "age-encryption.org/v1" LF "-> X25519 " share LF body LF "--- " MAC LF || payload (64 bytes)
///                or "age-encryption.org/v1" LF "-> mlkem768x25519 " enc LF body LF "--- " MAC LF || payload
/// ```
///
/// This library checks only its shape (lengths, the recipient's characters, the age file's first line and
/// stanza type) and keeps it as opaque bytes: unwrapping needs age's X25519 and HKDF (`VaultAge`) or X-Wing and
/// HPKE (`VaultAgePQ`), which check the rest of the age file when they open one, and wrap new ones. The recipient
/// beside the age file lets a writer re-wrap a new data key for everyone and `vault recipients list` work without
/// a key.
public struct RecipientStanza: Equatable, Sendable {
    /// The two kinds of recipient stanza, with their fixed sizes.
    public enum Kind: Equatable, Sendable, CaseIterable {
        /// age's X25519 recipient (`age1…`): type 2.
        case x25519
        /// age's post-quantum hybrid recipient (`age1pq1…`, ML-KEM-768 + X25519): type 3.
        case mlkem768x25519

        /// The key stanza type.
        public var stanzaType: UInt16 { self == .x25519 ? KeyStanza.x25519 : KeyStanza.mlkem768x25519 }
        /// The kind of a key stanza type, nil for a type that is not a recipient stanza.
        public init?(stanzaType: UInt16) {
            switch stanzaType {
            case KeyStanza.x25519: self = .x25519
            case KeyStanza.mlkem768x25519: self = .mlkem768x25519
            default: return nil
            }
        }
        /// The kind of a recipient, by its prefix (`age1pq1` or else `age1`).
        public init(recipient: some Collection<UInt8>) {
            self = recipient.starts(with: "age1pq1".utf8) ? .mlkem768x25519 : .x25519
        }
        /// The size of the `recipient_length` field: 1 byte, or 2 (big-endian) for the long hybrid recipients.
        var lengthFieldByteCount: Int { self == .x25519 ? 1 : 2 }
        /// The length of the recipient: `age`, `1`, 52 data and 6 checksum characters; `age1pq`, `1`, 1,946 and 6.
        public var recipientByteCount: Int { self == .x25519 ? 62 : 1959 }
        /// How the recipient starts.
        var recipientPrefix: String { self == .x25519 ? "age1" : "age1pq1" }
        /// The length of the age file: a header with one stanza (168 bytes; 1,627), a 16-byte nonce, the 32-byte
        /// data key and the chunk's 16-byte tag.
        public var ageFileByteCount: Int { self == .x25519 ? 232 : 1691 }
        /// How the age file starts: the version line and the stanza's type.
        public var ageFilePrefix: [UInt8] {
            Array("age-encryption.org/v1\n-> \(self == .x25519 ? "X25519" : "mlkem768x25519") ".utf8)
        }
        /// The length of the whole stanza body.
        public var byteCount: Int { lengthFieldByteCount + recipientByteCount + ageFileByteCount }
    }

    /// The x25519 stanza's recipient length.
    public static let recipientByteCount = Kind.x25519.recipientByteCount
    /// The x25519 stanza's age file length.
    public static let ageFileByteCount = Kind.x25519.ageFileByteCount
    /// The length of the whole x25519 stanza body.
    public static let byteCount = Kind.x25519.byteCount
    /// How every age file of an `x25519` stanza starts: the version line and the `X25519` stanza's type.
    public static let ageFilePrefix = Kind.x25519.ageFilePrefix
    /// Bech32's data characters.
    static let bech32Characters = Set("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)

    /// Which stanza it is.
    public let kind: Kind
    /// The recipient the age file is for (`age1…` or `age1pq1…`, lower case), as the writer recorded it.
    public let recipient: String
    /// The age file whose plaintext is the data key.
    public let ageFile: [UInt8]

    /// A stanza of `recipient` and `ageFile` (its kind by the recipient's prefix), or `nil` when their shape is
    /// not that kind's.
    public init?(recipient: String, ageFile: [UInt8]) {
        let kind = Kind(recipient: recipient.utf8)
        guard Self.recipientShapeIsValid(Array(recipient.utf8), kind: kind), Self.ageFileShapeIsValid(ageFile, kind: kind) else { return nil }
        self.kind = kind
        self.recipient = recipient
        self.ageFile = ageFile
    }

    /// Reads a stanza body of `kind`, checking its shape in the order of docs/FORMAT.md: the length
    /// (`bad_stanza`), the recipient (`bad_recipient`), the age file's first bytes (`bad_age_file`).
    init(body: [UInt8], kind: Kind, index: Int, label: String = "") throws {
        func corrupt(_ reason: Corruption) -> VaultError { .corrupt(path: label, reason: reason) }
        guard body.count == kind.byteCount else { throw corrupt(.badStanza(index: index)) }
        let lengthField = body[0..<kind.lengthFieldByteCount].reduce(0) { $0 << 8 | Int($1) }
        let recipientEnd = kind.lengthFieldByteCount + kind.recipientByteCount
        let recipient = Array(body[kind.lengthFieldByteCount..<recipientEnd])
        guard lengthField == kind.recipientByteCount, Self.recipientShapeIsValid(recipient, kind: kind) else {
            throw corrupt(.badRecipient(index: index))
        }
        let ageFile = Array(body[recipientEnd...])
        guard Self.ageFileShapeIsValid(ageFile, kind: kind) else { throw corrupt(.badAgeFile(index: index)) }
        self.kind = kind
        self.recipient = String(decoding: recipient, as: UTF8.self)
        self.ageFile = ageFile
    }

    static func recipientShapeIsValid(_ recipient: [UInt8], kind: Kind) -> Bool {
        recipient.count == kind.recipientByteCount && recipient.starts(with: kind.recipientPrefix.utf8)
            && recipient.dropFirst(kind.recipientPrefix.utf8.count).allSatisfy(bech32Characters.contains)
    }

    static func ageFileShapeIsValid(_ ageFile: [UInt8], kind: Kind) -> Bool {
        ageFile.count == kind.ageFileByteCount && ageFile.starts(with: kind.ageFilePrefix)
    }

    /// The stanza as it goes into a header.
    public var stanza: KeyStanza {
        let length = kind.recipientByteCount
        let lengthField: [UInt8] = kind.lengthFieldByteCount == 1 ? [UInt8(length)] : [UInt8(length >> 8), UInt8(length & 0xFF)]
        return KeyStanza(type: kind.stanzaType, body: lengthField + Array(recipient.utf8) + ageFile)
    }
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

    /// The stanza types, in order (`argon2id`, `x25519`, … and `unknown(N)`).
    public var stanzaTypes: [String] {
        stanzas.map {
            switch $0.type {
            case KeyStanza.argon2id: return "argon2id"
            case KeyStanza.x25519: return "x25519"
            case KeyStanza.mlkem768x25519: return "mlkem768x25519"
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
                }
                stanzas.append(KeyStanza(type: type, body: body))
            }
            guard reader.offset == headerLength else { throw corrupt(.badHeaderLength(headerLength)) }
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
    /// (each `argon2id` stanza with a passphrase), the header's MAC, then the body.
    ///
    /// - Throws: ``VaultError/wrongPassphrase(path:)`` when no stanza opens with the passphrase, or the data key
    ///   given does not authenticate the header; ``VaultError/corrupt(path:reason:)`` for a header or body that
    ///   does not authenticate or parse.
    public static func open(
        _ file: [UInt8], with key: DocumentKey, label: String, policy: Argon2id.KDFPolicy
    ) throws -> (document: VaultDocument, dataKey: SecureBytes) {
        let header = try DocumentHeader.parse(file, label: label, policy: policy)
        let dataKey: SecureBytes
        switch key {
        case .dataKey(let given), .unwrapped(let given):
            dataKey = given
        case .passphrase(let passphrase):
            var found: SecureBytes?
            for stanza in header.stanzas where stanza.type == KeyStanza.argon2id {
                if let unwrapped = try Argon2idStanza(body: stanza.body)!.unwrap(passphrase: passphrase, label: label) {
                    found = unwrapped
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
        let document = try DocumentBody.parse(plaintext, binding: binding, header: header, label: label)
        return (document, dataKey)
    }

    /// The file of this document under `dataKey`, at the next generation (which it takes): the header with its
    /// stanzas, its MAC, a fresh body nonce and the sealed body.
    ///
    /// - Throws: ``VaultError/generationExhausted(path:)``; ``VaultError/vaultTooLarge(path:byteCount:)`` (also
    ///   for a header past 65,536 bytes: too many recipient stanzas).
    public func seal(dataKey: SecureBytes) throws -> [UInt8] {
        guard generation < UInt64.max else { throw VaultError.generationExhausted(path: label) }
        let header = DocumentHeader.encode(
            vaultID: vaultID, generation: generation + 1, dataKeyID: dataKeyID, version: formatVersion, stanzas: stanzas)
        // A header past its bound (18 mlkem768x25519 stanzas, or 218 x25519 ones) would be refused by every reader.
        guard header.count <= DocumentFormat.maximumHeaderByteCount else {
            throw VaultError.vaultTooLarge(path: label, byteCount: header.count)
        }
        let mac = Self.mac(of: header, dataKey: dataKey)
        let binding = Sodium.blake2b256FromArray(header + mac)
        let plaintext = try DocumentBody.encode(self, binding: binding)
        let file = try VaultEnvelope.seal(
            prefix: header + mac, plaintext: plaintext, key: Self.subkey(dataKey, DocumentFormat.bodyKeyContext))
        generation += 1
        return file
    }
}

extension Sodium {
    static func blake2b256FromArray(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { blake2b256($0) }
    }
}
