import CVaultSystem
import FoundationEssentials
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// Where the agent listens, and the checks both sides make before trusting that place.
public enum AgentSocket {
    /// `$VAULT_AGENT_SOCK`, else `$XDG_RUNTIME_DIR/vault/agent.sock`, else `/run/user/$UID/vault/agent.sock` when
    /// that directory is the user's, else `$XDG_STATE_HOME/vault/agent/agent.sock` (`~/.local/state/vault/agent/`):
    /// never a directory under /tmp, which another local user could make first.
    public static var defaultPath: String { defaultPath(environment: Posix.environment) }

    /// The ssh-agent socket an agent at ``defaultPath`` serves beside its own (docs/SSH-AGENT.md).
    public static var sshAgentPath: String { sshAgentPath(besides: defaultPath) }

    /// The ssh-agent socket of the agent at `socket`: in the same directory, its file name prefixed with `ssh-`
    /// (`…/vault/agent.sock` → `…/vault/ssh-agent.sock`), so that two agents never share one.
    public static func sshAgentPath(besides socket: String) -> String {
        guard let slash = socket.lastIndex(of: "/") else { return "ssh-" + socket }
        return String(socket[...slash]) + "ssh-" + String(socket[socket.index(after: slash)...])
    }

    /// ``defaultPath`` in `environment` (a lookup of one variable: the process's, or a test's), with
    /// `userRuntimeDirectory` in place of `/run/user/$UID`: used when it is a real directory of the user's with no
    /// permission for group or others.
    package static func defaultPath(
        environment: (String) -> String?, userRuntimeDirectory: String = "/run/user/\(geteuid())"
    ) -> String {
        if let path = environment("VAULT_AGENT_SOCK"), !path.isEmpty { return path }
        if let runtime = environment("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") { return runtime + "/vault/agent.sock" }
        var info = stat()
        if lstat(userRuntimeDirectory, &info) == 0, Posix.distrust(ofDirectory: info, allowRoot: false) == nil,
            info.st_mode & 0o077 == 0
        {
            return userRuntimeDirectory + "/vault/agent.sock"
        }
        return RollbackProtection.defaultStateDirectory(environment: environment) + "/agent/agent.sock"
    }

    /// Checks the socket's directory: a real directory (not a symlink), ours, writable by nobody else. With
    /// `create`, makes it (0700) when it is missing. Anyone who could write there could put their own socket
    /// in place of the agent's and collect passphrases.
    ///
    /// - Throws: ``VaultError/unsafePermissions(path:reason:hint:)``, or ``VaultError/io(operation:path:errno:)``.
    public static func checkDirectory(of socket: String, create: Bool) throws {
        // A relative path would name another socket in every working directory.
        guard socket.hasPrefix("/") else { throw AgentError.invalidSocketPath(socket, reason: "it is not an absolute path") }
        guard socket.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else {
            throw AgentError.invalidSocketPath(socket, reason: "it is longer than a socket address holds (107 bytes)")
        }
        let directory = parentDirectory(of: socket)
        var info = stat()
        if lstat(directory, &info) != 0 {
            guard errno == ENOENT, create else {
                throw VaultError.io(operation: "cannot access the agent's directory", path: directory, errno: errno)
            }
            // The state directory's fallback may need its parents (0700 each, as the state directory itself).
            if !directory.hasPrefix("/run/user/") && !directory.hasPrefix(Posix.environment("XDG_RUNTIME_DIR") ?? "\0") {
                try? FileManager.default.createDirectory(
                    atPath: parentDirectory(of: directory), withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            }
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                throw VaultError.io(operation: "cannot create the agent's directory", path: directory, errno: errno)
            }
            // The mode asked for, whatever the umask (under umask 0277 mkdir makes 0500, where bind fails).
            _ = chmod(directory, 0o700)
            guard lstat(directory, &info) == 0 else {
                throw VaultError.io(operation: "cannot access the agent's directory", path: directory, errno: errno)
            }
        }
        switch Posix.distrust(ofDirectory: info, allowRoot: false) {
        case nil: break
        case .symbolicLink:
            throw VaultError.unsafePermissions(
                path: directory, reason: "the agent's socket directory is a symbolic link",
                hint: "remove the link, or set VAULT_AGENT_SOCK to a socket in a directory of your own")
        case .notADirectory:
            throw VaultError.io(operation: "cannot use the agent's directory", path: directory, errno: ENOTDIR)
        case .ownedBy(let uid):
            throw VaultError.unsafePermissions(
                path: directory, reason: "the agent's socket directory belongs to user \(uid)",
                hint: "set VAULT_AGENT_SOCK to a socket in a directory of your own")
        case .writableByOthers(let mode):
            throw VaultError.unsafePermissions(
                path: directory,
                reason: "the agent's socket directory is writable by group or others (mode \(Posix.octal(mode)))",
                hint: "run: chmod 700 '\(directory)'")
        }
    }

