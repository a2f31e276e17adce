import Foundation
import Testing

/// Issue 19 §2: `vault merge OTHER` merges another copy of the same vault, says what changed, writes nothing for
/// a dry run or a copy with nothing new, and refuses another vault; the same through the agent.
@Suite(.processTimeLimit) struct MergeCLITests {
    func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
    }

    /// A vault and a copy that both changed since they parted, as on two machines.
    func diverged(_ box: Sandbox) throws -> String {
        let here = ["XDG_STATE_HOME": box.directory + "/state-a"], there = ["XDG_STATE_HOME": box.directory + "/state-b"]
        #expect(try box.vault(["init"], extraEnvironment: here).status == 0)
        #expect(try box.vault(["put", "shared"], stdin: Data("1".utf8), extraEnvironment: here).status == 0)
        #expect(try box.vault(["put", "gone"], stdin: Data("g".utf8), extraEnvironment: here).status == 0)
        let copy = box.directory + "/vaults/copy.vault"
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: copy)
        #expect(try box.vault(["put", "here"], stdin: Data("h".utf8), extraEnvironment: here).status == 0)
        #expect(try box.vault(["put", "shared", "--force"], stdin: Data("2".utf8), extraEnvironment: here).status == 0)
        usleep(5_000)
        #expect(try box.vault(["put", "there", "--vault", copy], stdin: Data("t".utf8), extraEnvironment: there).status == 0)
        #expect(try box.vault(["put", "shared", "--force", "--vault", copy], stdin: Data("3".utf8), extraEnvironment: there).status == 0)
        #expect(try box.vault(["delete", "gone", "--yes", "--vault", copy], extraEnvironment: there).status == 0)
        return copy
    }

    @Test func aCopyIsMergedEntryByEntryAndAgainChangesNothing() throws {
        let box = try Sandbox()
        let copy = try diverged(box)
        let here = ["XDG_STATE_HOME": box.directory + "/state-a"]
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let dry = try box.vault(["merge", copy, "--dry-run"], extraEnvironment: here)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdoutText == """
            would merge '\(copy)' into '\(box.vaultPath)': 1 added, 0 updated, 1 deleted, 0 resurrected, 1 conflict
              added: there
              deleted: gone
              your change to shared lost to a later one from \(ReplicaNameTests.userAtHost); 'vault history shared' shows it as version 1

            """)
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before, "a dry run writes nothing")

        let merged = try box.vault(["merge", copy], extraEnvironment: here)
        #expect(merged.status == 0 && merged.stdoutText.hasPrefix("merged '\(copy)' into '\(box.vaultPath)': 1 added"), "\(merged.stderr)")
        #expect(try box.vault(["list"], extraEnvironment: here).stdoutText == "here\nshared\nthere\n")
        #expect(try box.vault(["get", "shared"], extraEnvironment: here).stdoutText == "3", "the later change wins")
        let history = try json(box.vault(["history", "shared", "--json", "--reveal"], extraEnvironment: here).stdout)
        let versions = try #require(history["versions"] as? [[String: Any]])
        #expect(versions.map { $0["conflict"] as? Bool } == [false, true, false])
        #expect(versions.map { (($0["fields"] as? [[String: Any]])?.first?["value"] as? String) } == ["3", "2", "1"])

        // Again: nothing new, nothing written.
        let after = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let again = try box.vault(["merge", copy, "--json"], extraEnvironment: here)
        #expect(again.status == 0)
        let report = try json(again.stdout)
        #expect(report["changed"] as? Bool == false && (report["added"] as? [String])?.isEmpty == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == after)
        // And the other way: the copy takes this one's changes, to the same content.
        let there = ["XDG_STATE_HOME": box.directory + "/state-b"]
        #expect(try box.vault(["merge", box.vaultPath, "--vault", copy], extraEnvironment: there).status == 0)
        #expect(try box.vault(["list", "--vault", copy], extraEnvironment: there).stdoutText == "here\nshared\nthere\n")
        #expect(try box.vault(["history", "shared", "--json", "--reveal", "--vault", copy], extraEnvironment: there).stdout
            == box.vault(["history", "shared", "--json", "--reveal"], extraEnvironment: here).stdout)
    }

    @Test func anotherVaultAVersion1FileAndAMissingFileAreRefusedWithNothingWritten() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8)).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let other = box.directory + "/vaults/other.vault", old = box.directory + "/vaults/old.vault"
        #expect(try box.vault(["init", "--vault", other]).status == 0)
        #expect(try box.vault(["init", "--vault", old, "--format", "1"]).status == 0)

        let another = try box.vault(["merge", other, "--json"])
        #expect(another.status == 6 && another.stderr.contains(#""code":"not_the_same_vault""#), "\(another.stderr)")
        let text = try box.vault(["merge", other])
        #expect(text.stderr == "vault: cannot merge '\(other)': it is another vault (the vault ids differ)\n")
        let versionOne = try box.vault(["merge", old])
        #expect(versionOne.status == 64 && versionOne.stderr.contains("is format version 1"), "\(versionOne.stderr)")
        let missing = try box.vault(["merge", box.directory + "/nothing.vault"])
        #expect(missing.status == 1 && missing.stderr.contains("No such file or directory"), "\(missing.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)
    }

    @Test func throughTheAgentTheSameReport() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        #expect(try box.around(["put", "a"], stdin: Data("1".utf8)).status == 0)
        let copy = box.directory + "/vaults/copy.vault"
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: copy)
        // Written on another machine (another state directory: another replica).
        let otherMachine = ["XDG_STATE_HOME": box.directory + "/state-b", "VAULT_AGENT_SOCK": box.elsewhereSocket]
        #expect(try box.vault(["put", "b", "--vault", copy], stdin: Data("2".utf8), source: true, environment: otherMachine).status == 0)
        try box.unlock()
        let agent = try box.vault(["merge", copy, "--dry-run", "--json"])
        let local = try box.around(["merge", copy, "--dry-run", "--json"])
        #expect(agent.status == 0 && agent.stdout == local.stdout, "\(agent.stderr) / \(local.stderr)")
        let merged = try box.vault(["merge", copy])
        #expect(merged.status == 0 && merged.stdoutText.contains("1 added"), "\(merged.stderr)")
        #expect(try box.vault(["list"]).stdoutText == "a\nb\n")
    }

    /// Two copies written on one machine: the one that lacks the other's writes (refused on its own: 6,
    /// missing_own_writes) takes them back by a merge, which says so.
    @Test func aCopyThatLacksThisMachinesWritesTakesThemBackByAMerge() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "a"], stdin: Data("1".utf8)).status == 0)
        let copy = box.directory + "/vaults/copy.vault"
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: copy)
        #expect(try box.vault(["put", "b", "--vault", copy], stdin: Data("2".utf8)).status == 0)
        #expect(try box.vault(["list"]).status == 6)
        let merged = try box.vault(["merge", copy])
        #expect(merged.status == 0 && merged.stdoutText.contains("1 added"), "\(merged.stderr)")
        #expect(merged.stderr == "vault: note: '\(box.vaultPath)' lacked changes made here (to another copy): merged as it was\n")
        #expect(try box.vault(["list"]).stdoutText == "a\nb\n")
    }
}
