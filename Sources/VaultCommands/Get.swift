import ArgumentParser
import FoundationEssentials
import Glibc
import OTPAuth
import VaultAgent
import VaultCore
import VaultTerminal

package struct Get: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the value stored under NAME, exactly as stored (a newline is added only when stdout is a terminal).",
        discussion: "The value is the entry's password field; --field prints another one, --version N a field of an earlier version ('vault history NAME' numbers them; format version 2).")

    @OptionGroup var entry: EntryNameOptions

    @OptionGroup var field: FieldOption

    @Option(help: ArgumentHelp("Print the field of this version: 0 the current one, 1 the newest earlier one.", valueName: "n"))
    var version: Int?

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        if let fd = entry.nameFD, fd == options.passphraseFD {
            throw ValidationError("the name and the passphrase need different descriptors")
        }
        if let version, version < 0 { throw ValidationError("--version takes 0 (the current version) or more") }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            let name = try entry.resolve()
            try withVault(options) { vault in
                if (field.field ?? "password") == "password", version == nil {
                    try Self.printValue(of: name, in: vault, json: options.json)
                } else {
                    try Self.printField(field.field ?? "password", version: version, of: name, in: vault, json: options.json)
                }
            }
        }
    }

    /// What `get` prints for the entry `name` of `vault` (shared with ``QuickPath``).
    static func printValue(of name: String, in vault: any KeyValueVault, json: Bool) throws {
        try printValue(try vault.getBytes(name), of: name, in: vault, json: json)
    }

    /// The same, with the value already read from `vault` (`nil`: no password value).
    static func printValue(_ value: SecureBytes?, of name: String, in vault: any KeyValueVault, json: Bool) throws {
        guard let value else {
            // A version-2 entry may exist without a password field (only a username, say).
            if try vault.contains(name) { throw VaultError.noSuchField(key: name, field: "password") }
            throw CLIError.missingEntry(name, in: vault)
        }
        try print(value, json: json ? ["name": name] : nil)
    }

    /// What `get --field`/`--version` prints: field `field` of version `version` (nil: the current one) of entry
    /// `name`.
    static func printField(_ field: String, version: Int?, of name: String, in vault: any KeyValueVault, json: Bool) throws {
        let document = try vault.requiringFields()
        guard let record = try document.records(of: name, version.map { .version($0) } ?? .current)?.first else {
            throw CLIError.missingEntry(name, in: vault)
        }
        guard let found = record.field(field) else { throw VaultError.noSuchField(key: name, field: field) }
        var object: [String: Any] = ["name": name, "field": field]
        if let version { object["version"] = version }
        try print(found.value, json: json ? object : nil)
    }

    /// Writes `value`: exact bytes (``writeSecret(_:)``), or with `json` those keys and the value.
    static func print(_ value: SecureBytes, json: [String: Any]?) throws {
        // The raw form writes straight from guarded memory.
        guard let object = json else { return try writeSecret(value) }
        try writeJSON(object.merging(valueJSON(value)) { $1 })
    }
}
