import VaultSodium

/// A key stanza of a version-2 header: the data key made available to one way of opening the vault. A reader
/// keeps stanzas of types it does not know and writes them back as they were.
public struct KeyStanza: Equatable, Sendable {
    /// A passphrase through Argon2id (``Argon2idStanza``).
    static let argon2id: UInt16 = 1
    /// An age X25519 recipient (``RecipientStanza``), opened above this library (VaultAge).
    static let x25519: UInt16 = 2
    /// An age ML-KEM-768 + X25519 hybrid recipient (``RecipientStanza``), opened above this library (VaultAgePQ).
    static let mlkem768x25519: UInt16 = 3
    /// A signed link from the data key a change replaced to the next one (``KeyLink``): no way to open the vault.
    static let keyLink: UInt16 = 4

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
        try wrap(dataKey, under: .fresh(from: passphrase, parameters: parameters))
    }

    /// Wraps `dataKey` under `key` (its salt and parameters) with a fresh nonce: no KDF.
    static func wrap(_ dataKey: SecureBytes, under key: PassphraseKey) throws -> Argon2idStanza {
        let (nonce, wrapped) = try key.wrap(dataKey)
        return Argon2idStanza(parameters: key.parameters, salt: key.salt, keyNonce: nonce, wrappedKey: wrapped)
    }

    /// The key `passphrase` gives under this stanza's salt and parameters (the KDF runs).
    func passphraseKey(_ passphrase: SecureBytes) throws -> PassphraseKey {
        try .derive(from: passphrase, salt: salt, parameters: parameters)
    }

    /// The data key, or `nil` when `passphrase` does not open this stanza.
    func unwrap(passphrase: SecureBytes) throws -> SecureBytes? {
        try unwrap(with: passphraseKey(passphrase))
    }

    /// The data key, or `nil` when `key` is not this stanza's (another salt or parameters, or it does not open).
    func unwrap(with key: PassphraseKey) -> SecureBytes? {
        guard key.salt == salt, key.parameters == parameters else { return nil }
        return key.unwrap(wrappedKey, nonce: keyNonce)
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
