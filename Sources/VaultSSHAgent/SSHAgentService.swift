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
    private let knownHosts: @Sendable (SSHPublicKey) -> KnownHosts
    package let signatures: SignatureLog

    /// What a connection has bound (session-bind@openssh.com), in order.
    package final class Connection: Sendable {
        let binds = Mutex<[SessionBind]>([])
    }

    /// The most binds one connection may make (OpenSSH's agent allows as many).
    package static let maxBinds = 16

    package init(
        ring: KeyRing, knownHosts: @escaping @Sendable (SSHPublicKey) -> KnownHosts, signatures: SignatureLog = SignatureLog(),
        log: @escaping @Sendable (String) -> Void
    ) {
        self.ring = ring
        self.knownHosts = knownHosts
        self.signatures = signatures
        self.log = log
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

    /// The ssh keys of every vault held, vaults by path, entries by name (`vault ssh list`'s order).
    func allKeys() -> [SSHEntry] {
        ring.documentVaults().flatMap { vault -> [SSHEntry] in
            try? vault.reload()
            guard let names = try? vault.keys().sorted() else { return [] }
            return names.compactMap { (try? vault.record(of: $0)).flatMap { $0 }.flatMap(SSHEntry.init) }
        }
    }

    /// The keys `connection` may use, in the order they are offered.
    func offered(_ connection: Connection) -> [SSHEntry] {
        KeyChoice.offered(allKeys(), binds: connection.binds.withLock { $0 }, knownHosts: knownHosts)
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
        let binds = connection.binds.withLock { $0 }
        guard let entry = offered(connection).first(where: { $0.publicKey.blob == blob }) else {
            log("ssh-agent: refused a signature with a key not offered on this connection")
            return [SSHAgentWire.failure]
        }
        if entry.confirm, !Confirmation.ask(key: entry, host: binds.last.map { KeyChoice.hostLabel($0, knownHosts($0.hostKey)) }) {
            log("ssh-agent: '\(entry.name)': the signature was not confirmed")
            return [SSHAgentWire.failure]
        }
        let signature: [UInt8]
        do {
            signature = try entry.privateKey().sign(data, flags: flags)
        } catch {
            log("ssh-agent: '\(entry.name)': \(error)")
            return [SSHAgentWire.failure]
        }
        // Using a key is using its vault: the idle timeout starts again.
        for vault in ring.documentVaults() { _ = ring.vault(at: vault.path, touch: true) }
        let record = SignatureLog.Record(
            time: UTCTime.now(), key: entry.name, fingerprint: entry.publicKey.fingerprint,
            host: binds.last.map { KeyChoice.hostLabel($0, knownHosts($0.hostKey)) }, forwarded: binds.contains(where: \.forwarded),
            namespace: SSHSig.namespace(ofSignedData: data))
        signatures.append(record)
        log("ssh-agent: " + record.line)
        var answer = SSHWriter()
        answer.byte(SSHAgentWire.signResponse)
        answer.string(signature)
        return answer.bytes
    }

    // MARK: Extensions

    package static let extensions = ["query", SessionBind.name]

    private func extensionAnswer(_ reader: inout SSHReader, _ connection: Connection) -> [UInt8] {
        guard let name = try? reader.text("extension name") else { return [SSHAgentWire.failure] }
        switch name {
        case "query":
            var answer = SSHWriter()
            answer.byte(SSHAgentWire.extensionResponse)
            answer.string("query")
            for name in Self.extensions { answer.string(name) }
            return answer.bytes
        case SessionBind.name:
            do {
                let bind = try SessionBind.parse(&reader)
                try connection.binds.withLock { binds throws(SessionBind.Refusal) in
                    guard binds.count < Self.maxBinds else { throw .tooMany }
                    guard !binds.contains(where: { $0.sessionID == bind.sessionID }) else { throw .duplicateSession }
                    binds.append(bind)
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
