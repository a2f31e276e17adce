import ArgumentParser
import FoundationEssentials
import Glibc
import OTPAuth
import VaultAgent
import VaultCore
import VaultTerminal

package struct Put: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Store a value under NAME (the value is read from stdin, all bytes; a no-echo prompt on a terminal).",
        discussion: """
            On a terminal, replacing an existing entry asks first (--force does not ask), a paste of several lines at the one-line prompt is refused and discarded (--multiline reads until Ctrl-D), and stderr says whether the entry was stored or replaced. From a pipe or a file the bytes are stored exactly, a final newline included (--trim-newline drops one), except in a field that is one line by nature (username, user, login, email, url), where a single final newline is dropped (on a terminal, stderr says when a final newline was kept or dropped); an empty input never replaces an existing entry unless --allow-empty.
            """)

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

    @OptionGroup var options: VaultOptions

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

    /// Fields that are one line by nature: one final newline read from stdin is dropped (and said).
    static let oneLineFields: Set<String> = ["username", "user", "login", "email", "url"]

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
            let document = how.needsDocument ? try vault.requiringFields() : nil
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
                let oneNewlineAtTheEnd = value.droppingFinalNewline().count < value.count
                    && value.withUnsafeBytes({ bytes in bytes.filter { $0 == UInt8(ascii: "\n") }.count == 1 })
                if how.trimNewline {
                    value = value.droppingFinalNewline()
                } else if oneNewlineAtTheEnd, Self.oneLineFields.contains(field.lowercased()) {
                    // `echo bob | vault put X --field username`: the newline is echo's, not the name's.
                    value = value.droppingFinalNewline()
                    note = "its final newline dropped: \(TerminalText.escaped(field)) is one line"
                }
                if value.count == 0 && exists && !how.allowEmpty {
                    throw CLIError.emptyInput(name: name)
                }
                if !how.trimNewline, note == nil, oneNewlineAtTheEnd {
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
