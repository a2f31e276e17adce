import Foundation
import Testing
import VaultCore
import VaultTestSupport

/// `vault unlock`, `vault lock`, `vault agent` (issue 10) through the real binary: every test has its own agent
/// (`VAULT_AGENT_SOCK` inside its own temporary directory, ``AgentBox``) and kills it at the end, also on failure.
/// No command has a terminal or a `VAULT_PASSPHRASE`; a command without `--passphrase-file` has no passphrase
/// source at all. Waits poll; the expiry tests sleep until just past the deadline, then assert.
@Suite(.processTimeLimit) struct AgentTests {
    static let noPassphrase = "vault: no passphrase: there is no terminal to ask on"

    /// A value that cannot occur by chance (a test value, never a real secret).
    static func canary(_ label: String) -> String {
        label + "-CANARY-" + (0..<12).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// `{"error":{"code":…,"exit_code":…}}` on stderr.
    static func jsonError(_ stderr: String) -> (code: String?, exitCode: Int?) {
        let object = try? JSONSerialization.jsonObject(with: Data(stderr.utf8)) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        return (error?["code"] as? String, error?["exit_code"] as? Int)
    }

    /// The "locked" failure: exit 1 at once (well under a second), nothing on stdout, the no-passphrase error and
    /// a hint naming `vault unlock`.
    static func expectLocked(_ result: AgentRun, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 1, "\(what): exit \(result.status), stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, "\(what): \(result.stdout.count) bytes on stdout", sourceLocation: sourceLocation)
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(
            lines.count == 3 && lines[0] == noPassphrase && lines[1].hasPrefix("hint: ") && lines[1].contains("vault unlock")
                && lines[2].isEmpty,
            "\(what): stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.seconds < 1.0, "\(what): took \(result.seconds) s", sourceLocation: sourceLocation)
    }

    /// The same with `--json`: exit 1 at once, code `no_passphrase_source`.
    static func expectLockedJSON(_ result: AgentRun, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 1, "\(what): exit \(result.status), stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, "\(what): \(result.stdout.count) bytes on stdout", sourceLocation: sourceLocation)
        let error = jsonError(result.stderr)
        #expect(error.code == "no_passphrase_source" && error.exitCode == 1, "\(what): stderr: \(result.stderr)",
            sourceLocation: sourceLocation)
        #expect(result.seconds < 1.0, "\(what): took \(result.seconds) s", sourceLocation: sourceLocation)
    }

    /// `vault agent status` with no agent answering: exit 1, `vault: no agent is running…`.
    static func expectNoAgent(_ box: AgentBox, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let status = try box.vault(["agent", "status"])
        #expect(status.status == 1 && status.stdout.isEmpty && status.stderr.hasPrefix("vault: no agent is running"),
            "\(what): agent status: exit \(status.status), stdout: \(status.stdoutText), stderr: \(status.stderr)",
            sourceLocation: sourceLocation)
    }

