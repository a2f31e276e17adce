import ArgumentParser
import Foundation
import VaultCommands
import VaultCore
import VaultOTP
import VaultTerminal

/// `vault otp NAME [--at UNIXTIME] [--json]`: the time-based one-time password of the entry's `otp` field (an
/// `otpauth://` URI, or a bare base32 secret), as `pass otp` prints it.
///
/// It runs in `vault-net`: HMAC-SHA-1 comes from swift-crypto (BoringSSL), which `vault`'s other verbs do not
/// link (``RoutedVerb``).
package struct OTPCommand: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "otp",
        abstract: RoutedVerb.named("otp").abstract,
        discussion: """
            The entry's otp field holds an otpauth://totp/ URI (what authenticator apps, KeePassXC, Bitwarden and pass-otp keep: secret, and optionally algorithm SHA1/SHA256/SHA512, digits 6-8, period, issuer; otpauth://steam/ or encoder=steam for Steam Guard) or a bare base32 secret (SHA-1, 6 digits, 30 s). Store one with 'vault put NAME --field otp'.

            The code goes to stdout (with a newline only on a terminal); --json adds the seconds it stays valid. With --clip it goes to the clipboard instead, cleared after --clear SECONDS (default 45) if it still holds it, as 'vault clip NAME --otp' does ('vault clip --help'). Format version 2.
            """)

    @OptionGroup var entry: EntryNameOptions

    @Option(name: .customLong("at"), help: ArgumentHelp("The code at this time (seconds since the Unix epoch) instead of now.", valueName: "unixtime"))
    var at: Int64?

    @Flag(help: "Copy the code to the clipboard instead of printing it (as 'vault clip NAME --otp').")
    var clip = false

    @Option(name: .customLong("clear"), help: ArgumentHelp("With --clip: clear the clipboard after this many seconds if it still holds the code (0: never).", valueName: "seconds"))
    var clearSeconds: Int = 45

    @Flag(name: .customLong("osc52"), help: "With --clip: copy with an OSC 52 sequence to the terminal instead of a clipboard tool.")
    var osc52 = false

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        if let at, at < 0 || at > 1 << 62 { throw ValidationError("--at takes seconds since the Unix epoch (0 to 2^62)") }
        guard (0...86_400).contains(clearSeconds) else { throw ValidationError("--clear must be 0 to 86400 seconds") }
        if !clip, osc52 || clearSeconds != 45 { throw ValidationError("--clear and --osc52 go with --clip") }
        if let fd = entry.nameFD, fd == options.passphraseFD {
            throw ValidationError("the name and the passphrase need different descriptors")
        }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            let name = try entry.resolve()
            if clip {
                // Which clipboard first: no passphrase is asked for a copy that cannot happen.
                let clipboard = try Clipboard.choose(osc52: osc52)
                let code = try withVault(options) { vault in try OTPCodes.code(of: name, in: vault) }
                return try Clip.copy(
                    code, describing: "the code of '\(TerminalText.escaped(name))'", json: options.json ? ["name": name, "otp": true] : nil,
                    to: clipboard, clearSeconds: clearSeconds)
            }
            let uri = try withVault(options) { vault -> SecureBytes in
                guard let record = try vault.requiringFields().records(of: name, .current)?.first else {
                    throw CLIError.missingEntry(name, in: vault)
                }
                guard let field = record.field("otp") else { throw VaultError.noSuchField(key: name, field: "otp") }
                return field.value
            }
            let time = at ?? Int64(Date().timeIntervalSince1970)
            let totp: TOTP, code: SecureBytes
            do throws(OTPError) {
                totp = try TOTP(uri: uri)
                code = try totp.code(at: time)
            } catch {
                throw OTPFieldError(name: name, error: error)
            }
            guard options.json else { return try writeSecret(code) }
            var object: [String: Any] = [
                "name": name, "code": String(decoding: code.unprotectedBytes, as: UTF8.self), "at": time,
                "period": totp.period, "seconds_left": totp.secondsLeft(at: time),
            ]
            if let issuer = totp.issuer { object["issuer"] = issuer }
            if let account = totp.account { object["account"] = account }
            try writeJSON(object)
        }
    }
}

extension OTPCommand {
    /// Makes ``OTPCodes`` compute codes in this process (`vault-net`: `vault clip NAME --otp` runs here).
    package static func installCodes() {
        OTPCodes.install { uri, name in
            do throws(OTPError) {
                return try TOTP(uri: uri).code(at: Int64(Date().timeIntervalSince1970))
            } catch {
                throw OTPFieldError(name: name, error: error)
            }
        }
    }
}

/// The `otp` field of an entry that does not make a code (its words, at the CLI edge; ``OTPError`` never holds the
/// secret).
struct OTPFieldError: Error, CLIReportable {
    let name: String
    let error: OTPError

    var exitCode: Int32 { Exit.failure }
    var code: String { "invalid_otp" }
    var message: String { "the otp field of '\(TerminalText.escaped(name))' gives no code: \(error)" }
    var hint: String? {
        "store an otpauth://totp/ URI or a base32 secret: vault put '\(TerminalText.escaped(name))' --field otp"
    }
}
