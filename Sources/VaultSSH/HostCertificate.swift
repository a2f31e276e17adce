/// An OpenSSH certificate (PROTOCOL.certkeys) as a session-bind carries it when the server presents a host
/// certificate: ssh binds the certificate blob (`ssh-ed25519-cert-v01@openssh.com` …) and the server's signature
/// over the session id is made by the certified key. As OpenSSH's agent does, the bind is checked with that key.
/// Which host it is comes from the certificate (docs/SSH-AGENT.md, "How keys are chosen"): its principals, when it
/// is a host certificate inside its validity window, signed by a CA the user's known_hosts trusts for them
/// (`@cert-authority`); its CA signature is checked here, as nothing else in the agent has checked it.
public struct HostCertificate: Sendable, Equatable {
    /// The certificate types a host may present, and the plain key type each certifies.
    static let certifiedTypes = [
        "ssh-ed25519-cert-v01@openssh.com": "ssh-ed25519",
        "ecdsa-sha2-nistp256-cert-v01@openssh.com": "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384-cert-v01@openssh.com": "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521-cert-v01@openssh.com": "ecdsa-sha2-nistp521",
        "ssh-rsa-cert-v01@openssh.com": "ssh-rsa",
    ]

    /// PROTOCOL.certkeys' `type`: SSH2_CERT_TYPE_USER and SSH2_CERT_TYPE_HOST.
    public static let userType: UInt32 = 1
    public static let hostType: UInt32 = 2

    /// The key it certifies.
    public let certifiedKey: SSHPublicKey
    public let type: UInt32
    /// The names it is valid for (host names, for a host certificate).
    public let principals: [String]
    /// Seconds since the epoch: valid from `validAfter` on, up to (not including) `validBefore`.
    public let validAfter: UInt64
    public let validBefore: UInt64
    /// The blob of the CA's key that signed it (compared with `@cert-authority` and `@revoked` lines' keys).
    public let signatureKey: [UInt8]
    /// Whether the CA's signature over the certificate verifies under ``signatureKey``.
    public let isSignedBySignatureKey: Bool

    /// The certificate `blob` is, or `nil` when it is a plain key's blob (any other type). A certificate type must
    /// be whole and well formed (as OpenSSH's parser requires), its principals UTF-8.
    public init?(blob: [UInt8]) throws(SSHError) {
        var reader = SSHReader(blob)
        let type = try reader.text("key type")
        guard let plain = Self.certifiedTypes[type] else { return nil }
        _ = try reader.string("certificate nonce")
        var key = SSHWriter()
        key.string(plain)
        switch plain {
        case "ssh-ed25519":
            key.string(try reader.string("Ed25519 public key"))
        case "ssh-rsa":
            let e = try reader.positiveMPInt("RSA exponent"), n = try reader.positiveMPInt("RSA modulus")
            key.mpint(e)
            key.mpint(n)
        default:
            key.string(try reader.string("ECDSA curve"))
            key.string(try reader.string("ECDSA point"))
        }
        _ = try reader.raw(8, "certificate serial")
        self.type = try reader.uint32("certificate type")
        _ = try reader.string("certificate key id")
        var names = SSHReader(try reader.string("certificate principals"))
        var principals: [String] = []
        while !names.isAtEnd { principals.append(try names.text("certificate principal")) }
        self.principals = principals
        func uint64(_ field: String) throws(SSHError) -> UInt64 {
            try reader.raw(8, field).reduce(0) { $0 << 8 | UInt64($1) }
        }
        validAfter = try uint64("certificate valid after")
        validBefore = try uint64("certificate valid before")
        for field in ["critical options", "extensions", "reserved"] { _ = try reader.string("certificate " + field) }
        signatureKey = try reader.string("certificate signature key")
        let signed = Array(blob[..<reader.offset])
        let signature = try reader.string("certificate signature")
        try reader.requireEnd("certificate")
        certifiedKey = try SSHPublicKey(blob: key.bytes)
        // A CA key of a type this library does not read signs nothing it can trust.
        isSignedBySignatureKey = (try? SSHPublicKey(blob: signatureKey).verify(signature: signature, data: signed)) != nil
    }

    /// Whether it vouches for a host at `now` (seconds since the epoch): a host certificate, inside its validity
    /// window, whose CA signature verifies.
    public func isValidHostCertificate(at now: UInt64) -> Bool {
        type == Self.hostType && validAfter <= now && now < validBefore && isSignedBySignatureKey
    }
}

extension SSHPublicKey {
    /// The host key a session-bind names: `blob` itself, or, for a host certificate, the key it certifies.
    public init(hostKeyBlob blob: [UInt8]) throws(SSHError) {
        if let certificate = try HostCertificate(blob: blob) {
            self = certificate.certifiedKey
        } else {
            try self.init(blob: blob)
        }
    }
}
