import Foundation
import Testing
import VaultTestSupport

/// OpenSSH's programs for the ssh tests: ssh-keygen, ssh-add, ssh and a loopback sshd each test configures.
/// Absent on a user's clone, the tests are skipped saying so; under CI (`CI=true`) they run and the absence fails.
enum OpenSSHTools {
    static let keygen = findTool("ssh-keygen")
    static let add = findTool("ssh-add")
    static let ssh = findTool("ssh")
    static let sshd = FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd") ? "/usr/sbin/sshd" : nil
    static var client: Bool { (keygen != nil && add != nil && ssh != nil) || ProcessInfo.processInfo.environment["CI"] == "true" }
    static var server: Bool { (client && sshd != nil) || ProcessInfo.processInfo.environment["CI"] == "true" }

    static func require(_ tool: String?, _ name: String) throws -> String {
        try #require(tool, "\(name) is not installed (CI=true): scripts/install-deps --test installs openssh-client and openssh-server")
    }

    /// Runs an OpenSSH program with `environment` (HOME and SSH_AUTH_SOCK are the test's), in its own session.
    static func run(_ tool: String?, _ name: String, _ arguments: [String], stdin: Data = Data(), environment: [String: String]) throws -> AgentRun {
        try AgentCLI.exec(try require(tool, name), arguments, stdin: stdin, environment: environment, timeout: 30)
    }

    /// `ssh-keygen ARGS`, which must succeed; its stdout.
    @discardableResult
    static func keygen(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try run(keygen, "ssh-keygen", arguments, environment: [:])
        try #require(result.status == 0, "ssh-keygen \(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdoutText
    }

    /// A new key `path` (and `path.pub`) by ssh-keygen; its public line.
    @discardableResult
    static func newKey(_ path: String, type: String = "ed25519", passphrase: String = "", comment: String = "user@example") throws -> String {
        try keygen(["-q", "-t", type] + (type == "rsa" ? ["-b", "2048"] : []) + ["-N", passphrase, "-C", comment, "-f", path])
        return try String(contentsOfFile: path + ".pub", encoding: .utf8).trimmingCharacters(in: .newlines)
    }
}

/// A loopback sshd on a free port with a configuration of the test's: its own host key, the authorized keys
/// the test gives, `MaxAuthTries 3`, public keys only. Killed at the end.
final class LoopbackSSHD {
    let directory: String
    let port: Int
    let hostKeyLine: String
    private let process: AgentCLI.Running

    /// - Parameters:
    ///   - authorized: the authorized_keys lines.
    ///   - extra: more configuration lines (`PubkeyAcceptedAlgorithms rsa-sha2-256`).
    ///   - certify: given the host key's public file, makes its certificate beside it (`ssh-keygen -s CA -h`):
    ///     sshd presents it (`HostCertificate`).
    init(in directory: String, authorized: [String], extra: [String] = [], certify: ((String) throws -> Void)? = nil) throws {
        let sshd = try OpenSSHTools.require(OpenSSHTools.sshd, "sshd")
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        hostKeyLine = try OpenSSHTools.newKey(directory + "/host", comment: "")
        var extra = extra
        if let certify {
            try certify(directory + "/host.pub")
            extra.append("HostCertificate \(directory)/host-cert.pub")
        }
        try (authorized.joined(separator: "\n") + "\n").write(toFile: directory + "/authorized_keys", atomically: false, encoding: .utf8)
        var port = 0, started: AgentCLI.Running?
        // A port found free can be taken before sshd binds it: a few tries.
        for _ in 0..<5 where started == nil {
            port = try freeTCPPort()
            let config = [
                "Port \(port)", "ListenAddress 127.0.0.1", "HostKey \(directory)/host", "AuthorizedKeysFile \(directory)/authorized_keys",
                "PidFile none", "StrictModes no", "UsePAM no", "MaxAuthTries 3", "PasswordAuthentication no",
                "KbdInteractiveAuthentication no", "PubkeyAuthentication yes", "PermitRootLogin prohibit-password",
                "AllowAgentForwarding yes", "LogLevel VERBOSE",
            ] + extra
            try (config.joined(separator: "\n") + "\n").write(toFile: directory + "/sshd_config", atomically: false, encoding: .utf8)
            let running = try AgentCLI.start(sshd, ["-D", "-e", "-f", directory + "/sshd_config"], environment: [:], timeout: 300)
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, !NginxFixture.accepts(port: port) { usleep(20_000) }
            if NginxFixture.accepts(port: port) { started = running } else { running.stop() }
        }
        self.port = port
        process = try #require(started, "sshd did not listen")
    }

    deinit { _ = process.stop() }

    /// The known_hosts line of this server, as ssh writes it for a port other than 22.
    var knownHostsLine: String { "[127.0.0.1]:\(port) " + hostKeyLine }

    /// What sshd logged so far.
    var log: String { (try? String(contentsOfFile: process.files.stderr, encoding: .utf8)) ?? "" }

    /// `ssh` to this server as the current user, through `agentSocket`, `command` run there.
    func ssh(_ command: [String], agentSocket: String, knownHosts: String, home: String, options: [String] = []) throws -> AgentRun {
        try OpenSSHTools.run(OpenSSHTools.ssh, "ssh", [
            "-F", "/dev/null", "-o", "UserKnownHostsFile=\(knownHosts)", "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
            "-o", "IdentityFile=/nonexistent", "-p", "\(port)",
        ] + options + ["\(NSUserName())@127.0.0.1"] + command, environment: ["SSH_AUTH_SOCK": agentSocket, "HOME": home])
    }
}

extension AgentCLI.Running {
    /// SIGTERM, then the process's end collected.
    @discardableResult
    func stop() -> AgentRun {
        kill(pid, SIGTERM)
        return finish()
    }
}
