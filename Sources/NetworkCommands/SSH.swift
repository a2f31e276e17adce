import ArgumentParser
import Foundation
import VaultAgent
import VaultCommands
import VaultCore
import VaultSSH
import VaultTerminal

/// `vault ssh`: ssh keys kept as entries (VaultSSH's ``SSHEntry``), and the agent's ssh-agent socket
/// (docs/SSH-AGENT.md). It runs in `vault-net`: ECDSA, RSA and AES-CTR come from swift-crypto.
package struct SSHCommand: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "ssh",
        abstract: RoutedVerb.named("ssh").abstract,
        subcommands: [Import.self, Generate.self, Public.self, List.self, Socket.self, Env.self])
}

package enum KeyPassphraseSecret: SecretSourceName {
    package static let optionName = "key-passphrase"
    package static let secret = "the key file's passphrase (asked on the terminal otherwise, once, and only for an encrypted key)"
}

/// The options of a key's placement: where it is offered, whether a forwarded connection may use it, whether each
/// signature asks first.
struct SSHKeyUseOptions: ParsableArguments {
    @Option(name: .customLong("host"), help: ArgumentHelp("Offer the key to hosts matching this ssh_config pattern only (repeatable: github.com, *.corp, [10.0.0.5]:2222).", valueName: "pattern"))
    var hosts: [String] = []

    @Flag(help: "Let a forwarded agent connection (ssh -A) use the key (default: not).")
    var forward = false

    @Flag(help: "Ask through SSH_ASKPASS before each signature with the key.")
    var confirm = false

    func validate() throws {
        for host in hosts where host.isEmpty || host.contains(where: { $0 == "," || $0.isWhitespace }) {
            throw ValidationError("--host takes one pattern without spaces or commas")
        }
    }

    /// The field changes for what was given.
    func changes(entry: String) -> [DocumentChange] {
        var changes: [DocumentChange] = []
        if !hosts.isEmpty { changes.append(.setField(entry: entry, field: SSHEntry.hostsField, value: Self.bytes(hosts.joined(separator: ",")), secret: false)) }
        if forward { changes.append(.setField(entry: entry, field: SSHEntry.forwardField, value: Self.bytes("yes"), secret: false)) }
        if confirm { changes.append(.setField(entry: entry, field: SSHEntry.confirmField, value: Self.bytes("yes"), secret: false)) }
        return changes
    }

    static func bytes(_ text: String) -> SecureBytes { SecureBytes(count: text.utf8.count) { $0.copyBytes(from: Array(text.utf8)) } }
}

/// Stores `key` as entry `name` in one write: its fields, and `use`'s. Unless `replace`, the entry must not exist.
func store(_ key: SSHPrivateKey, as name: String, use: SSHKeyUseOptions, replace: Bool, options: VaultOptions) throws {
    let privateText = OpenSSHKeyFile.write(key)
    try withVault(options) { vault in
        let fields = try vault.requiringFields()
        if !replace, try fields.contains(name) { throw VaultError.entryExists(key: name, path: vault.path) }
        try fields.apply((replace ? [] : [.require(entry: name, exists: false)]) + [
            .setField(entry: name, field: SSHEntry.privateKeyField, value: privateText, secret: true),
            .setField(entry: name, field: SSHEntry.publicKeyField, value: SSHKeyUseOptions.bytes(key.publicKey.line(comment: key.comment)), secret: false),
            .setField(entry: name, field: SSHEntry.commentField, value: SSHKeyUseOptions.bytes(key.comment), secret: false),
        ] + use.changes(entry: name))
    }
}

/// The ssh key of entry `name`, or the error that says why it is not one.
func sshEntry(_ name: String, in vault: any KeyValueVault) throws -> SSHEntry {
    guard let record = try vault.requiringFields().record(of: name) else { throw CLIError.missingEntry(name, in: vault) }
    guard let entry = SSHEntry(record) else {
        throw CLIError.message("'\(TerminalText.escaped(name))' is not an ssh key (no private_key and public_key fields)", exitCode: Exit.failure)
    }
    return entry
}

