import ArgumentParser
import FoundationEssentials
import VaultCore
import VaultTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `vault edit NAME [--field F]`: the entry's fields in `$VISUAL`/`$EDITOR` as `field: value` lines (secret ones too),
/// in a 0600 file on a tmpfs that is removed afterwards (``EditFile``), written back in one batch.
package struct Edit: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Edit an entry's fields in $EDITOR, as 'field: value' lines (secret ones included); one atomic write.",
        discussion: """
            The editor ($VISUAL, else $EDITOR, else vi) gets a file of one 'field: value' line per field, a value's further lines after two spaces (as 'vault show' prints them). Change a value, add a line for a new field, delete a line to remove its field. With --field F the file holds that field alone. The file is in a private directory on a memory file system (/dev/shm, else $XDG_RUNTIME_DIR), 0600, never in your home directory or on a disk, and is overwritten and removed when the editor ends (with whatever the editor left beside it, a swap file included).

            Every change is written at once, as one new version of the entry ('vault history NAME'); nothing changed, nothing written. A malformed line is named by its number (never shown: it may hold a secret); on a terminal vault asks whether to edit again, else it exits 64 and writes nothing. Fields whose values are not text (not UTF-8, or with control characters other than tab and newline) are refused: 'vault put NAME --field F' sets them. Format version 2.
            """)

    @OptionGroup var entry: EntryNameOptions

    @Option(help: ArgumentHelp("Edit this field only (a new one when the entry has none of that name).", valueName: "field"))
    var field: String?

    @OptionGroup var options: VaultOptions

    package func run() throws {
        try reportingErrors(json: options.json) {
            let name = try entry.resolve()
            // The fields as they are, and the version they are (a change made meanwhile is not overwritten).
            let (current, modified) = try withVault(options) { vault -> ([EntryRecord.Field], HybridTimestamp) in
                guard let record = try vault.requiringFields().record(of: name) else { throw CLIError.missingEntry(name, in: vault) }
                return (record.fields, record.modified)
            }
            let shown = field.map { field in current.filter { $0.name == field } } ?? current
            if let unfit = shown.first(where: { !EditText.fits($0) }) {
                throw CLIError.message(
                    "cannot edit field '\(TerminalText.escaped(unfit.name))' of '\(TerminalText.escaped(name))' as a line: its name or value is not plain text; 'vault put NAME --field F' sets it",
                    exitCode: Exit.usage)
            }
            let file = try EditFile(entry: name, contents: EditText.render(shown))
            defer { file.remove() }
            let edited = try editUntilWellFormed(file)
            let changes = Self.changes(from: shown, to: edited, entry: name, only: field)
            guard !changes.isEmpty else {
                if options.json { try writeJSON(["name": name, "changed": false]) } else { writeToStderr("no change to '\(TerminalText.escaped(name))'\n") }
                return
            }
            try withVault(options) { vault in
                let document = try vault.requiringFields()
                guard let record = try document.record(of: name), record.modified == modified else {
                    throw CLIError.message(
                        "'\(TerminalText.escaped(name))' changed while it was being edited: nothing written ('vault edit' again starts from the change)",
                        exitCode: Exit.failure)
                }
                try document.apply(changes)
            }
            let set = changes.compactMap { if case let .setField(_, field, _, _) = $0 { return field } else { return nil } }
            let removed = changes.compactMap { if case let .removeField(_, field) = $0 { return field } else { return nil } }
            if options.json {
                try writeJSON(["name": name, "changed": true, "set": set, "removed": removed])
            } else {
                let parts = (set.isEmpty ? [] : ["set " + set.map { TerminalText.escaped($0) }.joined(separator: ", ")])
                    + (removed.isEmpty ? [] : ["removed " + removed.map { TerminalText.escaped($0) }.joined(separator: ", ")])
                writeToStderr("edited '\(TerminalText.escaped(name))': " + parts.joined(separator: "; ") + "\n")
            }
        }
    }

    /// Runs the editor on `file` until what it leaves parses; on a malformed line, asks on the terminal whether to edit
    /// again (no: exit 1), and without a terminal fails (exit 64). Nothing is written either way.
    func editUntilWellFormed(_ file: EditFile) throws -> [(name: String, value: SecureBytes)] {
        let editor = ProcessInfo.processInfo.environment["VISUAL"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ProcessInfo.processInfo.environment["EDITOR"].flatMap { $0.isEmpty ? nil : $0 } ?? "vi"
        while true {
            // As git runs it: through the shell, so that EDITOR may hold arguments ("code --wait").
            let status = try ChildCommand(arguments: ["/bin/sh", "-c", editor + " \"$1\"", editor, file.path]).run()
            guard status == 0 else {
                throw CLIError.message("the editor (\(TerminalText.escaped(editor))) exited with status \(status): nothing written", exitCode: Exit.failure)
            }
            do {
                let fields = try EditText.parse(try file.read())
                if let field, let other = fields.first(where: { $0.name != field }) {
                    throw EditText.Malformed(line: 1, reason: "only field '\(TerminalText.escaped(field))' is edited here, not '\(TerminalText.escaped(other.name))'")
                }
                return fields
            } catch let malformed as EditText.Malformed {
                let message = "line \(malformed.line): \(malformed.reason) (the line is not shown: it may hold a secret)"
                guard isatty(0) == 1, let terminal = Terminal.controlling() else {
                    throw CLIError.message("cannot edit: \(message); nothing written", exitCode: Exit.usage)
                }
                writeToStderr("vault: \(message)\n")
                let answer = try terminal.readLine(prompt: "Edit again? [Y/n] ")
                let text = answer.map { String(decoding: $0.unprotectedBytes, as: UTF8.self) }?.trimmingCharacters(in: .whitespaces).lowercased()
                guard let text, ["", "y", "yes"].contains(text) else {
                    throw CLIError.message("nothing written", exitCode: Exit.failure)
                }
            }
        }
    }

    /// The batch that makes `before`'s fields `after`'s: a field set where it is new or its value differs (a new
    /// field takes its well-known secret default), removed where its line went; with `only`, that field alone.
    static func changes(
        from before: [EntryRecord.Field], to after: [(name: String, value: SecureBytes)], entry: String, only: String?
    ) -> [DocumentChange] {
        var changes: [DocumentChange] = []
        for (name, value) in after where before.first(where: { $0.name == name }).map({ $0.value != value }) ?? true {
            changes.append(.setField(entry: entry, field: name, value: value))
        }
        for field in before where !after.contains(where: { $0.name == field.name }) && (only == nil || only == field.name) {
            changes.append(.removeField(entry: entry, field: field.name))
        }
        return changes
    }
}
