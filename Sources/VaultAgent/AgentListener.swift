import CVaultSystem
import Synchronization
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// One protocol an agent serves on a socket of its own: how a request is read from a connection (its framing),
/// what answers it, and how the answer is sent; all over one ``KeyRing``. The vault protocol is
/// ``AgentService`` (``AgentWire``'s frames); an ssh-agent or a Secret Service bridge would be others, each on
/// its own socket, reading the same key ring (issue 34 §3).
package protocol AgentSocketProtocol: Sendable {
    associatedtype Request
    associatedtype Reply
    /// What a protocol remembers of one connection (the ssh-agent: its session binds); made when it is let in.
    associatedtype Connection: Sendable
    /// The keys its answers read; the listener sweeps it and, when ``locksRingAtEnd``, locks it all when it ends.
    var ring: KeyRing { get }
    /// Whether the listener's end locks every vault (the vault's own socket: yes; a companion socket whose path
    /// was removed only stops serving).
    var locksRingAtEnd: Bool { get }
    /// A new connection's state.
    func connection(_ fd: Int32) -> Connection
    /// The next request on `fd`; `nil` at the end of the stream. Bytes held for a request still arriving are
    /// counted against `budget` (every connection's).
    func receive(on fd: Int32, budget: AgentWire.FrameBudget) throws -> Request?
    /// The answer to `request` on `connection`, and whether the connection ends after it.
    func answer(_ request: Request, on connection: Connection) -> (reply: Reply, endsConnection: Bool)
    func send(_ reply: Reply, on fd: Int32) throws
}

extension AgentSocketProtocol {
    package var locksRingAtEnd: Bool { true }
}

extension AgentSocketProtocol where Connection == Void {
    package func connection(_ fd: Int32) {}
}

extension AgentService: AgentSocketProtocol {
    func receive(on fd: Int32, budget: AgentWire.FrameBudget) throws -> AgentWire.Message? {
        try AgentWire.receive(on: fd, budget: budget)
    }

    func answer(_ request: AgentWire.Message, on _: Void) -> (reply: AgentWire.Writer, endsConnection: Bool) {
        answer(request)
    }

    func send(_ reply: AgentWire.Writer, on fd: Int32) throws {
        try AgentWire.send(reply, on: fd)
    }
}

/// A socket served beside the vault's, over the same key ring (the ssh-agent's): run on a thread of its own by
/// ``AgentServer``, stopped when the agent ends.
package protocol AgentCompanionSocket: AnyObject, Sendable {
    var socketPath: String { get }
    func run() throws
    func stop()
}

extension AgentListener: AgentCompanionSocket {}

