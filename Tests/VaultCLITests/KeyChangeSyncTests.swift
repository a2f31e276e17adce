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
        #expect(stale.status == 6 && stale.stderr.contains("ask its machine to run 'vault sync' first"), "\(stale.stdoutText) \(stale.stderr)")
    }
}
