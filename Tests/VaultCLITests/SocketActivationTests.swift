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

    /// Starts `systemd-socket-activate` listening on the box's socket, with `arguments` after `vault agent run`;
    /// `more` are further sockets it listens on, as other socket units of the service would (name, path).
    static func listen(
        _ box: AgentBox, name: String = "vault-agent", _ arguments: [String] = [], more: [(name: String, path: String)] = [],
        environment extra: [String: String] = [:]
    ) throws -> AgentCLI.Running {
        let activate = try #require(Self.activate, "systemd-socket-activate is missing: run scripts/install-deps --test")
        _ = mkdir(box.socketDirectory, 0o700)
        let environment = box.environment.merging(extra) { $1 }
        // It passes the program only the variables -E names (besides a few of its own).
        let variables = environment.sorted { $0.key < $1.key }.flatMap { ["-E", "\($0.key)=\($0.value)"] }
        let sockets = ([(name, box.socketPath)] + more.map { ($0.name, $0.path) })
        let listening = sockets.flatMap { ["-l", $0.1] } + ["--fdname=" + sockets.map(\.0).joined(separator: ":")]
        let running = try AgentCLI.start(
            activate, listening + variables + [CLI.vault, "agent", "run"] + arguments, environment: environment, timeout: 60)
        box.remember(running.pid)
        for (_, path) in sockets {
            try #require(AgentTests.poll { AgentFiles.lstatMode(path) != nil }, "systemd-socket-activate made no socket at \(path)")
        }
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

    // MARK: The ssh-agent's socket (vault-ssh-agent.socket, FileDescriptorName=ssh)

    /// The directory of the sockets a test hands in besides the vault's (0700, as the units' DirectoryMode).
    static func handedDirectory(_ box: AgentBox) -> String {
        let directory = box.directory + "/handed"
        _ = mkdir(directory, 0o700)
        return directory
    }

    /// `ssh-add ARGS` on `socket`.
    static func sshAdd(_ arguments: [String], socket: String, box: AgentBox) throws -> AgentRun {
        try OpenSSHTools.run(OpenSSHTools.add, "ssh-add", arguments, environment: ["SSH_AUTH_SOCK": socket, "HOME": box.directory])
    }

    /// Both units' sockets handed in (vault-agent and ssh, as vault-agent.socket and vault-ssh-agent.socket hand
    /// them): ssh's first connection starts the agent, a real `ssh-add -L` lists the vault's key through the socket
    /// handed in, and the agent binds no ssh-agent socket of its own (nothing at the path it would bind).
    @Test(.enabled(if: present && OpenSSHTools.client, "systemd-socket-activate or OpenSSH's client is missing: run scripts/install-deps --test"))
    func theSSHAgentSocketHandedInIsServedAndNoneIsBound() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        let keyFile = box.directory + "/id"
        let line = try OpenSSHTools.newKey(keyFile, comment: "work")
        let imported = try box.around(["ssh", "import", "work", keyFile])
        try #require(imported.status == 0, "\(imported.stderr)")
        let sshSocket = Self.handedDirectory(box) + "/ssh.sock"
        let running = try Self.listen(box, ["--exit-when-empty", "2s"], more: [("ssh", sshSocket)])

        // ssh is the first client: the agent starts on its connection; locked, it lists nothing.
        let empty = try Self.sshAdd(["-L"], socket: sshSocket, box: box)
        #expect(empty.status == 1 && empty.stdoutText == "The agent has no identities.\n", "\(empty.stdoutText) \(empty.stderr)")
        try box.unlock()
        #expect(try box.agentPID() == running.pid)
        let listed = try Self.sshAdd(["-L"], socket: sshSocket, box: box)
        #expect(listed.status == 0 && listed.stdoutText == line + "\n", "\(listed.stdoutText) \(listed.stderr)")
        #expect(AgentFiles.lstatMode(box.socketDirectory + "/ssh-agent.sock") == nil, "the agent bound an ssh-agent socket of its own")

        #expect(try box.vault(["lock", "--all"]).status == 0)
        let ended = running.finish()
        #expect(ended.status == 0, "the agent ended with \(ended.status): \(ended.stderr)")
        #expect(ended.stderr.contains("vault agent: serving the socket the service manager handed in, \(sshSocket)"), "stderr: \(ended.stderr)")
        #expect(ended.stderr.contains("note: the ssh-agent socket handed in, \(sshSocket), is not what 'vault ssh socket' prints"),
            "stderr: \(ended.stderr)")
        #expect(!ended.stderr.contains("ignoring"), "stderr: \(ended.stderr)")
        #expect(AgentFiles.lstatMode(sshSocket) != nil, "the agent removed the ssh socket it was handed")
        #expect(AgentFiles.lstatMode(box.socketDirectory + "/ssh-agent.sock") == nil)
    }

    /// A socket named for nobody, handed in with the two, is left alone and said so (as the vault socket's
    /// adoption leaves any socket but its own); the two are served.
    @Test(.enabled(if: present && OpenSSHTools.client, "systemd-socket-activate or OpenSSH's client is missing: run scripts/install-deps --test"))
    func anExtraSocketIsIgnoredWithANote() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        let handed = Self.handedDirectory(box)
        let running = try Self.listen(box, ["--exit-when-empty", "1s"], more: [("ssh", handed + "/ssh.sock"), ("other", handed + "/other.sock")])
        try box.unlock()
        #expect(try box.agentPID() == running.pid)
        let empty = try Self.sshAdd(["-L"], socket: handed + "/ssh.sock", box: box)
        #expect(empty.status == 1 && empty.stdoutText == "The agent has no identities.\n", "\(empty.stdoutText) \(empty.stderr)")
        #expect(try box.vault(["lock", "--all"]).status == 0)
        let ended = running.finish()
        #expect(ended.status == 0, "\(ended.stderr)")
        #expect(ended.stderr.contains(
            "vault agent: note: ignoring the socket handed in as 'other' (\(handed)/other.sock): only 'vault-agent' and 'ssh' are served"),
            "stderr: \(ended.stderr)")
    }

    /// The ssh-agent's socket alone is never taken for the vault's: a clear error, nothing served or bound.
    @Test(.enabled(if: present && OpenSSHTools.client, "systemd-socket-activate or OpenSSH's client is missing: run scripts/install-deps --test"))
    func theSSHSocketAloneIsNotTakenForTheVaults() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        let sshSocket = Self.handedDirectory(box) + "/ssh.sock"
        let activate = try #require(Self.activate)
        let variables = box.environment.sorted { $0.key < $1.key }.flatMap { ["-E", "\($0.key)=\($0.value)"] }
        let running = try AgentCLI.start(
            activate, ["-l", sshSocket, "--fdname=ssh"] + variables + [CLI.vault, "agent", "run"], environment: box.environment, timeout: 60)
        box.remember(running.pid)
        try #require(AgentTests.poll { AgentFiles.lstatMode(sshSocket) != nil }, "systemd-socket-activate made no socket")
        _ = try Self.sshAdd(["-L"], socket: sshSocket, box: box)
        let ended = running.finish()
        #expect(ended.status == 1, "exit \(ended.status): \(ended.stderr)")
        #expect(ended.stderr.contains("1 sockets were handed in and none is named 'vault-agent' (FileDescriptorName=)"), "stderr: \(ended.stderr)")
        #expect(AgentFiles.lstatMode(box.socketPath) == nil, "the agent bound a socket of its own")
    }

    /// vault-ssh-agent.socket listens where `vault ssh socket` and `vault ssh env` point (no VAULT_AGENT_SOCK: the
    /// runtime directory's), and names its socket as the agent looks for it.
    @Test func theSSHUnitListensWhereVaultSSHSocketPoints() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let unit = try String(contentsOf: root.appendingPathComponent("packaging/systemd/vault-ssh-agent.socket"), encoding: .utf8)
        let settings = unit.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("=") }
        func value(_ key: String) -> String? {
            settings.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
        }
        #expect(value("FileDescriptorName") == "ssh")
        #expect(value("Service") == "vault-agent.service")
        let box = try AgentBox()
        let runtime = box.directory + "/runtime"
        _ = mkdir(runtime, 0o700)
        let listen = try #require(value("ListenStream")).replacingOccurrences(of: "%t", with: runtime)
        let environment = ["XDG_RUNTIME_DIR": runtime, "VAULT_PATH": box.vaultPath]
        let printed = try AgentCLI.exec(CLI.vault, ["ssh", "socket"], environment: environment)
        #expect(printed.status == 0 && printed.stdoutText == listen + "\n", "\(printed.stdoutText) \(printed.stderr)")
        let env = try AgentCLI.exec(CLI.vault, ["ssh", "env"], environment: environment)
        #expect(env.stdoutText == "SSH_AUTH_SOCK='\(listen)'; export SSH_AUTH_SOCK;\n")
    }
}
