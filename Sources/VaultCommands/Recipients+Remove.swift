import ArgumentParser
import FoundationEssentials
import Glibc
import VaultAge
import VaultAgent
import VaultCore
import VaultTerminal

/// `vault recipients remove` (Recipients.swift has the verb and its other sub-verbs).
extension Recipients {
    /// `vault recipients remove RECIPIENT|LABEL`.
    package struct Remove: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            abstract: "Remove a recipient and rotate the vault's key (a new key, wrapped again for each other recipient and the passphrase, the vault sealed again).",
            discussion: """
                The new key is wrapped for the vault's passphrase again (other passphrases, if any, are dropped): nothing is asked when the agent holds the vault unlocked with its passphrase (it keeps the key the passphrase gave, never the passphrase), else the passphrase is asked; a vault without one is opened with --identity, or through the agent with nothing asked. The old key is retired here: a copy under it is refused (--accept-rollback to take it anyway). Every other recipient keeps access; the agent keeps the vault unlocked under its new key when it did the removal, and locks it otherwise.

                The removed key could read every entry the vault had while it was a recipient, and may have kept a copy: the report says how many entries the vault has (--list names them), whose secrets should be changed where they are used (a new password, a new token).
                """)

        @Argument(help: ArgumentHelp("The recipient to remove: its key (age1... or age1pq1...) or its label.", valueName: "recipient"))
        var recipient: String

        @Flag(help: "Also list the entries the removed key could read (their names, never values).")
        var list = false

        @OptionGroup var options: VaultOptions

        package func run() throws {
            try reportingErrors(json: options.json) {
                let store = try options.existingStore()
                let header = try VaultOpener.header(path: store.path, options: options.storeOptions)
                let byKey = recipient.hasPrefix("age1")
                // A key is checked before any passphrase is asked; a label is known once the vault is open.
                let given = byKey ? try RecipientArgument.parse(recipient, source: "recipient 1").description : nil
                if let given { try Self.check(given, in: header.recipients, hasPassphrase: header.hasPassphraseStanza, path: store.path) }
                let removed: String, exposed: [String], recipientsAfter: [String], label: String?
                if let held = try RecipientsThroughAgent.listing(options, involving: header.recipients) {
                    removed = try given ?? Self.resolve(recipient, in: held.listing, path: store.path)
                    try Self.check(removed, in: held.listing.recipients, hasPassphrase: held.listing.hasPassphrase, path: store.path)
                    label = held.listing.labels[removed]
                    // Unlocked with the passphrase, the agent wraps the new key for it: nothing asked. Else (unlocked
                    // with an identity, or the passphrase changed since) it says so, and the passphrase is asked. A
                    // passphrase given (a file, a descriptor) is sent and checked, as it would be without the agent.
                    func removing(_ passphrase: SecureBytes?) throws -> AgentClient.RecipientsAnswer? {
                        try Self.reencrypting { try held.client.recipients(.remove(removed, passphrase: passphrase), at: options.resolvedPath) }
                    }
                    var withoutIdentity = options
                    withoutIdentity.identityFile = nil
                    let answer: AgentClient.RecipientsAnswer?
                    if held.listing.hasPassphrase && options.hasPassphraseSource {
                        answer = try withPassphraseRetries(withoutIdentity, removing)
                    } else {
                        do {
                            answer = try removing(nil)
                        } catch VaultError.wrongPassphrase where held.listing.hasPassphrase {
                            answer = try withPassphraseRetries(withoutIdentity, removing)
                        }
                    }
                    guard let answer else { throw AgentError.locked(path: options.resolvedPath) }
                    (exposed, recipientsAfter) = (answer.changed, answer.listing.recipients)
                } else {
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
                    let listing = RecipientEdits.listing(of: vault)
                    removed = try given ?? Self.resolve(recipient, in: listing, path: store.path)
                    try Self.check(removed, in: listing.recipients, hasPassphrase: listing.hasPassphrase, path: store.path)
                    label = listing.labels[removed]
                    // Sealing every entry under the new key: a bar on a terminal (a large vault), nothing when piped.
                    var bar: ProgressBar?
                    exposed = try RecipientEdits.remove(removed, passphrase: passphrase, from: vault, passphraseVerified: true) { done, total in
                        if bar == nil { bar = ProgressBar.onTerminal("re-encrypting", total: total) }
                        bar?.advance(to: done)
                    }
                    bar?.finish()
                    recipientsAfter = vault.recipients
                    // The agent holds the old key, now retired: locked, so the next command opens with the new one.
                    if let client = try? AgentClient.connect() { _ = try? client.lock(path: store.path) }
                }
                if options.json {
                    var object: [String: Any] = [
                        "path": store.path, "removed": removed, "recipients": recipientsAfter, "key_rotated": true, "exposed_count": exposed.count,
                    ]
                    if list { object["exposed"] = exposed }
                    if let label { object["label"] = label }
                    try writeJSON(object)
                } else {
                    // Its label, as it is known, with the key (walkthrough finding 12).
                    let named = label.map { "\(TerminalText.escaped($0)) (\(removed))" } ?? removed
                    var text = "removed recipient \(named); the vault's key was rotated\n"
                    if !exposed.isEmpty {
                        let count = exposed.count == 1 ? "the 1 entry" : "all \(exposed.count) entries"
                        text += "the removed key could read \(count) of this vault (and may have kept a copy): change those secrets where they are used"
                            + (list ? ":\n" + exposed.map { "  \(TerminalText.escaped($0))\n" }.joined() : " ('--list' names them)\n")
                    }
                    try writeToStdout(text)
                }
            }
        }

        /// The agent's removal (it seals every entry again: under 0.3 s for 50,000 entries, measured), with a line on a
        /// terminal's stderr only while it takes longer than half a second (``WaitingLine``); nothing when piped.
        static func reencrypting<T>(_ call: () throws -> T) rethrows -> T {
            try WaitingLine.during("re-encrypting...", call)
        }

        /// Refuses to remove `removed` when the vault does not have it, or when it is the vault's only key.
        static func check(_ removed: String, in recipients: [String], hasPassphrase: Bool, path: String) throws {
            guard recipients.contains(removed) else {
                throw CLIError.message("vault '\(path)' has no recipient \(removed)", exitCode: Exit.notFound)
            }
            guard hasPassphrase || recipients.count > 1 else {
                throw CLIError.message(
                    "cannot remove \(removed): it is the only key of vault '\(path)' (no passphrase, no other recipient)",
                    exitCode: Exit.usage)
            }
        }

        /// The recipient labelled `label`: exactly one (two machines may have given one label to two keys: the key
        /// then decides).
        static func resolve(_ label: String, in listing: RecipientEdits.Listing, path: String) throws -> String {
            let matches = listing.recipients(labelled: label)
            guard let first = matches.first else {
                throw CLIError.message("vault '\(path)' has no recipient labelled '\(TerminalText.escaped(label))'", exitCode: Exit.notFound)
            }
            guard matches.count == 1 else {
                throw CLIError.message(
                    "\(matches.count) recipients of vault '\(path)' are labelled '\(TerminalText.escaped(label))' (\(matches.joined(separator: ", "))): give the key",
                    exitCode: Exit.usage)
            }
            return first
        }
    }
}
