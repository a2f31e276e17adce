import Foundation
import Testing
import VaultTestSupport

/// The agent's ssh-agent socket with real OpenSSH: a loopback sshd the test configures, ssh logging in through
/// SSH_AUTH_SOCK, ssh-add, ssh-keygen -Y sign/verify, the known_hosts the test writes.
@Suite(.processTimeLimit, .enabled(if: OpenSSHTools.server, "OpenSSH's client and server are not installed"))
struct SSHAgentCLITests {
    /// A box with a vault, HOME inside it (the agent reads HOME/.ssh/known_hosts), and the agent's ssh socket.
    final class Setup {
        let box: AgentBox
        var home: String { box.directory + "/home" }
        var knownHosts: String { home + "/.ssh/known_hosts" }
        var sshSocket: String { box.socketDirectory + "/ssh-agent.sock" }

        init() throws {
            box = try AgentBox()
            try box.initVault()
            try FileManager.default.createDirectory(atPath: home + "/.ssh", withIntermediateDirectories: true)
        }

        /// `vault ARGS` around the agent (with the passphrase file), which must succeed.
        @discardableResult
        func vault(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> AgentRun {
            let result = try box.around(arguments)
            try #require(result.status == 0, "vault \(arguments): \(result.stderr)", sourceLocation: sourceLocation)
            return result
        }

        /// `vault unlock` with HOME inside the box (the agent it starts reads that HOME's known_hosts).
        func unlock() throws {
            let result = try box.vault(["unlock"], source: true, environment: ["HOME": home])
            try #require(result.status == 0, "unlock: \(result.stderr)")
            _ = try box.agentPID()
        }

        /// `ssh-add ARGS`; a password it asks for (-x, -X) comes from an SSH_ASKPASS program that prints `password`.
        func sshAdd(_ arguments: [String], password: String = "") throws -> AgentRun {
            let askpass = box.directory + "/askpass"
            try "#!/bin/sh\necho '\(password)'\n".write(toFile: askpass, atomically: false, encoding: .utf8)
            chmod(askpass, 0o700)
            return try OpenSSHTools.run(OpenSSHTools.add, "ssh-add", arguments, environment: [
                "SSH_AUTH_SOCK": sshSocket, "HOME": home, "SSH_ASKPASS": askpass, "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":none",
            ])
        }

        /// A key made by ssh-keygen and imported as `name`, with `options` (--host, --forward); its public line.
        @discardableResult
        func importKey(_ name: String, type: String = "ed25519", _ options: [String] = []) throws -> String {
            let file = box.directory + "/key-" + name
            let line = try OpenSSHTools.newKey(file, type: type, comment: name)
            try vault(["ssh", "import", name, file] + options)
            return line
        }
    }

    @Test func sshLogsInThroughTheAgentAndVaultLockEmptiesIt() throws {
        let setup = try Setup()
        let line = try setup.importKey("work")
        let server = try LoopbackSSHD(in: setup.box.directory + "/sshd", authorized: [line])
        try (server.knownHostsLine + "\n").write(toFile: setup.knownHosts, atomically: false, encoding: .utf8)
        // Nothing while the vault is locked (no agent yet: ssh-add cannot connect).
        #expect(try setup.sshAdd(["-L"]).status != 0)
        try setup.unlock()
        let listed = try setup.sshAdd(["-L"])
        #expect(listed.status == 0 && listed.stdoutText == line + "\n", "\(listed.stderr)")
        let login = try server.ssh(["echo", "logged-in"], agentSocket: setup.sshSocket, knownHosts: setup.knownHosts, home: setup.home)
        #expect(login.status == 0 && login.stdoutText == "logged-in\n", "\(login.stderr)\n\(server.log)")
        #expect(server.log.contains("Accepted publickey"))
        #expect(try setup.box.vault(["lock"]).status == 0)
        let empty = try setup.sshAdd(["-L"])
        #expect(empty.status == 1 && empty.stdoutText == "The agent has no identities.\n", "\(empty.stdoutText) \(empty.stderr)")
        let refused = try server.ssh(["echo", "logged-in"], agentSocket: setup.sshSocket, knownHosts: setup.knownHosts, home: setup.home)
        #expect(refused.status == 255)
    }

