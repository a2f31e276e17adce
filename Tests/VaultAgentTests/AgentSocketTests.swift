import Foundation
import Testing
@testable import VaultAgent
import VaultCore

#if canImport(Glibc)
import Glibc
#endif

/// Where the agent's socket is (from an environment given by the test, not the process's) and what a new agent
/// may take over there.
@Suite struct AgentSocketTests {
    let directory = AgentTestDirectory()

    /// A lookup in `variables`, as the agent code takes an environment.
    static func environment(_ variables: [String: String]) -> (String) -> String? { { variables[$0] } }

    /// `defaultPath` with `variables` and a user runtime directory that does not exist.
    func path(_ variables: [String: String], runtime: String? = nil) -> String {
        AgentSocket.defaultPath(
            environment: Self.environment(variables), userRuntimeDirectory: runtime ?? directory.file("no-such-run"))
    }

    @Test func vaultAgentSockWinsWhenItIsNotEmpty() {
        let all = ["VAULT_AGENT_SOCK": "/x/a.sock", "XDG_RUNTIME_DIR": "/run/me", "XDG_STATE_HOME": "/state", "HOME": "/home/me"]
        #expect(path(all) == "/x/a.sock")
        // Taken as given: checkDirectory refuses a relative one later, in the CLI's words.
        #expect(path(["VAULT_AGENT_SOCK": "relative.sock"]) == "relative.sock")
        var empty = all
        empty["VAULT_AGENT_SOCK"] = ""
        #expect(path(empty) == "/run/me/vault/agent.sock")
    }

    /// The directory checkDirectory looks at: the one holding the socket, without a trailing slash (an `lstat` of
    /// `link/` would follow a symbolic link and find the directory it leads to trustworthy).
    @Test func theSocketsDirectoryIsItsPathWithoutTheLastComponent() {
        let cases = [
            "/run/user/1000/vault/agent.sock": "/run/user/1000/vault", "/agent.sock": "/", "/": "/", "//": "/",
            "/a//agent.sock": "/a", "/a/b/": "/a", "/a/b//": "/a", "//a": "/", "/a/../b.sock": "/a/..",
            "/ä/ö.sock": "/ä", "relative": ".", "dir/a.sock": "dir",
        ]
        for (path, directory) in cases {
            #expect(AgentSocket.parentDirectory(of: path) == directory, "\(path)")
        }
    }

    @Test func aSocketInALinkedDirectoryIsRefused() throws {
        let real = directory.file("real")
        #expect(mkdir(real, 0o700) == 0)
        let link = directory.file("link")
        #expect(symlink(real, link) == 0)
        let refused = VaultError.unsafePermissions(
            path: link, reason: "the agent's socket directory is a symbolic link",
            hint: "remove the link, or set VAULT_AGENT_SOCK to a socket in a directory of your own")
        for socket in [link + "/agent.sock", link + "//agent.sock"] {
            #expect(throws: refused, "\(socket)") { try AgentSocket.checkDirectory(of: socket, create: false) }
        }
        try AgentSocket.checkDirectory(of: real + "/agent.sock", create: false)
    }

    @Test func anAbsoluteXDGRuntimeDirComesNext() {
        #expect(path(["XDG_RUNTIME_DIR": "/run/me", "XDG_STATE_HOME": "/state"]) == "/run/me/vault/agent.sock")
        #expect(path(["XDG_RUNTIME_DIR": "run/me", "XDG_STATE_HOME": "/state"]) == "/state/vault/agent/agent.sock")
        #expect(path(["XDG_RUNTIME_DIR": "", "XDG_STATE_HOME": "/state"]) == "/state/vault/agent/agent.sock")
    }

    @Test func theUsersRuntimeDirectoryWhenItIsPrivateAndTheirs() throws {
        let run = directory.file("run")
        #expect(mkdir(run, 0o700) == 0 && chmod(run, 0o700) == 0)
        let state = ["XDG_STATE_HOME": "/state"]
        #expect(path(state, runtime: run) == run + "/vault/agent.sock")
        for mode: mode_t in [0o750, 0o705, 0o755, 0o777] {
            #expect(chmod(run, mode) == 0)
            #expect(path(state, runtime: run) == "/state/vault/agent/agent.sock", "mode \(String(mode, radix: 8))")
        }
        #expect(chmod(run, 0o700) == 0)
        let link = directory.file("run-link")
        #expect(symlink(run, link) == 0)
        #expect(path(state, runtime: link) == "/state/vault/agent/agent.sock")
        if geteuid() == 0 {
            #expect(chown(run, 12345, 12345) == 0)
            #expect(path(state, runtime: run) == "/state/vault/agent/agent.sock")
        }
    }

    @Test func elseTheStateDirectoryOfXDGStateHomeOrHome() {
        #expect(path(["XDG_STATE_HOME": "/state", "HOME": "/home/me"]) == "/state/vault/agent/agent.sock")
        #expect(path(["XDG_STATE_HOME": "state", "HOME": "/home/me"]) == "/home/me/.local/state/vault/agent/agent.sock")
        #expect(path(["HOME": "/home/me"]) == "/home/me/.local/state/vault/agent/agent.sock")
        // No HOME: the passwd entry's home, as the process's own default does.
        #expect(path([:]) == Posix.homeDirectory(environment: { _ in nil }) + "/.local/state/vault/agent/agent.sock")
    }

    @Test func theProcessDefaultIsTheSameRuleOnTheProcessEnvironment() {
        #expect(AgentSocket.defaultPath == AgentSocket.defaultPath(environment: Posix.environment))
    }

    // MARK: What a new agent may take over

    func bindSocket(_ path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = try AgentSocket.socketAddress(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0, "bind: errno \(errno)")
    }

    func refusal(_ path: String, holds what: String) -> VaultError {
        .unsafePermissions(
            path: path, reason: "the agent's socket path holds \(what), not a socket of yours",
            hint: "nothing was changed; give VAULT_AGENT_SOCK the path of a socket, not of a file you keep")
    }

    @Test func nothingOrAStaleSocketOfOursMayBeReplaced() throws {
        let path = directory.file("agent.sock")
        try AgentSocket.checkReplaceable(path)
        try bindSocket(path)
        try AgentSocket.checkReplaceable(path)
    }

    @Test func aFileALinkOrADirectoryIsNeverReplaced() throws {
        let file = directory.file("file")
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        #expect(throws: refusal(file, holds: "a regular file")) { try AgentSocket.checkReplaceable(file) }
        let socketPath = directory.file("real.sock")
        try bindSocket(socketPath)
        let link = directory.file("link.sock")
        #expect(symlink(socketPath, link) == 0)
        #expect(throws: refusal(link, holds: "a symbolic link")) { try AgentSocket.checkReplaceable(link) }
        let sub = directory.file("sub")
        #expect(mkdir(sub, 0o700) == 0)
        #expect(throws: refusal(sub, holds: "a directory")) { try AgentSocket.checkReplaceable(sub) }
        let fifo = directory.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: refusal(fifo, holds: "a FIFO")) { try AgentSocket.checkReplaceable(fifo) }
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to chown"))
    func aSocketOfAnotherUserIsNeverReplaced() throws {
        let path = directory.file("theirs.sock")
        try bindSocket(path)
        #expect(lchown(path, 12345, 12345) == 0)
        #expect(throws: refusal(path, holds: "a socket of another user")) { try AgentSocket.checkReplaceable(path) }
    }
}
