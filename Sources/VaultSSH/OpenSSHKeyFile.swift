import Crypto
import _CryptoExtras
import FoundationEssentials
import VaultCore

/// OpenSSH's private key file, `openssh-key-v1` (OpenSSH's PROTOCOL.key), in its PEM armor: read unencrypted or
/// encrypted with aes256-ctr under a bcrypt_pbkdf key, and written unencrypted (the vault's own encryption protects
/// what it stores).
public enum OpenSSHKeyFile {
    static let magic = Array("openssh-key-v1\0".utf8)
    static let begin = "-----BEGIN OPENSSH PRIVATE KEY-----"
    static let end = "-----END OPENSSH PRIVATE KEY-----"

    /// What the file's header says, read without a passphrase.
    public struct Header: Sendable, Equatable {
        public let cipher: String
        public let kdf: String
        public let publicKey: SSHPublicKey
        public var isEncrypted: Bool { cipher != "none" }
    }

    /// The binary body of the armored `text`, or `nil` when it is not an OpenSSH private key's armor.
    static func body(of text: String) throws(SSHError) -> [UInt8]? {
        guard let start = text.firstRange(of: begin) else { return nil }
        guard let stop = text.firstRange(of: end), start.upperBound <= stop.lowerBound else { throw .truncated(field: "the key file's END line") }
        guard let bytes = Base64.decode(text[start.upperBound..<stop.lowerBound]) else {
            throw .malformed(field: "key file", reason: "not base64 between its BEGIN and END lines")
        }
        return bytes
    }

    /// The header of `text` (an armored openssh-key-v1), or `nil` when it is not one.
    public static func header(_ text: String) throws(SSHError) -> Header? {
        guard let bytes = try body(of: text) else { return nil }
        return try parseOuter(bytes).header
    }

    private static func parseOuter(_ bytes: [UInt8]) throws(SSHError) -> (header: Header, kdfOptions: [UInt8], encrypted: [UInt8]) {
        guard bytes.starts(with: magic) else { throw .malformed(field: "key file", reason: "no openssh-key-v1 magic") }
        var reader = SSHReader(bytes, offset: magic.count)
        let cipher = try reader.text("cipher name")
        let kdf = try reader.text("KDF name")
        let kdfOptions = try reader.string("KDF options")
        let count = try reader.uint32("key count")
        guard count == 1 else { throw count == 0 ? .malformed(field: "key file", reason: "no key") : .severalKeys(Int(count)) }
        let publicKey = try SSHPublicKey(blob: try reader.string("public key"))
        let encrypted = try reader.string("private section")
        try reader.requireEnd("key file")
        switch (cipher, kdf) {
        case ("none", "none"), ("aes256-ctr", "bcrypt"): break
        default: throw .unsupportedCipher(cipher == "none" || cipher == "aes256-ctr" ? kdf : cipher)
        }
        return (Header(cipher: cipher, kdf: kdf, publicKey: publicKey), kdfOptions, encrypted)
    }

