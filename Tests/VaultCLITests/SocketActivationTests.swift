import Foundation
import Testing
import VaultTestSupport

/// `vault agent run` started by a service manager on a socket it holds (systemd's socket activation), with the real
/// `systemd-socket-activate`: it listens, and on the first client execs the agent in its place with the listening
/// socket as descriptor 3 (`LISTEN_FDS`, `LISTEN_PID`, `LISTEN_FDNAMES`), as `vault-agent.socket` does
/// (packaging/systemd).
@Suite(.processTimeLimit) struct SocketActivationTests {
    static let activate = ["/usr/bin/systemd-socket-activate", "/bin/systemd-socket-activate"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    static var present: Bool { activate != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    /// Starts `systemd-socket-activate` listening on the box's socket, with `arguments` after `vault agent run`.
    static func listen(_ box: AgentBox, name: String = "vault-agent", _ arguments: [String] = []) throws -> AgentCLI.Running {
        let activate = try #require(Self.activate, "systemd-socket-activate is missing: run scripts/install-deps --test")
        _ = mkdir(box.socketDirectory, 0o700)
        // It passes the program only the variables -E names (besides a few of its own).
        let variables = box.environment.sorted { $0.key < $1.key }.flatMap { ["-E", "\($0.key)=\($0.value)"] }
        let running = try AgentCLI.start(
            activate, ["-l", box.socketPath, "--fdname=\(name)"] + variables + [CLI.vault, "agent", "run"] + arguments,
            environment: box.environment, timeout: 60)
        box.remember(running.pid)
        try #require(AgentTests.poll { AgentFiles.lstatMode(box.socketPath) != nil }, "systemd-socket-activate made no socket")
        return running
    }

    @Test(.enabled(if: present, "systemd-socket-activate is missing: run scripts/install-deps --test (systemd)"))
    func theAgentServesTheSocketItIsHandedAndEndsWhenEmpty() throws {
        let (box, value) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        let running = try Self.listen(box, ["--exit-when-empty", "2s"])

        // The first client starts the agent in systemd-socket-activate's place (the same process), on its socket.
        try box.unlock()
        let status = try #require(try box.status())
        #expect(status.pid == running.pid, "another agent answered: pid \(status.pid), not \(running.pid)")
        #expect(status.socket == box.socketPath && status.vaults.count == 1)
        let get = try box.vault(["get", "k"])
        #expect(get.status == 0 && get.stdout == Data(value.utf8), "get: exit \(get.status), \(get.stderr)")

        // Locked and unused, it ends by itself; the socket is the service manager's and stays.
        #expect(try box.vault(["lock", "--all"]).status == 0)
        let ended = running.finish()
        #expect(ended.status == 0, "the agent ended with \(ended.status): \(ended.stderr)")
        #expect(ended.stderr.contains("vault agent: serving the socket the service manager handed in, \(box.socketPath)"),
            "stderr: \(ended.stderr)")
        #expect(ended.stderr.contains("held nothing for 2 s; stopping"), "stderr: \(ended.stderr)")
        #expect(!ended.stderr.contains(value) && !ended.stderr.contains(box.passphrase), "the agent logged a secret")
        #expect(AgentFiles.lstatMode(box.socketPath) != nil, "the agent removed the socket it was handed")
    }

    @Test(.enabled(if: present, "systemd-socket-activate is missing: run scripts/install-deps --test (systemd)"))
    func aSocketUnderAnotherNameAloneIsServedToo() throws {
        let (box, _) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        let running = try Self.listen(box, name: "vault-agent.socket", ["--exit-when-empty", "1s"])
        try box.unlock()
        #expect(try box.agentPID() == running.pid)
        #expect(try box.vault(["lock", "--all"]).status == 0)
        #expect(running.finish().status == 0)
    }

    /// Variables meant for another process (a parent's, inherited) are not taken: the agent binds its own socket.
    @Test func listenVariablesOfAnotherProcessAreIgnored() throws {
        let (box, _) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        let running = try AgentCLI.start(
            CLI.vault, ["agent", "run", "--exit-when-empty", "1s"],
            environment: box.environment.merging(["LISTEN_PID": "1", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "vault-agent"]) { $1 },
            timeout: 30)
        box.remember(running.pid)
        #expect(try AgentTests.poll { try box.status() != nil }, "the agent never answered")
        let ended = running.finish()
        #expect(ended.status == 0, "exit \(ended.status): \(ended.stderr)")
        #expect(ended.stderr.contains("vault agent: listening on \(box.socketPath)"), "stderr: \(ended.stderr)")
    }

    /// A descriptor that is not a listening Unix socket is refused by name, and nothing is served.
    @Test func aHandedInDescriptorThatIsNotAListeningSocketIsRefused() throws {
        let (box, _) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        // descriptor 3 of the child is closed (AgentCLI closes everything above 2): "not a socket".
        let python = try #require(AgentPython.python, "python3 is not installed: run scripts/install-deps --test")
        let result = try AgentCLI.exec(
            python,
            ["-c", "import os, sys; os.environ['LISTEN_PID'] = str(os.getpid()); os.execv(sys.argv[1], sys.argv[1:])",
             CLI.vault, "agent", "run"],
            environment: box.environment.merging(["LISTEN_FDS": "1", "LISTEN_FDNAMES": "vault-agent"]) { $1 }, timeout: 30)
        #expect(result.status == 1, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("descriptor 3 ('vault-agent'), handed in by the service manager, is not a socket"),
            "stderr: \(result.stderr)")
        #expect(AgentFiles.lstatMode(box.socketPath) == nil, "the agent bound a socket of its own")
    }
}
