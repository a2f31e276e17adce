import ArgumentParser
import Foundation
import VaultCommands
import VaultCore
import VaultImport
import VaultTerminal

extension ImportFormat: ExpressibleByArgument {}
extension ExportFormat: ExpressibleByArgument {}

/// `vault import FORMAT SOURCE [--dry-run] [--prefix P]`: the entries of another password manager's export (or of
/// vault's own) in one atomic write (docs/IMPORT-EXPORT.md).
///
/// It runs in `vault-net`: the parsers link FoundationXML (libxml2) and ZIPFoundation (zlib), which `vault`'s other
/// verbs do not (``RoutedVerb``).
package struct Import: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: RoutedVerb.named("import").abstract,
        discussion: """
            FORMAT and SOURCE: pass [DIR] (a pass or gopass store, by default $PASSWORD_STORE_DIR else ~/.password-store, each .gpg file decrypted by your gpg and its agent, as pass does; line 1 the password, 'login:'/'user:'/'username:' and 'url:'/'website:' lines, other 'key: value' lines as secret fields (email: not secret), an otpauth:// line as otp, the rest as notes; times from the store's git log, else the files'); keepass-xml FILE (keepassxc-cli export -f xml: groups become folders, history, tags and attachments kept) bitwarden-json FILE (the unencrypted export; folders, custom fields, cards, identities, password history); 1pux FILE (1Password's export; each 1Password vault a folder); csv FILE (Chrome, Firefox, Bitwarden, 1Password or KeePassXC, told apart by the header); json FILE (vault export --format json: fields, secret flags, order, history and times, without loss).

            Names are the source's folders and title joined with '/', under --prefix when given; a name that appears twice in the source becomes 'NAME (2)', 'NAME (3)' in the source's order. A name the vault lacks is added whole (history and times kept); one it has gets the source's fields where they differ (its other fields stay; the version replaced goes into its history); one whose fields are all the same is unchanged, so importing twice adds nothing. Nothing is ever deleted. An entry changed in the vault since the source's version (the vault's is newer; for a source without times, the vault once had the source's fields and moved on) is kept as it is, and one deleted in the vault since is not brought back: the report names them and the fields that differ (--overwrite replaces and brings back).

            Everything is read and checked before the vault is opened, then written in one atomic write (--dry-run: none); a malformed source names its line or item, writes nothing and exits 1. The report (stdout; --json) lists what was added, updated, unchanged and skipped, with why: never a value. Inputs up to 64 MiB and 100,000 entries (a pass store: 16 MiB a file, 64 MiB in all). Format version 2.
            """)

    @Argument(help: ArgumentHelp("pass, keepass-xml, bitwarden-json, 1pux, csv or json.", valueName: "format"))
    var format: ImportFormat

    @Argument(help: ArgumentHelp("The export file (for pass: the store's directory, by default $PASSWORD_STORE_DIR, else ~/.password-store, as pass finds it).", valueName: "source"), completion: .file())
    var sourceArgument: String?

    /// The export file or store: for pass with none named, the store pass itself uses.
    var source: String {
        if let sourceArgument { return sourceArgument }
        let named = ProcessInfo.processInfo.environment["PASSWORD_STORE_DIR"] ?? ""
        return named.isEmpty ? Posix.homeDirectory + "/.password-store" : named
    }

    @Flag(help: "Say what the import would do, and write nothing.")
    var dryRun = false

    @Flag(help: "Replace entries changed in the vault since the source's version, and bring back ones deleted since.")
    var overwrite = false

    @Option(help: ArgumentHelp("Put every entry under this folder (e.g. 'keepass' makes 'keepass/Web/GitHub').", valueName: "prefix"))
    var prefix: String?

    @Flag(help: "Name every entry added or updated, however many (past \(Self.listedNames), the report gives their count).")
    var list = false

    /// How many names of added or updated entries the report lists before it gives their count instead.
    static let listedNames = 50

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        guard sourceArgument != nil || format == .pass else {
            throw ValidationError("'vault import \(format.rawValue)' needs the export file: vault import \(format.rawValue) FILE")
        }
        if let prefix {
            guard !prefix.isEmpty, !prefix.hasPrefix("/") else { throw ValidationError("--prefix takes a folder name such as 'imported'") }
            guard !prefix.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw ValidationError("--prefix has no control characters")
            }
        }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            // Read and check the whole source first: a malformed one asks for no passphrase and writes nothing.
            if sourceArgument == nil, !FileManager.default.fileExists(atPath: source) {
                throw CLIError.message(
                    "no pass store at '\(TerminalText.escaped(source))' ($PASSWORD_STORE_DIR, else ~/.password-store): name its directory: vault import pass DIR",
                    exitCode: Exit.failure)
            }
            let parsed: ParsedSource
            // Decrypting a pass store file by file is slow (gpg each time): a bar on a terminal's stderr.
            var progress: ProgressBar?
            defer { progress?.finish() }
            do {
                let read = {
                    try format.read(source) { done, total in
                        if progress == nil { progress = ProgressBar.onTerminal("decrypting", total: total, unit: "files") }
                        progress?.advance()
                    }
                }
                // A large file tells no progress while it is parsed: the time taken, once it lasts (a pass store has
                // its bar instead).
                parsed = try format == .pass ? read() : WaitingLine.during("reading '\(TerminalText.escaped(source))'...", read)
                progress?.finish()
            } catch let error as ImportError {
                throw ImportFailure(source: source, error: error)
            }
            let plan = try withVault(options) { vault -> ImportPlan in
                let entries = try vault.requiringFields()
                let names = Set(try vault.keys())
                var deleted: [String: UInt64] = [:]
                for entry in try entries.deletedEntries() where !names.contains(entry.name) {
                    deleted[entry.name] = max(deleted[entry.name] ?? 0, entry.deleted.milliseconds)
                }
                let plan: ImportPlan
                // Each entry against the vault's: a bar with counts and time left on a terminal, nothing piped.
                let bar = ProgressBar.onTerminal("importing", total: parsed.entries.count)
                do {
                    defer { bar?.finish() }
                    plan = try ImportPlan.make(parsed, prefix: prefix, overwrite: overwrite, deleted: deleted, progress: { done, _ in
                        bar?.advance(to: done)
                    }) { name in
                        names.contains(name) ? try entries.records(of: name, .all) : nil
                    }
                } catch let error as ImportError {
                    throw ImportFailure(source: source, error: error)
                }
                if !dryRun, !plan.changes.isEmpty {
                    try WaitingLine.during("writing '\(TerminalText.escaped(options.resolvedPath))'...") { try entries.apply(plan.changes) }
                }
                return plan
            }
            try report(plan)
        }
    }

    func report(_ plan: ImportPlan) throws {
        let written = !dryRun && !plan.changes.isEmpty
        if options.json {
            try writeJSON([
                "source": source, "format": format.rawValue, "vault": options.resolvedPath, "dry_run": dryRun, "written": written,
                "added": plan.added, "updated": plan.updated, "unchanged": plan.unchanged,
                "kept": plan.kept.map { ["name": $0.name, "fields": $0.fields, "deleted": $0.deleted] as [String: Any] },
                "skipped": plan.skipped.map { ["item": $0.item, "reason": $0.reason] },
            ] as [String: Any])
            return
        }
        let counts = "\(plan.added.count) added, \(plan.updated.count) updated, \(plan.unchanged.count) unchanged, "
            + "\(plan.kept.count) kept, \(plan.skipped.count) skipped"
        var text = (dryRun ? "would import" : "imported")
            + " '\(TerminalText.escaped(source))' into '\(TerminalText.escaped(options.resolvedPath))': \(counts)"
            + (dryRun ? " (dry run: nothing written)" : "") + "\n"
        // Thousands of names would bury the rest: past a few, their count (the JSON report lists them all).
        let named = plan.added.count + plan.updated.count
        if list || named <= Self.listedNames {
            for (word, names) in [("added", plan.added), ("updated", plan.updated)] {
                for name in names { text += "  \(word): \(TerminalText.escaped(name))\n" }
            }
        } else {
            let what = plan.updated.isEmpty ? "added" : plan.added.isEmpty ? "updated" : "added or updated"
            text += "  \(named) entries \(dryRun ? "to be " : "")\(what), not named one by one (--list names them)\n"
        }
        for kept in plan.kept {
            let name = TerminalText.escaped(kept.name)
            let fields = kept.fields.map { TerminalText.escaped($0) }.joined(separator: ", ")
            let one = kept.fields.count == 1
            text += kept.deleted
                ? "  kept: \(name): deleted in the vault since the source's version (--overwrite brings it back)\n"
                : "  kept: \(name): changed in the vault since the source's version (\(fields) \(one ? "differs" : "differ"); --overwrite replaces \(one ? "it" : "them"))\n"
        }
        for item in plan.skipped {
            text += "  skipped: \(TerminalText.escaped(item.item)): \(TerminalText.escaped(item.reason))\n"
        }
        try writeToStdout(text)
    }
}

/// An import that failed on its source (its words, at the CLI edge; ``ImportError`` never holds a value).
struct ImportFailure: Error, CLIReportable {
    let source: String
    let error: ImportError

    var exitCode: Int32 { Exit.failure }
    var code: String {
        switch error {
        case .malformed: return "malformed_input"
        case .unsupported: return "unsupported_input"
        case .tooLarge: return "input_too_large"
        case .decryptionFailed: return "decryption_failed"
        }
    }
    var message: String { "cannot import '\(TerminalText.escaped(source))': \(TerminalText.escaped(error.description))" }
    var hint: String? { error.hint.map { TerminalText.escaped($0) } }
}
