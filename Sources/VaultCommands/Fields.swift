import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCore
import VaultTerminal

// The verbs of format version 2's entries: `show`, `history`, `restore`, and the `--field`/`--version` of `get`
// and `put` (docs/FORMAT.md, "Entries and fields"). They read and write through ``KeyValueVault``'s operations of
// fields (``KeyValueVault/requiringFields()`` first): the document opened here, or the agent's.

/// `--field`: which field of the entry.
package struct FieldOption: ParsableArguments {
    package init() {}

    @Option(help: ArgumentHelp(
        "The field: password (the default), username, url, notes, otp, or any name of your own (format version 2).",
        valueName: "field"))
    package var field: String?

    package func validate() throws {
        guard let field else { return }
        do { try VaultDocument.validate(field: field) } catch let error as VaultError {
            throw ValidationError("--field: \(error)")
        }
    }
}

extension EntryRecord.Field {
    /// The value as text for a person: masked when secret and not `reveal`, else its UTF-8 with control characters
    /// escaped (``TerminalText``) and newlines kept, or a note when it is not UTF-8.
    func shown(reveal: Bool) -> String {
        if isSecret && !reveal { return "********" }
        let bytes = value.unprotectedBytes
        guard let text = String(validating: bytes, as: UTF8.self) else { return "(\(bytes.count) bytes, not UTF-8)" }
        return TerminalText.escaped(text, keepingNewlines: true)
    }

    /// The field as JSON: name, secret, and unless masked its value (UTF-8, else base64 with `"encoding": "base64"`).
    func json(reveal: Bool) -> [String: Any] {
        var object: [String: Any] = ["name": name, "secret": isSecret]
        if isSecret && !reveal {
            object["masked"] = true
            return object
        }
        return object.merging(valueJSON(value)) { $1 }
    }
}

/// A value in JSON: `value` as UTF-8 text with `"encoding": "utf8"`, else base64 with `"encoding": "base64"` (a copy
/// in ordinary memory: JSON needs one).
func valueJSON(_ value: SecureBytes) -> [String: Any] {
    let bytes = value.unprotectedBytes
    if let text = String(validating: bytes, as: UTF8.self) { return ["value": text, "encoding": "utf8"] }
    return ["value": Data(bytes).base64EncodedString(), "encoding": "base64"]
}

/// Every version of entry `name` of `vault` (format version 2), newest first, or the missing-entry error.
func allVersions(of name: String, in vault: any KeyValueVault) throws -> [EntryRecord] {
    guard let versions = try vault.requiringFields().records(of: name, .all), !versions.isEmpty else {
        throw CLIError.missingEntry(name, in: vault)
    }
    return versions
}

/// Version `version` (nil: the current one) of `versions`, newest first.
func pick(_ version: Int?, of versions: [EntryRecord], name: String) throws -> EntryRecord {
    guard let version else { return versions[0] }
    guard let found = versions.first(where: { $0.version == version }) else {
        throw VaultError.noSuchVersion(key: name, version: version)
    }
    return found
}

extension HybridTimestamp {
    /// The wall time, ISO 8601 in UTC with milliseconds.
    var iso8601: String {
        UTCTime.iso8601(milliseconds: Int64(milliseconds), fractional: true)
    }
}

/// Lines `name: value`, a multi-line value's later lines indented by two spaces.
func fieldLines(_ fields: [EntryRecord.Field], reveal: Bool, indent: String = "") -> String {
    fields.map { field in
        let value = field.shown(reveal: reveal).split(separator: "\n", omittingEmptySubsequences: false)
            .joined(separator: "\n" + indent + "  ")
        return indent + TerminalText.escaped(field.name) + ": " + value + "\n"
    }.joined()
}

