import ArgumentParser
import FoundationEssentials
import Glibc
import VaultAgent
import VaultCore

/// `vault upgrade`: format version 1 or 2 → 3 in one atomic write (docs/FORMAT.md, "Version 2", "Version 3").
package struct Upgrade: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Convert the vault to format version 3 in one atomic write (names, values and times kept).",
        discussion: """
            From version 1: every entry gets an id, its value becomes its password field, and later changes keep a history. Asks for the passphrase (even when the agent holds the vault: the new file gets a new data key) and locks the vault in the agent first.

            From version 2: the same key and entries; the file then also records what each copy has seen (what sync needs to forget deletions safely one day) and keeps a change that lost to a deletion. A `vault` that reads version 2 but not 3 then refuses the file (unsupported version 3, exit 6): upgrade every machine first. A vault already at version 3 is left as it is.
            """)

    @OptionGroup var options: VaultOptions

    package func run() throws {
        try reportingErrors(json: options.json) {
            let store = try options.existingStore()
            // The agent would hold the version-1 view of a file that is no longer version 1.
            if let client = try? AgentClient.connect() { _ = try? client.lock(path: store.path) }
            let outcome = try withPassphraseRetries(options) {
                try VaultUpgrade.upgrade(path: store.path, passphrase: $0, options: options.storeOptions)
            }
            if options.json {
                try writeJSON([
                    "path": store.path, "upgraded": outcome.upgraded, "from_version": outcome.fromVersion,
                    "format_version": Int(DocumentFormat.currentVersion), "vault_id": outcome.vaultID.description, "entries": outcome.entryCount,
                ])
            } else if outcome.upgraded {
                let entries = outcome.entryCount == 1 ? "1 entry" : "\(outcome.entryCount) entries"
                try writeToStdout("upgraded vault '\(store.path)' from format version \(outcome.fromVersion) to \(DocumentFormat.currentVersion) (\(entries))\n")
            } else {
                try writeToStdout("vault '\(store.path)' is already format version \(DocumentFormat.currentVersion)\n")
            }
        }
    }
}
