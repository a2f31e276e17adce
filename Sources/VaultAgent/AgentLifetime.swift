import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// Whether the agent's socket path still leads to the socket this agent bound, compared by device and inode: a
/// socket removed (its directory deleted at logout), or replaced (another agent started in its place, any other
/// file put there), can never bring a client here again. Checked at most once per `interval` of the clock.
struct SocketWatch {
    let path: String
    private let device: UInt64
    private let inode: UInt64
    private let clock: any AgentClock
    private let interval: Double
    private var lastCheck: Double
    private var gone = false

    /// Watches what is at `path` now (the socket just bound); `nil` when nothing is there.
    init?(path: String, clock: any AgentClock, interval: Double = 1) {
        guard let identity = Self.identity(of: path) else { return nil }
        self.path = path
        (device, inode) = identity
        self.clock = clock
        self.interval = interval
        lastCheck = clock.now
    }

    /// Device and inode of what `path` names itself (a link is not followed); `nil` when nothing is there.
    ///
    /// The corresponding C function is `lstat`.
    static func identity(of path: String) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// Whether the path leads to our socket right now.
    func leadsHere() -> Bool {
        guard let now = Self.identity(of: path) else { return false }
        return now.device == device && now.inode == inode
    }

    /// Whether the path still led here at the last check, checking again once `interval` has passed since the
    /// previous one. Once false, false for good.
    mutating func stillLeadsHere() -> Bool {
        guard !gone else { return false }
        let now = clock.now
        guard now - lastCheck >= interval else { return true }
        lastCheck = now
        gone = !leadsHere()
        return !gone
    }
}

/// When an agent that holds nothing ends: once it holds nothing (no vault unlocked, no identity kept), has no
/// client connected, and `seconds` have passed since its last activity (a client let in, answered or gone, a vault
/// unlocked, locked or expired). An agent a client started in the background ends so; one run in the foreground
/// (for a service manager) stays unless told otherwise.
struct EmptyExit {
    let seconds: Double

    /// Whether to end now.
    func shouldExit(now: Double, holdsNothing: Bool, connections: Int, lastActivity: Double) -> Bool {
        holdsNothing && connections == 0 && now - lastActivity >= seconds
    }
}
