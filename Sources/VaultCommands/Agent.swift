import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import VaultAge
import VaultAgent
import VaultCore
import VaultTerminal

package struct Unlock: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "unlock",
        abstract: "Unlock the vault in the agent (started if none runs): no verb asks for the passphrase until it locks.",
        discussion: """
            The key stays in the agent (`vault agent`), which answers requests on a Unix socket that only you can use ($VAULT_AGENT_SOCK, an absolute path; else $XDG_RUNTIME_DIR/vault/agent.sock; else /run/user/UID/vault/agent.sock when that directory is yours; else ~/.local/state/vault/agent/agent.sock). The vault locks after --idle without an operation on its entries, and --max after it was unlocked; a verb that later unlocks this vault on demand (asking on a terminal) uses the same limits (kept in the state directory, by vault id). Durations are seconds (90) or numbers with units s, m, h, d, alone or together (1h30m), up to 366 days.
            """)

    @Option(name: .customLong("idle"), help: ArgumentHelp("Lock after this long without use (90s, 15m, 8h; default 15m).", valueName: "duration"))
    var idleOption: Duration?

    @Option(name: .customLong("max"), help: ArgumentHelp("Lock this long after unlocking, whatever the use (default 8h).", valueName: "duration"))
    var maxOption: Duration?

    @Flag(name: .shortAndLong, help: "Ask for the passphrase again even when the vault is already unlocked.")
    var force = false

    @OptionGroup var options: VaultOptions

    var idle: Duration { idleOption ?? Duration(argument: "15m")! }
    var max: Duration { maxOption ?? Duration(argument: "8h")! }

    package func run() throws {
        try reportingErrors(json: options.json) {
            let path = options.resolvedPath
            guard options.makeStore().exists else { throw VaultError.vaultNotFound(path: path) }
            // Already unlocked, and nothing new asked for: say so, ask nothing.
            if !force, idleOption == nil, maxOption == nil, let client = try? AgentClient.connect(),
               let held = try? client.status().vaults.first(where: { $0.path == RollbackGuard.canonicalPath(path) }) {
                if options.json {
                    try writeJSON([
                        "path": path, "unlocked": true, "already_unlocked": true,
                        "idle_seconds_left": held.idleSecondsLeft, "max_seconds_left": held.maxSecondsLeft,
                    ])
                } else {
                    try writeToStdout(
                        "vault '\(path)' is already unlocked (locks in \(Self.span(held.idleSecondsLeft)) without use, \(Self.span(held.maxSecondsLeft)) at most); --force asks again\n")
                }
                return
            }
            if idle.seconds >= max.seconds, !options.json {
                writeToStderr("vault: warning: --idle \(idle) is not shorter than --max \(max): the vault locks after \(max) whatever the use\n")
            }
            let socket = AgentSocket.defaultPath
            try AgentSocket.checkDirectory(of: socket, create: true)
            // An agent of an older protocol (this vault was upgraded while it ran) is replaced, as rbw does.
            if let old = try AgentClient.replaceOlderAgent(socketPath: socket), !options.json {
                writeToStderr("vault: stopped the running agent (pid \(old.pid)), which spoke protocol version \(old.version); starting one of version \(AgentClient.protocolVersion)\n")
            }
            let testing = options.storeOptions.kdfPolicy == .insecureForTesting
            // A file the agent would refuse (loose permissions, another owner, a link) is refused before any prompt.
            try options.makeStore().checkAccess()
            if let identityPath = options.identityPath {
                // The data key unwrapped here with the identity; the agent holds it as after a passphrase.
                let identities = try loadIdentities(identityPath, passphraseFrom: options)
                let header = try VaultOpener.header(path: path, options: options.storeOptions)
                let dataKey = try identityDataKey(of: header, identities: identities, label: path, options: options)
                // A post-quantum identity is kept by an agent that runs from vault-net (this program: only it reads
                // them); one that runs from vault cannot, and is replaced, as an older agent is.
                let postQuantum = identities.contains { $0.isPostQuantum }
                if postQuantum, let type = AgeKeys.postQuantum?.stanzaType,
                   let old = try AgentClient.replaceAgent(unableToKeep: type, socketPath: socket), !options.json {
                    writeToStderr("vault: stopped the running agent (pid \(old.pid)), which cannot keep post-quantum identities (\(old.locked) vault\(old.locked == 1 ? "" : "s") locked); starting one from vault-net\n")
                }
                let client = try AgentClient.connectStarting(command: AgentCommand.startCommand(postQuantum: postQuantum), socketPath: socket)
                try client.unlock(
                    path: path, dataKey: dataKey, keeping: identities, idleSeconds: idle.seconds, maxSeconds: max.seconds,
                    allowInsecureKDFForTesting: testing, lockTimeoutSeconds: options.storeOptions.lockTimeoutSeconds)
            } else {
                let passphrase = try options.passphrase()
                let client = try AgentClient.connectStarting(command: AgentCommand.startCommand, socketPath: socket)
                try client.unlock(
                    path: path, passphrase: passphrase, idleSeconds: idle.seconds, maxSeconds: max.seconds,
                    allowInsecureKDFForTesting: testing, lockTimeoutSeconds: options.storeOptions.lockTimeoutSeconds)
            }
            // What the user chose is what a verb that unlocks this vault on demand uses too.
            UnlockLimits(idleSeconds: idle.seconds, maxSeconds: max.seconds).remember(forVaultAt: path)
            if options.json {
                try writeJSON(["path": path, "unlocked": true, "idle_seconds": idle.seconds, "max_seconds": max.seconds])
            } else {
                try writeToStdout("unlocked vault '\(path)' (idle \(idle), max \(max))\n")
            }
        }
    }
}

