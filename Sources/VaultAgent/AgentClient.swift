import CVaultSystem
import FoundationEssentials
import Synchronization
import VaultAge
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// A connection to the agent (``AgentServer``): unlock and lock vaults, ask what is unlocked, and reach an
/// unlocked vault's entries through ``AgentVault``. Thread-safe: one request at a time on the connection.
public final class AgentClient: Sendable {
    /// The protocol version this build speaks.
    public static let protocolVersion = Int(AgentWire.version)

    public let socketPath: String
    private let connection: Mutex<Int32>

    private init(socketPath: String, fd: Int32) {
        self.socketPath = socketPath
        self.connection = Mutex(fd)
    }

    deinit { _ = connection.withLock { close($0) } }

    /// Connects to the agent at `socketPath`; `nil` when none answers there (never waits for one).
    ///
    /// - Throws: ``VaultError/unsafePermissions(path:reason:hint:)`` when the socket's directory is not safe
    ///   (someone else could be listening in the agent's place).
    /// `timeoutSeconds` bounds the connect itself (an agent whose backlog is full, e.g. stopped) and is the
    /// connection's timeout until a request sets its own.
    public static func connect(socketPath: String = AgentSocket.defaultPath, timeoutSeconds: Int = 30) throws -> AgentClient? {
        do {
            try AgentSocket.checkDirectory(of: socketPath, create: false)
        } catch VaultError.io(_, _, let code) where code == ENOENT {
            return nil
        }
        guard let fd = try AgentSocket.connect(to: socketPath, timeoutSeconds: timeoutSeconds) else { return nil }
        return AgentClient(socketPath: socketPath, fd: fd)
    }