    /// Seven keys, six for other hosts and listed first: with MaxAuthTries 3, an agent offering them in order
    /// fails; ours offers the bound host's key, found through the (hashed) known_hosts entry of its host key.
    @Test func sevenKeysAndTheBoundHostsKeyLogsInAtOnce() throws {
        let setup = try Setup()
        for index in 1...6 { try setup.importKey("a\(index)", ["--host", "other\(index).example"]) }
        let server = try LoopbackSSHD(in: setup.box.directory + "/sshd", authorized: [])
        let line = try setup.importKey("z-mine", ["--host", "[127.0.0.1]:\(server.port)"])
        try (line + "\n").write(toFile: server.directory + "/authorized_keys", atomically: false, encoding: .utf8)
        try (server.knownHostsLine + "\n").write(toFile: setup.knownHosts, atomically: false, encoding: .utf8)
        try OpenSSHTools.keygen(["-q", "-H", "-f", setup.knownHosts])
        #expect(try String(contentsOfFile: setup.knownHosts, encoding: .utf8).hasPrefix("|1|"))
        try setup.unlock()
        // Without a bind (ssh-add), every key in list order.
        #expect(try setup.sshAdd(["-L"]).stdoutText.split(separator: "\n").count == 7)
        let login = try server.ssh(["echo", "logged-in"], agentSocket: setup.sshSocket, knownHosts: setup.knownHosts, home: setup.home)
        #expect(login.status == 0 && login.stdoutText == "logged-in\n", "\(login.stderr)\n\(server.log)")
        // The agent's own known_hosts no longer names the host: its keys for other hosts are not offered, nor is
        // the one whose pattern names it (it is not known to be that host).
        try "".write(toFile: setup.knownHosts, atomically: false, encoding: .utf8)
        let unknown = try server.ssh(["echo", "logged-in"], agentSocket: setup.sshSocket, knownHosts: server.directory + "/client_known_hosts", home: setup.home, options: ["-o", "StrictHostKeyChecking=accept-new"])
        #expect(unknown.status == 255, "\(unknown.stdoutText)")
        #expect(!server.log.contains("Too many authentication failures"))
    }

    /// A host that presents a certificate (sshd's HostKey + HostCertificate, signed by an ssh-keygen CA with -h -n),
    /// known_hosts with only `@cert-authority *.corp` and the CA's key: seven keys, six for other hosts first,
    /// MaxAuthTries 3, and ssh logs in at once with the key whose `hosts` names the certificate's principal.
    /// When the agent's known_hosts does not vouch for the certificate (another CA's line, a pattern its principal
    /// does not match) the host is unknown to it: its keys with `hosts` are not offered there, nothing else.
    @Test func aHostCertificateUnderACertAuthorityLineLogsInAtOnce() throws {
        let setup = try Setup()
        for index in 1...6 { try setup.importKey("a\(index)", ["--host", "other\(index).example"]) }
        let ca = setup.box.directory + "/ca", otherCA = setup.box.directory + "/other-ca"
        let caLine = try OpenSSHTools.newKey(ca, comment: "ca"), otherCALine = try OpenSSHTools.newKey(otherCA, comment: "other-ca")
        let server = try LoopbackSSHD(in: setup.box.directory + "/sshd", authorized: []) { hostPublicKey in
            _ = try OpenSSHTools.keygen(["-q", "-s", ca, "-I", "loopback", "-h", "-n", "git.corp", hostPublicKey])
        }
        let line = try setup.importKey("z-mine", ["--host", "*.corp"])
        try (line + "\n").write(toFile: server.directory + "/authorized_keys", atomically: false, encoding: .utf8)
        // ssh's known_hosts and the agent's: only the CA line (no line of the host's own key anywhere).
        let clientKnownHosts = setup.box.directory + "/client_known_hosts"
        try ("@cert-authority *.corp " + caLine + "\n").write(toFile: clientKnownHosts, atomically: false, encoding: .utf8)
        try ("@cert-authority *.corp " + caLine + "\n").write(toFile: setup.knownHosts, atomically: false, encoding: .utf8)
        try setup.unlock()
        // ssh checks the certificate's principal against the name it connects to: the alias the CA line covers.
        let alias = ["-o", "HostKeyAlias=git.corp"]
        let login = try server.ssh(["echo", "logged-in"], agentSocket: setup.sshSocket, knownHosts: clientKnownHosts, home: setup.home, options: alias)
        #expect(login.status == 0 && login.stdoutText == "logged-in\n", "\(login.stderr)\n\(server.log)")
        #expect(server.log.contains("Accepted publickey"), "\(server.log)")
        #expect(!server.log.contains("Too many authentication failures"))
        let signatures = try setup.box.vault(["agent", "status"]).stdoutText
        #expect(signatures.contains("z-mine") && signatures.contains("git.corp"), "\(signatures)")

        // The agent's known_hosts vouches for another CA, or for other names: the host is unknown, none of the
        // seven keys is offered (all have hosts), and ssh, which trusts the host, cannot log in.
        for agentLine in ["@cert-authority *.corp " + otherCALine, "@cert-authority *.example " + caLine] {
            try (agentLine + "\n").write(toFile: setup.knownHosts, atomically: false, encoding: .utf8)
            let refused = try server.ssh(["echo", "logged-in"], agentSocket: setup.sshSocket, knownHosts: clientKnownHosts, home: setup.home, options: alias)
            #expect(refused.status == 255 && refused.stdoutText.isEmpty, "\(agentLine): \(refused.stderr)")
        }
        #expect(!server.log.contains("Too many authentication failures"), "\(server.log)")
        #expect(server.log.components(separatedBy: "Accepted publickey").count == 2, "\(server.log)")
    }

