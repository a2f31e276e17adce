import ArgumentParser
import FoundationEssentials
import VaultCore
import VaultTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `vault clip NAME [--clear SECONDS] [--osc52]`: the value on the clipboard, cleared after a while if it is still
/// there (`pass -c`).
package struct Clip: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "clip",
        abstract: "Copy the value of NAME to the clipboard and clear it after 45 seconds.",
        discussion: """
            The clipboard is wl-copy's under Wayland, else xclip's or xsel's under X11; with --osc52 the value goes to the terminal as an OSC 52 sequence, which the terminal (or tmux) puts on its clipboard, also over ssh. A tool gets the value on a pipe, never on its command line, and runs without VAULT_PASSPHRASE in its environment. Nothing is printed on stdout.

            After --clear SECONDS (default 45; 0: never) a process of its own empties the clipboard if it still holds the value (it keeps only a keyed hash of it, not the value); a value copied over it in the meantime stays. A terminal cannot be asked what its clipboard holds, so with --osc52 nothing is cleared.
            """)

    @OptionGroup var options: VaultOptions

    @OptionGroup var entry: EntryNameOptions

    @Option(name: .customLong("clear"), help: ArgumentHelp("Clear the clipboard after this many seconds if it still holds the value (0: never).", valueName: "seconds"))
    var clearSeconds: Int = 45

    @Flag(name: .customLong("osc52"), help: "Copy with an OSC 52 sequence to the terminal instead of a clipboard tool.")
    var osc52 = false

    package func validate() throws {
        guard (0...86_400).contains(clearSeconds) else { throw ValidationError("--clear must be 0 to 86400 seconds") }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            let name = try entry.resolve()
            // Which clipboard first: no passphrase is asked for a copy that cannot happen.
            let clipboard = try Clipboard.choose(osc52: osc52)
            let value = try withVault(options) { vault in
                guard let value = try vault.getBytes(name) else { throw CLIError.missingEntry(name, in: vault) }
                return value
            }
            try clipboard.copy(value)
            let clears = clearSeconds > 0 && clipboard.readArguments != nil
            if clears { try ClipboardWatch.start(clipboard, value: value, seconds: clearSeconds) }
            if options.json {
                try writeJSON([
                    "name": name, "clipboard": clipboard.rawValue, "clear_seconds": clears ? clearSeconds : 0,
                ] as [String: Any])
            } else {
                let after = clears
                    ? "; cleared in \(clearSeconds) s if it still holds it"
                    : clipboard == .osc52 ? " (OSC 52: the terminal keeps it; vault cannot clear it)" : ""
                writeToStderr("copied '\(TerminalText.escaped(name))' to the clipboard (\(clipboard.rawValue))\(after)\n")
            }
        }
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
