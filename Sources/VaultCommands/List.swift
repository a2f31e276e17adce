import ArgumentParser
import FoundationEssentials
import Glibc
import OTPAuth
import VaultAgent
import VaultCore
import VaultTerminal

package struct List: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the entries' names (those starting with PREFIX), sorted, one a line.")

    @Argument(help: "Only the names that start with this (e.g. 'github/').", completion: NameCompletion.existingEntry)
    var prefix: String?

    @Flag(help: "List deleted entries that can be brought back ('vault restore NAME --deleted'): deleted in the last 30 days (VAULT_KEEP_DELETED days), or changed on one copy before another deleted them.")
    var deleted = false

    @OptionGroup var options: VaultOptions

    package func run() throws {
        try reportingErrors(json: options.json) {
            if let prefix { try checkNameArgumentIsUTF8(prefix) }
            try withVault(options) { vault in
                guard deleted else { return try Self.printNames(of: vault, prefix: prefix ?? "", json: options.json) }
                try Self.printDeleted(of: try vault.requiringFields(), prefix: prefix ?? "", json: options.json)
            }
        }
    }

    /// `list --deleted`: the names (one a line, as the vault keeps them: by name, newest kept change first), or with
    /// `--json` each with its id and when it was deleted and the kept change made.
    static func printDeleted(of vault: any KeyValueVault, prefix: String, json: Bool) throws {
        let entries = try vault.deletedEntries().filter { $0.name.hasPrefix(prefix) }
        guard json else { return try writeLines(entries.map(\.name)) }
        let time = { (stamp: HybridTimestamp) in UTCTime.iso8601(milliseconds: Int64(stamp.milliseconds), fractional: true) }
        try writeJSON(["deleted": entries.map { entry -> [String: Any] in
            ["name": entry.name, "id": entry.id.description, "deleted": time(entry.deleted), "kept": time(entry.kept)]
        }])
    }

    /// What `list` prints for `vault`: the names starting with `prefix` (shared with ``QuickPath``).
    static func printNames(of vault: any KeyValueVault, prefix: String = "", json: Bool) throws {
        try Names(of: vault, prefix: prefix, json: json).print()
    }

    /// What `list` prints, read from the vault in one request: the names, or with `json` the listing.
    struct Names {
        private let prefix: String
        private let listing: [(name: String, attributes: SecureKeyValueStore.EntryAttributes)]?
        private let names: [String]

        init(of vault: any KeyValueVault, prefix: String = "", json: Bool) throws {
            self.prefix = prefix
            listing = json ? try vault.listing() : nil
            names = json ? [] : try vault.keys()
        }

        func print() throws {
            if let listing {
                let time = { (date: Date) in UTCTime.iso8601(seconds: date.timeIntervalSince1970, fractional: true) }
                let entries: [[String: Any]] = listing.filter { $0.0.hasPrefix(prefix) }.map { name, attributes in
                    [
                        "name": name, "size": attributes.byteCount,
                        "created": time(attributes.created), "modified": time(attributes.modified),
                    ]
                }
                try writeJSON(["entries": entries])
            } else {
                try writeLines(names.filter { $0.hasPrefix(prefix) })
            }
        }
    }
}
