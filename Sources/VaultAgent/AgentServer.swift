import Synchronization
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// The agent: keeps the keys of unlocked vaults in this process and answers requests for their entries on a
/// Unix socket, so that no command asks for a passphrase until the vault locks again (docs/AGENT.md).
///
/// Three parts: ``AgentListener`` (the socket, peer checks, frames, threads, when to end), ``AgentService`` (one
/// request in, one answer out) and ``KeyRing`` (what is unlocked, and its timeouts on an ``AgentClock``).
///
/// - Keys live only here, in the open stores (guarded memory); they never cross the socket. The passphrase is
///   dropped once the data key is unwrapped.
/// - Only our own user may connect (SO_PEERCRED); the socket's directory is ours and writable by no one else.
/// - A vault locks after `idle` seconds without an operation on its secrets, and `max` seconds after it was
///   unlocked, on `CLOCK_BOOTTIME` (which keeps counting through suspend); its key is zeroed then.
/// - Writes go through the store, with the same lock, re-read and atomic replace as any other writer; reads
///   re-read the file first, so what others wrote around the agent is seen.
/// - It ends, forgetting every key, on ``stop()``, when its socket path no longer leads to it, and (with
///   ``Options/exitWhenEmptyAfterSeconds``) once it has held nothing and heard from no client for that long.
public final class AgentServer: Sendable {
    /// How an error answer presents a failure to a client that does not know its case (the wire's `code`,
    /// `exit_code`, `message` and `hint`). The library's own errors travel as themselves besides
    /// (``VaultError``'s case and arguments), and a client of this version rebuilds those.
    public typealias Present = @Sendable (any Error) -> AgentFailure

    /// What an agent does besides serving (each off unless set).
    public struct Options: Sendable {
        /// Where the vaults it opens keep their rollback records (the `vault` command line: the standard place).
        public var rollbackProtection: RollbackProtection?
        /// Whether an unlock may ask for the test KDF (``SecureKeyValueStore/Options/insecureForTesting``). Never
        /// set it outside tests: a request's flag alone never lowers the KDF policy.
        public var allowsInsecureKDFForTesting = false
        /// End after this many seconds holding nothing (no vault unlocked, no identity kept) with no client
        /// connected or heard from; `nil`: run until stopped.
        public var exitWhenEmptyAfterSeconds: Double?
        /// How error answers present failures; by default, code `error`, exit code 1 and the error's description.
        public var present: Present = { AgentFailure(describing: $0) }
        /// A listening socket a service manager handed in (``SocketActivation``), served in place of binding one:
        /// ``AgentServer/socketPath`` is then the path it is bound to.
        public var adoptedSocket: SocketActivation.Socket?
        /// Every socket the service manager handed in (the vault's and the companions': the ssh-agent's named
        /// ``SocketActivation/sshAgentName``); a companion serves the one named for it instead of binding its own.
        public var handedIn: SocketActivation?
        /// Lock every vault when logind says the machine is about to sleep or a session's screen is locked (the
        /// system bus: ``SleepLockWatch``); a machine without one is not watched.
        public var locksOnSleepAndScreenLock = false

        public init() {}
    }

    /// What makes a socket served beside the vault's over its key ring (the ssh-agent's): given the ring, the
    /// vault socket's path, the sockets a service manager handed in (``Options/handedIn``) and the log.
    package typealias Companion = @Sendable (
        _ ring: KeyRing, _ agentSocket: String, _ handedIn: SocketActivation?, _ log: @escaping @Sendable (String) -> Void
    ) throws -> any AgentCompanionSocket

    private static let companions = Mutex<[Companion]>([])

    /// Adds a companion every agent this process runs from now on serves (vault-net installs the ssh-agent's at
    /// start: `vault` does not link it).
    package static func install(companion: @escaping Companion) {
        companions.withLock { $0.append(companion) }
    }

    public let socketPath: String
    private let listener: AgentListener<AgentService>
    private let ring: KeyRing
    private let log: @Sendable (String) -> Void
    private let locksOnSleepAndScreenLock: Bool
    private let handedIn: SocketActivation?

    /// The most connections served at once; past it, the one idle longest is closed.
    public static let connectionLimit = 512
    /// The most bytes the agent holds for frames not yet complete, over all connections.
    public static let unreadFrameByteLimit = 320 << 20
    /// The longest idle and hard timeouts an unlock may ask for: a year. (The CLI checks its own options; this
    /// is the agent's own check of what reaches it.)
    public static let longestTimeoutSeconds = AgentService.longestTimeoutSeconds
    /// The longest file-lock wait an unlock may ask for, as `VAULT_LOCK_TIMEOUT`: an hour.
    public static let longestLockTimeoutMilliseconds = AgentService.longestLockTimeoutMilliseconds

