import Foundation
import Testing
import VaultTestSupport

/// Real git over https with `vault credential` as its helper (issue 12): a real nginx with TLS (the test CA of
/// ``TestCertificates``) and `auth_basic` in front of git's smart HTTP (`git http-backend` behind `fcgiwrap`), a
/// real agent (``AgentBox``), git started without a controlling terminal and with `GIT_TERMINAL_PROMPT=0`. After
/// one approved login, `git clone`, `git push` and `git fetch` ask nothing; once the vault is locked, `git fetch`
/// fails at once with git's own words and nothing is written. Needs git, nginx, fcgiwrap and openssl
/// (`scripts/install-deps --test`); without one, the test fails naming it.
@Suite(.processTimeLimit) struct GitHTTPSTests {
    /// git, nginx with TLS and `auth_basic` (one user), and `fcgiwrap` running `git http-backend` on a bare
    /// `repo.git` (branch `main`, one commit, `http.receivepack true`), all in a temporary directory.
    ///
    /// ``NginxFixture`` serves fixed locations (no FastCGI), so this writes its own server block into the fixture's
    /// configuration (``NginxFixture/configuration(root:logFormat:http:)``); the certificates, ports and tool lookup
    /// are those of VaultTestSupport.
    final class GitServer: @unchecked Sendable {
        let directory: String
        let port: Int
        let git: String
        private let nginx = Process()
        private let fcgiwrap = Process()

        /// The full path of each tool the test starts, or a failure naming the package that brings it.
        static func tools() throws -> (git: String, nginx: String, fcgiwrap: String, openssl: String) {
            let wanted = [("git", "git"), ("nginx", "nginx-light"), ("fcgiwrap", "fcgiwrap"), ("openssl", "openssl")]
            let missing = wanted.filter { findTool($0.0) == nil }
            guard missing.isEmpty else {
                let names = missing.map { "\($0.0) (Debian package \($0.1))" }.joined(separator: ", ")
                throw AgentTestError(description: "not installed: \(names): run scripts/install-deps --test")
            }
            return (findTool("git")!, findTool("nginx")!, findTool("fcgiwrap")!, findTool("openssl")!)
        }

