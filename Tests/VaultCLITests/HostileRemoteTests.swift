import Foundation
import Testing
import VaultTestSupport

/// Issue 33 §5: a remote URL or a remote's answers that try to take a secret elsewhere or exhaust memory.
@Suite(.serialized, .processTimeLimit) struct HostileRemoteTests {
    /// The number of requests a ``PythonServer`` in scripted mode has answered (`GET /_count`).
    static func requestCount(_ server: PythonServer) throws -> String {
        try runTool("/usr/bin/curl", ["-s", server.origin + "/_count"]).1
    }

    /// `bao://A#@B/…`, `bao://A?@B/…` and `bao://USER:PW@A/…` are refused before anything is sent (a server at A
    /// counts no request), with a message that does not repeat the URL (it may hold a password).
    @Test func baoURLsWithUserInfoAQueryOrAFragmentAreRefusedBeforeAnythingIsSent() throws {
        let server = try PythonServer(.scripted(status: 200, body: Data("{}".utf8)))
        defer { server.stop() }
        let box = try Sandbox()
        try box.initVault()
        let environment = ["HOME": box.directory, "XDG_STATE_HOME": box.directory + "/state", "BAO_TOKEN": "token-must-stay-home"]
        let host = "127.0.0.1:\(server.port)"
        let cases = [
            ("bao://\(host)#@example.invalid/secret/x", "a bao:// URL has no fragment ('#'): bao://HOST[:PORT]/MOUNT/PATH"),
            ("bao://\(host)?@example.invalid/secret/x", "a bao:// URL has no query ('?'): bao://HOST[:PORT]/MOUNT/PATH"),
            ("bao://\(host)/secret/x#frag", "a bao:// URL has no fragment ('#'): bao://HOST[:PORT]/MOUNT/PATH"),
            ("bao://user:hunter2@\(host)/secret/x", "a bao:// URL names no user ('USER[:PASSWORD]@HOST'): the token comes from BAO_TOKEN, VAULT_TOKEN or --credentials-entry"),
            ("bao://example.invalid@\(host)/secret/x", "a bao:// URL names no user ('USER[:PASSWORD]@HOST'): the token comes from BAO_TOKEN, VAULT_TOKEN or --credentials-entry"),
            ("bao://\(host)%2f/secret/x", "'bao://\(host)%2f/secret/x' is not bao://HOST[:PORT]/MOUNT/PATH: '\(host)%2f' is not a host name or address and an optional port"),
        ]
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        for (remote, message) in cases {
            let result = try box.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: environment)
            #expect(result.status == 64, "\(remote): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr == "vault: not a remote location: \(message)\n", "\(remote)")
            #expect(!result.stderr.contains("hunter2"))
        }
        #expect(try Self.requestCount(server) == "0", "no request reached the server")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)
    }

    static func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    /// A hostile S3 endpoint: a Content-Length over a vault's largest file is refused before the body is read, and
    /// a body that does not start as a vault (no Content-Length: it would end only with the connection) at its first
    /// bytes; both at once, not when the server lets go 20 s later, and the vault is unchanged.
    @Test func aHostileS3EndpointIsNotReadPastWhatAVaultCanBe() throws {
        let server = try PythonServer(.counting)
        defer { server.stop() }
        let box = try Sandbox()
        try box.initVault()
        let environment = [
            "HOME": box.directory, "XDG_STATE_HOME": box.directory + "/state", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "not-a-real-secret", "AWS_REGION": "us-east-1",
        ]
        let before = try Self.bytes(box.vaultPath)
        for (bucket, message) in [
            ("hostile-length", "vault: s3://hostile-length/team.vault is larger than a vault can be\n"),
            ("hostile-stream", "vault: s3://hostile-stream/team.vault: the store answered 200 (the object is not a vault file: it does not start as one)\n"),
        ] {
            let started = monotonicNow()
            let result = try box.vault(
                ["sync", "s3://\(bucket)/team.vault", "--endpoint", server.origin, "--allow-insecure-http", "--timeout", "15"],
                extraEnvironment: environment)
            #expect(result.status == 1, "\(bucket): \(result.stderr)")
            #expect(result.stderr == message)
            #expect(monotonicNow() - started < 10, "\(bucket): refused at once, not when the server let go")
            #expect(try Self.bytes(box.vaultPath) == before)
        }
    }

    /// The record of the last S3 sync is kept per endpoint and region: a bucket of the same name at another endpoint
    /// is not taken for the one synced before (a record keyed by `s3://BUCKET/KEY` alone said it was "deleted in the
    /// store since the last sync"). A record an earlier version wrote (keyed by `s3://BUCKET/KEY`) never claims that
    /// the object existed, and the next record replaces it.
    @Test func theS3SyncRecordIsKeptPerEndpointAndRegion() throws {
        let first = try MotoS3(buckets: ["vault"]), second = try MotoS3(buckets: ["vault"])
        defer { first.stop(); second.stop() }
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "one"], stdin: Data("1".utf8)).status == 0)
        let state = box.directory + "/state"
        func sync(_ moto: MotoS3) throws -> CLIResult {
            try box.vault(["sync", "s3://vault/team.vault", "--allow-insecure-http"], extraEnvironment: [
                "HOME": box.directory, "XDG_STATE_HOME": state, "AWS_ACCESS_KEY_ID": moto.accessKeyID,
                "AWS_SECRET_ACCESS_KEY": moto.secretAccessKey, "AWS_ENDPOINT_URL": moto.endpoint, "AWS_REGION": "us-east-1",
            ])
        }
        func records() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: state + "/vault").filter { $0.contains(".sync-") }.sorted()
        }
        let created = try sync(first)
        #expect(created.status == 0 && created.stdoutText == "created s3://vault/team.vault\n", "\(created.stdoutText) \(created.stderr)")
        let other = try sync(second)
        #expect(other.status == 0 && other.stdoutText == "created s3://vault/team.vault\n", "\(other.stdoutText) \(other.stderr)")
        #expect(try records().count == 2, "one record per endpoint")
        #expect(try second.object("vault", "team.vault") == Self.bytes(box.vaultPath))

        // An earlier version's record: the name of the first endpoint's record keyed by the label alone.
        let record = try #require(try records().first)
        let vaultID = String(record.prefix { $0 != "." })
        let script = "import hashlib,sys\nprint(hashlib.blake2b(sys.argv[1].encode(), digest_size=32).digest()[:8].hex())"
        let hash = try runTool("/usr/bin/env", ["python3", "-c", script, box.vaultPath + "\ns3://vault/team.vault"]).1
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let legacy = "\(vaultID).sync-\(hash)"
        for name in try records() { try FileManager.default.removeItem(atPath: state + "/vault/" + name) }
        try Data("vault-sync 1\netag \"not-the-etag\"\nlocal 0\n".utf8).write(to: URL(fileURLWithPath: state + "/vault/" + legacy))
        let third = try MotoS3(buckets: ["vault"])
        defer { third.stop() }
        let fresh = try sync(third)
        #expect(fresh.status == 0 && fresh.stdoutText == "created s3://vault/team.vault\n", "an old record claims no object: \(fresh.stdoutText) \(fresh.stderr)")
        let after = try records()
        #expect(after.count == 1 && !after.contains(legacy), "the old record is replaced: \(after)")
    }

    /// `vault git textconv` and the merge driver read another file only while it can be a vault: one larger than a
    /// vault can be is refused by its size (a sparse 3 GiB file, unread), and one that does not start with a vault's
    /// magic at its first bytes (a FIFO whose writer never closes it: reading to its end would never return).
    @Test func textconvAndTheMergeDriverReadNoMoreThanAVaultCanBe() throws {
        let box = try Sandbox()
        try box.initVault()
        let large = box.directory + "/large"
        #expect(FileManager.default.createFile(atPath: large, contents: nil))
        #expect(truncate(large, 3 << 30) == 0)
        let fifo = box.directory + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let writer = open(fifo, O_RDWR)
        #expect(writer >= 0)
        defer { close(writer) }
        let written = Array("not a vault, and more to come".utf8)
        #expect(write(writer, written, written.count) == written.count)

        let tooLarge = "cannot read vault '\(large)': the file is corrupt: larger than a vault can be (\(3 << 30) bytes)"
        let notAVault = "cannot read vault '\(fifo)': the file is corrupt: not a vault file (bad magic)"
        let environment = box.environment.merging(["HOME": box.directory]) { $1 }
        let textconv = try CLI.exec(CLI.vault, ["git", "textconv", large], environment: environment, timeout: 20)
        #expect(textconv.status == 0 && textconv.stdoutText == "(vault: cannot show this file: \(tooLarge))\n", "\(textconv.stdoutText)")
        let started = monotonicNow()
        let fromFIFO = try CLI.exec(CLI.vault, ["git", "textconv", fifo], environment: environment, timeout: 20)
        #expect(fromFIFO.status == 0 && fromFIFO.stdoutText == "(vault: cannot show this file: \(notAVault))\n", "\(fromFIFO.stdoutText)")
        #expect(monotonicNow() - started < 10)
        for (theirs, message) in [(large, tooLarge), (fifo, notAVault)] {
            let driver = try CLI.exec(CLI.vault, ["git", "merge-driver", box.vaultPath, box.vaultPath, theirs, "team.vault"], environment: environment, timeout: 20)
            #expect(driver.status == 1 && driver.stderr == "vault: cannot merge 'team.vault': \(message)\n", "\(driver.stderr)")
        }
    }

    /// `vault login` whose server, given the credential, redirects to another origin that answers 200: the redirect
    /// never carries the credential, so that 200 accepted nothing and nothing is stored; login says so, exit 1.
    @Test func aLoginAnsweredByAnotherOriginAfterARedirectStoresNothingAndSaysSo() async throws {
        let first = try PythonServer(.counting), second = try PythonServer(.counting)
        defer { first.stop(); second.stop() }
        #expect(try runTool("/usr/bin/curl", ["-s", first.origin + "/_control/set-password?user=alice&password=pw"]).0 == 0)
        let box = try Sandbox()
        try box.initVault()
        let password = box.directory + "/password"
        try box.write("pw\n", to: password)
        let url = first.origin + "/login-redirect/\(second.port)"
        let login = ["login", url, "--username", "alice", "--password-file", password, "--allow-insecure-http"]
        let message = "'\(url)' redirected the login to '\(second.origin)/headers', another origin, which answered HTTP 200 (OK) without the credential; that accepts nothing: no credential was stored"
        let hint = "log in with the URL of a protected resource that answers on its own origin"
        let result = try box.vault(login)
        #expect(result.status == 1 && result.stdout.isEmpty, "\(result.stdoutText) \(result.stderr)")
        #expect(result.stderr == "vault: \(message)\nhint: \(hint)\n")
        let json = try box.vault(login + ["--json"])
        #expect(json.status == 1 && json.stdout.isEmpty, "\(json.stdoutText)")
        let error = try #require(try JSONSerialization.jsonObject(with: Data(json.stderr.utf8)) as? [String: Any])["error"] as? [String: Any]
        #expect(error?["code"] as? String == "answered_elsewhere" && error?["exit_code"] as? Int == 1 && error?["message"] as? String == message)
        #expect(try box.vault(["list"]).stdoutText == "", "nothing stored")
        let elsewhere = try await NetworkEdgeCLITests.log(second)
        #expect(elsewhere.count == 2 && elsewhere.allSatisfy { $0.headers["authorization"] == nil }, "the credential never went there")
    }
}