/// An agent's socket: binds it (taking over only a stale socket of this user's) or serves the one a service
/// manager handed in, lets in clients of this user only (`SO_PEERCRED`), reads their requests on a thread per
/// connection, and sends what `Handler` answers. Generic over the protocol (framing and handler): one listener per
/// socket, one socket per protocol. Ends when asked (``stop()``), when its socket path no longer leads to it
/// (``SocketWatch``), or when it has held nothing for a while (``EmptyExit``, when asked for).
package final class AgentListener<Handler: AgentSocketProtocol>: Sendable {
    package let socketPath: String
    private let service: Handler
    private let clock: any AgentClock
    private let log: @Sendable (String) -> Void
    private let exitWhenEmptyAfter: Double?
    /// A listening socket a service manager handed in (``SocketActivation``): served as it is, never bound,
    /// chmod-ed or removed here (the socket unit owns it).
    private let adopted: Int32?
    private let stopPipe: (read: Int32, write: Int32)
    /// The connections being served, by descriptor, with the time of their last request.
    private let connections = Mutex<[Int32: Double]>([:])
    /// When a client was last let in, answered or gone.
    private let lastClientActivity: Mutex<Double>
    /// Bytes held for frames still arriving, over all connections.
    private let frameBudget = AgentWire.FrameBudget(byteCount: AgentServer.unreadFrameByteLimit)
    /// The threads that wait for a connection to serve (``ConnectionWorkers``).
    private let workers = ConnectionWorkers()

    /// - Parameter exitWhenEmptyAfter: seconds after which an agent that holds nothing and hears from no client
    ///   ends (``EmptyExit``); `nil`: never.
    /// - Parameter adopted: a listening socket bound at `socketPath` that a service manager handed in.
    package init(
        socketPath: String, adopted: Int32? = nil, service: Handler, exitWhenEmptyAfter: Double?,
        log: @escaping @Sendable (String) -> Void
    ) throws {
        self.socketPath = socketPath
        self.adopted = adopted
        self.service = service
        self.clock = service.ring.clock
        self.log = log
        self.exitWhenEmptyAfter = exitWhenEmptyAfter
        lastClientActivity = Mutex(service.ring.clock.now)
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0, fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0 else {
            throw VaultError.io(operation: "cannot create a pipe", path: "", errno: errno)
        }
        stopPipe = (fds[0], fds[1])
    }

    deinit {
        close(stopPipe.read)
        close(stopPipe.write)
        if let adopted { close(adopted) }
    }

    /// How many connections are being served.
    var connectionCount: Int { connections.withLock { $0.count } }

    /// Asks ``run()`` to return (one `write` to a pipe: safe from any thread).
    package func stop() {
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
    }

    /// Binds the socket and serves until asked to stop, until the socket path no longer leads here, or until it
    /// has held nothing for ``exitWhenEmptyAfter``; then locks every vault and removes the socket if it is still ours.
    package func run() throws {
        // A handed-in socket's directory is checked as a bound one's: another user able to write there could have
        // put a socket of their own in its place by the time a client connects.
        try AgentSocket.checkDirectory(of: socketPath, create: adopted == nil)
        // One descriptor per client: the hard limit, not the soft 1,024 a login session starts with.
        let descriptorLimit = vault_raise_open_files_limit()
        let listener = try adopted ?? bind()
        defer { if adopted == nil { close(listener) } }
        // The socket this agent made (or was handed): the one it must still be reachable by, and, when it made it,
        // the only one it will ever remove.
        guard var watch = SocketWatch(path: socketPath, clock: clock) else {
            throw VaultError.io(operation: adopted == nil ? "cannot bind" : "cannot find the socket handed in at", path: socketPath, errno: ENOENT)
        }
        defer { if adopted == nil, watch.leadsHere() { unlink(socketPath) } }
        if adopted == nil {
            guard chmod(socketPath, 0o600) == 0, listen(listener, 64) == 0 else {
                throw VaultError.io(operation: "cannot listen on", path: socketPath, errno: errno)
            }
            log("listening on \(socketPath) (pid \(getpid()), \(descriptorLimit) descriptors)")
        } else {
            log("serving the socket the service manager handed in, \(socketPath) (pid \(getpid()), \(descriptorLimit) descriptors)")
        }
        let emptyExit = exitWhenEmptyAfter.map(EmptyExit.init(seconds:))
        var polled = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&polled, 2, 250)
            service.ring.sweep()
            if !watch.stillLeadsHere() {
                log("the socket \(socketPath) no longer leads here; stopping")
                break
            }
            if ready <= 0 {
                // Only when no client is waiting to be let in: one that connected is served.
                if let emptyExit, emptyExit.shouldExit(
                    now: clock.now, holdsNothing: service.ring.holdsNothing, connections: connectionCount,
                    lastActivity: Swift.max(lastClientActivity.withLock { $0 }, service.ring.lastChange)) {
                    log("held nothing for \(Int(emptyExit.seconds)) s; stopping")
                    break
                }
                continue
            }
            if polled[1].revents != 0 { break }
            if polled[0].revents & Int16(POLLIN) != 0 {
                let connection = accept(listener, nil, nil)
                if connection >= 0 {
                    _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                    admit(connection)
                } else if errno == EMFILE || errno == ENFILE {
                    // Out of descriptors: make room by closing the longest-idle client, and wait a little
                    // rather than spin on a listener that stays readable.
                    dropLongestIdle()
                    usleep(50_000)
                }
            }
        }
        workers.close()
        // A companion's end says nothing: the agent's own last line stays its last.
        if service.locksRingAtEnd {
            let count = service.ring.lockAll()
            log("stopping; forgot \(count) key(s)")
        }
    }

    /// A listening socket bound at `socketPath`. An agent that answers there is never displaced, nor is anything
    /// at that path but a stale socket of this user's.
    private func bind() throws -> Int32 {
        let listening: Int32?
        do {
            listening = try AgentSocket.connect(to: socketPath, timeoutSeconds: 1)
        } catch {
            // Something listens there but did not let us in within the second (an agent that is stopped, its
            // backlog full) or is not ours: its socket is never taken over (two agents would hold keys, and the
            // first one's exit would remove the second one's socket).
            throw AgentError.cannotStart(socket: socketPath, reason: "another agent listens there but does not answer (\(error))")
        }
        if let listening {
            close(listening)
            throw AgentError.cannotStart(socket: socketPath, reason: "another agent is running")
        }
        // A stale socket of an agent that was killed is removed; anything else at that path (a typo in
        // VAULT_AGENT_SOCK naming a key file) is never touched.
        try AgentSocket.checkReplaceable(socketPath)
        unlink(socketPath)
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw VaultError.io(operation: "cannot create socket", path: socketPath, errno: errno) }
        var address = try AgentSocket.socketAddress(socketPath)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let code = errno
            close(listener)
            throw VaultError.io(operation: "cannot bind", path: socketPath, errno: code)
        }
        return listener
    }

    // MARK: Connections

    /// Serves `fd` on a thread of its own (one that served an earlier connection and waits for the next, else a
    /// new one); past ``AgentServer/connectionLimit``, the client idle longest is let go first.
    private func admit(_ fd: Int32) {
        let now = clock.now
        noteClientActivity()
        let count = connections.withLock { connections in
            connections[fd] = now
            return connections.count
        }
        if count > AgentServer.connectionLimit { dropLongestIdle(sparing: fd) }
        if workers.handOver(fd) { return }
        // The thread holds the listener only while it serves: one waiting for the next connection lets it go.
        startDetachedThread { [weak self, workers] in
            var next: Int32? = fd
            while let fd = next {
                if let listener = self { listener.serveConnection(fd) } else { close(fd) }
                next = workers.next(waitingAtMost: ConnectionWorkers.idleSeconds)
            }
        }
    }

    /// Serves one client until it goes, then closes its descriptor.
    private func serveConnection(_ fd: Int32) {
        defer {
            noteClientActivity()
            connections.withLock { _ = $0.removeValue(forKey: fd) }
            close(fd)
        }
        var uid: UInt32 = 0
        guard vault_peer_uid(fd, &uid) == 0, uid == geteuid() else {
            log("refused a connection from uid \(uid)")
            return
        }
        AgentSocket.setTimeout(fd, seconds: 60)
        serve(fd, connection: service.connection(fd))
    }

    private func noteClientActivity() {
        let now = clock.now
        lastClientActivity.withLock { $0 = Swift.max($0, now) }
    }

    /// Shuts down the connection idle longest (its thread then sees the end of the stream and closes it).
    private func dropLongestIdle(sparing spared: Int32 = -1) {
        let idlest = connections.withLock { connections in
            connections.filter { $0.key != spared }.min { $0.value < $1.value }?.key
        }
        if let idlest {
            shutdown(idlest, Int32(SHUT_RDWR))
            log("closed the connection idle longest (too many clients)")
        }
    }

    private func serve(_ fd: Int32, connection: Handler.Connection) {
        while true {
            let request: Handler.Request
            do {
                guard let message = try service.receive(on: fd, budget: frameBudget) else { return }
                request = message
            } catch {
                return
            }
            let now = clock.now
            connections.withLock { $0[fd] = now }
            let (reply, ends) = service.answer(request, on: connection)
            noteClientActivity()
            do { try service.send(reply, on: fd) } catch { return }
            if ends { return }
        }
    }
}