    /// - Parameters:
    ///   - clock: the timeouts' clock (``BootClock``).
    ///   - log: one line per event (unlock, lock, expiry, refused peer, the end); never a secret.
    public init(
        socketPath: String = AgentSocket.defaultPath, options: Options = Options(), clock: any AgentClock = BootClock(),
        log: @escaping @Sendable (String) -> Void
    ) throws {
        let socketPath = options.adoptedSocket?.path ?? socketPath
        self.socketPath = socketPath
        var configuration = AgentService.Configuration(socketPath: socketPath)
        configuration.allowsInsecureKDFForTesting = options.allowsInsecureKDFForTesting
        configuration.rollbackProtection = options.rollbackProtection
        configuration.present = options.present
        let ring = KeyRing(clock: clock, log: log)
        self.ring = ring
        self.log = log
        locksOnSleepAndScreenLock = options.locksOnSleepAndScreenLock
        handedIn = options.handedIn
        let service = AgentService(ring: ring, configuration: configuration, log: log)
        listener = try AgentListener(
            socketPath: socketPath, adopted: options.adoptedSocket?.descriptor, service: service,
            exitWhenEmptyAfter: options.exitWhenEmptyAfterSeconds, log: log)
    }

    /// Asks ``run()`` to return (one `write` to a pipe: safe from any thread, also before ``run()``).
    public func stop() {
        listener.stop()
    }

    /// Listens and serves until ``stop()``, until its socket path no longer leads here, or until it has held
    /// nothing for ``Options/exitWhenEmptyAfterSeconds``; then forgets every key and removes the socket if it is
    /// still its own.
    ///
    /// - Throws: ``VaultError/unsafePermissions(path:reason:hint:)`` for an unsafe socket directory;
    ///   ``AgentError/cannotStart(socket:reason:)`` when another agent already listens there.
    public func run() throws {
        // Nothing of the caller's working directory is held (a USB stick the unlock ran on must unmount).
        _ = chdir("/")
        // Each request is answered in guarded regions of a few sizes: keep some, zeroed, rather than map, lock,
        // unlock and unmap them per request (Benchmarks/README.md, "The last figure").
        SecureBytes.keepSpareRegions(16)
        if locksOnSleepAndScreenLock {
            SleepLockWatch.start(log: log) { [ring, log] reason in
                let count = ring.lockAll()
                log("\(reason): locked every vault (\(count) key(s) forgotten)")
            }
        }
        let running = startCompanions()
        defer { stopCompanions(running) }
        try listener.run()
    }

    /// The installed companions, each on a thread of its own; one that cannot start is logged and left out (the
    /// vault's socket is served all the same).
    private func startCompanions() -> [(socket: any AgentCompanionSocket, done: CompanionDone)] {
        let factories = Self.companions.withLock { $0 }
        return factories.compactMap { make in
            do {
                let companion = try make(ring, socketPath, handedIn, log)
                let entry = (socket: companion, done: CompanionDone())
                startDetachedThread { [log] in
                    do { try companion.run() } catch { log("cannot serve \(companion.socketPath): \(error)") }
                    entry.done.flag.withLock { $0 = true }
                }
                return entry
            } catch {
                log("cannot start a companion socket: \(error)")
                return nil
            }
        }
    }

    /// Stops the companions and waits (2 s at most) until they have removed their sockets.
    private func stopCompanions(_ running: [(socket: any AgentCompanionSocket, done: CompanionDone)]) {
        for entry in running { entry.socket.stop() }
        var waited = 0
        while waited < 200, !running.allSatisfy({ $0.done.flag.withLock { $0 } }) {
            usleep(10_000)
            waited += 1
        }
    }
}

/// Whether a companion's thread has ended.
final class CompanionDone: Sendable {
    let flag = Mutex(false)
}

/// A failure as an error answer presents it to a client that does not know its case: docs/AGENT.md's `code`,
/// `exit_code`, `message` and `hint` fields.
public struct AgentFailure: Sendable, Equatable {
    /// A stable snake_case code.
    public var code: String
    /// The exit code a command line reporting it would end with.
    public var exitCode: Int32
    /// One line that says what failed.
    public var message: String
    /// What the user can do, when there is something.
    public var hint: String?

    public init(code: String, exitCode: Int32, message: String, hint: String? = nil) {
        self.code = code
        self.exitCode = exitCode
        self.message = message
        self.hint = hint
    }

    /// The library's own presentation: code `error`, exit code 1, the error's description, no hint.
    public init(describing error: any Error) {
        self.init(code: "error", exitCode: 1, message: String(describing: error))
    }
}
