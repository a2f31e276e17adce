import ArgumentParser
import FoundationEssentials
import Glibc
import OTPAuth
import VaultAgent
import VaultCore
import VaultTerminal

/// Refuses a NAME argument that is not valid UTF-8: ArgumentParser hands over Strings, in which invalid bytes
/// became U+FFFD, so two different names (`k\xff`, `k\xfe`) would be the same entry. The raw argv bytes tell.
package func checkNameArgumentIsUTF8(_ name: String) throws {
    for index in 1..<Int(CommandLine.argc) {
        guard let argument = CommandLine.unsafeArgv[index] else { continue }
        let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(argument).assumingMemoryBound(to: UInt8.self),
            count: strlen(argument))
        guard String(validating: bytes, as: UTF8.self) == nil else { continue }
        if String(decoding: bytes, as: UTF8.self) == name {
            throw VaultError.invalidEntryName(reason: "the name is not valid UTF-8")
        }
    }
}

/// The entry's name: the NAME argument, or with `--name-fd N` the first line of descriptor N, so that the name is
/// not on the command line (where `ps` shows it to every local user; SECURITY.md).
package struct EntryNameOptions: ParsableArguments {
    package init() {}

    @Argument(
        help: "The entry's name (or give it with --name-fd, off the command line).",
        completion: NameCompletion.existingEntry)
    package var name: String?

    @Option(
        name: .customLong("name-fd"),
        help: ArgumentHelp("Read the entry's name from this file descriptor (first line), not from the command line.", valueName: "n"))
    package var nameFD: Int32?

    package func validate() throws {
        switch (name, nameFD) {
        case (nil, nil): throw ValidationError("Missing expected argument '<name>'")  // as ArgumentParser words it
        case (.some, .some): throw ValidationError("give the entry's name once: NAME or --name-fd N, not both")
        default: break
        }
        if let nameFD, nameFD < 0 { throw ValidationError("--name-fd must be a file descriptor (0 or more)") }
    }

    /// The name, checked to be valid UTF-8 (``checkNameArgumentIsUTF8(_:)`` for the argument; the descriptor's
    /// bytes are refused as a whole when they are not).
    package func resolve() throws -> String {
        if let name {
            try checkNameArgumentIsUTF8(name)
            return name
        }
        return try Self.names(fromFD: nameFD!, firstLineOnly: true).first ?? ""
    }

    /// The names in descriptor `fd`, one a line (empty lines skipped), or its first line only; each must be
    /// valid UTF-8.
    package static func names(fromFD fd: Int32, firstLineOnly: Bool = false) throws -> [String] {
        try SecretInput.checkPassed(fd: fd)
        let bytes = try SecretInput.read(
            fd: fd, limit: firstLineOnly ? 64 << 10 : 16 << 20, untilNewline: firstLineOnly,
            name: "file descriptor \(fd)")
        return try bytes.unprotectedBytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: !firstLineOnly)
            .map { line in
                guard let text = String(validating: line, as: UTF8.self) else {
                    throw VaultError.invalidEntryName(reason: "the name is not valid UTF-8")
                }
                return text
            }
    }
}

