import Foundation
import Testing

/// `vault credential` against the whole helper protocol of git-credential(1) and gitcredentials(7): the
/// attributes git 2.41–2.46 added (expiry, refresh token, `wwwauth[]`, `capability[]`/`authtype`/`credential`,
/// `ephemeral`, `state[]`, `continue`), `url=`, several usernames per host, refused requests (NUL, carriage
/// return, hosts that are not exactly host[:port]); git's own helper suite (t0303) run against it; and real git
/// with `credential.interactive=false` on a terminal.
@Suite(.timeLimit(.minutes(20))) struct GitProtocolTests {
    let box: Sandbox

    init() throws {
        box = try Sandbox()
    }

    func helper(_ operation: String, _ request: String, _ extra: [String] = []) throws -> CLIResult {
        try box.vault(["credential"] + extra + [operation], stdin: Data(request.utf8))
    }

    func list() throws -> String {
        let result = try box.vault(["list"])
        #expect(result.status == 0)
        return result.stdoutText
    }

    /// `get` must print exactly `expected` (exit 0, nothing on stderr).
    func expectGet(_ request: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let get = try helper("get", request)
        #expect(get.status == 0, "get: exit \(get.status), \(get.stderr)", sourceLocation: sourceLocation)
        #expect(get.stdoutText == expected, sourceLocation: sourceLocation)
        #expect(get.stderr == "", sourceLocation: sourceLocation)
    }

    @Test func expiryRefreshTokenAndIgnoredAttributes() throws {
        try box.initVault()
        let now = Int(Date().timeIntervalSince1970)
        let store = try helper("store", """
            capability[]=authtype
            capability[]=state
            protocol=https
            host=h.example
            username=bob
            password=pw
            password_expiry_utc=\(now + 3600)
            oauth_refresh_token=refresh=me
            wwwauth[]=Basic realm="x"
            wwwauth[]=Bearer realm="y"
            state[]=other-helper:abc
            continue=1
            quit=1
            unknown=ignored

            """)
        #expect(store.status == 0 && store.stdout.isEmpty && store.stderr == "", "store: \(store.stderr)")
        #expect(try list() == """
            credential/https://h.example:443/git/oauth_refresh_token
            credential/https://h.example:443/git/password
            credential/https://h.example:443/git/password_expiry_utc
            credential/https://h.example:443/git/username

            """)
        try expectGet("protocol=https\nhost=h.example\nwwwauth[]=Basic realm=\"x\"\n",
            "username=bob\npassword=pw\noauth_refresh_token=refresh=me\npassword_expiry_utc=\(now + 3600)\n")
        // A caller that announced authtype is told we understand it; there is no pre-encoded credential here.
        try expectGet("capability[]=authtype\nprotocol=https\nhost=h.example\n",
            "capability[]=authtype\nusername=bob\npassword=pw\noauth_refresh_token=refresh=me\npassword_expiry_utc=\(now + 3600)\n")

        // Expired: not returned (it stays stored until replaced or erased). An invalid expiry is ignored, as git does.
        #expect(try helper("store", "protocol=https\nhost=h.example\nusername=bob\npassword=old\npassword_expiry_utc=\(now - 1)\n").status == 0)
        try expectGet("protocol=https\nhost=h.example\n", "")
        #expect(try helper("store", "protocol=https\nhost=h.example\nusername=bob\npassword=pw2\npassword_expiry_utc=soon\n").status == 0)
        try expectGet("protocol=https\nhost=h.example\n", "username=bob\npassword=pw2\n")
        #expect(try list() == "credential/https://h.example:443/git/password\ncredential/https://h.example:443/git/username\n")

        // --timeout N: expires N seconds after the store (git-credential-cache's option; t0303 tests the expiry).
        #expect(try helper("store", "protocol=https\nhost=h.example\nusername=bob\npassword=pw3\n", ["--timeout", "3600"]).status == 0)
        let timed = try helper("get", "protocol=https\nhost=h.example\n")
        let prefix = "username=bob\npassword=pw3\npassword_expiry_utc="
        #expect(timed.stdoutText.hasPrefix(prefix), "get: \(timed.stdoutText)")
        let expiry = Int(timed.stdoutText.dropFirst(prefix.count).dropLast()) ?? 0
        #expect((now + 3600)...(now + 3700) ~= expiry, "expiry \(expiry), now \(now)")
    }

    @Test func severalUsernamesPerHostAndWhatEraseRemoves() throws {
        try box.initVault()
        for (user, password) in [("alice", "pa"), ("bob b/ob", "pb"), ("", "")] {
            let store = try helper("store", "protocol=https\nhost=h.example\nusername=\(user)\npassword=\(password)\n")
            #expect(store.status == 0 && store.stderr == "", "store \(user): \(store.stderr)")
            usleep(5_000)  // distinct modification times: the newest answers a request without username
        }
        #expect(try list() == """
            credential/https://h.example:443/git%40/password
            credential/https://h.example:443/git%40/username
            credential/https://h.example:443/git%40bob%2520b%252Fob/password
            credential/https://h.example:443/git%40bob%2520b%252Fob/username
            credential/https://h.example:443/git/password
            credential/https://h.example:443/git/username

            """)
        try expectGet("protocol=https\nhost=h.example\nusername=alice\n", "username=alice\npassword=pa\n")
        try expectGet("protocol=https\nhost=h.example\nusername=bob b/ob\n", "username=bob b/ob\npassword=pb\n")
        try expectGet("protocol=https\nhost=h.example\n", "username=\npassword=\n")  // the newest
        try expectGet("protocol=https\nhost=h.example\nusername=carol\n", "")

        // Storing alice again replaces hers, in her slot; it is now the newest.
        #expect(try helper("store", "protocol=https\nhost=h.example\nusername=alice\npassword=pa2\n").status == 0)
        try expectGet("protocol=https\nhost=h.example\n", "username=alice\npassword=pa2\n")

        // erase with a username and a stale password removes nothing; with the username alone, that user only.
        #expect(try helper("erase", "protocol=https\nhost=h.example\nusername=alice\npassword=pa\n").status == 0)
        try expectGet("protocol=https\nhost=h.example\nusername=alice\n", "username=alice\npassword=pa2\n")
        #expect(try helper("erase", "protocol=https\nhost=h.example\nusername=alice\n").status == 0)
        try expectGet("protocol=https\nhost=h.example\nusername=alice\n", "")
        try expectGet("protocol=https\nhost=h.example\nusername=bob b/ob\n", "username=bob b/ob\npassword=pb\n")

        // A free shared slot is used again by the next new username.
        #expect(try helper("store", "protocol=https\nhost=h.example\nusername=dave\npassword=pd\n").status == 0)
        #expect(try list().contains("credential/https://h.example:443/git/username\n"))

        // erase without a username: every credential of the host (git's "forget host").
        #expect(try helper("erase", "protocol=https\nhost=h.example\n").status == 0)
        #expect(try list() == "")
    }

    @Test func preEncodedCredentialsOnlyForCallersThatAnnounceAuthtype() throws {
        try box.initVault()
        let bearer = "capability[]=authtype\nprotocol=https\nhost=api.example\nauthtype=Bearer\ncredential=tok/en=\n"
        #expect(try helper("store", bearer).status == 0)
        #expect(try list() == "credential/https://api.example:443/git%21/authtype\ncredential/https://api.example:443/git%21/credential\n")
        try expectGet("capability[]=authtype\nprotocol=https\nhost=api.example\n",
            "capability[]=authtype\nauthtype=Bearer\ncredential=tok/en=\n")
        try expectGet("protocol=https\nhost=api.example\n", "")  // no capability: nothing

        // ephemeral: not stored (a username/password next to it would be).
        #expect(try helper("store", "capability[]=authtype\nprotocol=https\nhost=e.example\nauthtype=Digest\ncredential=x\nephemeral=1\n").status == 0)
        #expect(!(try list().contains("e.example")))

        // erase names the credential it means; another one removes nothing.
        #expect(try helper("erase", "capability[]=authtype\nprotocol=https\nhost=api.example\nauthtype=Bearer\ncredential=other\n").status == 0)
        #expect(try list().contains("api.example"))
        #expect(try helper("erase", bearer).status == 0)
        #expect(try list() == "")
    }

    @Test func urlStandsForItsPartsAsGitReadsIt() throws {
        try box.initVault()
        let store = try helper("store", "url=https://b%40b:p%3Aw%25@Git.Example.com:8443/org/repo.git\n")
        #expect(store.status == 0 && store.stderr == "", "store: \(store.stderr)")
        #expect(try list() == """
            credential/https://git.example.com:8443/git%2Forg%2Frepo.git/password
            credential/https://git.example.com:8443/git%2Forg%2Frepo.git/username

            """)
        try expectGet("protocol=https\nhost=git.example.com:8443\npath=org/repo.git\n", "username=b@b\npassword=p:w%\n")
        // url= clears what came before it; keys after it override its parts.
        try expectGet("username=eve\nurl=https://git.example.com:8443/org/repo.git\n", "username=b@b\npassword=p:w%\n")
        try expectGet("url=https://git.example.com:8443/org/repo.git\npath=other.git\n", "")
        // get without the path finds nothing; erase without a path forgets the host's credentials of every path.
        try expectGet("protocol=https\nhost=git.example.com:8443\n", "")
        #expect(try helper("erase", "protocol=https\nhost=git.example.com:8443\npath=other.git\n").status == 0)
        #expect(try list().contains("repo.git"))
        #expect(try helper("erase", "protocol=https\nhost=git.example.com:8443\n").status == 0)
        #expect(try list() == "")
    }

    /// git's CVE-2020-5260 class and hosts a URL parser would read as another host: refused, nothing stored or
    /// returned, exit 64, the key named and no value repeated.
    @Test func refusedRequestsStoreNothingAnywhere() throws {
        try box.initVault()
        #expect(try helper("store", "protocol=https\nhost=h.example\nusername=bob\npassword=pw\n").status == 0)
        let before = try list()

        let cases: [(request: String, message: String)] = [
            ("protocol=https\nhost=h.example\nusername=bob\npassword=p\u{0}w\n",
             "vault: credential: request refused: the line of 'password' contains a NUL\n"),
            ("protocol=https\nhost=evil.example\u{0}h.example\nusername=bob\npassword=pw\n",
             "vault: credential: request refused: the line of 'host' contains a NUL\n"),
            ("protocol=https\nhost=h.example\nusername=bob\rhost=evil.example\npassword=pw\n",
             "vault: credential: request refused: the line of 'username' contains a carriage return\n"),
            ("url=https://evil.example%0ahost=h.example/\nusername=bob\npassword=pw\n",
             "vault: credential: request refused: the line of 'url' contains a NUL, newline or carriage return (decoded)\n"),
        ] + [
            "evil.example#@h.example", "evil.example/h.example", "bob@evil.example", "evil.example?h.example",
            "evil.example:443@h.example", "evil%2eexample", "h.example:0", "h.example:65536", "h.example:", "[::1",
            "évil.example", "evil.example h.example", "evil.example\\@h.example",
        ].map { host in
            ("protocol=https\nhost=\(host)\nusername=bob\npassword=pw\n",
             "vault: credential: request refused: 'host' is not exactly a host name or address and an optional port\n")
        }
        for (request, message) in cases {
            for operation in ["store", "get", "erase"] {
                let result = try helper(operation, request)
                #expect(result.status == 64, "\(operation) \(request.debugDescription): exit \(result.status)")
                #expect(result.stdout.isEmpty)
                #expect(result.stderr == message, "\(operation) \(request.debugDescription)")
            }
        }
        #expect(try list() == before)

        // A stored value that would break git's lines is not printed (written around the helper).
        let put = try box.vault(["put", "credential/https://n.example:443/git/username"], stdin: Data("bob\nhost=evil".utf8))
        #expect(put.status == 0)
        #expect(try box.vault(["put", "credential/https://n.example:443/git/password"], stdin: Data("pw".utf8)).status == 0)
        let get = try helper("get", "protocol=https\nhost=n.example\n")
        #expect(get.status == 1)
        #expect(get.stdout.isEmpty)
        #expect(get.stderr == "vault: credential: the stored 'username' contains a newline, carriage return or NUL; not returned\n")
    }

    // MARK: - git's own helper test suite

    /// `../shared/peer-tests/git/run-t0303.sh` next to the repository (or `$VAULT_PEER_TESTS/git/run-t0303.sh`).
    static var t0303Script: String {
        let environment = ProcessInfo.processInfo.environment
        if let root = environment["VAULT_PEER_TESTS"], !root.isEmpty { return root + "/git/run-t0303.sh" }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return repository.deletingLastPathComponent().appendingPathComponent("shared/peer-tests/git/run-t0303.sh").path
    }

    static var t0303IsPresent: Bool { FileManager.default.isExecutableFile(atPath: t0303Script) }

    /// t/t0303-credential-external.sh of the installed git's sources, with the timeout tests, against
    /// `vault credential --passphrase-file P` (git builds its test-tool once into the cache: ~3 minutes).
    ///
    /// On a clone without the peer tests (the README's test command on any machine) it is skipped, saying how to get
    /// them; only under CI (`CI=true`) is their absence a failure.
    @Test(.enabled(
        if: t0303IsPresent || ProcessInfo.processInfo.environment["CI"] == "true",
        "git's helper test suite is absent: put the peer tests (git/run-t0303.sh and git-VERSION.tar.xz of the installed git's sources) in ../shared/peer-tests next to the repository, or set VAULT_PEER_TESTS"))
    func gitsOwnHelperTestSuitePasses() throws {
        let script = Self.t0303Script
        guard Self.t0303IsPresent else {
            Issue.record("git's helper test suite is missing under CI: no executable \(script) (the peer tests live in ../shared/peer-tests next to the repository, or set VAULT_PEER_TESTS)")
            return
        }
        try box.initVault()
        let environment = ProcessInfo.processInfo.environment
        let cache = environment["GIT_T0303_CACHE"]
            ?? (environment["XDG_CACHE_HOME"] ?? ((environment["HOME"] ?? NSTemporaryDirectory()) + "/.cache")) + "/git-t0303"
        // git's test-lib resets HOME and most of the environment: the helper gets its settings on its command line.
        let helper = [
            "/usr/bin/env", "VAULT_PATH=\(box.vaultPath)", "VAULT_TESTING_INSECURE_KDF=1",
            "VAULT_AGENT_SOCK=/nonexistent/vault-tests/agent.sock", "XDG_STATE_HOME=\(box.directory)/state",
            CLI.vault, "credential", "--passphrase-file", box.passphraseFile,
        ]
        let result = try CLI.exec(
            script, helper,
            environment: ["GIT_T0303_CACHE": cache, "GIT_TEST_CREDENTIAL_HELPER_TIMEOUT": "t0303helper --timeout=1"],
            timeout: 900)
        let tail = result.stdoutText.split(separator: "\n").suffix(3).joined(separator: "\n")
        #expect(result.status == 0, "t0303: exit \(result.status)\n\(result.stdoutText)\n\(result.stderr)")
        #expect(tail.contains("# passed all 13 test(s)"), "t0303 ended with: \(tail)")
        #expect(result.stdoutText.contains("ok 13 - helper (t0303helper --timeout=1) times out"))
        print("t0303: \(tail.split(separator: "\n").first { $0.hasPrefix("# passed") || $0.hasPrefix("# failed") } ?? "")")
        #expect(try list() == "", "t0303 left credentials behind")
    }
}

/// Real git, on a terminal, with the vault locked in the agent: `credential.interactive=false` gets no prompt
/// (and a clear line), the default gets one passphrase prompt.
@Suite(.processTimeLimit) struct GitInteractiveTests {
    static let request = "protocol=https\nhost=git.example.com\n\n"

    /// `git credential fill` on a pseudo-terminal, its request piped in, askpass answering git's own questions.
    static func fill(_ box: AgentBox, config: [String], steps: [(String, String)]) throws -> CLIResult {
        let askpass = box.directory + "/askpass"
        FileManager.default.createFile(
            atPath: askpass, contents: Data("#!/bin/sh\necho askpass-answer\n".utf8), attributes: [.posixPermissions: 0o700])
        var environment = box.environment
        environment["HOME"] = box.directory
        environment["GIT_CONFIG_GLOBAL"] = box.directory + "/gitconfig"
        environment["GIT_CONFIG_NOSYSTEM"] = "1"
        environment["GIT_ASKPASS"] = askpass
        let options = (["credential.helper=!'\(CLI.vault)' credential"] + config).map { "-c \"\($0)\"" }.joined(separator: " ")
        let script = "printf '\(request.replacingOccurrences(of: "\n", with: "\\n"))' | git \(options) credential fill; echo \"[exit $?]\""
        return try PseudoTerminal.run(
            "/bin/sh", ["-c", script], steps: steps.map { ($0.0, $0.1, nil) }, environment: environment,
            seconds: 30, timeout: 60)
    }

    @Test func credentialInteractiveFalseNeverPrompts() throws {
        let box = try AgentBox()
        defer { AgentClientTests.stopAgent(box) }
        try box.initVault()
        try box.unlock()
        let approve = try AgentClientTests.git(
            box, ["credential", "approve"], stdin: "protocol=https\nhost=git.example.com\nusername=bob\npassword=pw\n\n")
        #expect(approve.status == 0, "approve: \(approve.stderr)")
        #expect(try box.vault(["lock", "--all"]).status == 0)

        let started = monotonicNow()
        let quiet = try Self.fill(box, config: ["credential.interactive=false"], steps: [])
        #expect(quiet.status == 0, "driver: \(quiet.stderr)")
        #expect(quiet.stdoutText == """
            vault: credential: the vault is locked and git's credential.interactive is false; not asking
            hint: run 'vault unlock' once
            protocol=https
            host=git.example.com
            username=askpass-answer
            password=askpass-answer
            [exit 0]
            [echo on]

            """, "transcript: \(quiet.stdoutText)")
        #expect(monotonicNow() - started < 10)
        #expect(try box.status()?.vaults == [])

        // The default: one passphrase prompt on the terminal, which unlocks the vault in the agent.
        let asked = try Self.fill(box, config: [], steps: [("Vault passphrase for", box.passphrase + "\n")])
        #expect(asked.status == 0, "driver: \(asked.stderr)")
        #expect(asked.stdoutText == "\(answeredPassphrasePrompt(box.vaultPath, home: box.directory, caller: "git credential helper"))\nprotocol=https\nhost=git.example.com\nusername=bob\npassword=pw\n[exit 0]\n[echo on]\n",
            "transcript: \(asked.stdoutText)")
        #expect(try box.status()?.vaults.map(\.path) == [box.vaultPath])
    }
}
