import Synchronization
import VaultAgent
import VaultCore
import VaultSSH

/// The ssh-agent protocol over the agent's ``KeyRing``: the ssh keys (``SSHEntry``) of every vault unlocked in
/// the agent, nothing while all are locked (docs/SSH-AGENT.md).
///
/// - identities: the keys this connection may use, the bound host's first (``KeyChoice``); an empty list when
///   every vault is locked, never a failure.
/// - sign: with a key this connection may use; Ed25519, ECDSA P-256, RSA with the SHA-2 flags (SHA-1 refused).
/// - lock (`ssh-add -x`) locks every vault, as `vault lock --all`; unlock (`ssh-add -X`) fails: `vault unlock` opens.
/// - add and remove fail: keys come from the vault (`vault ssh import`).
/// - extensions: `query`, `session-bind@openssh.com` (verified: the host key's signature over the session id; a
///   session id bound twice is refused).
package struct SSHAgentService: AgentSocketProtocol {
    package let ring: KeyRing
    private let log: @Sendable (String) -> Void
    private let knownHosts: @Sendable (SessionBind) -> KnownHosts
    package let signatures: SignatureLog
    /// The private keys parsed since their vault's unlock (dropped at its lock).
    package let keys: SSHKeyCache
    /// The program a key's `confirm` asks through (the agent's `SSH_ASKPASS`); `nil`: such keys never sign.
    private let askpass: String?

    /// What a connection has bound (session-bind@openssh.com), in order, and whether a bind on it was refused.
    package final class Connection: Sendable {
        struct Binds {
            var binds: [SessionBind] = []
            /// Set before a bind is parsed, never cleared: a bind was tried on this connection.
            var attempted = false
            /// A bind was tried and none succeeded (OpenSSH's "previous session bind failed on socket").
            var failed: Bool { attempted && binds.isEmpty }
            var forwarded: Bool { failed || binds.contains(where: \.forwarded) }
        }
        let state = Mutex(Binds())
    }

    /// The most binds one connection may make (OpenSSH's agent allows as many).
    package static let maxBinds = 16

    package init(
        ring: KeyRing, knownHosts: @escaping @Sendable (SessionBind) -> KnownHosts, signatures: SignatureLog = SignatureLog(),
        askpass: String? = nil, log: @escaping @Sendable (String) -> Void
    ) {
        self.askpass = askpass
        self.ring = ring
        self.knownHosts = knownHosts
        self.signatures = signatures
        self.log = log
        let keys = SSHKeyCache()
        self.keys = keys
        ring.onRelease { path in keys.drop(vault: path) }
    }

    /// A companion socket's end only stops it: the vault's socket is the one whose end locks.
    package var locksRingAtEnd: Bool { false }

    package func connection(_ fd: Int32) -> Connection { Connection() }

    package func receive(on fd: Int32, budget: AgentWire.FrameBudget) throws -> [UInt8]? {
        try SSHAgentWire.receive(on: fd, budget: budget)
    }

    package func send(_ reply: [UInt8], on fd: Int32) throws {
        try SSHAgentWire.send(reply, on: fd)
    }

    package func answer(_ request: [UInt8], on connection: Connection) -> (reply: [UInt8], endsConnection: Bool) {
        var reader = SSHReader(request)
        guard let type = try? reader.byte("message type") else { return ([SSHAgentWire.failure], true) }
        switch type {
        case SSHAgentWire.requestIdentities:
            return (identities(connection), false)
        case SSHAgentWire.signRequest:
            return (sign(&reader, connection), false)
        case SSHAgentWire.lock:
            // From a forwarded connection, the remote host would lock this machine's vaults: refused.
            guard !connection.state.withLock({ $0.forwarded }) else { return ([SSHAgentWire.failure], false) }
            let count = ring.lockAll()
            log("ssh-agent: locked every vault (\(count)) at the ssh-agent's lock request")
            return ([SSHAgentWire.success], false)
        case SSHAgentWire.unlock:
            return ([SSHAgentWire.failure], false)
        case SSHAgentWire.extensionRequest:
            return (extensionAnswer(&reader, connection), false)
        default:
            // add, remove, smartcard and anything unknown: the keys come from the vault.
            return ([SSHAgentWire.failure], false)
        }
    }

    // MARK: Keys

    /// The ssh keys of every vault held, vaults by path, entries by name (`vault ssh list`'s order), each with the
    /// path of its vault.
    func allKeys() -> [SSHEntry] {
        let entries = ring.documentVaults().flatMap { vault -> [SSHEntry] in
            try? vault.reload()
            guard let names = try? vault.keys().sorted() else { return [] }
            return names.compactMap { name in
                guard var entry = (try? vault.record(of: name)).flatMap({ $0 }).flatMap(SSHEntry.init) else { return nil }
                entry.vaultPath = vault.path
                return entry
            }
        }
        keys.retain(entries)
        return entries
    }

    /// The keys `connection` may use, in the order they are offered.
    func offered(_ connection: Connection) -> [SSHEntry] {
        let state = connection.state.withLock { $0 }
        return KeyChoice.offered(allKeys(), binds: state.binds, bindFailed: state.failed, knownHosts: knownHosts)
    }

    private func identities(_ connection: Connection) -> [UInt8] {
        let keys = offered(connection)
        var answer = SSHWriter()
        answer.byte(SSHAgentWire.identitiesAnswer)
        answer.uint32(UInt32(keys.count))
        for key in keys {
            answer.string(key.publicKey.blob)
            answer.string(key.comment)
        }
        return answer.bytes
    }

    private func sign(_ reader: inout SSHReader, _ connection: Connection) -> [UInt8] {
        guard let blob = try? reader.string("key"), let data = try? reader.string("data"), let flags = try? reader.uint32("flags"),
              reader.isAtEnd
        else { return [SSHAgentWire.failure] }
        let binds = connection.state.withLock { $0 }
        // Taken before the vaults are looked up: a lock from here on keeps the key from being parsed and kept.
        let mark = keys.mark()
        // Every entry with this public key that the connection may use: one of them asking for confirmation asks.
        let matching = offered(connection).filter { $0.publicKey.blob == blob }
        guard let entry = matching.first else {
            log("ssh-agent: refused a signature with a key not offered on this connection")
            return [SSHAgentWire.failure]
        }
        // A user authentication on a bound connection must be for the session bound last, with the key it signs
        // with (as OpenSSH's agent checks): a request relayed from another session is refused.
        if let bound = binds.binds.last, let userauth = UserAuthRequest(signedData: data),
           userauth.sessionID != bound.sessionID || userauth.keyBlob != blob {
            log("ssh-agent: refused a user authentication for another session than the one bound")
            return [SSHAgentWire.failure]
        }
        if matching.contains(where: \.confirm) {
            let host = binds.binds.last.map { KeyChoice.hostLabel($0, knownHosts($0)) }
            guard Confirmation.ask(askpass, key: entry, host: host, forwarded: binds.forwarded) else {
                log("ssh-agent: \(entry.name.debugDescription): the signature was not confirmed")
                return [SSHAgentWire.failure]
            }
            // The vault may have been locked while the question waited (up to a minute): ask again what is offered.
            guard offered(connection).contains(where: { $0.publicKey.blob == blob }) else {
                log("ssh-agent: \(entry.name.debugDescription): its vault was locked while confirming")
                return [SSHAgentWire.failure]
            }
        }
        let signature: [UInt8]
        do {
            guard let key = try keys.key(for: entry, since: mark) else {
                log("ssh-agent: \(entry.name.debugDescription): its vault was locked during the request")
                return [SSHAgentWire.failure]
            }
            signature = try key.sign(data, flags: flags)
        } catch {
            log("ssh-agent: '\(entry.name)': \(error)")
            return [SSHAgentWire.failure]
        }
        // Using a key is using its vault (that one only): its idle timeout starts again.
        if let path = entry.vaultPath { _ = ring.vault(at: path, touch: true) }
        let record = SignatureLog.Record(
            time: UTCTime.now(), key: entry.name, fingerprint: entry.publicKey.fingerprint,
            host: binds.binds.last.map { KeyChoice.hostLabel($0, knownHosts($0)) }, forwarded: binds.forwarded,
            namespace: SSHSig.namespace(ofSignedData: data))
        signatures.append(record)
        log("ssh-agent: " + record.line)
        var answer = SSHWriter()
        answer.byte(SSHAgentWire.signResponse)
        answer.string(signature)
        return answer.bytes
    }

    // MARK: Extensions

    package static let extensions = ["query", SessionBind.name, SSHSignatures.extensionName]

    private func extensionAnswer(_ reader: inout SSHReader, _ connection: Connection) -> [UInt8] {
        guard let name = try? reader.text("extension name") else { return [SSHAgentWire.failure] }
        switch name {
        case "query":
            var answer = SSHWriter()
            answer.byte(SSHAgentWire.extensionResponse)
            answer.string("query")
            for name in Self.extensions { answer.string(name) }
            return answer.bytes
        case SSHSignatures.extensionName:
            // The last signatures, one line each (`vault agent status`): what the log says, no secret; never to a
            // connection that bound a session (a forwarded host would learn key names, hosts and namespaces).
            guard connection.state.withLock({ !$0.attempted && $0.binds.isEmpty }) else { return [SSHAgentWire.failure] }
            var answer = SSHWriter()
            answer.byte(SSHAgentWire.extensionResponse)
            answer.string(name)
            for record in signatures.last { answer.string(record.line) }
            return answer.bytes
        case SessionBind.name:
            do {
                // Marked before anything is parsed, as OpenSSH's agent does: a bind that fails leaves its mark.
                connection.state.withLock { $0.attempted = true }
                let bind = try SessionBind.parse(&reader)
                try connection.state.withLock { state throws(SessionBind.Refusal) in
                    guard state.binds.count < Self.maxBinds else { throw .tooMany }
                    guard !state.binds.contains(where: { $0.sessionID == bind.sessionID }) else { throw .duplicateSession }
                    // A connection bound for authentication (not forwarded) is that connection's for good.
                    guard !state.binds.contains(where: { !$0.forwarded }) else { throw .afterAuthentication }
                    state.binds.append(bind)
                }
                return [SSHAgentWire.success]
            } catch {
                log("ssh-agent: refused a session bind: \(error)")
                return [SSHAgentWire.extensionFailure]
            }
        default:
            return [SSHAgentWire.failure]
        }
    }
}