package struct Put: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Store a value under NAME (the value is read from stdin, all bytes; a no-echo prompt on a terminal).",
        discussion: """
            On a terminal, replacing an existing entry asks first (--force does not ask), a paste of several lines at the one-line prompt is refused and discarded (--multiline reads until Ctrl-D), and stderr says whether the entry was stored or replaced. From a pipe or a file the bytes are stored exactly, a final newline included (--trim-newline drops one); an empty input never replaces an existing entry unless --allow-empty.
            """)

    @OptionGroup var options: VaultOptions

    @OptionGroup var entry: EntryNameOptions

    @Flag(help: "Fail (exit 7) if NAME exists, and store nothing.")
    package var noClobber = false

    @Flag(name: .shortAndLong, help: "Replace an existing entry without asking on the terminal.")
    package var force = false

    @Flag(help: "Let an empty input replace an existing entry.")
    package var allowEmpty = false

    @Flag(name: .shortAndLong, help: "At the terminal prompt, read several lines, until Ctrl-D.")
    package var multiline = false

    @Flag(help: "Drop one newline (\\n or \\r\\n) at the end of the value read from stdin (for `echo … | vault put`).")
    package var trimNewline = false

    @OptionGroup var field: FieldOption

    @Flag(inversion: .prefixedNo, help: "Mark the field secret (masked by 'show' and 'history'), or not. Default: the field's flag, and for a new one secret for password and otp only.")
    var secret: Bool?

    package func validate() throws {
        if options.passphraseFD == 0 { throw ValidationError("stdin carries the value: use another --passphrase-fd") }
        if entry.nameFD == 0 { throw ValidationError("stdin carries the value: use another --name-fd") }
        if let fd = entry.nameFD, fd == options.passphraseFD {
            throw ValidationError("the name and the passphrase need different descriptors")
        }
        if noClobber && force { throw ValidationError("--no-clobber and --force contradict each other") }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            var how = Manner()
            how.noClobber = noClobber
            how.force = force
            how.allowEmpty = allowEmpty
            how.multiline = multiline
            how.trimNewline = trimNewline
            how.field = field.field
            how.secret = secret
            try Self.store(try entry.resolve(), how, json: options.json, in: { try openVault(options) })
        }
    }

    /// How `put` stores: its flags.
    struct Manner {
        var noClobber = false
        var force = false
        var allowEmpty = false
        var multiline = false
        var trimNewline = false
        /// `--field` (nil: the value, i.e. the `password` field) and `--secret`/`--no-secret`.
        var field: String?
        var secret: Bool?
        /// Whether this put needs format version 2 (another field than the value, or a secret flag).
        var needsDocument: Bool { (field != nil && field != "password") || secret != nil }
    }

    /// What `put` does once it has the name: checks it, opens the vault (`open`), reads the value and stores it
    /// (shared with ``QuickPath``).
    static func store(_ name: String, _ how: Manner, json: Bool, in open: () throws -> any KeyValueVault) throws {
        try SecureKeyValueStore.validate(key: name)
        let replaced: Bool
        var note: String?
        do {
            let vault = try open()
            defer { vault.close() }
            let field = how.field ?? "password"
            // Another field than the value: whether *that field* exists is what --no-clobber, the prompt and
            // "replaced" are about.
            let document = how.needsDocument ? try documentEntries(vault) : nil
            let exists = try document.map { try $0.record(of: name)?.field(field) != nil } ?? vault.contains(name)
            if exists && how.noClobber {
                throw document != nil ? VaultError.fieldExists(key: name, field: field) : VaultError.entryExists(key: name, path: vault.path)
            }
            var value: SecureBytes
            if isatty(0) == 1, let terminal = Terminal.controlling() {
                let shown = TerminalText.escaped(name) + (how.field.map { "' field '" + TerminalText.escaped($0) } ?? "")
                if exists && !how.force {
                    let answer = try terminal.readLine(prompt: "Overwrite '\(shown)'? [y/N] ")
                    let text = answer.map { String(decoding: $0.unprotectedBytes, as: UTF8.self) } ?? ""
                    guard ["y", "yes"].contains(text.trimmingCharacters(in: .whitespaces).lowercased()) else {
                        throw CLIError.message("'\(name)' exists and was not overwritten", exitCode: Exit.exists)
                    }
                }
                if how.multiline {
                    value = try terminal.readSecretUntilEnd(prompt: "Value for '\(shown)' (end with Ctrl-D on a line of its own):\n")
                } else {
                    // Enter alone or Ctrl-D at the prompt is a slip, not a value (an empty value can come from stdin).
                    guard let typed = try terminal.readSingleLineSecret(prompt: "Value for '\(shown)': ") else {
                        throw CLIError.message("no value typed: nothing stored", exitCode: Exit.failure)
                    }
                    value = typed
                }
                guard value.count > 0 else { throw CLIError.message("no value typed: nothing stored", exitCode: Exit.failure) }
            } else {
                value = try SecretInput.read(fd: 0, untilNewline: false, name: "stdin")
                if how.trimNewline { value = value.droppingFinalNewline() }
                if value.count == 0 && exists && !how.allowEmpty {
                    throw CLIError.emptyInput(name: name)
                }
                if !how.trimNewline, value.droppingFinalNewline().count < value.count,
                   value.withUnsafeBytes({ bytes in bytes.filter { $0 == UInt8(ascii: "\n") }.count == 1 }) {
                    note = "\(value.count) bytes including a final newline; --trim-newline drops it"
                }
            }
            if field == "otp" {
                // What `vault otp` can make a code from, and nothing else (the error names no part of the value).
                do { _ = try TOTP(uri: value) } catch {
                    throw CLIError.message("the otp field takes an otpauth://totp/ URI or a base32 secret: \(error); nothing stored", exitCode: Exit.usage)
                }
            }
            replaced = exists
            if let document {
                try document.apply(
                    (how.noClobber ? [.requireField(entry: name, field: field, exists: false)] : [])
                        + [.setField(entry: name, field: field, value: value, secret: how.secret)])
            } else {
                try vault.update { changes in
                    if how.noClobber { changes.require(name, exists: false) }
                    try changes.put(value, forKey: name)
                }
            }
        }
        if json {
            var object: [String: Any] = ["name": name, "stored": true, "replaced": replaced]
            if let field = how.field { object["field"] = field }
            try writeJSON(object)
        } else if isatty(2) == 1 {
            // Said on a terminal only: scripts keep a silent success.
            let what = replaced ? "replaced" : "stored"
            let which = how.field.map { "field '\(TerminalText.escaped($0))' of " } ?? ""
            writeToStderr("\(what) \(which)'\(TerminalText.escaped(name))'\(note.map { " (\($0))" } ?? "")\n")
        }
    }
}

