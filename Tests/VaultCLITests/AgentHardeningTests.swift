import Foundation
import Testing

/// Issue 24 (§1–§3): the agent never destroys a file, stays bounded under load, trusts only its own environment
/// and checks every number and name it is sent. Real agent processes; raw frames from Python where a client of
/// ours would never send them.
@Suite(.processTimeLimit, .serialized) struct AgentHardeningTests {
    /// Sends raw frames (docs/AGENT.md) to `socket` and prints each answer's status byte and its `message`
    /// field. Fields: `[(tag, bytes)]`.
    static let rawClient = #"""
        import json, socket, struct, sys
        def frame(kind, fields):
            payload = bytes([6, kind]) + b"".join(bytes([t]) + struct.pack(">I", len(v)) + v for t, v in fields)  # protocol version 6
            return struct.pack(">I", len(payload)) + payload
        def read(s, n):
            data = b""
            while len(data) < n:
                chunk = s.recv(n - len(data))
                if not chunk: raise EOFError
                data += chunk
            return data
        out = []
        for kind, fields in json.loads(sys.argv[2]):
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            s.sendall(frame(kind, [(t, bytes.fromhex(v)) for t, v in fields]))
            n = struct.unpack(">I", read(s, 4))[0]; body = read(s, n)
            status, i, message = body[1], 2, ""
            while i < len(body):
                tag, length = body[i], struct.unpack(">I", body[i+1:i+5])[0]
                if tag in (9, 11): message += body[i+5:i+5+length].decode() + ";"
                i += 5 + length
            out.append(f"{status}:{message}")
            s.close()
        print("|".join(out))
        """#

    static func hex(_ text: String) -> String { text.utf8.map { String(format: "%02x", $0) }.joined() }
    static func hex(_ number: UInt64) -> String { String(format: "%016llx", number) }

    @Test func aRegularFileAtTheSocketPathIsNeverRemoved() throws {
        let box = try AgentBox()
        try box.initVault()
        try FileManager.default.createDirectory(atPath: box.socketDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Data("-----BEGIN OPENSSH PRIVATE KEY-----\n".utf8).write(to: URL(fileURLWithPath: box.socketPath))
        let result = try box.vault(["unlock"], source: true)
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("'\(box.socketPath)'") && result.stderr.contains("holds a regular file, not a socket of yours"), "\(result.stderr)")
        #expect(try String(contentsOfFile: box.socketPath, encoding: .utf8) == "-----BEGIN OPENSSH PRIVATE KEY-----\n")
    }

    @Test func anAgentWhoseSocketIsGoneExitsAndNeverRemovesTheNextOnesSocket() throws {
        let box = try AgentBox()
        try box.initVault()
        try box.unlock()
        let first = try #require(try box.agentPID())
        box.remember(first)
        // The socket's directory deleted (a logout on Debian removes /run/user/UID), then a new unlock.
        try FileManager.default.removeItem(atPath: box.socketDirectory)
        try box.unlock()
        let second = try #require(try box.agentPID())
        box.remember(second)
        #expect(second != first)
        #expect(AgentProcesses.waitUntilGone(first, timeout: 10), "the first agent outlived its socket")
        // The first agent's exit left the second one's socket alone.
        #expect(AgentFiles.lstatMode(box.socketPath).map { $0 & S_IFMT == S_IFSOCK } == true)
        #expect(try box.agentPID() == second)
        let get = try box.vault(["list"])
        #expect(get.status == 0, "\(get.stderr)")
    }

    @Test func theAgentKeepsNoPassphraseInItsEnvironmentAndNoWorkingDirectory() throws {
        let box = try AgentBox()
        try box.initVault()
        let unlocked = try box.vault(["unlock"], environment: ["VAULT_PASSPHRASE": box.passphrase])
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        let pid = try #require(try box.agentPID())
        box.remember(pid)
        let environment = try #require(FileManager.default.contents(atPath: "/proc/\(pid)/environ"))
        let variables = String(decoding: environment, as: UTF8.self).split(separator: "\0").map(String.init)
        #expect(!variables.contains { $0.hasPrefix("VAULT_PASSPHRASE=") } && !variables.contains { $0.contains(box.passphrase) })
        #expect(variables.contains("VAULT_AGENT_SOCK=\(box.socketPath)"))
        #expect(!variables.contains { $0.hasPrefix("PATH=") })
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd") == "/")
    }

    @Test func aProductionAgentRefusesTheTestKDFWhateverTheFrameSays() throws {
        let box = try AgentBox()
        try box.initVault()  // 8 KiB Argon2id: the test hook's parameters
        // An agent started as a service manager would: no test switch in its own environment.
        var environment = box.environment
        environment["VAULT_TESTING_INSECURE_KDF"] = nil
        let agent = try AgentCLI.start(CLI.vault, ["agent"], environment: environment, timeout: 60)
        box.remember(agent.pid)
        defer { kill(agent.pid, SIGKILL); _ = agent.finish() }
        for _ in 0..<200 where AgentFiles.lstatMode(box.socketPath) == nil { usleep(10_000) }
        let result = try box.vault(["unlock"], source: true)  // the client has the switch and sets the frame's flag
        #expect(result.status == 6, "\(result.stderr)")
        #expect(result.stderr.contains("Argon2id parameters out of the accepted range"), "\(result.stderr)")
    }

    @Test func numbersAndNamesOnTheWireAreCheckedAndTheAgentLives() throws {
        let box = try AgentBox()
        try box.initVault()
        _ = try box.around(["put", "k"], stdin: Data("v".utf8))
        try box.unlock()
        let pid = try #require(try box.agentPID())
        box.remember(pid)
        let path = Self.hex(box.vaultPath), passphrase = Self.hex(box.passphrase)
        let requests: [(UInt8, [(UInt8, String)])] = [
            (2, [(1, path), (4, passphrase), (5, Self.hex(1 << 63)), (6, Self.hex(60)), (7, "01")]),  // idle 2^63 s
            (2, [(1, path), (4, passphrase), (5, Self.hex(60)), (6, Self.hex(UInt64.max)), (7, "01")]),  // max 2^64-1 s
            (2, [(1, path), (4, passphrase), (5, Self.hex(60)), (6, Self.hex(60)), (7, "01"), (8, Self.hex(UInt64.max))]),
            (6, [(1, path), (2, "6bff")]),  // get "k\xFF"
            (6, [(1, path), (2, Self.hex("k"))]),  // and the agent still answers
        ]
        let json = "[" + requests.map { kind, fields in
            "[\(kind), [" + fields.map { "[\($0.0), \"\($0.1)\"]" }.joined(separator: ", ") + "]]"
        }.joined(separator: ", ") + "]"
        let run = try AgentCLI.exec("/usr/bin/python3", ["-c", Self.rawClient, box.socketPath, json], environment: [:])
        #expect(run.status == 0, "\(run.stderr)")
        let answers = run.stdoutText.trimmingCharacters(in: .newlines).split(separator: "|").map(String.init)
        #expect(answers.count == 5, "\(run.stdoutText)")
        guard answers.count == 5 else { return }
        // The agent's own refusals: code bad_request (docs/AGENT.md, "Bounds"), saying the request was refused.
        #expect(answers[0] == "1:bad_request;the agent refused the request: idle and max must be 1 second to 366 days;", "\(answers[0])")
        #expect(answers[1] == "1:bad_request;the agent refused the request: idle and max must be 1 second to 366 days;", "\(answers[1])")
        #expect(answers[2] == "1:bad_request;the agent refused the request: a lock timeout of more than an hour;", "\(answers[2])")
        #expect(answers[3].hasPrefix("1:invalid_name;") && answers[3].contains("not valid UTF-8"), "\(answers[3])")
        #expect(answers[4] == "0:")
        #expect(AgentProcesses.isAlive(pid))
    }

    @Test func theCommandLineRefusesOverflowingDurationsAndRelativeSockets() throws {
        let box = try AgentBox()
        try box.initVault()
        for duration in ["9223372036854775807h", "99999999999999999999", "1h1h", "0", "1x", "h", "367d"] {
            let result = try box.vault(["unlock", "--idle", duration], source: true)
            #expect(result.status == 64, "--idle \(duration): \(result.status) \(result.stderr)")
        }
        let compound = try box.vault(["unlock", "--idle", "1h30m", "--max", "90", "--json"], source: true)
        #expect(compound.status == 0, "\(compound.stderr)")
        #expect(compound.stdoutText.contains(#""idle_seconds":5400"#) && compound.stdoutText.contains(#""max_seconds":90"#))
        #expect(compound.stderr.isEmpty)
        let warned = try box.vault(["unlock", "--idle", "2h", "--max", "1h"], source: true)
        #expect(warned.stderr == "vault: warning: --idle 2h is not shorter than --max 1h: the vault locks after 1h whatever the use\n")
        let credential = try box.vault(["credential", "--timeout", "9223372036854775807", "get"])
        #expect(credential.status == 64, "\(credential.stderr)")
        let relative = try box.vault(["unlock"], source: true, environment: ["VAULT_AGENT_SOCK": "agent/agent.sock"])
        #expect(relative.status == 64)
        #expect(relative.stderr == """
            vault: cannot use the agent socket 'agent/agent.sock': it is not an absolute path
            hint: give VAULT_AGENT_SOCK an absolute path, at most 107 bytes long

