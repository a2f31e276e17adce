import Foundation
import Testing
@testable import VaultCore

/// Issue 19 §1 through the CLI, format version 3: a change that lost to a concurrent deletion is kept, said by the
/// merge and brought back by `vault restore --deleted` (here and through the agent); a copy behind the tombstone
/// horizon is refused with nothing written; a version-2 vault stays version 2 until `vault upgrade`.
@Suite(.processTimeLimit) struct HorizonCLITests {
    func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
    }

    /// A vault where `github` was deleted here after another machine changed it in a copy: returns the copy.
    func deletedHereChangedThere(_ box: Sandbox) throws -> String {
        let here = ["XDG_STATE_HOME": box.directory + "/state-a"], there = ["XDG_STATE_HOME": box.directory + "/state-b"]
        #expect(try box.vault(["init"], extraEnvironment: here).status == 0)
        #expect(try box.vault(["put", "github"], stdin: Data("v1".utf8), extraEnvironment: here).status == 0)
        let copy = box.directory + "/vaults/copy.vault"
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: copy)
        #expect(try box.vault(["replica", "name", "bob@desk", "--vault", copy], extraEnvironment: there).status == 0)
        #expect(try box.vault(["put", "github", "--force", "--vault", copy], stdin: Data("changed there".utf8), extraEnvironment: there).status == 0)
        usleep(5_000)
        #expect(try box.vault(["delete", "github", "--yes"], extraEnvironment: here).status == 0)
        return copy
    }

    @Test func aChangeThatLostToADeletionIsKeptSaidAndRestored() throws {
        let box = try Sandbox()
        let copy = try deletedHereChangedThere(box)
        let here = ["XDG_STATE_HOME": box.directory + "/state-a"]
        let merged = try box.vault(["merge", copy], extraEnvironment: here)
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(merged.stdoutText == """
            merged '\(copy)' into '\(box.vaultPath)': 0 added, 0 updated, 0 deleted, 0 resurrected, 0 conflicts
              kept: github: bob@desk's change lost to your later deletion, which keeps it ('vault restore --deleted github' brings it back)

            """)
        #expect(try box.vault(["list"], extraEnvironment: here).stdoutText == "", "the deletion won")
        #expect(try box.vault(["list", "--deleted"], extraEnvironment: here).stdoutText == "github\n")
        #expect(try box.vault(["list", "--deleted", "git"], extraEnvironment: here).stdoutText == "github\n")
        #expect(try box.vault(["list", "--deleted", "gitlab"], extraEnvironment: here).stdoutText == "")
        let listed = try json(box.vault(["list", "--deleted", "--json"], extraEnvironment: here).stdout)
        let entry = try #require((listed["deleted"] as? [[String: Any]])?.first)
        #expect(entry["name"] as? String == "github" && (entry["id"] as? String)?.count == 32)
        let (deletedAt, keptAt) = (try #require(entry["deleted"] as? String), try #require(entry["kept"] as? String))
        #expect(deletedAt.hasSuffix("Z") && keptAt < deletedAt, "the change kept was made before the deletion")
        let again = try box.vault(["merge", copy, "--json"], extraEnvironment: here)
        #expect(try json(again.stdout)["kept_deleted"] as? [String] == [], "kept once")

        // The name taken by a new entry: exit 7, and the hint says to rename it first.
        #expect(try box.vault(["put", "github"], stdin: Data("new one".utf8), extraEnvironment: here).status == 0)
        let taken = try box.vault(["restore", "github", "--deleted"], extraEnvironment: here)
        #expect(taken.status == 7 && taken.stderr == "vault: cannot restore 'github' as it was before its deletion: an entry 'github' exists in vault '\(box.vaultPath)'\nhint: rename that entry first ('vault mv github NEW-NAME'), then restore; 'vault list --deleted' lists what deletions kept\n", "\(taken.stderr)")
        #expect(try box.vault(["mv", "github", "github-new"], extraEnvironment: here).status == 0)
        let restored = try box.vault(["restore", "github", "--deleted", "--json"], extraEnvironment: here)
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(try json(restored.stdout)["deleted"] as? Bool == true)
        #expect(try box.vault(["get", "github"], extraEnvironment: here).stdoutText == "changed there")
        #expect(try box.vault(["list", "--deleted"], extraEnvironment: here).stdoutText == "", "restored: nothing kept")
        // Nothing is kept any more; the copy that deleted nothing takes the restore as the later version.
        let none = try box.vault(["restore", "github", "--deleted"], extraEnvironment: here)
        #expect(none.status == 2 && none.stderr.hasPrefix("vault: no deleted entry 'github' to bring back"), "nothing kept: \(none.stderr)")
        let missing = try box.vault(["restore", "nothing", "--deleted"], extraEnvironment: here)
        #expect(missing.status == 2 && missing.stderr.hasPrefix("vault: no deleted entry 'nothing' to bring back in vault '\(box.vaultPath)' (deleted entries are kept 30 days)\n"), "\(missing.stderr)")
        let there = ["XDG_STATE_HOME": box.directory + "/state-b"]
        #expect(try box.vault(["merge", box.vaultPath, "--vault", copy], extraEnvironment: there).status == 0)
        #expect(try box.vault(["get", "github", "--vault", copy], extraEnvironment: there).stdoutText == "changed there")

        // Bad arguments: 64, nothing written.
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let both = try box.vault(["restore", "github", "--deleted", "--version", "1"], extraEnvironment: here)
        #expect(both.status == 64 && both.stderr.contains("give --version N or --deleted, not both"), "\(both.stderr)")
        let neither = try box.vault(["restore", "github"], extraEnvironment: here)
        #expect(neither.status == 64 && neither.stderr.contains("give --version N (an earlier version) or --deleted"), "\(neither.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)
    }

    @Test func throughTheAgentTheKeptChangeIsRestored() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        #expect(try box.around(["put", "github"], stdin: Data("v1".utf8)).status == 0)
        let copy = box.directory + "/vaults/copy.vault"
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: copy)
        let otherMachine = ["XDG_STATE_HOME": box.directory + "/state-b", "VAULT_AGENT_SOCK": box.elsewhereSocket]
        #expect(try box.vault(["put", "github", "--force", "--vault", copy], stdin: Data("changed there".utf8), source: true, environment: otherMachine).status == 0)
        usleep(5_000)
        #expect(try box.around(["delete", "github", "--yes"]).status == 0)
        try box.unlock()
        let merged = try box.vault(["merge", copy, "--json"])
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(try json(merged.stdout)["kept_deleted"] as? [String] == ["github"])
        #expect(try box.vault(["list", "--deleted"]).stdoutText == "github\n", "through the agent")
        let restored = try box.vault(["restore", "github", "--deleted"])
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(try box.vault(["get", "github"]).stdoutText == "changed there")
        #expect(try box.around(["get", "github"]).stdoutText == "changed there", "written to the file")
    }

    /// A fixed wall clock, to write copies whose clocks lie in the past.
    struct Clock: WallClock {
        let now: UInt64
        func milliseconds() -> UInt64 { now }
    }

    /// Two copies made with the library: one whose mark says it dropped a's deletions up to a time (as a writer
    /// that drops tombstones leaves it), one made before that time. The CLI refuses to merge either into the other, with
    /// nothing written.
    @Test func aCopyBehindTheHorizonIsRefusedWithNothingWritten() throws {
        let box = try Sandbox()
        try FileManager.default.createDirectory(atPath: box.directory + "/vaults", withIntermediateDirectories: true)
        let start = UInt64(Date().timeIntervalSince1970 * 1000) - 86_400_000
        let (document, key) = try VaultDocument.create(
            passphrase: SecureBytes(string: "correct horse battery staple"), parameters: .insecureForTesting, label: "v")
        let (a, b) = (ReplicaID(rawValue: 1), ReplicaID(rawValue: 2))
        func set(_ name: String) -> DocumentChange { .setField(entry: name, field: "password", value: SecureBytes(string: name)) }
        try document.apply([set("gone"), set("stays")], replica: a, clock: Clock(now: start))
        try document.apply([set("b")], replica: b, clock: Clock(now: start + 1))
        let stale = try document.seal(dataKey: key)
        // The old copy changed something of its own since (so the current copy does not hold all it holds).
        let oldDocument = document.copied()
        try oldDocument.apply([set("only-old")], replica: ReplicaID(rawValue: 3), clock: Clock(now: start + 2))
        let old = try oldDocument.seal(dataKey: key)
        try document.apply([set("a2")], replica: a, clock: Clock(now: start + 1000))
        document.dropped = [a: (start + 500) << 16]
        let current = try document.seal(dataKey: key)
        let oldPath = box.directory + "/vaults/old.vault"
        FileManager.default.createFile(atPath: box.vaultPath, contents: Data(current), attributes: [.posixPermissions: 0o600])
        FileManager.default.createFile(atPath: oldPath, contents: Data(old), attributes: [.posixPermissions: 0o600])

        let refused = try box.vault(["merge", oldPath, "--json"])
        #expect(refused.status == 6, "\(refused.stderr)")
        let error = try #require(try json(Data(refused.stderr.utf8))["error"] as? [String: Any])
        #expect(error["code"] as? String == "behind_horizon")
        #expect((error["message"] as? String) == "cannot merge '\(oldPath)': it has not seen deletions the other copy no longer records, so merging it could bring deleted entries back")
        #expect((error["hint"] as? String)?.contains("has changes of its own: replace it with the newer one") == true)
        let text = try box.vault(["merge", box.vaultPath, "--vault", oldPath])
        #expect(text.status == 6 && text.stderr.hasPrefix("vault: cannot merge '\(oldPath)'"), "\(text.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == Data(current), "nothing written")
        #expect(try Data(contentsOf: URL(fileURLWithPath: oldPath)) == Data(old), "nothing written")
        #expect(try box.vault(["list"]).stdoutText == "a2\nb\ngone\nstays\n")

        // A copy left behind that changed nothing since is not refused: the current copy holds all it holds, so
        // merging it changes nothing here, and merging the current copy into it brings it up to date.
        let stalePath = box.directory + "/vaults/stale.vault"
        FileManager.default.createFile(atPath: stalePath, contents: Data(stale), attributes: [.posixPermissions: 0o600])
        let caughtUp = try box.vault(["merge", stalePath])
        #expect(caughtUp.status == 0, "\(caughtUp.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == Data(current), "nothing new: nothing written")
        let forward = try box.vault(["merge", box.vaultPath, "--vault", stalePath])
        #expect(forward.status == 0 && forward.stdoutText.contains("1 added"), "\(forward.stdout) \(forward.stderr)")
        #expect(try box.vault(["list", "--vault", stalePath]).stdoutText == "a2\nb\ngone\nstays\n")
    }

    /// git's merge driver meets a side that has not seen a dropped deletion and has changes of its own: a conflict
    /// for git (exit 1), ours untouched, and the message names the sides by the path in the repository, not by
    /// git's temporary files.
    @Test func theMergeDriverNamesTheSideBehindByItsPathInTheRepository() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try FileManager.default.createDirectory(atPath: box.directory + "/vaults", withIntermediateDirectories: true)
        let start = UInt64(Date().timeIntervalSince1970 * 1000) - 86_400_000
        let (document, key) = try VaultDocument.create(
            passphrase: SecureBytes(string: "correct horse battery staple"), parameters: .insecureForTesting, label: "v")
        func set(_ name: String) -> DocumentChange { .setField(entry: name, field: "password", value: SecureBytes(string: name)) }
        try document.apply([set("gone")], replica: ReplicaID(rawValue: 1), clock: Clock(now: start))
        let behind = document.copied()
        try behind.apply([set("only-behind")], replica: ReplicaID(rawValue: 3), clock: Clock(now: start + 2))
        try document.apply([set("a2")], replica: ReplicaID(rawValue: 1), clock: Clock(now: start + 1000))
        document.dropped = [ReplicaID(rawValue: 1): (start + 500) << 16]
        let current = try document.seal(dataKey: key)
        FileManager.default.createFile(atPath: box.vaultPath, contents: Data(current), attributes: [.posixPermissions: 0o600])
        try box.unlock()
        let (a, b) = (box.directory + "/vaults/.merge_file_a", box.directory + "/vaults/.merge_file_b")
        FileManager.default.createFile(atPath: a, contents: Data(current), attributes: [.posixPermissions: 0o644])
        FileManager.default.createFile(atPath: b, contents: Data(try behind.seal(dataKey: key)), attributes: [.posixPermissions: 0o644])
        let driver = try box.vault(["git", "merge-driver", a, a, b, "team.vault"])
        #expect(driver.status == 1, "\(driver.stderr)")
        #expect(driver.stderr.hasPrefix("vault: cannot merge 'team.vault': cannot merge 'team.vault (theirs)': it has not seen deletions"), "\(driver.stderr)")
        #expect(!driver.stderr.contains(".merge_file"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: a)) == Data(current), "ours untouched")
    }

    @Test func aVersion2VaultStaysVersion2UntilUpgradedThenEveryVerbWorks() throws {
        let box = try Sandbox()
        #expect(try box.vault(["init", "--format", "2"]).status == 0)
        #expect(try box.vault(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        #expect(try box.vault(["put", "gone"], stdin: Data("x".utf8)).status == 0)
        #expect(try box.vault(["delete", "gone", "--yes"]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))[8] == 2, "a write keeps version 2")
        let history = try box.vault(["history", "github", "--json"]).stdout

        let upgraded = try box.vault(["upgrade"])
        #expect(upgraded.status == 0, "\(upgraded.stderr)")
        #expect(upgraded.stdoutText == "upgraded vault '\(box.vaultPath)' from format version 2 to 3 (1 entry)\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))[8] == 3)
        #expect(try json(box.vault(["info", "--json"], passphrase: false).stdout)["format_version"] as? Int == 3)
        #expect(try box.vault(["history", "github", "--json"]).stdout == history, "entries, ids and times kept")
        #expect(try box.vault(["put", "github", "--force"], stdin: Data("n3w".utf8)).status == 0)
        #expect(try box.vault(["get", "github"]).stdoutText == "n3w")
        let again = try box.vault(["upgrade"])
        #expect(again.status == 0 && again.stdoutText == "vault '\(box.vaultPath)' is already format version 3\n")
    }
}