extension SecureBytes {
    /// These bytes without one final `\n` or `\r\n` (a copy in guarded memory; `self` when there is none).
    func droppingFinalNewline() -> SecureBytes {
        withUnsafeBytes { bytes in
            var count = bytes.count
            if count > 0, bytes[count - 1] == UInt8(ascii: "\n") {
                count -= 1
                if count > 0, bytes[count - 1] == UInt8(ascii: "\r") { count -= 1 }
            }
            guard count < bytes.count else { return self }
            return SecureBytes(count: count) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<count])) }
        }
    }
}

package struct Get: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the value stored under NAME, exactly as stored (a newline is added only when stdout is a terminal).",
        discussion: "The value is the entry's password field; --field prints another one, --version N a field of an earlier version ('vault history NAME' numbers them; format version 2).")

    @OptionGroup var options: VaultOptions

    @OptionGroup var entry: EntryNameOptions

    @OptionGroup var field: FieldOption

    @Option(help: ArgumentHelp("Print the field of this version: 0 the current one, 1 the newest earlier one.", valueName: "n"))
    var version: Int?

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
        guard let value = try vault.getBytes(name) else {
            // A version-2 entry may exist without a password field (only a username, say).
            if vault is any DocumentEntries, try vault.contains(name) { throw VaultError.noSuchField(key: name, field: "password") }
            throw CLIError.missingEntry(name, in: vault)
        }
        try print(value, json: json ? ["name": name] : nil)
    }

    /// What `get --field`/`--version` prints: field `field` of version `version` (nil: the current one) of entry
    /// `name`.
    static func printField(_ field: String, version: Int?, of name: String, in vault: any KeyValueVault, json: Bool) throws {
        let document = try documentEntries(vault)
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

/// Writes `secret` to stdout from guarded memory: exact to a pipe; on a terminal with a newline after it, in the
/// same write (the shell's prompt would otherwise follow the secret on its line, and two `vault get`s on one
/// terminal would print value, value, newline, newline). `get` and `generate --print` print through it.
package func writeSecret(_ secret: SecureBytes) throws {
    guard isatty(1) == 1 else { return try secret.withUnsafeBytes { try writeToStdout($0) } }
    let line = SecureBytes(count: secret.count + 1) { line in
        secret.withUnsafeBytes { if let base = $0.baseAddress { line.baseAddress!.copyMemory(from: base, byteCount: $0.count) } }
        line[secret.count] = UInt8(ascii: "\n")
    }
    try line.withUnsafeBytes { try writeToStdout($0) }
}

package struct Delete: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete the entries NAME... in one atomic write (all or none: a missing one fails unless --force).",
        discussion: "On a terminal, asks before deleting (--yes does not ask) and says what it deleted.")

    @OptionGroup var options: VaultOptions

    @Argument(
        help: "The entries' names (or give them with --name-fd, off the command line).",
        completion: NameCompletion.existingEntry)
    package var names: [String] = []

    @Option(
        name: .customLong("name-fd"),
        help: ArgumentHelp("Read names from this file descriptor, one a line, not from the command line.", valueName: "n"))
    package var nameFD: Int32?

    @Flag(name: .shortAndLong, help: "Ignore names that do not exist.")
    package var force = false

    @Flag(name: .shortAndLong, help: "Do not ask on the terminal before deleting.")
    package var yes = false

    @Flag(name: .shortAndLong, help: "Each NAME is a folder ending in '/' (e.g. 'github/'): delete every entry under it.")
    package var recursive = false

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
                if !yes, !present.isEmpty, isatty(0) == 1, let terminal = Terminal.controlling() {
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