extension Unlock {
    /// Seconds as a person reads them: `14m 59s`, `7h 59m`, `2d 3h`, `45s`.
    static func span(_ seconds: Int) -> String {
        let days = seconds / 86_400, hours = seconds % 86_400 / 3600, minutes = seconds % 3600 / 60, rest = seconds % 60
        if days > 0 { return hours > 0 ? "\(days)d \(hours)h" : "\(days)d" }
        if hours > 0 { return minutes > 0 ? "\(hours)h \(minutes)m" : "\(hours)h" }
        if minutes > 0 { return rest > 0 ? "\(minutes)m \(rest)s" : "\(minutes)m" }
        return "\(rest)s"
    }
}

package struct Lock: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "lock",
        abstract: "Lock the vault in the agent (its key is zeroed at once); --all locks every vault.")

    @Flag(help: "Lock every vault the agent holds.")
    var all = false

    @Option(name: .customLong("vault"), help: ArgumentHelp("The vault file.", valueName: "path"))
    var vaultPath: String?

    @Flag(help: "Machine-readable output (and errors as one JSON object on stderr).")
    var json = false

    package func run() throws {
        try reportingErrors(json: json) {
            var options = VaultOptions()
            options.vaultPath = vaultPath
            let path = options.resolvedPath
            let client = try AgentClient.connect()
            if all {
                let count = try client?.lockAll() ?? 0
                if json { try writeJSON(["locked": count]) }
                else { try writeToStdout("locked \(count) vault\(count == 1 ? "" : "s")\n") }
            } else {
                let wasUnlocked = try client?.lock(path: path) ?? false
                if json { try writeJSON(["path": path, "locked": true, "was_unlocked": wasUnlocked]) }
                else { try writeToStdout("locked vault '\(path)'\n") }
            }
        }
    }
}

