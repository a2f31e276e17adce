import Foundation
import Testing
import VaultTestSupport

/// Issue 35 walkthrough finding 6 with real git and age-keygen's keys: a teammate removed from the vault is told so
/// (the key link's reason), not that a passphrase changed, and is not invited to --accept-rollback; the owner's other
/// machine is told that a recipient was removed there.
@Suite(.processTimeLimit) struct RemovedTeammateTests {
    static var enabled: Bool { GitSyncTests.git != nil && (RecipientCLITests.hasAge || ProcessInfo.processInfo.environment["CI"] == "true") }

    /// Two machines, and an age identity (its file in B's directory) and its recipient.
    static func machines() throws -> (GitSyncTests.Machines, key: String, recipient: String) {
        try #require(RecipientCLITests.hasAge, "age is needed (CI=true)")
        let m = try GitSyncTests.Machines()
        let key = m.b.directory + "/key.txt"
        let made = try runTool(RecipientCLITests.ageKeygen!, ["-o", key]) as (status: Int32, output: String)
        try #require(made.status == 0, "\(made.output)")
        return (m, key, try RecipientCLITests.Team.recipient(of: key))
    }

    @Test(.enabled(if: enabled, "needs git and age: scripts/install-deps --test"))
    func theRemovedTeammateIsToldSoWhetherItSyncsOrPulls() throws {
        let (m, key, recipient) = try Self.machines()
        func owner(_ arguments: [String], stdin: Data = Data()) throws -> AgentRun { try m.a.around(arguments + ["--vault", m.vaultA], stdin: stdin) }
        func teammate(_ arguments: [String]) throws -> AgentRun { try m.vault(m.b, arguments + ["--identity", key]) }
        func teammateSync(_ extra: [String] = []) throws -> AgentRun { try m.sync(m.b, ["--identity", key] + extra) }

        try #require(try owner(["put", "k"], stdin: Data("v".utf8)).status == 0)
        try #require(try owner(["recipients", "add", recipient]).status == 0)
        try #require(try m.sync(m.a, passphrase: true).status == 0)
        // The teammate's clone takes the file that has its stanza (B's clone was made before).
        try #require(try m.git(m.b, ["pull", "-q"]).status == 0)
        chmod(m.vaultB, 0o600)
        let joined = try teammateSync()
        try #require(joined.status == 0, "\(joined.stderr)")
        #expect(try teammate(["get", "k"]).stdoutText == "v")

        try #require(try owner(["recipients", "remove", recipient]).status == 0)
        try #require(try m.sync(m.a, passphrase: true).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: m.vaultB))
        let removed = """
            this identity was removed from the vault (its key rotated at a recipient's removal; 'origin/main:team.vault' has no stanza for it): it opens no later version; ask the owner to add it again
            """
        let hint = "hint: 'vault identity show' prints your recipient (age1...), for the owner's 'vault recipients add'\n"
        for extra in [[], ["--accept-rollback"]] {
            let sync = try teammateSync(extra)
            #expect(sync.status == 3, "\(sync.stderr)")
            #expect(sync.stderr == "vault: \(removed)\n\(hint)")
        }
        let json = try teammateSync(["--json"])
        #expect(json.status == 3 && json.stderr.contains(#""code":"removed_recipient""#), "\(json.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: m.vaultB)) == before, "nothing written")

        // The owner's file taken by git itself: opening it says the same (this machine last saw the key it replaced).
        #expect(try m.git(m.b, ["pull", "-q"]).status == 0)
        chmod(m.vaultB, 0o600)
        let get = try teammate(["get", "k"])
        #expect(get.status == 3)
        #expect(get.stderr == "vault: " + removed.replacingOccurrences(of: "'origin/main:team.vault'", with: "'\(m.vaultB)'") + "\n" + hint)

        // A holder of the passphrase on that machine (whose copy is one key behind) follows the removal with nothing
        // asked: the owner's removal kept the passphrase stanza's salt, and the passphrase this sync opened the vault
        // with gives its key (PassphraseKeyTests).
        #expect(try m.git(m.b, ["reset", "-q", "--hard", "HEAD@{1}"]).status == 0)
        chmod(m.vaultB, 0o600)
        // Said, as when a passphrase is asked (note 4 left it silent): in the JSON (and only there under --json), as
        // what a dry run would do, as what the sync did.
        let asJSON = try m.sync(m.b, ["--json", "--dry-run"], passphrase: true)
        #expect(asJSON.status == 0 && asJSON.stderr.isEmpty, "\(asJSON.stderr)")
        let report = try JSONSerialization.jsonObject(with: asJSON.stdout) as? [String: Any]
        #expect(report?["followed_key"] as? String == "recipient_removal")
        let note = "vault: note: 'origin/main:team.vault' has another key (a recipient was removed there, which rotates the key): "
        let dry = try m.sync(m.b, ["--dry-run"], passphrase: true)
        #expect(dry.status == 0 && dry.stderr == note + "merging it would give this vault that copy's key (the passphrase stays as it was)\n", "\(dry.stderr)")
        let holder = try m.sync(m.b, passphrase: true)
        #expect(holder.status == 0 && holder.stderr == note + "this vault now has that copy's key (the passphrase stays as it was)\n", "\(holder.stderr)")
        let after = try Data(contentsOf: URL(fileURLWithPath: m.vaultB))
        let owner = try Data(contentsOf: URL(fileURLWithPath: m.vaultA))
        #expect(after.subdata(in: 38..<54) == owner.subdata(in: 38..<54), "the owner's data key id")
    }

    /// git's own pull on the owner's other machine (the agent holds the key from before the removal) runs the merge
    /// driver, which says that a recipient was removed, not that a passphrase changed (finding 4 of the re-walk).
    @Test(.enabled(if: enabled, "needs git and age: scripts/install-deps --test"))
    func theMergeDriverSaysARecipientWasRemoved() throws {
        let (m, key, recipient) = try Self.machines()
        func owner(_ arguments: [String], stdin: Data = Data()) throws -> AgentRun { try m.a.around(arguments + ["--vault", m.vaultA], stdin: stdin) }

        try #require(try owner(["put", "k"], stdin: Data("v".utf8)).status == 0)
        try #require(try owner(["recipients", "add", recipient]).status == 0)
        try #require(try m.sync(m.a, passphrase: true).status == 0)
        try #require(try m.git(m.b, ["pull", "-q"]).status == 0)
        chmod(m.vaultB, 0o600)
        try m.b.unlock(["--vault", m.vaultB])
        try #require(try owner(["recipients", "remove", recipient]).status == 0)
        try #require(try m.sync(m.a, passphrase: true).status == 0)

        try m.put(m.b, "from-b", "b")
        try #require(try m.git(m.b, ["commit", "-qam", "from-b"]).status == 0)
        let pull = try m.git(m.b, ["pull", "-q", "--no-rebase"])
        #expect(pull.status != 0)
        #expect(pull.stderr.contains("""
            vault: cannot merge 'team.vault': one side has another key (a recipient was removed on another machine, which rotates the key; the passphrase may be the same); abort this merge or rebase (git merge --abort, git rebase --abort) and run 'vault sync', which asks for the passphrase as that copy has it

            """), "\(pull.stderr)")
        #expect(!pull.stderr.contains("passphrase (changed"), "\(pull.stderr)")
    }
}
