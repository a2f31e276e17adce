import Synchronization
import VaultAuth
import VaultTerminal
import VaultCore

/// The command line's credential prompt, for every command that may log in: a credential given by a script
/// (`--username` with `--password-fd`/`--password-file`) answers the first prompt, and a second prompt is
/// declined (a rejected credential is reported as rejected, never asked for again); without one, the terminal
/// (`/dev/tty`, never stdin) is asked, offering `--username` as the default; without a terminal, it fails at
/// once. It records what it handed out.
package final class CLICredentialPrompt: CredentialPrompting {
    private enum Source { case given(Credential?), terminal, none }

    private struct State {
        var scripted: Credential?  // handed out by the first prompt
        var scriptedUsed = false
        var answered: (space: ProtectionSpace, username: String)?
    }

    private let username: String?
    private let terminal: Bool
    private let state: Mutex<State>

    /// - Parameters:
    ///   - username: `--username`: with `password`, the scripted credential; alone, the default offered.
    ///   - terminal: whether to ask on the terminal when no credential was given (`false`: fail at once).
    package init(username: String?, password: SecureBytes?, terminal: Bool) {
        self.username = username
        self.terminal = terminal
        var scripted: Credential?
        if let username, let password { scripted = Credential(username: username, password: password) }
        state = Mutex(State(scripted: scripted))
    }

    /// Whether a credential was given by the script (then stored credentials are not used: the login is made
    /// with exactly what was given).
    package var hasScriptedCredential: Bool { state.withLock { $0.scripted != nil || $0.scriptedUsed } }

    /// The space and username of the last credential handed out.
    package var answered: (space: ProtectionSpace, username: String)? { state.withLock { $0.answered } }

    package func credential(
        for space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) async throws -> Credential? {
        let source: Source = state.withLock { state in
            if let scripted = state.scripted {
                state.scripted = nil
                state.scriptedUsed = true
                return .given(scripted)
            }
            if state.scriptedUsed { return .given(nil) }  // the script's one credential was rejected: decline
            return terminal ? .terminal : .none
        }
        let credential: Credential?
        switch source {
        case let .given(given):
            credential = given
        case .terminal:
            credential = try await TerminalCredentialPrompt().credential(
                for: space, reason: reason, suggestedUsername: suggestedUsername ?? username)
        case .none:
            throw AuthenticationError.noPromptAvailable(space: space, detail: "there is no terminal to ask on")
        }
        if let credential { state.withLock { $0.answered = (space, credential.username) } }
        return credential
    }
}

extension CLICredentialPrompt {
    /// The terminal only (no credential given): what `device status` and `unregister` ask with.
    package static func terminal() -> CLICredentialPrompt {
        CLICredentialPrompt(username: nil, password: nil, terminal: true)
    }
}
