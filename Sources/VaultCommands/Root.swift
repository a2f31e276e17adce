import ArgumentParser

/// What `vault --help` says, and the verbs of both binaries.
///
/// `vault` links no networking: SwiftNIO and BoringSSL (and swift-crypto, libxml2, zlib) would cost every start
/// its page faults and relocations (Benchmarks/README.md), which every `get` would pay. The verbs that need them
/// run in `vault-net`, next to `vault`, which `vault` executes for them, as git does with `git-remote-https`;
/// ``RoutedVerb/all`` says which.
package enum Root {
    /// The vault's own verbs, which both binaries run themselves (the credential helpers, which both run too, are
    /// rows of ``RoutedVerb/all``).
    package static let vaultVerbs: [ParsableCommand.Type] = [
        Init.self, Put.self, Get.self, Edit.self, Show.self, History.self, Restore.self, Delete.self, List.self, Find.self, Move.self, Copy.self, Generate.self,
        Passwd.self, Info.self, Upgrade.self, Merge.self, Repair.self, GitCommand.self,
        Unlock.self, Lock.self, AgentCommand.self, RunCommand.self, Inject.self, Clip.self, ClipClear.self,
        Recipients.self, IdentityCommand.self, ReplicaCommand.self,
    ]

    /// `vault`'s root command: the vault's verbs, then each row of ``RoutedVerb/all``: its command when `vault`
    /// runs it, else a stub that executes `vault-net` (``RoutedVerb/forwardingStubs``).
    package static var vaultConfiguration: CommandConfiguration {
        configuration(routed: RoutedVerb.commands(vaultNet: nil))
    }

    /// `vault-net`'s root command: the same verbs, with `networkCommands` (one per row that `vault-net` runs) in
    /// the place of the stubs.
    package static func vaultNetConfiguration(networkCommands: [ParsableCommand.Type]) -> CommandConfiguration {
        configuration(routed: RoutedVerb.commands(vaultNet: networkCommands))
    }

    private static func configuration(routed: [ParsableCommand.Type]) -> CommandConfiguration {
        CommandConfiguration(
            commandName: "vault", abstract: abstract, discussion: discussion, version: version,
            subcommands: vaultVerbs + routed)
    }

    package static let abstract = "An encrypted credential vault (libsodium: Argon2id + XSalsa20-Poly1305)."
    package static let version = "0.1.0"
    // Paragraphs are single lines: ArgumentParser wraps them to the terminal's width, and a hard break inside a
    // paragraph would leave a ragged line at every width but one. The table's lines fit in 80 columns.
    package static let discussion = """
            Secrets never come from the command line: values are read from stdin (or a no-echo prompt), the passphrase from the terminal, --passphrase-fd N, --passphrase-file PATH, or the VAULT_PASSPHRASE environment variable (weaker: other processes of yours may read it). A vault shared with age recipients also opens with an age identity file: --identity FILE or VAULT_IDENTITY ('vault recipients --help').

            The vault is --vault PATH, else $VAULT_PATH, else the one 'vault git setup' moved into a git clone or adopted from one (recorded in ~/.config/vault/default-vault), else $XDG_DATA_HOME/vault/default.vault (~/.local/share/vault/default.vault).

            -f, --force means one thing on every verb that has it: go ahead, without asking, over what would stop the command or make it ask (an entry or file that exists, a weak new passphrase, names that do not exist, a vault already unlocked). Each verb's --help lists its own options first and the global ones (--vault, --passphrase-fd, --passphrase-file, --identity, --json, --accept-rollback) after them.

            EXIT CODES
              0   success
              1   other failure (I/O error, no vault, no passphrase source, HTTP
                  error status, network failure or timeout, plain http refused)
              2   no such entry (logout: no credential stored for the origin;
                  device: not registered, or the registration was removed)
              3   wrong passphrase or identity, or authentication failure
                  (credentials rejected, stored credential stale, none stored
                  and no terminal to ask on)
              4   unsafe permissions, owner or symlink
              5   vault busy (another process held the lock past the timeout)
              6   corrupt, truncated or unsupported file (incl. KDF parameters
                  out of range), or an older copy or another vault put in its
                  place (rollback protection)
              7   the entry exists (put --no-clobber, mv, cp, generate)
              64  usage error
            """
}
