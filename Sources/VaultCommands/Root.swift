import ArgumentParser

/// What `vault --help` says, and the verbs that the `vault-net` binary runs: both binaries use it.
///
/// `vault` does not link FoundationNetworking: libcurl and the ~30 shared libraries behind it cost ~8 ms of every
/// start (Benchmarks/README.md), which every `get` would pay. The verbs that need them (and those that share
/// their code) are in `vault-net`, next to `vault`, which `vault` executes for them, as git does with
/// `git-remote-https`.
package enum Root {
    /// The verbs both binaries run themselves.
    package static let vaultVerbs: [ParsableCommand.Type] = [
        Init.self, Put.self, Get.self, Show.self, History.self, Restore.self, Delete.self, List.self, Find.self, Move.self, Copy.self, Generate.self,
        Passwd.self, Info.self, Upgrade.self, Merge.self, GitCommand.self,
        Unlock.self, Lock.self, AgentCommand.self, RunCommand.self, Inject.self, Clip.self, ClipClear.self,
        Recipients.self, IdentityCommand.self,
    ]

    /// The root command's configuration: the vault's verbs, then `networkVerbs`.
    package static func configuration(networkVerbs: [ParsableCommand.Type]) -> CommandConfiguration {
        CommandConfiguration(
            commandName: "vault", abstract: abstract, discussion: discussion, version: version,
            subcommands: vaultVerbs + networkVerbs)
    }

    package static let abstract = "An encrypted credential vault (libsodium: Argon2id + XSalsa20-Poly1305)."
    package static let version = "0.1.0"
    // Paragraphs are single lines: ArgumentParser wraps them to the terminal's width, and a hard break inside a
    // paragraph would leave a ragged line at every width but one. The table's lines fit in 80 columns.
    package static let discussion = """
            Secrets never come from the command line: values are read from stdin (or a no-echo prompt), the passphrase from the terminal, --passphrase-fd N, --passphrase-file PATH, or the VAULT_PASSPHRASE environment variable (weaker: other processes of yours may read it). A vault shared with age recipients also opens with an age identity file: --identity FILE or VAULT_IDENTITY ('vault recipients --help').

            The vault is --vault PATH, else $VAULT_PATH, else $XDG_DATA_HOME/vault/default.vault (~/.local/share/vault/default.vault).

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

/// The verbs `vault` hands to `vault-net`, with the one-line summary `vault --help` shows for each.
package enum NetworkVerb: String, CaseIterable, Sendable {
    case login, fetch, logout, credential, device
    case dockerCredential = "docker-credential"
    /// Not a network verb: HMAC-SHA-1 comes from swift-crypto (BoringSSL), which `vault-net` links and `vault` does not.
    case otp
    /// Sync with an object store: HTTP.
    case sync
    /// Not network verbs: their parsers link FoundationXML (libxml2) and ZIPFoundation (zlib), which `vault` does not.
    case `import`, export

    /// The name under which `vault` and `vault-net` act as the docker credential helper (a symbolic link).
    package static let dockerHelperName = "docker-credential-vault"

    /// The arguments to run for `arguments` (a full argv): `docker-credential-vault ACTION` becomes
    /// `<argv0> docker-credential ACTION`; any other name is left as it is.
    package static func dispatchingOnName(_ arguments: [String]) -> [String] {
        guard let first = arguments.first, first.split(separator: "/").last.map(String.init) == dockerHelperName
        else { return arguments }
        return [first, NetworkVerb.dockerCredential.rawValue] + arguments.dropFirst()
    }

    package var abstract: String {
        switch self {
        case .login:
            return "Log in to URL with HTTP Basic authentication and store the credential once the server accepts it."
        case .fetch:
            return "GET URL, answering HTTP Basic challenges with the stored credential; the body goes to stdout exactly."
        case .logout:
            return "Forget the stored credentials of URL's origin (every realm, and the git credential helper's)."
        case .credential:
            return "A git credential helper: git config credential.helper '!vault credential --passphrase-file PATH'."
        case .device:
            return "Register this device with a mobile-services server, check or remove the registration."
        case .dockerCredential:
            return "A docker credential helper (store, get, erase, list): link it as docker-credential-vault."
        case .otp:
            return "Print the time-based one-time password (TOTP) of NAME's otp field."
        case .sync:
            return "Merge this vault with its copy in an S3-compatible object store (s3://BUCKET/KEY) or OpenBao (bao://…), both ways."
        case .import:
            return "Import the entries of pass, KeePassXC, Bitwarden, 1Password, a browser's CSV or vault's own export, in one atomic write."
        case .export:
            return "Write every entry, secrets in plain text, as vault's JSON, CSV or KeePass XML (a file of mode 0600, or stdout)."
        }
    }

    /// The verb `arguments` (a full argv) asks for, also as `vault help VERB`; nil for the other verbs.
    package static func requested(by arguments: [String]) -> NetworkVerb? {
        guard arguments.count > 1 else { return nil }
        if arguments[1] == "help", arguments.count > 2 { return NetworkVerb(rawValue: arguments[2]) }
        return NetworkVerb(rawValue: arguments[1])
    }
}
