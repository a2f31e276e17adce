import Foundation
import Testing
import VaultTestSupport

/// Issue 19 §4: `vault sync s3://BUCKET/KEY` against moto's S3 server in its signature-checking mode (every request
/// signed with SigV4 and checked by moto with botocore): two machines (two homes, state directories, replicas)
/// that put and sync lose nothing, a conflicting edit keeps the loser in history, and a wrong key or another vault
/// changes nothing on either side.
@Suite(.serialized, .processTimeLimit) struct SyncS3Tests {
    /// One machine: its own sandbox (vault, passphrase file), home and state directory, and moto's credentials.
    struct Machine {
        let box: Sandbox
        let environment: [String: String]

        init(_ moto: MotoS3, secret: String? = nil) throws {
            box = try Sandbox()
            environment = [
                "HOME": box.directory, "XDG_STATE_HOME": box.directory + "/state",
                "AWS_ACCESS_KEY_ID": moto.accessKeyID, "AWS_SECRET_ACCESS_KEY": secret ?? moto.secretAccessKey,
                "AWS_ENDPOINT_URL": moto.endpoint, "AWS_REGION": "us-east-1",
            ]
        }

        @discardableResult
        func vault(_ arguments: [String], stdin: Data = Data()) throws -> CLIResult {
            try box.vault(arguments, stdin: stdin, extraEnvironment: environment)
        }

        func sync(_ remote: String = "s3://vault/team/shared.vault", _ extra: [String] = []) throws -> CLIResult {
            try vault(["sync", remote, "--allow-insecure-http", "--json"] + extra)
        }

        func names() throws -> [String] { try vault(["list"]).stdoutText.split(separator: "\n").map(String.init) }

        /// A sync of `remote` at `endpoint` with `--timeout 2` ends within 15 s, exit 1 "timed out", the vault's bytes
        /// still `unchanged`.
        func expectTimedOut(_ remote: String, endpoint: String, leaving unchanged: Data, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let started = monotonicNow()
            let result = try vault(["sync", remote, "--endpoint", endpoint, "--allow-insecure-http", "--timeout", "2"])
            #expect(result.status == 1 && result.stderr.contains("timed out"), "\(result.stderr)", sourceLocation: sourceLocation)
            #expect(monotonicNow() - started < 15, "the 2 s timeout ended it", sourceLocation: sourceLocation)
            #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == unchanged, sourceLocation: sourceLocation)
        }

        func value(_ name: String) throws -> String { try vault(["get", name]).stdoutText }
    }

