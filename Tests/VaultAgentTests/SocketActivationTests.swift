import Foundation
import Testing
@testable import VaultAgent
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// sd_listen_fds(3)'s variables as ``SocketActivation`` reads them, and the checks on what is handed in.
@Suite struct SocketActivationParseTests {
    @Test func variablesForThisProcessGiveDescriptorsFromThreeWithTheirNames() throws {
        let found = try #require(try SocketActivation.parse(pid: "42", fds: "2", names: "vault-agent:ssh", ownPID: 42))
        #expect(found.map(\.0) == [3, 4] && found.map(\.1) == ["vault-agent", "ssh"])
        let unnamed = try #require(try SocketActivation.parse(pid: "42", fds: "1", names: nil, ownPID: 42))
        #expect(unnamed.map(\.0) == [3] && unnamed.map(\.1) == [""])
    }

    @Test func noVariablesOrAnotherProcessIsNoActivation() throws {
        #expect(try SocketActivation.parse(pid: nil, fds: "1", names: nil, ownPID: 42) == nil)
        #expect(try SocketActivation.parse(pid: "", fds: "1", names: nil, ownPID: 42) == nil)
        #expect(try SocketActivation.parse(pid: "41", fds: "1", names: "vault-agent", ownPID: 42) == nil)
    }

    @Test(arguments: [
        ("x", "1", nil, "LISTEN_PID is not a process id"),
        ("0", "1", nil, "LISTEN_PID is not a process id"),
        ("42", nil, nil, "LISTEN_FDS is not a count"),
        ("42", "-1", nil, "LISTEN_FDS is not a count"),
        ("42", "257", nil, "LISTEN_FDS (257) is more than 256"),
        ("42", "2", "vault-agent", "LISTEN_FDNAMES names 1 socket(s), LISTEN_FDS says 2"),
    ] as [(String, String?, String?, String)])
    func malformedVariablesAreRefusedByName(_ pid: String, _ fds: String?, _ names: String?, _ reason: String) {
        #expect {
            _ = try SocketActivation.parse(pid: pid, fds: fds, names: names, ownPID: 42)
        } throws: { error in
            guard case AgentError.cannotStart(_, let given) = error else { return false }
            return given == reason
        }
    }

    @Test func theSocketNamedVaultAgentOrTheOnlyOneIsTaken() {
        let agent = SocketActivation.Socket(descriptor: 3, name: "vault-agent", path: "/run/user/1/vault/agent.sock")
        let other = SocketActivation.Socket(descriptor: 4, name: "other", path: "/run/user/1/vault/other.sock")
        #expect(SocketActivation(sockets: [other, agent]).socket(named: "vault-agent") == agent)
        #expect(SocketActivation(sockets: [other]).socket(named: "vault-agent") == other)
        #expect(SocketActivation(sockets: [other, other]).socket(named: "vault-agent") == nil)
    }

    /// The ssh-agent's socket (vault-ssh-agent.socket's `ssh`) is found by its name, and never taken for the
    /// vault's, not even alone.
    @Test func theSSHAgentSocketIsTheOneNamedSSHAndNeverTheVaults() {
        let agent = SocketActivation.Socket(descriptor: 3, name: "vault-agent", path: "/run/user/1/vault/agent.sock")
        let ssh = SocketActivation.Socket(descriptor: 4, name: "ssh", path: "/run/user/1/vault/ssh-agent.sock")
        #expect(SocketActivation(sockets: [agent, ssh]).sshAgentSocket == ssh)
        #expect(SocketActivation(sockets: [agent, ssh]).socket(named: "vault-agent") == agent)
        #expect(SocketActivation(sockets: [ssh]).socket(named: "vault-agent") == nil)
        #expect(SocketActivation(sockets: [agent]).sshAgentSocket == nil)
    }

    @Test func aBoundButNotListeningSocketAndAnAbstractOneAreRefused() throws {
        let directory = AgentTestDirectory()
        let path = directory.path + "/s.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = try AgentSocket.socketAddress(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0)
        #expect(throws: AgentError.cannotStart(
            socket: "(socket activation)",
            reason: "descriptor \(fd) ('x'), handed in by the service manager, is not a listening stream socket")) {
            _ = try SocketActivation.listeningPath(of: fd, name: "x")
        }
        try #require(listen(fd, 4) == 0)
        #expect(try SocketActivation.listeningPath(of: fd, name: "x") == path)

        // An abstract socket (a name that starts with NUL) has no directory whose mode keeps others out.
        let abstract = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(abstract) }
        var name = sockaddr_un()
        name.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &name.sun_path) { raw in raw[1] = UInt8(ascii: "v") }
        let boundAbstract = withUnsafePointer(to: &name) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(abstract, $0, socklen_t(MemoryLayout<sa_family_t>.size + 2))
            }
        }
        try #require(boundAbstract == 0 && listen(abstract, 4) == 0)
        #expect(throws: AgentError.cannotStart(
            socket: "(socket activation)",
            reason: "descriptor \(abstract), handed in by the service manager, is not bound to a path (ListenStream= must be an absolute path)")) {
            _ = try SocketActivation.listeningPath(of: abstract, name: "")
        }
    }
}
