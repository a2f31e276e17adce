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

    /// `vault recipients add RECIPIENT... [-R FILE] [--label L]`.
    package struct Add: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            abstract: "Wrap the vault's key for more recipients (the key is kept: whoever opened the vault still does).",
            discussion: """
                Through the agent when it holds the vault unlocked: no passphrase is asked. With --label, the recipient (one) is known by that label: 'list' shows it, 'remove' takes it in place of the key. Labels are sealed in the vault (the file shows no name), and a recipient already present takes the label given.
                """)

        @Argument(help: ArgumentHelp("age recipients (age1..., or post-quantum age1pq1...: never both kinds in one vault).", valueName: "recipient"))
        var recipients: [String] = []

        @Option(
            name: [.customShort("R"), .customLong("recipients-file")],
            help: ArgumentHelp("Add the recipients of this file too (one per line; empty lines and # comments skipped), as age -R reads it.", valueName: "path"))
        var recipientsFiles: [String] = []

        @Option(help: ArgumentHelp("A label for the one recipient given (who it is: alice@laptop), 1 to 64 bytes, not age1...; sealed in the vault.", valueName: "label"))
        var label: String?

        @OptionGroup var options: VaultOptions

        package func validate() throws {
            if recipients.isEmpty && recipientsFiles.isEmpty {
                throw ValidationError("give at least one recipient (age1...) or -R FILE")
            }
            if let label {
                guard RecipientLabel.isValid(label) else {
                    throw ValidationError("a label is 1 to \(ReplicaName.maximumByteCount) bytes without control characters, not starting with 'age1'")
                }
                guard recipients.count == 1, recipientsFiles.isEmpty else { throw ValidationError("--label names one recipient: give exactly one") }
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
                let texts = parsed.map(\.description)
                // age's rule, on the header before any key is asked for, and again under the write lock.
                let store = options.makeStore()
                let before = Self.recipientsBeforeOpening(store, options)
                try MixedRecipients.check(adding: texts, to: before, path: store.path)
                let added: [String], present: [String], listing: RecipientEdits.Listing
                if let held = try RecipientsThroughAgent.listing(options, involving: texts + before) {
                    // Held by the agent: no passphrase asked.
                    try Self.checkLabelFree(label, for: texts, in: held.listing, path: store.path)
                    guard let answer = try held.client.recipients(.add(texts, label: label), at: options.resolvedPath) else {
                        throw AgentError.locked(path: options.resolvedPath)
                    }
                    added = answer.changed
                    present = texts.filter { !added.contains($0) }.reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
                    listing = answer.listing
                } else {
                    let vault = try openDocumentVault(options)
                    defer { vault.close() }
                    try Self.checkLabelFree(label, for: texts, in: RecipientEdits.listing(of: vault), path: vault.path)
                    (added, present) = try RecipientEdits.add(parsed, label: label, to: vault) { adding, current in
                        try MixedRecipients.check(adding: adding, to: current, path: vault.path)
                    }
                    listing = RecipientEdits.listing(of: vault)
                }
                if options.json {
                    var object: [String: Any] = ["path": store.path, "added": added, "already_present": present, "recipients": listing.recipients]
                    if !listing.labels.isEmpty { object["labels"] = listing.labels }
                    try writeJSON(object)
                } else {
                    let labelled = label.map { " (\(TerminalText.escaped($0)))" } ?? ""
                    for recipient in added { try writeToStdout("added recipient \(recipient)\(labelled)\n") }
                    for recipient in present {
                        try writeToStdout("recipient \(recipient) was already present" + (label == nil ? "" : "; labelled\(labelled)") + "\n")
                    }
                }
            }
        }

        /// Refuses `label` when another recipient than the one given has it (`remove LABEL` must name one key).
        static func checkLabelFree(_ label: String?, for recipients: [String], in listing: RecipientEdits.Listing, path: String) throws {
            guard let label, let other = listing.recipients(labelled: label).first(where: { !recipients.contains($0) }) else { return }
            throw CLIError.message(
                "recipient \(other) of vault '\(path)' is labelled '\(TerminalText.escaped(label))' already: give another label",
                exitCode: Exit.usage)
        }
    }

    /// `vault recipients list [--json]`.
    package struct List: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            abstract: "List the vault's recipients, one a line, with their labels when the vault is at hand.",
            discussion: """
                The keys are read from the vault's header (no key needed, nothing authenticated). The labels are sealed in the vault: they are shown when the agent holds it unlocked, or with --identity; else the keys alone, and a note on stderr says how to see them.
                """)

        @OptionGroup var options: VaultOptions

        package func run() throws {
            try reportingErrors(json: options.json) {
                let store = try options.existingStore()
                let header = try VaultOpener.header(path: store.path, options: options.storeOptions)
                var labels: [String: String]?
                if let held = try RecipientsThroughAgent.listing(options, involving: header.recipients) {
                    labels = held.listing.labels
                } else if options.identityPath != nil, !header.recipients.isEmpty {
                    let vault = try openDocumentVault(options)
                    defer { vault.close() }
                    labels = vault.recipientLabels
                }
                if options.json {
                    var object: [String: Any] = ["path": store.path, "passphrase": header.hasPassphraseStanza, "recipients": header.recipients]
                    if let labels { object["labels"] = labels }
                    try writeJSON(object)
                } else if header.recipients.isEmpty {
                    // On stderr: stdout holds recipients only, one a line, for a script that reads them.
                    writeToStderr("no recipients: only the passphrase opens '\(TerminalText.escaped(store.path))' ('vault recipients add' adds one)\n")
                } else {
                    for recipient in header.recipients {
                        try writeToStdout(recipient + (labels?[recipient].map { " " + TerminalText.escaped($0) } ?? "") + "\n")
                    }
                    if labels == nil && header.hasRecipientLabels {
                        writeToStderr("vault: the recipients' labels are sealed in the vault: 'vault unlock' (or --identity) shows them\n")
                    }
                }
            }
        }
    }
}

/// `vault recipients` through the agent, when it holds the vault unlocked: nothing asked for a list or an addition.
enum RecipientsThroughAgent {
    /// The agent's connection and listing of the vault named by `options`, or `nil` when the verb opens the vault
    /// itself: no agent, the vault not unlocked there, `--accept-rollback`, post-quantum recipients among `recipients`
    /// (an agent started by `vault` does not link their code), or an agent that predates the operation.
    static func listing(_ options: VaultOptions, involving recipients: [String]) throws -> (client: AgentClient, listing: RecipientEdits.Listing)? {
        guard !options.acceptRollback, !recipients.contains(where: { AgeKeys.isPostQuantum(recipient: $0) }),
              let client = (try? AgentClient.connect()) ?? nil
        else { return nil }
        do {
            guard let answer = try client.recipients(.list, at: options.resolvedPath) else { return nil }
            return (client, answer.listing)
        } catch let error as AgentError {
            switch error {
            case .remote, .versionMismatch, .timedOut, .connection, .protocolError: return nil  // an older or broken agent: not used
            default: throw error
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
        let data = try Posix.readFile(path, limit: 16 << 20)
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
