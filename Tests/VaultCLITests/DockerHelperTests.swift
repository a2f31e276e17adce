import Foundation
import Testing
import VaultTestSupport

/// `docker-credential-vault` (a symbolic link to `vault`): the protocol of docker-credential-helpers driven
/// directly, then end to end with a real registry (Debian's `docker-registry`, distribution 2.8, htpasswd auth,
/// TLS from a CA made here with openssl) and a real client (`skopeo`, containers/image, through `credHelpers`).
@Suite(.processTimeLimit) struct DockerHelperTests {
    static let notFound = "credentials not found in native keychain\n"

    /// A directory with `docker-credential-vault` → `vault` (as scripts/install links it; or `vault-net`), to put
    /// first on PATH.
    static func helperDirectory(in directory: String, target: String = CLI.vault) throws -> String {
        let bin = directory + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin + "/docker-credential-vault", withDestinationPath: target)
        return bin
    }

    /// Runs `docker-credential-vault ACTION` through `box`'s agent (no passphrase source).
    static func helper(_ box: AgentBox, _ bin: String, _ action: [String], stdin: String) throws -> AgentRun {
        try AgentCLI.exec(
            bin + "/docker-credential-vault", action, stdin: Data(stdin.utf8), environment: box.environment)
    }

    @Test func protocolAsDockerCredentialHelpersDefinesIt() throws {
        let box = try AgentBox()
        defer { AgentClientTests.stopAgent(box) }
        let bin = try Self.helperDirectory(in: box.directory)
        func run(_ action: String, _ stdin: String = "") throws -> AgentRun {
            try Self.helper(box, bin, [action], stdin: stdin)
        }

        // No vault yet: get and list need no passphrase and find nothing; store names the missing vault.
        let none = try run("get", "registry.example\n")
        #expect(none.status == 1 && none.stdoutText == Self.notFound && none.stderr == "", "get: \(none.stdoutText)")
        let emptyList = try run("list")
        #expect(emptyList.status == 0 && emptyList.stdoutText == "{}\n")

        try box.initVault()
        try box.unlock()
        let store = try run("store", #"{"ServerURL":"https://Registry.example:5000/v2/","Username":"bob","Secret":"s3\"cr<et>\u00e9"}"#)
        #expect(store.status == 0 && store.stdout.isEmpty && store.stderr == "", "store: \(store.stdoutText) \(store.stderr)")
        let token = try run("store", "{\n  \"ServerURL\": \"localhost:5001\",\n  \"Username\": \"<token>\",\n  \"Secret\": \"id-token\"\n}\n")
        #expect(token.status == 0, "store token: \(token.stdoutText)")
        // One entry per registry (issue 35 §4), named by its host and port, the server URL a field of it.
        #expect(try box.vault(["list"]).stdoutText == "docker/Registry.example:5000\ndocker/localhost:5001\n")
        let shown = try box.vault(["get", "docker/Registry.example:5000", "--field", "server_url"])
        #expect(shown.status == 0 && shown.stdoutText == "https://Registry.example:5000/v2/", "\(shown.stderr)")
        let username = try box.vault(["get", "docker/Registry.example:5000", "--field", "username"])
        #expect(username.stdoutText == "bob", "\(username.stderr)")

        // get: Go's encoding/json shape and escaping, the server URL as stored, white space around the input trimmed.
        let get = try run("get", "  https://Registry.example:5000/v2/\n")
        #expect(get.status == 0 && get.stderr == "")
        #expect(get.stdoutText == #"{"ServerURL":"https://Registry.example:5000/v2/","Username":"bob","Secret":"s3\"cr\u003cet\u003eé"}"# + "\n")
        let tokenGet = try run("get", "localhost:5001")
        #expect(tokenGet.stdoutText == #"{"ServerURL":"localhost:5001","Username":"\u003ctoken\u003e","Secret":"id-token"}"# + "\n")
        // Another spelling of a server URL is another entry, as for the other helpers.
        let other = try run("get", "registry.example:5000")
        #expect(other.status == 1 && other.stdoutText == Self.notFound)

        let list = try run("list")
        #expect(list.status == 0 && list.stderr == "")
        #expect(list.stdoutText == #"{"https://Registry.example:5000/v2/":"bob","localhost:5001":"\u003ctoken\u003e"}"# + "\n")

        // Failures: one line on stdout, exit 1.
        for (action, input, message) in [
            ("store", #"{"ServerURL":"","Username":"bob","Secret":"x"}"#, "no credentials server URL\n"),
            ("store", #"{"ServerURL":"r.example","Secret":"x"}"#, "no credentials username\n"),
            ("store", #"{"ServerURL":"r.example","Username":"bob","Secret":"x""#, "the input is not a JSON object of strings\n"),
            ("store", #"{"ServerURL":"evil.example#@r.example","Username":"bob","Secret":"x"}"#,
             "not a registry server URL (scheme://host[:port][/path]): 'evil.example#@r.example'\n"),
            ("store", #"{"ServerURL":"ftp://r.example","Username":"bob","Secret":"x"}"#,
             "not a registry server URL (scheme://host[:port][/path]): 'ftp://r.example'\n"),
            ("get", "\n", "no credentials server URL\n"),
            ("erase", "nowhere.example", Self.notFound),
            ("frobnicate", "", "Unknown credential action `frobnicate`\n"),
        ] {
            let result = try run(action, input)
            #expect(result.status == 1, "\(action) \(input): exit \(result.status)")
            #expect(result.stdoutText == message, "\(action) \(input)")
            #expect(result.stderr == "")
        }

        let erase = try run("erase", "localhost:5001\n")
        #expect(erase.status == 0 && erase.stdout.isEmpty, "erase: \(erase.stdoutText)")
        #expect(try run("get", "localhost:5001").stdoutText == Self.notFound)
        // vault logout of the registry's origin removes the helper's entries too.
        #expect(try box.vault(["logout", "https://registry.example:5000"]).status == 0)
        #expect(try run("list").stdoutText == "{}\n")

        // The same through a link to vault-net (what scripts/install linked before the helpers moved into vault).
        let netBin = try Self.helperDirectory(in: box.directory + "/net", target: CLI.binDirectory.appendingPathComponent("vault-net").path)
        #expect(try Self.helper(box, netBin, ["store"], stdin: #"{"ServerURL":"r.example","Username":"u","Secret":"p"}"#).status == 0)
        #expect(try Self.helper(box, netBin, ["list"], stdin: "").stdoutText == #"{"r.example":"u"}"# + "\n")
    }

    /// Logins stored before one entry per registry (two percent-encoded entries each, as `VaultCredentialStore`
    /// kept them) are answered by `get` and `list` where they are, and moved into their registry's entry by the next
    /// `store` of that server URL (one write); `erase` removes one not moved yet.
    @Test func twoEntryLoginsAreReadAndMovedByTheNextStore() throws {
        let box = try AgentBox()
        defer { AgentClientTests.stopAgent(box) }
        let bin = try Self.helperDirectory(in: box.directory)
        func run(_ action: String, _ stdin: String = "") throws -> AgentRun {
            try Self.helper(box, bin, [action], stdin: stdin)
        }
        try box.initVault()
        try box.unlock()
        // As an earlier version stored `{"ServerURL":"https://index.docker.io/v1/","Username":"alice",...}` and one for r.example.
        let old = "credential/https://index.docker.io:443/docker%2Fhttps%3A%2F%2Findex.docker.io%2Fv1%2F/"
        let other = "credential/https://r.example:443/docker%2Fr.example/"
        for (name, value) in [(old + "username", "alice"), (old + "password", "hub-t0k3n"), (other + "username", "carol"), (other + "password", "p")] {
            #expect(try box.vault(["put", name], stdin: Data(value.utf8)).status == 0)
        }
        #expect(try run("list").stdoutText == #"{"https://index.docker.io/v1/":"alice","r.example":"carol"}"# + "\n")
        #expect(try run("get", "https://index.docker.io/v1/").stdoutText
            == #"{"ServerURL":"https://index.docker.io/v1/","Username":"alice","Secret":"hub-t0k3n"}"# + "\n")

        let stored = try run("store", #"{"ServerURL":"https://index.docker.io/v1/","Username":"alice","Secret":"n3w"}"#)
        #expect(stored.status == 0 && stored.stdout.isEmpty, "\(stored.stdoutText)")
        #expect(try box.vault(["list"]).stdoutText == "\(other)password\n\(other)username\ndocker/index.docker.io\n")
        #expect(try run("list").stdoutText == #"{"https://index.docker.io/v1/":"alice","r.example":"carol"}"# + "\n")
        #expect(try run("get", "https://index.docker.io/v1/").stdoutText
            == #"{"ServerURL":"https://index.docker.io/v1/","Username":"alice","Secret":"n3w"}"# + "\n")
        // Another spelling of the same registry: an entry of its own, named apart.
        #expect(try run("store", #"{"ServerURL":"index.docker.io","Username":"bob","Secret":"b"}"#).status == 0)
        #expect(try box.vault(["list"]).stdoutText == "\(other)password\n\(other)username\ndocker/index.docker.io\ndocker/index.docker.io (2)\n")

        let erased = try run("erase", "r.example")
        #expect(erased.status == 0 && erased.stdout.isEmpty, "\(erased.stdoutText)")
        #expect(try run("get", "r.example").stdoutText == Self.notFound)
        #expect(try run("list").stdoutText == #"{"https://index.docker.io/v1/":"alice","index.docker.io":"bob"}"# + "\n")
        let logout = try box.vault(["logout", "https://index.docker.io"])
        #expect(logout.status == 0 && logout.stdoutText == """
            logged out of https://index.docker.io:443 (realm "docker/https://index.docker.io/v1/")
            logged out of https://index.docker.io:443 (realm "docker/index.docker.io")

            """, "\(logout.stderr)")
        #expect(try box.vault(["list"]).stdoutText == "")
    }

    /// `list` never prompts, even on a terminal: with the vault locked it fails at once.
    @Test func listNeverPrompts() throws {
        let box = try AgentBox()
        defer { AgentClientTests.stopAgent(box) }
        try box.initVault()
        let bin = try Self.helperDirectory(in: box.directory)
        let result = try PseudoTerminal.run(
            "/bin/sh", ["-c", "'\(bin)/docker-credential-vault' list; echo \"[exit $?]\""], steps: [],
            environment: box.environment, seconds: 20, timeout: 40)
        #expect(result.stdoutText == """
            the vault '\(box.vaultPath)' is locked (run 'vault unlock'); not asking
            [exit 1]
            [echo on]

            """, "transcript: \(result.stdoutText)")
    }

    // MARK: - a real registry and a real client

    @Test func skopeoLogsInCopiesInspectsAndLogsOutThroughTheHelper() throws {
        guard let skopeo = findTool("skopeo"), let registryTool = findTool("docker-registry"),
              let openssl = findTool("openssl"), let htpasswd = findTool("htpasswd")
        else {
            Issue.record("skopeo, docker-registry, openssl or htpasswd is missing: run scripts/install-deps --test")
            return
        }
        let box = try AgentBox()
        defer { AgentClientTests.stopAgent(box) }
        try box.initVault()
        try box.unlock()
        let registry = try RegistryFixture(
            directory: box.directory + "/registry", registry: registryTool, openssl: openssl, htpasswd: htpasswd,
            user: "alice", password: "registry-pw")
        defer { registry.stop() }
        let bin = try Self.helperDirectory(in: box.directory)

        let authFile = box.directory + "/auth.json"
        let credHelpers = #"{"credHelpers":{"\#(registry.address)":"vault"}}"#
        try Data(credHelpers.utf8).write(to: URL(fileURLWithPath: authFile))
        var environment = box.environment
        environment["PATH"] = bin + ":/usr/local/bin:/usr/bin:/bin"
        environment["HOME"] = box.directory
        func skopeoRun(_ arguments: [String], stdin: String = "") throws -> AgentRun {
            try AgentCLI.exec(skopeo, arguments, stdin: Data(stdin.utf8), environment: environment, timeout: 60)
        }
        let tls = ["--authfile", authFile, "--cert-dir", registry.certDirectory]
        let image = "docker://\(registry.address)/test/hello:1"

        // Without credentials the registry refuses (the control for everything below).
        let anonymous = try skopeoRun(["inspect", "--raw"] + tls + [image])
        #expect(anonymous.status != 0)
        #expect(anonymous.stderr.contains("authentication required") || anonymous.stderr.contains("unauthorized"),
            "anonymous inspect: \(anonymous.stderr)")

        // A wrong password: login fails, nothing stored.
        let wrong = try skopeoRun(["login", "--username", "alice", "--password-stdin"] + tls + [registry.address], stdin: "nope\n")
        #expect(wrong.status != 0, "wrong login: \(wrong.stdoutText)")
        #expect(try box.vault(["list"]).stdoutText == "")

        let login = try skopeoRun(["login", "--username", "alice", "--password-stdin"] + tls + [registry.address], stdin: "registry-pw\n")
        #expect(login.status == 0, "login: \(login.stdoutText) \(login.stderr)")
        #expect(login.stdoutText == "Login Succeeded!\n")
        #expect(try box.vault(["list"]).stdoutText == "docker/\(registry.address)\n")
        // The auth file still holds only the helper's name: the password is in the vault alone.
        let authText = try String(contentsOfFile: authFile, encoding: .utf8)
        #expect(!authText.contains("registry-pw") && !authText.contains("YWxpY2U6cmVnaXN0cnktcHc"), "auth.json: \(authText)")

        let layout = try RegistryFixture.makeOCILayout(in: box.directory + "/image")
        let copy = try skopeoRun(["copy", "--authfile", authFile, "--dest-cert-dir", registry.certDirectory, "oci:\(layout):latest", image])
        #expect(copy.status == 0, "copy: \(copy.stdoutText) \(copy.stderr)")
        let inspect = try skopeoRun(["inspect", "--raw"] + tls + [image])
        #expect(inspect.status == 0, "inspect: \(inspect.stderr)")
        #expect(inspect.stdoutText.contains("\"schemaVersion\": 2") || inspect.stdoutText.contains("\"schemaVersion\":2"),
            "inspect: \(inspect.stdoutText)")

        let logout = try skopeoRun(["logout", "--authfile", authFile, registry.address])
        #expect(logout.status == 0, "logout: \(logout.stdoutText) \(logout.stderr)")
        #expect(try box.vault(["list"]).stdoutText == "")
        let after = try skopeoRun(["inspect", "--raw"] + tls + [image])
        #expect(after.status != 0, "inspect after logout succeeded")
    }
}

/// `docker-registry serve` on 127.0.0.1 with htpasswd (bcrypt) auth and TLS from a CA made with openssl.
final class RegistryFixture: @unchecked Sendable {
    let directory: String
    let port: Int
    let process = Process()
    var address: String { "127.0.0.1:\(port)" }
    /// `ca.crt` for skopeo's `--cert-dir`.
    var certDirectory: String { directory + "/certs" }

    init(directory: String, registry: String, openssl: String, htpasswd: String, user: String, password: String) throws {
        self.directory = directory
        port = try freeTCPPort()
        let fm = FileManager.default
        try fm.createDirectory(atPath: certDirectory, withIntermediateDirectories: true)
        func tool(_ path: String, _ arguments: [String], stdin: Data = Data()) throws {
            let (status, output) = try runTool(path, arguments, stdin: stdin)
            guard status == 0 else { throw TestFailure("\(path) \(arguments.first ?? "") failed: \(output)") }
        }
        let ca = directory + "/ca"
        try tool(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=vault test CA",
                           "-keyout", ca + ".key", "-out", certDirectory + "/ca.crt"])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
            .write(toFile: directory + "/ext.cnf", atomically: true, encoding: .utf8)
        try tool(openssl, ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                           "-keyout", directory + "/server.key", "-out", directory + "/server.csr"])
        try tool(openssl, ["x509", "-req", "-in", directory + "/server.csr", "-CA", certDirectory + "/ca.crt",
                           "-CAkey", ca + ".key", "-CAcreateserial", "-days", "2", "-extfile", directory + "/ext.cnf",
                           "-out", directory + "/server.crt"])
        // distribution accepts bcrypt only; the password goes on stdin.
        try tool(htpasswd, ["-i", "-B", "-c", directory + "/htpasswd", user], stdin: Data((password + "\n").utf8))
        let config = """
            version: 0.1
            log:
              level: error
            storage:
              filesystem:
                rootdirectory: \(directory)/data
            http:
              addr: 127.0.0.1:\(port)
              tls:
                certificate: \(directory)/server.crt
                key: \(directory)/server.key
            auth:
              htpasswd:
                realm: vault-test-registry
                path: \(directory)/htpasswd

            """
        try config.write(toFile: directory + "/config.yml", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: registry)
        process.arguments = ["serve", directory + "/config.yml"]
        process.standardInput = FileHandle.nullDevice
        let log = FileHandle(forWritingAtPath: { fm.createFile(atPath: directory + "/registry.log", contents: nil); return directory + "/registry.log" }())
        process.standardOutput = log
        process.standardError = log
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while !NginxFixture.accepts(port: port) {
            guard process.isRunning, Date() < deadline else {
                let text = (try? String(contentsOfFile: directory + "/registry.log", encoding: .utf8)) ?? ""
                stop()
                throw TestFailure("docker-registry did not start:\n\(text)")
            }
            usleep(50_000)
        }
    }

    deinit { stop() }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitForExit()
        }
    }

    /// A one-layer OCI image layout (tag `latest`) at `path`, made with Python's tarfile and hashlib.
    static func makeOCILayout(in path: String) throws -> String {
        let script = #"""
            import hashlib, io, json, os, sys, tarfile, gzip
            root = sys.argv[1]
            os.makedirs(root + "/blobs/sha256", exist_ok=True)
            def blob(data):
                digest = hashlib.sha256(data).hexdigest()
                open(root + "/blobs/sha256/" + digest, "wb").write(data)
                return {"digest": "sha256:" + digest, "size": len(data)}
            raw = io.BytesIO()
            with tarfile.open(fileobj=raw, mode="w") as tar:
                data = b"hello from vault's registry test\n"
                info = tarfile.TarInfo("hello.txt"); info.size = len(data); info.mtime = 0
                tar.addfile(info, io.BytesIO(data))
            layer = gzip.compress(raw.getvalue(), mtime=0)
            diff_id = "sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()
            config = json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                                 "rootfs": {"type": "layers", "diff_ids": [diff_id]}}).encode()
            manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": dict(blob(config), mediaType="application/vnd.oci.image.config.v1+json"),
                "layers": [dict(blob(layer), mediaType="application/vnd.oci.image.layer.v1.tar+gzip")]}).encode()
            entry = dict(blob(manifest), mediaType="application/vnd.oci.image.manifest.v1+json",
                         annotations={"org.opencontainers.image.ref.name": "latest"})
            json.dump({"schemaVersion": 2, "manifests": [entry]}, open(root + "/index.json", "w"))
            json.dump({"imageLayoutVersion": "1.0.0"}, open(root + "/oci-layout", "w"))
            """#
        let (status, output) = try runTool("/usr/bin/python3", ["-c", script, path])
        guard status == 0 else { throw TestFailure("making the OCI layout failed: \(output)") }
        return path
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