    /// The key in `text`; `passphrase` is asked once, and only when the file is encrypted.
    public static func read(_ text: String, passphrase: () throws -> SecureBytes?) throws -> SSHPrivateKey {
        guard let bytes = try body(of: text) else { throw SSHError.notAPrivateKey }
        let (header, kdfOptions, encrypted) = try parseOuter(bytes)
        let section: SecureBytes
        if header.isEncrypted {
            var options = SSHReader(kdfOptions)
            let salt = try options.string("bcrypt salt")
            let rounds = try options.uint32("bcrypt rounds")
            try options.requireEnd("KDF options")
            guard rounds >= 1, rounds <= BcryptPBKDF.maxRounds else {
                throw SSHError.malformed(field: "bcrypt rounds", reason: "\(rounds), not 1 to \(BcryptPBKDF.maxRounds)")
            }
            guard encrypted.count % 16 == 0, !encrypted.isEmpty else {
                throw SSHError.malformed(field: "private section", reason: "not whole AES blocks")
            }
            guard let secret = try passphrase() else { throw SSHError.passphraseRequired }
            section = try decrypt(encrypted, passphrase: secret, salt: salt, rounds: rounds)
        } else {
            section = SecureBytes(count: encrypted.count) { $0.copyBytes(from: encrypted) }
        }
        let key = try section.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(SSHError) -> SSHPrivateKey in
            try parsePrivate(Array(raw), encrypted: header.isEncrypted)
        }
        guard key.publicKey == header.publicKey else { throw SSHError.keyMismatch }
        return key
    }

    private static func decrypt(_ encrypted: [UInt8], passphrase: SecureBytes, salt: [UInt8], rounds: UInt32) throws -> SecureBytes {
        var derived = passphrase.withUnsafeBytes { BcryptPBKDF.derive(passphrase: $0, salt: salt, rounds: rounds, keyLength: 48) }
        defer { for index in derived.indices { derived[index] = 0 } }
        do {
            let plain = try AES._CTR.decrypt(
                encrypted, using: SymmetricKey(data: derived[0..<32]), nonce: AES._CTR.Nonce(nonceBytes: derived[32..<48]))
            return SecureBytes(count: plain.count) { target in plain.withUnsafeBytes { target.copyMemory(from: $0) } }
        } catch {
            throw SSHError.crypto("AES-256-CTR: \(error)")
        }
    }

    /// The private section: check words, the key's fields, its comment, the padding 1, 2, 3, ….
    private static func parsePrivate(_ section: [UInt8], encrypted: Bool) throws(SSHError) -> SSHPrivateKey {
        var reader = SSHReader(section)
        guard try reader.uint32("check word") == (try reader.uint32("check word")) else {
            throw encrypted ? .wrongPassphrase : .malformed(field: "private section", reason: "its check words differ")
        }
        let type = try reader.text("private key type")
        let key: SSHPrivateKey
        switch type {
        case "ssh-ed25519":
            let publicKey = try reader.string("Ed25519 public key")
            let secret = try reader.string("Ed25519 private key")
            guard secret.count == 64, publicKey.count == 32 else { throw .malformed(field: "Ed25519 private key", reason: "wrong length") }
            let seed = SecureBytes(count: 32) { $0.copyBytes(from: secret[0..<32]) }
            key = try SSHPrivateKey.ed25519(seed: seed, comment: "")
            guard Array(secret[32..<64]) == publicKey, key.publicKey.blob.suffix(32).elementsEqual(publicKey) else { throw .keyMismatch }
        case "ecdsa-sha2-nistp256":
            guard try reader.text("ECDSA curve") == "nistp256" else { throw .malformed(field: "ECDSA curve", reason: "not nistp256") }
            let point = try reader.string("ECDSA point")
            let scalar = try reader.positiveMPInt("ECDSA private key")
            guard scalar.count <= 32, let raw = try? P256.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0, count: 32 - scalar.count) + scalar) else {
                throw .malformed(field: "ECDSA private key", reason: "not a P-256 scalar")
            }
            key = try SSHPrivateKey.ecdsa(raw, comment: "")
            guard Array(raw.publicKey.x963Representation) == point else { throw .keyMismatch }
        case "ssh-rsa":
            let n = try reader.positiveMPInt("RSA modulus"), e = try reader.positiveMPInt("RSA exponent")
            func secure(_ field: String) throws(SSHError) -> SecureBytes {
                let value = try reader.positiveMPInt(field)
                return SecureBytes(count: value.count) { $0.copyBytes(from: value) }
            }
            let d = try secure("RSA d"), iqmp = try secure("RSA iqmp"), p = try secure("RSA p"), q = try secure("RSA q")
            key = try SSHPrivateKey.rsa(n: n, e: e, d: d, iqmp: iqmp, p: p, q: q, comment: "")
        default:
            throw .unsupportedKeyType(type)
        }
        var named = key
        named.comment = try reader.text("comment")
        var expected: UInt8 = 1
        while !reader.isAtEnd {
            guard try reader.byte("padding") == expected else { throw .malformed(field: "padding", reason: "not 1, 2, 3, …") }
            expected &+= 1
        }
        return named
    }

    /// `key` as an unencrypted armored openssh-key-v1 file (what `ssh-keygen -N ''` writes), in guarded memory.
    public static func write(_ key: SSHPrivateKey) -> SecureBytes {
        let check = UInt32.random(in: .min ... .max)
        var section = SSHWriter()
        section.uint32(check)
        section.uint32(check)
        key.privateFields().withUnsafeBytes { section.raw($0) }
        section.string(key.comment)
        var pad: UInt8 = 1
        while section.bytes.count % 8 != 0 { section.byte(pad); pad += 1 }
        var file = SSHWriter()
        file.raw(magic)
        file.string("none")
        file.string("none")
        file.string([UInt8]())
        file.uint32(1)
        file.string(key.publicKey.blob)
        file.string(section.bytes)
        let encoded = Array(Base64.encode(file.bytes).utf8)
        var text = Array((begin + "\n").utf8)
        for start in stride(from: 0, to: encoded.count, by: 70) {
            text += encoded[start..<Swift.min(start + 70, encoded.count)] + [0x0A]
        }
        text += Array((end + "\n").utf8)
        return SecureBytes(count: text.count) { $0.copyBytes(from: text) }
    }
}
