import VaultAgent
import VaultCore
import VaultSSH

/// The agent's ssh-agent socket, a companion of the vault's (``AgentServer/install(companion:)``): at
/// ``AgentSocket/sshAgentPath(besides:)``, served by an ``AgentListener`` over the same key ring.
public enum SSHAgentSocket {
    /// Makes every agent this process runs serve the ssh-agent socket too (vault-net calls it at start).
    public static func install() {
        AgentServer.install { ring, agentSocket, log in
            let home = Posix.environment("HOME")
            let service = SSHAgentService(ring: ring, knownHosts: { KnownHosts.load(hostKey: $0, home: home) }, log: log)
            return try AgentListener(
                socketPath: AgentSocket.sshAgentPath(besides: agentSocket), service: service, exitWhenEmptyAfter: nil, log: log)
        }
    }
}
