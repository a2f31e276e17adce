import ArgumentParser
import FoundationEssentials
import Glibc
import OTPAuth
import VaultAgent
import VaultCore
import VaultTerminal

package struct Delete: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete the entries NAME... in one atomic write (all or none: a missing one fails unless --force).",
        discussion: "On a terminal, asks before deleting (--yes or --force does not ask) and says what it deleted.")

    @Argument(
        help: "The entries' names (or give them with --name-fd, off the command line).",
        completion: NameCompletion.existingEntry)
    package var names: [String] = []

    @Option(
        name: .customLong("name-fd"),
        help: ArgumentHelp("Read names from this file descriptor, one a line, not from the command line.", valueName: "n"))
    package var nameFD: Int32?

    @Flag(name: .shortAndLong, help: "Do not ask, and ignore names that do not exist (as rm -f).")
    package var force = false

    @Flag(name: .shortAndLong, help: "Do not ask on the terminal before deleting.")
    package var yes = false

    @Flag(name: .shortAndLong, help: "Each NAME is a folder ending in '/' (e.g. 'github/'): delete every entry under it.")
    package var recursive = false

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        if names.isEmpty && nameFD == nil { throw ValidationError("Missing expected argument '<names> ...'") }
        if let nameFD, nameFD < 0 { throw ValidationError("--name-fd must be a file descriptor (0 or more)") }
        if let fd = nameFD, fd == options.passphraseFD {
            throw ValidationError("the names and the passphrase need different descriptors")
        }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            for name in names { try checkNameArgumentIsUTF8(name) }
            let given = try names + (nameFD.map { try EntryNameOptions.names(fromFD: $0) } ?? [])
            if recursive, let name = given.first(where: { !$0.hasSuffix("/") || $0 == "/" }) {
                throw UsageError(
                    message: "with --recursive each name is a folder ending in '/' (e.g. 'github/'), not '\(name)'",
                    hint: "'vault list PREFIX' shows what a folder holds")
            }
            var names = given
            let deleted = try withVault(options) { vault -> [String] in
                if recursive {
                    // Each folder's entries, as the file holds them now; an empty folder is a missing name.
                    let all = try vault.keys()
                    var expanded: [String] = []
                    for folder in given {
                        let inside = all.filter { $0.hasPrefix(folder) && !expanded.contains($0) }
                        if inside.isEmpty, !force {
                            throw CLIError.message("no entry under '\(folder)' in vault '\(vault.path)'", exitCode: Exit.notFound)
                        }
                        expanded += inside
                    }
                    names = expanded
                }
                var present: [String] = []
                for name in names where try vault.contains(name) && !present.contains(name) { present.append(name) }
                if !force, let missing = names.first(where: { !present.contains($0) }) {
                    throw CLIError.missingEntry(missing, in: vault)
                }
                if !yes, !force, !present.isEmpty, isatty(0) == 1, let terminal = Terminal.controlling() {
                    let shown = present.prefix(5).map { "'\(TerminalText.escaped($0))'" }.joined(separator: ", ")
                    let list = present.count > 5 ? "\(present.count) entries (\(shown), …)" : shown
                    let answer = try terminal.readLine(prompt: "Delete \(list) from '\(TerminalText.escaped(vault.path))'? [y/N] ")
                    let text = answer.map { String(decoding: $0.unprotectedBytes, as: UTF8.self) } ?? ""
                    guard ["y", "yes"].contains(text.trimmingCharacters(in: .whitespaces).lowercased()) else {
                        throw CLIError.message("nothing deleted", exitCode: Exit.failure)
                    }
                }
                try vault.update { changes in
                    for name in names {
                        if !force { changes.require(name, exists: true) }
                        changes.remove(name)
                    }
                }
                return present
            }
            if !options.json, isatty(2) == 1 {
                writeToStderr(deleted.map { "deleted '\(TerminalText.escaped($0))'\n" }.joined())
            }
            if options.json {
                if recursive { try writeJSON(["names": deleted, "deleted": true]) }
                else if names.count == 1 { try writeJSON(["name": names[0], "deleted": true]) }
                else { try writeJSON(["names": names, "deleted": true]) }
            }
        }
    }
}