package struct Show: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show an entry: its fields (secret ones masked unless --reveal), id and times.",
        discussion: "Format version 2. Values are shown for a person (control characters escaped); 'vault get NAME --field FIELD' prints one field's exact bytes.")

    @OptionGroup var entry: EntryNameOptions

    @Flag(help: "Show the values of secret fields (password, otp, and fields marked secret).")
    var reveal = false

    // Declared here so that `show NAME --version 1` is this option, never the program's --version.
    @Option(help: ArgumentHelp("Show this version: 0 the current one, 1 the newest earlier one ('vault history NAME' numbers them).", valueName: "n"))
    var version: Int?

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        if let version, version < 0 { throw ValidationError("--version takes 0 (the current version) or more") }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            let name = try entry.resolve()
            try withVault(options) { vault in
                let versions = try allVersions(of: name, in: vault)
                let current = try pick(version, of: versions, name: name)
                if options.json {
                    var object: [String: Any] = [
                        "name": current.name, "id": current.id.description, "created": current.created.iso8601,
                        "modified": current.modified.iso8601, "replica": current.modified.replica.description,
                        "replica_name": current.modifiedBy as Any,
                        "earlier_versions": versions.count - 1, "fields": current.fields.map { $0.json(reveal: reveal) },
                    ]
                    if let version { object["version"] = version }
                    try writeJSON(object)
                    return
                }
                var text = "name: \(TerminalText.escaped(current.name))\n"
                if let version { text += "version: \(version)\(current.conflict ? " (conflict)" : "")\n" }
                text += "id: \(current.id)\n"
                text += "created: \(current.created.iso8601)\n"
                // The machine's name; its replica id only when it has none (a vault from before names).
                text += "modified: \(current.modified.iso8601) by \(TerminalText.escaped(current.author))\n"
                text += "earlier versions: \(versions.count - 1)\n\n"
                text += fieldLines(current.fields, reveal: reveal)
                try writeToStdout(text)
            }
        }
    }
}

package struct History: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List an entry's versions, newest first: version 0 is the current one; 'get --version N' and 'restore --version N' take the numbers.",
        discussion: "Format version 2 keeps the last 10 earlier versions of an entry, at most 64 KiB of them. Each version names who made it (the replica's name: 'vault replica --help') and, under it, which fields it changed from the version before ('changed: password, url; removed: notes': names only, never values). A version marked 'conflict' lost a concurrent change in a merge. Secret fields are masked unless --reveal.")

    @OptionGroup var entry: EntryNameOptions

    @Flag(help: "Show the values of secret fields.")
    var reveal = false

    // Declared here so that `history NAME --version 1` is this option, never the program's --version.
    @Option(help: ArgumentHelp("List only this version: 0 the current one, 1 the newest earlier one.", valueName: "n"))
    var version: Int?

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        if let version, version < 0 { throw ValidationError("--version takes 0 (the current version) or more") }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            let name = try entry.resolve()
            try withVault(options) { vault in
                let all = try allVersions(of: name, in: vault)
                let current = all[0]
                let versions = try version.map { [try pick($0, of: all, name: name)] } ?? all
                /// What version `record` changed from the one before it (the next older one), when that one is kept.
                func marks(_ record: EntryRecord) -> FieldChanges? {
                    all.first { $0.version == record.version + 1 }.map { FieldChanges(from: $0, to: record) }
                }
                if options.json {
                    try writeJSON([
                        "name": current.name, "id": current.id.description,
                        "versions": versions.map { version -> [String: Any] in
                            let changes = marks(version)
                            return [
                                "version": version.version, "current": version.version == 0,
                                "time": version.modified.iso8601, "replica": version.modified.replica.description,
                                "replica_name": version.modifiedBy as Any,
                                "conflict": version.conflict, "fields": version.fields.map { $0.json(reveal: reveal) },
                                "changed": changes?.changed as Any, "removed": changes?.removed as Any,
                            ]
                        },
                    ])
                    return
                }
                var text = ""
                for version in versions {
                    text += "version \(version.version)\(version.version == 0 ? " (current)" : "")"
                        + "  \(version.modified.iso8601)  \(TerminalText.escaped(version.author))"
                        + (version.conflict ? "  conflict" : "") + "\n"
                    if let changes = marks(version), let line = changes.line { text += "  " + line + "\n" }
                    text += fieldLines(version.fields, reveal: reveal, indent: "  ")
                }
                try writeToStdout(text)
            }
        }
    }
}

