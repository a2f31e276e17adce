import Synchronization
import VaultAuth
import VaultTerminal

/// The DemoApp's credential prompt: a credential given on the command line answers the first prompt and a second
/// one is declined (a rejected password is reported, never asked for again); without one, the terminal is asked
/// (`/dev/tty`, never stdin), and without a terminal the login fails at once.
final class OnceThenTerminal: CredentialPrompting {
    private let given: Mutex<(credential: Credential?, used: Bool)>
    private let suggestedUsername: String?

    init(given: Credential?, suggestedUsername: String?) {
        self.given = Mutex((given, false))
        self.suggestedUsername = suggestedUsername
    }

    func credential(
        for space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) async throws -> Credential? {
        let scripted: Credential?? = given.withLock { state in
            if let credential = state.credential {
                state = (nil, true)
                return .some(credential)
            }
            return state.used ? .some(nil) : nil
        }
        if let scripted { return scripted }
        return try await TerminalCredentialPrompt().credential(
            for: space, reason: reason, suggestedUsername: suggestedUsername ?? self.suggestedUsername)
    }
}
