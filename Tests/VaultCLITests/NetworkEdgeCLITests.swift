import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import VaultTestSupport

/// The network edges of `vault login`, `fetch` and `device` through the built binaries (issue 11, items 13–18):
/// TLS with a private CA and pins against a real nginx, a whole-exchange timeout against a trickling server,
/// proxies from the environment, redirects to another origin, bodies too large to buffer, and a 401 on the
/// registration check. Every process runs without a terminal (`setsid`).
@Suite(.serialized, .processTimeLimit) struct NetworkEdgeCLITests {
    /// The request log of the Python counting server: method, target, path and header fields (names lower case).
    struct LoggedRequest: Decodable, Equatable {
        let method: String
        let target: String
        let path: String
        let headers: [String: String]
    }

    static func log(_ server: PythonServer) async throws -> [LoggedRequest] {
        var request = URLRequest(url: URL(string: server.origin + "/_control/log")!)
        request.timeoutInterval = 10
        let (data, _) = try await URLSession.shared.data(for: request)
        return try JSONDecoder().decode([LoggedRequest].self, from: data)
    }

    static func passwordFile(_ box: Sandbox, _ password: String) throws -> String {
        let path = box.directory + "/password"
        try box.write(password + "\n", to: path)
        return path
    }

    // MARK: - 13: TLS

    static let tlsHint = "hint: TLS: if the server's certificate comes from a private CA, pass that CA's certificate "
        + "with --cacert PATH (PEM); check that the URL's host is one the certificate names\n"