    func json(_ result: CLIResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.stdoutText) \(result.stderr)")
    }

    @Test func twoMachinesPutAndSyncAndLoseNothing() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try Machine(moto), b = try Machine(moto)
        #expect(try a.vault(["init"]).status == 0)
        #expect(try a.vault(["put", "one"], stdin: Data("1".utf8)).status == 0)
        let created = try json(a.sync())
        #expect(created["created"] as? Bool == true && created["pushed"] as? Bool == true, "\(created)")

        // B has no vault: sync fetches it (it must open with B's passphrase).
        let fetched = try json(b.sync())
        #expect(fetched["fetched"] as? Bool == true)
        #expect(try b.value("one") == "1")

        // Both write, then sync in turns: each side ends with everything.
        #expect(try a.vault(["put", "from-a"], stdin: Data("a".utf8)).status == 0)
        #expect(try b.vault(["put", "from-b"], stdin: Data("b".utf8)).status == 0)
        let first = try json(a.sync())
        #expect(first["pushed"] as? Bool == true && (first["added"] as? [String])?.isEmpty == true)
        let second = try json(b.sync())
        #expect(second["added"] as? [String] == ["from-a"] && second["pushed"] as? Bool == true, "\(second)")
        let third = try json(a.sync())
        #expect(third["added"] as? [String] == ["from-b"] && third["pushed"] as? Bool == false, "\(third)")
        #expect(try a.names() == ["from-a", "from-b", "one"])
        #expect(try b.names() == ["from-a", "from-b", "one"])

        // Nothing new on either side: no PUT, and it says so.
        let idle = try a.sync("s3://vault/team/shared.vault", [])
        #expect(try json(idle)["pushed"] as? Bool == false)
        let text = try a.vault(["sync", "s3://vault/team/shared.vault", "--allow-insecure-http"])
        #expect(text.status == 0 && text.stdoutText.hasSuffix("and s3://vault/team/shared.vault are the same\n"), "\(text.stdoutText) \(text.stderr)")
    }

    /// Issue 33 §3: a sync that would delete more than 10 entries and a tenth of the vault stops without a terminal
    /// (exit 1, mass_deletion, the local vault unchanged, nothing sent) until --accept-deletions.
    @Test func manyDeletionsFromTheStoreNeedAcceptDeletions() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try Machine(moto), b = try Machine(moto)
        #expect(try a.vault(["init"]).status == 0)
        let names = (10..<22).map { "e\($0)" }
        for name in names { #expect(try a.vault(["put", name], stdin: Data("v".utf8)).status == 0) }
        #expect(try a.sync().status == 0)
        #expect(try b.sync().status == 0)
        #expect(try b.names() == names)
        #expect(try a.vault(["delete", "--yes"] + names.dropLast()).status == 0)
        #expect(try a.sync().status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: b.box.vaultPath))
        let refused = try b.sync()
        #expect(refused.status == 1 && refused.stderr.contains(#""code":"mass_deletion""#), "\(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: b.box.vaultPath)) == before)
        let accepted = try b.sync("s3://vault/team/shared.vault", ["--accept-deletions"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(try json(accepted)["deleted"] as? [String] == Array(names.dropLast()))
        #expect(try b.names() == ["e21"])
    }

    @Test func aConflictingEditKeepsTheLoserInHistoryAndConcurrentSyncsLoseNothing() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try Machine(moto), b = try Machine(moto)
        #expect(try a.vault(["init"]).status == 0)
        #expect(try a.vault(["put", "shared"], stdin: Data("base".utf8)).status == 0)
        #expect(try a.sync().status == 0)
        #expect(try b.sync().status == 0)
        #expect(try a.vault(["put", "shared", "--force"], stdin: Data("edit-a".utf8)).status == 0)
        usleep(5_000)
        #expect(try b.vault(["put", "shared", "--force"], stdin: Data("edit-b".utf8)).status == 0)
        #expect(try a.sync().status == 0)
        let merged = try json(b.sync())
        // Changed on both sides: b's edit is later and wins, a's goes into the history marked conflict.
        #expect(merged["conflicts"] as? [String] == ["shared"] && merged["updated"] as? [String] == [], "\(merged)")
        // Issue 35 §1: b is told whose change lost; a, whose sync only takes b's merge, that its change lost there.
        let won = try #require(merged["won"] as? [[String: Any]], "\(merged)")
        #expect(won.count == 1 && won[0]["name"] as? String == "shared" && won[0]["version"] as? Int == 1, "\(won)")
        let told = try json(a.sync())
        let lost = try #require(told["lost"] as? [[String: Any]], "\(told)")
        #expect(lost.count == 1 && lost[0]["name"] as? String == "shared" && lost[0]["version"] as? Int == 1, "\(lost)")
        #expect(told["conflicts"] as? [String] == ["shared"] && told["updated"] as? [String] == [], "\(told)")
        for machine in [a, b] {
            #expect(try machine.value("shared") == "edit-b")
            let history = try machine.vault(["history", "shared", "--json", "--reveal"]).stdoutText
            #expect(history.contains("edit-a") && history.contains("\"conflict\":true"), "\(history)")
        }

        // Both machines put and sync at once, five rounds each: every entry ends up on both.
        let group = DispatchGroup()
        for (machine, prefix) in [(a, "a"), (b, "b")] {
            group.enter()
            Thread.detachNewThread {
                for round in 1...5 {
                    _ = try? machine.vault(["put", "\(prefix)\(round)"], stdin: Data("v".utf8))
                    _ = try? machine.sync()
                }
                group.leave()
            }
        }
        group.wait()
        #expect(try a.sync().status == 0)
        #expect(try b.sync().status == 0)
        #expect(try a.sync().status == 0)
        let expected = (["shared"] + (1...5).flatMap { ["a\($0)", "b\($0)"] }).sorted()
        #expect(try a.names() == expected)
        #expect(try b.names() == expected)
    }

    /// A local file put back from before the last sync (a backup, `git checkout`) is not sent just because the
    /// store answered 304: sync reads the object and merges, which opens the local file and refuses the rollback.
    @Test func anOlderLocalCopyPutBackIsRefusedNotSent() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try Machine(moto)
        #expect(try a.vault(["init"]).status == 0)
        #expect(try a.vault(["put", "old"], stdin: Data("o".utf8)).status == 0)
        #expect(try a.sync().status == 0)
        let backup = try Data(contentsOf: URL(fileURLWithPath: a.box.vaultPath))
        #expect(try a.vault(["put", "new"], stdin: Data("n".utf8)).status == 0)
        #expect(try a.sync().status == 0)
        try backup.write(to: URL(fileURLWithPath: a.box.vaultPath))
        let refused = try a.vault(["sync", "s3://vault/team/shared.vault", "--allow-insecure-http"])
        #expect(refused.status == 6, "\(refused.stdoutText) \(refused.stderr)")
        let check = try Machine(moto)
        #expect(try check.sync().status == 0)
        #expect(try check.names() == ["new", "old"])  // the store still has both
    }

    /// A store that answers 500, or 200 with something that is not an object with an ETag, or never answers: a clear
    /// error, and the local vault as it was.
    @Test func aFailingOrMalformedStoreChangesNothingHere() throws {
        let moto = try MotoS3(buckets: ["vault"])  // only for the credentials
        defer { moto.stop() }
        let a = try Machine(moto)
        #expect(try a.vault(["init"]).status == 0)
        #expect(try a.vault(["put", "k"], stdin: Data("v".utf8)).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: a.box.vaultPath))
        for (status, body, expected) in [
            (500, Data("<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>".utf8), "500 (InternalError: We encountered an internal error.)"),
            (200, Data("not a vault".utf8), "the answer has no ETag"),
        ] {
            let server = try PythonServer(.scripted(status: status, body: body))
            defer { server.stop() }
            let result = try a.vault(["sync", "s3://vault/k", "--endpoint", server.origin, "--allow-insecure-http"])
            #expect(result.status == 1 && result.stdout.isEmpty, "\(result.stderr)")
            #expect(result.stderr.contains(expected), "\(result.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: a.box.vaultPath)) == before)
        }

        // A store that takes the connection and never answers: --timeout ends the sync, nothing changes here.
        let silent = try SilentLoopbackListener()
        try a.expectTimedOut("s3://vault/k", endpoint: "http://127.0.0.1:\(silent.port)", leaving: before)
    }

    /// An object changed in the store by someone else (one byte flipped), cut short, or served one byte every
    /// half second: a clear error, the local vault as it was, and the object as it was (never overwritten).
    @Test func aCorruptOrTruncatedObjectOrATrickleChangesNothingOnEitherSide() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try Machine(moto)
        #expect(try a.vault(["init"]).status == 0)
        #expect(try a.vault(["put", "k"], stdin: Data("v".utf8)).status == 0)
        #expect(try a.sync().status == 0)
        #expect(try a.vault(["put", "later"], stdin: Data("w".utf8)).status == 0)
        let local = try Data(contentsOf: URL(fileURLWithPath: a.box.vaultPath))
        let object = try moto.object("vault", "team/shared.vault")
        var flipped = object
        flipped[flipped.count - 40] ^= 0x01
        for (bytes, expected) in [
            (flipped, "vault: cannot read vault 's3://vault/team/shared.vault': the file is corrupt: the body does not open under the vault's key (it was changed)\n"),
            (object.prefix(object.count / 2), "vault: cannot read vault 's3://vault/team/shared.vault': the file is corrupt: truncated ("),
        ] {
            try moto.putObject("vault", "team/shared.vault", Data(bytes))
            let result = try a.vault(["sync", "s3://vault/team/shared.vault", "--allow-insecure-http"])
            #expect(result.status == 6 && result.stdout.isEmpty, "\(result.stderr)")
            #expect(result.stderr.hasPrefix(expected), "\(result.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: a.box.vaultPath)) == local)
            #expect(try moto.object("vault", "team/shared.vault") == Data(bytes), "the object is not overwritten")
        }

        // A store that sends the object one byte every half second: --timeout ends the sync.
        let server = try PythonServer(.counting)
        defer { server.stop() }
        try a.expectTimedOut("s3://vault/trickle", endpoint: server.origin, leaving: local)
    }

    /// `--credentials-entry NAME`: the access key from an entry of the vault itself (username, password, an optional
    /// session_token field), with no AWS_* key in the environment; a wrong secret there is the store's 403.
    @Test func theKeyFromAnEntryOfTheVault() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try Machine(moto)
        var bare = a.environment
        bare["AWS_ACCESS_KEY_ID"] = ""
        bare["AWS_SECRET_ACCESS_KEY"] = ""
        #expect(try a.box.vault(["init"], extraEnvironment: bare).status == 0)
        #expect(try a.box.vault(["put", "aws", "--field", "username"], stdin: Data(moto.accessKeyID.utf8), extraEnvironment: bare).status == 0)
        #expect(try a.box.vault(["put", "aws", "--field", "password"], stdin: Data("wrong-secret".utf8), extraEnvironment: bare).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: a.box.vaultPath))
        let wrong = try a.box.vault(["sync", "s3://vault/k", "--allow-insecure-http", "--credentials-entry", "aws"], extraEnvironment: bare)
        #expect(wrong.status == 3 && wrong.stderr.contains("403"), "\(wrong.stderr)")
        #expect(!wrong.stderr.contains("wrong-secret"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: a.box.vaultPath)) == before)
        #expect(try a.box.vault(["put", "aws", "--field", "password", "--force"], stdin: Data(moto.secretAccessKey.utf8), extraEnvironment: bare).status == 0)
        let synced = try a.box.vault(["sync", "s3://vault/k", "--allow-insecure-http", "--credentials-entry", "aws"], extraEnvironment: bare)
        #expect(synced.status == 0 && synced.stdoutText == "created s3://vault/k\n", "\(synced.stdoutText) \(synced.stderr)")
        let noEnvironment = try a.box.vault(["sync", "s3://vault/k", "--allow-insecure-http"], extraEnvironment: bare)
        #expect(noEnvironment.status == 1 && noEnvironment.stderr.contains("no S3 credentials"), "\(noEnvironment.stderr)")
    }

    @Test func aWrongKeyAnotherVaultOrNoCredentialsChangeNothing() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try Machine(moto)
        #expect(try a.vault(["init"]).status == 0)
        #expect(try a.vault(["put", "k"], stdin: Data("v".utf8)).status == 0)
        #expect(try a.sync().status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: a.box.vaultPath))

        // A wrong secret key: moto refuses the signature (403); nothing changes here.
        let wrong = try Machine(moto, secret: "wrong" + moto.secretAccessKey.dropFirst(5))
        #expect(try wrong.vault(["init"]).status == 0)
        let refused = try wrong.vault(["sync", "s3://vault/team/shared.vault", "--allow-insecure-http"])
        #expect(refused.status == 3 && refused.stderr.contains("403") && refused.stderr.contains("SignatureDoesNotMatch"), "\(refused.stderr)")
        #expect(!refused.stderr.contains(moto.secretAccessKey))

        // Another vault (its own vault id) is refused with nothing written on either side.
        #expect(try wrong.vault(["put", "x"], stdin: Data("y".utf8)).status == 0)
        let other = try Machine(moto)
        #expect(try other.vault(["init"]).status == 0)
        #expect(try other.vault(["put", "mine"], stdin: Data("m".utf8)).status == 0)
        let otherBefore = try Data(contentsOf: URL(fileURLWithPath: other.box.vaultPath))
        let refusedVault = try other.vault(["sync", "s3://vault/team/shared.vault", "--allow-insecure-http"])
        #expect(refusedVault.status == 6, "\(refusedVault.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: other.box.vaultPath)) == otherBefore)
        let check = try Machine(moto)
        #expect(try check.sync().status == 0)
        #expect(try check.names() == ["k"])  // the remote is still a's

        // No credentials at all: a clear error before anything is sent.
        var bare = a.environment
        bare["AWS_ACCESS_KEY_ID"] = ""
        bare["AWS_SECRET_ACCESS_KEY"] = ""
        let none = try a.box.vault(["sync", "s3://vault/team/shared.vault", "--allow-insecure-http"], extraEnvironment: bare)
        #expect(none.status == 1 && none.stderr.contains("AWS_ACCESS_KEY_ID"), "\(none.stderr)")
        // Plain http to a host that is not loopback is refused before anything is sent.
        let remote = try a.vault(["sync", "s3://vault/k", "--endpoint", "http://example.com:9000", "--allow-insecure-http"])
        #expect(remote.status != 0 && remote.stderr.contains("http"), "\(remote.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: a.box.vaultPath)) == before)
    }
}

