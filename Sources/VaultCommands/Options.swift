import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCore
import VaultTerminal

/// The options every verb that opens the vault takes.
package struct VaultOptions: ParsableArguments {
    package init() {}

    @Option(name: .customLong("vault"), help: ArgumentHelp("The vault file.", valueName: "path"))
    package var vaultPath: String?

    @OptionGroup package var passphraseSource: SecretSourceOptions<PassphraseSecret>

    /// `--passphrase-fd`.
    package var passphraseFD: Int32? { passphraseSource.fd }
    /// `--passphrase-file`.
    package var passphraseFile: String? { passphraseSource.file }

    @Option(
        name: .customLong("identity"),
        help: ArgumentHelp(
            "Open the vault with this age identity file (AGE-SECRET-KEY-1..., e.g. from age-keygen; yours or root's, "
                + "mode 0600) instead of the passphrase; else $VAULT_IDENTITY.", valueName: "path"))
    package var identityFile: String?

    /// The identity file: `--identity`, else `$VAULT_IDENTITY` (when not empty), else `nil`.
    package var identityPath: String? {
        identityFile ?? Posix.environment("VAULT_IDENTITY").flatMap { $0.isEmpty ? nil : $0 }
    }

    @Flag(help: "Machine-readable output (and errors as one JSON object on stderr).")
    package var json = false

    @Flag(
        name: .customLong("accept-rollback"),
        help: "Open the vault even if it is older than the last version seen here (a restored backup).")
    package var acceptRollback = false

    package func validate() throws {
        if let problem = Self.problem(vaultPath: vaultPath) { throw ValidationError(problem) }
    }

    /// What is wrong with `--vault` (`nil`: not given) or `VAULT_LOCK_TIMEOUT`, if anything: the checks of
    /// ``validate()``, also made by ``QuickPath`` before it takes a command line.
    static func problem(vaultPath: String?) -> String? {
        if let path = vaultPath, path.isEmpty { return "--vault needs a path" }
        // A vault is a file: 'DIR/new/' would put the lock at 'DIR/new/.lock' and then find a "vault" there.
        let path = resolvedPath(vaultPath)
        let last = path.split(separator: "/").last ?? ""
        var info = stat()
        if path.hasSuffix("/") || last == "." || last == ".."
            || (stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR) {
            return "the vault path '\(path)' names a directory: give the path of a file in it (e.g. '\(path.hasSuffix("/") ? path + "default.vault" : path + "/default.vault")')"
        }
        if let text = Posix.environment("VAULT_LOCK_TIMEOUT"), lockTimeout(text) == nil {
            return "VAULT_LOCK_TIMEOUT must be a number of seconds from 0 to \(Int(maximumLockTimeoutSeconds)), not '\(text)'"
        }
        return nil
    }

    /// The longest `VAULT_LOCK_TIMEOUT` accepted, in seconds (an hour): a writer never waits for ever.
    package static let maximumLockTimeoutSeconds: Double = 3600

    /// `VAULT_LOCK_TIMEOUT`'s seconds, or `nil` when it is not a number from 0 to the maximum (`inf`, `nan`,
    /// negative, words).
    static func lockTimeout(_ text: String) -> Double? {
        guard let seconds = Double(text), seconds >= 0, seconds <= maximumLockTimeoutSeconds else { return nil }
        return seconds
    }

    /// The vault path: --vault, $VAULT_PATH, or the default.
    package var resolvedPath: String { Self.resolvedPath(vaultPath) }

    /// The vault path for `--vault` (`nil`: not given): it, else $VAULT_PATH, else the vault `vault git setup`
    /// recorded as this machine's (``VaultPointer``), else the default; absolute.
    static func resolvedPath(_ vaultPath: String?) -> String {
        let path = vaultPath ?? Posix.environment("VAULT_PATH").flatMap { $0.isEmpty ? nil : $0 }
            ?? VaultPointer.read() ?? VaultPointer.defaultVault
        return path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// Store options. `VAULT_TESTING_INSECURE_KDF=1` is the explicit test hook (cheap Argon2id); see SECURITY.md.
    /// `VAULT_LOCK_TIMEOUT` (seconds, 0 to 3600; other values are refused by ``validate()``) overrides how long a
    /// writer waits for another's lock.
    package var storeOptions: SecureKeyValueStore.Options {
        var options = Posix.environment("VAULT_TESTING_INSECURE_KDF") == "1"
            ? SecureKeyValueStore.Options.insecureForTesting : SecureKeyValueStore.Options()
        if let timeout = Posix.environment("VAULT_LOCK_TIMEOUT").flatMap(Self.lockTimeout) {
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

    /// ``makeStore()`` for a vault that must exist, checked as an open checks it (the directory and the file: their
    /// trust rules) before anyone types a passphrase or waits for the KDF.
    ///
    /// - Throws: ``VaultCore/VaultError/vaultNotFound(path:)``, and what ``VaultCore/SecureKeyValueStore/checkAccess()`` throws.
    package func existingStore() throws -> SecureKeyValueStore {
        let store = makeStore()
        guard store.exists else { throw VaultError.vaultNotFound(path: store.path) }
        try store.checkAccess()
        return store
    }

    /// Who runs `vault`, named in its passphrase prompt when it is not the user at a shell (the credential helpers
    /// set it on their options: under git, a bare "Passphrase:" where git asks for a password got the git token
    /// typed into it). Not an option: a property with a default, which the parser leaves as it is.
    package var caller: String? = nil

    /// `Vault passphrase for ~/.local/share/vault/default.vault (git credential helper): `: which secret, for
    /// which vault, asked by whom.
    package var passphrasePrompt: String {
        let path = resolvedPath
        var shown = path
        if let home = Posix.environment("HOME"), home.count > 1 {
            let prefix = home.hasSuffix("/") ? home : home + "/"
            if path.hasPrefix(prefix) { shown = "~/" + path.dropFirst(prefix.count) }
        }
        return "Vault passphrase for \(TerminalText.escaped(shown))\(caller.map { " (\($0))" } ?? ""): "
    }

    /// The passphrase from --passphrase-fd, --passphrase-file, $VAULT_PASSPHRASE or the terminal, in that order
    /// (the terminal prompt is ``passphrasePrompt`` unless `prompt` is given).
    /// An empty one opens a vault that has one (the format allows it), but is refused for a new vault
    /// (`forNewVault`): the CLI never makes a vault that nothing protects.
    package func passphrase(prompt: String? = nil, confirm: Bool = false, forNewVault: Bool = false) throws -> SecureBytes {
        try Self.passphrase(from: passphraseSource, prompt: prompt ?? passphrasePrompt, confirm: confirm, forNewVault: forNewVault)
    }

    /// The passphrase from `source` (`--passphrase-fd`, `--passphrase-file`), else `$VAULT_PASSPHRASE`, else the
    /// terminal (`prompt`); see ``passphrase(prompt:confirm:forNewVault:)``.
    package static func passphrase(
        from source: SecretSourceOptions<PassphraseSecret>, prompt: String, confirm: Bool, forNewVault: Bool
    ) throws -> SecureBytes {
        let secret: SecureBytes
        if let given = try source.read() {
            secret = given
        } else if let value = getenv("VAULT_PASSPHRASE") {
            // The environment's exact bytes (not through a String, which would replace invalid UTF-8).
            let count = strlen(value)
            secret = SecureBytes(count: count) { buffer in
                if count > 0 { buffer.copyMemory(from: UnsafeRawBufferPointer(start: value, count: count)) }
            }
        } else {
            secret = try promptTwiceIfNeeded(prompt: prompt, confirm: confirm)
        }
        guard secret.count > 0 || !forNewVault else { throw CLIError.emptyPassphrase }
        return secret
    }

    /// Asks on the terminal (no echo); with `confirm`, asks twice and compares. No terminal: fails at once.
    package static func promptTwiceIfNeeded(prompt: String, confirm: Bool) throws -> SecureBytes {
        guard let terminal = Terminal.controlling() else { throw CLIError.noPassphraseSource }
        // Both prompts in one turn: no other prompt comes between them.
        // A confirmation that differs asks both again, three tries in all.
        return try terminal.exclusively {
            for attempt in 1...3 {
                guard let first = try terminal.readSecret(prompt: prompt) else { throw CLIError.emptyPassphrase }
                guard confirm else { return first }
                let second = try terminal.readSecret(prompt: "Repeat to confirm: ") ?? SecureBytes([])
                if first == second { return first }
                if attempt < 3 { try terminal.write("The passphrases do not match; try again (\(attempt + 1) of 3).\n") }
            }
            throw CLIError.passphrasesDiffer
        }
    }
}

/// The name of a secret given by a `--NAME-fd N` / `--NAME-file PATH` pair of options.
package protocol SecretSourceName {
    /// `passphrase` for `--passphrase-fd` and `--passphrase-file`.
    static var optionName: String { get }
    /// What the secret is, for help texts ("the passphrase").
    static var secret: String { get }
}

package enum PassphraseSecret: SecretSourceName {
    package static let optionName = "passphrase"
    package static let secret = "the passphrase"
}

package enum NewPassphraseSecret: SecretSourceName {
    package static let optionName = "new-passphrase"
    package static let secret = "the new passphrase"
}

package enum OtherPassphraseSecret: SecretSourceName {
    package static let optionName = "other-passphrase"
    package static let secret = "the other copy's passphrase (when it was changed on one side)"
}

package enum PasswordSecret: SecretSourceName {
    package static let optionName = "password"
    package static let secret = "the password"
}

/// A secret from `--NAME-fd N` (first line of the descriptor) or `--NAME-file PATH` (first line of a file
/// only its owner can read): one option group for every secret the CLI reads, so the options, their help and
/// their checks are written once.
package struct SecretSourceOptions<Name: SecretSourceName>: ParsableArguments {
    package init() {}

    @Option(
        name: .customLong(Name.optionName + "-fd"),
        help: ArgumentHelp("Read \(Name.secret) from this file descriptor (first line).", valueName: "n"))
    package var fd: Int32?

    @Option(
        name: .customLong(Name.optionName + "-file"),
        help: ArgumentHelp(
            "Read \(Name.secret) from the first line of this file (yours or root's, mode 0600) or pipe (not "
                + "writable by others, e.g. <(...)).", valueName: "path"))
    package var file: String?

    /// Whether either option was given.
    package var isGiven: Bool { fd != nil || file != nil }

    package func validate() throws {
        if fd != nil && file != nil {
            throw ValidationError("--\(Name.optionName)-fd and --\(Name.optionName)-file cannot be used together")
        }
        if let fd, fd < 0 {
            throw ValidationError("--\(Name.optionName)-fd must be a file descriptor (0 or more)")
        }
    }

    /// The secret, or `nil` when neither option was given.
    package func read() throws -> SecureBytes? {
        try SecretInput.read(fd: fd, file: file)
    }
}
