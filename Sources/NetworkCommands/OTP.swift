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

            The code goes to stdout (with a newline only on a terminal); --json adds the seconds it stays valid. Format version 2.
            """)

    @OptionGroup var options: VaultOptions

    @OptionGroup var entry: EntryNameOptions

    @Option(name: .customLong("at"), help: ArgumentHelp("The code at this time (seconds since the Unix epoch) instead of now.", valueName: "unixtime"))
    var at: Int64?

    package func validate() throws {
        if let at, at < 0 || at > 1 << 62 { throw ValidationError("--at takes seconds since the Unix epoch (0 to 2^62)") }
        if let fd = entry.nameFD, fd == options.passphraseFD {
            throw ValidationError("the name and the passphrase need different descriptors")
        }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            let name = try entry.resolve()
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
