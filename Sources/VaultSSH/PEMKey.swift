import Crypto
import _CryptoExtras
import FoundationEssentials
import VaultCore

/// Private keys in PEM: PKCS#8 (`BEGIN PRIVATE KEY`: Ed25519, ECDSA P-256, RSA), PKCS#1 (`BEGIN RSA PRIVATE
/// KEY`) and SEC1 (`BEGIN EC PRIVATE KEY`), unencrypted (an encrypted one is refused by name: decrypt it with
/// `ssh-keygen -p` or `openssl pkey` first).
public enum PEMKey {
    /// The key of `text`, or `nil` when it holds no PEM private key.
    public static func read(_ text: String, comment: String) throws(SSHError) -> SSHPrivateKey? {
        if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
            throw .unsupportedCipher("encrypted PEM (decrypt it with 'ssh-keygen -p' first)")
        }
        if let der = try block("PRIVATE KEY", in: text) { return try pkcs8(der, comment: comment) }
        if let der = try block("RSA PRIVATE KEY", in: text) { return try SSHPrivateKey.rsa(pkcs1: der, comment: comment) }
        if let der = try block("EC PRIVATE KEY", in: text) {
            guard let key = try? P256.Signing.PrivateKey(derRepresentation: der) else {
                throw .unsupportedKeyType("EC private key other than P-256")
            }
            return try SSHPrivateKey.ecdsa(key, comment: comment)
        }
        return nil
    }

    static func block(_ label: String, in text: String) throws(SSHError) -> [UInt8]? {
        guard let start = text.firstRange(of: "-----BEGIN \(label)-----") else { return nil }
        guard let stop = text.firstRange(of: "-----END \(label)-----"), start.upperBound <= stop.lowerBound else {
            throw .truncated(field: "the PEM END line")
        }
        guard let der = Base64.decode(text[start.upperBound..<stop.lowerBound]) else {
            throw .malformed(field: "PEM", reason: "not base64")
        }
        return der
    }

    static let ed25519OID: [UInt8] = [0x2B, 0x65, 0x70]
    static let rsaOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
    static let ecOID: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]

    /// PKCS#8's PrivateKeyInfo: SEQUENCE { version, SEQUENCE { algorithm, parameters }, OCTET STRING key, … }.
    static func pkcs8(_ der: [UInt8], comment: String) throws(SSHError) -> SSHPrivateKey {
        var whole = DER(der)
        var outer = try whole.sequence()
        _ = try outer.next(tag: 0x02)
        var algorithm = try outer.sequence()
        let oid = try algorithm.next(tag: 0x06)
        let privateKey = try outer.next(tag: 0x04)
        switch oid {
        case ed25519OID:
            var inner = DER(privateKey)
            let seed = try inner.next(tag: 0x04)
            guard seed.count == 32 else { throw .malformed(field: "Ed25519 private key", reason: "\(seed.count) bytes, not 32") }
            return try SSHPrivateKey.ed25519(seed: SecureBytes(count: 32) { $0.copyBytes(from: seed) }, comment: comment)
        case rsaOID:
            return try SSHPrivateKey.rsa(pkcs1: privateKey, comment: comment)
        case ecOID:
            guard let key = try? P256.Signing.PrivateKey(derRepresentation: der) else {
                throw .unsupportedKeyType("EC private key other than P-256")
            }
            return try SSHPrivateKey.ecdsa(key, comment: comment)
        default:
            throw .unsupportedKeyType("PKCS#8 algorithm " + oid.map { String($0, radix: 16) }.joined(separator: "."))
        }
    }
}

/// Just enough DER (X.690) for private keys: tag, definite length, contents.
struct DER {
    private var bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The contents of the next element, which must have `tag`.
    mutating func next(tag: UInt8) throws(SSHError) -> [UInt8] {
        guard offset + 2 <= bytes.count else { throw .truncated(field: "DER element") }
        guard bytes[offset] == tag else { throw .malformed(field: "DER", reason: "tag \(bytes[offset]), expected \(tag)") }
        var length = Int(bytes[offset + 1])
        offset += 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 3, offset + count <= bytes.count else { throw .malformed(field: "DER", reason: "length") }
            length = bytes[offset..<offset + count].reduce(0) { $0 << 8 | Int($1) }
            offset += count
        }
        guard offset + length <= bytes.count else { throw .truncated(field: "DER element") }
        defer { offset += length }
        return Array(bytes[offset..<offset + length])
    }

    mutating func sequence() throws(SSHError) -> DER { DER(try next(tag: 0x30)) }

    /// An INTEGER as unsigned big-endian bytes (leading zeros dropped).
    mutating func unsigned() throws(SSHError) -> [UInt8] {
        let value = try next(tag: 0x02)
        if let first = value.first, first & 0x80 != 0 { throw .malformed(field: "DER integer", reason: "negative") }
        return Array(value.drop { $0 == 0 })
    }

    /// PKCS#1's RSAPrivateKey: version, n, e, d, p, q, dP, dQ, qInv.
    static func rsaPrivateKey(_ der: [UInt8]) throws(SSHError) -> (n: [UInt8], e: [UInt8], d: [UInt8], p: [UInt8], q: [UInt8], iqmp: [UInt8]) {
        var whole = DER(der)
        var key = try whole.sequence()
        _ = try key.next(tag: 0x02)
        let n = try key.unsigned(), e = try key.unsigned(), d = try key.unsigned(), p = try key.unsigned(), q = try key.unsigned()
        _ = try key.unsigned()
        _ = try key.unsigned()
        let iqmp = try key.unsigned()
        return (n, e, d, p, q, iqmp)
    }
}
