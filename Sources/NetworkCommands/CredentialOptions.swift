import ArgumentParser
import VaultAuth
import VaultCommands
import VaultCore
import VaultTerminal

/// `--username` with `--password-fd`/`--password-file`: the credential of `login`, `device register` and the
/// DemoApp for scripts (without them, the terminal is asked).
package struct CredentialOptions: ParsableArguments {
    package init() {}

    @Option(help: ArgumentHelp(
        "The username (the password is still asked for on the terminal unless given by --password-fd/--password-file).",
        valueName: "name"))
    package var username: String?

    @OptionGroup package var passwordSource: SecretSourceOptions<PasswordSecret>

    /// `--password-fd`.
    package var passwordFD: Int32? { passwordSource.fd }
    /// `--password-file`.
    package var passwordFile: String? { passwordSource.file }
    /// Whether the password comes from a descriptor or a file.
    package var passwordGiven: Bool { passwordSource.isGiven }

    package func validate() throws {
        if passwordGiven && username == nil {
            throw ValidationError("--password-fd and --password-file need --username")
        }
        if let username {
            // RFC 7617, before anything is read or sent; the message does not repeat what was typed.
            do { try Credential.validate(username: username) } catch { throw ValidationError("--username: \(error)") }
        }
    }

    /// The vault's passphrase is read from its own descriptor: the two must differ.
    package func validate(against vault: VaultOptions) throws {
        if let fd = passwordFD, fd == vault.passphraseFD {
            throw ValidationError("the passphrase and the password need different descriptors")
        }
    }

    /// The password from --password-fd or --password-file, or `nil` when neither was given.
    package func password() throws -> SecureBytes? {
        try passwordSource.read()
    }

    /// The prompt these options ask for: the given credential once (then declined), else the terminal
    /// (`terminal`), else none. Reads the password now (before the vault's passphrase prompt, so a pipe is
    /// drained first).
    package func prompt(terminal: Bool) throws -> CLICredentialPrompt {
        CLICredentialPrompt(username: username, password: try password(), terminal: terminal)
    }
}
