import Crypto
import _CryptoExtras
import FoundationEssentials
import VaultCore
import VaultSodium

/// A private key the vault keeps and the agent signs with: Ed25519 (libsodium), ECDSA over P-256 and RSA
/// (swift-crypto). Its secret parts live only in guarded memory (``SecureBytes``): Ed25519 signs from there; ECDSA
/// and RSA build swift-crypto's key from there for one signature (BoringSSL's copy lives as long as that signature
/// and is cleansed when freed: docs/SSH-AGENT.md, "What is in memory").
public struct SSHPrivateKey: Sendable {
    enum Material: Sendable {
        /// libsodium's 64-byte secret key (seed and public key).
        case ed25519(SecureBytes)
        /// The 32-byte scalar, big-endian.
        case ecdsaP256(SecureBytes)
        /// The key's numbers (big-endian, unsigned): n and e are public, d, iqmp, p, q as openssh-key-v1 writes them.
        case rsa(n: [UInt8], e: [UInt8], d: SecureBytes, iqmp: SecureBytes, p: SecureBytes, q: SecureBytes)
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
            var exported = key.derRepresentation
            var der = Array(exported)
            defer {
                exported.resetBytes(in: exported.startIndex..<exported.endIndex)
                wipe(&der)
            }
            return try rsa(pkcs1: der, comment: comment)
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

    /// An ECDSA P-256 key from its scalar (32 bytes, big-endian, in guarded memory).
    static func ecdsa(scalar: SecureBytes, comment: String) throws(SSHError) -> SSHPrivateKey {
        let key: P256.Signing.PrivateKey
        do { key = try scalar.withUnsafeBytes { try P256.Signing.PrivateKey(rawRepresentation: $0) } } catch {
            throw .malformed(field: "ECDSA private key", reason: "not a P-256 scalar")
        }
        var blob = SSHWriter()
        blob.string("ecdsa-sha2-nistp256")
        blob.string("nistp256")
        blob.string(Array(key.publicKey.x963Representation))
        return SSHPrivateKey(material: .ecdsaP256(scalar), publicKey: try SSHPublicKey(blob: blob.bytes), comment: comment)
    }

    /// An ECDSA P-256 key swift-crypto made or read (generation, PEM): its scalar moved to guarded memory, the
    /// `Data` it came in zeroed.
    static func ecdsa(_ key: P256.Signing.PrivateKey, comment: String) throws(SSHError) -> SSHPrivateKey {
        var raw = key.rawRepresentation
        defer { raw.resetBytes(in: raw.startIndex..<raw.endIndex) }
        let scalar = raw.withUnsafeBytes { SecureBytes.guarded($0) }
        return try ecdsa(scalar: scalar, comment: comment)
    }

    /// swift-crypto's ECDSA key for one signature, built from the guarded scalar.
    private static func p256Key(_ scalar: SecureBytes) throws(SSHError) -> P256.Signing.PrivateKey {
        do { return try scalar.withUnsafeBytes { try P256.Signing.PrivateKey(rawRepresentation: $0) } } catch { throw .crypto("\(error)") }
    }

    /// swift-crypto's RSA key for one signature (or a check), built from the guarded numbers.
    private static func rsaKey(n: [UInt8], e: [UInt8], d: SecureBytes, p: SecureBytes, q: SecureBytes) throws -> _RSA.Signing.PrivateKey {
        try d.withUnsafeBytes { d in try p.withUnsafeBytes { p in try q.withUnsafeBytes { q in
            try _RSA.Signing.PrivateKey(n: n, e: e, d: d, p: p, q: q)
        } } }
    }