    @Test(arguments: ["rsa-sha2-256", "rsa-sha2-512"])
    func rsaSignaturesAreCheckedBySshdForEachSHA2Algorithm(algorithm: String) throws {
        let setup = try Setup()
        let line = try setup.importKey("rsa", type: "rsa")
        let server = try LoopbackSSHD(in: setup.box.directory + "/sshd", authorized: [line], extra: ["PubkeyAcceptedAlgorithms \(algorithm)"])
        try (server.knownHostsLine + "\n").write(toFile: setup.knownHosts, atomically: false, encoding: .utf8)
        try setup.unlock()
        // sshd's server-sig-algs names every algorithm whatever it accepts: the client is told which one to ask for.
        let login = try server.ssh(["echo", "ok"], agentSocket: setup.sshSocket, knownHosts: setup.knownHosts, home: setup.home,
                                   options: ["-o", "PubkeyAcceptedAlgorithms=\(algorithm)"])
        #expect(login.status == 0 && login.stdoutText == "ok\n", "\(login.stderr)\n\(server.log)")
        #expect(server.log.contains("Accepted publickey for") && server.log.contains("RSA SHA256:"), "\(server.log)")
    }

    @Test func sshKeygenSignsThroughTheAgentForGitAndTheSignatureVerifies() throws {
        let setup = try Setup()
        let line = try setup.importKey("signing")
        try setup.unlock()
        let message = setup.box.directory + "/message"
        try "tree 1234\n".write(toFile: message, atomically: false, encoding: .utf8)
        let pub = setup.box.directory + "/signing.pub"
        try (line + "\n").write(toFile: pub, atomically: false, encoding: .utf8)
        let signed = try OpenSSHTools.run(OpenSSHTools.keygen, "ssh-keygen", ["-Y", "sign", "-f", pub, "-n", "git", message],
                                          environment: ["SSH_AUTH_SOCK": setup.sshSocket, "HOME": setup.home])
        #expect(signed.status == 0, "\(signed.stderr)")
        let allowed = setup.box.directory + "/allowed_signers"
        try ("signing@example " + line + "\n").write(toFile: allowed, atomically: false, encoding: .utf8)
        let verified = try OpenSSHTools.run(OpenSSHTools.keygen, "ssh-keygen",
            ["-Y", "verify", "-f", allowed, "-I", "signing@example", "-n", "git", "-s", message + ".sig"],
            stdin: Data("tree 1234\n".utf8), environment: [:])
        #expect(verified.status == 0 && verified.stdoutText.contains("Good \"git\" signature for signing@example"), "\(verified.stdoutText) \(verified.stderr)")
        let tampered = try OpenSSHTools.run(OpenSSHTools.keygen, "ssh-keygen",
            ["-Y", "verify", "-f", allowed, "-I", "signing@example", "-n", "git", "-s", message + ".sig"],
            stdin: Data("tree 1235\n".utf8), environment: [:])
        #expect(tampered.status != 0)
        // The signature is in the agent's log, with its namespace.
        let status = try setup.box.vault(["agent", "status"])
        #expect(status.stdoutText.contains("signed with 'signing'") && status.stdoutText.contains("namespace git"), "\(status.stdoutText)")
    }