package struct AgentCommand: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Run the agent in the foreground (for a service manager); 'vault agent status' shows what is unlocked.",
        subcommands: [Run.self, Status.self, Stop.self], defaultSubcommand: Run.self)

    /// The `vault` executable (the agent runs as `vault agent`, not `vault-net`, which links the network stack): next
    /// to this one, or, for a vault-net a package keeps in PREFIX/lib/vault, PREFIX/bin/vault.
    package static var executable: String {
        let directory = URL(fileURLWithPath: ownExecutable).deletingLastPathComponent()
        var candidates = [directory.appendingPathComponent("vault").path]
        if directory.lastPathComponent == "vault", directory.deletingLastPathComponent().lastPathComponent == "lib" {
            candidates.append(directory.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("bin/vault").path)
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? ownExecutable
    }

    /// This program's executable.
    package static var ownExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// How long an agent a client started holds on with nothing unlocked and no client: then it ends (docs/AGENT.md,
    /// "When the agent ends"), and the next unlock starts another.
    package static let backgroundEmptyExit = "60s"

    /// The name (`FileDescriptorName=`) of the agent's socket among those a service manager hands in.
    package static let activatedSocketName = "vault-agent"

    /// The command a client runs to start an agent in the background (``AgentClient/connectStarting(command:socketPath:)``).
    package static var startCommand: [String] { startCommand(postQuantum: false) }

    /// The command that starts an agent in the background: vault-net's `agent run` (``AgentProcess``), which also
    /// keeps post-quantum identities and serves the ssh-agent socket; `vault`'s own when no vault-net is installed
    /// (then `postQuantum` identities cannot be kept: this program, when it is vault-net, runs it).
    package static func startCommand(postQuantum: Bool) -> [String] {
        let program = AgentProcess.vaultNetInstalled ? VaultNetBinary.path : (postQuantum ? ownExecutable : executable)
        return [program, "agent", "run", "--exit-when-empty", backgroundEmptyExit]
    }

    package struct Run: ParsableCommand {
        package init() {}
        package static let configuration = CommandConfiguration(
            commandName: "run", abstract: "Run the agent in the foreground.",
            discussion: """
                Started by a service manager with a listening socket handed in (systemd's socket activation: LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES), it serves that socket (the one named '\(AgentCommand.activatedSocketName)', or the only one) instead of binding its own, and ends after \(AgentCommand.backgroundEmptyExit) holding nothing unless --exit-when-empty says otherwise: the next client starts it again.
                """)

        @Option(
            name: .customLong("exit-when-empty"),
            help: "End once nothing has been unlocked and no client heard from for this long (default: run until stopped; an agent a command starts in the background, or a service manager on a socket it hands in, uses \(AgentCommand.backgroundEmptyExit)).")
        var exitWhenEmpty: Duration?

        @Flag(
            name: .customLong("no-lock-on-sleep"),
            help: "Do not lock every vault when the machine is about to sleep or the session's screen locks (logind on the system bus; also VAULT_LOCK_ON_SLEEP=0).")
        var noLockOnSleep = false

        package func run() throws {
            let server: AgentServer
            do {
                var options = AgentServer.Options()
                options.rollbackProtection = .standard
                options.allowsInsecureKDFForTesting = Posix.environment("VAULT_TESTING_INSECURE_KDF") == "1"
                options.exitWhenEmptyAfterSeconds = exitWhenEmpty.map { Double($0.seconds) }
                options.locksOnSleepAndScreenLock = !noLockOnSleep && Posix.environment("VAULT_LOCK_ON_SLEEP") != "0"
                if let activation = try SocketActivation.inherited() {
                    guard let socket = activation.socket(named: AgentCommand.activatedSocketName) else {
                        throw AgentError.cannotStart(
                            socket: "(socket activation)",
                            reason: "\(activation.sockets.count) sockets were handed in and none is named '\(AgentCommand.activatedSocketName)' (FileDescriptorName=)")
                    }
                    options.adoptedSocket = socket
                    options.handedIn = activation
                    // Sockets for nobody here are left alone, as systemd hands them (a unit naming this service).
                    for other in activation.sockets where other != socket && other.name != SocketActivation.sshAgentName {
                        writeToStderr("vault agent: note: ignoring the socket handed in as '\(other.name)' (\(other.path)): only '\(AgentCommand.activatedSocketName)' and '\(SocketActivation.sshAgentName)' are served\n")
                    }
                    if exitWhenEmpty == nil { options.exitWhenEmptyAfterSeconds = Double(Duration(argument: AgentCommand.backgroundEmptyExit)!.seconds) }
                    if socket.path != AgentSocket.defaultPath {
                        writeToStderr("vault agent: note: the socket handed in, \(socket.path), is not where clients look (\(AgentSocket.defaultPath)): set VAULT_AGENT_SOCK for them\n")
                    }
                }
                options.present = { error in
                    let reportable = error as? any CLIReportable
                    return AgentFailure(
                        code: reportable?.code ?? "error", exitCode: reportable?.exitCode ?? Exit.failure,
                        message: reportable?.message ?? String(describing: error), hint: reportable?.hint)
                }
                server = try AgentServer(options: options, log: { line in writeToStderr("vault agent: \(line)\n") })
            } catch {
                throw ExitCode(report(error, json: false))
            }
            let signals = AgentSignals.stopOnTermination(server)
            defer { signals.forEach { $0.cancel() } }
            do {
                try server.run()
            } catch {
                throw ExitCode(report(error, json: false))
            }
        }
    }

    package struct Stop: ParsableCommand {
        package init() {}
        package static let configuration = CommandConfiguration(
            commandName: "stop",
            abstract: "Lock every vault and stop the agent (SIGTERM to the process that answers on the socket).")

        @Flag(help: "Machine-readable output.")
        var json = false

        package func run() throws {
            try reportingErrors(json: json) {
                let socket = AgentSocket.defaultPath
                guard let client = try AgentClient.connect(socketPath: socket) else {
                    if json { try writeJSON(["stopped": false, "socket": socket]) }
                    else { try writeToStdout("no agent answers on '\(socket)'\n") }
                    return
                }
                // The pid comes from the process that answers on our socket, as our user (the client checks its
                // uid): lock first, so the keys are zeroed even if the signal were lost.
                let pid = try client.status().pid
                let locked = try client.lockAll()
                guard pid > 1, kill(pid_t(pid), SIGTERM) == 0 else {
                    throw VaultError.io(operation: "cannot stop the agent at", path: socket, errno: errno)
                }
                // Wait (up to 2 s) until it no longer answers.
                let deadline = Posix.monotonicSeconds() + 2
                while Posix.monotonicSeconds() < deadline, kill(pid_t(pid), 0) == 0 { usleep(20_000) }
                if json { try writeJSON(["stopped": true, "pid": Int(pid), "locked": locked, "socket": socket]) }
                else { try writeToStdout("stopped the agent (pid \(pid)); \(locked) vault\(locked == 1 ? "" : "s") locked\n") }
            }
        }
    }

    package struct Status: ParsableCommand {
        package init() {}
        package static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show the unlocked vaults and their time left (does not count as use).")

        @Flag(help: "Machine-readable output.")
        var json = false

        package func run() throws {
            try reportingErrors(json: json) {
                let socket = AgentSocket.defaultPath
                guard let client = try AgentClient.connect(socketPath: socket) else { throw AgentError.noAgent(socket: socket) }
                let status = try client.status()
                // The ssh-agent socket beside it (an agent run from vault-net): its last signatures.
                let signatures = SSHSignatures.last(socketPath: AgentSocket.sshAgentPath(besides: socket))
                if json {
                    var object: [String: Any] = [
                        "pid": status.pid, "protocol": AgentClient.protocolVersion, "socket": status.socketPath,
                        "vaults": status.vaults.map {
                            ["path": $0.path, "idle_seconds_left": $0.idleSecondsLeft, "max_seconds_left": $0.maxSecondsLeft]
                        },
                    ]
                    if let signatures { object["ssh_signatures"] = signatures }
                    try writeJSON(object)
                    return
                } else if status.vaults.isEmpty {
                    try writeToStdout("no vault unlocked\n")
                } else {
                    try writeToStdout(status.vaults.map {
                        "\($0.path)  idle \($0.idleSecondsLeft)s left, max \($0.maxSecondsLeft)s left\n"
                    }.joined())
                }
                if let signatures, !signatures.isEmpty {
                    try writeToStdout("last ssh signatures:\n" + signatures.map { "  " + TerminalText.escaped($0) + "\n" }.joined())
                }
            }
        }
    }
}

