import Foundation
import Testing
import VaultTestSupport

/// What a `vault` run gave, with its wall time.
struct AgentRun {
    var status: Int32
    var stdout: Data
    var stderr: String
    /// Wall time from start to exit (monotonic), including the `setsid` in front.
    var seconds: Double
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

/// Runs processes for the agent tests, with `posix_spawn` rather than Foundation's `Process`: the child starts in
/// a new session (no controlling terminal), with no blocked signals, default signal dispositions, and only
/// descriptors 0, 1 and 2 (temporary files, not pipes). Only the process's own exit is waited for (`waitpid`,
/// polled, with a timeout): `vault unlock` starts an agent that outlives it, and an agent that kept an inherited
/// descriptor open must not make the test wait for an end of file (Foundation's `Process` notices a child's exit
/// by the end of a socket the child inherits, which a leaked descriptor in the agent keeps open forever).
enum AgentCLI {
    /// A started process; ``finish()`` waits (bounded) and collects its output.
    final class Running: @unchecked Sendable {
        let pid: pid_t
        let started: Double
        let timeout: TimeInterval
        let files: (stdin: String, stdout: String, stderr: String)
        let label: [String]

        init(pid: pid_t, started: Double, timeout: TimeInterval, files: (String, String, String), label: [String]) {
            self.pid = pid
            self.started = started
            self.timeout = timeout
            self.files = files
            self.label = label
        }

        func finish() -> AgentRun {
            let deadline = started + timeout
            var status: Int32 = 0
            var reaped = false
            var timedOut = false
            while !reaped {
                let result = waitpid(pid, &status, WNOHANG)
                if result == pid { reaped = true; break }
                if result < 0 && errno != EINTR {
                    Issue.record("waitpid(\(pid)) failed (errno \(errno)): \(label)")
                    break
                }
                if monotonicNow() > deadline && !timedOut {
                    timedOut = true
                    killTree(pid)
                }
                usleep(2_000)
            }
            let seconds = monotonicNow() - started
            if timedOut { Issue.record("process timed out after \(timeout) s: \(label)") }
            let out = (try? Data(contentsOf: URL(fileURLWithPath: files.stdout))) ?? Data()
            let err = (try? Data(contentsOf: URL(fileURLWithPath: files.stderr))) ?? Data()
            for file in [files.stdin, files.stdout, files.stderr] { unlink(file) }
            // Exit status, or 128 + the signal that ended it (as a shell reports it).
            let code: Int32 = !reaped ? -1 : (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            return AgentRun(status: code, stdout: out, stderr: String(decoding: err, as: UTF8.self), seconds: seconds)
        }
    }

    /// A new empty file (0600) in the temporary directory.
    static func temporaryFile(_ label: String) throws -> String {
        var template = Array((AgentBox.temporaryRoot + "/vault-agent-io-\(label)-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        close(fd)
        return String(cString: template)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which Swift's Glibc module does not declare.
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    static func addCloseFrom() -> AddCloseFrom? {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }

    /// glibc's posix_spawn flags (spawn.h): SETSIGDEF 0x04, SETSIGMASK 0x08, SETSID 0x80.
    static let spawnFlags: Int16 = 0x04 | 0x08 | 0x80

    /// Starts `executable arguments` (see ``AgentCLI``), stdin from `stdin`. The environment is minimal and
    /// explicit (no `VAULT_PASSPHRASE`, no terminal).
    static func start(
        _ executable: String, _ arguments: [String], stdin: Data = Data(), environment: [String: String],
        timeout: TimeInterval = 30
    ) throws -> Running {
        let files = (try temporaryFile("in"), try temporaryFile("out"), try temporaryFile("err"))
        try stdin.write(to: URL(fileURLWithPath: files.0))
        var env = ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": AgentBox.temporaryRoot, "LANG": "C.UTF-8"]
        env.merge(environment) { $1 }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, files.0, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, files.1, O_WRONLY | O_TRUNC, 0)
        posix_spawn_file_actions_addopen(&actions, 2, files.2, O_WRONLY | O_TRUNC, 0)
        if let closeFrom = addCloseFrom() {
            _ = closeFrom(&actions, 3)
        } else {
            // Best effort: close what is open now.
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
                if let fd = Int32(entry), fd > 2 { posix_spawn_file_actions_addclose(&actions, fd) }
            }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, spawnFlags)

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let started = monotonicNow()
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            for file in [files.0, files.1, files.2] { unlink(file) }
            throw AgentTestError(description: "cannot run \(executable): errno \(result)")
        }
        return Running(pid: pid, started: started, timeout: timeout, files: files, label: [executable] + arguments)
    }

