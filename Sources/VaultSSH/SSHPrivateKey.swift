import Crypto
import _CryptoExtras
import FoundationEssentials
import VaultCore
import VaultSodium

/// A private key the vault keeps and the agent signs with: Ed25519 (libsodium), ECDSA over P-256 and RSA
/// (swift-crypto). Secrets stay in guarded memory (``SecureBytes``) or in BoringSSL's keys.
public struct SSHPrivateKey: Sendable {
    enum Material: Sendable {
        /// libsodium's 64-byte secret key (seed and public key).
        case ed25519(SecureBytes)
        case ecdsaP256(P256.Signing.PrivateKey)
        /// The key and its numbers as openssh-key-v1 writes them: d, iqmp, p, q (n and e are in the public key).
        case rsa(_RSA.Signing.PrivateKey, d: SecureBytes, iqmp: SecureBytes, p: SecureBytes, q: SecureBytes)
    }

    let material: Material
    public let publicKey: SSHPublicKey
    public var comment: String

    /// The kinds `vault ssh generate --type` makes.
    public enum GeneratedType: String, Sendable, CaseIterable {
        case ed25519, ecdsa, rsa
    }

    /// A new key: Ed25519, ECDSA P-256, or RSA of `rsaBits` (3072 by default, as ssh-keygen).
    public static func generate(_ type: GeneratedType, rsaBits: Int = 3072, comment: String) throws(SSHError) -> SSHPrivateKey {
        switch type {
        case .ed25519:
            let seed = SecureBytes.random(count: 32)
            return try ed25519(seed: seed, comment: comment)
        case .ecdsa:
            return try ecdsa(P256.Signing.PrivateKey(), comment: comment)
        case .rsa:
            guard [2048, 3072, 4096].contains(rsaBits) else { throw .crypto("RSA keys are 2048, 3072 or 4096 bits") }
            let key: _RSA.Signing.PrivateKey
            do { key = try _RSA.Signing.PrivateKey(keySize: .init(bitCount: rsaBits)) } catch { throw .crypto("\(error)") }
            return try rsa(pkcs1: Array(key.derRepresentation), comment: comment)
        }
    }

    static func ed25519(seed: SecureBytes, comment: String) throws(SSHError) -> SSHPrivateKey {
        var publicKey = [UInt8](repeating: 0, count: 32)
        let secret = SecureBytes(count: 64) { secretKey in
            seed.withUnsafeBytes { seedBytes in
                publicKey.withUnsafeMutableBytes { Sodium.ed25519KeyPair(seed: seedBytes, publicKey: $0, secretKey: secretKey) }
            }
        }
        var blob = SSHWriter()
        blob.string("ssh-ed25519")
        blob.string(publicKey)
        return SSHPrivateKey(material: .ed25519(secret), publicKey: try SSHPublicKey(blob: blob.bytes), comment: comment)
    }

    static func ecdsa(_ key: P256.Signing.PrivateKey, comment: String) throws(SSHError) -> SSHPrivateKey {
        var blob = SSHWriter()
        blob.string("ecdsa-sha2-nistp256")
        blob.string("nistp256")
        blob.string(Array(key.publicKey.x963Representation))
        return SSHPrivateKey(material: .ecdsaP256(key), publicKey: try SSHPublicKey(blob: blob.bytes), comment: comment)
    }

    /// An RSA key from its numbers (big-endian, unsigned).
    static func rsa(n: [UInt8], e: [UInt8], d: SecureBytes, iqmp: SecureBytes, p: SecureBytes, q: SecureBytes, comment: String) throws(SSHError) -> SSHPrivateKey {
        let key: _RSA.Signing.PrivateKey
        do {
            key = try d.withUnsafeBytes { d in try p.withUnsafeBytes { p in try q.withUnsafeBytes { q in
                try _RSA.Signing.PrivateKey(n: n, e: e, d: Array(d), p: Array(p), q: Array(q))
            } } }
        } catch {
            throw .crypto("not a consistent RSA key of 2048 bits or more")
        }
        var blob = SSHWriter()
        blob.string("ssh-rsa")
        blob.mpint(e)
        blob.mpint(n)
        return SSHPrivateKey(material: .rsa(key, d: d, iqmp: iqmp, p: p, q: q), publicKey: try SSHPublicKey(blob: blob.bytes), comment: comment)
    }

