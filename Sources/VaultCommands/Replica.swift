import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCore
import VaultTerminal

/// `vault replica name [NAME]`: the name this machine's copy of the vault (its replica) goes by in `history`, `show`
/// and merge reports: `user@host` at first, changed here; stored in the vault (docs/FORMAT.md, "Replica names") so
/// that every machine shows it.
package struct ReplicaCommand: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "replica",
        abstract: "Show or change the name this machine's copy of the vault goes by in history, show and merge reports.",
        discussion: """
            Each machine (and user) writes to a vault as a replica of its own: the id that stamps its changes. A replica is named user@host when it first writes; 'vault replica name NEW' changes the name this machine goes by (1 to 64 bytes, no control characters). The name is stored in the vault, sealed like its entries, and reaches other machines with the next sync or merge; 'vault history NAME' shows who made each version, and a merge names the machine whose change won.
            """,
        subcommands: [Name.self], defaultSubcommand: Name.self)

    package struct Name: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            commandName: "name",
            abstract: "Print the name this machine's replica goes by, or change it to NEW (written to the vault at once).")

        @OptionGroup var options: VaultOptions

        @Argument(help: ArgumentHelp("The new name (e.g. alice@laptop).", valueName: "new"))
        var new: String?

        package func validate() throws {
            if let new, !ReplicaName.isValid(new) {
                throw ValidationError("a replica's name is 1 to \(ReplicaName.maximumByteCount) bytes without control characters")
            }
        }

        package func run() throws {
            try reportingErrors(json: options.json) {
                let path = options.resolvedPath
                let header = try VaultOpener.header(path: path, options: options.storeOptions)
                let directory = options.storeOptions.rollbackProtection?.stateDirectory
                guard let new else {
                    let name = ReplicaRegistry.name(for: header.vaultID, stateDirectory: directory)
                    if options.json { try writeJSON(["name": name, "path": path]) } else { try writeToStdout(name + "\n") }
                    return
                }
                guard let directory else {
                    throw CLIError.message("cannot name this machine's replica: no state directory (rollback protection is off)", exitCode: Exit.failure)
                }
                try ReplicaRegistry.setName(new, for: header.vaultID, stateDirectory: directory)
                // Written now (an empty batch: every write gives this replica the name it goes by), here or through the agent.
                try withVault(options) { vault in try vault.requiringFields().apply([]) }
                if options.json {
                    try writeJSON(["name": new, "path": path])
                } else {
                    try writeToStdout("this machine's replica of '\(TerminalText.escaped(path))' is now named '\(TerminalText.escaped(new))'\n")
                }
            }
        }
    }
}
