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
        abstract: "Share the vault with age recipients (age1... keys from age-keygen, or post-quantum age1pq1...): add, remove, list.",
        discussion: """
            A recipient opens the vault with its identity file (--identity FILE or VAULT_IDENTITY), with no passphrase, and reads and writes it as the owner does. The vault's passphrase keeps working. Removing a recipient makes a new data key and seals the vault again under it: the removed identity opens no later version (what it already copied, it keeps). Post-quantum recipients (age1pq1..., from age-keygen -pq or 'vault identity new --pq') and X25519 ones (age1...) are never mixed in one vault (age's rule); vault runs vault-net for them.
            """,
        subcommands: [Add.self, Remove.self, List.self])

    /// `vault recipients add RECIPIENT... [-R FILE]`.
    package struct Add: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            abstract: "Wrap the vault's key for more recipients (the key is kept: whoever opened the vault still does).")

        @Argument(help: ArgumentHelp("age recipients (age1..., or post-quantum age1pq1...: never both kinds in one vault).", valueName: "recipient"))
        var recipients: [String] = []

        @Option(
            name: [.customShort("R"), .customLong("recipients-file")],
            help: ArgumentHelp("Add the recipients of this file too (one per line; empty lines and # comments skipped), as age -R reads it.", valueName: "path"))
        var recipientsFiles: [String] = []

        @OptionGroup var options: VaultOptions

        package func validate() throws {
            if recipients.isEmpty && recipientsFiles.isEmpty {
                throw ValidationError("give at least one recipient (age1...) or -R FILE")
            }
        }

        /// The vault's recipients as its header lists them, before it is opened (none when it cannot be read: the
        /// open reports why).
        static func recipientsBeforeOpening(_ store: SecureKeyValueStore, _ options: VaultOptions) -> [String] {
            guard store.exists, (try? store.checkAccess()) != nil,
                  let header = try? VaultOpener.header(path: store.path, options: options.storeOptions)
            else { return [] }
            return header.recipients
        }

        package func run() throws {
            try reportingErrors(json: options.json) {
                // Every recipient checked before the vault is opened: a bad one writes nothing.
                var parsed = try recipients.enumerated().map { index, text in
                    try RecipientArgument.parse(text, source: "recipient \(index + 1)")
                }
                for file in recipientsFiles { parsed += try RecipientArgument.parseFile(file) }
                // age's rule, on the header before any key is asked for, and again under the write lock.
                let store = options.makeStore()
                try MixedRecipients.check(
                    adding: parsed.map(\.description), to: Self.recipientsBeforeOpening(store, options), path: store.path)
                let vault = try openDocumentVault(options)
                defer { vault.close() }
                var added: [String] = [], present: [String] = []
                try vault.setRecipients { current, dataKey in
                    try MixedRecipients.check(adding: parsed.map(\.description), to: current.map(\.recipient), path: vault.path)
                    var stanzas = current
                    added = []
                    present = []
                    for recipient in parsed {
                        let text = recipient.description
                        if stanzas.contains(where: { $0.recipient == text }) {
                            if !present.contains(text) { present.append(text) }
                            continue
                        }
                        stanzas.append(try recipient.wrapStanza(dataKey))
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

                The removed key could read every entry the vault had while it was a recipient, and may have kept a copy: the report says how many entries the vault has (--list names them), whose secrets should be changed where they are used (a new password, a new token).
                """)

        @Argument(help: ArgumentHelp("The recipient to remove (age1... or age1pq1...).", valueName: "recipient"))
        var recipient: String

        @Flag(help: "Also list the entries the removed key could read (their names, never values).")
        var list = false

        @OptionGroup var options: VaultOptions

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
                // What the removed key could read: every entry, as the vault is now (and any deleted since it came).
                let exposed = try vault.keys()
                try vault.rotateKey(passphrase: passphrase, reason: .recipientRemoval) { current, newKey in
                    try current.filter { $0.recipient != removed }.map { stanza in
                        try AgeKeys.recipient(parsing: stanza.recipient).wrapStanza(newKey)
                    }
                }
                // The agent holds the old key, now retired: locked, so the next command opens with the new one.
                if let client = try? AgentClient.connect() { _ = try? client.lock(path: store.path) }
                if options.json {
                    var object: [String: Any] = [
                        "path": vault.path, "removed": removed, "recipients": vault.recipients, "key_rotated": true, "exposed_count": exposed.count,
                    ]
                    if list { object["exposed"] = exposed }
                    try writeJSON(object)
                } else {
                    var text = "removed recipient \(removed); the vault's key was rotated\n"
                    if !exposed.isEmpty {
                        let count = exposed.count == 1 ? "the 1 entry" : "all \(exposed.count) entries"
                        text += "the removed key could read \(count) of this vault (and may have kept a copy): change those secrets where they are used"
                            + (list ? ":\n" + exposed.map { "  \(TerminalText.escaped($0))\n" }.joined() : " ('--list' names them)\n")
                    }
                    try writeToStdout(text)
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
                } else if header.recipients.isEmpty {
                    // On stderr: stdout holds recipients only, one a line, for a script that reads them.
                    writeToStderr("no recipients: only the passphrase opens '\(TerminalText.escaped(store.path))' ('vault recipients add' adds one)\n")
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
    /// `text` as an X25519 (`age1…`) or post-quantum (`age1pq1…`, in vault-net) recipient; `source` names it in the
    /// error ("recipient 2", "'team.txt' line 3").
    static func parse(_ text: String, source: String) throws -> any AgeStanzaRecipient {
        do {
            return try AgeKeys.recipient(parsing: text)
        } catch {
            throw InvalidRecipient(source: source, text: text, reason: error)
        }
    }

    /// The recipients of an age recipients file: one per line, empty lines and lines starting with `#` skipped.
    static func parseFile(_ path: String) throws -> [any AgeStanzaRecipient] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw VaultError.io(operation: "cannot read", path: path, errno: errno == 0 ? ENOENT : errno)
        }
        var recipients: [any AgeStanzaRecipient] = []
        for (number, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
            if text.isEmpty || text.hasPrefix("#") { continue }
            recipients.append(try parse(text, source: "'\(path)' line \(number + 1)"))
        }
        return recipients
    }
}

/// A recipient that is not an age recipient of either kind: usage (exit code 64), nothing written.
struct InvalidRecipient: Error, CLIReportable, CustomStringConvertible {
    let source: String
    let text: String
    let reason: AgeError
    var description: String {
        "\(source) '\(TerminalText.escaped(String(text.prefix(100))))' is not an age recipient: \(reason)"
    }
    var exitCode: Int32 { Exit.usage }
    var code: String { "invalid_recipient" }
    var hint: String? { "a recipient is an age1... (or age1pq1...) public key, as 'age-keygen -y key.txt' prints it" }
}

/// Post-quantum and X25519 recipients in one vault: refused (age's rule, docs/FORMAT.md "The mlkem768x25519
/// stanza": a vault also wrapped for a classic key is no stronger than that key). A usage error (exit code 64, as
/// for any argument the command cannot take), nothing written. Decided on the recipients' prefixes alone, so
/// `vault` refuses it without vault-net's post-quantum code.
struct MixedRecipients: Error, CLIReportable, CustomStringConvertible {
    let path: String
    /// Whether the recipient refused is post-quantum.
    let addingPostQuantum: Bool
    /// Whether the clash is among the recipients given (else with the vault's).
    let amongArguments: Bool

    /// Refuses `adding` when its recipients are of both kinds, or of the other kind than `existing` (the vault's).
    static func check(adding: [String], to existing: [String], path: String) throws {
        let kinds = Set(adding.map { AgeKeys.isPostQuantum(recipient: $0) })
        if kinds.count > 1 { throw MixedRecipients(path: path, addingPostQuantum: true, amongArguments: true) }
        guard let addingPostQuantum = kinds.first, let first = existing.first else { return }
        if addingPostQuantum != AgeKeys.isPostQuantum(recipient: first) {
            throw MixedRecipients(path: path, addingPostQuantum: addingPostQuantum, amongArguments: false)
        }
    }

    var description: String {
        if amongArguments {
            return "cannot add post-quantum (age1pq1...) and X25519 (age1...) recipients to vault '\(path)' together"
        }
        return addingPostQuantum
            ? "cannot add a post-quantum recipient (age1pq1...) to vault '\(path)': it has X25519 recipients (age1...)"
            : "cannot add an X25519 recipient (age1...) to vault '\(path)': it has post-quantum recipients (age1pq1...)"
    }
    var exitCode: Int32 { Exit.usage }
    var code: String { "mixed_recipients" }
    var hint: String? {
        "a vault's recipients are all post-quantum or all X25519 (age's rule); remove the other kind first ('vault recipients remove')"
    }
}
