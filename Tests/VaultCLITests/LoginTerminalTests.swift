import Foundation
import Testing
import VaultTestSupport

/// `vault login` and `vault fetch` asking on a terminal: the binary runs on a pseudo-terminal (``PseudoTerminal``),
/// which answers each prompt.
@Suite(.processTimeLimit) struct LoginTerminalTests {
    /// Runs `vault arguments` on a pseudo-terminal with the sandbox's passphrase file; answers each pair of
    /// `Username` / `Password for` prompts with the next two entries of `answers`.
    func onTerminal(_ box: Sandbox, _ arguments: [String], answers: [String]) throws -> CLIResult {
        let steps = stride(from: 0, to: answers.count - 1, by: 2).flatMap { index in
            [(marker: "Username", keys: answers[index] + "\n"), (marker: "Password for", keys: answers[index + 1] + "\n")]
        }
        return try PseudoTerminal.run(
            CLI.vault, arguments + ["--passphrase-file", box.passphraseFile], steps: steps, environment: box.environment)
    }

    @Test func loginAsksOnTheTerminalWithoutEchoAndRetriesOnce() throws {
        let box = try Sandbox()
        try box.initVault()
        let nginx = try NginxFixture(users: ["alice": "correct horse"])
        let realm = "\(nginx.origin) (realm \"Vault Test\")"
        let result = try onTerminal(
            box, ["login", nginx.url("/private/"), "--allow-insecure-http"],
            answers: ["alice", "wrong horse", "", "correct horse"])
        #expect(result.status == 0)
        // The prompts (markers lower-cased by the driver as it answers), the usernames echoed, no password.
        #expect(result.stdoutText == """
            Log in to \(realm)
            username: alice
            password for 'alice': 
            The password for 'alice' was rejected by \(realm). Try again.
            username [alice]: 
            password for 'alice': 
            logged in to \(realm) as 'alice'
            [echo on]

            """)
        #expect(result.stderr == "")
        #expect(nginx.accessLog() == ["401 - /private/", "401 alice /private/", "200 alice /private/"])
        let list = try box.vault(["list"])
        let space = "credential/\(nginx.origin)/Vault%20Test/"
        #expect(list.stdoutText == "\(space)password\n\(space)username\ncredential/primary\n")

        // fetch on a terminal after the password changed: the stale credential is reported and asked for once.
        try nginx.setPassword("battery staple", for: "alice")
        let fetched = try onTerminal(
            box, ["fetch", nginx.url("/private/"), "--allow-insecure-http"], answers: ["", "battery staple"])
        #expect(fetched.status == 0)
        #expect(fetched.stdoutText == """
            The stored password for 'alice' was rejected by \(realm).
            username [alice]: 
            password for 'alice': 
            secret area
            [echo on]

            """)
        #expect(fetched.stderr == "")
        #expect(try box.vault(["fetch", nginx.url("/private/"), "--allow-insecure-http"]).stdoutText == "secret area\n")
    }

    @Test func interruptAtThePasswordPromptRestoresEchoAndStoresNothing() throws {
        let box = try Sandbox()
        try box.initVault()
        let nginx = try NginxFixture(users: ["alice": "correct horse"])
        let result = try PseudoTerminal.run(
            CLI.vault, ["login", nginx.url("/private/"), "--allow-insecure-http", "--passphrase-file", box.passphraseFile],
            steps: [(marker: "Username", keys: "alice\n"), (marker: "Password for", keys: "correct hor\u{03}")],
            environment: box.environment)
        #expect(result.status == 128 + SIGINT)
        #expect(result.stdoutText.hasSuffix("username: alice\npassword for 'alice': \n[echo on]\n"))
        #expect(nginx.accessLog() == ["401 - /private/"])
        #expect(try box.vault(["list"]).stdoutText == "")
    }
}