    /// git's `gpg.format ssh`: a commit signed through the agent, verified by git with an allowed_signers file.
    @Test func gitSignsACommitThroughTheAgent() throws {
        let git = try #require(findTool("git"), "git is not installed")
        let setup = try Setup()
        let line = try setup.importKey("git-signing")
        try setup.unlock()
        let repository = setup.box.directory + "/repository"
        let allowed = setup.box.directory + "/allowed_signers"
        try ("signer@example " + line + "\n").write(toFile: allowed, atomically: false, encoding: .utf8)
        let environment = ["SSH_AUTH_SOCK": setup.sshSocket, "HOME": setup.home, "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1"]
        func run(_ arguments: [String]) throws -> AgentRun {
            try AgentCLI.exec(git, ["-C", repository] + arguments, environment: environment, timeout: 30)
        }
        try FileManager.default.createDirectory(atPath: repository, withIntermediateDirectories: true)
        for arguments in [["init", "-q"], ["config", "user.name", "Signer"], ["config", "user.email", "signer@example"],
                          ["config", "gpg.format", "ssh"], ["config", "user.signingkey", "key::" + line],
                          ["config", "gpg.ssh.allowedSignersFile", allowed], ["commit", "-q", "-S", "--allow-empty", "-m", "signed"]] {
            let result = try run(arguments)
            try #require(result.status == 0, "git \(arguments): \(result.stderr)")
        }
        let verified = try run(["verify-commit", "HEAD"])
        #expect(verified.status == 0 && verified.stderr.contains("Good \"git\" signature for signer@example"), "\(verified.stderr)")
        let status = try setup.box.vault(["agent", "status", "--json"])
        #expect(status.stdoutText.contains("signed with 'git-signing'") && status.stdoutText.contains("namespace git"), "\(status.stdoutText)")
    }

    @Test func aKeyWithConfirmSignsOnlyWhenSSHAskpassSaysYes() throws {
        let setup = try Setup()
        let line = try setup.importKey("careful", ["--confirm"])
        let answer = setup.box.directory + "/answer"
        let askpass = setup.box.directory + "/confirm-askpass"
        try "#!/bin/sh\nexit $(cat '\(answer)')\n".write(toFile: askpass, atomically: false, encoding: .utf8)
        chmod(askpass, 0o700)
        // The agent keeps the SSH_ASKPASS of the command that started it.
        let unlocked = try setup.box.vault(["unlock"], source: true, environment: ["HOME": setup.home, "SSH_ASKPASS": askpass])
        try #require(unlocked.status == 0, "\(unlocked.stderr)")
        let pub = setup.box.directory + "/careful.pub", message = setup.box.directory + "/message"
        try (line + "\n").write(toFile: pub, atomically: false, encoding: .utf8)
        try "text\n".write(toFile: message, atomically: false, encoding: .utf8)
        for (exitCode, signs) in [("1", false), ("0", true)] {
            try exitCode.write(toFile: answer, atomically: false, encoding: .utf8)
            try? FileManager.default.removeItem(atPath: message + ".sig")
            let signed = try OpenSSHTools.run(OpenSSHTools.keygen, "ssh-keygen", ["-Y", "sign", "-f", pub, "-n", "file", message],
                                              environment: ["SSH_AUTH_SOCK": setup.sshSocket, "HOME": setup.home])
            #expect((signed.status == 0) == signs, "askpass exit \(exitCode): \(signed.stderr)")
        }
    }

    @Test func sshAddLocksEveryVaultAndCannotUnlockOrAdd() throws {
        let setup = try Setup()
        try setup.importKey("work")
        try setup.unlock()
        let locked = try setup.sshAdd(["-x"], password: "lock password")
        #expect(locked.status == 0, "\(locked.stderr)")
        #expect(try setup.box.status()?.vaults.isEmpty == true)
        #expect(try setup.sshAdd(["-L"]).status == 1)
        let unlocked = try setup.sshAdd(["-X"], password: "lock password")
        #expect(unlocked.status != 0)
        try setup.unlock()
        let other = setup.box.directory + "/other"
        try OpenSSHTools.newKey(other)
        let added = try setup.sshAdd([other])
        #expect(added.status != 0)
        #expect(try setup.sshAdd(["-L"]).stdoutText.split(separator: "\n").count == 1)
        let deleted = try setup.sshAdd(["-D"])
        #expect(deleted.status != 0)
        #expect(try setup.sshAdd(["-L"]).stdoutText.split(separator: "\n").count == 1)
    }

    /// `ssh -A` to a host, where ssh-add lists the forwarded agent's keys: only the key whose entry allows it.
    @Test func aForwardedConnectionOffersOnlyKeysThatAllowForwarding() throws {
        let setup = try Setup()
        let stay = try setup.importKey("stay")
        let travel = try setup.importKey("travel", ["--forward"])
        let server = try LoopbackSSHD(in: setup.box.directory + "/sshd", authorized: [stay, travel])
        try (server.knownHostsLine + "\n").write(toFile: setup.knownHosts, atomically: false, encoding: .utf8)
        try setup.unlock()
        let addPath = try OpenSSHTools.require(OpenSSHTools.add, "ssh-add")
        let remote = try server.ssh([addPath, "-L"], agentSocket: setup.sshSocket, knownHosts: setup.knownHosts, home: setup.home, options: ["-A"])
        #expect(remote.status == 0 && remote.stdoutText == travel + "\n", "\(remote.stdoutText) \(remote.stderr)\n\(server.log)")
    }
}
