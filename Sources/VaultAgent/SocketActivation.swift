import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// Listening sockets a service manager handed this process (systemd's socket activation, sd_listen_fds(3)): the
/// descriptors from 3 on, `LISTEN_FDS` of them, when `LISTEN_PID` is this process; `LISTEN_FDNAMES` names them
/// (`FileDescriptorName=` in the unit; systemd's default is the socket unit's name), colon-separated.
///
/// What is handed in is checked before it is used: a listening Unix stream socket, bound to an absolute path.
/// Anything else is refused by name, never served. The variables are removed from the environment once read, as
/// `sd_listen_fds(1)` does, so that a child (a program `vault run` starts) does not take the descriptors for its own.
public struct SocketActivation: Sendable, Equatable {
    /// One socket handed in.
    public struct Socket: Sendable, Equatable {
        /// Its descriptor (close-on-exec set when adopted).
        public var descriptor: Int32
        /// Its name in `LISTEN_FDNAMES`, or `""` when none was given.
        public var name: String
        /// The path it is bound to.
        public var path: String
    }

    /// The sockets handed in, in descriptor order.
    public var sockets: [Socket]

    /// The first descriptor a service manager passes (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: Int32 = 3

    /// The sockets this process was handed, or `nil` when none was (no `LISTEN_PID`, or another process's).
    /// Reads and then removes `LISTEN_PID`, `LISTEN_FDS` and `LISTEN_FDNAMES`.
    ///
    /// - Throws: ``AgentError/cannotStart(socket:reason:)`` when the variables are malformed or a descriptor is
    ///   not a listening Unix stream socket bound to a path.
    public static func inherited() throws -> SocketActivation? {
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        let found = try parse(
            pid: Posix.environment("LISTEN_PID"), fds: Posix.environment("LISTEN_FDS"),
            names: Posix.environment("LISTEN_FDNAMES"), ownPID: Int(getpid()))
        guard let found else { return nil }
        var sockets: [Socket] = []
        for (descriptor, name) in found {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            sockets.append(Socket(descriptor: descriptor, name: name, path: try listeningPath(of: descriptor, name: name)))
        }
        return SocketActivation(sockets: sockets)
    }

    /// The descriptors and names the variables give, or `nil` when they are not for `ownPID` (not set, or set for
    /// another process: a parent's, inherited by mistake).
    package static func parse(pid: String?, fds: String?, names: String?, ownPID: Int) throws -> [(Int32, String)]? {
        guard let pid, !pid.isEmpty else { return nil }
        guard let listenPID = Int(pid), listenPID > 0 else { throw malformed("LISTEN_PID is not a process id") }
        guard listenPID == ownPID else { return nil }
        guard let fds, let count = Int(fds), count >= 0 else { throw malformed("LISTEN_FDS is not a count") }
        // More than a few hundred would pass the descriptor limit of a login session; one is what the units pass.
        guard count <= 256 else { throw malformed("LISTEN_FDS (\(count)) is more than 256") }
        let given = names.map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) } ?? []
        guard names == nil || given.count == count else {
            throw malformed("LISTEN_FDNAMES names \(given.count) socket(s), LISTEN_FDS says \(count)")
        }
        return (0..<count).map { (firstDescriptor + Int32($0), names == nil ? "" : given[$0]) }
    }

    /// The name the ssh-agent's socket unit gives its socket (`FileDescriptorName=` of vault-ssh-agent.socket): the
    /// agent's ssh-agent socket serves it instead of binding one.
    public static let sshAgentName = "ssh"

    /// The socket named `name`, else, when no socket carries that name, the only one handed in (unless that one is
    /// named ``sshAgentName``: the ssh-agent's, never the vault's).
    public func socket(named name: String) -> Socket? {
        sockets.first { $0.name == name } ?? (sockets.count == 1 && sockets[0].name != Self.sshAgentName ? sockets[0] : nil)
    }

    /// The ssh-agent's socket, when one named ``sshAgentName`` was handed in.
    public var sshAgentSocket: Socket? { sockets.first { $0.name == Self.sshAgentName } }

    /// The path `descriptor` is bound to, after checking that it is a Unix stream socket that listens.
    static func listeningPath(of descriptor: Int32, name: String) throws -> String {
        let label = name.isEmpty ? "descriptor \(descriptor)" : "descriptor \(descriptor) ('\(name)')"
        var type: Int32 = 0, listening: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else {
            throw malformed("\(label), handed in by the service manager, is not a socket")
        }
        length = socklen_t(MemoryLayout<Int32>.size)
        guard type == Int32(SOCK_STREAM.rawValue), getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0,
              listening == 1
        else { throw malformed("\(label), handed in by the service manager, is not a listening stream socket") }
        var address = sockaddr_un()
        length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0, address.sun_family == sa_family_t(AF_UNIX) else {
            throw malformed("\(label), handed in by the service manager, is not a Unix socket")
        }
        let path = withUnsafeBytes(of: address.sun_path) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        // An abstract socket (a leading NUL) has no path and no directory whose mode keeps other users out.
        guard path.hasPrefix("/") else {
            throw malformed("\(label), handed in by the service manager, is not bound to a path (ListenStream= must be an absolute path)")
        }
        return path
    }

    private static func malformed(_ reason: String) -> AgentError {
        AgentError.cannotStart(socket: "(socket activation)", reason: reason)
    }
}
