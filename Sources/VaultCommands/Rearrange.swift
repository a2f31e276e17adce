import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCore
import VaultTerminal

/// `vault mv` and `vault cp`: one atomic write each, checked under the vault's lock (no window between the
/// check that the target is free and the write).
package struct Move: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "mv",
        abstract: "Rename the entry SOURCE to TARGET in one atomic write, keeping its creation time (TARGET must not exist unless --force).")

    @OptionGroup var names: SourceAndTarget

    @OptionGroup var options: VaultOptions

    package func run() throws {
        try reportingErrors(json: options.json) {
            try names.rearrange(keepCreated: true, removeSource: true, options: options)
            if options.json { try writeJSON(["name": names.target, "from": names.source, "moved": true]) }
        }
    }
}

package struct Copy: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "cp",
        abstract: "Copy the value of SOURCE to a new entry TARGET in one atomic write (TARGET must not exist unless --force).")

    @OptionGroup var names: SourceAndTarget

    @OptionGroup var options: VaultOptions

    package func run() throws {
        try reportingErrors(json: options.json) {
            try names.rearrange(keepCreated: false, removeSource: false, options: options)
            if options.json { try writeJSON(["name": names.target, "from": names.source, "copied": true]) }
        }
    }
}

/// The arguments of `mv` and `cp`, and their one batch.
package struct SourceAndTarget: ParsableArguments {
    package init() {}

    @Argument(help: "The existing entry.", completion: NameCompletion.existingEntry)
    package var source: String

    @Argument(help: "The new name.")
    package var target: String

    @Flag(name: .shortAndLong, help: "Replace TARGET if it exists.")
    package var force = false

    package func validate() throws {
        if source == target { throw ValidationError("'\(source)' and '\(target)' are the same entry") }
    }

    /// One batch: `source` must exist, `target` must not (unless `force`), the copy, and for a move the removal.
    func rearrange(keepCreated: Bool, removeSource: Bool, options: VaultOptions) throws {
        try checkNameArgumentIsUTF8(source)
        try checkNameArgumentIsUTF8(target)
        try SecureKeyValueStore.validate(key: target)
        try withVault(options) { vault in
            try vault.update { changes in
                changes.require(source, exists: true)
                if !force { changes.require(target, exists: false) }
                try changes.copy(source, to: target, keepCreated: keepCreated)
                if removeSource { changes.remove(source) }
            }
        }
    }
}

/// `vault find`: entries whose name, or a field that is not secret (url, username, notes when not secret), contains
/// PATTERN, or matches it as a glob, ignoring case. Secret fields are never searched.
package struct Find: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "find",
        abstract: "List the entries whose name or non-secret field (url, username, …) contains PATTERN, or matches it as a glob (*, ?, [...]), ignoring case.",
        discussion: "Secret fields (password, otp, and any field marked secret) are never searched, nor shown. Exits 2 when nothing matches. Prints names, one a line; --json adds which fields matched (their names, never their values). --names-only searches names alone (and a format-version-1 vault has nothing else).")

    @Argument(help: "A substring, or a glob when it holds *, ? or [.")
    package var pattern: String

    @Flag(help: "Search the names only, not the fields.")
    var namesOnly = false

    @OptionGroup var options: VaultOptions

    package func run() throws {
        try reportingErrors(json: options.json) {
            let match = NamePattern(pattern)
            let matches = try withVault(options) { vault -> [(name: String, fields: [String])] in
                // Every entry's non-secret fields in one request (`search` with no condition: through the agent, one
                // round trip, not one per entry), where the vault has fields (format version 2 and later).
                let records: [EntryRecord]?
                do {
                    records = namesOnly ? nil : try vault.search(prefix: "", required: [])
                } catch VaultError.needsVersion2 {
                    records = nil
                }
                guard let records else { return try vault.keys().filter(match.matches).map { ($0, []) } }
                return records.compactMap { record in
                    let fields = record.fields.filter { field in
                        !field.isSecret && field.value.withUnsafeBytes { String(validating: $0, as: UTF8.self) }.map(match.matches) == true
                    }.map(\.name)
                    return match.matches(record.name) || !fields.isEmpty ? (record.name, fields) : nil
                }
            }
            guard !matches.isEmpty else {
                throw CLIError.message("no entry matches '\(pattern)'", exitCode: Exit.notFound)
            }
            if options.json {
                try writeJSON([
                    "pattern": pattern, "names": matches.map(\.name),
                    "fields": Dictionary(uniqueKeysWithValues: matches.filter { !$0.fields.isEmpty }.map { ($0.name, $0.fields) }),
                ])
            } else {
                try writeLines(matches.map(\.name))
            }
        }
    }
}

/// A `find` pattern: a case-insensitive substring, or a case-insensitive glob (`fnmatch` without
/// `FNM_PATHNAME`: `*` matches `/` too, as names such as `github.com/alice` are not paths).
package struct NamePattern {
    let folded: String
    let isGlob: Bool

    package init(_ pattern: String) {
        folded = pattern.lowercased()
        isGlob = pattern.contains { "*?[".contains($0) }
    }

    package func matches(_ name: String) -> Bool {
        let name = name.lowercased()
        guard isGlob else { return name.contains(folded) }
        return fnmatch(folded, name, 0) == 0
    }
}

/// Names on stdout, one a line, from one buffer. As `ls`: escaped on a terminal (``TerminalText``: a name
/// cannot send control sequences or bidi overrides to it), the exact names to a pipe or a file (a script reads
/// back what it can pass to `get`).
package func writeLines(_ names: [String]) throws {
    let onTerminal = isatty(1) == 1
    var output = [UInt8]()
    // The exact size for a pipe (escaping only makes it longer): one allocation for 10,000 names, not a dozen.
    output.reserveCapacity(names.reduce(names.count) { $0 + $1.utf8.count })
    for name in names {
        output.append(contentsOf: (onTerminal ? TerminalText.escaped(name) : name).utf8)
        output.append(UInt8(ascii: "\n"))
    }
    try output.withUnsafeBytes { try writeToStdout($0) }
}
