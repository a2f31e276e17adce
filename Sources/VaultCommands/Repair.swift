import ArgumentParser
import FoundationEssentials
import VaultAgent
import VaultCore
import VaultTerminal

/// `vault repair --clocks`: a vault whose clocks were taken from the future (a copy merged before such copies were
/// refused, a machine whose wall clock was set years ahead) brought back to now, values and history kept
/// (``VaultDocument/repairClocks(replica:now:)``).
package struct Repair: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "repair",
        abstract: "Bring clocks from the future back to now (--clocks), keeping every value and version.",
        discussion: """
            --clocks: every change, deletion and replica clock (a replica is one machine's copy of the vault, with its own clock) stamped more than a day ahead of this machine's clock is stamped again in the present, in the order it had, by this machine (as a new replica when this machine's own clock was among them); values, names and histories are kept. A vault that took in such a copy refuses changes to the entries stamped at the end of time (clock_exhausted), and its copies are refused by every other machine's merge (clock_ahead): run this on each machine that merged the copy, then sync. Asks for the passphrase (the vault is locked in the agent first). --dry-run says what it would change.
            """)

    @Flag(help: "Re-stamp clocks from the future (the only repair there is).")
    var clocks = false

    @Flag(help: "Say what would change, and write nothing.")
    var dryRun = false

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        guard clocks else { throw ValidationError("say what to repair: --clocks") }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            let store = try options.existingStore()
            // The agent's copy would keep writing with the clocks being repaired.
            if !dryRun, let client = try? AgentClient.connect() { _ = try? client.lock(path: store.path) }
            let vault = try openStore(options)
            defer { vault.close() }
            guard let document = vault as? DocumentVault else { throw VaultError.needsVersion2(path: vault.path) }
            let repair = try document.repairClocks(dryRun: dryRun)
            if options.json {
                try writeJSON([
                    "path": vault.path, "dry_run": dryRun, "written": !dryRun && !repair.isEmpty, "entries": repair.entries,
                    "deletions": repair.deletions, "replicas": repair.replicas.map(\.description),
                ])
                return
            }
            guard !repair.isEmpty else {
                try writeToStdout("vault '\(vault.path)' has no clock from the future: nothing to repair\n")
                return
            }
            var text = (dryRun ? "would re-stamp" : "re-stamped") + " in the present: \(repair.entries.count) entries, \(repair.deletions) deletions, \(repair.replicas.count) replica clocks\n"
            for name in repair.entries { text += "  entry: \(TerminalText.escaped(name))\n" }
            for replica in repair.replicas { text += "  replica: \(replica)\n" }
            try writeToStdout(text)
        }
    }
}