    static func exec(
        _ executable: String, _ arguments: [String], stdin: Data = Data(), environment: [String: String],
        timeout: TimeInterval = 30
    ) throws -> AgentRun {
        try start(executable, arguments, stdin: stdin, environment: environment, timeout: timeout).finish()
    }
}

/// A private temporary directory (0700) for one test: a vault path, a passphrase file, and the agent socket
/// `DIR/agent/agent.sock` (`VAULT_AGENT_SOCK` in every command's environment), so each test has its own agent.
/// ``stopAgents()`` kills every process that serves a socket below the directory (and any PID seen by
/// ``agentPID()``); deinit does it too, then removes the directory.
final class AgentBox: @unchecked Sendable {
    /// The temporary directory without a trailing slash (paths the tests compare are then canonical).
    static let temporaryRoot: String = {
        var root = NSTemporaryDirectory()
        while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
        return root
    }()

    let directory: String
    let vaultPath: String
    let passphraseFile: String
    let passphrase: String
    /// `VAULT_AGENT_SOCK` for every command of this box.
    let socketPath: String
    /// A socket path where no agent ever runs: commands "around the agent" use it.
    let elsewhereSocket: String

    private let lock = NSLock()
    private var seenPIDs = Set<pid_t>()

    /// A box with its own directory; with `sharingAgentWith`, its commands use that box's socket (one agent).
    init(passphrase: String = "correct horse battery staple", sharingAgentWith other: AgentBox? = nil) throws {
        let directory = try makePrivateDirectory(prefix: "vault-agent", root: Self.temporaryRoot)
        let passphraseFile = directory + "/passphrase"
        self.directory = directory
        self.vaultPath = directory + "/vaults/test.vault"
        self.passphraseFile = passphraseFile
        self.passphrase = passphrase
        self.socketPath = other?.socketPath ?? directory + "/agent/agent.sock"
        self.elsewhereSocket = directory + "/elsewhere/agent.sock"
        FileManager.default.createFile(
            atPath: passphraseFile, contents: Data((passphrase + "\n").utf8), attributes: [.posixPermissions: 0o600])
    }

    deinit {
        stopAgents()
        try? FileManager.default.removeItem(atPath: directory)
    }

    var socketDirectory: String { URL(fileURLWithPath: socketPath).deletingLastPathComponent().path }

    /// This box's vault, the cheap test KDF, this box's agent socket; state and runtime directories inside the box.
    var environment: [String: String] {
        [
            "VAULT_PATH": vaultPath, "VAULT_TESTING_INSECURE_KDF": "1", "VAULT_AGENT_SOCK": socketPath,
            "XDG_STATE_HOME": directory + "/state", "XDG_RUNTIME_DIR": directory + "/runtime", "VAULT_AGENT": "off",
        ]
    }

    /// Runs `vault arguments`; with `source`, `--passphrase-file` is added. By default no passphrase source at all.
    @discardableResult
    func vault(
        _ arguments: [String], stdin: Data = Data(), source: Bool = false, environment extra: [String: String] = [:],
        timeout: TimeInterval = 30
    ) throws -> AgentRun {
        var args = arguments
        if source { args += ["--passphrase-file", passphraseFile] }
        return try AgentCLI.exec(
            CLI.vault, args, stdin: stdin, environment: environment.merging(extra) { $1 }, timeout: timeout)
    }

