import FoundationEssentials
import Glibc
import VaultCore
import VaultTerminal

/// The passphrase of a new vault, checked for strength (``PassphraseStrength``) before anything is made.
///
/// - Given without a terminal (`--passphrase-fd`, `--passphrase-file`, `VAULT_PASSPHRASE`): a weak one is refused
///   (``WeakPassphrase``, exit 1, nothing made) unless `force`.
/// - Typed on the terminal: a weak one is explained there and `Keep it anyway? [y/N]` asked; `y` keeps it, anything
///   else asks for another (three tries in all, then ``WeakPassphrase``). `force` asks nothing.
enum NewPassphrase {
    static func read(_ options: VaultOptions, force: Bool) throws -> SecureBytes {
        if options.passphraseSource.isGiven || getenv("VAULT_PASSPHRASE") != nil {
            let passphrase = try options.passphrase(prompt: "New passphrase: ", confirm: true, forNewVault: true)
            let strength = PassphraseStrength.estimate(passphrase)
            if strength.isWeak, !force { throw WeakPassphrase(strength: strength) }
            return passphrase
        }
        guard let terminal = Terminal.controlling() else { throw CLIError.noPassphraseSource }
        var last: PassphraseStrength?
        for attempt in 1...3 {
            let passphrase = try options.passphrase(prompt: "New passphrase: ", confirm: true, forNewVault: true)
            let strength = PassphraseStrength.estimate(passphrase)
            guard strength.isWeak, !force else { return passphrase }
            last = strength
            try terminal.write("vault: warning: \(WeakPassphrase(strength: strength).message)\n")
            let answer = try terminal.readLine(prompt: "Keep it anyway? [y/N] ")
            let text = answer.map { String(decoding: $0.unprotectedBytes, as: UTF8.self) } ?? ""
            if ["y", "yes"].contains(text.trimmingCharacters(in: .whitespaces).lowercased()) { return passphrase }
            if attempt < 3 { try terminal.write("Choose another (try \(attempt + 1) of 3): four or five random words make a strong one.\n") }
        }
        throw WeakPassphrase(strength: last!)
    }
}

/// A new vault's passphrase that guessing would find soon (``PassphraseStrength/isWeak``).
struct WeakPassphrase: Error, CLIReportable {
    let strength: PassphraseStrength

    var exitCode: Int32 { Exit.failure }
    var code: String { "weak_passphrase" }
    var message: String {
        let magnitude = max(0, Int(strength.log10Guesses.rounded(.down)))
        return "the passphrase is weak: about 10^\(magnitude) guesses find it, fewer than the 10^\(Int(PassphraseStrength.minimumLog10Guesses)) a vault needs ("
            + strength.reasons.joined(separator: "; ") + "); a copy of the vault file (in git, S3 or a backup) can be guessed offline, as fast as the hardware allows"
    }
    var hint: String? { "choose a longer one (four or five random words make a strong one), or keep this one with --force; nothing was created" }
}