/// Issue 19 §5: `vault sync bao://HOST:PORT/MOUNT/PATH` against OpenBao's dev server (KV version 2, `options.cas`):
/// concurrent writers lose nothing; a vault over raft's 1 MiB entry limit is refused before anything is sent.
@Suite(.serialized, .processTimeLimit) struct SyncOpenBaoTests {
    func machine(_ bao: OpenBaoDevServer) throws -> (Sandbox, [String: String]) {
        let box = try Sandbox()
        return (box, ["HOME": box.directory, "XDG_STATE_HOME": box.directory + "/state", "BAO_TOKEN": bao.token])
    }

    @Test func writersOnSeveralMachinesLoseNothingThroughCheckAndSet() throws {
        let bao = try OpenBaoDevServer()
        defer { bao.stop() }
        let remote = "bao://\(bao.address)/secret/team/shared"
        let (first, firstEnvironment) = try machine(bao)
        #expect(try first.vault(["init"], extraEnvironment: firstEnvironment).status == 0)
        #expect(try first.vault(["put", "seed"], stdin: Data("s".utf8), extraEnvironment: firstEnvironment).status == 0)
        let created = try first.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: firstEnvironment)
        #expect(created.status == 0 && created.stdoutText == "created \(remote)\n", "\(created.stdoutText) \(created.stderr)")