extension SSHCommand {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Store an ssh private key (OpenSSH's format, encrypted or not, or PEM/PKCS#8) as entry NAME.",
            discussion: "FILE, or stdin without one. An encrypted key's passphrase is asked once (on the terminal, or --key-passphrase-fd/-file); the vault keeps the key unencrypted under its own encryption. Fields: private_key (secret), public_key, comment, and hosts/forward/confirm when given.")

        @Argument(help: "The entry's name.") var name: String
        @Argument(help: "The key file (default: stdin).") var file: String?
        @OptionGroup var keyPassphrase: SecretSourceOptions<KeyPassphraseSecret>
        @OptionGroup var use: SSHKeyUseOptions
        @Option(help: ArgumentHelp("The key's comment, instead of the file's.", valueName: "text")) var comment: String?
        @Flag(help: "Replace the key of an existing entry NAME.") var force = false
        @OptionGroup var options: VaultOptions

        func run() throws {
            try reportingErrors(json: options.json) {
                try checkNameArgumentIsUTF8(name)
                try SecureKeyValueStore.validate(key: name)
                let label = file ?? "stdin"
                // Into guarded memory (a FIFO such as <(…) too), at most 1 MiB: a key has a few KiB.
                let secret: SecureBytes
                if let file {
                    let fd = Posix.retryingEINTR { open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY) }
                    guard fd >= 0 else { throw VaultError.io(operation: "cannot read", path: file, errno: errno) }
                    defer { close(fd) }
                    secret = try SecretInput.read(fd: fd, limit: 1 << 20, untilNewline: false, name: file)
                } else {
                    secret = try SecretInput.read(fd: 0, limit: 1 << 20, untilNewline: false, name: "stdin")
                }
                var key: SSHPrivateKey
                do {
                    if secret.withUnsafeBytes({ OpenSSHKeyFile.isArmored($0) }) {
                        // Read in place: its secret parts go from the guarded input to guarded regions only.
                        key = try secret.withUnsafeBytes { text in
                            try OpenSSHKeyFile.read(armored: text) {
                                try keyPassphrase.read()
                                    ?? VaultOptions.promptTwiceIfNeeded(prompt: "Passphrase for the key '\(TerminalText.escaped(label))': ", confirm: false)
                            }
                        }
                    } else {
                        // PEM and PKCS#8 are parsed from text (ordinary memory, as ssh-keygen's own files are on disk).
                        guard let text = secret.withUnsafeBytes({ String(validating: $0, as: UTF8.self) }), let pem = try PEMKey.read(text, comment: "") else {
                            throw SSHError.notAPrivateKey
                        }
                        key = pem
                    }
                } catch let error as SSHError {
                    throw SSHKeyError(file: label, error: error)
                }
                if let comment { key.comment = comment }
                try store(key, as: name, use: use, replace: force, options: options)
                if options.json {
                    try writeJSON(["name": name, "type": key.publicKey.type, "fingerprint": key.publicKey.fingerprint, "public_key": key.publicKey.line(comment: key.comment)])
                } else {
                    try writeToStdout("imported \(key.publicKey.fingerprintLine(comment: key.comment)) as '\(TerminalText.escaped(name))'\n")
                }
            }
        }
    }

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "generate", abstract: "Make a new ssh key as entry NAME and print its public key (the authorized_keys line).")

        @Argument(help: "The entry's name.") var name: String
        @Option(help: ArgumentHelp("ed25519 (the default), ecdsa (P-256) or rsa.", valueName: "type")) var type: String = "ed25519"
        @Option(help: ArgumentHelp("RSA's size: 2048, 3072 (the default) or 4096.", valueName: "bits")) var bits: Int = 3072
        @Option(help: ArgumentHelp("The key's comment (default: the entry's name).", valueName: "text")) var comment: String?
        @OptionGroup var use: SSHKeyUseOptions
        @Flag(help: "Replace the key of an existing entry NAME.") var force = false
        @OptionGroup var options: VaultOptions

        func validate() throws {
            guard SSHPrivateKey.GeneratedType(rawValue: type) != nil else { throw ValidationError("--type takes ed25519, ecdsa or rsa") }
            guard [2048, 3072, 4096].contains(bits) else { throw ValidationError("--bits takes 2048, 3072 or 4096") }
        }

        func run() throws {
            try reportingErrors(json: options.json) {
                try checkNameArgumentIsUTF8(name)
                try SecureKeyValueStore.validate(key: name)
                let key = try SSHPrivateKey.generate(SSHPrivateKey.GeneratedType(rawValue: type)!, rsaBits: bits, comment: comment ?? name)
                try store(key, as: name, use: use, replace: force, options: options)
                if options.json {
                    try writeJSON(["name": name, "type": key.publicKey.type, "fingerprint": key.publicKey.fingerprint, "public_key": key.publicKey.line(comment: key.comment)])
                } else {
                    try writeToStdout(key.publicKey.line(comment: key.comment) + "\n")
                }
            }
        }
    }

    struct Public: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "public", abstract: "Print the public key of entry NAME (its authorized_keys line).")

        @Argument(help: "The entry's name.") var name: String
        @OptionGroup var options: VaultOptions

        func run() throws {
            try reportingErrors(json: options.json) {
                try checkNameArgumentIsUTF8(name)
                let entry = try withVault(options) { try sshEntry(name, in: $0) }
                let line = entry.publicKey.line(comment: entry.comment)
                if options.json { try writeJSON(["name": name, "public_key": line, "fingerprint": entry.publicKey.fingerprint]) }
                else { try writeToStdout(line + "\n") }
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the ssh keys: name, fingerprint as 'ssh-keygen -l' prints it, hosts.")

        @OptionGroup var options: VaultOptions

        func run() throws {
            try reportingErrors(json: options.json) {
                let entries = try withVault(options) { vault in
                    let fields = try vault.requiringFields()
                    return try fields.keys().sorted().compactMap { try fields.record(of: $0).flatMap(SSHEntry.init) }
                }
                if options.json {
                    try writeJSON(entries.map { entry -> [String: Any] in
                        ["name": entry.name, "type": entry.publicKey.type, "bits": entry.publicKey.bits, "fingerprint": entry.publicKey.fingerprint,
                         "comment": entry.comment, "hosts": entry.hosts, "forward": entry.forward, "confirm": entry.confirm]
                    })
                    return
                }
                try writeToStdout(entries.map { entry in
                    var line = TerminalText.escaped(entry.name) + "  " + TerminalText.escaped(entry.publicKey.fingerprintLine(comment: entry.comment))
                    if !entry.hosts.isEmpty { line += "  hosts " + TerminalText.escaped(entry.hosts.joined(separator: ",")) }
                    if entry.forward { line += "  forward" }
                    if entry.confirm { line += "  confirm" }
                    return line + "\n"
                }.joined())
            }
        }
    }

    struct Socket: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "socket", abstract: "Print the path of the agent's ssh-agent socket (for SSH_AUTH_SOCK).")

        func run() throws {
            try reportingErrors(json: false) { try writeToStdout(AgentSocket.sshAgentPath + "\n") }
        }
    }

    struct Env: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "env", abstract: "Print the shell lines that point ssh at the agent: eval \"$(vault ssh env)\".")

        @Flag(name: .customShort("c"), help: "C shell syntax (setenv).") var cShell = false

        func run() throws {
            try reportingErrors(json: false) {
                let quoted = "'" + AgentSocket.sshAgentPath.replacingOccurrences(of: "'", with: "'\\''") + "'"
                try writeToStdout(cShell ? "setenv SSH_AUTH_SOCK \(quoted);\n" : "SSH_AUTH_SOCK=\(quoted); export SSH_AUTH_SOCK;\n")
            }
        }
    }
}

/// A key file that could not be read, at the CLI edge.
struct SSHKeyError: Error, CLIReportable {
    let file: String
    let error: SSHError

    var exitCode: Int32 { error == .passphraseRequired ? Exit.failure : Exit.usage }
    var code: String {
        switch error {
        case .wrongPassphrase: return "wrong_passphrase"
        case .unsupportedKeyType, .unsupportedCipher: return "unsupported_key"
        default: return "invalid_key"
        }
    }
    var message: String { "cannot import '\(TerminalText.escaped(file))': \(error); nothing stored" }
    var hint: String? {
        switch error {
        case .passphraseRequired: return "give the key's passphrase on a terminal or with --key-passphrase-fd"
        case .unsupportedKeyType: return "vault keeps Ed25519, ECDSA P-256 and RSA keys"
        default: return nil
        }
    }
}
