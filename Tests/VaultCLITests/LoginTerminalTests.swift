import Foundation
import Testing

/// `vault login` and `vault fetch` asking on a terminal: the binary runs on a pseudo-terminal (Python's `pty`),
/// which answers each prompt. The answers go to Python on its stdin, never on a command line.
@Suite(.timeLimit(.minutes(5))) struct LoginTerminalTests {
    /// Runs `argv` on a new pseudo-terminal; reads pairs of lines (username, password) from stdin and types each
    /// pair at the next `Username` / `Password` prompt; prints everything the terminal showed; exits with the
    /// child's status.
    static let driver = #"""
        import os, pty, select, signal, sys, time
        # The test runner's threads block signals and children inherit the mask: unblock them here.
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        answers = sys.stdin.read().split("\n")
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(sys.argv[1], sys.argv[1:])
        deadline = time.time() + 90
        out = b""
        def fail(why):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            sys.stderr.write("%s; the terminal showed %r\n" % (why, out))
            sys.exit(124)
        def read_some():
            global out
            ready, _, _ = select.select([fd], [], [], max(0, deadline - time.time()))
            if not ready:
                fail("timed out")
            try:
                chunk = os.read(fd, 1024)
            except OSError:
                chunk = b""
            out += chunk
            return chunk
        def read_until(marker):
            while marker not in out:
                if not read_some():
                    fail("end of output before %r" % marker)
        while len(answers) >= 2:
            user, password = answers.pop(0), answers.pop(0)
            read_until(b"Username")
            os.write(fd, user.encode() + b"\n")
            read_until(b"Password for")
            os.write(fd, password.encode() + b"\n")
            out = out.replace(b"Username", b"username", 1).replace(b"Password for", b"password for", 1)
        while read_some():
            pass
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(out.decode("utf-8", "replace").replace("\r\n", "\n"))
        sys.exit(os.waitstatus_to_exitcode(status))
        """#

    func onTerminal(_ box: Sandbox, _ arguments: [String], answers: [String]) throws -> CLIResult {
        try CLI.exec(
            "/usr/bin/python3", ["-c", Self.driver, CLI.vault] + arguments + ["--passphrase-file", box.passphraseFile],
            stdin: Data((answers.joined(separator: "\n") + "\n").utf8), environment: box.environment)
    }

    @Test func loginAsksOnTheTerminalWithoutEchoAndRetriesOnce() throws {
        let box = try Sandbox()
        try box.initVault()
        let nginx = try NginxFixture(users: ["alice": "correct horse"])
        let realm = "\(nginx.origin) (realm \"Vault Test\")"
        let result = try onTerminal(
            box, ["login", nginx.url("/private/"), "--allow-insecure-http"],
            answers: ["alice", "wrong horse", "", "correct horse"])
        #expect(result.status == 0)
        // The prompts (markers lower-cased by the driver as it answers), the usernames echoed, no password.
        #expect(result.stdoutText == """
            Log in to \(realm)
            username: alice
            password for 'alice': 
            The password for 'alice' was rejected by \(realm). Try again.
            username [alice]: 
            password for 'alice': 
            logged in to \(realm) as 'alice'

            """)
        #expect(result.stderr == "")
        #expect(nginx.accessLog() == ["401 - /private/", "401 alice /private/", "200 alice /private/"])
        let list = try box.vault(["list"])
        #expect(list.stdoutText == "credential.space\npassword\nusername\n")

        // fetch on a terminal after the password changed: the stale credential is reported and asked for once.
        try nginx.setPassword("battery staple", for: "alice")
        let fetched = try onTerminal(
            box, ["fetch", nginx.url("/private/"), "--allow-insecure-http"], answers: ["", "battery staple"])
        #expect(fetched.status == 0)
        #expect(fetched.stdoutText == """
            The stored password for 'alice' was rejected by \(realm).
            username [alice]: 
            password for 'alice': 
            secret area

            """)
        #expect(fetched.stderr == "")
        #expect(try box.vault(["fetch", nginx.url("/private/"), "--allow-insecure-http"]).stdoutText == "secret area\n")
    }
}
