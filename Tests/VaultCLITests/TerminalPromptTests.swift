import Foundation
import Testing

/// The passphrase and value prompts on a real pseudo-terminal (``PseudoTerminal``): what the user sees, that
/// nothing secret is echoed, and that Ctrl-C while a secret is typed ends the program by SIGINT (the previous
/// disposition, exit status 130 in a shell) after turning echo back on, and changes nothing.
@Suite(.processTimeLimit) struct TerminalPromptTests {
    static let sigint: Int32 = 128 + SIGINT

    /// Runs `vault arguments` on a terminal with the sandbox's vault and no passphrase source, so it asks.
    func onTerminal(_ box: Sandbox, _ arguments: [String], _ steps: [(marker: String, keys: String)]) throws -> CLIResult {
        try PseudoTerminal.run(CLI.vault, arguments, steps: steps, environment: box.environment)
    }

    @Test func passphraseAndValueAreAskedWithoutEcho() throws {
        let box = try Sandbox()
        let created = try onTerminal(
            box, ["init"], [("New passphrase", "typed on a tty\n"), ("Repeat to confirm", "typed on a tty\n")])
        #expect(created.status == 0)
        #expect(created.stdoutText == """
            new passphrase: 
            repeat to confirm: 
            created vault '\(box.vaultPath)' (format version 3, key derivation: Argon2id, 8 KiB, 1 pass)
            [echo on]

            """)
        let put = try onTerminal(box, ["put", "api-token"], [("Vault passphrase for", "typed on a tty\n"), ("Value for", "s3cr3t-value\n")])
        #expect(put.status == 0)
        #expect(put.stdoutText == "\(answeredPassphrasePrompt(box.vaultPath))\nvalue for 'api-token': \nstored 'api-token'\n[echo on]\n")
        let got = try onTerminal(box, ["get", "api-token"], [("Vault passphrase for", "typed on a tty\n")])
        #expect(got.status == 0)
        // The value as stored, then a newline because stdout is a terminal (piped, nothing is added).
        #expect(got.stdoutText == "\(answeredPassphrasePrompt(box.vaultPath))\ns3cr3t-value\n[echo on]\n")

        // Three tries (issue 25), then the error.
        let wrong = try onTerminal(box, ["get", "api-token"], Array(repeating: ("Vault passphrase for", "typed on a TTY\n"), count: 3))
        #expect(wrong.status == 3)
        let prompt = answeredPassphrasePrompt(box.vaultPath)
        #expect(wrong.stdoutText.hasPrefix("\(prompt)\nvault: incorrect passphrase; try 2 of 3\n\(prompt)\nvault: incorrect passphrase; try 3 of 3\n\(prompt)\nvault: cannot open vault '\(box.vaultPath)': incorrect passphrase"), "\(wrong.stdoutText)")
        #expect(!wrong.stdoutText.contains("typed on a"))
    }

    @Test func confirmationThatDiffersCreatesNothing() throws {
        let box = try Sandbox()
        // Three tries (issue 25), then exit 1, and no file.
        let result = try onTerminal(box, ["init"], [
            ("New passphrase", "first one\n"), ("Repeat to confirm", "first 0ne\n"),
            ("New passphrase", "second\n"), ("Repeat to confirm", "sec0nd\n"),
            ("New passphrase", "third\n"), ("Repeat to confirm", "th1rd\n"),
        ])
        #expect(result.status == 1)
        #expect(result.stdoutText == """
            new passphrase: \nrepeat to confirm: \nThe passphrases do not match; try again (2 of 3).
            new passphrase: \nrepeat to confirm: \nThe passphrases do not match; try again (3 of 3).
            new passphrase: \nrepeat to confirm: \nvault: the passphrases do not match
            [echo on]

            """)
        #expect(!FileManager.default.fileExists(atPath: box.vaultPath))
    }

    @Test func interruptAtThePassphrasePromptRestoresEchoAndEndsBySIGINT() throws {
        let box = try Sandbox()
        try box.initVault()
        let result = try onTerminal(box, ["get", "anything"], [("Vault passphrase for", "half-typ\u{03}")])
        #expect(result.status == Self.sigint)
        #expect(result.stdoutText == "\(answeredPassphrasePrompt(box.vaultPath))\n[echo on]\n")
        #expect(result.stderr == "")
    }

    @Test func interruptWhileConfirmingANewPassphraseKeepsTheOldOne() throws {
        let box = try Sandbox()
        try box.initVault()
        try box.vault(["put", "k"], stdin: Data("v".utf8))
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let result = try onTerminal(
            box, ["passwd", "--passphrase-file", box.passphraseFile],
            [("New passphrase", "replacement\n"), ("Repeat to confirm", "replace\u{03}")])
        #expect(result.status == Self.sigint)
        #expect(result.stdoutText == "new passphrase: \nrepeat to confirm: \n[echo on]\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)
        #expect(try box.vault(["get", "k"]).stdoutText == "v")
    }

    @Test func interruptWhileTypingAValueStoresNothing() throws {
        let box = try Sandbox()
        try box.initVault()
        let result = try onTerminal(
            box, ["put", "k", "--passphrase-file", box.passphraseFile], [("Value for", "partial val\u{03}")])
        #expect(result.status == Self.sigint)
        #expect(result.stdoutText == "value for 'k': \n[echo on]\n")
        #expect(try box.vault(["list"]).stdoutText == "")
    }
}