/// Which fields a version changed from the version before it: names only, never values (`vault history`).
struct FieldChanges {
    /// Fields new in the later version, or with another value or secret flag, in its order.
    let changed: [String]
    /// Fields the earlier version had and the later one has not, in the earlier one's order.
    let removed: [String]

    init(from older: EntryRecord, to newer: EntryRecord) {
        changed = newer.fields.filter { field in
            guard let before = older.field(field.name) else { return true }
            return before.isSecret != field.isSecret || before.value != field.value
        }.map(\.name)
        removed = older.fields.filter { newer.field($0.name) == nil }.map(\.name)
    }

    /// `changed: a, b; removed: c` (escaped for a terminal), or `nil` when nothing changed (a rename, a restore of the
    /// same fields, a merge's version).
    var line: String? {
        let parts = (changed.isEmpty ? [] : ["changed: " + changed.map { TerminalText.escaped($0) }.joined(separator: ", ")])
            + (removed.isEmpty ? [] : ["removed: " + removed.map { TerminalText.escaped($0) }.joined(separator: ", ")])
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }
}

package struct Restore: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Make an earlier version of an entry current again, or bring back a change a deletion won over.",
        discussion: """
            With --version N, version N of the entry's history becomes current again as a new version (the one it replaces goes into the history); 'vault history NAME' lists the versions and their numbers.

            With --deleted, a deleted entry NAME comes back as it was when deleted, within 30 days of the deletion (VAULT_KEEP_DELETED=DAYS, 0 to 180, sets how long; 0 keeps nothing), or as it was changed on one copy before another copy deleted it (a merge keeps such a change with the deletion and says "kept: NAME"). 'vault list --deleted' lists them. It comes back under its old id, so every copy takes it back at its next merge. NAME must be free.
            """)

    @OptionGroup var entry: EntryNameOptions

    @Option(help: ArgumentHelp("The earlier version to restore (1 is the newest earlier one).", valueName: "n"))
    var version: Int?

    @Flag(help: "Bring back NAME, deleted in the last 30 days (or a change a deletion kept at a merge).")
    var deleted = false

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        if deleted, version != nil { throw ValidationError("give --version N or --deleted, not both") }
        guard deleted || version != nil else { throw ValidationError("give --version N (an earlier version) or --deleted") }
        if let version, version < 1 { throw ValidationError("--version takes an earlier version, 1 or more ('vault history NAME' lists them)") }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            let name = try entry.resolve()
            try withVault(options) { vault in
                let document = try vault.requiringFields()
                if deleted {
                    do {
                        try document.apply([.restoreDeleted(entry: name)])
                    } catch VaultError.entryExists {
                        // The name is taken: worth saying only when a deletion keeps a change of it.
                        guard try document.deletedEntries().contains(where: { $0.name == name }) else {
                            throw CLIError.message(
                                "no deleted entry '\(TerminalText.escaped(name))' to bring back in vault '\(TerminalText.escaped(options.resolvedPath))' (deleted entries are kept \(VaultDocument.deletedRetention / 86_400_000) days)",
                                exitCode: Exit.notFound)
                        }
                        throw CLIError.deletedNameTaken(name: TerminalText.escaped(name), path: TerminalText.escaped(options.resolvedPath))
                    } catch VaultError.noSuchEntry {
                        throw CLIError.message(
                            "no deleted entry '\(TerminalText.escaped(name))' to bring back in vault '\(TerminalText.escaped(options.resolvedPath))' (deleted entries are kept \(VaultDocument.deletedRetention / 86_400_000) days)",
                            exitCode: Exit.notFound)
                    }
                    return
                }
                guard try document.record(of: name) != nil else { throw CLIError.missingEntry(name, in: vault) }
                try document.apply([.restore(entry: name, version: version!)])
            }
            if options.json {
                try writeJSON(deleted ? ["name": name, "restored": true, "deleted": true] : ["name": name, "restored": true, "version": version!])
            } else if isatty(2) == 1 {
                writeToStderr(deleted
                    ? "restored '\(TerminalText.escaped(name))' as it was before its deletion\n"
                    : "restored version \(version!) of '\(TerminalText.escaped(name))' (the version it replaced is now version 1)\n")
            }
        }
    }
}
