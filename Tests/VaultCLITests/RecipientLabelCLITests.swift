import Foundation
import Testing
import VaultTestSupport

/// Issue 35 §4: recipients carry labels (`--label alice@laptop`), sealed in the vault; `list` shows them beside the
/// keys when the vault is at hand; `remove` takes the label or the key. And `recipients add/remove/list` through the
/// agent: with the vault unlocked there, nothing is asked (no terminal, no passphrase source), with the real
/// `age`/`age-keygen`.
@Suite(.serialized, .processTimeLimit) struct RecipientLabelCLITests {
    static let enabled = RecipientCLITests.hasAge || ProcessInfo.processInfo.environment["CI"] == "true"

    @Test(.enabled(if: enabled, RecipientCLITests.needsAge))
    func aLabelIsGivenShownSealedAndTakenByRemove() throws {
        try #require(RecipientCLITests.hasAge, "age is needed (CI=true)")
        let team = try RecipientCLITests.Team()
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["put", "web/github"], stdin: Data("t0k3n".utf8)).status == 0)
        let added = try team.owner(["recipients", "add", team.recipient, "--label", "alice@laptop"])
        #expect(added.status == 0 && added.stdoutText == "added recipient \(team.recipient) (alice@laptop)\n", "\(added.stderr)")
        #expect(try team.owner(["recipients", "add", team.otherRecipient]).status == 0)
        #expect(team.bytes.firstRange(of: Array("alice".utf8)) == nil, "the label is sealed: the file shows no name")

        // Without the key at hand: the keys alone, and how to see the labels.
        let plain = try team.box.vault(["recipients", "list"], passphrase: false, extraEnvironment: team.state)
        #expect(plain.status == 0 && plain.stdoutText == team.recipient + "\n" + team.otherRecipient + "\n", "\(plain.stderr)")
        #expect(plain.stderr == "vault: the recipients' labels are sealed in the vault: 'vault unlock' (or --identity) shows them\n")
        // With an identity: the labels beside the keys.
        let shown = try team.with(team.key, ["recipients", "list"])
        #expect(shown.status == 0 && shown.stdoutText == team.recipient + " alice@laptop\n" + team.otherRecipient + "\n", "\(shown.stderr)")
        let json = try team.with(team.key, ["recipients", "list", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any], "\(json.stderr)")
        #expect(object["labels"] as? [String: String] == [team.recipient: "alice@laptop"])

        // A new label for a recipient present; a label another recipient has, a bad one, one for two keys: refused.
        let relabelled = try team.owner(["recipients", "add", team.recipient, "--label", "alice@desk"])
        #expect(relabelled.stdoutText == "recipient \(team.recipient) was already present; labelled (alice@desk)\n", "\(relabelled.stderr)")
        let before = team.bytes
        let taken = try team.owner(["recipients", "add", team.otherRecipient, "--label", "alice@desk"])
        #expect(taken.status == 64 && taken.stderr.contains("recipient \(team.recipient) of vault '\(team.box.vaultPath)' is labelled 'alice@desk' already"), "\(taken.stderr)")
        let keyLike = try team.owner(["recipients", "add", team.otherRecipient, "--label", "age1bob"])
        #expect(keyLike.status == 64 && keyLike.stderr.contains("not starting with 'age1'"), "\(keyLike.stderr)")
        let two = try team.owner(["recipients", "add", team.recipient, team.otherRecipient, "--label", "both"])
        #expect(two.status == 64 && two.stderr.contains("--label names one recipient"), "\(two.stderr)")
        #expect(team.bytes == before, "a refused command wrote the vault")

        // remove takes the label; an unknown label is not found, nothing written.
        let unknown = try team.owner(["recipients", "remove", "carol"])
        #expect(unknown.status == 2 && unknown.stderr.contains("has no recipient labelled 'carol'"), "\(unknown.stderr)")
        #expect(team.bytes == before)
        let removed = try team.owner(["recipients", "remove", "alice@desk"])
        #expect(removed.status == 0 && removed.stdoutText.hasPrefix("removed recipient alice@desk (\(team.recipient)); the vault's key was rotated\n"), "\(removed.stderr)")
        #expect(try team.with(team.other, ["recipients", "list"]).stdoutText == team.otherRecipient + "\n")
    }

    /// A label changed on two machines (two copies merged by `vault merge`): the later one wins, whichever copy the
    /// merge runs in.
    @Test(.enabled(if: enabled, RecipientCLITests.needsAge))
    func aLabelChangedOnTwoMachinesEndsAsTheLaterOne() throws {
        try #require(RecipientCLITests.hasAge, "age is needed (CI=true)")
        let team = try RecipientCLITests.Team()
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["recipients", "add", team.recipient, "--label", "alice"]).status == 0)
        let copy = team.box.directory + "/copy.vault"
        try FileManager.default.copyItem(atPath: team.box.vaultPath, toPath: copy)
        // The copy relabels first, the vault later: the vault's label is the later one.
        #expect(try team.owner(["recipients", "add", team.recipient, "--label", "alice@old", "--vault", copy]).status == 0)
        usleep(5_000)
        #expect(try team.owner(["recipients", "add", team.recipient, "--label", "alice@new"]).status == 0)
        let backup = team.box.directory + "/vault.before"
        try FileManager.default.copyItem(atPath: team.box.vaultPath, toPath: backup)
        for (into, from) in [(team.box.vaultPath, copy), (copy, backup)] {
            let merged = try team.owner(["merge", from, "--vault", into])
            #expect(merged.status == 0, "\(merged.stderr)")
            let listed = try team.with(team.key, ["recipients", "list", "--vault", into])
            #expect(listed.stdoutText == team.recipient + " alice@new\n", "\(into): \(listed.stderr)")
        }
    }

    /// Through the agent: the vault unlocked there, `add` (no terminal, no passphrase source) wraps the key for the
    /// recipient, whose identity reads the data key with the stock `age -d`; `list` shows the labels; `remove` asks
    /// nothing either (the agent, unlocked with the passphrase, keeps the key it gave and wraps the new data key with
    /// it), rotates the key (the kept recipient's stanza holds a new key, the removed identity opens nothing, the
    /// passphrase still opens the vault), and the vault stays unlocked under its new key. Locked: the CLI asks as
    /// before.
    @Test(.enabled(if: enabled, RecipientCLITests.needsAge))
    func addListAndRemoveThroughTheAgentAskNothing() throws {
        try #require(RecipientCLITests.hasAge, "age is needed (CI=true)")
        let team = try RecipientCLITests.Team()
        let box = try AgentBox()
        try box.initVault()
        #expect(try box.around(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        // Locked: no agent holds the vault, and nothing to ask with: refused as before, nothing written.
        let locked = try box.vault(["recipients", "add", team.recipient])
        #expect(locked.status != 0 && locked.stderr.contains("passphrase"), "\(locked.stderr)")
        try box.unlock()

        let added = try box.vault(["recipients", "add", team.recipient, "--label", "alice@laptop"])
        #expect(added.status == 0 && added.stdoutText == "added recipient \(team.recipient) (alice@laptop)\n", "\(added.stderr)")
        #expect(try box.vault(["recipients", "add", team.otherRecipient, "--label", "bob"]).status == 0)
        let bytes = [UInt8](FileManager.default.contents(atPath: box.vaultPath) ?? Data())
        let dataKey = try #require(try RecipientCLITests.dataKey(of: bytes, for: team.recipient, identity: team.key, in: box.directory))
        #expect(dataKey.count == 32)
        let read = try box.vault(["get", "github", "--identity", team.key], environment: ["VAULT_AGENT_SOCK": box.elsewhereSocket])
        #expect(read.status == 0 && read.stdoutText == "t0k3n", "\(read.stderr)")
        let listed = try box.vault(["recipients", "list"])
        #expect(listed.status == 0 && listed.stdoutText == team.recipient + " alice@laptop\n" + team.otherRecipient + " bob\n", "\(listed.stderr)")

        // A passphrase given is checked as without the agent: a wrong one is refused, nothing written.
        let wrongFile = box.directory + "/wrong"
        FileManager.default.createFile(atPath: wrongFile, contents: Data("not it\n".utf8), attributes: [.posixPermissions: 0o600])
        let wrong = try box.vault(["recipients", "remove", "bob", "--passphrase-file", wrongFile])
        #expect(wrong.status == 3 && wrong.stderr.contains("incorrect passphrase"), "\(wrong.stderr)")
        #expect([UInt8](FileManager.default.contents(atPath: box.vaultPath) ?? Data()) == bytes, "nothing written")
        // No terminal, no passphrase source: the removal asks nothing.
        let removed = try box.vault(["recipients", "remove", "bob", "--json"])
        #expect(removed.status == 0, "\(removed.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: removed.stdout) as? [String: Any])
        #expect(object["removed"] as? String == team.otherRecipient && object["exposed_count"] as? Int == 1)
        #expect(object["recipients"] as? [String] == [team.recipient])
        let after = [UInt8](FileManager.default.contents(atPath: box.vaultPath) ?? Data())
        let newKey = try #require(try RecipientCLITests.dataKey(of: after, for: team.recipient, identity: team.key, in: box.directory))
        #expect(newKey.count == 32 && newKey != dataKey, "re-encrypted under a new key")
        #expect(RecipientCLITests.ageFiles(of: after)[team.otherRecipient] == nil)
        let lockedOut = try box.vault(["get", "github", "--identity", team.other], environment: ["VAULT_AGENT_SOCK": box.elsewhereSocket])
        #expect(lockedOut.status == 3, "\(lockedOut.stderr)")
        // The passphrase still opens it, without the agent.
        let byPassphrase = try box.around(["get", "github"])
        #expect(byPassphrase.status == 0 && byPassphrase.stdoutText == "t0k3n", "\(byPassphrase.stderr)")
        // Still unlocked in the agent, under the new key: nothing asked.
        let still = try box.vault(["get", "github"])
        #expect(still.status == 0 && still.stdoutText == "t0k3n", "\(still.stderr)")
        #expect(try box.vault(["recipients", "list"]).stdoutText == team.recipient + " alice@laptop\n")
    }

    /// The agent unlocked with an identity holds the data key and no passphrase's key: a removal from a vault with a
    /// passphrase needs the passphrase (the new key is wrapped for it): refused with nothing to ask with, a wrong one
    /// refused (exit 3), nothing written either time; the right one from a file goes on.
    @Test(.enabled(if: enabled, RecipientCLITests.needsAge))
    func aRemovalThroughAnAgentUnlockedByAnIdentityTakesThePassphrase() throws {
        try #require(RecipientCLITests.hasAge, "age is needed (CI=true)")
        let team = try RecipientCLITests.Team()
        let box = try AgentBox()
        try box.initVault()
        #expect(try box.around(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        #expect(try box.around(["recipients", "add", team.recipient]).status == 0)
        #expect(try box.around(["recipients", "add", team.otherRecipient, "--label", "bob"]).status == 0)
        let unlocked = try box.vault(["unlock", "--identity", team.key])
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        let bytes = [UInt8](FileManager.default.contents(atPath: box.vaultPath) ?? Data())

        let nothing = try box.vault(["recipients", "remove", "bob"])
        #expect(nothing.status != 0 && nothing.stderr.contains("passphrase"), "\(nothing.stderr)")
        let wrongFile = box.directory + "/wrong"
        FileManager.default.createFile(atPath: wrongFile, contents: Data("not it\n".utf8), attributes: [.posixPermissions: 0o600])
        let wrong = try box.vault(["recipients", "remove", "bob", "--passphrase-file", wrongFile])
        #expect(wrong.status == 3 && wrong.stderr.contains("incorrect passphrase"), "\(wrong.stderr)")
        #expect([UInt8](FileManager.default.contents(atPath: box.vaultPath) ?? Data()) == bytes, "nothing written")
        let right = try box.vault(["recipients", "remove", "bob"], source: true)
        #expect(right.status == 0, "\(right.stderr)")
        #expect(try box.around(["get", "github"]).stdoutText == "t0k3n")
        #expect(try box.vault(["recipients", "list"]).stdoutText == team.recipient + "\n")
    }
}
