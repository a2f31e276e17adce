import Foundation
import Testing
import VaultTestSupport

/// Issue 35 walkthrough finding 6 with real git and age-keygen's keys: a teammate removed from the vault is told so
/// (the key link's reason), not that a passphrase changed, and is not invited to --accept-rollback; the owner's other
/// machine is told that a recipient was removed there.
@Suite(.processTimeLimit) struct RemovedTeammateTests {
    static var enabled: Bool { GitSyncTests.git != nil && (RecipientCLITests.hasAge || ProcessInfo.processInfo.environment["CI"] == "true") }

    @Test(.enabled(if: enabled, "needs git and age: scripts/install-deps --test"))
    func theRemovedTeammateIsToldSoWhetherItSyncsOrPulls() throws {
        try #require(RecipientCLITests.hasAge, "age is needed (CI=true)")
        let m = try GitSyncTests.Machines()
        let key = m.b.directory + "/key.txt"
        let made = try runTool(RecipientCLITests.ageKeygen!, ["-o", key]) as (status: Int32, output: String)
        try #require(made.status == 0, "\(made.output)")
        let recipient = try RecipientCLITests.Team.recipient(of: key)
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
        let holder = try m.sync(m.b, passphrase: true)
        #expect(holder.status == 0 && holder.stderr.isEmpty, "\(holder.stderr)")
        let after = try Data(contentsOf: URL(fileURLWithPath: m.vaultB))
        let owner = try Data(contentsOf: URL(fileURLWithPath: m.vaultA))
        #expect(after.subdata(in: 38..<54) == owner.subdata(in: 38..<54), "the owner's data key id")
    }
}