    /// Runs `vault arguments` around the agent: `VAULT_AGENT_SOCK` points where no agent runs, with the passphrase file.
    @discardableResult
    func around(_ arguments: [String], stdin: Data = Data()) throws -> AgentRun {
        try vault(arguments, stdin: stdin, source: true, environment: ["VAULT_AGENT_SOCK": elsewhereSocket])
    }

    /// Expects each command to give the same exit code, stdout and stderr through the agent as around it.
    func expectSameThroughTheAgent(_ commands: [[String]], stdin: Data = Data(), sourceLocation: SourceLocation = #_sourceLocation) throws {
        for command in commands {
            let agent = try vault(command, stdin: stdin)
            let local = try around(command, stdin: stdin)
            #expect(agent.status == local.status, "\(command): \(agent.stderr) / \(local.stderr)", sourceLocation: sourceLocation)
            #expect(agent.stdout == local.stdout, "\(command)", sourceLocation: sourceLocation)
            #expect(agent.stderr == local.stderr, "\(command)", sourceLocation: sourceLocation)
        }
    }

    func startAround(_ arguments: [String], stdin: Data = Data()) throws -> AgentCLI.Running {
        try AgentCLI.start(
            CLI.vault, arguments + ["--passphrase-file", passphraseFile], stdin: stdin,
            environment: environment.merging(["VAULT_AGENT_SOCK": elsewhereSocket]) { $1 })
    }

    func startThroughAgent(_ arguments: [String], stdin: Data = Data()) throws -> AgentCLI.Running {
        try AgentCLI.start(CLI.vault, arguments, stdin: stdin, environment: environment)
    }

    /// `vault init` with the passphrase file, around the agent; fails the test if it fails.
    func initVault(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try around(["init"])
        try #require(result.status == 0, "init failed: \(result.stderr)", sourceLocation: sourceLocation)
    }

    /// `vault unlock --passphrase-file F` plus `extra`; requires exit 0.
    @discardableResult
    func unlock(_ extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> AgentRun {
        let result = try vault(["unlock"] + extra, source: true)
        try #require(result.status == 0, "unlock failed (exit \(result.status)): \(result.stderr)", sourceLocation: sourceLocation)
        _ = try? agentPID()
        return result
    }

    /// The parsed `vault agent status --json`, or nil when it did not exit 0 (no agent).
    func status() throws -> AgentStatus? {
        let result = try vault(["agent", "status", "--json"])
        guard result.status == 0 else { return nil }
        let status = try AgentStatus(result.stdout)
        lock.withLock { _ = seenPIDs.insert(status.pid) }
        return status
    }

    /// The agent's PID from `vault agent status --json` (nil: none answers).
    func agentPID() throws -> pid_t? { try status()?.pid }

    /// Remembers a PID to kill in ``stopAgents()``.
    func remember(_ pid: pid_t) { lock.withLock { _ = seenPIDs.insert(pid) } }

    /// Kills (SIGKILL) every agent this box may have started: PIDs seen by ``status()``, and every process that
    /// holds a Unix socket bound below the box's directory or at its socket path. Waits (bounded) until they are gone.
    func stopAgents() {
        var pids = lock.withLock { seenPIDs }
        if let pid = (try? status())?.pid { pids.insert(pid) }
        pids.formUnion(AgentProcesses.holdingSockets { $0 == socketPath || $0.hasPrefix(directory + "/") })
        pids.remove(getpid())
        for pid in pids where pid > 1 { kill(pid, SIGKILL) }
        for pid in pids where pid > 1 { _ = AgentProcesses.waitUntilGone(pid, timeout: 5) }
    }
}

/// `vault agent status --json`: `{"pid":N,"protocol":1,"socket":"SOCK","vaults":[{...}]}`.
struct AgentStatus {
    struct Vault: Equatable {
        var path: String
        var idleSecondsLeft: Int
        var maxSecondsLeft: Int
    }

    var pid: pid_t
    var protocolVersion: Int
    var socket: String
    var vaults: [Vault]
    var keys: [String]