    /// The directory that holds `path` (an absolute path), as dirname(1) names it: trailing slashes and the last
    /// component dropped, then the slashes before it (`/a//b/` → `/a`, `/b` → `/`), so that an `lstat` of it sees
    /// a symbolic link there rather than following it. A string operation: `URL`'s (FoundationEssentials) stats
    /// the path and builds a percent-decoding table, a tenth of a `vault get`'s CPU through the agent
    /// (Benchmarks/README.md, "The last figure").
    package static func parentDirectory(of path: String) -> String {
        var utf8 = Substring(path).utf8
        while utf8.last == UInt8(ascii: "/") { utf8 = utf8.dropLast() }
        guard let slash = utf8.lastIndex(of: UInt8(ascii: "/")) else { return utf8.isEmpty ? "/" : "." }
        utf8 = utf8[..<slash]
        while utf8.last == UInt8(ascii: "/") { utf8 = utf8.dropLast() }
        return utf8.isEmpty ? "/" : String(Substring(utf8))
    }

    /// Checks that whatever is at `path` may be taken over by a new agent: nothing, or a socket of this user (a
    /// stale one: callers make sure nobody listens there). Anything else (a file a typo in `VAULT_AGENT_SOCK`
    /// named, a directory, a socket of another user) is never removed.
    ///
    /// The files' trust rule (``VaultCore/Posix/distrust(ofFile:accepting:allowRoot:)``) for a socket, on its
    /// `lstat`: not a link, ours.
    ///
    /// - Throws: ``VaultError/unsafePermissions(path:reason:hint:)`` naming what is there.
    public static func checkReplaceable(_ path: String) throws {
        var existing = stat()
        guard lstat(path, &existing) == 0 else { return }
        let what: String
        switch Posix.distrust(ofFile: existing, accepting: .socket) {
        case nil: return
        case .ownedBy: what = "a socket of another user"
        default: what = Posix.kind(of: existing.st_mode)
        }
        throw VaultError.unsafePermissions(
            path: path, reason: "the agent's socket path holds \(what), not a socket of yours",
            hint: "nothing was changed; give VAULT_AGENT_SOCK the path of a socket, not of a file you keep")
    }

    /// Connects to the agent at `path`; `nil` when nobody listens there (no file, a stale socket).
    /// Refuses a peer that is not our own user (SO_PEERCRED).
    static func connect(to path: String, timeoutSeconds: Int) throws -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw AgentError.connection(errno: errno) }
        var address = try socketAddress(path)
        // Before the connect: a Unix socket's connect waits for room in the listener's backlog (full when the
        // agent is stopped) as long as the send timeout allows.
        setTimeout(fd, seconds: timeoutSeconds)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                Posix.retryingEINTR { Glibc.connect(fd, pointer, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            if code == ENOENT || code == ECONNREFUSED || code == ENOTSOCK { return nil }
            // The send timeout ran out while the listener's backlog stayed full (a stopped agent).
            if code == EAGAIN || code == EWOULDBLOCK { throw AgentError.timedOut }
            throw AgentError.connection(errno: code)
        }
        var uid: UInt32 = 0
        guard vault_peer_uid(fd, &uid) == 0, uid == geteuid() else {
            close(fd)
            throw AgentError.protocolError("the socket's listener is not this user")
        }
        return fd
    }

    static func setTimeout(_ fd: Int32, seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    static func socketAddress(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw VaultError.io(operation: "cannot use the agent socket", path: path, errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }
}
