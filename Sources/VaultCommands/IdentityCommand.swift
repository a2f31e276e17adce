import ArgumentParser
import FoundationEssentials
import VaultAge
import VaultCore
import VaultTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `vault identity`: your own age identity, to be added to vaults others share with you.
package struct IdentityCommand: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "identity",
        abstract: "Make and show your age identity (the key a shared vault opens with).",
        subcommands: [New.self, Show.self])

    /// Where the sealed identity lives: `$XDG_CONFIG_HOME/vault/identity.vault` (else `~/.config/vault/…`), a
    /// version-2 vault (Argon2id under its own passphrase) holding the identity as the `password` field of its
    /// entry `identity`, and `identity.pub` beside it (the recipient, not secret).
    static var directory: String {
        if let config = Posix.environment("XDG_CONFIG_HOME"), config.hasPrefix("/") { return config + "/vault" }
        return Posix.homeDirectory + "/.config/vault"
    }

    static var sealedPath: String { directory + "/identity.vault" }
    /// The entry of the sealed identity vault that holds the identity (its `password` field).
    static let sealedEntry = "identity"
    static var recipientPath: String { directory + "/identity.pub" }

    /// `vault identity new [--output FILE]`.
    package struct New: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            abstract: "Make a new age identity; print its recipient (age1..., or age1pq1... with --pq) on stdout.",
            discussion: """
                With --output FILE, the identity is written there as age-keygen writes one (mode 0600; never over an existing file): use it with --identity FILE or VAULT_IDENTITY. Without it, it is stored sealed under a passphrase (Argon2id, asked twice, or --passphrase-file/--passphrase-fd/VAULT_PASSPHRASE) in $XDG_CONFIG_HOME/vault/identity.vault, and its recipient in identity.pub beside it; --identity takes that file too, and the passphrase options (or the prompt) then give the identity's passphrase. With --pq, a post-quantum identity (ML-KEM-768 + X25519, as age-keygen -pq makes it), which vault-net reads (vault runs it for them); identity.pub then names its age1pq1... recipient, which is how vault knows, without the passphrase, that the sealed identity is post-quantum.
                """)

        @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("Write the identity file here.", valueName: "path"))
        var output: String?

        @Flag(name: .customLong("pq"), help: "A post-quantum identity (ML-KEM-768 + X25519, as age-keygen -pq makes: AGE-SECRET-KEY-PQ-1..., recipient age1pq1...).")
        var postQuantum = false

        @OptionGroup var passphraseSource: SecretSourceOptions<PassphraseSecret>

        @Flag(help: "Machine-readable output (and errors as one JSON object on stderr).")
        var json = false

        package func run() throws {
            try reportingErrors(json: json) {
                let identity: any AgeStanzaIdentity
                if postQuantum {
                    // `vault` runs vault-net for --pq before parsing (PostQuantumRoute): only vault-net gets here.
                    guard let keys = AgeKeys.postQuantum else { PostQuantumRoute.executeVaultNet() }
                    identity = keys.generateIdentity()
                } else {
                    identity = AgeIdentity.generate()
                }
                let recipient = identity.recipientEncoding
                let path: String
                if let output {
                    path = output
                    try Self.writeIdentityFile(identity, to: output)
                } else {
                    path = IdentityCommand.sealedPath
                    if FileManager.default.fileExists(atPath: path) { throw VaultError.vaultAlreadyExists(path: path) }
                    let passphrase = try VaultOptions.passphrase(
                        from: passphraseSource, prompt: "Passphrase for your new identity: ", confirm: true, forNewVault: true)
                    var storeOptions = Posix.environment("VAULT_TESTING_INSECURE_KDF") == "1"
                        ? SecureKeyValueStore.Options.insecureForTesting : SecureKeyValueStore.Options()
                    storeOptions.rollbackProtection = .standard
                    _ = try VaultOpener.create(path: path, passphrase: passphrase, options: storeOptions)
                    let vault = try VaultOpener.open(path: path, passphrase: passphrase, options: storeOptions)
                    defer { vault.close() }
                    try vault.put(identity.encoded(), forKey: IdentityCommand.sealedEntry)
                    // The recipient is public: beside the sealed identity, so that 'identity show' asks nothing.
                    guard FileManager.default.createFile(
                        atPath: IdentityCommand.recipientPath, contents: Data((recipient + "\n").utf8),
                        attributes: [.posixPermissions: 0o644])
                    else { throw VaultError.io(operation: "cannot write", path: IdentityCommand.recipientPath, errno: errno) }
                }
                if json {
                    try writeJSON(["recipient": recipient, "path": path, "sealed": output == nil])
                } else {
                    try writeToStdout(recipient + "\n")
                }
            }
        }

        /// Writes `identity` as `age-keygen -o` does (`# created`, `# public key`, the key), mode 0600, never over
        /// an existing file or through a symbolic link.
        static func writeIdentityFile(_ identity: any AgeStanzaIdentity, to path: String) throws {
            let fd = Posix.retryingEINTR { open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            guard fd >= 0 else {
                let code = errno
                if code == EEXIST { throw CLIError.message("cannot write identity file '\(path)': it exists", exitCode: Exit.exists) }
                throw VaultError.io(operation: "cannot create", path: path, errno: code)
            }
            defer { close(fd) }
            let created = UTCTime.iso8601(seconds: Date().timeIntervalSince1970, fractional: false)
            let head = Array("# created: \(created)\n# public key: \(identity.recipientEncoding)\n".utf8)
            let key = identity.encoded()
            var code = head.withUnsafeBytes { Posix.writeAll(fd, $0) }
            if code == 0 { code = key.withUnsafeBytes { Posix.writeAll(fd, $0) } }
            if code == 0 { code = Array("\n".utf8).withUnsafeBytes { Posix.writeAll(fd, $0) } }
            if code == 0 && fsync(fd) != 0 { code = errno }
            guard code == 0 else { throw VaultError.io(operation: "cannot write", path: path, errno: code) }
        }
    }

    /// `vault identity show [--identity FILE]`.
    package struct Show: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            abstract: "Print your recipient (age1...): of --identity FILE (or VAULT_IDENTITY), else of the identity 'vault identity new' stored.")

        @Option(name: .customLong("identity"), help: ArgumentHelp("An age identity file (yours, mode 0600).", valueName: "path"))
        var identityFile: String?

        @Flag(help: "Machine-readable output (and errors as one JSON object on stderr).")
        var json = false

        package func run() throws {
            try reportingErrors(json: json) {
                var recipients: [String]
                if let path = identityFile ?? Posix.environment("VAULT_IDENTITY").flatMap({ $0.isEmpty ? nil : $0 }) {
                    recipients = try loadIdentities(path).map(\.recipientEncoding)
                } else {
                    guard let bytes = FileManager.default.contents(atPath: IdentityCommand.recipientPath) else {
                        throw CLIError.message(
                            "no identity: '\(IdentityCommand.recipientPath)' does not exist; run 'vault identity new' or pass --identity FILE",
                            exitCode: Exit.notFound)
                    }
                    recipients = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).map(String.init)
                }
                recipients = recipients.filter { !$0.isEmpty }
                if json {
                    try writeJSON(["recipients": recipients])
                } else {
                    for recipient in recipients { try writeToStdout(recipient + "\n") }
                }
            }
        }
    }
}
