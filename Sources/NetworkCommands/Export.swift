import ArgumentParser
import Foundation
import VaultCommands
import VaultCore
import VaultImport
import VaultTerminal

/// `vault export --format json|csv|keepass-xml [--output FILE] [--yes]`: every entry, secrets in plain text, in a
/// file written atomically with mode 0600, or on stdout (docs/IMPORT-EXPORT.md).
package struct Export: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: RoutedVerb.named("export").abstract,
        discussion: """
            json: vault's own format (docs/IMPORT-EXPORT.md): every field with its secret flag, in order, every earlier version and the times; 'vault import json' reads it back without loss. csv: Bitwarden's CSV header (folder, name, login_uri, login_username, login_password, login_totp, notes, other fields as 'key: value' lines), which Bitwarden and most managers import; no history. keepass-xml: KeePass 2 XML, which 'keepassxc-cli import' and KeePass read; folders become groups, history kept, secret fields protected.

            The export holds every secret in plain text. On a terminal it asks first, unless --yes; without a terminal it needs --yes (else exit 64 and nothing is written). FILE is written atomically (a temporary file beside it, fsync, rename, fsync of the directory) with mode 0600; an existing FILE is replaced only when confirmed on a terminal or with --force (else exit 7, nothing written; --yes does not confirm it). Without --output the export goes to stdout, and only with --yes. What a format cannot carry (a value that is not text in CSV or XML, history in CSV) is named on stderr, and so is the number of CSV cells that start with =, +, - or @ (a spreadsheet may run them as formulas; they are written unchanged). Format version 2.
            """)

    @Option(help: ArgumentHelp("json, csv or keepass-xml.", valueName: "format"))
    var format: ExportFormat

    @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("Write here (mode 0600, atomically); default: stdout, with --yes.", valueName: "file"), completion: .file())
    var output: String?

    @Flag(name: [.customShort("y"), .customLong("yes")], help: "Do not ask: write the secrets in plain text (needed without a terminal, and for stdout).")
    var yes = false

    @Flag(name: .shortAndLong, help: "Replace an existing --output FILE without asking (needed without a terminal).")
    var force = false

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        if output == nil, !yes {
            throw ValidationError("without --output the export goes to stdout, secrets in plain text: pass --yes to confirm, or --output FILE")
        }
        if let output, output.isEmpty { throw ValidationError("--output needs a path") }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            // Asked before the vault is opened: no terminal and no --yes refuses at once.
            let terminal = yes ? nil : Terminal.controlling()
            if !yes, terminal == nil {
                throw CLIError.message(
                    "export writes every secret in plain text: confirm on a terminal, or pass --yes", exitCode: Exit.usage)
            }
            // An existing file is replaced only when that is confirmed (as put replaces an entry): --yes says the
            // secrets may be written in plain text, not where.
            var existing = stat()
            if let output, !force, lstat(output, &existing) == 0 {
                let shown = TerminalText.escaped(output)
                guard let asking = terminal ?? Terminal.controlling() else {
                    throw CLIError.message("'\(shown)' exists: pass --force to replace it (or confirm on a terminal); nothing exported", exitCode: Exit.exists)
                }
                let answer = try asking.readLine(prompt: "Replace the existing '\(shown)'? [y/N] ")
                let text = answer.map { String(decoding: $0.unprotectedBytes, as: UTF8.self) } ?? ""
                guard ["y", "yes"].contains(text.trimmingCharacters(in: .whitespaces).lowercased()) else {
                    throw CLIError.message("'\(shown)' exists and was not replaced; nothing exported", exitCode: Exit.exists)
                }
            }
            // Entry by entry while the export is written: one entry's values at a time besides the export.
            let (count, result) = try withVault(options) { vault -> (Int, ExportResult) in
                let document = try vault.requiringFields()
                let names = try vault.keys()
                if let terminal {
                    let target = output.map { "'\(TerminalText.escaped($0))'" } ?? "stdout"
                    let answer = try terminal.readLine(
                        prompt: "Write \(names.count) entr\(names.count == 1 ? "y" : "ies") of '\(TerminalText.escaped(options.resolvedPath))' with their secrets in plain text to \(target)? [y/N] ")
                    let text = answer.map { String(decoding: $0.unprotectedBytes, as: UTF8.self) } ?? ""
                    guard ["y", "yes"].contains(text.trimmingCharacters(in: .whitespaces).lowercased()) else {
                        throw CLIError.message("nothing exported", exitCode: Exit.failure)
                    }
                }
                // A bar on a terminal's stderr (nothing when piped), erased before the report.
                let progress = ProgressBar.onTerminal("exporting", total: names.count)
                defer { progress?.finish() }
                let source = ExportSource(names: names) { name in
                    defer { progress?.advance() }
                    return try document.records(of: name, .all) ?? []
                }
                let now = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
                return (names.count, try format.write(source, now: now))
            }
            if let output {
                try result.data.withUnsafeBytes { try OutputFile.replace(output, with: $0) }
            } else {
                try result.data.withUnsafeBytes { try writeToStdout($0) }
            }
            for item in result.omitted {
                writeToStderr("vault: note: not exported: \(TerminalText.escaped(item.item)): \(TerminalText.escaped(item.reason))\n")
            }
            if result.formulaLikeCells > 0 {
                let cells = result.formulaLikeCells == 1 ? "1 cell starts" : "\(result.formulaLikeCells) cells start"
                writeToStderr("vault: note: \(cells) with =, +, - or @, which a spreadsheet may run as a formula; exported unchanged (open the file as text, or import it into a password manager)\n")
            }
            guard let output else { return }
            if options.json {
                try writeJSON([
                    "output": output, "format": format.rawValue, "entries": count,
                    "omitted": result.omitted.map { ["item": $0.item, "reason": $0.reason] },
                ] as [String: Any])
            } else {
                try writeToStdout("exported \(count) entr\(count == 1 ? "y" : "ies") of '\(TerminalText.escaped(options.resolvedPath))' to '\(TerminalText.escaped(output))' (\(format.rawValue))\n")
            }
        }
    }
}
