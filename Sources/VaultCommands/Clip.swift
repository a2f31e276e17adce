import ArgumentParser
import FoundationEssentials
import Synchronization
import VaultCore
import VaultTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `vault clip NAME [--field F | --otp] [--clear SECONDS] [--osc52]`: the value (or a field, or the current TOTP code)
/// on the clipboard, cleared after a while if it is still there (`pass -c`, `pass otp -c`, `keepassxc-cli clip -t`).
///
/// `--otp` needs HMAC-SHA-1 (swift-crypto), which `vault` does not link: `vault` runs `vault-net` for it, as for
/// `vault otp` (``RoutedVerb``), where ``OTPCodes`` is installed.
package struct Clip: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "clip",
        abstract: "Copy the value of NAME (or a field, or its one-time code) to the clipboard and clear it after 45 seconds.",
        discussion: """
            --field F copies that field instead of the value (the password field); --otp copies the current TOTP code of the otp field (as 'vault otp NAME --clip').

            The clipboard is wl-copy's under Wayland, else xclip's or xsel's under X11; with --osc52 the value goes to the terminal as an OSC 52 sequence, which the terminal (or tmux) puts on its clipboard, also over ssh. A tool gets the value on a pipe, never on its command line, and runs without VAULT_PASSPHRASE in its environment. Nothing is printed on stdout.

            After --clear SECONDS (default 45; 0: never) a process of its own empties the clipboard if it still holds the value (it keeps only a keyed hash of it, not the value); a value copied over it in the meantime stays. A terminal cannot be asked what its clipboard holds, so with --osc52 nothing is cleared.
            """)

    @OptionGroup var entry: EntryNameOptions

    @Option(name: .customLong("clear"), help: ArgumentHelp("Clear the clipboard after this many seconds if it still holds the value (0: never).", valueName: "seconds"))
    var clearSeconds: Int = 45

    @Flag(name: .customLong("osc52"), help: "Copy with an OSC 52 sequence to the terminal instead of a clipboard tool.")
    var osc52 = false

    @Option(help: ArgumentHelp("Copy this field of the entry instead of its value.", valueName: "field"))
    var field: String?

    @Flag(help: "Copy the entry's current one-time code (its otp field), as 'vault otp NAME --clip'.")
    var otp = false

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        guard (0...86_400).contains(clearSeconds) else { throw ValidationError("--clear must be 0 to 86400 seconds") }
        if otp, field != nil { throw ValidationError("give --field F or --otp, not both") }
    }

    package func run() throws {
        // The code needs vault-net's HMAC-SHA-1: this very command line, run there (before anything is read or asked).
        if otp, OTPCodes.maker == nil { VaultNetBinary.execute(CommandLine.arguments) }
        try reportingErrors(json: options.json) {
            let name = try entry.resolve()
            // Which clipboard first: no passphrase is asked for a copy that cannot happen.
            let clipboard = try Clipboard.choose(osc52: osc52)
            let value = try withVault(options) { vault -> SecureBytes in
                if otp { return try OTPCodes.code(of: name, in: vault) }
                if let field {
                    guard let record = try vault.requiringFields().record(of: name) else { throw CLIError.missingEntry(name, in: vault) }
                    guard let found = record.field(field) else { throw VaultError.noSuchField(key: name, field: field) }
                    return found.value
                }
                guard let value = try vault.getBytes(name) else { throw CLIError.missingEntry(name, in: vault) }
                return value
            }
            let what = otp ? "the code of '\(TerminalText.escaped(name))'"
                : field.map { "field '\(TerminalText.escaped($0))' of '\(TerminalText.escaped(name))'" } ?? "'\(TerminalText.escaped(name))'"
            var json: [String: Any] = ["name": name]
            if let field { json["field"] = field }
            if otp { json["otp"] = true }
            try Self.copy(value, describing: what, json: options.json ? json : nil, to: clipboard, clearSeconds: clearSeconds)
        }
    }

    /// Puts `value` on `clipboard`, starts the process that clears it after `clearSeconds` (0: never), and says so:
    /// on stderr (`what` names it), or as `json` (with the clipboard and the seconds) when given.
    package static func copy(
        _ value: SecureBytes, describing what: String, json: [String: Any]?, to clipboard: Clipboard, clearSeconds: Int
    ) throws {
        try clipboard.copy(value)
        let clears = clearSeconds > 0 && clipboard.readArguments != nil
        if clears { try ClipboardWatch.start(clipboard, value: value, seconds: clearSeconds) }
        if var json {
            json["clipboard"] = clipboard.rawValue
            json["clear_seconds"] = clears ? clearSeconds : 0
            try writeJSON(json)
        } else {
            let after = clears
                ? "; cleared in \(clearSeconds) s if it still holds it"
                : clipboard == .osc52 ? " (OSC 52: the terminal keeps it; vault cannot clear it)" : ""
            writeToStderr("copied \(what) to the clipboard (\(clipboard.rawValue))\(after)\n")
        }
    }
}

