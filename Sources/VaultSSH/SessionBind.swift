/// `session-bind@openssh.com` (OpenSSH's PROTOCOL.agent §1): the client tells its agent which host it is
/// authenticating to: the server's host key, the session id, the server's signature over the session id, and
/// whether the agent connection is being forwarded to that host. Verified as OpenSSH's agent does.
public struct SessionBind: Sendable, Equatable {
    public static let name = "session-bind@openssh.com"

    /// The key the server signed with: its host key, or the key its host certificate certifies.
    public let hostKey: SSHPublicKey
    /// The host certificate the server presented, when it presented one (what names the host then).
    public let certificate: HostCertificate?
    public let sessionID: [UInt8]
    /// The connection is forwarded to this host (`ssh -A`): requests on it come from there.
    public let forwarded: Bool

    /// Why a bind is refused.
    public enum Refusal: Error, Equatable, Sendable {
        case malformed(SSHError)
        case badSignature
        case duplicateSession
        case tooMany
        /// A bind after one for authentication (not forwarded): OpenSSH's agent refuses it too.
        case afterAuthentication
    }

    /// The bind in an extension request's contents (after its name), its signature checked.
    public static func parse(_ reader: inout SSHReader) throws(Refusal) -> SessionBind {
        let bind: SessionBind, signature: [UInt8]
        do {
            let hostBlob = try reader.string("host key")
            let certificate = try HostCertificate(blob: hostBlob)
            let hostKey = try certificate?.certifiedKey ?? SSHPublicKey(blob: hostBlob)
            let sessionID = try reader.string("session id")
            signature = try reader.string("signature")
            let forwarded = try reader.bool("forwarding flag")
            try reader.requireEnd("session bind")
            guard !sessionID.isEmpty, sessionID.count <= 128 else {
                throw SSHError.malformed(field: "session id", reason: "\(sessionID.count) bytes")
            }
            bind = SessionBind(hostKey: hostKey, certificate: certificate, sessionID: sessionID, forwarded: forwarded)
        } catch let error as SSHError {
            throw .malformed(error)
        } catch {
            throw .malformed(.notAPrivateKey)
        }
        do { try bind.hostKey.verify(signature: signature, data: bind.sessionID) } catch { throw .badSignature }
        return bind
    }
}

extension SessionBind.Refusal: CustomStringConvertible {
    public var description: String {
        switch self {
        case .malformed(let error): return "malformed: \(error)"
        case .badSignature: return "the host key's signature over the session id does not verify"
        case .duplicateSession: return "the session id is already bound on this connection"
        case .tooMany: return "too many binds on one connection"
        case .afterAuthentication: return "the connection is already bound for an authentication"
        }
    }
}

/// A publickey user-authentication request as ssh asks an agent to sign it (RFC 4252 §7): its session id and the
/// key it names; `nil` for other data (an SSHSIG, anything else).
public struct UserAuthRequest: Sendable, Equatable {
    public let sessionID: [UInt8]
    public let keyBlob: [UInt8]

    public init?(signedData data: [UInt8]) {
        var reader = SSHReader(data)
        guard let sessionID = try? reader.string("session id"), (try? reader.byte("message")) == 50,
              (try? reader.string("user")) != nil, (try? reader.string("service")) != nil,
              (try? reader.text("method")) == "publickey", (try? reader.bool("has signature")) == true,
              (try? reader.string("algorithm")) != nil, let keyBlob = try? reader.string("key"), reader.isAtEnd
        else { return nil }
        self.sessionID = sessionID
        self.keyBlob = keyBlob
    }
}

/// SSHSIG (OpenSSH's PROTOCOL.sshsig): what `ssh-keygen -Y sign` asks an agent to sign starts with the magic
/// `SSHSIG`, then the namespace (`git`, `file`, …).
public enum SSHSig {
    static let magic = Array("SSHSIG".utf8)

    /// The namespace of signed data that is an SSHSIG's, else `nil`.
    public static func namespace(ofSignedData data: [UInt8]) -> String? {
        guard data.starts(with: magic) else { return nil }
        var reader = SSHReader(data, offset: magic.count)
        guard let namespace = try? reader.text("namespace"), (try? reader.string("reserved")) != nil,
              let hash = try? reader.text("hash algorithm"), hash == "sha256" || hash == "sha512",
              (try? reader.string("message hash")) != nil, reader.isAtEnd
        else { return nil }
        return namespace
    }
}
