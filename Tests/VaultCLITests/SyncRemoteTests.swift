import Foundation
import Testing
import VaultTestSupport

/// Issue 35 §4: `vault sync` remembers the remote of its first successful sync; `vault remote show/set`.
@Suite(.serialized, .processTimeLimit) struct SyncRemoteTests {
    typealias Machine = SyncS3Tests.Machine

    func stateFiles(_ machine: Machine) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: machine.box.directory + "/state/vault")) ?? []
    }

    @Test func theFirstSyncIsRememberedAndSyncAloneUsesIt() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try Machine(moto), b = try Machine(moto)
        #expect(try a.vault(["init"]).status == 0)
        let none = try a.vault(["remote", "show"])
        #expect(none.status == 2 && none.stdoutText.isEmpty && none.stderr.contains("has no remote"), "\(none.status) \(none.stderr)")

        #expect(try a.vault(["put", "one"], stdin: Data("1".utf8)).status == 0)
        let first = try a.vault(["sync", "s3://vault/team/shared.vault", "--allow-insecure-http", "--region", "us-east-1"])
        #expect(first.status == 0 && first.stdoutText == "created s3://vault/team/shared.vault\n", "\(first.stdoutText) \(first.stderr)")
        let shown = try a.vault(["remote", "show"])
        #expect(shown.status == 0 && shown.stdoutText == "s3://vault/team/shared.vault --region us-east-1 --allow-insecure-http\n", "\(shown.stdoutText) \(shown.stderr)")
        let record = try #require(stateFiles(a).first { $0.hasSuffix(".remote") })
        let attributes = try FileManager.default.attributesOfItem(atPath: a.box.directory + "/state/vault/" + record)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        // B fetches it once by name; then both sync with no remote named.
        #expect(try b.vault(["sync", "s3://vault/team/shared.vault", "--allow-insecure-http"]).status == 0)
        #expect(try b.vault(["put", "two"], stdin: Data("2".utf8)).status == 0)
        let alone = try b.vault(["sync", "--allow-insecure-http"])
        #expect(alone.status == 0 && alone.stdoutText == "sent the merged vault to s3://vault/team/shared.vault\n", "\(alone.stdoutText) \(alone.stderr)")
        let json = try a.vault(["sync", "--allow-insecure-http", "--json"])
        #expect(json.status == 0 && json.stdoutText.contains(#""remote":"s3://vault/team/shared.vault""#), "\(json.stdoutText) \(json.stderr)")
        #expect(try a.names() == ["one", "two"])

        // A later sync with another remote does not replace the remembered one; set does.
        #expect(try a.vault(["remote", "set", "s3://vault/other.vault"]).stdoutText.hasSuffix(" syncs with s3://vault/other.vault\n"))
        #expect(try a.vault(["remote", "show", "--json"]).stdoutText == #"{"remote":"s3://vault/other.vault"}"# + "\n")
        let created = try a.vault(["sync", "--allow-insecure-http"])
        #expect(created.status == 0 && created.stdoutText == "created s3://vault/other.vault\n", "\(created.stdoutText) \(created.stderr)")
    }

    /// Walkthrough finding 7: `--allow-insecure-http` is remembered with the remote (first sync, `remote set`), so
    /// that `vault sync` alone works again; still only ever to a loopback address.
    @Test func plainHTTPIsRememberedWithTheRemoteForLoopbackOnly() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try Machine(moto)
        #expect(try a.vault(["init"]).status == 0)
        #expect(try a.vault(["put", "one"], stdin: Data("1".utf8)).status == 0)
        let first = try a.vault(["sync", "s3://vault/plain.vault", "--allow-insecure-http"])
        #expect(first.status == 0 && first.stdoutText == "created s3://vault/plain.vault\n", "\(first.stdoutText) \(first.stderr)")
        let alone = try a.vault(["sync"])
        #expect(alone.status == 0 && alone.stdoutText.hasSuffix(" and s3://vault/plain.vault are the same\n"), "\(alone.stdoutText) \(alone.stderr)")
        #expect(try a.vault(["remote", "show"]).stdoutText == "s3://vault/plain.vault --allow-insecure-http\n")
        #expect(try a.vault(["remote", "show", "--json"]).stdoutText == #"{"allow_insecure_http":true,"remote":"s3://vault/plain.vault"}"# + "\n")

        // Remembered, but the endpoint (here AWS_ENDPOINT_URL) is not a loopback address: refused before sending.
        var elsewhere = a.environment
        elsewhere["AWS_ENDPOINT_URL"] = "http://192.0.2.1:9000"
        let far = try a.box.vault(["sync"], extraEnvironment: elsewhere)
        #expect(far.status == 1 && far.stderr.contains("refusing plain http to 'http://192.0.2.1:9000'")
                && far.stderr.contains("plain http is allowed only to loopback addresses"), "\(far.status) \(far.stderr)")

        // `remote set` without the flag forgets it: plain http is refused again, as for a remote named on argv.
        #expect(try a.vault(["remote", "set", "s3://vault/other.vault"]).status == 0)
        #expect(try a.vault(["remote", "show"]).stdoutText == "s3://vault/other.vault\n")
        let refused = try a.vault(["sync"])
        #expect(refused.status == 1 && refused.stderr.contains("refusing plain http to '\(moto.endpoint)"), "\(refused.status) \(refused.stderr)")
        // With the flag, `remote set` keeps it.
        let set = try a.vault(["remote", "set", "s3://vault/other.vault", "--allow-insecure-http"])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try a.vault(["remote", "show"]).stdoutText == "s3://vault/other.vault --allow-insecure-http\n")
        let created = try a.vault(["sync"])
        #expect(created.status == 0 && created.stdoutText == "created s3://vault/other.vault\n", "\(created.stdoutText) \(created.stderr)")
        // An explicit http endpoint that is not loopback is refused by `remote set`, the flag or not; nothing changes.
        let far2 = try a.vault(["remote", "set", "s3://vault/x.vault", "--endpoint", "http://192.0.2.1:9000", "--allow-insecure-http"])
        #expect(far2.status == 1 && far2.stderr.contains("refusing plain http"), "\(far2.status) \(far2.stderr)")
        #expect(try a.vault(["remote", "show"]).stdoutText == "s3://vault/other.vault --allow-insecure-http\n")
    }

    @Test func aBadRemoteIsRefusedAndNothingStored() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try Machine(moto)
        #expect(try a.vault(["init"]).status == 0)
        for bad in ["s3://vault", "http://example.com/x", "bao://user@host/kv/x", "s3://B!/key"] {
            let refused = try a.vault(["remote", "set", bad])
            #expect(refused.status == 64 && refused.stderr.contains("not a remote location"), "\(bad): \(refused.status) \(refused.stderr)")
        }
        let regionOnBao = try a.vault(["remote", "set", "bao://127.0.0.1:8200/kv/x", "--region", "eu-west-1"])
        #expect(regionOnBao.status == 64, "\(regionOnBao.stderr)")
        let badSync = try a.vault(["sync", "s3://vault", "--allow-insecure-http"])
        #expect(badSync.status == 64, "\(badSync.stderr)")
        #expect(!stateFiles(a).contains { $0.hasSuffix(".remote") })
        #expect(try a.vault(["remote", "show"]).status == 2)
        let bao = try a.vault(["remote", "set", "bao://127.0.0.1:8200/kv/team"])
        #expect(bao.status == 0, "\(bao.stderr)")
        #expect(try a.vault(["remote", "show"]).stdoutText == "bao://127.0.0.1:8200/kv/team\n")
    }

    @Test func theTopLevelHelpNamesGit() throws {
        let box = try Sandbox()
        let help = try box.vault(["--help"], extraEnvironment: ["COLUMNS": "300"])
        #expect(help.stdoutText.contains("git repository, an S3-compatible object store"), "\(help.stdoutText)")
        #expect(help.stdoutText.contains("remote "), "\(help.stdoutText)")
    }
}