    init(_ data: Data) throws {
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let pid = object["pid"] as? Int, let version = object["protocol"] as? Int,
            let socket = object["socket"] as? String, let vaults = object["vaults"] as? [[String: Any]]
        else { throw AgentTestError(description: "unexpected status JSON: \(String(decoding: data, as: UTF8.self))") }
        self.pid = pid_t(pid)
        self.protocolVersion = version
        self.socket = socket
        self.keys = object.keys.sorted()
        self.vaults = try vaults.map { vault in
            guard let path = vault["path"] as? String, let idle = vault["idle_seconds_left"] as? Int,
                let max = vault["max_seconds_left"] as? Int, vault.count == 3
            else { throw AgentTestError(description: "unexpected vault in status JSON: \(vault)") }
            return Vault(path: path, idleSecondsLeft: idle, maxSecondsLeft: max)
        }
    }
}

struct AgentTestError: Error, CustomStringConvertible {
    let description: String
}

/// Processes and sockets, from /proc.
enum AgentProcesses {
    /// Inodes of the Unix sockets bound to a path for which `matches` is true (/proc/net/unix).
    static func socketInodes(_ matches: (String) -> Bool) -> Set<String> {
        // Read to the end: `String(contentsOfFile:)` stops at the first page of a /proc file (about 60 sockets),
        // so on a busy machine the agent's row was missed and its socket seemed held by nobody.
        let bytes = (try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/net/unix")).readToEnd()) ?? nil
        let table = String(decoding: bytes ?? Data(), as: UTF8.self)
        var inodes = Set<String>()
        for line in table.split(separator: "\n").dropFirst() {
            // Num RefCount Protocol Flags Type St Inode [Path]
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 8 else { continue }
            let path = fields[7...].joined(separator: " ")
            if matches(path) { inodes.insert(String(fields[6])) }
        }
        return inodes
    }

    /// PIDs of the processes holding one of the Unix sockets bound to a path for which `matches` is true.
    static func holdingSockets(_ matches: (String) -> Bool) -> Set<pid_t> {
        let inodes = socketInodes(matches)
        guard !inodes.isEmpty else { return [] }
        let targets = Set(inodes.map { "socket:[\($0)]" })
        var pids = Set<pid_t>()
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry) else { continue }
            for fd in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(entry)/fd")) ?? [] {
                if let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/fd/\(fd)"),
                    targets.contains(link)
                {
                    pids.insert(pid)
                    break
                }
            }
        }
        return pids
    }

    /// The one-letter state of `pid` (`R`, `S`, `Z`, ...), nil if there is no such process.
    static func state(_ pid: pid_t) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ").first?.first
    }

    /// Running (exists and is not a zombie).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let state = state(pid) else { return false }
        return state != "Z" && state != "X"
    }

    /// Polls until `pid` is gone or a zombie; false after `timeout`.
    static func waitUntilGone(_ pid: pid_t, timeout: Double) -> Bool {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if !isAlive(pid) { return true }
            usleep(10_000)
        }
        return !isAlive(pid)
    }

    /// Where the descriptors of `pid` point (`/proc/PID/fd/N` targets).
    static func descriptorTargets(_ pid: pid_t) -> [String] {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
    }
}

/// File system helpers.
enum AgentFiles {
    static func lstatMode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode : nil
    }

    static func exists(_ path: String) -> Bool { lstatMode(path) != nil }
}

/// Python 3 helpers (the system's `/usr/bin/python3`, which another user can run too).
enum AgentPython {
    static var python: String? {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : findTool("python3")
    }

