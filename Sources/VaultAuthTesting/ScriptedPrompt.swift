import Synchronization
import VaultCredentials

/// A ``VaultCredentials/CredentialPrompting`` that answers from a list (then `nil`: the user declined) and records
/// every question, so that tests can check when an authenticator asked, why, and with which suggested username.
public final class ScriptedPrompt: CredentialPrompting {
    private struct State {
        var answers: [Credential?]
        var calls: [(space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?)] = []
    }

    private let state: Mutex<State>

    public init(_ answers: [Credential?]) {
        state = Mutex(State(answers: answers))
    }

    /// How many times the prompt was asked.
    public var count: Int { state.withLock { $0.calls.count } }
    /// Why it was asked, in order.
    public var reasons: [CredentialPromptReason] { state.withLock { $0.calls.map(\.reason) } }
    /// The usernames it was offered, in order.
    public var suggestedUsernames: [String?] { state.withLock { $0.calls.map(\.suggestedUsername) } }
    /// The protection spaces it was asked for, in order.
    public var spaces: [ProtectionSpace] { state.withLock { $0.calls.map(\.space) } }

    public func credential(
        for space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) async throws -> Credential? {
        state.withLock { state in
            state.calls.append((space, reason, suggestedUsername))
            return state.answers.isEmpty ? nil : state.answers.removeFirst()
        }
    }
}
