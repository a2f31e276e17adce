import FoundationEssentials
import VaultAgent
import VaultCore
import VaultTerminal
#if canImport(Glibc)
import Glibc
#endif

/// How a verb reaches an unlocked vault through the agent (docs/AGENT.md, "Clients").
package enum AgentAccess {
    /// The vault through the agent, or `nil` when the verb should open it here with a passphrase.
    ///
    /// - The agent holds the vault: use it (no passphrase, no terminal).
    /// - A passphrase source is given (`--passphrase-fd`/`--passphrase-file`/`VAULT_PASSPHRASE`): `nil`, and the
    ///   verb opens the vault itself; a missing, stale or broken agent never stands in the way.
    /// - A terminal, and an agent runs: ask once, unlock the vault in the agent, use it. Clients that need the
    ///   same vault at the same time take turns on a lock next to the socket, and look again before asking,
    ///   so they get one prompt between them.
    /// - Otherwise `nil` (the verb fails at once with "no passphrase"), except that an agent speaking another
    ///   protocol version is reported as such.
    ///
    /// `mayPrompt: false` never asks (a credential helper told not to interact): the vault held by the agent,
    /// or `nil`.
    package static func vault(for options: VaultOptions, mayPrompt: Bool = true) throws -> (any KeyValueVault)? {
        guard !options.acceptRollback else { return nil }
        let path = options.resolvedPath
        let client: AgentClient
        do {
            guard let connected = try AgentClient.connect() else {
                return mayPrompt ? try startAgentAndUnlock(options) : nil
            }
            client = connected
            if let vault = try client.vault(at: path) { return vault }
        } catch let error as AgentError {
            if case .versionMismatch = error, !options.hasPassphraseSource { throw error }
            return nil
        } catch {
            return nil  // an unsafe socket directory: not trusted, so not used
        }
        guard mayPrompt, !options.hasPassphraseSource, options.makeStore().exists, Terminal.controlling() != nil
        else { return nil }
        let turn = try PromptTurn(socketPath: client.socketPath)
        defer { turn.release() }
        if let vault = try client.vault(at: path) { return vault }  // unlocked while we waited our turn
        try options.makeStore().checkAccess()
        let limits = UnlockLimits.remembered(forVaultAt: path)
        try withPassphraseRetries(options) { passphrase in
            try client.unlock(
                path: path, passphrase: passphrase, idleSeconds: limits.idleSeconds, maxSeconds: limits.maxSeconds,
                allowInsecureKDFForTesting: options.storeOptions.kdfPolicy == .insecureForTesting,
                lockTimeoutSeconds: options.storeOptions.lockTimeoutSeconds)
        }
        return try client.vault(at: path)
    }

    /// Unlocks the vault at `path` in the agent (started when none runs) with `passphrase`, which a program other
    /// than a terminal asked for (`vault secret-service`'s askpass or pinentry prompt), with the limits `vault
    /// unlock` last chose for the vault (``UnlockLimits``).
    ///
    /// - Throws: ``VaultCore/VaultError/wrongPassphrase(path:)`` for a wrong passphrase, ``AgentError``.
    package static func unlock(path: String, passphrase: SecureBytes) throws {
        let options = try VaultOptions.parse(["--vault", path])  // every option at its default (the test KDF hook)
        try options.makeStore().checkAccess()
        let socket = AgentSocket.defaultPath
        try AgentSocket.checkDirectory(of: socket, create: true)
        let client = try AgentClient.connectStarting(command: AgentCommand.startCommand, socketPath: socket)
        let limits = UnlockLimits.remembered(forVaultAt: path)
        try client.unlock(
            path: path, passphrase: passphrase, idleSeconds: limits.idleSeconds, maxSeconds: limits.maxSeconds,
            allowInsecureKDFForTesting: options.storeOptions.kdfPolicy == .insecureForTesting,
            lockTimeoutSeconds: options.storeOptions.lockTimeoutSeconds)
    }

    /// Whether the first prompt of a session starts an agent: yes unless `VAULT_AGENT=off` (for those who want
    /// every command to ask, and for tests).
    static var startsAgent: Bool { Posix.environment("VAULT_AGENT") != "off" }

    /// No agent runs: on a terminal, and when the passphrase would come from it, ask once, start an agent, unlock
    /// the vault in it (with the limits `vault unlock` last chose for it, else 15 minutes idle, 8 hours at most:
    /// ``UnlockLimits``) and say so on one stderr line, as gpg-agent and
    /// rbw-agent do, so the next commands ask nothing. `nil` when this is not that case (the verb opens the vault
    /// itself); when the agent cannot be started, the vault is opened here with the passphrase already typed.
    private static func startAgentAndUnlock(_ options: VaultOptions) throws -> (any KeyValueVault)? {
        guard startsAgent, !options.hasPassphraseSource, options.makeStore().exists, Terminal.controlling() != nil
        else { return nil }
        let socket = AgentSocket.defaultPath
        do { try AgentSocket.checkDirectory(of: socket, create: true) } catch { return nil }
        let turn = try PromptTurn(socketPath: socket)
        defer { turn.release() }
        // Another command may have started one while we waited for our turn.
        if let running = try? AgentClient.connect(socketPath: socket), let vault = try running.vault(at: options.resolvedPath) {
            return vault
        }
        try options.makeStore().checkAccess()
        let client: AgentClient
        do {
            client = try AgentClient.connectStarting(command: AgentCommand.startCommand, socketPath: socket)
        } catch {
            return nil  // no agent could start: the verb opens the vault itself (and asks there)
        }
        let limits = UnlockLimits.remembered(forVaultAt: options.resolvedPath)
        try withPassphraseRetries(options) { passphrase in
            try client.unlock(
                path: options.resolvedPath, passphrase: passphrase, idleSeconds: limits.idleSeconds, maxSeconds: limits.maxSeconds,
                allowInsecureKDFForTesting: options.storeOptions.kdfPolicy == .insecureForTesting,
                lockTimeoutSeconds: options.storeOptions.lockTimeoutSeconds)
        }
        if !options.json { sayUnlocked(limits) }
        return try client.vault(at: options.resolvedPath)
    }

    static func sayUnlocked(_ limits: UnlockLimits) {
        writeToStderr("vault: unlocked in the agent: no command asks again for \(limits.description); 'vault lock' locks now (VAULT_AGENT=off: never start one)\n")
    }

    /// After `vault init` asked for the new passphrase on the terminal: unlock the new vault in the agent (started
    /// when none runs) with that passphrase, as the first prompt of a session does, so that the first `put` asks
    /// nothing more (a first secret in three prompts: the passphrase twice, the value). Silent and harmless when
    /// it cannot: the vault exists either way, and the next verb asks.
    package static func unlockAfterInit(_ options: VaultOptions, passphrase: SecureBytes) {
        guard startsAgent, !options.hasPassphraseSource, Terminal.controlling() != nil else { return }
        let limits = UnlockLimits.remembered(forVaultAt: options.resolvedPath)
        let socket = AgentSocket.defaultPath
        do {
            try AgentSocket.checkDirectory(of: socket, create: true)
            let client = try AgentClient.connectStarting(command: AgentCommand.startCommand, socketPath: socket)
            try client.unlock(
                path: options.resolvedPath, passphrase: passphrase, idleSeconds: limits.idleSeconds, maxSeconds: limits.maxSeconds,
                allowInsecureKDFForTesting: options.storeOptions.kdfPolicy == .insecureForTesting,
                lockTimeoutSeconds: options.storeOptions.lockTimeoutSeconds)
        } catch {
            return
        }
        if !options.json { sayUnlocked(limits) }
    }
}

/// An exclusive `flock` on `prompt.lock` next to the agent's socket: one passphrase prompt at a time.
private final class PromptTurn {
    private var fd: Int32

    init(socketPath: String) throws {
        let path = (socketPath.lastIndex(of: "/").map { String(socketPath[..<$0]) } ?? ".") + "/prompt.lock"
        fd = Posix.retryingEINTR { open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot open", path: path, errno: errno) }
        guard Posix.retryingEINTR({ flock(fd, LOCK_EX) }) == 0 else {
            let code = errno
            close(fd)
            throw VaultError.io(operation: "cannot lock", path: path, errno: code)
        }
    }

    func release() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    deinit { release() }
}

extension VaultOptions {
    /// Whether a passphrase comes from an option or the environment (not the terminal), or an age identity file is
    /// given (`--identity`, `VAULT_IDENTITY`): then nothing is asked on the terminal.
    package var hasPassphraseSource: Bool {
        passphraseSource.isGiven || getenv("VAULT_PASSPHRASE") != nil || identityPath != nil
    }
}
