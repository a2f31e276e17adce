import ArgumentParser
import FoundationEssentials
import Glibc
import VaultAge
import VaultAgent
import VaultCore
import VaultTerminal

// Sharing a version-2 vault with age recipients (issue 20; docs/FORMAT.md, "The x25519 stanza").

/// `vault recipients`: who else opens the vault, by their age public key.
package struct Recipients: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "recipients",
        abstract: "Share the vault with age recipients (age1... keys, e.g. from age-keygen): add, remove, list.",
        discussion: """
            A recipient opens the vault with its identity file (--identity FILE or VAULT_IDENTITY), with no passphrase, and reads and writes it as the owner does. The vault's passphrase keeps working. Removing a recipient makes a new data key and seals the vault again under it: the removed identity opens no later version (what it already copied, it keeps).
            """,
        subcommands: [Add.self, Remove.self, List.self])

    /// `vault recipients add RECIPIENT... [-R FILE]`.
    package struct Add: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            abstract: "Wrap the vault's key for more recipients (the key is kept: whoever opened the vault still does).")

        @OptionGroup var options: VaultOptions

        @Argument(help: ArgumentHelp("age recipients (age1...).", valueName: "recipient"))
        var recipients: [String] = []

        @Option(
            name: [.customShort("R"), .customLong("recipients-file")],
            help: ArgumentHelp("Add the recipients of this file too (one per line; empty lines and # comments skipped), as age -R reads it.", valueName: "path"))
        var recipientsFiles: [String] = []

        package func validate() throws {
            if recipients.isEmpty && recipientsFiles.isEmpty {
                throw ValidationError("give at least one recipient (age1...) or -R FILE")
            }
        }

        package func run() throws {
            try reportingErrors(json: options.json) {
                // Every recipient checked before the vault is opened: a bad one writes nothing.
                var parsed = try recipients.enumerated().map { index, text in
                    try RecipientArgument.parse(text, source: "recipient \(index + 1)")
                }
                for file in recipientsFiles { parsed += try RecipientArgument.parseFile(file) }
                let vault = try openDocumentVault(options)
                defer { vault.close() }
                var added: [String] = [], present: [String] = []
                try vault.setRecipients { current, dataKey in
                    var stanzas = current
                    added = []
                    present = []
                    for recipient in parsed {
                        let text = recipient.description
                        if stanzas.contains(where: { $0.recipient == text }) {
                            if !present.contains(text) { present.append(text) }
                            continue
                        }
                        stanzas.append(try VaultRecipientStanza.wrap(dataKey, for: recipient))
                        added.append(text)
                    }
                    return stanzas
                }
                if options.json {
                    try writeJSON(["path": vault.path, "added": added, "already_present": present, "recipients": vault.recipients])
                } else {
                    for recipient in added { try writeToStdout("added recipient \(recipient)\n") }
                    for recipient in present { try writeToStdout("recipient \(recipient) was already present\n") }
                }
            }
        }
    }

    /// `vault recipients remove RECIPIENT`.
    package struct Remove: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            abstract: "Remove a recipient and rotate the vault's key (a new key, every other stanza wrapped again, the vault sealed again).",
            discussion: """
                A vault with a passphrase asks for it (the new key is wrapped for it again; other passphrase stanzas, if any, are dropped); a vault without one is opened with --identity. The old key is retired here: a copy under it is refused (--accept-rollback to take it anyway). Every other recipient keeps access; the vault locks in the agent.
                """)

        @OptionGroup var options: VaultOptions

        @Argument(help: ArgumentHelp("The recipient to remove (age1...).", valueName: "recipient"))
        var recipient: String

        package func run() throws {
            try reportingErrors(json: options.json) {
                let removed = try RecipientArgument.parse(recipient, source: "recipient 1").description
                let store = try options.existingStore()
                let header = try VaultOpener.header(path: store.path, options: options.storeOptions)
                guard header.recipients.contains(removed) else {
                    throw CLIError.message("vault '\(store.path)' has no recipient \(removed)", exitCode: Exit.notFound)
                }
                guard header.hasPassphraseStanza || header.recipients.count > 1 else {
                    throw CLIError.message(
                        "cannot remove \(removed): it is the only key of vault '\(store.path)' (no passphrase, no other recipient)",
                        exitCode: Exit.usage)
                }
                // The passphrase stanza is wrapped again for the new key: with a passphrase that opens it now.
                let vault: DocumentVault
                var passphrase: SecureBytes?
                if header.hasPassphraseStanza {
                    var withoutIdentity = options
                    withoutIdentity.identityFile = nil
                    vault = try withPassphraseRetries(withoutIdentity) { given in
                        let opened = try VaultOpener.open(path: store.path, passphrase: given, options: options.storeOptions)
                        guard let document = opened as? DocumentVault else {
                            opened.close()
                            throw VaultError.needsVersion2(path: store.path)
                        }
                        passphrase = given
                        return document
                    }
                } else {
                    vault = try openDocumentVault(options)
                }
                defer { vault.close() }
                try vault.rotateKey(passphrase: passphrase) { current, newKey in
                    try current.filter { $0.recipient != removed }.map { stanza in
                        try VaultRecipientStanza.wrap(newKey, for: try AgeRecipient(parsing: stanza.recipient))
                    }
                }
                // The agent holds the old key, now retired: locked, so the next command opens with the new one.
                if let client = try? AgentClient.connect() { _ = try? client.lock(path: store.path) }
                if options.json {
                    try writeJSON(["path": vault.path, "removed": removed, "recipients": vault.recipients, "key_rotated": true])
                } else {
                    try writeToStdout("removed recipient \(removed); the vault's key was rotated\n")
                }
            }
        }
    }

    /// `vault recipients list [--json]`.
    package struct List: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            abstract: "List the vault's recipients (read from its header: no key needed, nothing authenticated).")

        @OptionGroup var options: VaultOptions

        package func run() throws {
            try reportingErrors(json: options.json) {
                let store = try options.existingStore()
                let header = try VaultOpener.header(path: store.path, options: options.storeOptions)
                if options.json {
                    try writeJSON(["path": store.path, "passphrase": header.hasPassphraseStanza, "recipients": header.recipients])
                } else {
                    for recipient in header.recipients { try writeToStdout(recipient + "\n") }
                }
            }
        }
    }
}