    /// No process listens on a socket below `directory`.
    static func expectNoListener(under directory: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let holders = AgentProcesses.holdingSockets { $0.hasPrefix(directory + "/") }
        #expect(holders.isEmpty, "\(what): processes hold sockets below \(directory): \(holders.sorted())",
            sourceLocation: sourceLocation)
    }

    /// Waits (bounded, polling) until `condition` is true.
    static func poll(timeout: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
    }

    /// A box with an initialised vault holding `k` = a canary, and its agent stopped at the end.
    static func boxWithEntry() throws -> (AgentBox, String) {
        let box = try AgentBox()
        try box.initVault()
        let value = canary("value")
        let put = try box.around(["put", "k"], stdin: Data(value.utf8))
        try #require(put.status == 0, "put around the agent: \(put.stderr)")
        return (box, value)
    }

    // MARK: - unlock, then every verb without a passphrase

    @Test func unlockPrintsTheVaultAndTheDefaultDurations() throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let unlocked = try box.unlock()
        #expect(unlocked.stdoutText == "unlocked vault '\(box.vaultPath)' (idle 15m, max 8h)\n")
        #expect(unlocked.stderr == "")

        let status = try #require(try box.status(), "no agent answers after unlock")
        // ssh_signatures: the ssh-agent socket's, which an agent run from vault-net serves beside.
        #expect(status.keys == ["pid", "protocol", "socket", "ssh_signatures", "vaults"])
        #expect(status.protocolVersion == 6)
        #expect(status.socket == box.socketPath)
        #expect(status.vaults.map(\.path) == [box.vaultPath])
        let left = try #require(status.vaults.first)
        #expect((895...900).contains(left.idleSecondsLeft), "idle left \(left.idleSecondsLeft)")
        #expect((28_795...28_800).contains(left.maxSecondsLeft), "max left \(left.maxSecondsLeft)")
        #expect(AgentProcesses.isAlive(status.pid))
        #expect(status.pid != getpid())

        let text = try box.vault(["agent", "status"])
        #expect(text.status == 0 && text.stderr == "")
        let line = text.stdoutText
        let prefix = "\(box.vaultPath)  idle ", middle = "s left, max ", suffix = "s left\n"
        if line.hasPrefix(prefix), line.hasSuffix(suffix),
            let range = line.range(of: middle, range: line.index(line.startIndex, offsetBy: prefix.count)..<line.endIndex)
        {
            let idle = Int(line[line.index(line.startIndex, offsetBy: prefix.count)..<range.lowerBound])
            let max = Int(line[range.upperBound..<line.index(line.endIndex, offsetBy: -suffix.count)])
            #expect(idle.map { (895...900).contains($0) } == true, "status line: \(line)")
            #expect(max.map { (28_795...28_800).contains($0) } == true, "status line: \(line)")
        } else {
            Issue.record("status line: \(line)")
        }

        // The agent is detached: it holds none of the unlock's stdin, stdout or stderr (temporary files here),
        // and it is the only process serving the socket.
        let targets = AgentProcesses.descriptorTargets(status.pid)
        #expect(!targets.contains { $0.contains("vault-agent-io-") }, "the agent kept the client's stdio: \(targets)")
        // Polled: the scan of /proc (each process's descriptors, then /proc/net/unix) can miss a socket under load.
        #expect(Self.poll(timeout: 3) { AgentProcesses.holdingSockets { $0 == box.socketPath } == [status.pid] },
                "holders: \(AgentProcesses.holdingSockets { $0 == box.socketPath }), agent \(status.pid)")
    }

    @Test func unlockJSONGivesTheDurationsInSeconds() throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let unlocked = try box.unlock(["--idle", "90s", "--max", "2h", "--json"])
        #expect(unlocked.stdoutText == #"{"idle_seconds":90,"max_seconds":7200,"path":"\#(box.vaultPath)","unlocked":true}"# + "\n")
        #expect(unlocked.stderr == "")
        let left = try #require(try box.status()?.vaults.first)
        #expect((85...90).contains(left.idleSecondsLeft) && (7195...7200).contains(left.maxSecondsLeft), "\(left)")

        // Text output echoes the durations in the form given.
        let again = try box.unlock(["--idle", "2m", "--max", "45s"])
        #expect(again.stdoutText == "unlocked vault '\(box.vaultPath)' (idle 2m, max 45s)\n")
        let defaults = try box.unlock(["--json", "--force"])
        #expect(defaults.stdoutText == #"{"idle_seconds":900,"max_seconds":28800,"path":"\#(box.vaultPath)","unlocked":true}"# + "\n")
        // Unlocked already, nothing new asked: said, nothing asked (no passphrase source given), exit 0.
        let already = try AgentCLI.exec(CLI.vault, ["unlock"], environment: box.environment)
        #expect(already.status == 0, "\(already.stderr)")
        #expect(already.stdoutText.hasPrefix("vault '\(box.vaultPath)' is already unlocked (locks in "), "\(already.stdoutText)")
        #expect(already.stdoutText.hasSuffix(" at most); --force asks again\n"))
        let alreadyJSON = try AgentCLI.exec(CLI.vault, ["unlock", "--json"], environment: box.environment)
        let object = try JSONSerialization.jsonObject(with: alreadyJSON.stdout) as? [String: Any]
        #expect(object?["already_unlocked"] as? Bool == true && object?["unlocked"] as? Bool == true)
    }

    @Test func unlockReadsThePassphraseFromADescriptor() throws {
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let unlocked = try AgentCLI.exec(
            "/bin/sh", ["-c", "exec 3<\"$PASSFILE\"; exec \"$VAULT\" unlock --passphrase-fd 3 --idle 5m"],
            environment: box.environment.merging(["VAULT": CLI.vault, "PASSFILE": box.passphraseFile]) { $1 })
        #expect(unlocked.status == 0, "unlock --passphrase-fd: \(unlocked.stderr)")
        #expect(unlocked.stdoutText == "unlocked vault '\(box.vaultPath)' (idle 5m, max 8h)\n")
        let get = try box.vault(["get", "k"])
        #expect(get.status == 0 && get.stdout == Data(value.utf8), "get through the agent: exit \(get.status), \(get.stderr)")
        // The agent it started keeps no descriptor of its starter: not the passphrase descriptor (3), nothing
        // above 2 that the unlock had open (a pipe kept open there would make `$(vault unlock ...)`-style
        // callers, or anyone waiting for the end of a pipe, wait until the agent exits).
        let pid = try #require(try box.agentPID())
        let targets = AgentProcesses.descriptorTargets(pid)
        #expect(!targets.contains(box.passphraseFile), "the agent kept the passphrase descriptor: \(targets)")
    }

    @Test func everyVerbWorksThroughTheAgentWithTheSameOutput() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        try box.unlock()

        let value = Self.canary("value")
        let put = try box.vault(["put", "k1"], stdin: Data(value.utf8))
        #expect(put.status == 0 && put.stdout.isEmpty && put.stderr == "", "put: exit \(put.status), \(put.stderr)")
        let get = try box.vault(["get", "k1"])
        #expect(get.status == 0 && get.stderr == "", "get: exit \(get.status), \(get.stderr)")
        #expect(get.stdout == Data(value.utf8), "get through the agent printed something other than the value")

        let binary = Data((0...255).map { UInt8($0) } + Array("\n\n".utf8))
        #expect(try box.vault(["put", "binary"], stdin: binary).status == 0)
        #expect(try box.vault(["get", "binary"]).stdout == binary, "binary value changed through the agent")
        #expect(try box.vault(["put", "empty"], stdin: Data()).status == 0)
        let empty = try box.vault(["get", "empty"])
        #expect(empty.status == 0 && empty.stdout.isEmpty)

        let list = try box.vault(["list"])
        #expect(list.status == 0 && list.stderr == "")
        #expect(list.stdoutText == "binary\nempty\nk1\n")

        // Byte for byte what the same verb prints without the agent (same vault, same state).
        for args in [["list", "--json"], ["get", "k1", "--json"], ["get", "binary", "--json"], ["info"], ["info", "--json"]] {
            let through = try box.vault(args), around = try box.around(args)
            #expect(through.status == 0 && around.status == 0, "\(args): exit \(through.status) / \(around.status): \(through.stderr)")
            #expect(through.stdout == around.stdout, "\(args): the output differs with and without the agent")
            #expect(through.stderr == around.stderr, "\(args): stderr \(through.stderr) / \(around.stderr)")
        }

        // The batches with conditions (protocol version 2): the same outcome through the agent as around it.
        #expect(try box.vault(["cp", "k1", "copy"]).status == 0)
        #expect(try box.around(["get", "copy"]).stdout == Data(value.utf8), "cp through the agent")
        #expect(try box.vault(["mv", "copy", "moved"]).status == 0)
        #expect(try box.around(["list"]).stdoutText == "binary\nempty\nk1\nmoved\n", "mv through the agent")
        let clobber = try box.vault(["put", "moved", "--no-clobber"], stdin: Data("x".utf8))
        #expect(clobber.status == 7 && clobber.stderr == "vault: an entry 'moved' already exists in vault '\(box.vaultPath)'\n")
        let partial = try box.vault(["delete", "moved", "nope"])
        #expect(partial.status == 2 && partial.stderr.hasPrefix("vault: no entry 'nope' in vault"), "\(partial.stderr)")
        #expect(try box.vault(["delete", "moved"]).status == 0)
        #expect(try box.around(["list"]).stdoutText == "binary\nempty\nk1\n")

        let missing = try box.vault(["get", "nope"])
        #expect(missing.status == 2 && missing.stdout.isEmpty)
        #expect(missing.stderr == "vault: no entry 'nope' in vault '\(box.vaultPath)'\nhint: 'vault list' shows the names\n")

        let delete = try box.vault(["delete", "k1"])
        #expect(delete.status == 0 && delete.stdout.isEmpty && delete.stderr == "", "delete: \(delete.stderr)")
        #expect(try box.vault(["get", "k1"]).status == 2)
        let again = try box.vault(["delete", "k1"])
        #expect(again.status == 2 && again.stderr.hasPrefix("vault: no entry 'k1' in vault"), "\(again.stderr)")
        #expect(try box.around(["list"]).stdoutText == "binary\nempty\n", "the deletion is not in the file")
    }

    /// A file holding "a new passphrase" (0600) in the box.
    static func newPassphraseFile(in box: AgentBox) throws -> String {
        let path = box.directory + "/new-passphrase"
        try #require(FileManager.default.createFile(
            atPath: path, contents: Data("a new passphrase\n".utf8), attributes: [.posixPermissions: 0o600]))
        return path
    }

    @Test func passwdThroughTheAgentChangesThePassphraseOfTheFile() throws {
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        let newFile = try Self.newPassphraseFile(in: box)
        // Through the agent the current passphrase is still asked (issue 25): typed on a terminal.
        let passwd = try PseudoTerminal.run(
            CLI.vault, ["passwd", "--new-passphrase-file", newFile],
            playing: [.init(marker: "Vault passphrase for", keys: box.passphrase + "\n")], environment: box.environment, seconds: 30)
        #expect(passwd.status == 0, "passwd through the agent: \(passwd.stdoutText)")
        #expect(passwd.stdoutText.hasSuffix("\npassphrase changed for vault '\(box.vaultPath)'\n[echo on]\n"), "\(passwd.stdoutText)")

        // Without the agent: the new passphrase opens the file, the old one does not.
        let noAgent = ["VAULT_AGENT_SOCK": box.elsewhereSocket]
        let withNew = try box.vault(["get", "k", "--passphrase-file", newFile], environment: noAgent)
        #expect(withNew.status == 0 && withNew.stdout == Data(value.utf8), "new passphrase: exit \(withNew.status), \(withNew.stderr)")
        let withOld = try box.around(["get", "k"])
        #expect(withOld.status == 3 && withOld.stdout.isEmpty, "old passphrase: exit \(withOld.status), \(withOld.stderr)")
        #expect(withOld.stderr.hasPrefix("vault: cannot open vault '\(box.vaultPath)': incorrect passphrase"))
    }

    /// A passphrase change made around the agent rotates the data key: the agent's key is retired, so it locks
    /// the vault (the next verb asks as for any locked vault) instead of reporting a wrong passphrase, and
    /// never writes with the retired key.
    @Test func passwdAroundTheAgentLocksTheVaultInTheAgent() throws {
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        let newFile = try Self.newPassphraseFile(in: box)
        let passwd = try box.around(["passwd", "--new-passphrase-file", newFile])
        try #require(passwd.status == 0, "passwd around the agent: \(passwd.stderr)")
        let afterChange = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        Self.expectLocked(try box.vault(["get", "k"]), "get after a passphrase change around the agent")
        Self.expectLocked(try box.vault(["put", "k"], stdin: Data("x".utf8)), "put after the change")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == afterChange, "the agent wrote with a retired key")
        #expect(try box.status()?.vaults.isEmpty == true, "the agent still lists the vault as unlocked")
        // Unlocked again with the new passphrase, it serves the vault.
        let unlock = try box.vault(["unlock", "--passphrase-file", newFile])
        try #require(unlock.status == 0, "unlock with the new passphrase: \(unlock.stderr)")
        let get = try box.vault(["get", "k"])
        #expect(get.status == 0 && get.stdout == Data(value.utf8), "get after unlocking again: \(get.stderr)")
    }

    // MARK: - locked: fail at once

    @Test func lockedVaultFailsAtOnceWithAHintToUnlock() throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let newFile = box.directory + "/new-passphrase"
        FileManager.default.createFile(atPath: newFile, contents: Data("new\n".utf8), attributes: [.posixPermissions: 0o600])
        // Never unlocked, no agent running.
        for (args, stdin) in [
            (["get", "k"], ""), (["put", "k2"], "v"), (["delete", "k"], ""), (["list"], ""),
            (["passwd", "--new-passphrase-file", newFile], ""),
        ] {
            Self.expectLocked(try box.vault(args, stdin: Data(stdin.utf8)), "\(args) with no agent")
            Self.expectLockedJSON(try box.vault(args + ["--json"], stdin: Data(stdin.utf8)), "\(args) --json with no agent")
        }
        // Nothing changed, and a locked verb started no agent.
        #expect(try box.around(["list"]).stdoutText == "k\n")
        try Self.expectNoAgent(box, "after locked verbs")
        Self.expectNoListener(under: box.directory, "after locked verbs")
    }

    @Test func unlockWithoutTerminalOrPassphraseSourceFailsAtOnceAndStartsNothing() throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let result = try box.vault(["unlock"])
        #expect(result.status == 1, "exit \(result.status), \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix(Self.noPassphrase + "\n"), "stderr: \(result.stderr)")
        #expect(result.seconds < 1.0, "took \(result.seconds) s")
        let json = try box.vault(["unlock", "--json"])
        #expect(json.status == 1 && Self.jsonError(json.stderr).code == "no_passphrase_source", "\(json.stderr)")
        try Self.expectNoAgent(box, "after a failed unlock")
        #expect(!AgentFiles.exists(box.socketPath), "a socket was created")
        Self.expectNoListener(under: box.directory, "after a failed unlock")
    }

    @Test func wrongPassphraseUnlocksNothing() throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let wrongFile = box.directory + "/wrong"
        FileManager.default.createFile(atPath: wrongFile, contents: Data("not it\n".utf8), attributes: [.posixPermissions: 0o600])
        let wrong = try box.vault(["unlock", "--passphrase-file", wrongFile])
        #expect(wrong.status == 3, "exit \(wrong.status), \(wrong.stderr)")
        #expect(wrong.stdout.isEmpty)
        #expect(wrong.stderr.hasPrefix("vault: cannot open vault '\(box.vaultPath)': incorrect passphrase"), "\(wrong.stderr)")
        let json = try box.vault(["unlock", "--passphrase-file", wrongFile, "--json"])
        #expect(json.status == 3 && Self.jsonError(json.stderr).code == "wrong_passphrase", "\(json.stderr)")
        // An agent may have been started, but it holds nothing.
        if let status = try box.status() {
            #expect(status.vaults.isEmpty, "unlocked after a wrong passphrase: \(status.vaults)")
            let text = try box.vault(["agent", "status"])
            #expect(text.status == 0 && text.stdoutText == "no vault unlocked\n", "\(text.stdoutText)")
        }
        Self.expectLocked(try box.vault(["get", "k"]), "get after a wrong unlock")
    }

    @Test("a bad duration is a usage error and starts nothing",
        arguments: ["0", "1h30", "367d", "abc", "-5m", "1.5h", "", "m", "15 m", "1m1m", "99999999999999999999s"])
    func badDurationIsAUsageError(_ duration: String) throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        for option in ["--idle", "--max"] {
            let result = try box.vault(["unlock", option, duration], source: true)
            #expect(result.status == 64, "\(option) '\(duration)': exit \(result.status), \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        try Self.expectNoAgent(box, "after bad durations")
    }

    @Test func passphraseSourceWorksWhateverTheAgentHolds() throws {
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        func getWithFile(_ what: String) throws {
            let get = try box.vault(["get", "k"], source: true)
            #expect(get.status == 0 && get.stdout == Data(value.utf8), "\(what): exit \(get.status), \(get.stderr)")
            #expect(get.seconds < 5, "\(what): took \(get.seconds) s")
        }
        try getWithFile("no agent")
        try box.unlock()
        try getWithFile("vault unlocked in the agent")
        #expect(try box.vault(["lock"]).status == 0)
        try getWithFile("agent running, vault locked")
        let put = try box.vault(["put", "k2"], stdin: Data("v2".utf8), source: true)
        #expect(put.status == 0, "put with a source, vault locked: \(put.stderr)")
    }

    // MARK: - lock and status

    @Test func lockForgetsTheVault() throws {
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        // No agent running: lock prints what it prints when nothing is unlocked, exit 0, and starts nothing.
        let lockNoAgent = try box.vault(["lock"])
        #expect(lockNoAgent.status == 0 && lockNoAgent.stderr == "", "lock with no agent: \(lockNoAgent.stderr)")
        #expect(lockNoAgent.stdoutText == "locked vault '\(box.vaultPath)'\n")
        let allNoAgent = try box.vault(["lock", "--all"])
        #expect(allNoAgent.status == 0 && allNoAgent.stderr == "", "lock --all with no agent: \(allNoAgent.stderr)")
        #expect(allNoAgent.stdoutText == "locked 0 vaults\n")
        try Self.expectNoAgent(box, "after lock with no agent")

        try box.unlock()
        #expect(try box.vault(["get", "k"]).stdout == Data(value.utf8))
        let pid = try #require(try box.agentPID())
        let lock = try box.vault(["lock", "--vault", box.vaultPath])
        #expect(lock.status == 0 && lock.stderr == "", "\(lock.stderr)")
        #expect(lock.stdoutText == "locked vault '\(box.vaultPath)'\n")
        Self.expectLocked(try box.vault(["get", "k"]), "get after lock")
        let status = try box.vault(["agent", "status"])
        #expect(status.status == 0 && status.stdoutText == "no vault unlocked\n", "status after lock: \(status.stdoutText) \(status.stderr)")
        #expect(try box.status()?.vaults == [])

        // The agent still runs with nothing unlocked: lock prints the same as with no agent.
        #expect(try box.agentPID() == pid)
        #expect(try box.vault(["lock"]).stdoutText == lockNoAgent.stdoutText)
        #expect(try box.vault(["lock", "--all"]).stdoutText == "locked 0 vaults\n")

        try box.unlock()
        let all = try box.vault(["lock", "--all"])
        #expect(all.status == 0 && all.stdoutText == "locked 1 vault\n", "\(all.stdoutText) \(all.stderr)")
        Self.expectLocked(try box.vault(["get", "k"]), "get after lock --all")
    }

    @Test func statusWithNoAgentRunning() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        let text = try box.vault(["agent", "status"])
        #expect(text.status == 1 && text.stdout.isEmpty)
        #expect(text.stderr.hasPrefix("vault: no agent is running"), "\(text.stderr)")
        #expect(text.seconds < 1.0, "took \(text.seconds) s")
        let json = try box.vault(["agent", "status", "--json"])
        #expect(json.status == 1 && json.stdout.isEmpty)
        let error = Self.jsonError(json.stderr)
        #expect(error.code == "no_agent" && error.exitCode == 1, "\(json.stderr)")
        #expect(!AgentFiles.exists(box.socketPath), "status created a socket")
        Self.expectNoListener(under: box.directory, "after status")
    }

    @Test func severalVaultsInOneAgent() throws {
        let first = try AgentBox(passphrase: "first passphrase")
        let second = try AgentBox(passphrase: "second passphrase", sharingAgentWith: first)
        defer { first.stopAgents(); second.stopAgents() }
        try first.initVault()
        try second.initVault()
        #expect(try first.around(["put", "k"], stdin: Data("one".utf8)).status == 0)
        #expect(try second.around(["put", "k"], stdin: Data("two".utf8)).status == 0)

        try first.unlock()
        let pid = try #require(try first.agentPID())
        // The second vault, not unlocked yet, is locked although the agent runs.
        Self.expectLocked(try second.vault(["get", "k"]), "second vault before its unlock")
        try second.unlock()
        #expect(try second.agentPID() == pid, "a second agent was started")

        let sorted = [first.vaultPath, second.vaultPath].sorted()
        let status = try #require(try first.status())
        #expect(status.vaults.map(\.path) == sorted)
        let text = try first.vault(["agent", "status"])
        let lines = text.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines.map { line in String(line.prefix { $0 != " " }) } == sorted, "status: \(text.stdoutText)")

        #expect(try first.vault(["get", "k"]).stdoutText == "one")
        #expect(try second.vault(["get", "k"]).stdoutText == "two")
        #expect(try first.vault(["get", "k", "--vault", second.vaultPath]).stdoutText == "two")

        let lockSecond = try second.vault(["lock"])
        #expect(lockSecond.stdoutText == "locked vault '\(second.vaultPath)'\n")
        Self.expectLocked(try second.vault(["get", "k"]), "second vault after its lock")
        #expect(try first.vault(["get", "k"]).stdoutText == "one", "locking one vault locked the other")
        #expect(try first.status()?.vaults.map(\.path) == [first.vaultPath])

        try second.unlock()
        let all = try first.vault(["lock", "--all"])
        #expect(all.status == 0 && all.stdoutText == "locked 2 vaults\n", "\(all.stdoutText) \(all.stderr)")
        Self.expectLocked(try first.vault(["get", "k"]), "first vault after lock --all")
        Self.expectLocked(try second.vault(["get", "k"]), "second vault after lock --all")
    }

    // MARK: - the agent in the foreground

    @Test("vault agent runs in the foreground until a signal, exits 0 and removes its socket",
        arguments: [SIGTERM, SIGINT])
    func foregroundAgentStopsOnSignal(_ signal: Int32) throws {
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let python = try #require(AgentPython.python, "python3 is not installed: run scripts/install-deps --test")
        // As a service manager starts it: no blocked signals (the test runner's threads block some, and children
        // inherit the mask), stdin /dev/null, its output to files.
        let log = try AgentCLI.temporaryFile("agent-log")
        defer { unlink(log) }
        let agent = Process()
        agent.executableURL = URL(fileURLWithPath: python)
        agent.arguments = [
            "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])",
            CLI.vault, "agent",
        ]
        agent.environment = ["PATH": "/usr/bin:/bin", "HOME": AgentBox.temporaryRoot, "LANG": "C.UTF-8"]
            .merging(box.environment) { $1 }
        agent.standardInput = FileHandle.nullDevice
        let logHandle = FileHandle(forWritingAtPath: log)
        agent.standardOutput = logHandle
        agent.standardError = logHandle
        try agent.run()
        try? logHandle?.close()
        let pid = agent.processIdentifier
        box.remember(pid)
        defer { if agent.isRunning { kill(pid, SIGKILL); agent.waitForExit() } }

        #expect(try Self.poll { try box.status() != nil || !agent.isRunning }, "the agent never answered")
        try #require(agent.isRunning, "vault agent exited with \(agent.terminationStatus)")
        let empty = try #require(try box.status())
        #expect(empty.pid == pid)
        #expect(empty.protocolVersion == 6 && empty.socket == box.socketPath && empty.vaults.isEmpty)
        let text = try box.vault(["agent", "status"])
        #expect(text.status == 0 && text.stdoutText == "no vault unlocked\n" && text.stderr == "")

        // unlock uses it (no second agent), get goes through it.
        try box.unlock()
        #expect(try box.agentPID() == pid)
        let get = try box.vault(["get", "k"])
        #expect(get.status == 0 && get.stdout == Data(value.utf8), "get: exit \(get.status), \(get.stderr)")

        kill(pid, signal)
        let stopped = try Self.poll { !agent.isRunning }
        try #require(stopped, "vault agent still runs 10 s after signal \(signal)")
        agent.waitForExit()
        #expect(agent.terminationReason == .exit && agent.terminationStatus == 0,
            "vault agent ended by \(agent.terminationReason == .exit ? "exit" : "signal") \(agent.terminationStatus)")
        #expect(!AgentFiles.exists(box.socketPath), "the socket is still there")
        Self.expectLocked(try box.vault(["get", "k"]), "get after the agent stopped")

        // It logged no secret.
        let logged = (try? Data(contentsOf: URL(fileURLWithPath: log))) ?? Data()
        #expect(logged.range(of: Data(value.utf8)) == nil, "the agent logged the value")
        #expect(logged.range(of: Data(box.passphrase.utf8)) == nil, "the agent logged the passphrase")
    }

    // MARK: - expiry

    /// The one end-to-end expiry test: a real agent process locks a vault idle for its `--idle` time, on the real
    /// clock. The rules themselves (what counts as activity, that status does not, the hard limit from the unlock)
    /// are KeyRingTests', on a clock moved by hand: windows of real seconds flake on a loaded machine.
    @Test func idleTimeoutLocksTheVaultInTheRunningAgent() throws {
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let unlocked = try box.unlock(["--idle", "2s", "--max", "1h"])
        #expect(unlocked.stdoutText == "unlocked vault '\(box.vaultPath)' (idle 2s, max 1h)\n")
        let get = try box.vault(["get", "k"])
        #expect(get.status == 0 && get.stdout == Data(value.utf8))
        let lastActivity = monotonicNow()  // the agent saw the get before this
        #expect(try box.status()?.vaults.count == 1, "locked at once")
        // Bounded poll: locked within a few seconds, not before the idle time.
        let locked = try Self.poll { try box.status().map(\.vaults).map(\.isEmpty) ?? true }
        let lockedAfter = monotonicNow() - lastActivity
        #expect(locked, "still listed 10 s after the idle timeout")
        #expect(lockedAfter >= 1.5, "locked \(lockedAfter) s after the last activity, before its idle time of 2 s")
        Self.expectLocked(try box.vault(["get", "k"]), "get after the idle timeout")
        Self.expectLocked(try box.vault(["list"]), "list after the idle timeout")
    }

    /// An agent that is stopped (SIGSTOP) with its listener's backlog full lets no client in: a second agent
    /// must refuse to start rather than take its socket over (two agents would hold keys, and the first one's
    /// exit would remove the second one's socket), and the first serves again once continued.
    @Test func aStoppedAgentWithAFullBacklogKeepsItsSocket() throws {
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        let pid = try #require(try box.agentPID())
        #expect(kill(pid, SIGSTOP) == 0)
        var stopped = true
        defer { if stopped { kill(pid, SIGCONT) } }
        // SIGSTOP takes effect later: until it has, the agent accepts some of the connections below and leaves room
        // in its backlog (under load the second agent then found "another agent is running", once). Wait for it.
        func state() -> Substring? {
            String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/stat"))) ?? Data(), as: UTF8.self)
                .split(separator: ")").last?.split(separator: " ").first
        }
        let deadline = Date().addingTimeInterval(10)
        while state() != "T", Date() < deadline { usleep(5_000) }
        try #require(state() == "T", "the agent did not stop")
        // Non-blocking connects until the backlog (64) is full and one would wait.
        var connections: [Int32] = []
        defer { connections.forEach { close($0) } }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            let bytes = Array(box.socketPath.utf8)
            path.copyBytes(from: bytes.prefix(path.count - 1))
        }
        var full = false
        for _ in 0..<256 where !full {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            try #require(fd >= 0)
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if result == 0 {
                connections.append(fd)
            } else {
                let code = errno
                close(fd)
                try #require(code == EAGAIN, "connect: errno \(code)")
                full = true
            }
        }
        try #require(full, "the backlog never filled (\(connections.count) connections)")

        let second = try box.vault(["agent"], timeout: 20)
        #expect(second.status != 0 && second.seconds < 10, "vault agent: exit \(second.status) after \(second.seconds) s")
        #expect(second.stderr.contains("another agent listens there but does not answer"), "\(second.stderr)")
        #expect(AgentFiles.lstatMode(box.socketPath).map { $0 & S_IFMT } == S_IFSOCK, "the stopped agent's socket is gone")

        connections.forEach { close($0) }
        connections = []
        #expect(kill(pid, SIGCONT) == 0)
        stopped = false
        let get = try box.vault(["get", "k"])
        #expect(get.status == 0 && get.stdout == Data(value.utf8), "get after SIGCONT: exit \(get.status), \(get.stderr)")
        #expect(try box.agentPID() == pid, "another agent answers")
    }

    // MARK: - security

    @Test func socketDirectoryIsCreatedPrivateWhateverTheUmask() throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        #expect(!AgentFiles.exists(box.socketDirectory))
        let unlocked = try AgentCLI.exec(
            "/bin/sh", ["-c", "umask 000; exec \"$VAULT\" unlock --passphrase-file \"$PASSFILE\""],
            environment: box.environment.merging(["VAULT": CLI.vault, "PASSFILE": box.passphraseFile]) { $1 })
        #expect(unlocked.status == 0, "unlock under umask 000: \(unlocked.stderr)")
        var info = stat()
        try #require(lstat(box.socketDirectory, &info) == 0, "no socket directory")
        #expect(info.st_mode == S_IFDIR | 0o700, "socket directory mode \(String(info.st_mode, radix: 8))")
        #expect(info.st_uid == getuid())
        #expect(AgentFiles.lstatMode(box.socketPath).map { $0 & S_IFMT } == S_IFSOCK)
        #expect(try box.vault(["get", "k"]).status == 0)
    }

    /// Checks that an unsafe socket directory makes `vault unlock` fail with exit 4 (`unsafe_permissions`), starts
    /// no agent, and leaves the passphrase path working.
    func expectRefusedSocketDirectory(_ box: AgentBox, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let unlock = try box.vault(["unlock"], source: true)
        #expect(unlock.status == 4, "\(what): unlock exit \(unlock.status), \(unlock.stderr)", sourceLocation: sourceLocation)
        #expect(unlock.stdout.isEmpty && unlock.stderr.hasPrefix("vault: "), "\(what): \(unlock.stderr)", sourceLocation: sourceLocation)
        let json = try box.vault(["unlock", "--json"], source: true)
        let error = Self.jsonError(json.stderr)
        #expect(json.status == 4 && error.code == "unsafe_permissions" && error.exitCode == 4,
            "\(what): unlock --json exit \(json.status), \(json.stderr)", sourceLocation: sourceLocation)
        Self.expectNoListener(under: box.directory, what, sourceLocation: sourceLocation)
        #expect(!AgentFiles.exists(box.socketPath), "\(what): a socket was created", sourceLocation: sourceLocation)
        // `vault agent` in the foreground refuses too, at once.
        let foreground = try box.vault(["agent"], timeout: 10)
        #expect(foreground.status != 0 && foreground.seconds < 5, "\(what): vault agent exit \(foreground.status)",
            sourceLocation: sourceLocation)
        Self.expectNoListener(under: box.directory, what, sourceLocation: sourceLocation)
        let get = try box.vault(["get", "k"], source: true)
        #expect(get.status == 0, "\(what): get with a passphrase file: exit \(get.status), \(get.stderr)", sourceLocation: sourceLocation)
    }

    @Test func symlinkedSocketDirectoryIsRefused() throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let real = box.directory + "/real-agent-dir"
        #expect(mkdir(real, 0o700) == 0)
        #expect(symlink(real, box.socketDirectory) == 0)
        try expectRefusedSocketDirectory(box, "symlinked socket directory")
        #expect(!AgentFiles.exists(real + "/agent.sock"), "a socket was created behind the symlink")
    }

    @Test("a group- or other-writable socket directory is refused", arguments: [0o777, 0o770, 0o702] as [mode_t])
    func looseSocketDirectoryIsRefused(_ mode: mode_t) throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        #expect(mkdir(box.socketDirectory, 0o700) == 0 && chmod(box.socketDirectory, mode) == 0)
        try expectRefusedSocketDirectory(box, "socket directory mode \(String(mode, radix: 8))")
    }

    static let otherUserName = "vaulttestagent"

    static var canRunAsAnotherUser: Bool {
        getuid() == 0 && findTool("useradd") != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
            && AgentPython.python != nil
    }

    /// uid and gid of a system user for these tests, created once (`useradd --system --no-create-home`).
    static let otherUser: (uid: uid_t, gid: gid_t)? = {
        for _ in 0..<5 where getpwnam(otherUserName) == nil {
            if let useradd = findTool("useradd") {
                _ = try? AgentCLI.exec(
                    useradd, ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", otherUserName], environment: [:])
            }
            if getpwnam(otherUserName) == nil { usleep(200_000) }  // /etc/passwd locked by another useradd
        }
        guard let entry = getpwnam(otherUserName) else { return nil }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }()

    /// Makes the agent's socket reachable by anyone on purpose: the box directory, the vaults directory and the
    /// socket directory 0711, the socket 0777. The vault file stays 0600 (the other user cannot read it).
    static func exposeSocket(_ box: AgentBox) throws {
        for directory in [box.directory, box.directory + "/vaults", box.socketDirectory] {
            try #require(chmod(directory, 0o711) == 0, "chmod \(directory)")
        }
        try #require(chmod(box.socketPath, 0o777) == 0, "chmod the socket")
    }

    /// A home for the other user inside the box.
    static func otherHome(_ box: AgentBox, _ ids: (uid: uid_t, gid: gid_t)) throws -> String {
        let home = box.directory + "/other-home"
        try #require(mkdir(home, 0o700) == 0 && chown(home, ids.uid, ids.gid) == 0)
        return home
    }

    @Test(.enabled(if: AgentTests.canRunAsAnotherUser, "needs root, useradd, setpriv and python3 to act as another uid"))
    func anotherUserIsRefusedEvenWhenTheSocketIsReachable() throws {
        let ids = try #require(Self.otherUser, "could not create the user \(Self.otherUserName)")
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        let pid = try #require(try box.agentPID())
        try Self.exposeSocket(box)
        let home = try Self.otherHome(box, ids)
        let env = [
            "VAULT_AGENT_SOCK": box.socketPath, "VAULT_TESTING_INSECURE_KDF": "1", "HOME": home,
            "XDG_STATE_HOME": home + "/state", "XDG_RUNTIME_DIR": home + "/run",
        ]
        let asOther = ["--reuid=\(ids.uid)", "--regid=\(ids.gid)", "--clear-groups"]

        // The socket is reachable: connect() as the other user succeeds (so a refusal is the agent's).
        let probe = try AgentCLI.exec(
            "/usr/bin/setpriv",
            asOther + [AgentPython.python!, "-c",
                "import socket, sys; s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1]); print('connected')",
                box.socketPath],
            environment: env, timeout: 15)
        #expect(probe.status == 0 && probe.stdoutText == "connected\n", "connect as uid \(ids.uid): \(probe.stderr)")

        let get = try AgentCLI.exec(
            "/usr/bin/setpriv", asOther + [CLI.vault, "get", "k", "--vault", box.vaultPath], environment: env, timeout: 15)
        #expect(get.stdout.isEmpty, "another uid got \(get.stdout.count) bytes on stdout")
        #expect(get.stdout.range(of: Data(value.utf8)) == nil && !get.stderr.contains(value), "another uid got the value")
        #expect(get.status != 0, "get as another uid exited 0")
        #expect(get.seconds < 5, "get as another uid took \(get.seconds) s")

        // The agent still runs and still serves its owner.
        #expect(AgentProcesses.isAlive(pid), "the agent died")
        #expect(try box.agentPID() == pid)
        let owner = try box.vault(["get", "k"])
        #expect(owner.status == 0 && owner.stdout == Data(value.utf8), "owner after the refusal: exit \(owner.status), \(owner.stderr)")
    }

    @Test(.enabled(if: AgentTests.canRunAsAnotherUser, "needs root, useradd, setpriv and python3 to act as another uid"))
    func ownersRequestReplayedByAnotherUserGetsNoValue() throws {
        let ids = try #require(Self.otherUser, "could not create the user \(Self.otherUserName)")
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        let pid = try #require(try box.agentPID())

        // Record the frames of a real `vault get k` through a proxy in front of the agent.
        let proxySocket = box.directory + "/proxy/agent.sock", record = box.directory + "/proxy.log"
        let proxy = try AgentPython.startServer(AgentPython.recordingProxy, [proxySocket, box.socketPath, record])
        defer { kill(proxy.processIdentifier, SIGKILL); proxy.waitForExit() }
        let viaProxy = try box.vault(["get", "k"], environment: ["VAULT_AGENT_SOCK": proxySocket])
        #expect(viaProxy.status == 0 && viaProxy.stdout == Data(value.utf8), "get through the proxy: exit \(viaProxy.status), \(viaProxy.stderr)")
        let wasRecorded = Self.poll(timeout: 5) { ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").contains("\n") }
        let recorded = (try? String(contentsOfFile: record, encoding: .utf8)) ?? ""
        try #require(wasRecorded && !recorded.split(separator: "\n").allSatisfy { $0.isEmpty }, "the proxy recorded no frame")
        let replayInput = Data((recorded + Data(value.utf8).map { String(format: "%02x", $0) }.joined() + "\n").utf8)
        let python = AgentPython.python!

        // Control: the owner replaying the same frames gets the value (the recording is a valid request).
        let control = try AgentCLI.exec(python, ["-c", AgentPython.replay, box.socketPath], stdin: replayInput,
            environment: [:], timeout: 20)
        #expect(control.stdoutText.split(separator: "\n").dropFirst().first == "canary-returned",
            "the owner's replay got no value: \(control.stdoutText) \(control.stderr)")

        // Another uid replaying them, the socket reachable on purpose: no value.
        try Self.exposeSocket(box)
        let home = try Self.otherHome(box, ids)
        let other = try AgentCLI.exec(
            "/usr/bin/setpriv",
            ["--reuid=\(ids.uid)", "--regid=\(ids.gid)", "--clear-groups", python, "-c", AgentPython.replay, box.socketPath],
            stdin: replayInput, environment: ["HOME": home], timeout: 20)
        let lines = other.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines.first.map { $0.hasPrefix("connected ") && $0 != "connected 0" } == true,
            "the other uid could not even connect: \(other.stdoutText) \(other.stderr)")
        #expect(lines.dropFirst().first == "no-canary", "another uid got the value: \(other.stdoutText)")
        #expect(other.seconds < 15)

        #expect(AgentProcesses.isAlive(pid), "the agent died")
        let owner = try box.vault(["get", "k"])
        #expect(owner.status == 0 && owner.stdout == Data(value.utf8), "owner after the refusal: exit \(owner.status)")
    }

    @Test func agentDumpsNoCore() throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        let pid = try #require(try box.agentPID())
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }
        #expect(core?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"],
            "core limit: \(core ?? "missing")")
    }

    /// The agent of an ordinary user: that same user cannot read its /proc/PID/environ (not dumpable), while a
    /// plain process of that user is readable (the control), and it dumps no core.
    @Test(.enabled(if: AgentTests.canRunAsAnotherUser, "needs root, useradd, setpriv and python3 to act as another uid"))
    func anOrdinaryUsersAgentIsNotDumpable() throws {
        let ids = try #require(Self.otherUser, "could not create the user \(Self.otherUserName)")
        let box = try AgentBox()
        defer { box.stopAgents() }
        try #require(chmod(box.directory, 0o711) == 0)
        let home = try Self.otherHome(box, ids)
        let passphraseFile = home + "/passphrase"
        FileManager.default.createFile(
            atPath: passphraseFile, contents: Data((box.passphrase + "\n").utf8), attributes: [.posixPermissions: 0o600])
        try #require(chown(passphraseFile, ids.uid, ids.gid) == 0)
        let env = [
            "VAULT_PATH": home + "/v/test.vault", "VAULT_TESTING_INSECURE_KDF": "1", "VAULT_AGENT_SOCK": home + "/agent/agent.sock",
            "HOME": home, "XDG_STATE_HOME": home + "/state", "XDG_RUNTIME_DIR": home + "/run",
        ]
        let asOther = ["--reuid=\(ids.uid)", "--regid=\(ids.gid)", "--clear-groups"]
        func runAsOther(_ command: [String], stdin: Data = Data()) throws -> AgentRun {
            try AgentCLI.exec("/usr/bin/setpriv", asOther + command, stdin: stdin, environment: env, timeout: 20)
        }
        let made = try runAsOther([CLI.vault, "init", "--passphrase-file", passphraseFile])
        try #require(made.status == 0, "init as \(Self.otherUserName): \(made.stderr)")
        let value = Self.canary("value")
        #expect(try runAsOther([CLI.vault, "put", "k", "--passphrase-file", passphraseFile], stdin: Data(value.utf8)).status == 0)
        let unlocked = try runAsOther([CLI.vault, "unlock", "--passphrase-file", passphraseFile])
        try #require(unlocked.status == 0, "unlock as \(Self.otherUserName): \(unlocked.stderr)")
        let statusRun = try runAsOther([CLI.vault, "agent", "status", "--json"])
        let status = try AgentStatus(statusRun.stdout)
        box.remember(status.pid)
        let uidLine = ((try? String(contentsOfFile: "/proc/\(status.pid)/status", encoding: .utf8)) ?? "")
            .split(separator: "\n").first { $0.hasPrefix("Uid:") }
        #expect(uidLine == "Uid:\t\(ids.uid)\t\(ids.uid)\t\(ids.uid)\t\(ids.uid)", "the agent runs as \(uidLine ?? "?")")

        // It serves that user with no passphrase.
        let get = try runAsOther([CLI.vault, "get", "k"])
        #expect(get.status == 0 && get.stdout == Data(value.utf8), "get as the user through the agent: exit \(get.status), \(get.stderr)")

        // Control: a plain process of the same user is readable by that user.
        let control = Process()
        control.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        control.arguments = asOther + ["/bin/sleep", "60"]
        control.environment = ["PATH": "/usr/bin:/bin"].merging(env) { $1 }
        control.standardInput = FileHandle.nullDevice
        control.standardOutput = FileHandle.nullDevice
        control.standardError = FileHandle.nullDevice
        try control.run()
        defer { kill(control.processIdentifier, SIGKILL); control.waitForExit() }
        let controlPID = control.processIdentifier
        #expect(Self.poll {
            ((try? String(contentsOfFile: "/proc/\(controlPID)/status", encoding: .utf8)) ?? "").contains("\nUid:\t\(ids.uid)\t")
                && ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(controlPID)/exe")) ?? "").hasSuffix("sleep")
        }, "the control process did not start as the user")
        let controlEnviron = try runAsOther(["/bin/cat", "/proc/\(controlPID)/environ"])
        #expect(controlEnviron.status == 0 && controlEnviron.stdout.range(of: Data("VAULT_PATH=".utf8)) != nil,
            "control: the user cannot read its own plain process's environ: \(controlEnviron.stderr)")

        let environ = try runAsOther(["/bin/cat", "/proc/\(status.pid)/environ"])
        #expect(environ.status == 1 && environ.stdout.isEmpty, "the user read its agent's environ (exit \(environ.status))")
        #expect(environ.stderr.contains("Permission denied"), "environ: \(environ.stderr)")
        let limits = try String(contentsOfFile: "/proc/\(status.pid)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }
        #expect(core?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"],
            "core limit: \(core ?? "missing")")
    }

    // MARK: - a killed agent, writers around the agent

    @Test func killedAgentNeverBlocksAndUnlockStartsANewOne() throws {
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        let first = try #require(try box.agentPID())
        #expect(kill(first, SIGKILL) == 0)
        #expect(AgentProcesses.waitUntilGone(first, timeout: 10), "the agent survived kill -9")

        let withFile = try box.vault(["get", "k"], source: true)
        #expect(withFile.status == 0 && withFile.stdout == Data(value.utf8), "get with a file after kill -9: exit \(withFile.status), \(withFile.stderr)")
        #expect(withFile.seconds < 5, "get with a file took \(withFile.seconds) s")
        Self.expectLocked(try box.vault(["get", "k"]), "get without a source after kill -9")
        try Self.expectNoAgent(box, "after kill -9")

        let unlocked = try box.unlock()
        #expect(unlocked.stdoutText == "unlocked vault '\(box.vaultPath)' (idle 15m, max 8h)\n")
        let second = try #require(try box.agentPID())
        #expect(second != first)
        #expect(AgentProcesses.isAlive(second))
        let get = try box.vault(["get", "k"])
        #expect(get.status == 0 && get.stdout == Data(value.utf8), "get through the new agent: exit \(get.status), \(get.stderr)")
    }

    @Test func writesAroundTheAgentAreSeenThroughIt() throws {
        let (box, first) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        #expect(try box.vault(["get", "k"]).stdout == Data(first.utf8))
        let replaced = Self.canary("replaced")
        #expect(try box.around(["put", "k"], stdin: Data(replaced.utf8)).status == 0)
        #expect(try box.around(["put", "new"], stdin: Data("fresh".utf8)).status == 0)
        let get = try box.vault(["get", "k"])
        #expect(get.status == 0 && get.stdout == Data(replaced.utf8), "the agent served a stale value (exit \(get.status))")
        #expect(try box.vault(["list"]).stdoutText == "k\nnew\n")
        #expect(try box.around(["delete", "new"]).status == 0)
        #expect(try box.vault(["get", "new"]).status == 2, "the agent still has an entry deleted around it")
        // And the other way: a put through the agent is in the file.
        #expect(try box.vault(["put", "through"], stdin: Data("agent".utf8)).status == 0)
        #expect(try box.around(["get", "through"]).stdoutText == "agent")
    }

    @Test func concurrentWritersThroughAndAroundTheAgentLoseNothing() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        try box.unlock()
        var running: [(String, AgentCLI.Running)] = []
        for i in 1...10 {
            running.append(("through-\(i)", try box.startThroughAgent(["put", "through-\(i)"], stdin: Data("t\(i)".utf8))))
            running.append(("around-\(i)", try box.startAround(["put", "around-\(i)"], stdin: Data("a\(i)".utf8))))
        }
        for (name, process) in running {
            let result = process.finish()
            #expect(result.status == 0, "put \(name): exit \(result.status), \(result.stderr)")
        }
        let expected = (1...10).flatMap { ["through-\($0)", "around-\($0)"] }.sorted()
        let list = try box.vault(["list"])
        #expect(list.status == 0)
        #expect(list.stdoutText.split(separator: "\n").map(String.init) == expected)
        let contents = try Adversarial.contents(of: box.vaultPath, passphrase: box.passphrase)
        var wanted = [String: String]()
        for i in 1...10 { wanted["through-\(i)"] = "t\(i)"; wanted["around-\(i)"] = "a\(i)" }
        #expect(contents == wanted, "the file holds \(contents.keys.sorted())")
        #expect(Adversarial.strayTemporaryFiles(box.vaultPath).isEmpty)
    }

    // MARK: - protocol versions

    @Test func agentOfAnotherProtocolVersionIsNamed() throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let fake = try AgentPython.startServer(AgentPython.fakeAgent, [box.socketPath])
        defer { kill(fake.processIdentifier, SIGKILL); fake.waitForExit() }

        let get = try box.vault(["get", "k"])
        #expect(get.status == 1, "exit \(get.status), \(get.stderr)")
        #expect(get.stdout.isEmpty)
        #expect(get.stderr.hasPrefix("vault: ") && get.stderr.contains("protocol version 9"), "stderr: \(get.stderr)")
        #expect(get.seconds < 1.0, "took \(get.seconds) s")
        let json = try box.vault(["get", "k", "--json"])
        let error = Self.jsonError(json.stderr)
        #expect(json.status == 1 && error.code == "agent_version_mismatch" && error.exitCode == 1, "\(json.stderr)")
        #expect(json.seconds < 1.0, "took \(json.seconds) s")
    }

    /// Issue 18 §5: `vault unlock` replaces an agent of an older protocol (a `vault` upgraded while its agent ran),
    /// as rbw does, and leaves a newer one alone.
    @Test func unlockReplacesAnOlderAgentAndNotANewerOne() throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let older = try AgentPython.startServer(AgentPython.fakeAgent, [box.socketPath, "2"])
        defer { kill(older.processIdentifier, SIGKILL); older.waitForExit() }
        let before = try box.vault(["get", "k"])
        #expect(before.status == 1 && before.stderr.contains("hint: 'vault unlock' replaces the older agent"), "\(before.stderr)")

        let unlock = try box.vault(["unlock"], source: true)
        #expect(unlock.status == 0, "\(unlock.stderr)")
        #expect(unlock.stderr == "vault: stopped the running agent (pid \(older.processIdentifier)), which spoke protocol version 2; starting one of version 6\n")
        older.waitForExit()
        #expect(older.terminationReason == .uncaughtSignal, "stopped by a signal (SIGTERM, or SIGKILL when the test runner blocked SIGTERM)")
        #expect(try box.vault(["get", "k"]).status == 0)
        box.stopAgents()
        unlink(box.socketPath)  // what a stopped agent may leave

        let newer = try AgentPython.startServer(AgentPython.fakeAgent, [box.socketPath, "9"])
        defer { kill(newer.processIdentifier, SIGKILL); newer.waitForExit() }
        let refused = try box.vault(["unlock", "--force"], source: true)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("the agent speaks protocol version 9") && refused.stderr.contains("the agent is newer than this vault command"), "\(refused.stderr)")
        #expect(newer.isRunning)
    }

    /// Issue 18 §5: git's `credential get` through the agent asks for the entries it reads, a few at a time, and
    /// never for a listing of the whole vault (each `contains` and each time of a credential was one): 7 round
    /// trips (probe, the names once, entries), 12 before.
    @Test func gitsCredentialGetAsksForNoListing() throws {
        let (box, _) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        let request = "protocol=https\nhost=git.example\nusername=alice\npassword=s3cret\n\n"
        #expect(try box.around(["credential", "store"], stdin: Data(request.utf8)).status == 0)
        try box.unlock()
        let proxySocket = box.directory + "/proxy/agent.sock", record = box.directory + "/proxy.log"
        let proxy = try AgentPython.startServer(AgentPython.recordingProxy, [proxySocket, box.socketPath, record])
        defer { kill(proxy.processIdentifier, SIGKILL); proxy.waitForExit() }
        let got = try box.vault(["credential", "get"], stdin: Data("protocol=https\nhost=git.example\n\n".utf8),
                                environment: ["VAULT_AGENT_SOCK": proxySocket])
        #expect(got.status == 0 && got.stdoutText == "username=alice\npassword=s3cret\n", "\(got.stderr)")
        _ = Self.poll(timeout: 5) { ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").contains("\n") }
        let frames = ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" })
        // Each frame: 8 hex digits of length, then the version and the operation.
        let operations = frames.compactMap { frame in UInt8(frame.dropFirst(10).prefix(2), radix: 16) }
        #expect(!operations.isEmpty)
        #expect(!operations.contains(7), "a listing of the whole vault: \(operations)")
        #expect(operations.count <= 7, "\(operations.count) round trips: \(operations)")
    }

    /// The operations (the second payload byte) of the frames a client sent through `AgentPython.recordingProxy`.
    static func recordedOperations(_ record: String) -> [UInt8] {
        _ = poll(timeout: 5) { ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").contains("\n") }
        let frames = ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" })
        return frames.compactMap { frame in UInt8(frame.dropFirst(10).prefix(2), radix: 16) }
    }

    /// Issue 34 §3: `vault get` (and `list`) through the agent is one round trip, the get itself (operation 6), with no probe
    /// (5) before it: the get's answer says whether the agent holds the vault. On a locked vault the get's answer
    /// says so, and the command takes the ordinary path (here: no passphrase, refused as before).
    @Test func getAndListThroughTheAgentAreOneRequest() throws {
        let (box, value) = try Self.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        let proxySocket = box.directory + "/proxy/agent.sock", record = box.directory + "/proxy.log"
        let proxy = try AgentPython.startServer(AgentPython.recordingProxy, [proxySocket, box.socketPath, record])
        defer { kill(proxy.processIdentifier, SIGKILL); proxy.waitForExit() }
        let got = try box.vault(["get", "k"], environment: ["VAULT_AGENT_SOCK": proxySocket, "VAULT_TESTING_REQUIRE_QUICK_PATH": "1"])
        #expect(got.status == 0 && got.stdout == Data(value.utf8), "\(got.stderr)")
        #expect(Self.recordedOperations(record) == [6])
        // So is `list` (names, 11) and `list --json` (list, 7).
        for (arguments, operation) in [(["list"], UInt8(11)), (["list", "--json"], 7)] {
            try? FileManager.default.removeItem(atPath: record)
            let listed = try box.vault(arguments, environment: ["VAULT_AGENT_SOCK": proxySocket, "VAULT_TESTING_REQUIRE_QUICK_PATH": "1"])
            #expect(listed.status == 0 && listed.stdoutText.contains("k"), "\(arguments): \(listed.stderr)")
            #expect(Self.recordedOperations(record) == [operation], "\(arguments)")
        }
        // Locked: the get's answer says so; the quick path declines (the test hook makes that exit 70).
        #expect(try box.vault(["lock"]).status == 0)
        try? FileManager.default.removeItem(atPath: record)
        let declined = try box.vault(["get", "k"], environment: ["VAULT_AGENT_SOCK": proxySocket, "VAULT_TESTING_REQUIRE_QUICK_PATH": "1"])
        #expect(declined.status == 70, "\(declined.stderr)")
        #expect(Self.recordedOperations(record) == [6])
    }
}
