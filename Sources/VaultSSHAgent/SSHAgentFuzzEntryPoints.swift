import Foundation
import VaultAgent
import VaultCore
import VaultSSH

/// Entry points for the libFuzzer targets in `Fuzz/` (not API: `@_spi(Fuzzing)`), as VaultAgent's.
@_spi(Fuzzing) public enum SSHAgentFuzzEntryPoints {
    /// A service over a key ring that holds one vault with an Ed25519 key (made once, in a temporary directory,
    /// with the test KDF), so that sign requests reach a key.
    static let service: SSHAgentService = {
        let directory = NSTemporaryDirectory() + "vault-fuzz-ssh-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var options = SecureKeyValueStore.Options.insecureForTesting
        options.rollbackProtection = RollbackProtection(stateDirectory: directory + "/state")
        let path = directory + "/fuzz.vault"
        unlink(path)
        let ring = KeyRing()
        do {
            _ = try VaultOpener.create(path: path, passphrase: SecureBytes(string: "fuzz"), options: options)
            let vault = try VaultOpener.open(path: path, passphrase: SecureBytes(string: "fuzz"), options: options)
            let key = try SSHPrivateKey.generate(.ed25519, comment: "fuzz")
            try vault.apply([
                .setField(entry: "fuzz", field: SSHEntry.privateKeyField, value: OpenSSHKeyFile.write(key), secret: true),
                .setField(entry: "fuzz", field: SSHEntry.publicKeyField, value: SecureBytes(string: key.publicKey.line(comment: "fuzz")), secret: false),
            ])
            ring.hold(vault, at: path, idleSeconds: 1e9, maxSeconds: 1e9)
        } catch {
            preconditionFailure("the fuzz vault could not be made: \(error)")
        }
        return SSHAgentService(ring: ring, knownHosts: { _ in KnownHosts() }, log: { _ in })
    }()

    /// Reads `bytes` as what a client sends on one ssh-agent connection: frames through a socket pair, each
    /// answered on that connection (binds accumulate), until the stream ends or a frame is refused. A lock
    /// request would empty the ring for later inputs: it is skipped.
    public static func serve(_ bytes: [UInt8]) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { return }
        defer { close(fds[0]); close(fds[1]) }
        var size = Int32(1 << 20)
        setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let written = bytes.withUnsafeBytes { Glibc.write(fds[0], $0.baseAddress, $0.count) }
        guard written == bytes.count else { return }
        shutdown(fds[0], Int32(SHUT_WR))
        let connection = service.connection(fds[1])
        let budget = AgentWire.FrameBudget(byteCount: 1 << 20)
        while let frame = try? SSHAgentWire.receive(on: fds[1], budget: budget) {
            if frame.first == SSHAgentWire.lock { continue }
            let (reply, _) = service.answer(frame, on: connection)
            precondition(!reply.isEmpty, "an empty answer")
        }
    }
}
