import Foundation
import Testing
import VaultTestSupport

/// Clients of the agent (issue 10) as a user meets them, through the real binaries: two verbs at once on one
/// terminal share one passphrase prompt; real git with `vault credential` as its helper after one `vault unlock`;
/// the DemoApp's second start with the vault unlocked in the agent. Every command runs with `VAULT_AGENT_SOCK`
/// inside the test's own directory (``AgentBox``), and the agent is stopped (SIGTERM, then whatever is left is
/// killed) at the end, also on failure. Every wait is bounded.
@Suite(.processTimeLimit) struct AgentClientTests {
    static let gitGivesUp = "fatal: could not read Username for 'https://git.example.com': terminal prompts disabled\n"
    static let noPassphrase = """
        vault: no passphrase: there is no terminal to ask on
        hint: run 'vault unlock' once, or pass --passphrase-fd N or --passphrase-file PATH, or set VAULT_PASSPHRASE

        """

    /// A value that cannot occur by chance (a test value, never a real secret).
    static func canary(_ label: String) -> String {
        label + "-CANARY-" + (0..<12).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// Stops the agent serving `box`'s socket with SIGTERM (as a user would) and waits (bounded) until it is gone;
    /// then kills whatever still serves a socket of the box.
    static func stopAgent(_ box: AgentBox) {
        if let pid = try? box.agentPID(), pid > 1, pid != getpid() {
            kill(pid, SIGTERM)
            if !AgentProcesses.waitUntilGone(pid, timeout: 10) {
                Issue.record("the agent (pid \(pid)) did not stop within 10 s of SIGTERM")
            }
        }
        box.stopAgents()
    }

    // MARK: - 1. one prompt for several clients on one terminal

    @Test func concurrentClientsOnOneTerminalShareOnePrompt() throws {
        let box = try AgentBox()
        let other = try AgentBox(sharingAgentWith: box)
        defer { Self.stopAgent(box) }
        try box.initVault()
        let value = Self.canary("value")
        // Stored without a newline: on the terminal each `get` adds one, so the two values stay on their lines.
        let put = try box.around(["put", "k"], stdin: Data(value.utf8))
        try #require(put.status == 0, "put around the agent: \(put.stderr)")

        // An agent runs (started by unlocking another vault); the test vault is locked in it.
        try other.initVault()
        try other.unlock()
        let before = try #require(try box.status(), "no agent answers after unlocking the other vault")
        #expect(before.vaults.map(\.path) == [other.vaultPath])

        // Two `vault get k` at once on one terminal; each prints its exit status after both ended. The passphrase
        // is typed once, and only while the other client waits for its turn on prompt.lock.
        let script = #""$VAULT" get k & first=$!; "$VAULT" get k; second=$?; wait "$first"; echo "[exit $? $second]""#
        let lockFile = box.socketDirectory + "/prompt.lock"
        var environment = box.environment
        environment["VAULT"] = CLI.vault
        let result = try PseudoTerminal.run(
            "/bin/sh", ["-c", script], steps: [("Vault passphrase for", box.passphrase + "\n", lockFile)],
            environment: environment, seconds: 45, timeout: 60)
        #expect(result.status == 0, "driver: exit \(result.status), stderr: \(result.stderr)")
        #expect(result.stdoutText == "\(answeredPassphrasePrompt(box.vaultPath))\n\(value)\n\(value)\n[exit 0 0]\n[echo on]\n",
            "transcript: \(result.stdoutText)")
        #expect(result.stdoutText.components(separatedBy: "assphrase").count == 2, "not exactly one prompt")
        #expect(!result.stdoutText.contains(box.passphrase), "the passphrase was echoed")
        #expect(result.stderr == "")

        // The prompt unlocked the vault in the agent (the same agent), for every client after.
        let after = try #require(try box.status(), "no agent answers after the prompt")
        #expect(after.pid == before.pid)
        #expect(after.vaults.map(\.path).sorted() == [box.vaultPath, other.vaultPath].sorted())
        let text = try box.vault(["agent", "status"])
        #expect(text.status == 0 && text.stderr == "", "agent status: exit \(text.status), \(text.stderr)")
        #expect(text.stdoutText.split(separator: "\n").contains { $0.hasPrefix("\(box.vaultPath)  idle ") },
            "agent status: \(text.stdoutText)")
        let get = try box.vault(["get", "k"])  // no terminal, no passphrase source
        #expect(get.status == 0 && get.stdout == Data(value.utf8) && get.stderr == "",
            "get after the prompt: exit \(get.status), \(get.stderr)")
    }

    // MARK: - 2. real git, `vault credential` as its helper, after one `vault unlock`

    /// git with its configuration inside the box only, no terminal (setsid), `GIT_TERMINAL_PROMPT=0`, and
    /// `!'vault' credential` as its only helper: no passphrase option, no `VAULT_PASSPHRASE`.
    static func git(_ box: AgentBox, _ arguments: [String], stdin: String) throws -> AgentRun {
        var environment = box.environment
        environment["HOME"] = box.directory
        environment["GIT_CONFIG_GLOBAL"] = box.directory + "/gitconfig"
        environment["GIT_CONFIG_NOSYSTEM"] = "1"
        environment["GIT_TERMINAL_PROMPT"] = "0"
        let helper = "!'\(CLI.vault)' credential"
        return try AgentCLI.exec(
            "/usr/bin/git", ["-c", "credential.helper=" + helper] + arguments,
            stdin: Data(stdin.utf8), environment: environment, timeout: 10)
    }

    @Test func gitUsesTheUnlockedVaultAndGetsNothingQuicklyOnceItIsLocked() throws {
        let box = try AgentBox()
        defer { Self.stopAgent(box) }
        try box.initVault()
        try box.unlock()

        let password = Self.canary("password")
        let credential = "protocol=https\nhost=git.example.com\nusername=bob\npassword=\(password)\n\n"
        let approve = try Self.git(box, ["credential", "approve"], stdin: credential)
        #expect(approve.status == 0, "git credential approve: exit \(approve.status), \(approve.stderr)")
        #expect(approve.stdout.isEmpty)
        #expect(approve.stderr == "")
        let keys = "credential/https://git.example.com:443/git/password\ncredential/https://git.example.com:443/git/username\n"
        let listed = try box.vault(["list"])
        #expect(listed.status == 0 && listed.stdoutText == keys, "list through the agent: \(listed.stdoutText) \(listed.stderr)")
        #expect(try box.around(["list"]).stdoutText == keys, "the credential is not in the file")

        let fill = try Self.git(box, ["credential", "fill"], stdin: "protocol=https\nhost=git.example.com\n\n")
        #expect(fill.status == 0, "git credential fill: exit \(fill.status), \(fill.stderr)")
        #expect(fill.stdout == Data("protocol=https\nhost=git.example.com\nusername=bob\npassword=\(password)\n".utf8),
            "git credential fill did not return the stored credential")
        #expect(fill.stderr == "")

        let lock = try box.vault(["lock", "--all"])
        #expect(lock.status == 0 && lock.stdoutText == "locked 1 vault\n", "lock --all: \(lock.stdoutText) \(lock.stderr)")

        // Locked, no terminal: the helper fails at once (its message passes through git), git gives up.
        let locked = try Self.git(box, ["credential", "fill"], stdin: "protocol=https\nhost=git.example.com\n\n")
        #expect(locked.status == 128, "git credential fill when locked: exit \(locked.status), \(locked.stderr)")
        #expect(locked.stdout.isEmpty, "git credential fill when locked printed \(locked.stdout.count) bytes")
        #expect(locked.stderr == Self.noPassphrase + Self.gitGivesUp, "stderr: \(locked.stderr)")
        #expect(locked.seconds < 5, "git credential fill when locked took \(locked.seconds) s")

        // The helper alone, as git runs it: exit 1 at once, nothing on stdout.
        let helper = try box.vault(["credential", "get"], stdin: Data("protocol=https\nhost=git.example.com\n\n".utf8))
        #expect(helper.status == 1, "vault credential get when locked: exit \(helper.status), \(helper.stderr)")
        #expect(helper.stdout.isEmpty)
        #expect(helper.stderr == Self.noPassphrase, "stderr: \(helper.stderr)")
        #expect(helper.seconds < 2, "vault credential get when locked took \(helper.seconds) s")

        // Nothing got unlocked on the way, and the credential is still in the file.
        #expect(try box.status()?.vaults == [], "the agent holds a vault after the locked fill")
        #expect(try box.around(["list"]).stdoutText == keys)
    }

    // MARK: - 3. the DemoApp's second start asks nothing

    static func demoApp(_ box: AgentBox, _ arguments: [String]) throws -> AgentRun {
        try AgentCLI.exec(
            CLI.binDirectory.appendingPathComponent("DemoApp").path, arguments + ["--allow-insecure-http"],
            environment: box.environment, timeout: 60)
    }

    @Test func demoAppSecondStartWithTheVaultUnlockedAsksNothing() async throws {
        let box = try AgentBox()  // no vault yet: the DemoApp creates it
        defer { Self.stopAgent(box) }
        let passwordFile = box.directory + "/password"
        FileManager.default.createFile(
            atPath: passwordFile, contents: Data((DeviceCLITests.password + "\n").utf8), attributes: [.posixPermissions: 0o600])
        let emulator = try EmulatorProcess(directory: box.directory)
        defer { emulator.stop() }

        let first = try Self.demoApp(box, [
            "--server", emulator.server, "--app-id", DeviceCLITests.appId, "--username", "alice",
            "--password-file", passwordFile, "--passphrase-file", box.passphraseFile,
        ])
        #expect(first.status == 0, "first start: exit \(first.status), \(first.stderr)")
        #expect(first.stdoutText == DeviceCLITests.agenciesTable)
        #expect(first.stderr
            == "created vault '\(box.vaultPath)'\nregistered with \(emulator.server) (application \(DeviceCLITests.appId))\n")
        let connections = try await emulator.connectionIds()
        #expect(connections.count == 1)

        let unlocked = try box.vault(["unlock", "--vault", box.vaultPath], source: true)
        #expect(unlocked.status == 0, "unlock: exit \(unlocked.status), \(unlocked.stderr)")
        #expect(unlocked.stdoutText == "unlocked vault '\(box.vaultPath)' (idle 15m, max 8h)\n")

        // No passphrase option, no VAULT_PASSPHRASE, no terminal, no flags.
        try await emulator.resetStats()
        let second = try Self.demoApp(box, [])
        #expect(second.status == 0, "second start: exit \(second.status), \(second.stderr)")
        #expect(second.stdoutText == DeviceCLITests.agenciesTable)
        #expect(second.stderr == "registration with \(emulator.server) verified\n")
        #expect(try await emulator.stats() == ["serviceRoot": ["200": 1], "travelAgencies": ["200": 1]])
        #expect(try await emulator.connectionIds() == connections)
        #expect(try box.status()?.vaults.map(\.path) == [box.vaultPath])
        for output in [first.stdoutText, first.stderr, second.stdoutText, second.stderr] {
            #expect(!output.contains(DeviceCLITests.password))
        }
    }
}