    /// An RSA key from its numbers (big-endian, unsigned): checked by building swift-crypto's key once.
    static func rsa(n: [UInt8], e: [UInt8], d: SecureBytes, iqmp: SecureBytes, p: SecureBytes, q: SecureBytes, comment: String) throws(SSHError) -> SSHPrivateKey {
        do {
            _ = try rsaKey(n: n, e: e, d: d, p: p, q: q)
        } catch {
            throw .crypto("not a consistent RSA key of 2048 bits or more")
        }
        var blob = SSHWriter()
        blob.string("ssh-rsa")
        blob.mpint(e)
        blob.mpint(n)
        return SSHPrivateKey(
            material: .rsa(n: n, e: e, d: d, iqmp: iqmp, p: p, q: q), publicKey: try SSHPublicKey(blob: blob.bytes), comment: comment)
    }

    /// An RSA key from PKCS#1's RSAPrivateKey (DER); the secret numbers parsed out of it are zeroed once copied.
    static func rsa(pkcs1 der: [UInt8], comment: String) throws(SSHError) -> SSHPrivateKey {
        var numbers = try DER.rsaPrivateKey(der)
        defer { wipe(&numbers.d); wipe(&numbers.p); wipe(&numbers.q); wipe(&numbers.iqmp) }
        func secure(_ bytes: [UInt8]) -> SecureBytes { bytes.withUnsafeBytes { SecureBytes.guarded($0) } }
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
        case .ecdsaP256(let scalar):
            let signature: P256.Signing.ECDSASignature
            do { signature = try Self.p256Key(scalar).signature(for: data) } catch { throw .crypto("\(error)") }
            let raw = Array(signature.rawRepresentation)
            var inner = SSHWriter()
            inner.mpint(raw[0..<32])
            inner.mpint(raw[32..<64])
            out.string("ecdsa-sha2-nistp256")
            out.string(inner.bytes)
        case .rsa(let n, let e, let d, _, let p, let q):
            let raw: Data
            do {
                guard flags & (Self.flagRSASHA512 | Self.flagRSASHA256) != 0 else {
                    throw SSHError.unsupportedKeyType("ssh-rsa (SHA-1) signatures")
                }
                let key = try Self.rsaKey(n: n, e: e, d: d, p: p, q: q)
                if flags & Self.flagRSASHA512 != 0 {
                    raw = try key.signature(for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
                    out.string("rsa-sha2-512")
                } else {
                    raw = try key.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
                    out.string("rsa-sha2-256")
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

    /// The key-type fields of openssh-key-v1's private section (type first, comment not included), written straight
    /// into guarded memory.
    func privateFields() -> SecureBytes {
        switch material {
        case .ed25519(let secret):
            let publicKey = Array(publicKey.blob.suffix(32))
            return SecureBytes(capacity: 3 * sshFieldSize(64) + 11) { out in
                out.appendSSH(string: "ssh-ed25519")
                out.appendSSH(string: publicKey)
                secret.withUnsafeBytes { out.appendSSH(string: $0) }
            }
        case .ecdsaP256(let scalar):
            let point = Array(publicKey.blob.suffix(65))
            return SecureBytes(capacity: 4 * sshFieldSize(65) + 19) { out in
                out.appendSSH(string: "ecdsa-sha2-nistp256")
                out.appendSSH(string: "nistp256")
                out.appendSSH(string: point)
                out.appendSSH(mpint: scalar)
            }
        case .rsa(let n, let e, let d, let iqmp, let p, let q):
            let size = [n.count, e.count, d.count, iqmp.count, p.count, q.count].reduce(sshFieldSize(7)) { $0 + sshFieldSize($1) }
            return SecureBytes(capacity: size) { out in
                out.appendSSH(string: "ssh-rsa")
                n.withUnsafeBytes { out.appendSSH(mpint: $0) }
                e.withUnsafeBytes { out.appendSSH(mpint: $0) }
                for number in [d, iqmp, p, q] { out.appendSSH(mpint: number) }
            }
        }
    }
}

/// Zeroes `bytes` in place (a copy of a secret this library made in ordinary memory, before it is dropped).
func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
        guard let base = buffer.baseAddress else { return }
        Sodium.zero(base, byteCount: buffer.count)
    }
}