/// Threads that served a connection and wait a while for the next one, so that a client is served without a
/// thread being created and ended for it (a third of the agent's time per `get` through it: Benchmarks/README.md,
/// "The last figure"). A descriptor is handed over only when a thread is waiting for it; once closed (the
/// listener's end), none is, and the waiting threads end.
final class ConnectionWorkers: @unchecked Sendable {
    // @unchecked: every stored property is read and written with `lock` held (a pthread mutex, for the condition).
    /// How long a thread waits for another connection before it ends.
    static let idleSeconds = 30
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let arrived = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var waiting = 0
    private var handedOver: [Int32] = []
    private var closed = false

    init() {
        pthread_mutex_init(lock, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(arrived, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(arrived)
        pthread_mutex_destroy(lock)
        arrived.deallocate()
        lock.deallocate()
    }

    private func locked<R>(_ body: () -> R) -> R {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body()
    }

    /// Gives `fd` to a waiting thread; false when none waits for it (the caller starts one).
    func handOver(_ fd: Int32) -> Bool {
        locked {
            guard !closed, waiting > handedOver.count else { return false }
            handedOver.append(fd)
            pthread_cond_signal(arrived)
            return true
        }
    }

    /// The next descriptor handed over, or `nil` after `seconds` without one, or once closed.
    func next(waitingAtMost seconds: Int) -> Int32? {
        locked {
            var deadline = timespec()
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            deadline.tv_sec += seconds
            waiting += 1
            defer { waiting -= 1 }
            while handedOver.isEmpty {
                if closed || pthread_cond_timedwait(arrived, lock, &deadline) == ETIMEDOUT, handedOver.isEmpty {
                    return nil
                }
            }
            return handedOver.removeFirst()
        }
    }

    /// No more hand-overs; the waiting threads end.
    func close() {
        locked {
            closed = true
            pthread_cond_broadcast(arrived)
        }
    }
}