/// SIGTERM, SIGINT and SIGHUP stop the agent cleanly: keys zeroed, socket removed. Dispatch sources, so no
/// Swift code runs in a signal handler; keep the returned sources for as long as the agent runs.
enum AgentSignals {
    static func stopOnTermination(_ server: AgentServer) -> [any DispatchSourceSignal] {
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
        return [SIGTERM, SIGINT, SIGHUP].map { signal in
            _ = Glibc.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler { server.stop() }
            source.resume()
            return source
        }
    }
}

extension AgentError: CLIReportable {
    package var exitCode: Int32 {
        if case .remote(let failure) = self { return failure.exitCode }
        if case .invalidSocketPath = self { return Exit.usage }
        return Exit.failure
    }

    package var code: String {
        switch self {
        case .noAgent: return "no_agent"
        case .versionMismatch: return "agent_version_mismatch"
        case .timedOut: return "agent_timeout"
        case .connection: return "agent_connection"
        case .protocolError: return "agent_protocol"
        case .badRequest: return "bad_request"
        case .locked: return "locked"
        case .cannotStart: return "agent_cannot_start"
        case .invalidSocketPath: return "invalid_socket_path"
        case .remote(let failure): return failure.code
        }
    }

    package var hint: String? {
        switch self {
        case .noAgent, .locked: return "run 'vault unlock'"
        case .versionMismatch(let version) where version < AgentClient.protocolVersion:
            return "'vault unlock' replaces the older agent (the vaults it holds are locked then)"
        case .versionMismatch:
            return "the agent is newer than this vault command: use the vault command that started it, or stop it ('vault agent status' shows its pid)"
        case .remote(let failure): return failure.hint
        case .invalidSocketPath: return "give VAULT_AGENT_SOCK an absolute path, at most 107 bytes long"
        default: return nil
        }
    }
}
