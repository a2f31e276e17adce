import ArgumentParser
import VaultCore

/// `vault`: an encrypted credential vault for Linux.
@main
struct VaultMain {
    static func main() async {
        // No core dumps, no ptrace by the same user, signals deliverable: secrets stay in this process.
        ProcessHardening.apply()
        await Vault.main()
    }
}

struct Vault: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vault",
        abstract: "An encrypted credential vault (libsodium: Argon2id + XSalsa20-Poly1305).",
        discussion: """
            Secrets never come from the command line: values are read from stdin (or a no-echo prompt),
            the passphrase from the terminal, --passphrase-fd N, --passphrase-file PATH, or the
            VAULT_PASSPHRASE environment variable (weaker: other processes of yours may read it).

            The vault is --vault PATH, else $VAULT_PATH, else $XDG_DATA_HOME/vault/default.vault
            (~/.local/share/vault/default.vault).

            EXIT CODES
              0   success
              1   other failure (I/O error, no vault, no passphrase source, HTTP error status,
                  network failure or timeout, plain http refused, ...)
              2   no such entry (logout: no credential stored for the origin)
                  (device: not registered, or the server removed the registration)
              3   wrong passphrase, or authentication failure (credentials rejected, stored
                  credential stale, none stored and no terminal to ask on)
              4   unsafe permissions, owner or symlink
              5   vault busy (another process held the lock past the timeout)
              6   corrupt, truncated or unsupported file (incl. KDF parameters out of range)
              64  usage error
            """,
        version: "0.1.0",
        subcommands: [
            Init.self, Put.self, Get.self, Delete.self, List.self, Passwd.self, Info.self, Login.self, Fetch.self, Logout.self, CredentialHelper.self, Device.self,
        ]
    )
}
