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

    @OptionGroup var options: VaultOptions

    @Argument(help: "Only the names that start with this (e.g. 'github/').", completion: NameCompletion.existingEntry)
    var prefix: String?

    package func run() throws {
        try reportingErrors(json: options.json) {
            if let prefix { try checkNameArgumentIsUTF8(prefix) }
            try withVault(options) { try Self.printNames(of: $0, prefix: prefix ?? "", json: options.json) }
        }
    }

    /// What `list` prints for `vault`: the names starting with `prefix` (shared with ``QuickPath``).
    static func printNames(of vault: any KeyValueVault, prefix: String = "", json: Bool) throws {
        if json {
            let time = { (date: Date) in UTCTime.iso8601(seconds: date.timeIntervalSince1970, fractional: true) }
            let entries: [[String: Any]] = try vault.listing().filter { $0.0.hasPrefix(prefix) }.map { name, attributes in
                [
                    "name": name, "size": attributes.byteCount,
                    "created": time(attributes.created), "modified": time(attributes.modified),
                ]
            }
            try writeJSON(["entries": entries])
        } else {
            try writeLines(try vault.keys().filter { $0.hasPrefix(prefix) })
        }
    }
}
