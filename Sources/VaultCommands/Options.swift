import ArgumentParser
import Foundation
import VaultCore
import VaultTerminal

/// The options every verb that opens the vault takes.
package struct VaultOptions: ParsableArguments {
    package init() {}

    @Option(name: .customLong("vault"), help: ArgumentHelp("The vault file.", valueName: "path"))
    package var vaultPath: String?

    @Option(
        name: .customLong("passphrase-fd"),
        help: ArgumentHelp("Read the passphrase from this file descriptor (first line).", valueName: "n"))
    package var passphraseFD: Int32?

    @Option(
        name: .customLong("passphrase-file"),
        help: ArgumentHelp("Read the passphrase from the first line of this file (mode 0600).", valueName: "path"))
    package var passphraseFile: String?

    @Flag(help: "Machine-readable output (and errors as one JSON object on stderr).")
    package var json = false

    @Flag(
        name: .customLong("accept-rollback"),
        help: "Open the vault even if it is older than the last version seen here (a restored backup).")
    package var acceptRollback = false

    package func validate() throws {
        if passphraseFD != nil && passphraseFile != nil {
            throw ValidationError("--passphrase-fd and --passphrase-file cannot be used together")
        }
        if let fd = passphraseFD, fd < 0 { throw ValidationError("--passphrase-fd must be a file descriptor (0 or more)") }
        if let path = vaultPath, path.isEmpty { throw ValidationError("--vault needs a path") }
    }

    /// The vault path: --vault, $VAULT_PATH, or the default.
    package var resolvedPath: String {
        let environment = ProcessInfo.processInfo.environment
        let path = vaultPath ?? environment["VAULT_PATH"].flatMap { $0.isEmpty ? nil : $0 }
            ?? SecureKeyValueStore.defaultDirectory + "/default.vault"
        return path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// Store options. `VAULT_TESTING_INSECURE_KDF=1` is the explicit test hook (cheap Argon2id); see SECURITY.md.
    /// `VAULT_LOCK_TIMEOUT` (seconds) overrides how long a writer waits for another's lock.
    package var storeOptions: SecureKeyValueStore.Options {
        let environment = ProcessInfo.processInfo.environment
        var options = environment["VAULT_TESTING_INSECURE_KDF"] == "1"
            ? SecureKeyValueStore.Options.insecureForTesting : SecureKeyValueStore.Options()
        if let timeout = environment["VAULT_LOCK_TIMEOUT"].flatMap(Double.init), timeout >= 0 {
            options.lockTimeoutSeconds = timeout
        }
        // Rollback protection is on in the CLI: the last generation seen is kept in $XDG_STATE_HOME/vault.
        options.rollbackProtection = .standard
        options.acceptRollback = acceptRollback
        return options
    }

    package func makeStore() -> SecureKeyValueStore {
        SecureKeyValueStore(path: resolvedPath, options: storeOptions)
    }

    /// The passphrase from --passphrase-fd, --passphrase-file, $VAULT_PASSPHRASE or the terminal, in that order.
    package func passphrase(prompt: String = "Passphrase: ", confirm: Bool = false) throws -> SecureBytes {
        let secret: SecureBytes
        if let given = try SecretInput.read(fd: passphraseFD, file: passphraseFile) {
            secret = given
        } else if let value = ProcessInfo.processInfo.environment["VAULT_PASSPHRASE"] {
            secret = SecureBytes(string: value)
        } else {
            secret = try Self.promptTwiceIfNeeded(prompt: prompt, confirm: confirm)
        }
        guard secret.count > 0 else { throw CLIError.emptyPassphrase }
        return secret
    }

    /// Asks on the terminal (no echo); with `confirm`, asks twice and compares. No terminal: fails at once.
    package static func promptTwiceIfNeeded(prompt: String, confirm: Bool) throws -> SecureBytes {
        guard let terminal = Terminal.controlling() else { throw CLIError.noPassphraseSource }
        guard let first = try terminal.readSecret(prompt: prompt) else { throw CLIError.emptyPassphrase }
        if confirm {
            let second = try terminal.readSecret(prompt: "Repeat to confirm: ") ?? SecureBytes([])
            guard first == second else { throw CLIError.passphrasesDiffer }
        }
        return first
    }
}
