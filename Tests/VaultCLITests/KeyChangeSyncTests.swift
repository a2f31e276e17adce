import Foundation
import Testing
import VaultTestSupport

/// Issue 33 §1, the stranded machine, with real git: machine A, one change behind the remote, changes its passphrase;
/// its `vault sync` takes the remote's change into A's new key (the change is pending until published) and pushes,
/// and B then follows A's key. Before, A's sync and merge refused the remote for good (`retired_key`).
@Suite(.processTimeLimit) struct KeyChangeSyncTests {
    @Test(.enabled(if: GitSyncTests.git != nil, "needs git")) func aMachineOneChangeBehindChangesItsPassphraseAndSyncs() throws {
        let m = try GitSyncTests.Machines()
        let newPassphrase = m.a.directory + "/new-passphrase"
        FileManager.default.createFile(atPath: newPassphrase, contents: Data("a new passphrase\n".utf8), attributes: [.posixPermissions: 0o600])
        // B writes and pushes: the remote is one change ahead of A.
        try m.b.unlock(["--vault", m.vaultB])
        try m.put(m.b, "from-b", "b")
        let pushed = try m.sync(m.b)
        #expect(pushed.status == 0, "\(pushed.stdoutText) \(pushed.stderr)")
        // A, not synced since, writes and changes its passphrase.
        #expect(try m.a.around(["put", "from-a", "--vault", m.vaultA], stdin: Data("a".utf8)).status == 0)
        let passwd = try m.a.around(["passwd", "--vault", m.vaultA, "--new-passphrase-file", newPassphrase])
        #expect(passwd.status == 0, "\(passwd.stderr)")
        let elsewhere = m.environment(m.a).merging(["VAULT_AGENT_SOCK": m.a.elsewhereSocket]) { $1 }
        let synced = try AgentCLI.exec(CLI.vault, ["sync", "--vault", m.vaultA, "--passphrase-file", newPassphrase], environment: elsewhere)
        #expect(synced.status == 0 && synced.stdoutText.contains("  added: from-b\n") && synced.stdoutText.hasSuffix("pushed to origin/main\n"),
                "\(synced.stdoutText) \(synced.stderr)")
        #expect(try AgentCLI.exec(CLI.vault, ["list", "--vault", m.vaultA, "--passphrase-file", newPassphrase], environment: elsewhere).stdoutText
                == "from-a\nfrom-b\n")
        // B's copy as it is now, under the key A replaced.
        let old = m.a.directory + "/old.vault"
        try FileManager.default.copyItem(atPath: m.vaultB, toPath: old)
        // B follows A's new key with A's new passphrase, and has both entries.
        let followed = try m.sync(m.b, ["--other-passphrase-file", newPassphrase])
        #expect(followed.status == 0, "\(followed.stdoutText) \(followed.stderr)")
        #expect(try m.list(m.b) == ["from-a", "from-b"])
        // Published now: B's copy from before A's change (under the key A replaced) is stale for A, and says what works.
        let stale = try AgentCLI.exec(CLI.vault, ["merge", old, "--vault", m.vaultA, "--passphrase-file", newPassphrase], environment: elsewhere)
        #expect(stale.status == 6 && stale.stderr.contains("ask its machine to take this vault's key change first"), "\(stale.stdoutText) \(stale.stderr)")
        // What the hint names works: B's copy after its sync (which followed A's change) merges into A.
        let afterSync = try AgentCLI.exec(CLI.vault, ["merge", m.vaultB, "--vault", m.vaultA, "--passphrase-file", newPassphrase], environment: elsewhere)
        #expect(afterSync.status == 0, "\(afterSync.stdoutText) \(afterSync.stderr)")
    }

    /// The same through S3 (moto): A, one change behind the object, changes its passphrase and syncs (the object's
    /// change taken into A's new key, the result PUT); B follows A's change with the new passphrase.
    @Test func throughS3TheMachineOneChangeBehindSyncsAndTheOtherFollows() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try SyncS3Tests.Machine(moto), b = try SyncS3Tests.Machine(moto)
        func json(_ result: CLIResult) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.stdoutText) \(result.stderr)")
        }
        #expect(try a.vault(["init"]).status == 0)
        #expect(try json(a.sync())["created"] as? Bool == true)
        #expect(try json(b.sync())["fetched"] as? Bool == true)
        #expect(try b.vault(["put", "from-b"], stdin: Data("b".utf8)).status == 0)
        #expect(try json(b.sync())["pushed"] as? Bool == true)
        // A, not synced since, writes and changes its passphrase (its passphrase file holds the new one after).
        #expect(try a.vault(["put", "from-a"], stdin: Data("a".utf8)).status == 0)
        let newPassphrase = a.box.directory + "/new-passphrase"
        try a.box.write("a new passphrase\n", to: newPassphrase)
        let passwd = try a.vault(["passwd", "--new-passphrase-file", newPassphrase])
        #expect(passwd.status == 0, "\(passwd.stderr)")
        try a.box.write("a new passphrase\n", to: a.box.passphraseFile)
        let synced = try a.sync()
        let report = try json(synced)
        #expect(synced.status == 0 && report["added"] as? [String] == ["from-b"] && report["pushed"] as? Bool == true, "\(report) \(synced.stderr)")
        #expect(try a.names() == ["from-a", "from-b"])
        // B follows A's key with the new passphrase.
        let followed = try b.sync("s3://vault/team/shared.vault", ["--other-passphrase-file", newPassphrase])
        let followedReport = try json(followed)
        #expect(followed.status == 0 && followedReport["added"] as? [String] == ["from-a"], "\(followed.stdoutText) \(followed.stderr)")
        try b.box.write("a new passphrase\n", to: b.box.passphraseFile)
        #expect(try b.names() == ["from-a", "from-b"])
    }

    /// A removal made on A reaches the kept teammate's machine through S3 with its identity alone; the removed
    /// teammate's `vault sync` says that his identity is no longer a recipient (exit 3) instead of asking for "its
    /// passphrase", and writes nothing.
    @Test(.enabled(if: RecipientCLITests.hasAge, RecipientCLITests.needsAge))
    func throughS3ARemovalReachesTheKeptTeammateAndTheRemovedOneIsToldSo() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try SyncS3Tests.Machine(moto), kept = try SyncS3Tests.Machine(moto), removed = try SyncS3Tests.Machine(moto)
        var recipients: [String] = []
        for machine in [kept, removed] {
            let key = machine.box.directory + "/key.txt"
            let made = try runTool(RecipientCLITests.ageKeygen!, ["-o", key]) as (status: Int32, output: String)
            try #require(made.status == 0, "\(made.output)")
            recipients.append(try RecipientCLITests.Team.recipient(of: key))
        }
        func withIdentity(_ machine: SyncS3Tests.Machine, _ arguments: [String]) throws -> CLIResult {
            try machine.box.vault(arguments + ["--identity", machine.box.directory + "/key.txt"], passphrase: false,
                                  extraEnvironment: machine.environment)
        }
        let remote = ["sync", "s3://vault/team/shared.vault", "--allow-insecure-http"]
        #expect(try a.vault(["init"]).status == 0)
        #expect(try a.vault(["recipients", "add"] + recipients).status == 0)
        #expect(try a.sync().status == 0)
        for machine in [kept, removed] {
            let fetched = try withIdentity(machine, remote)
            #expect(fetched.status == 0, "\(fetched.stderr)")
        }
        #expect(try a.vault(["recipients", "remove", recipients[1]]).status == 0)
        #expect(try a.vault(["put", "after"], stdin: Data("a".utf8)).status == 0)
        #expect(try a.sync().status == 0)

        let followed = try withIdentity(kept, remote)
        #expect(followed.status == 0, "\(followed.stdoutText) \(followed.stderr)")
        #expect(try withIdentity(kept, ["get", "after"]).stdoutText == "a")
        let before = try Data(contentsOf: URL(fileURLWithPath: removed.box.vaultPath))
        let told = try withIdentity(removed, remote)
        #expect(told.status == 3 && told.stderr.hasPrefix(
            "vault: this identity was removed from the vault (its key rotated at a recipient's removal; 's3://vault/team/shared.vault' has no stanza for it): it opens no later version; ask the owner to add it again\n"),
                "\(told.stderr)")
        #expect(!told.stderr.contains("passphrase"), "\(told.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: removed.box.vaultPath)) == before)
    }
}