            """)
    }

    @Test func underUmask0277TheSocketDirectoryIsStill0700AndTheAgentBinds() throws {
        let box = try AgentBox()
        try box.initVault()
        let result = try AgentCLI.exec(
            "/bin/sh", ["-c", "umask 0277; exec \"$0\" unlock --passphrase-file \"$1\"", CLI.vault, box.passphraseFile],
            environment: box.environment)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(AgentFiles.lstatMode(box.socketDirectory).map { $0 & 0o7777 } == 0o700)
        #expect(try box.vault(["list"]).status == 0)
    }

    @Test func withoutXDGRuntimeDirTheSocketIsInADirectoryNoOtherUserCanMakeFirst() throws {
        let box = try AgentBox()
        try box.initVault()
        var info = stat()
        let run = "/run/user/\(geteuid())"
        let runUsable = lstat(run, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR && info.st_uid == geteuid() && info.st_mode & 0o077 == 0
        let expected = runUsable ? run + "/vault/agent.sock" : box.directory + "/state/vault/agent/agent.sock"
        let unlocked = try AgentCLI.exec(
            "/usr/bin/env", ["-u", "VAULT_AGENT_SOCK", "-u", "XDG_RUNTIME_DIR", CLI.vault, "unlock", "--passphrase-file", box.passphraseFile],
            environment: box.environment)
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        let status = try AgentCLI.exec(
            "/usr/bin/env", ["-u", "VAULT_AGENT_SOCK", "-u", "XDG_RUNTIME_DIR", CLI.vault, "agent", "status", "--json"],
            environment: box.environment)
        let parsed = try AgentStatus(status.stdout)
        box.remember(parsed.pid)
        defer { kill(parsed.pid, SIGKILL) }
        #expect(parsed.socket == expected)
    }

    /// 1,100 idle connections held by one process, the agent started under `ulimit -Sn 1024`: a `get` still
    /// answers at once (the agent raised its own limit, and closes the longest-idle clients past its bound).
    @Test func aGetAnswersPromptlyBehind1100IdleConnections() throws {
        let box = try AgentBox()
        try box.initVault()
        _ = try box.around(["put", "k"], stdin: Data("v".utf8))
        let unlocked = try AgentCLI.exec(
            "/bin/sh", ["-c", "ulimit -Sn 1024; exec \"$0\" unlock --passphrase-file \"$1\"", CLI.vault, box.passphraseFile],
            environment: box.environment)
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        let pid = try #require(try box.agentPID())
        box.remember(pid)
        let holder = try AgentCLI.start("/usr/bin/python3", ["-c", """
            import resource, socket, sys, time
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            held = []
            for i in range(1100):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); held.append(s)
            print("held", len(held), flush=True)
            time.sleep(60)
            """, box.socketPath], environment: [:], timeout: 90)
        defer { kill(holder.pid, SIGKILL); _ = holder.finish() }
        for _ in 0..<500 {
            if (try? String(contentsOfFile: holder.files.stdout, encoding: .utf8))?.contains("held") == true { break }
            usleep(20_000)
        }
        let start = Date()
        let get = try box.vault(["get", "k"])
        let seconds = Date().timeIntervalSince(start)
        #expect(get.status == 0 && get.stdoutText == "v", "\(get.stderr)")
        #expect(seconds < 1, "get took \(seconds) s")
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") } ?? ""
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        #expect(fields.count >= 5 && fields[3] == fields[4], "soft limit not raised: \(line)")
        // The agent does not spin: its CPU over a second stays small.
        let before = try Self.cpuTicks(pid)
        usleep(1_000_000)
        #expect(try Self.cpuTicks(pid) - before < 20)
    }

    /// Four connections each announcing a 256 MiB frame and sending nothing more: the agent commits nothing for
    /// them (its resident memory stays under 100 MB).
    @Test func framesAnnouncedButNotSentCostNoMemory() throws {
        let box = try AgentBox()
        try box.initVault()
        try box.unlock()
        let pid = try #require(try box.agentPID())
        box.remember(pid)
        let holder = try AgentCLI.start("/usr/bin/python3", ["-c", """
            import socket, struct, sys, time
            held = []
            for i in range(4):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                s.sendall(struct.pack(">I", 256 << 20) + bytes([6, 6]) + b"\\x01" * 1000)
                held.append(s)
            print("sent", flush=True)
            time.sleep(60)
            """, box.socketPath], environment: [:], timeout: 90)
        defer { kill(holder.pid, SIGKILL); _ = holder.finish() }
        for _ in 0..<500 {
            if (try? String(contentsOfFile: holder.files.stdout, encoding: .utf8))?.contains("sent") == true { break }
            usleep(20_000)
        }
        usleep(300_000)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap { Int($0.split(separator: " ")[1]) } ?? .max
        #expect(rss < 100_000, "agent VmRSS \(rss) kB")
        #expect(try box.vault(["agent", "status"]).status == 0)
    }

    static func cpuTicks(_ pid: pid_t) throws -> Int {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }
}