/// How a one-time code is made from an entry's `otp` field: installed by `vault-net` (its HMAC-SHA-1 is swift-crypto's,
/// which `vault` does not link); `nil` in `vault`, which then runs `vault-net` (``Clip``).
package enum OTPCodes {
    private static let installed = Mutex<(@Sendable (_ uri: SecureBytes, _ name: String) throws -> SecureBytes)?>(nil)

    /// Makes codes from now on with `maker` (the otp field's value and the entry's name → the current code).
    package static func install(_ maker: @escaping @Sendable (_ uri: SecureBytes, _ name: String) throws -> SecureBytes) {
        installed.withLock { $0 = maker }
    }

    package static var maker: (@Sendable (SecureBytes, String) throws -> SecureBytes)? { installed.withLock { $0 } }

    /// The current code of entry `name`'s otp field in `vault`.
    ///
    /// - Throws: ``CLIError/noSuchEntry(name:path:suggestions:)``; ``VaultError/noSuchField(key:field:)`` without an
    ///   otp field; what the maker throws for a field that makes no code.
    package static func code(of name: String, in vault: any KeyValueVault) throws -> SecureBytes {
        guard let record = try vault.requiringFields().record(of: name) else { throw CLIError.missingEntry(name, in: vault) }
        guard let field = record.field("otp") else { throw VaultError.noSuchField(key: name, field: "otp") }
        guard let maker else { throw CLIError.message("one-time codes are made by vault-net", exitCode: Exit.failure) }
        return try maker(field.value, name)
    }
}

/// The process `vault clip` leaves behind (``ClipboardWatch``): not for users, hidden from help and completion.
package struct ClipClear: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "clip-clear", abstract: "Clear the clipboard later if it still holds a value (vault clip's own).",
        shouldDisplay: false)

    @Option var after: Int
    @Option var clipboard: String

    package func run() throws {
        guard let clipboard = Clipboard(rawValue: clipboard), (1...86_400).contains(after) else { throw ExitCode(64) }
        // The key and the keyed hash of the value, 32 bytes each, on stdin.
        let token = SecretBuffer()
        while token.count < 64 {
            let result: Result<Int, Posix.Errno> = token.append(upTo: 64 - token.count) { region in
                Posix.valueOrErrno { read(0, region.baseAddress, region.count) }
            }
            guard case let .success(count) = result, count > 0 else { throw ExitCode(64) }
        }
        let deadline = Posix.bootTimeSeconds() + Double(after)  // suspend counts: 45 s of the user's time
        while case let left = deadline - Posix.bootTimeSeconds(), left > 0 { usleep(UInt32(min(left, 1) * 1_000_000)) }
        guard let current = clipboard.read(limit: ClipboardWatch.limit) else { return }
        let (key, expected) = token.withUnsafeBytes { bytes in
            (SecureBytes(UnsafeRawBufferPointer(rebasing: bytes[0..<32])), Array(bytes[32..<64]))
        }
        if ClipboardWatch.fingerprint(current, key: key) == expected { clipboard.clear() }
    }
}