    /// The environment an agent is started with: only what it needs to find its files and socket, and the
    /// test switches. Never `VAULT_PASSPHRASE` or anything else of the caller's: the agent lives for hours, and
    /// its environment is readable in /proc by every process of the user as long as it runs.
    static func agentEnvironment() -> [String] {
        let kept = ["HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "XDG_RUNTIME_DIR", "XDG_STATE_HOME",
                    "XDG_DATA_HOME", "XDG_CONFIG_HOME", "VAULT_AGENT_SOCK", "DBUS_SYSTEM_BUS_ADDRESS", "VAULT_LOCK_ON_SLEEP",
                    // The ssh-agent socket's confirmations ask through SSH_ASKPASS on this display (docs/SSH-AGENT.md).
                    "SSH_ASKPASS", "DISPLAY", "WAYLAND_DISPLAY"]
        var environment = kept.compactMap { name in Posix.environment(name).map { "\(name)=\($0)" } }
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if text.hasPrefix("VAULT_TESTING_") { environment.append(text) }
            cursor += 1
        }
        return environment
    }

    /// Connects to the agent, starting `command` (its executable's path, then its arguments: whatever runs an
    /// ``AgentServer`` on `socketPath`) in the background (a new session, detached) when none answers, and
    /// waiting up to 5 seconds for it to listen.
    public static func connectStarting(command: [String], socketPath: String = AgentSocket.defaultPath) throws -> AgentClient {
        precondition(!command.isEmpty, "an agent's command starts with its executable")
        let executable = command[0]
        try AgentSocket.checkDirectory(of: socketPath, create: true)
        if let client = try connect(socketPath: socketPath) { return client }
        // What the agent would refuse to replace is refused here, with the reason, before it is started.
        try AgentSocket.checkReplaceable(socketPath)
        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = agentEnvironment().map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        let pid = vault_spawn_tool(executable, argv, envp, -1, -1, -1, 1)
        guard pid > 0 else {
            throw AgentError.cannotStart(socket: socketPath, reason: "cannot run '\(executable)': \(Posix.describe(errno: errno))")
        }
        let deadline = Posix.monotonicSeconds() + 5
        while Posix.monotonicSeconds() < deadline {
            if let client = try connect(socketPath: socketPath) { return client }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                let how = status & 0x7F == 0 ? "exit \((status >> 8) & 0xFF)" : "signal \(status & 0x7F)"
                throw AgentError.cannotStart(socket: socketPath, reason: "the agent exited at once (\(how); 'vault agent' in the foreground shows why)")
            }
            usleep(10_000)
        }
        throw AgentError.cannotStart(socket: socketPath, reason: "the agent did not listen within 5 seconds")
    }

    /// An agent of an older protocol version listening at `socketPath` (a `vault` upgraded while its agent ran)
    /// is stopped, as rbw does, so that a new one can start: `vault unlock` calls this first. Only an agent of
    /// this user that answered with an older version is stopped (SIGTERM to the pid the socket's credentials
    /// name; it forgets its keys); one of a newer version is left alone. Returns the stopped agent's version and
    /// pid, or `nil` when there was nothing to replace.
    ///
    /// - Throws: ``AgentError/cannotStart(socket:reason:)`` when the older agent does not stop (SIGTERM, then
    ///   SIGKILL after 2 seconds);
    ///   ``AgentError/versionMismatch(agentVersion:)`` for a newer agent.
    public static func replaceOlderAgent(socketPath: String = AgentSocket.defaultPath) throws -> (version: Int, pid: Int32)? {
        guard let client = try connect(socketPath: socketPath, timeoutSeconds: 2) else { return nil }
        let version: Int
        do {
            _ = try client.request(.status)
            return nil
        } catch AgentError.versionMismatch(let agentVersion) {
            guard agentVersion < protocolVersion else { throw AgentError.versionMismatch(agentVersion: agentVersion) }
            version = agentVersion
        }
        let pid = try client.stop(socketPath: socketPath, named: "the agent of protocol version \(version)")
        return (version, pid)
    }

    /// Stops the agent that answers on `socketPath` when it cannot keep identities of the age stanza type
    /// `identityType` (an agent started by `vault`, which does not link VaultAgePQ, and a post-quantum identity to
    /// keep: `vault-net` starts one of its own in its place): it locks every vault first. Its pid and how many
    /// vaults it held, or `nil` when none runs or it can keep them.
    ///
    /// - Throws: ``AgentError/cannotStart(socket:reason:)`` when it does not stop.
    public static func replaceAgent(
        unableToKeep identityType: String, socketPath: String = AgentSocket.defaultPath
    ) throws -> (pid: Int32, locked: Int)? {
        guard let client = try connect(socketPath: socketPath, timeoutSeconds: 2),
              !(try client.status().identityTypes.contains(identityType))
        else { return nil }
        let locked = try client.lockAll()
        return (try client.stop(socketPath: socketPath, named: "the agent that cannot keep \(identityType) identities"), locked)
    }

    /// Stops the agent on the other end (SIGTERM: it forgets its keys and removes its socket; SIGKILL after 2
    /// seconds) and waits until nothing answers on `socketPath`; its pid.
    private func stop(socketPath: String, named name: String) throws -> Int32 {
        var pid: Int32 = 0, uid: UInt32 = 0
        let known = connection.withLock { vault_peer_credentials($0, &pid, &uid) } == 0
        guard known, uid == geteuid(), pid > 0 else {
            throw AgentError.cannotStart(socket: socketPath, reason: "\(name) runs there, and its pid is unknown")
        }
        for (signal, seconds) in [(SIGTERM, 2.0), (SIGKILL, 1.0)] {
            guard kill(pid, signal) == 0 || errno == ESRCH else {
                throw AgentError.cannotStart(socket: socketPath, reason: "cannot stop \(name) (pid \(pid)): \(Posix.describe(errno: errno))")
            }
            let deadline = Posix.monotonicSeconds() + seconds
            while Posix.monotonicSeconds() < deadline {
                // Gone when nobody answers there any more (its socket removed, or left stale: a new agent replaces that).
                if (try? Self.connect(socketPath: socketPath, timeoutSeconds: 1)).flatMap({ $0 }) == nil { return pid }
                usleep(20_000)
            }
        }
        throw AgentError.cannotStart(socket: socketPath, reason: "\(name) (pid \(pid)) did not stop")
    }

    // MARK: Requests

    /// Sends `request` and returns the agent's answer when it is a success: ``AgentError/locked(path:)`` when the
    /// vault is not held there, and the agent's failure as the error it is.
    ///
    /// The wait for the answer is bounded: 2 s for a probe and a status (an agent that answers nothing, e.g.
    /// stopped, must not hold a command up), 120 s where Argon2id runs (unlock, passwd), 30 s otherwise (a write
    /// may wait for another writer's lock).
    func request(_ request: AgentRequest, timeoutSeconds: Int? = nil) throws -> AgentResponse {
        // The agent knows a vault by its canonical path: every spelling of one file (`./v.vault`, `//`, a linked
        // directory) unlocks, uses and locks the same vault. Messages keep the caller's spelling.
        let writer = try request.mappingPath(RollbackGuard.canonicalPath).encode()
        let timeout: Int
        switch request.operation {
        case .probe, .status: timeout = timeoutSeconds ?? 2
        case .unlock, .passwd: timeout = timeoutSeconds ?? 120
        default: timeout = timeoutSeconds ?? 30
        }
        let answer: AgentWire.Message = try connection.withLock { fd in
            AgentSocket.setTimeout(fd, seconds: timeout)
            try AgentWire.send(writer, on: fd)
            // The request's region, zeroed, takes the answer: one guarded region per round trip, not two (a
            // map, lock, unlock and unmap less for each `get`: Benchmarks/README.md, "The last figure").
            writer.buffer.wipe()
            guard let answer = try AgentWire.receive(on: fd, into: writer.buffer) else {
                throw AgentError.protocolError("the agent closed the connection")
            }
            return answer
        }
        guard answer.version == AgentWire.version else { throw AgentError.versionMismatch(agentVersion: Int(answer.version)) }
        let path = request.path
        switch try AgentResponse(answer, answering: request.operation) {
        case .locked: throw AgentError.locked(path: path ?? "")
        case .failure(let failure):
            // The library's own error, as the local store would throw it, naming the vault as the caller did.
            if let errorCase = failure.errorCase {
                let canonical = path.map(RollbackGuard.canonicalPath)
                if let error = AgentErrorWire.decode(errorCase.name, errorCase.arguments, path: { $0 == canonical ? path! : $0 }) { throw error }
            }
            throw AgentError.remote(failure.presented)
        case let response: return response
        }
    }

    /// A request on the vault at `path`.
    func request(_ request: AgentRequest.VaultRequest, on path: String, timeoutSeconds: Int? = nil) throws -> AgentResponse {
        try self.request(.vault(path: path, request), timeoutSeconds: timeoutSeconds)
    }

    /// What the agent holds.
    public struct Status: Sendable, Equatable {
        public struct Vault: Sendable, Equatable {
            public var path: String
            public var idleSecondsLeft: Int
            public var maxSecondsLeft: Int
        }
        public var pid: Int
        public var socketPath: String
        public var vaults: [Vault]
        /// The age stanza types of the identities it can keep (`X25519`, and `mlkem768x25519` when it runs from
        /// vault-net); an agent that does not say keeps `X25519` ones only.
        public var identityTypes: [String] = []
    }

    /// What is unlocked and the time left (not an activity: it extends no timeout).
    public func status() throws -> Status {
        guard case .status(var status) = try request(.status) else { throw AgentResponse.unexpected }
        if status.socketPath.isEmpty { status.socketPath = socketPath }
        return status
    }

    /// Opens the vault at `path` in the agent. `allowInsecureKDFForTesting` is the test hook of
    /// ``SecureKeyValueStore/Options``.
    public func unlock(
        path: String, passphrase: SecureBytes, idleSeconds: Int, maxSeconds: Int,
        allowInsecureKDFForTesting: Bool = false, lockTimeoutSeconds: Double? = nil
    ) throws {
        try unlock(path: path, key: .passphrase(passphrase), idleSeconds: idleSeconds, maxSeconds: maxSeconds,
                   allowInsecureKDFForTesting: allowInsecureKDFForTesting, lockTimeoutSeconds: lockTimeoutSeconds)
    }

    /// Opens the version-2 vault at `path` in the agent with its data key, unwrapped here from one of its `x25519`
    /// (or `mlkem768x25519`) stanzas with an age identity (`vault unlock --identity`): the agent then holds it as after a passphrase.
    /// With `keeping`, the identities themselves are kept too (until `maxSeconds` or any lock), and every vault
    /// shared with them opens through the agent with no prompt.
    public func unlock(
        path: String, dataKey: SecureBytes, keeping identities: [any AgeStanzaIdentity] = [], idleSeconds: Int, maxSeconds: Int,
        allowInsecureKDFForTesting: Bool = false, lockTimeoutSeconds: Double? = nil
    ) throws {
        let kept = identities.isEmpty ? nil : SecureBytes(capacity: identities.reduce(0) { $0 + $1.encoded().count + 1 }) { out in
            for identity in identities {
                out.append(identity.encoded())
                out.append(UInt8(ascii: "\n"))
            }
        }
        try unlock(path: path, key: .dataKey(dataKey), kept: kept, idleSeconds: idleSeconds, maxSeconds: maxSeconds,
                   allowInsecureKDFForTesting: allowInsecureKDFForTesting, lockTimeoutSeconds: lockTimeoutSeconds)
    }

    private func unlock(
        path: String, key: DocumentKey, kept: SecureBytes? = nil, idleSeconds: Int, maxSeconds: Int,
        allowInsecureKDFForTesting: Bool, lockTimeoutSeconds: Double?
    ) throws {
        let wireKey: AgentRequest.Unlock.Key
        switch key {
        case .passphrase(let passphrase): wireKey = .passphrase(passphrase)
        case .dataKey(let dataKey), .unwrapped(let dataKey): wireKey = .dataKey(dataKey)
        }
        _ = try request(.unlock(path: path, AgentRequest.Unlock(
            key: wireKey, keptIdentities: kept, idleSeconds: UInt64(idleSeconds), maxSeconds: UInt64(maxSeconds),
            insecureKDFForTesting: allowInsecureKDFForTesting,
            lockTimeoutMilliseconds: lockTimeoutSeconds.map { UInt64($0 * 1000) })))
    }

    /// Forgets the key of the vault at `path`; whether it was unlocked.
    @discardableResult
    public func lock(path: String) throws -> Bool {
        guard case .existed(let existed) = try request(.lock(path: path)) else { throw AgentResponse.unexpected }
        return existed
    }

    /// Forgets every key; how many there were.
    @discardableResult
    public func lockAll() throws -> Int {
        guard case .count(let count) = try request(.lockAll) else { throw AgentResponse.unexpected }
        return count
    }

    /// The names of the vault at `path`, sorted, or `nil` when it is not unlocked there: for shell completion,
    /// which asks on every Tab. Not an activity (it extends no idle timeout: completing a name is not using the
    /// vault), and the answer is awaited 2 s at most (the shell waits on it).
    public func namesWithoutActivity(at path: String) throws -> [String]? {
        do {
            guard case .names(let names) = try request(.names(withoutActivity: true), on: path, timeoutSeconds: 2) else {
                throw AgentResponse.unexpected
            }
            return names
        } catch AgentError.locked {
            return nil
        }
    }

    /// Merges two files of a version-2 vault unlocked in the agent, whatever its path (git's merge driver): the
    /// merged file, sealed with that vault's key, and the report; `nil` when no unlocked vault has their vault id.
    public func mergeFiles(ours: [UInt8], theirs: [UInt8], labels: (String, String)) throws -> ([UInt8], MergeReport)? {
        let answer: AgentResponse
        do {
            answer = try request(.mergeFiles(ours: ours, theirs: theirs, labels: labels), timeoutSeconds: 120)
        } catch AgentError.locked {
            return nil
        }
        guard case .mergedFiles(let merged, let report) = answer else { throw AgentResponse.unexpected }
        return (merged, report)
    }

    /// What a file of a version-2 vault unlocked in the agent holds (git's textconv): lines of names, ids, times and
    /// field names, never a value; `nil` when no unlocked vault has its vault id.
    public func describeFile(_ bytes: [UInt8], label: String) throws -> [String]? {
        do {
            guard case .described(let lines) = try request(.describeFile(bytes, label: label), timeoutSeconds: 60) else {
                throw AgentResponse.unexpected
            }
            return lines
        } catch AgentError.locked {
            return nil
        }
    }

    /// The vault at `path` through the agent, not asked first whether it holds it: every answer about a vault says
    /// whether it is held, so the first request made on it throws ``AgentError/locked(path:)`` when it is not.
    /// One round trip fewer than ``vault(at:)`` for a verb that makes one request (`vault get`).
    ///
    /// `firstAnswerTimeoutSeconds` bounds the wait for the agent's answers as a probe's does (an agent that
    /// answers nothing, e.g. stopped, must not hold the command up longer than one would have).
    public func vaultWithoutProbe(at path: String, firstAnswerTimeoutSeconds: Int? = nil) -> AgentVault {
        AgentVault(path: path, client: self, timeoutSeconds: firstAnswerTimeoutSeconds)
    }

    /// The vault at `path` through the agent, or `nil` when it is not unlocked there.
    public func vault(at path: String) throws -> AgentVault? {
        do {
            _ = try request(.probe, on: path)
        } catch AgentError.locked {
            return nil
        }
        return AgentVault(path: path, client: self)
    }
}