/// The vault named by `options`, opened here (never through the agent: its key stanzas change), as version 2.
func openDocumentVault(_ options: VaultOptions) throws -> DocumentVault {
    let vault = try openStore(options)
    guard let document = vault as? DocumentVault else {
        vault.close()
        throw VaultError.needsVersion2(path: vault.path)
    }
    return document
}

/// Recipients from the command line and from recipient files, each checked as age checks one.
enum RecipientArgument {
    /// `text` as an X25519 recipient; `source` names it in the error ("recipient 2", "'team.txt' line 3").
    static func parse(_ text: String, source: String) throws -> AgeRecipient {
        do {
            return try AgeRecipient(parsing: text)
        } catch {
            throw InvalidRecipient(source: source, text: text, reason: error)
        }
    }

    /// The recipients of an age recipients file: one per line, empty lines and lines starting with `#` skipped.
    static func parseFile(_ path: String) throws -> [AgeRecipient] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw VaultError.io(operation: "cannot read", path: path, errno: errno == 0 ? ENOENT : errno)
        }
        var recipients: [AgeRecipient] = []
        for (number, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
            if text.isEmpty || text.hasPrefix("#") { continue }
            recipients.append(try parse(text, source: "'\(path)' line \(number + 1)"))
        }
        return recipients
    }
}

/// A recipient that is not an age X25519 recipient: usage (exit code 64), nothing written.
struct InvalidRecipient: Error, CLIReportable, CustomStringConvertible {
    let source: String
    let text: String
    let reason: AgeError
    var description: String {
        "\(source) '\(TerminalText.escaped(String(text.prefix(100))))' is not an age recipient: \(reason)"
    }
    var exitCode: Int32 { Exit.usage }
    var code: String { "invalid_recipient" }
    var hint: String? { "a recipient is an age1... public key, as 'age-keygen -y key.txt' prints it" }
}