    /// An RSA key from PKCS#1's RSAPrivateKey (DER).
    static func rsa(pkcs1 der: [UInt8], comment: String) throws(SSHError) -> SSHPrivateKey {
        let numbers = try DER.rsaPrivateKey(der)
        func secure(_ bytes: [UInt8]) -> SecureBytes { SecureBytes(count: bytes.count) { $0.copyBytes(from: bytes) } }
        return try rsa(n: numbers.n, e: numbers.e, d: secure(numbers.d), iqmp: secure(numbers.iqmp), p: secure(numbers.p), q: secure(numbers.q), comment: comment)
    }

    // MARK: Signing

    /// The agent's sign request flags (draft-miller-ssh-agent §4.5.1).
    public static let flagRSASHA256: UInt32 = 2
    public static let flagRSASHA512: UInt32 = 4

    /// The signature blob (`string algorithm, string signature`) of `data`. RSA signs with SHA-512 when
    /// `flags` asks for it, with SHA-256 when it asks for that, and refuses SHA-1 (`ssh-rsa`, no flag).
    public func sign(_ data: [UInt8], flags: UInt32 = 0) throws(SSHError) -> [UInt8] {
        var out = SSHWriter()
        switch material {
        case .ed25519(let secret):
            out.string("ssh-ed25519")
            out.string(data.withUnsafeBytes { message in secret.withUnsafeBytes { Sodium.ed25519Sign(message, secretKey: $0) } })
        case .ecdsaP256(let key):
            let signature: P256.Signing.ECDSASignature
            do { signature = try key.signature(for: data) } catch { throw .crypto("\(error)") }
            let raw = Array(signature.rawRepresentation)
            var inner = SSHWriter()
            inner.mpint(raw[0..<32])
            inner.mpint(raw[32..<64])
            out.string("ecdsa-sha2-nistp256")
            out.string(inner.bytes)
        case .rsa(let key, _, _, _, _):
            let raw: Data
            do {
                if flags & Self.flagRSASHA512 != 0 {
                    raw = try key.signature(for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
                    out.string("rsa-sha2-512")
                } else if flags & Self.flagRSASHA256 != 0 {
                    raw = try key.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
                    out.string("rsa-sha2-256")
                } else {
                    throw SSHError.unsupportedKeyType("ssh-rsa (SHA-1) signatures")
                }
            } catch let error as SSHError {
                throw error
            } catch {
                throw .crypto("\(error)")
            }
            out.string(Array(raw))
        }
        return out.bytes
    }

    // MARK: openssh-key-v1's private fields

    /// The key-type fields of openssh-key-v1's private section (type first, comment not included), in guarded memory.
    func privateFields() -> SecureBytes {
        var fields = SSHWriter()
        var reader = SSHReader(publicKey.blob)
        switch material {
        case .ed25519(let secret):
            fields.string("ssh-ed25519")
            _ = try? reader.string("type")
            fields.string((try? reader.string("key")) ?? [])
            secret.withUnsafeBytes { fields.string(Array($0)) }
        case .ecdsaP256(let key):
            fields.string("ecdsa-sha2-nistp256")
            fields.string("nistp256")
            fields.string(Array(key.publicKey.x963Representation))
            fields.mpint(Array(key.rawRepresentation))
        case .rsa(_, let d, let iqmp, let p, let q):
            _ = try? reader.string("type")
            let e = (try? reader.positiveMPInt("e")) ?? [], n = (try? reader.positiveMPInt("n")) ?? []
            fields.string("ssh-rsa")
            fields.mpint(n)
            fields.mpint(e)
            for number in [d, iqmp, p, q] { number.withUnsafeBytes { fields.mpint(Array($0)) } }
        }
        let bytes = fields.bytes
        return SecureBytes(count: bytes.count) { $0.copyBytes(from: bytes) }
    }
}
