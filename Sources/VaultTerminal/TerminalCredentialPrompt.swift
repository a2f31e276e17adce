import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VaultCore
import VaultCredentials

/// A ``CredentialPrompting`` on the controlling terminal, `/dev/tty`: the username is echoed, the password is not.
///
/// It never reads standard input, so it works when stdin and stdout are pipes, and fails at once with
/// ``AuthenticationError/noPromptAvailable(space:detail:)`` when there is no terminal (CI, a daemon, `setsid`).
/// Echo is turned off with `termios` for the password and restored on every path: normal return, error, and
/// `SIGINT`/`SIGTERM`/`SIGHUP`/`SIGQUIT` while the password is typed (the handler restores the terminal and then
/// re-raises the signal with its previous disposition).
///
/// The password is read byte by byte into a buffer that is wiped after being copied into ``SecureBytes``.
public struct TerminalCredentialPrompt: CredentialPrompting {
    /// The longest accepted username or password, in bytes.
    public static let maximumInputByteCount = 4096

    /// The terminal device; `/dev/tty` unless a test passes a pseudo-terminal.
    public let ttyPath: String

    public init(ttyPath: String = "/dev/tty") {
        self.ttyPath = ttyPath
    }

    public func credential(
        for space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) async throws -> Credential? {
        // Blocking terminal I/O runs on its own thread, not on the cooperative pool.
        let ttyPath = self.ttyPath
        return try await runBlocking {
            try Self.ask(ttyPath: ttyPath, space: space, reason: reason, suggestedUsername: suggestedUsername)
        }
    }

    static func ask(
        ttyPath: String, space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) throws -> Credential? {
        let terminal: Terminal
        do {
            terminal = try Terminal(path: ttyPath)
        } catch let VaultError.io(_, _, code) {
            throw AuthenticationError.noPromptAvailable(
                space: space, detail: "cannot open terminal '\(ttyPath)': \(String(cString: strerror(code)))")
        }
        do {
            // The header, the username and the password in one turn: no other prompt comes between them.
            return try terminal.exclusively {
                try ask(on: terminal, space: space, reason: reason, suggestedUsername: suggestedUsername)
            }
        } catch let error as VaultError {
            throw AuthenticationError.promptFailed(detail: error.description)
        }
    }

    private static func ask(
        on terminal: Terminal, space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) throws -> Credential? {
        // Parts from elsewhere (the server's realm, a stored username) are escaped whole, newlines included: the
        // header's own newline is the only one.
        let header: String
        switch reason {
        case .noStoredCredential:
            header = "Log in to \(TerminalText.escaped(space.description))\n"
        case let .storedCredentialRejected(username):
            header = "The stored password for '\(TerminalText.escaped(username))' was rejected by \(TerminalText.escaped(space.description)).\n"
        case let .enteredCredentialRejected(username):
            header = "The password for '\(TerminalText.escaped(username))' was rejected by \(TerminalText.escaped(space.description)). Try again.\n"
        }
        try terminal.write(header)
        let prompt = suggestedUsername.map { "Username [\(TerminalText.escaped($0))]: " } ?? "Username: "
        guard let usernameBytes = try terminal.readLine(prompt: prompt) else { return nil }  // EOF: declined
        var username = String(decoding: usernameBytes.unprotectedBytes, as: UTF8.self)
        if username.isEmpty, let suggestedUsername { username = suggestedUsername }
        if username.isEmpty { return nil }
        guard let password = try terminal.readSecret(prompt: "Password for '\(TerminalText.escaped(username))': ") else { return nil }
        return Credential(username: username, password: password)
    }
}
