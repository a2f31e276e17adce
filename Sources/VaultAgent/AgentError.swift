import VaultCore

/// Failures of talking to the agent. None carries a secret.
public enum AgentError: Error, Equatable, Sendable {
    /// No agent answers on `socket` (no socket file, nobody listening, or a stale socket of a killed agent).
    case noAgent(socket: String)
    /// The agent speaks protocol `agentVersion`; this build speaks ``AgentClient/protocolVersion``.
    case versionMismatch(agentVersion: Int)
    /// The agent did not answer in time.
    case timedOut
    /// Reading from or writing to the agent failed with `errno`.
    case connection(errno: Int32)
    /// A message did not follow the protocol.
    case protocolError(String)
    /// The agent refused a request that broke the protocol (a field missing or out of range, an unknown
    /// operation): what the agent answers, where ``protocolError(_:)`` is what a client finds in an answer.
    case badRequest(String)
    /// The vault is not unlocked in the agent.
    case locked(path: String)
    /// The agent could not start (its socket directory is unsafe, or it exited at once).
    case cannotStart(socket: String, reason: String)
    /// `VAULT_AGENT_SOCK` names no usable socket path (relative, or longer than a socket address holds).
    case invalidSocketPath(String, reason: String)
    /// The agent ran the request and it failed there with an error that is not the library's own (those arrive as
    /// themselves): the failure as the agent presented it (``AgentServer/Options/present``).
    case remote(AgentFailure)
}

extension AgentError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .noAgent(let socket): return "no agent is running (socket '\(socket)')"
        case .versionMismatch(let version):
            return "the agent speaks protocol version \(version), this vault speaks \(AgentClient.protocolVersion)"
        case .timedOut: return "the agent did not answer in time"
        case .connection(let code): return "the connection to the agent failed: \(Posix.describe(errno: code))"
        case .protocolError(let what): return "the agent's answer broke the protocol: \(what)"
        case .badRequest(let what): return "the agent refused the request: \(what)"
        case .locked(let path): return "vault '\(path)' is not unlocked in the agent"
        case .cannotStart(let socket, let reason): return "cannot start the agent on '\(socket)': \(reason)"
        case .invalidSocketPath(let path, let reason): return "cannot use the agent socket '\(path)': \(reason)"
        case .remote(let failure): return failure.message
        }
    }
}

