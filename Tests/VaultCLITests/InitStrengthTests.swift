import Foundation
import Testing

/// Issue 35 §5: `vault init` estimates the new passphrase's strength and says why a weak one is weak. Without a
/// terminal (file, fd, environment) a weak one is refused, exit 1, nothing created, unless `--force`/`-f`; typed on a
/// real pseudo-terminal it is explained and `Keep it anyway? [y/N]` asked: `y` keeps it, anything else asks again.
@Suite(.processTimeLimit) struct InitStrengthTests {
    static let weakMessage = """
        vault: the passphrase is weak: about 10^2 guesses find it, fewer than the 10^10 a vault needs (it is one of the 1,000 most common passwords; it is short (9 characters)); a copy of the vault file (in git, S3 or a backup) can be guessed offline, as fast as the hardware allows
        hint: choose a longer one (four or five random words make a strong one), or keep this one with --force; nothing was created

        """

    @Test func withoutATerminalAWeakPassphraseIsRefusedUnlessForce() throws {
        let box = try Sandbox(passphrase: "password1")
        let fromFile = try box.vault(["init"])
        #expect(fromFile.status == 1 && fromFile.stdout.isEmpty)
        #expect(fromFile.stderr == Self.weakMessage, "\(fromFile.stderr)")
        #expect(!FileManager.default.fileExists(atPath: box.vaultPath))
        let fromEnvironment = try box.vault(["init", "--json"], passphrase: false, extraEnvironment: ["VAULT_PASSPHRASE": "password1"])
        #expect(fromEnvironment.status == 1 && fromEnvironment.stderr.contains("\"code\":\"weak_passphrase\""), "\(fromEnvironment.stderr)")
        #expect(!fromEnvironment.stderr.contains("password1") && !fromFile.stderr.contains("password1"))
        #expect(!FileManager.default.fileExists(atPath: box.vaultPath))

        let forced = try box.vault(["init", "--force"])
        #expect(forced.status == 0 && forced.stderr.isEmpty, "\(forced.stderr)")
        #expect(try box.vault(["list"]).status == 0)
        let other = try Sandbox(passphrase: "qwertyuiop")
        #expect(try other.vault(["init", "-f"]).status == 0)
        // A strong one: nothing said.
        let strong = try Sandbox()
        let created = try strong.vault(["init"])
        #expect(created.status == 0 && created.stderr.isEmpty)
    }

    @Test func onATerminalAWeakOneIsExplainedAndKeptOnlyWhenSaid() throws {
        let box = try Sandbox()
        let weakThenStrong = try PseudoTerminal.run(CLI.vault, ["init"], steps: [
            ("New passphrase", "password1\n"), ("Repeat to confirm", "password1\n"), ("Keep it anyway?", "n\n"),
            ("New passphrase", "typed on a tty\n"), ("Repeat to confirm", "typed on a tty\n"),
        ], environment: box.environment)
        #expect(weakThenStrong.status == 0, "\(weakThenStrong.stdoutText)")
        let warning = Self.weakMessage.split(separator: "\n")[0].replacingOccurrences(of: "vault: ", with: "vault: warning: ")
        #expect(weakThenStrong.stdoutText == """
            new passphrase: 
            repeat to confirm: 
            \(warning)
            keep it anyway? [y/N] n
            Choose another (try 2 of 3): four or five random words make a strong one.
            new passphrase: 
            repeat to confirm: 
            created vault '\(box.vaultPath)' (format version 3, key derivation: Argon2id, 8 KiB, 1 pass)
            [echo on]

            """, "\(weakThenStrong.stdoutText)")
        #expect(try box.vault(["list"], passphrase: false, extraEnvironment: ["VAULT_PASSPHRASE": "typed on a tty"]).status == 0)

        let kept = try Sandbox()
        let yes = try PseudoTerminal.run(CLI.vault, ["init"], steps: [
            ("New passphrase", "password1\n"), ("Repeat to confirm", "password1\n"), ("Keep it anyway?", "y\n"),
        ], environment: kept.environment)
        #expect(yes.status == 0 && yes.stdoutText.contains("created vault"), "\(yes.stdoutText)")
        #expect(try kept.vault(["list"], passphrase: false, extraEnvironment: ["VAULT_PASSPHRASE": "password1"]).status == 0)

        // Three weak ones, none kept: exit 1, nothing made.
        let refused = try Sandbox()
        let three = try PseudoTerminal.run(CLI.vault, ["init"], steps: Array(repeating: [
            ("New passphrase", "password1\n"), ("Repeat to confirm", "password1\n"), ("Keep it anyway?", "\n"),
        ], count: 3).flatMap { $0 }, environment: refused.environment)
        #expect(three.status == 1 && three.stdoutText.contains("nothing was created"), "\(three.stdoutText)")
        #expect(!FileManager.default.fileExists(atPath: refused.vaultPath))
        for result in [weakThenStrong, yes, three] { #expect(!result.stdoutText.contains("password1")) }
    }
}