        init(certificates: TestCertificates, user: String, password: String) throws {
            let tools = try Self.tools()
            git = tools.git
            let (status, execPath) = try runTool(git, ["--exec-path"])
            let backend = execPath.trimmingCharacters(in: .whitespacesAndNewlines) + "/git-http-backend"
            guard status == 0, FileManager.default.isExecutableFile(atPath: backend) else {
                throw AgentTestError(description: "git http-backend is missing (\(backend)): install git")
            }
            directory = try makePrivateDirectory(prefix: "vault-githttps", root: AgentBox.temporaryRoot)
            port = try freeTCPPort()
            let root = directory
            // nginx's workers run as an unprivileged user when the tests run as root: let them read the files
            // and reach fcgiwrap's socket.
            chmod(root, 0o755)

            // The password reaches openssl on stdin, never its command line.
            let (hashed, hash) = try runTool(tools.openssl, ["passwd", "-apr1", "-stdin"], stdin: Data((password + "\n").utf8))
            guard hashed == 0 else { throw AgentTestError(description: "openssl passwd failed: \(hash)") }
            FileManager.default.createFile(
                atPath: root + "/htpasswd", contents: Data("\(user):\(hash.trimmingCharacters(in: .whitespacesAndNewlines))\n".utf8),
                attributes: [.posixPermissions: 0o644])

            // The bare repository with one commit on main, pushed from a local seed clone.
            let environment = ["HOME": root, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin"]
            let identity = ["-c", "user.name=Seed", "-c", "user.email=seed@example.invalid"]
            try FileManager.default.createDirectory(atPath: root + "/repos", withIntermediateDirectories: true)
            func run(_ steps: [[String]]) throws {
                for step in steps {
                    let (code, output) = try runTool(git, step, environment: environment)
                    guard code == 0 else { throw AgentTestError(description: "git \(step.joined(separator: " ")) failed: \(output)") }
                }
            }
            try run([
                ["init", "-q", "--bare", "-b", "main", root + "/repos/repo.git"],
                ["-C", root + "/repos/repo.git", "config", "http.receivepack", "true"],
                ["init", "-q", "-b", "main", root + "/seed"],
            ])
            try "seed\n".write(toFile: root + "/seed/README", atomically: true, encoding: .utf8)
            try run([
                ["-C", root + "/seed", "add", "README"],
                identity + ["-C", root + "/seed", "commit", "-q", "-m", "seed"],
                ["-C", root + "/seed", "push", "-q", root + "/repos/repo.git", "main"],
            ])

            let socket = root + "/fcgiwrap.sock"
            fcgiwrap.executableURL = URL(fileURLWithPath: tools.fcgiwrap)
            fcgiwrap.arguments = ["-s", "unix:" + socket]  // one process (no -c): SIGTERM ends it all
            fcgiwrap.environment = ["PATH": "/usr/bin:/bin"]
            fcgiwrap.standardInput = FileHandle.nullDevice
            fcgiwrap.standardOutput = FileHandle.nullDevice
            FileManager.default.createFile(atPath: root + "/fcgiwrap.log", contents: nil)
            fcgiwrap.standardError = FileHandle(forWritingAtPath: root + "/fcgiwrap.log")
            try fcgiwrap.run()
            let deadline = Date().addingTimeInterval(15)
            while !FileManager.default.fileExists(atPath: socket) {
                guard fcgiwrap.isRunning, Date() < deadline else {
                    stop()
                    throw AgentTestError(description: "fcgiwrap did not create its socket \(socket)")
                }
                usleep(20_000)
            }
            chmod(socket, 0o666)

            let config = NginxFixture.configuration(root: root, logFormat: "$status $remote_user $request_method $request_uri", http: """
                    server {
                        listen 127.0.0.1:\(port) ssl;
                        ssl_certificate \(certificates.serverCertificate);
                        ssl_certificate_key \(certificates.serverKey);
                        client_max_body_size 0;
                        location / {
                            auth_basic "git";
                            auth_basic_user_file \(root)/htpasswd;
                            fastcgi_pass unix:\(socket);
                            fastcgi_param SCRIPT_FILENAME \(backend);
                            fastcgi_param GIT_PROJECT_ROOT \(root)/repos;
                            fastcgi_param GIT_HTTP_EXPORT_ALL "";
                            fastcgi_param PATH_INFO $uri;
                            fastcgi_param REMOTE_USER $remote_user;
                            fastcgi_param REMOTE_ADDR $remote_addr;
                            fastcgi_param REQUEST_METHOD $request_method;
                            fastcgi_param QUERY_STRING $query_string;
                            fastcgi_param CONTENT_TYPE $content_type;
                            fastcgi_param CONTENT_LENGTH $content_length;
                            fastcgi_param SERVER_PROTOCOL $server_protocol;
                            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
                        }
                    }
                """)
            try config.write(toFile: root + "/nginx.conf", atomically: true, encoding: .utf8)
            nginx.executableURL = URL(fileURLWithPath: tools.nginx)
            nginx.arguments = ["-p", root + "/", "-c", root + "/nginx.conf", "-e", root + "/error.log"]
            nginx.standardInput = FileHandle.nullDevice
            nginx.standardOutput = FileHandle.nullDevice
            nginx.standardError = FileHandle.nullDevice
            try nginx.run()
            while !NginxFixture.accepts(port: port) {
                guard nginx.isRunning, Date() < deadline else {
                    let log = (try? String(contentsOfFile: root + "/error.log", encoding: .utf8)) ?? ""
                    stop()
                    throw AgentTestError(description: "nginx did not start:\n\(log)")
                }
                usleep(50_000)
            }
        }

        deinit {
            stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// SIGTERM to nginx and fcgiwrap (each waited for, bounded), then SIGKILL to what is left.
        func stop() {
            for process in [nginx, fcgiwrap] where process.isRunning {
                process.terminate()
                let deadline = Date().addingTimeInterval(5)
                while process.isRunning && Date() < deadline { usleep(10_000) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }
        }

        var url: String { "https://127.0.0.1:\(port)/repo.git" }

        /// The access log: one `status remote_user method uri` line per request.
        func accessLog() -> [String] {
            let text = (try? String(contentsOfFile: directory + "/access.log", encoding: .utf8)) ?? ""
            return text.split(separator: "\n").map(String.init)
        }

        /// The access log from line `start` on, once a line equal to `last` is there (nginx writes a request's line
        /// just after answering it, so git may exit first); waits at most 5 s.
        func accessLog(from start: Int, endingWith last: String) -> [String] {
            let deadline = Date().addingTimeInterval(5)
            var lines = Array(accessLog().dropFirst(start))
            while !lines.contains(last) && Date() < deadline {
                usleep(10_000)
                lines = Array(accessLog().dropFirst(start))
            }
            return lines
        }
    }

    /// `git arguments` without a terminal (new session), with its configuration inside the box only,
    /// `GIT_TERMINAL_PROMPT=0`, the test CA, the box's agent and vault, and `helpers` as its credential helpers.
    static func git(
        _ box: AgentBox, _ server: GitServer, certificates: TestCertificates, helpers: [String], _ arguments: [String]
    ) throws -> AgentRun {
        var environment = box.environment
        environment["HOME"] = box.directory
        environment["GIT_CONFIG_GLOBAL"] = box.directory + "/gitconfig"
        environment["GIT_CONFIG_NOSYSTEM"] = "1"
        environment["GIT_TERMINAL_PROMPT"] = "0"
        environment["GIT_SSL_CAINFO"] = certificates.caCertificate
        let configuration = helpers.flatMap { ["-c", "credential.helper=" + $0] }
        let identity = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid"]
        return try AgentCLI.exec(server.git, configuration + identity + arguments, environment: environment, timeout: 60)
    }

    static func describe(_ run: AgentRun) -> String { "exit \(run.status) after \(run.seconds) s: \(run.stderr)" }

    @Test func gitOverHTTPSAsksNothingAfterOneLoginAndFailsAtOnceWhenLocked() throws {
        let certificates = try TestCertificates()
        let user = "alice"
        let password = AgentClientTests.canary("password")
        let server = try GitServer(certificates: certificates, user: user, password: password)
        let box = try AgentBox()
        defer { AgentClientTests.stopAgent(box) }
        try box.initVault()
        try box.unlock()

        let vaultHelper = "!'\(CLI.vault)' credential"
        // A helper that answers `get` once with the login (from a 0600 file, never argv) and ignores the rest.
        let loginFile = box.directory + "/login"
        FileManager.default.createFile(
            atPath: loginFile, contents: Data("username=\(user)\npassword=\(password)\n".utf8),
            attributes: [.posixPermissions: 0o600])
        let loginHelper = "!f() { if test \"$1\" = get; then cat '\(loginFile)'; fi; }; f"
        func git(_ helpers: [String], _ arguments: [String]) throws -> AgentRun {
            try Self.git(box, server, certificates: certificates, helpers: helpers, arguments)
        }
        let origin = "https://127.0.0.1:\(server.port)"
        let gitGivesUp = "fatal: could not read Username for '\(origin)': terminal prompts disabled\n"
        let clone1 = box.directory + "/clone1", clone2 = box.directory + "/clone2"

        // The server wants a login, and an empty vault does not invent one: the clone fails, nothing stored.
        let refused = try git([vaultHelper], ["clone", "-q", server.url, box.directory + "/refused"])
        #expect(refused.status == 128, "clone with an empty vault: \(Self.describe(refused))")
        #expect(refused.stderr.hasSuffix(gitGivesUp), "stderr: \(refused.stderr)")
        #expect(try box.vault(["list"]).stdoutText == "")

        // The first clone: the vault has nothing, the one-shot helper answers, git approves (stores) on both.
        let first = try git([vaultHelper, loginHelper], ["clone", "-q", server.url, clone1])
        try #require(first.status == 0, "first clone: \(Self.describe(first))")
        #expect(first.stderr == "", "first clone stderr: \(first.stderr)")
        let prefix = "credential/\(origin)/git/"
        let listed = try box.vault(["list"])
        #expect(listed.status == 0 && listed.stdoutText == "\(prefix)password\n\(prefix)username\n",
            "list through the agent: \(listed.stdoutText) \(listed.stderr)")
        #expect(try box.vault(["get", prefix + "username"]).stdout == Data(user.utf8))
        #expect(try box.vault(["get", prefix + "password"]).stdout == Data(password.utf8), "the stored password differs")

        // From now on vault's helper alone: a second clone, a push from it, a fetch of that push into the first.
        var logStart = server.accessLog().count
        let second = try git([vaultHelper], ["clone", "-q", server.url, clone2])
        try #require(second.status == 0, "second clone: \(Self.describe(second))")
        #expect(second.stderr == "", "second clone stderr: \(second.stderr)")
        #expect((try? String(contentsOfFile: clone2 + "/README", encoding: .utf8)) == "seed\n")
        let cloneLog = server.accessLog(from: logStart, endingWith: "200 \(user) POST /repo.git/git-upload-pack")
        #expect(cloneLog.contains("200 \(user) GET /repo.git/info/refs?service=git-upload-pack"), "\(cloneLog)")
        #expect(cloneLog.contains("200 \(user) POST /repo.git/git-upload-pack"), "\(cloneLog)")

        try "pushed\n".write(toFile: clone2 + "/pushed.txt", atomically: true, encoding: .utf8)
        let add = try git([], ["-C", clone2, "add", "pushed.txt"])
        let commit = try git([], ["-C", clone2, "commit", "-q", "-m", "pushed over https"])
        try #require(add.status == 0 && commit.status == 0, "commit: \(Self.describe(add)) \(Self.describe(commit))")
        logStart = server.accessLog().count
        let push = try git([vaultHelper], ["-C", clone2, "push", "-q", "origin", "main"])
        try #require(push.status == 0, "push: \(Self.describe(push))")
        #expect(push.stderr == "", "push stderr: \(push.stderr)")
        let pushLog = server.accessLog(from: logStart, endingWith: "200 \(user) POST /repo.git/git-receive-pack")
        #expect(pushLog.contains("200 \(user) GET /repo.git/info/refs?service=git-receive-pack"), "\(pushLog)")
        #expect(pushLog.contains("200 \(user) POST /repo.git/git-receive-pack"), "\(pushLog)")

        logStart = server.accessLog().count
        let fetch = try git([vaultHelper], ["-C", clone1, "fetch", "-q", "origin"])
        try #require(fetch.status == 0, "fetch: \(Self.describe(fetch))")
        #expect(fetch.stderr == "", "fetch stderr: \(fetch.stderr)")
        let pushed = try git([], ["-C", clone2, "rev-parse", "HEAD"]).stdoutText
        let fetched = try git([], ["-C", clone1, "rev-parse", "origin/main"]).stdoutText
        #expect(pushed.count == 41 && fetched == pushed, "fetched \(fetched), pushed \(pushed)")
        let fetchLog = server.accessLog(from: logStart, endingWith: "200 \(user) POST /repo.git/git-upload-pack")
        #expect(fetchLog.contains("200 \(user) POST /repo.git/git-upload-pack"), "\(fetchLog)")
        // Every request so far either asked for the login (401, no user) or carried alice's.
        let served = server.accessLog()
        #expect(served.allSatisfy { $0.hasPrefix("401 - ") || $0.hasPrefix("200 \(user) ") }, "\(served)")

        // Locked, no terminal: vault's helper says so at once, git gives up with its own words; nothing is written.
        let lock = try box.vault(["lock", "--all"])
        #expect(lock.status == 0 && lock.stdoutText == "locked 1 vault\n", "lock --all: \(lock.stdoutText) \(lock.stderr)")
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let modified = try FileManager.default.attributesOfItem(atPath: box.vaultPath)[.modificationDate] as? Date
        logStart = server.accessLog().count
        let locked = try git([vaultHelper], ["-C", clone1, "fetch", "-q", "origin"])
        #expect(locked.status == 128, "fetch when locked: \(Self.describe(locked))")
        #expect(locked.stderr == AgentClientTests.noPassphrase + gitGivesUp, "stderr: \(locked.stderr)")
        #expect(locked.seconds < 5, "fetch when locked took \(locked.seconds) s")
        let lockedLog = server.accessLog(from: logStart, endingWith: "401 - GET /repo.git/info/refs?service=git-upload-pack")
        #expect(lockedLog == ["401 - GET /repo.git/info/refs?service=git-upload-pack"], "\(lockedLog)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before, "the vault file changed")
        #expect(try FileManager.default.attributesOfItem(atPath: box.vaultPath)[.modificationDate] as? Date == modified)
        #expect(try box.status()?.vaults == [], "the agent holds a vault after the locked fetch")
        #expect(try box.around(["list"]).stdoutText == "\(prefix)password\n\(prefix)username\n")
    }
}