    @Test func privateCAIsRefusedUntilCacertThenPinsNarrowIt() throws {
        let certificates = try TestCertificates()
        let nginx = try NginxFixture(users: ["alice": "correct horse"], tls: certificates)
        let box = try Sandbox()
        try box.initVault()
        let url = nginx.url("/private/")
        let password = try Self.passwordFile(box, "correct horse")
        let login = ["login", url, "--username", "alice", "--password-file", password]

        // Untrusted: refused before anything is sent (nginx logs no request), nothing stored.
        let untrusted = try box.vault(login)
        #expect(untrusted.status == 1)
        #expect(untrusted.stdout.isEmpty)
        #expect(untrusted.stderr == """
            vault: TLS connection to '\(url)' failed: the server's certificate is not trusted (it is not signed by \
            a trusted CA, or it expired); nothing was sent

            """ + Self.tlsHint)
        let json = try box.vault(login + ["--json"])
        #expect(json.status == 1)
        #expect(json.stderr.hasPrefix(#"{"error":{"code":"tls_error","exit_code":1,"hint":"TLS: "#))
        #expect(nginx.accessLog() == [])
        #expect(try box.vault(["list"]).stdoutText == "")

        // --cacert: the CA is trusted besides the system's roots.
        let trusted = try box.vault(login + ["--cacert", certificates.caCertificate])
        #expect(trusted.status == 0)
        #expect(trusted.stdoutText == "logged in to \(nginx.origin) (realm \"Vault Test\") as 'alice'\n")
        #expect(trusted.stderr == "")
        #expect(nginx.accessLog() == ["401 - /private/", "200 alice /private/"])
        let fetched = try box.vault(["fetch", url, "--cacert", certificates.caCertificate])
        #expect(fetched.status == 0)
        #expect(fetched.stdoutText == "secret area\n")

        // A wrong pin: refused after the handshake, before the request.
        let wrongPin = try box.vault(["fetch", url, "--cacert", certificates.caCertificate, "--pinned-pubkey", certificates.otherPin])
        #expect(wrongPin.status == 1)
        #expect(wrongPin.stdout.isEmpty)
        #expect(wrongPin.stderr == """
            vault: TLS connection to '\(url)' refused: the server's public key does not match the pinned key; \
            nothing was sent
            hint: TLS: the server presented another key than --pinned-pubkey names; if its key was replaced on \
            purpose, pin the new one

            """)
        // The right pin, alone or among others (curl's ';' list).
        let rightPin = try box.vault(["fetch", url, "--cacert", certificates.caCertificate, "--pinned-pubkey", certificates.serverPin])
        #expect(rightPin.status == 0)
        #expect(rightPin.stdoutText == "secret area\n")
        let list = try box.vault([
            "fetch", url, "--cacert", certificates.caCertificate,
            "--pinned-pubkey", certificates.otherPin + ";" + certificates.serverPin,
        ])
        #expect(list.status == 0)
        // A pin never replaces verification: the right pin without the CA is still untrusted.
        let pinOnly = try box.vault(["fetch", url, "--pinned-pubkey", certificates.serverPin])
        #expect(pinOnly.status == 1)
        #expect(pinOnly.stderr.hasPrefix("vault: TLS connection to '\(url)' failed: the server's certificate is not trusted"))
        // Two fetches with the right pin (2 lines each); the refused ones sent nothing.
        #expect(nginx.accessLog().count == 2 + 2 + 2 + 2)
    }

    @Test(arguments: [
        (["--pinned-pubkey", "abc"], "vault: invalid TLS option: a pinned public key is 'sha256//' followed by the base64 SHA-256 of the key\n"),
        (["--pinned-pubkey", "sha256//AAAA"], "vault: invalid TLS option: a pinned public key's base64 does not decode to a 32-byte SHA-256 digest\n"),
        (["--cacert", "/nonexistent/ca.pem"], "vault: invalid TLS option: cannot read the CA certificate file '/nonexistent/ca.pem'\n"),
    ])
    func malformedTLSOptionsAreUsageErrors(arguments: [String], message: String) throws {
        let box = try Sandbox()
        try box.initVault()
        let result = try box.vault(["fetch", "https://127.0.0.1:9/"] + arguments)
        #expect(result.status == 64)
        #expect(result.stderr == message)
    }

    @Test func aFileWithoutACertificateIsRefusedAsCacert() throws {
        let box = try Sandbox()
        try box.initVault()
        let notPEM = box.directory + "/not.pem"
        try box.write("not a certificate\n", to: notPEM)
        let result = try box.vault(["fetch", "https://127.0.0.1:9/", "--cacert", notPEM])
        #expect(result.status == 64)
        #expect(result.stderr == "vault: invalid TLS option: '\(notPEM)' holds no PEM certificate\n")
    }

    @Test func deviceRegistrationOverHTTPSThroughNginx() async throws {
        let certificates = try TestCertificates()
        let box = try Sandbox()
        try box.initVault()
        let emulator = try EmulatorProcess(directory: box.directory)
        defer { emulator.stop() }
        let nginx = try NginxFixture(users: [:], tls: certificates, proxyTo: emulator.port)
        let server = nginx.origin
        let password = try Self.passwordFile(box, DeviceCLITests.password)
        let register = [
            "device", "register", "--server", server, "--app-id", DeviceCLITests.appId, "--username", "alice",
            "--password-file", password,
        ]

        let untrusted = try box.vault(register)
        #expect(untrusted.status == 1)
        #expect(untrusted.stderr.hasPrefix("vault: TLS connection to '\(server)/odata/applications/latest/\(DeviceCLITests.appId)/Connections' failed: the server's certificate is not trusted"))
        #expect(try await emulator.stats() == [:])
        #expect(try box.vault(["list"]).stdoutText == "")

        let registered = try box.vault(register + ["--cacert", certificates.caCertificate])
        #expect(registered.status == 0)
        #expect(registered.stdoutText == "registered with \(server) (application \(DeviceCLITests.appId)) as alice\n")
        #expect(registered.stderr == "")
        let appcid = try box.vault(["get", "appcid"]).stdoutText
        #expect(try await emulator.connectionIds() == [appcid])

        let status = try box.vault(["device", "status", "--cacert", certificates.caCertificate, "--pinned-pubkey", certificates.serverPin])
        #expect(status.status == 0)
        #expect(status.stdoutText == "registered with \(server) (application \(DeviceCLITests.appId))\n")
        let wrongPin = try box.vault(["device", "status", "--cacert", certificates.caCertificate, "--pinned-pubkey", certificates.otherPin])
        #expect(wrongPin.status == 1)
        #expect(wrongPin.stderr.hasPrefix("vault: TLS connection to '\(server)/\(DeviceCLITests.appId)' refused: the server's public key does not match the pinned key"))

        // The DemoApp takes the same options.
        let demo = try CLI.exec(
            CLI.binDirectory.appendingPathComponent("DemoApp").path,
            ["--passphrase-file", box.passphraseFile, "--cacert", certificates.caCertificate],
            environment: box.environment)
        #expect(demo.status == 0)
        #expect(demo.stdoutText == DeviceCLITests.agenciesTable)
        #expect(demo.stderr == "registration with \(server) verified\n")
    }

    // MARK: - 14: the whole exchange is bounded

    @Test func aTricklingBodyEndsAtTheTimeout() throws {
        let server = try PythonServer(.counting)
        let box = try Sandbox()
        try box.initVault()
        let url = server.origin + "/trickle?bytes=100"  // one byte every 0.5 s: 50 s in all
        let start = Date()
        let result = try box.vault(["fetch", url, "--allow-insecure-http", "--timeout", "2"])
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed < 20, "took \(elapsed) s")
        #expect(result.status == 1)
        // The body is streamed: what arrived before the deadline was written (as curl --max-time does).
        #expect(result.stdout.count <= 6 && result.stdout.allSatisfy { $0 == UInt8(ascii: "x") })
        #expect(result.stderr == """
            vault: request to '\(url)' timed out: no complete answer within 2 s
            hint: raise --timeout, or check that the server is responding

            """)
    }

    @Test func aTricklingRegistrationEndsAtTheTimeout() throws {
        let server = try PythonServer(.counting)
        let box = try Sandbox()
        try box.initVault()
        let password = try Self.passwordFile(box, "pw")
        let start = Date()
        let result = try box.vault([
            "device", "register", "--server", server.origin, "--app-id", "trickle", "--username", "alice",
            "--password-file", password, "--allow-insecure-http", "--timeout", "2",
        ])
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed < 20, "took \(elapsed) s")
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix(
            "vault: request to '\(server.origin)/odata/applications/latest/trickle/Connections' timed out: no complete answer within 2 s\n"))
        #expect(try box.vault(["list"]).stdoutText == "")
    }

    // MARK: - 15: proxies in the environment are not used

    @Test func proxyVariablesAreIgnoredCredentialsGoStraightToTheServer() async throws {
        let proxy = try PythonServer(.counting)  // logs whatever reaches it, CONNECT included
        let certificates = try TestCertificates()
        let plain = try NginxFixture(users: ["alice": "correct horse"])
        let tls = try NginxFixture(users: ["alice": "correct horse"], tls: certificates)
        let box = try Sandbox()
        try box.initVault()
        let password = try Self.passwordFile(box, "correct horse")
        var environment: [String: String] = [:]
        for name in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"] {
            environment[name] = proxy.origin
        }
        let overHTTP = try box.vault(
            ["login", plain.url("/private/"), "--username", "alice", "--password-file", password, "--allow-insecure-http"],
            extraEnvironment: environment)
        #expect(overHTTP.status == 0)
        let overHTTPS = try box.vault(
            ["login", tls.url("/private/"), "--username", "alice", "--password-file", password,
             "--cacert", certificates.caCertificate],
            extraEnvironment: environment)
        #expect(overHTTPS.status == 0)
        #expect(plain.accessLog() == ["401 - /private/", "200 alice /private/"])
        #expect(tls.accessLog() == ["401 - /private/", "200 alice /private/"])
        #expect(try await Self.log(proxy) == [])
    }

    // MARK: - 16: nothing origin-bound follows a redirect to another origin

    @Test func headersFollowSameOriginRedirectsOnly() async throws {
        let first = try PythonServer(.counting)
        let second = try PythonServer(.counting)
        let box = try Sandbox()
        try box.initVault()
        let headers = ["--header", "X-Api-Key: k-123", "--header", "Cookie: session=abc", "--header", "Accept: text/plain"]

        let same = try box.vault(["fetch", first.origin + "/redirect?to=%2Fheaders", "--allow-insecure-http"] + headers)
        #expect(same.status == 0)
        #expect(same.stdoutText == "ok")
        let firstLog = try await Self.log(first)
        #expect(firstLog.map(\.target) == ["/redirect?to=%2Fheaders", "/headers"])
        #expect(firstLog[1].headers["x-api-key"] == "k-123")
        #expect(firstLog[1].headers["cookie"] == "session=abc")

        let cross = try box.vault(["fetch", first.origin + "/redirect-to/\(second.port)/x", "--allow-insecure-http"] + headers)
        #expect(cross.status == 0)
        #expect(cross.stdoutText == "ok")
        let secondLog = try await Self.log(second)
        #expect(secondLog.map(\.target) == ["/headers"])
        #expect(secondLog[0].headers["x-api-key"] == nil)
        #expect(secondLog[0].headers["cookie"] == nil)
        #expect(secondLog[0].headers["authorization"] == nil)
        #expect(secondLog[0].headers["accept"] == "text/plain")
        #expect(try await Self.log(first).last?.headers["x-api-key"] == "k-123")  // the origin itself had it
    }

    @Test func aCrossOriginRedirectOfTheRegistrationCheckIsAFailure() async throws {
        let first = try PythonServer(.counting)
        let second = try PythonServer(.counting)
        let box = try Sandbox()
        try box.initVault()
        // A registration whose server redirects the check (GET {server}/{appid}) to another origin.
        for (key, value) in [
            ("appcid", "secret-appcid"), ("mobileservices.server", first.origin + "/redirect-to/\(second.port)"),
            ("mobileservices.appid", "app"),
        ] {
            #expect(try box.vault(["put", key], stdin: Data(value.utf8)).status == 0)
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let status = try box.vault(["device", "status", "--allow-insecure-http"])
        #expect(status.status == 1)
        #expect(status.stdout.isEmpty)
        #expect(status.stderr == """
            vault: not following the redirect from '\(first.origin)/redirect-to/\(second.port)/app' to \
            '\(second.origin)/headers': it leads to another origin
            hint: request '\(second.origin)/headers' directly if you trust it

            """)
        #expect(try await Self.log(first).map { $0.headers["x-smp-appcid"] } == ["secret-appcid"])
        #expect(try await Self.log(second) == [])  // the appcid went nowhere else
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)
    }

    // MARK: - 17: bodies

    @Test func fetchStreamsALargeBodyInBoundedMemory() throws {
        let server = try PythonServer(.counting)
        let box = try Sandbox()
        try box.initVault()
        let size = 256 << 20
        // Python runs vault, counts what it writes, and reports its peak RSS (KiB) once it was waited for.
        let script = """
            import resource, subprocess, sys
            p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            n = 0
            while True:
                chunk = p.stdout.read(1 << 20)
                if not chunk:
                    break
                n += len(chunk)
            print(p.wait(), n, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
            """
        let result = try CLI.exec(
            "/usr/bin/env",
            ["python3", "-c", script, CLI.vault, "fetch", server.origin + "/big?bytes=\(size)", "--allow-insecure-http",
             "--passphrase-file", box.passphraseFile],
            environment: box.environment, timeout: 120)
        let fields = result.stdoutText.split(separator: " ").map { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        #expect(fields.count == 3)
        guard fields.count == 3, let status = fields[0], let count = fields[1], let peakKiB = fields[2] else { return }
        #expect(status == 0)
        #expect(count == size)
        #expect(peakKiB < 128 << 10, "peak RSS \(peakKiB) KiB for a \(size >> 20) MiB body")
    }

    @Test func aFullStdoutIsReportedAsSuchNotAsANetworkFailure() throws {
        let server = try PythonServer(.counting)
        let box = try Sandbox()
        try box.initVault()
        let result = try CLI.shell(
            #""$VAULT" fetch "$URL" --allow-insecure-http --passphrase-file "$P" >/dev/full"#,
            environment: box.environment.merging(
                ["URL": server.origin + "/big?bytes=1048576", "P": box.passphraseFile]) { $1 })
        #expect(result.status == 1)
        #expect(result.stderr == "vault: cannot write 'stdout': No space left on device\n")
    }

    @Test func aRegistrationAnswerLargerThanTheCapIsRefused() throws {
        let server = try PythonServer(.scriptedLongRegistration(status: 201, idLength: 2 << 20))
        let box = try Sandbox()
        try box.initVault()
        let password = try Self.passwordFile(box, "pw")
        let result = try box.vault([
            "device", "register", "--server", server.origin, "--app-id", "app", "--username", "alice",
            "--password-file", password, "--allow-insecure-http",
        ])
        #expect(result.status == 1)
        #expect(result.stderr == """
            vault: the answer of '\(server.origin)/odata/applications/latest/app/Connections' is larger than 1048576 \
            bytes, the most that is read

            """)
        #expect(try box.vault(["list"]).stdoutText == "")
    }

    // MARK: - 18: a 401 on the registration check keeps the credentials

    @Test func a401OnTheRegistrationCheckKeepsTheCredentialsAndSaysSo() async throws {
        let (box, passwordFile) = try DeviceCLITests.makeBox()
        let emulator = try EmulatorProcess(directory: box.directory)
        defer { emulator.stop() }
        #expect(try DeviceCLITests.register(box, emulator, passwordFile: passwordFile).status == 0)
        // The password changed on the server: the stored one is now wrong.
        let space = "credential/\(emulator.server)/mobile-services/"
        #expect(try box.vault(["put", space + "password"], stdin: Data("old-password".utf8)).status == 0)
        let keys = try DeviceCLITests.keys(box)

        let status = try box.vault(["device", "status", "--allow-insecure-http"])
        #expect(status.status == 3)
        #expect(status.stdout.isEmpty)
        #expect(status.stderr == """
            vault: stored credential rejected: the server at \(emulator.server) (realm "mobile-services") rejected \
            the stored password for 'alice'; it is kept in the vault
            hint: run the command again on a terminal to enter the new password

            """)
        #expect(try DeviceCLITests.keys(box) == keys)
        #expect(try box.vault(["get", space + "username"]).stdoutText == "alice")
        #expect(try box.vault(["get", space + "password"]).stdoutText == "old-password")
        #expect(try box.vault(["get", "appcid"]).status == 0)
    }
}
