import VaultAgent
import VaultCore
import VaultSSH

/// The agent's ssh-agent socket, a companion of the vault's (``AgentServer/install(companion:)``): at
/// ``AgentSocket/sshAgentPath(besides:)``, served by an ``AgentListener`` over the same key ring; or, when a service
/// manager handed in a socket named ``SocketActivation/sshAgentName`` (vault-ssh-agent.socket), that one, never
/// bound nor removed here.
public enum SSHAgentSocket {
    /// Makes every agent this process runs serve the ssh-agent socket too (vault-net calls it at start).
    public static func install() {
        AgentServer.install { ring, agentSocket, handedIn, log in
            let home = Posix.environment("HOME")
            let service = SSHAgentService(
                ring: ring, knownHosts: { KnownHosts.load(hostKey: $0.hostKey, certificate: $0.certificate, home: home) }, askpass: Posix.environment("SSH_ASKPASS"), log: log)
            let adopted = handedIn?.sshAgentSocket
            if let adopted, adopted.path != AgentSocket.sshAgentPath {
                log("note: the ssh-agent socket handed in, \(adopted.path), is not what 'vault ssh socket' prints (\(AgentSocket.sshAgentPath)): set SSH_AUTH_SOCK to it")
            }
            return try AgentListener(
                socketPath: adopted?.path ?? AgentSocket.sshAgentPath(besides: agentSocket), adopted: adopted?.descriptor,
                service: service, exitWhenEmptyAfter: nil, log: log)
        }
    }
}
