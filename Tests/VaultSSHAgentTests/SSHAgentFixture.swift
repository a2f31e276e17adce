import Foundation
import Synchronization
import Testing
import VaultAgent
import VaultCore
import VaultSSH
@testable import VaultSSHAgent

/// A key ring holding one version-2 vault with ssh keys, the ssh-agent service over it, and requests built as
/// OpenSSH's client builds them.
final class SSHAgentFixture {
    let directory: String
    let ring: KeyRing
    let clock = StillClock()
    let logged = Logged()
    /// The known_hosts files' contents the service reads.
    var knownHostsTexts: [String] {
        get { texts.lines.withLock { $0 } }
        set { texts.lines.withLock { $0 = newValue } }
    }
    private let texts = Logged()
    private(set) var service: SSHAgentService!
    private(set) var vault: any KeyValueVault
    private let options: SecureKeyValueStore.Options
    var vaultPath: String { directory + "/ssh.vault" }

    /// A clock that stands still until a test moves it (idle timeouts without waiting).
    final class StillClock: AgentClock {
        private let seconds = Mutex<Double>(1_000)
        var now: Double { seconds.withLock { $0 } }
        func advance(by interval: Double) { seconds.withLock { $0 += interval } }
    }

    final class Logged: Sendable {
        let lines = Mutex<[String]>([])
    }

    init(askpass: String? = nil) throws {
        directory = NSTemporaryDirectory() + "vault-ssh-agent-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var options = SecureKeyValueStore.Options.insecureForTesting
        options.rollbackProtection = RollbackProtection(stateDirectory: directory + "/state")
        _ = try VaultOpener.create(path: directory + "/ssh.vault", passphrase: SecureBytes(string: "pass"), options: options)
        vault = try VaultOpener.open(path: directory + "/ssh.vault", passphrase: SecureBytes(string: "pass"), options: options)
        self.options = options
        ring = KeyRing(clock: clock)
        let logged = self.logged, texts = self.texts
        service = SSHAgentService(
            ring: ring, knownHosts: { bind in KnownHosts(hostKey: bind.hostKey, certificate: bind.certificate, texts: texts.lines.withLock { $0 }) }, askpass: askpass,
            log: { line in logged.lines.withLock { $0.append(line) } })
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// Holds the vault in the ring (as after `vault unlock`), opened again (a lock closes the store it held).
    func unlock() throws {
        vault = try VaultOpener.open(path: vaultPath, passphrase: SecureBytes(string: "pass"), options: options)
        ring.hold(vault, at: vaultPath, idleSeconds: 3600, maxSeconds: 3600)
    }

    /// Stores `key` as entry `name` with the optional fields, as `vault ssh import` does.
    func add(_ name: String, _ key: SSHPrivateKey, hosts: String? = nil, forward: Bool = false, confirm: Bool = false) throws {
        func bytes(_ text: String) -> SecureBytes { SecureBytes(string: text) }
        var changes: [DocumentChange] = [
            .setField(entry: name, field: SSHEntry.privateKeyField, value: OpenSSHKeyFile.write(key), secret: true),
            .setField(entry: name, field: SSHEntry.publicKeyField, value: bytes(key.publicKey.line(comment: key.comment)), secret: false),
            .setField(entry: name, field: SSHEntry.commentField, value: bytes(key.comment), secret: false),
        ]
        if let hosts { changes.append(.setField(entry: name, field: SSHEntry.hostsField, value: bytes(hosts), secret: false)) }
        if forward { changes.append(.setField(entry: name, field: SSHEntry.forwardField, value: bytes("yes"), secret: false)) }
        if confirm { changes.append(.setField(entry: name, field: SSHEntry.confirmField, value: bytes("yes"), secret: false)) }
        try vault.apply(changes)
    }

    func answer(_ body: [UInt8], on connection: SSHAgentService.Connection) -> [UInt8] {
        let (reply, ends) = service.answer(body, on: connection)
        #expect(!ends)
        return reply
    }

    /// The identities answer's keys (blob, comment), or nil when the answer is not one.
    func identities(on connection: SSHAgentService.Connection) throws -> [(blob: [UInt8], comment: String)] {
        var reader = SSHReader(answer([SSHAgentWire.requestIdentities], on: connection))
        try #require(try reader.byte("type") == SSHAgentWire.identitiesAnswer)
        let count = try reader.uint32("count")
        let keys = try (0..<count).map { _ in (try reader.string("blob"), try reader.text("comment")) }
        try reader.requireEnd("answer")
        return keys
    }

    /// A sign request's answer: the signature blob, or nil for a failure.
    func sign(_ key: SSHPublicKey, _ data: [UInt8], flags: UInt32 = 0, on connection: SSHAgentService.Connection) throws -> [UInt8]? {
        var request = SSHWriter()
        request.byte(SSHAgentWire.signRequest)
        request.string(key.blob)
        request.string(data)
        request.uint32(flags)
        var reader = SSHReader(answer(request.bytes, on: connection))
        let type = try reader.byte("type")
        if type == SSHAgentWire.failure { return nil }
        try #require(type == SSHAgentWire.signResponse)
        return try reader.string("signature")
    }

    /// A session-bind request for `hostKey`'s host (or the host key blob `presented`: a certificate of it), its
    /// signature by `hostKey` over `sessionID` (or `signature`; RSA with `flags`).
    static func bind(
        _ hostKey: SSHPrivateKey, presenting presented: [UInt8]? = nil, sessionID: [UInt8], forwarded: Bool, signature: [UInt8]? = nil,
        flags: UInt32 = 0
    ) throws -> [UInt8] {
        var request = SSHWriter()
        request.byte(SSHAgentWire.extensionRequest)
        request.string(SessionBind.name)
        request.string(presented ?? hostKey.publicKey.blob)
        request.string(sessionID)
        request.string(try signature ?? hostKey.sign(sessionID, flags: flags))
        request.bool(forwarded)
        return request.bytes
    }
}
