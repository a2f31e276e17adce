/// OpenSSH host certificates (PROTOCOL.certkeys) as a session-bind names them: when the server presents a
/// certificate, the client binds the certificate blob (`ssh-ed25519-cert-v01@openssh.com` …) and the server's
/// signature over the session id is made by the certified key. As OpenSSH's agent does, the bind is checked with
/// that key; the CA's signature is the client's to check (it already has, against its `@cert-authority` lines), and
/// the host is then known by the certified key (known_hosts lines of the plain key name it).
extension SSHPublicKey {
    /// The certificate types a host may present, and the plain key type each certifies.
    static let certifiedTypes = [
        "ssh-ed25519-cert-v01@openssh.com": "ssh-ed25519",
        "ecdsa-sha2-nistp256-cert-v01@openssh.com": "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384-cert-v01@openssh.com": "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521-cert-v01@openssh.com": "ecdsa-sha2-nistp521",
        "ssh-rsa-cert-v01@openssh.com": "ssh-rsa",
    ]

    /// The host key a session-bind names: `blob` itself, or, for a host certificate, the key it certifies (its
    /// fields after the nonce, as a plain key's blob). The rest of the certificate must be whole; none of it is used.
    public init(hostKeyBlob blob: [UInt8]) throws(SSHError) {
        var reader = SSHReader(blob)
        let type = try reader.text("key type")
        guard let plain = Self.certifiedTypes[type] else {
            try self.init(blob: blob)
            return
        }
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
        // The rest of its structure, as OpenSSH's parser requires it whole (nothing of it is used here).
        _ = try reader.raw(8, "certificate serial")
        _ = try reader.uint32("certificate type")
        for field in ["key id", "principals"] { _ = try reader.string("certificate " + field) }
        _ = try reader.raw(16, "certificate validity")
        for field in ["critical options", "extensions", "reserved", "signature key", "signature"] {
            _ = try reader.string("certificate " + field)
        }
        try reader.requireEnd("certificate")
        try self.init(blob: key.bytes)
    }
}
