import ArgumentParser
import FoundationEssentials
import Glibc
import VaultAgent
import VaultCore

/// `vault upgrade`: format version 1 → 2 in one atomic write (docs/FORMAT.md, "Version 2").
package struct Upgrade: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Convert the vault to format version 2 in one atomic write (names, values and times kept).",
        discussion: """
            Every entry gets an id, its value becomes its password field, and later changes keep a history. Asks for the passphrase (even when the agent holds the vault: the new file gets a new data key) and locks the vault in the agent first. A vault already at version 2 is left as it is.

            A `vault` older than this one cannot open a version-2 file: it says unsupported version 2 (exit 6).
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
                    "path": store.path, "upgraded": outcome.upgraded, "already_version_2": !outcome.upgraded,
                    "format_version": 2, "vault_id": outcome.vaultID.description, "entries": outcome.entryCount,
                ])
            } else if outcome.upgraded {
                let entries = outcome.entryCount == 1 ? "1 entry" : "\(outcome.entryCount) entries"
                try writeToStdout("upgraded vault '\(store.path)' to format version 2 (\(entries))\n")
            } else {
                try writeToStdout("vault '\(store.path)' is already format version 2\n")
            }
        }
    }
}
