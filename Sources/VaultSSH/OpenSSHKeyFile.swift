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

    /// The binary body of the armored `text`, decoded into guarded memory, or `nil` when it is not an OpenSSH
    /// private key's armor.
    static func body(of text: UnsafeRawBufferPointer) throws(SSHError) -> SecureBytes? {
        guard let start = text.firstRange(of: begin.utf8) else { return nil }
        guard let stop = text.firstRange(of: end.utf8), start.upperBound <= stop.lowerBound else { throw .truncated(field: "the key file's END line") }
        guard let bytes = SecureBytes.base64Decoded(UnsafeRawBufferPointer(rebasing: text[start.upperBound..<stop.lowerBound])) else {
            throw .malformed(field: "key file", reason: "not base64 between its BEGIN and END lines")
        }
        return bytes
    }

    /// Whether `text` holds an armored openssh-key-v1 (its BEGIN line), read in place.
    public static func isArmored(_ text: UnsafeRawBufferPointer) -> Bool { text.firstRange(of: begin.utf8) != nil }

    /// The header of `text` (an armored openssh-key-v1), or `nil` when it is not one.
    public static func header(_ text: String) throws(SSHError) -> Header? {
        let utf8 = Array(text.utf8)
        let found = utf8.withUnsafeBytes { raw in Result { () throws(SSHError) in try body(of: raw) } }
        guard let body = try found.get() else { return nil }
        return try body.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws(SSHError) in try parseOuter(bytes).header }
    }

    private struct Outer {
        let header: Header
        let kdfOptions: [UInt8]
        /// The private section: a view of the body's guarded region.
        let section: UnsafeRawBufferPointer
    }

    private static func parseOuter(_ bytes: UnsafeRawBufferPointer) throws(SSHError) -> Outer {
        guard bytes.starts(with: magic) else { throw .malformed(field: "key file", reason: "no openssh-key-v1 magic") }
        var reader = GuardedReader(bytes, offset: magic.count)
        let cipher = try reader.text("cipher name")
        let kdf = try reader.text("KDF name")
        let kdfOptions = try reader.publicBytes("KDF options")
        let count = try reader.uint32("key count")
        guard count == 1 else { throw count == 0 ? .malformed(field: "key file", reason: "no key") : .severalKeys(Int(count)) }
        let publicKey = try SSHPublicKey(blob: try reader.publicBytes("public key"))
        let section = try reader.string("private section")
        try reader.requireEnd("key file")
        switch (cipher, kdf) {
        case ("none", "none"), ("aes256-ctr", "bcrypt"): break
        default: throw .unsupportedCipher(cipher == "none" || cipher == "aes256-ctr" ? kdf : cipher)
        }
        return Outer(header: Header(cipher: cipher, kdf: kdf, publicKey: publicKey), kdfOptions: kdfOptions, section: section)
    }

    /// The key in `text`; `passphrase` is asked once, and only when the file is encrypted.
    public static func read(_ text: String, passphrase: () throws -> SecureBytes?) throws -> SSHPrivateKey {
        var text = text
        return try text.withUTF8 { try read(armored: UnsafeRawBufferPointer($0), passphrase: passphrase) }
    }

    /// The key in the armored file `text` (read in place: the vault's field, in guarded memory). Its secret parts
    /// go from there to guarded regions only: the decoded body, the decrypted section and each secret field.
    public static func read(armored text: UnsafeRawBufferPointer, passphrase: () throws -> SecureBytes?) throws -> SSHPrivateKey {
        guard let body = try body(of: text) else { throw SSHError.notAPrivateKey }
        return try body.withUnsafeBytes { bytes in
            let outer = try parseOuter(bytes)
            let key: SSHPrivateKey
            if outer.header.isEncrypted {
                let section = try decrypt(outer, passphrase: passphrase)
                key = try section.withUnsafeBytes { raw throws(SSHError) in try parsePrivate(raw, encrypted: true) }
            } else {
                key = try parsePrivate(outer.section, encrypted: false)
            }
            guard key.publicKey == outer.header.publicKey else { throw SSHError.keyMismatch }
            return key
        }
    }

    private static func decrypt(_ outer: Outer, passphrase: () throws -> SecureBytes?) throws -> SecureBytes {
        var options = SSHReader(outer.kdfOptions)
        let salt = try options.string("bcrypt salt")
        let rounds = try options.uint32("bcrypt rounds")
        try options.requireEnd("KDF options")
        guard rounds >= 1, rounds <= BcryptPBKDF.maxRounds else {
            throw SSHError.malformed(field: "bcrypt rounds", reason: "\(rounds), not 1 to \(BcryptPBKDF.maxRounds)")
        }
        guard outer.section.count % 16 == 0, !outer.section.isEmpty else {
            throw SSHError.malformed(field: "private section", reason: "not whole AES blocks")
        }
        guard let secret = try passphrase() else { throw SSHError.passphraseRequired }
        var derived = secret.withUnsafeBytes { BcryptPBKDF.derive(passphrase: $0, salt: salt, rounds: rounds, keyLength: 48) }
        defer { wipe(&derived) }
        do {
            var plain = try AES._CTR.decrypt(
                outer.section, using: SymmetricKey(data: derived[0..<32]), nonce: AES._CTR.Nonce(nonceBytes: derived[32..<48]))
            defer { plain.resetBytes(in: plain.startIndex..<plain.endIndex) }
            return plain.withUnsafeBytes { SecureBytes.guarded($0) }
        } catch {
            throw SSHError.crypto("AES-256-CTR: \(error)")
        }
    }

    /// The private section: check words, the key's fields, its comment, the padding 1, 2, 3, ….
    private static func parsePrivate(_ section: UnsafeRawBufferPointer, encrypted: Bool) throws(SSHError) -> SSHPrivateKey {
        var reader = GuardedReader(section)
        guard try reader.uint32("check word") == (try reader.uint32("check word")) else {
            throw encrypted ? .wrongPassphrase : .malformed(field: "private section", reason: "its check words differ")
        }
        let type = try reader.text("private key type")
        let key: SSHPrivateKey
        switch type {
        case "ssh-ed25519":
            let publicKey = try reader.publicBytes("Ed25519 public key")
            let secret = try reader.string("Ed25519 private key")
            guard secret.count == 64, publicKey.count == 32 else { throw .malformed(field: "Ed25519 private key", reason: "wrong length") }
            key = try SSHPrivateKey.ed25519(seed: .guarded(UnsafeRawBufferPointer(rebasing: secret[0..<32])), comment: "")
            guard secret[32..<64].elementsEqual(publicKey), key.publicKey.blob.suffix(32).elementsEqual(publicKey) else { throw .keyMismatch }
        case "ecdsa-sha2-nistp256":
            guard try reader.text("ECDSA curve") == "nistp256" else { throw .malformed(field: "ECDSA curve", reason: "not nistp256") }
            let point = try reader.publicBytes("ECDSA point")
            let scalar = try reader.positiveMPInt("ECDSA private key")
            guard scalar.count <= 32 else { throw .malformed(field: "ECDSA private key", reason: "not a P-256 scalar") }
            // Left-padded to 32 bytes in its own guarded region.
            let padded = SecureBytes(count: 32) { out in
                out.initializeMemory(as: UInt8.self, repeating: 0)
                UnsafeMutableRawBufferPointer(rebasing: out[(32 - scalar.count)...]).copyMemory(from: scalar)
            }
            key = try SSHPrivateKey.ecdsa(scalar: padded, comment: "")
            guard key.publicKey.blob.suffix(65).elementsEqual(point), point.count == 65 else { throw .keyMismatch }
        case "ssh-rsa":
            let n = Array(try reader.positiveMPInt("RSA modulus")), e = Array(try reader.positiveMPInt("RSA exponent"))
            let d = SecureBytes.guarded(try reader.positiveMPInt("RSA d")), iqmp = SecureBytes.guarded(try reader.positiveMPInt("RSA iqmp"))
            let p = SecureBytes.guarded(try reader.positiveMPInt("RSA p")), q = SecureBytes.guarded(try reader.positiveMPInt("RSA q"))
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

    /// `key` as an unencrypted armored openssh-key-v1 file (what `ssh-keygen -N ''` writes), built in guarded memory
    /// only: the private section, the binary file, its base64 armor.
    public static func write(_ key: SSHPrivateKey) -> SecureBytes {
        let check = UInt32.random(in: .min ... .max)
        let fields = key.privateFields()
        let comment = Array(key.comment.utf8)
        let unpadded = 8 + fields.count + 4 + comment.count
        let section = SecureBytes(capacity: unpadded + 7) { out in
            out.appendSSH(uint32: check)
            out.appendSSH(uint32: check)
            out.append(fields)
            out.appendSSH(string: comment)
            var pad: UInt8 = 1
            while out.count % 8 != 0 { out.append(pad); pad += 1 }
        }
        let blob = key.publicKey.blob
        let file = SecureBytes(capacity: magic.count + 32 + blob.count + section.count) { out in
            magic.withUnsafeBytes { out.append($0) }
            out.appendSSH(string: "none")
            out.appendSSH(string: "none")
            out.appendSSH(string: [UInt8]())
            out.appendSSH(uint32: 1)
            out.appendSSH(string: blob)
            section.withUnsafeBytes { out.appendSSH(string: $0) }
        }
        return file.withUnsafeBytes { SecureBytes.armored($0, begin: begin, end: end) }
    }
}