        // Four more machines fetch it, then all five put and sync at once, three rounds each.
        var machines = [(first, firstEnvironment)]
        for _ in 0..<4 {
            let (box, environment) = try machine(bao)
            let fetched = try box.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: environment)
            #expect(fetched.status == 0 && fetched.stdoutText.hasPrefix("fetched "), "\(fetched.stderr)")
            machines.append((box, environment))
        }
        let group = DispatchGroup()
        final class Failures: @unchecked Sendable {
            let lock = NSLock()
            var messages: [String] = []
            func add(_ message: String) { lock.withLock { messages.append(message) } }
        }
        let failures = Failures()
        for (index, (box, environment)) in machines.enumerated() {
            group.enter()
            Thread.detachNewThread {
                for round in 1...3 {
                    _ = try? box.vault(["put", "m\(index)-\(round)"], stdin: Data("v".utf8), extraEnvironment: environment)
                    if let result = try? box.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: environment), result.status != 0 {
                        failures.add(result.stderr)
                    }
                }
                group.leave()
            }
        }
        group.wait()
        #expect(failures.messages.isEmpty, "\(failures.messages)")
        // Two more rounds of syncs bring every machine everything.
        for _ in 0..<2 {
            for (box, environment) in machines { _ = try box.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: environment) }
        }
        let expected = (["seed"] + (0..<5).flatMap { index in (1...3).map { "m\(index)-\($0)" } }).sorted()
        for (box, environment) in machines {
            #expect(try box.vault(["list"], extraEnvironment: environment).stdoutText.split(separator: "\n").map(String.init) == expected)
        }
    }

    /// A secret deleted in OpenBao (a soft delete keeps its version) is written again only with --recreate, over the
    /// deleted version.
    @Test func aDeletedSecretIsRecreatedOnlyWhenAsked() throws {
        let bao = try OpenBaoDevServer()
        defer { bao.stop() }
        let remote = "bao://\(bao.address)/secret/team/gone"
        let (box, environment) = try machine(bao)
        #expect(try box.vault(["init"], extraEnvironment: environment).status == 0)
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8), extraEnvironment: environment).status == 0)
        #expect(try box.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: environment).status == 0)
        let deleted = try runTool("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", "-H", "X-Vault-Token: \(bao.token)",
                                                    "http://\(bao.address)/v1/secret/data/team/gone"])
        #expect(deleted.1 == "204", "\(deleted.1)")
        let refused = try box.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: environment)
        #expect(refused.status == 2 && refused.stderr.contains("--recreate"), "\(refused.stderr)")
        let recreated = try box.vault(["sync", remote, "--allow-insecure-http", "--recreate"], extraEnvironment: environment)
        #expect(recreated.status == 0 && recreated.stdoutText == "created \(remote)\n", "\(recreated.stdoutText) \(recreated.stderr)")
        let (other, otherEnvironment) = try machine(bao)
        #expect(try other.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: otherEnvironment).status == 0)
        #expect(try other.vault(["get", "k"], extraEnvironment: otherEnvironment).stdoutText == "v")
    }

    @Test func aVaultOverTheEntryLimitAWrongTokenAndNoTokenAreRefused() throws {
        let bao = try OpenBaoDevServer()
        defer { bao.stop() }
        let remote = "bao://\(bao.address)/secret/big"
        let (box, environment) = try machine(bao)
        #expect(try box.vault(["init"], extraEnvironment: environment).status == 0)
        var random = SystemRandomNumberGenerator()
        let large = Data((0..<(1_100_000)).map { _ in UInt8.random(in: 0...255, using: &random) })
        #expect(try box.vault(["put", "blob"], stdin: large, extraEnvironment: environment).status == 0)
        let big = try box.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: environment)
        #expect(big.status == 1 && big.stderr.contains("larger than"), "\(big.stderr)")

        let (other, otherEnvironment) = try machine(bao)
        #expect(try other.vault(["init"], extraEnvironment: otherEnvironment).status == 0)
        var wrong = otherEnvironment
        wrong["BAO_TOKEN"] = "not-the-token"
        let refused = try other.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: wrong)
        #expect(refused.status == 3 && refused.stderr.contains("403"), "\(refused.stderr)")
        var none = otherEnvironment
        none["BAO_TOKEN"] = ""
        none["VAULT_TOKEN"] = ""
        let missing = try other.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: none)
        #expect(missing.status == 1 && missing.stderr.contains("BAO_TOKEN"), "\(missing.stderr)")

        // The token from an entry of the vault itself: its password field.
        #expect(try other.vault(["put", "bao-token"], stdin: Data(bao.token.utf8), extraEnvironment: none).status == 0)
        let fromEntry = try other.vault(["sync", "bao://\(bao.address)/secret/other", "--allow-insecure-http", "--credentials-entry", "bao-token"], extraEnvironment: none)
        #expect(fromEntry.status == 0 && fromEntry.stdoutText.hasPrefix("created "), "\(fromEntry.stdoutText) \(fromEntry.stderr)")
        let noEntry = try other.vault(["sync", remote, "--allow-insecure-http", "--credentials-entry", "nothing-here"], extraEnvironment: none)
        #expect(noEntry.status == 2 && noEntry.stderr.contains("no entry 'nothing-here'"), "\(noEntry.stderr)")
    }
}
