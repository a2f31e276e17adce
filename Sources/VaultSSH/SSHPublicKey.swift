import Crypto
import _CryptoExtras
import FoundationEssentials
import VaultSodium

/// A public key in SSH's encoding (its "blob", RFC 4253 §6.6): what authorized_keys, known_hosts and the agent
/// protocol carry. Ed25519, ECDSA over P-256, P-384 and P-521, and RSA are read; anything else is
/// ``SSHError/unsupportedKeyType(_:)``.
public struct SSHPublicKey: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case ed25519
        case ecdsa(curve: String)
        case rsa
    }

    public let blob: [UInt8]
    public let type: String
    public let kind: Kind
    /// The key's size as `ssh-keygen -l` prints it.
    public let bits: Int

    public init(blob: [UInt8]) throws(SSHError) {
        var reader = SSHReader(blob)
        let type = try reader.text("key type")
        switch type {
        case "ssh-ed25519":
            let key = try reader.string("Ed25519 public key")
            guard key.count == 32 else { throw .malformed(field: "Ed25519 public key", reason: "\(key.count) bytes, not 32") }
            kind = .ed25519
            bits = 256
        case "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521":
            let curve = try reader.text("ECDSA curve")
            guard "ecdsa-sha2-" + curve == type else { throw .malformed(field: "ECDSA curve", reason: "not the key type's") }
            let point = try reader.string("ECDSA point")
            do {
                switch curve {
                case "nistp256": _ = try P256.Signing.PublicKey(x963Representation: point); bits = 256
                case "nistp384": _ = try P384.Signing.PublicKey(x963Representation: point); bits = 384
                default: _ = try P521.Signing.PublicKey(x963Representation: point); bits = 521
                }
            } catch {
                throw .malformed(field: "ECDSA point", reason: "not a point of the curve")
            }
            kind = .ecdsa(curve: curve)
        case "ssh-rsa":
            let e = try reader.positiveMPInt("RSA exponent")
            let n = try reader.positiveMPInt("RSA modulus")
            guard let top = n.first, !e.isEmpty else { throw .malformed(field: "RSA key", reason: "zero") }
            bits = n.count * 8 - top.leadingZeroBitCount
            guard bits >= 1024, bits <= 16384 else { throw .malformed(field: "RSA modulus", reason: "\(bits) bits") }
            kind = .rsa
        default:
            throw .unsupportedKeyType(type)
        }
        try reader.requireEnd("public key")
        self.blob = blob
        self.type = type
    }

    /// The key of an authorized_keys (or `.pub`) line: `TYPE BASE64 [COMMENT]`; the comment is returned beside it.
    public init(line: String) throws(SSHError) {
        let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard parts.count >= 2, let blob = Base64.decode(parts[1]) else {
            throw .malformed(field: "public key line", reason: "not TYPE BASE64 [COMMENT]")
        }
        try self.init(blob: blob)
        guard parts[0] == type else { throw .malformed(field: "public key line", reason: "its type is not the key's") }
    }

    /// `SHA256:` and the unpadded base64 of the blob's SHA-256, as `ssh-keygen -l` prints it.
    public var fingerprint: String {
        "SHA256:" + String(Base64.encode(Array(SHA256.hash(data: blob))).filter { $0 != "=" })
    }

    /// `ED25519`, `ECDSA` or `RSA`, as `ssh-keygen -l` ends its line.
    public var label: String {
        switch kind {
        case .ed25519: return "ED25519"
        case .ecdsa: return "ECDSA"
        case .rsa: return "RSA"
        }
    }

    /// `ssh-keygen -l`'s line: `256 SHA256:… comment (ED25519)` (`no comment` for an empty one).
    public func fingerprintLine(comment: String) -> String {
        "\(bits) \(fingerprint) \(comment.isEmpty ? "no comment" : comment) (\(label))"
    }

    /// The authorized_keys line: `TYPE BASE64` and the comment when there is one.
    public func line(comment: String) -> String {
        type + " " + Base64.encode(blob) + (comment.isEmpty ? "" : " " + comment)
    }

    /// Checks an SSH signature blob (`string type, string signature`) over `data`: Ed25519, ECDSA with the curve's
    /// hash, RSA with `rsa-sha2-256` or `rsa-sha2-512` (SHA-1's `ssh-rsa` is refused).
    public func verify(signature: [UInt8], data: [UInt8]) throws(SSHError) {
        var reader = SSHReader(signature)
        let algorithm = try reader.text("signature type")
        let raw = try reader.string("signature")
        try reader.requireEnd("signature")
        var fields = SSHReader(blob)
        _ = try fields.string("key type")
        let valid: Bool
        switch kind {
        case .ed25519:
            guard algorithm == type else { throw .badSignature }
            let key = try fields.string("Ed25519 public key")
            valid = raw.withUnsafeBytes { s in data.withUnsafeBytes { m in key.withUnsafeBytes { Sodium.ed25519Verify(s, message: m, publicKey: $0) } } }
        case .ecdsa(let curve):
            guard algorithm == type else { throw .badSignature }
            _ = try fields.string("ECDSA curve")
            let point = try fields.string("ECDSA point")
            var parts = SSHReader(raw)
            let r = try parts.positiveMPInt("ECDSA r"), s = try parts.positiveMPInt("ECDSA s")
            try parts.requireEnd("ECDSA signature")
            valid = Self.verifyECDSA(curve: curve, point: point, r: r, s: s, data: data)
        case .rsa:
            guard algorithm == "rsa-sha2-256" || algorithm == "rsa-sha2-512" else { throw .badSignature }
            let e = try fields.positiveMPInt("RSA exponent"), n = try fields.positiveMPInt("RSA modulus")
            guard let key = try? _RSA.Signing.PublicKey(n: n, e: e) else { throw .crypto("RSA public key") }
            let signature = _RSA.Signing.RSASignature(rawRepresentation: raw)
            valid = algorithm == "rsa-sha2-256"
                ? key.isValidSignature(signature, for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
                : key.isValidSignature(signature, for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5)
        }
        guard valid else { throw .badSignature }
    }

    private static func verifyECDSA(curve: String, point: [UInt8], r: [UInt8], s: [UInt8], data: [UInt8]) -> Bool {
        func padded(_ value: [UInt8], _ size: Int) -> [UInt8]? {
            value.count <= size ? [UInt8](repeating: 0, count: size - value.count) + value : nil
        }
        switch curve {
        case "nistp256":
            guard let r = padded(r, 32), let s = padded(s, 32), let key = try? P256.Signing.PublicKey(x963Representation: point),
                  let signature = try? P256.Signing.ECDSASignature(rawRepresentation: r + s) else { return false }
            return key.isValidSignature(signature, for: SHA256.hash(data: data))
        case "nistp384":
            guard let r = padded(r, 48), let s = padded(s, 48), let key = try? P384.Signing.PublicKey(x963Representation: point),
                  let signature = try? P384.Signing.ECDSASignature(rawRepresentation: r + s) else { return false }
            return key.isValidSignature(signature, for: SHA384.hash(data: data))
        default:
            guard let r = padded(r, 66), let s = padded(s, 66), let key = try? P521.Signing.PublicKey(x963Representation: point),
                  let signature = try? P521.Signing.ECDSASignature(rawRepresentation: r + s) else { return false }
            return key.isValidSignature(signature, for: SHA512.hash(data: data))
        }
    }
}

/// Standard base64 (RFC 4648 §4), padded, as OpenSSH writes keys.
public enum Base64 {
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
    }

    /// The bytes of `text`, or `nil` when it is not base64 (whitespace and newlines are skipped).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let compact = String(text.filter { !$0.isWhitespace })
        var padded = compact
        while padded.utf8.count % 4 != 0 { padded += "=" }
        return Data(base64Encoded: padded).map(Array.init)
    }
}