    /// A fake agent of protocol version 9 (or `argv[2]`) on `argv[1]` (directory created 0700): reads one frame
    /// (4-byte big-endian length, then the payload) per connection and answers `\x00\x00\x00\x02`, the version,
    /// `\x00`. Prints READY once listening.
    static let fakeAgent = #"""
        import os, socket, struct, sys
        path = sys.argv[1]
        version = int(sys.argv[2]) if len(sys.argv) > 2 else 9
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.chmod(os.path.dirname(path), 0o700)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        os.chmod(path, 0o600)
        server.listen(16)
        sys.stdout.write("READY\n"); sys.stdout.flush()
        def read_exactly(conn, n):
            data = b""
            while len(data) < n:
                chunk = conn.recv(n - len(data))
                if not chunk:
                    raise EOFError()
                data += chunk
            return data
        while True:
            conn, _ = server.accept()
            conn.settimeout(5)
            try:
                (length,) = struct.unpack(">I", read_exactly(conn, 4))
                read_exactly(conn, length)
                conn.sendall(b"\x00\x00\x00\x02" + bytes([version]) + b"\x00")
            except Exception:
                pass
            finally:
                conn.close()
        """#

    /// A recording proxy on `argv[1]` (directory created 0700) in front of the agent at `argv[2]`: relays every
    /// connection both ways and appends each client-to-agent frame, as hex, to the file `argv[3]` (one line per
    /// connection, frames separated by spaces; the line is written when the connection ends). Prints READY.
    static let recordingProxy = #"""
        import os, socket, struct, sys, threading
        path, upstream, log = sys.argv[1], sys.argv[2], sys.argv[3]
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.chmod(os.path.dirname(path), 0o700)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(16)
        lock = threading.Lock()
        sys.stdout.write("READY\n"); sys.stdout.flush()
        def pump(src, dst, record):
            buffer = b""
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    buffer += data
                    dst.sendall(data)
            except OSError:
                pass
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            if record is not None:
                frames = []
                while len(buffer) >= 4:
                    (length,) = struct.unpack(">I", buffer[:4])
                    frames.append(buffer[:4 + length].hex())
                    buffer = buffer[4 + length:]
                with lock:
                    with open(log, "a") as f:
                        f.write(" ".join(frames) + "\n")
        while True:
            client, _ = server.accept()
            agent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            agent.connect(upstream)
            threading.Thread(target=pump, args=(agent, client, None), daemon=True).start()
            threading.Thread(target=pump, args=(client, agent, True), daemon=True).start()
        """#

    /// Replays recorded connections (stdin: one line per connection, hex frames separated by spaces; the last line
    /// is the hex of a canary) to the socket `argv[1]`: sends each frame, reads one response frame (5 s timeout).
    /// Prints `connected N` (connections that connect() accepted), then `canary-returned` or `no-canary`, and
    /// one line per connection with what happened (response lengths, or the error), never the bytes.
    static let replay = #"""
        import socket, struct, sys
        lines = sys.stdin.read().split("\n")
        lines = [l for l in lines if l.strip()]
        canary = bytes.fromhex(lines[-1])
        connections = [[bytes.fromhex(f) for f in l.split()] for l in lines[:-1]]
        connected, seen, notes = 0, b"", []
        for frames in connections:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            note = []
            try:
                s.connect(sys.argv[1])
                connected += 1
                for frame in frames:
                    s.sendall(frame)
                    header = b""
                    while len(header) < 4:
                        chunk = s.recv(4 - len(header))
                        if not chunk:
                            raise EOFError("closed")
                        header += chunk
                    (length,) = struct.unpack(">I", header)
                    body = b""
                    while len(body) < length:
                        chunk = s.recv(length - len(body))
                        if not chunk:
                            raise EOFError("closed mid-frame")
                        body += chunk
                    seen += body
                    note.append("response %d bytes" % length)
            except Exception as e:
                note.append("%s: %s" % (type(e).__name__, e))
            finally:
                s.close()
            notes.append("; ".join(note))
        print("connected %d" % connected)
        print("canary-returned" if canary in seen else "no-canary")
        for n in notes:
            print(n)
        """#

    /// Starts `python3 -c script args` (stdout a pipe) and waits (bounded) for its first line to be READY.
    static func startServer(_ script: String, _ arguments: [String]) throws -> Process {
        let executable = try #require(Self.python, "python3 is not installed: run scripts/install-deps --test")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-c", script] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        let killer = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 15, execute: killer)
        var line = Data()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        killer.cancel()
        guard line == Data("READY".utf8) else {
            kill(pid, SIGKILL)
            process.waitForExit()
            throw AgentTestError(description: "the Python helper did not start")
        }
        return process
    }
}
