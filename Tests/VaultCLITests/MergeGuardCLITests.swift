import Foundation
import Testing
@testable import VaultCore

/// Issue 33 §2 and §3 through the CLI: a copy with clocks at the end of time, or a replica table that claims to be
/// ahead of every replica, is refused (exit 6, nothing written); a vault that took such clocks in keeps writing and is
/// repaired by `vault repair --clocks`; many deletions at once need `--accept-deletions` (exit 1 without); a refused
/// copy put over the vault does not poison the rollback record.
@Suite(.processTimeLimit) struct MergeGuardCLITests {
    func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
    }

    func error(_ result: CLIResult) throws -> [String: Any] {
        try #require(try json(Data(result.stderr.utf8))["error"] as? [String: Any])
    }

    /// The sandbox's vault opened with the library, to make copies of it as another program would.
    func opened(_ box: Sandbox) throws -> (VaultDocument, SecureBytes) {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: box.vaultPath)))
        return try VaultDocument.open(bytes, with: .passphrase(SecureBytes(string: Adversarial.passphrase)), label: "copy", policy: .insecureForTesting)
    }

    func write(_ bytes: [UInt8], to path: String) {
        FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
    }

    struct Clock: WallClock {
        let now: UInt64
        func milliseconds() -> UInt64 { now }
    }

    @Test func aCopyFromTheEndOfTimeIsRefusedAndAVaultThatTookOneInIsRepaired() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "github"], stdin: Data("mine".utf8)).status == 0)
        #expect(try box.vault(["put", "other"], stdin: Data("o".utf8)).status == 0)
        let (document, key) = try opened(box)
        let evil = document.copied()
        let end = HybridTimestamp.maximumMilliseconds
        try evil.apply([.setField(entry: "github", field: "password", value: SecureBytes(string: "frozen"))], replica: ReplicaID(rawValue: 2), clock: Clock(now: end))
        evil.entries[evil.idsByName["github"]!]!.modified = HybridTimestamp(milliseconds: end, counter: .max, replica: ReplicaID(rawValue: 2))
        evil.replicas = evil.replicas.mapValues { HybridTimestamp(milliseconds: end, counter: .max, replica: $0.replica) }
        let copy = box.directory + "/vaults/frozen.vault"
        write(try evil.copied().seal(dataKey: key), to: copy)

        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let refused = try box.vault(["merge", copy, "--json"])
        #expect(refused.status == 6, "\(refused.stderr)")
        let failure = try error(refused)
        #expect(failure["code"] as? String == "clock_ahead")
        #expect((failure["message"] as? String)?.hasPrefix("cannot merge '\(copy)': it holds a clock of replica ") == true, "\(failure)")
        #expect((failure["message"] as? String)?.contains("10889-") == true, "the time, \(failure)")
        #expect((failure["hint"] as? String)?.contains("vault repair --clocks") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before, "nothing written")

        // The vault as such a merge left it before merges refused it: writes of other entries work, one to the entry at
        // the end of time says what repairs it.
        let stuck = try VaultDocument.merge(evil, document, now: end).0
        write(try stuck.seal(dataKey: key), to: box.vaultPath)
        let put = try box.vault(["put", "other", "--force"], stdin: Data("x".utf8))
        #expect(put.status == 0, "\(put.stderr)")
        #expect(try box.vault(["put", "new"], stdin: Data("n".utf8)).status == 0)
        #expect(try box.vault(["delete", "new", "--yes"]).status == 0)
        let frozen = try box.vault(["put", "github", "--force"], stdin: Data("y".utf8))
        #expect(frozen.status == 1 && frozen.stderr.contains("hint: 'vault repair --clocks'"), "\(frozen.stderr)")

        let stuckBytes = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let dry = try box.vault(["repair", "--clocks", "--dry-run"])
        #expect(dry.status == 0 && dry.stdoutText.hasPrefix("would re-stamp in the present: 1 entries, 0 deletions"), "\(dry.stdoutText) \(dry.stderr)")
        #expect(dry.stdoutText.contains("  entry: github\n"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == stuckBytes, "a dry run writes nothing")
        let repaired = try box.vault(["repair", "--clocks", "--json"])
        #expect(repaired.status == 0, "\(repaired.stderr)")
        #expect(try json(repaired.stdout)["entries"] as? [String] == ["github"])
        #expect(try box.vault(["get", "github"]).stdoutText == "frozen", "the value is kept")
        #expect(try box.vault(["put", "github", "--force"], stdin: Data("fixed".utf8)).status == 0)
        #expect(try box.vault(["get", "github"]).stdoutText == "fixed")
        #expect(try box.vault(["get", "github", "--version", "2"]).stdoutText == "mine", "and the history")
        #expect(try box.vault(["repair", "--clocks"]).stdoutText.contains("nothing to repair"))
        #expect(try box.vault(["merge", copy]).status == 6, "the copy from the future is refused from then on")
    }

    @Test func aWipingReplicaTableIsRefusedWithNothingWritten() throws {
        let box = try Sandbox()
        try box.initVault()
        for name in ["a", "b", "c"] { #expect(try box.vault(["put", name], stdin: Data(name.utf8)).status == 0) }
        let (document, key) = try opened(box)
        // No entries, no tombstones; a table and dropped marks one millisecond ahead of every replica, this one's too.
        let wiper = document.copied()
        try wiper.apply([.deleteAll], replica: ReplicaID(rawValue: 9), clock: Clock(now: UInt64(Date().timeIntervalSince1970 * 1000)))
        wiper.tombstones = [:]
        wiper.deletions = [:]
        wiper.seen = [:]
        wiper.replicas = document.replicas.mapValues { HybridTimestamp(packed: $0.packed + (1 << 16), replica: $0.replica) }
        wiper.dropped = wiper.replicas.mapValues(\.packed)
        let copy = box.directory + "/vaults/wiper.vault"
        write(try wiper.seal(dataKey: key), to: copy)

        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let refused = try box.vault(["merge", copy, "--json"])
        #expect(refused.status == 6, "\(refused.stderr)")
        #expect(try error(refused)["code"] as? String == "untrusted_copy")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before, "nothing written")
        #expect(try box.vault(["list"]).stdoutText == "a\nb\nc\n")
    }

    @Test func aMergeThatDeletesManyEntriesNeedsAcceptDeletions() throws {
        let box = try Sandbox()
        let here = ["XDG_STATE_HOME": box.directory + "/state-a"], there = ["XDG_STATE_HOME": box.directory + "/state-b"]
        #expect(try box.vault(["init"], extraEnvironment: here).status == 0)
        let names = (10..<22).map { "e\($0)" }
        for name in names { #expect(try box.vault(["put", name], stdin: Data("v".utf8), extraEnvironment: here).status == 0) }
        let copy = box.directory + "/vaults/copy.vault"
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: copy)
        #expect(try box.vault(["delete", "--yes", "--vault", copy] + names.dropLast(), extraEnvironment: there).status == 0)

        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let refused = try box.vault(["merge", copy, "--json"], extraEnvironment: here)
        #expect(refused.status == 1, "\(refused.stderr)")
        let failure = try error(refused)
        #expect(failure["code"] as? String == "mass_deletion" && failure["names"] as? [String] == Array(names.dropLast()))
        #expect((failure["message"] as? String)?.hasPrefix("merging '\(copy)' would delete 11 entries ('e10', 'e11', 'e12', 'e13', 'e14', ...)") == true, "\(failure)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before, "nothing written")
        let dry = try box.vault(["merge", copy, "--dry-run"], extraEnvironment: here)
        #expect(dry.status == 0 && dry.stdoutText.contains("11 deleted"), "\(dry.stderr)")
        #expect(dry.stderr == "vault: note: the merge would delete 11 of 12 entries: it asks on a terminal, else needs --accept-deletions\n")
        let accepted = try box.vault(["merge", copy, "--accept-deletions"], extraEnvironment: here)
        #expect(accepted.status == 0 && accepted.stdoutText.contains("11 deleted"), "\(accepted.stderr)")
        #expect(try box.vault(["list"], extraEnvironment: here).stdoutText == "e21\n")
    }

    /// On a terminal the merge names the entries it would delete and asks: no keeps the vault as it was (exit 1), yes
    /// merges.
    @Test func onATerminalManyDeletionsAreAskedAbout() throws {
        let box = try Sandbox()
        try box.initVault()
        let names = (10..<22).map { "e\($0)" }
        for name in names { #expect(try box.vault(["put", name], stdin: Data("v".utf8)).status == 0) }
        let copy = box.directory + "/vaults/copy.vault"
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: copy)
        let there = ["XDG_STATE_HOME": box.directory + "/state-b"]
        #expect(try box.vault(["delete", "--yes", "--vault", copy] + names.dropLast(), extraEnvironment: there).status == 0)
        func onTerminal(_ keys: String) throws -> CLIResult {
            let environment = box.environment.merging(["VAULT": CLI.vault, "VAULT_PASSPHRASE": Adversarial.passphrase, "COPY": copy]) { $1 }
            return try PseudoTerminal.run(
                "/bin/bash", ["-c", #""$VAULT" merge "$COPY"; echo "[exit $?]""#],
                playing: [.init(marker: "Delete these 11 entries? [y/N] ", keys: keys)], environment: environment, seconds: 30)
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let declined = try onTerminal("n\n")
        #expect(declined.stdoutText.contains("deletes 11 entries:") && declined.stdoutText.contains("  e20"), "\(declined.stdoutText)")
        #expect(declined.stdoutText.contains("nothing merged: the deletions were not accepted") && declined.stdoutText.contains("[exit 1]"), "\(declined.stdoutText)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before, "nothing written")
        let accepted = try onTerminal("y\n")
        #expect(accepted.stdoutText.contains("11 deleted") && accepted.stdoutText.contains("[exit 0]"), "\(accepted.stdoutText)")
        #expect(try box.vault(["list"]).stdoutText == "e21\n")
    }

    /// Through the agent the merge refuses many deletions alike and takes them with --accept-deletions; git's merge
    /// driver, which cannot ask, leaves a conflict (ours untouched) and says to run `vault sync`.
    @Test func throughTheAgentAndGitsDriverManyDeletionsNeedConsent() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        let names = (10..<22).map { "e\($0)" }
        for name in names { #expect(try box.around(["put", name], stdin: Data("v".utf8)).status == 0) }
        let copy = box.directory + "/vaults/copy.vault"
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: copy)
        let otherMachine = ["XDG_STATE_HOME": box.directory + "/state-b", "VAULT_AGENT_SOCK": box.elsewhereSocket]
        #expect(try box.vault(["delete", "--yes", "--vault", copy] + names.dropLast(), source: true, environment: otherMachine).status == 0)
        try box.unlock()
        let current = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let (a, b) = (box.directory + "/vaults/.merge_file_a", box.directory + "/vaults/.merge_file_b")
        FileManager.default.createFile(atPath: a, contents: current, attributes: [.posixPermissions: 0o644])
        try FileManager.default.copyItem(atPath: copy, toPath: b)
        let driver = try box.vault(["git", "merge-driver", a, a, b, "team.vault"])
        #expect(driver.status == 1, "\(driver.stderr)")
        #expect(driver.stderr.hasPrefix("vault: cannot merge 'team.vault': theirs deletes 11 entries ('e10', 'e11', 'e12', 'e13', 'e14', ...)"), "\(driver.stderr)")
        #expect(driver.stderr.contains("run 'vault sync', which asks (or --accept-deletions)"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: a)) == current, "ours untouched")

        let refused = try box.vault(["merge", copy, "--json"])
        #expect(refused.status == 1 && refused.stderr.contains(#""code":"mass_deletion""#), "\(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == current, "nothing written")
        let accepted = try box.vault(["merge", copy, "--accept-deletions"])
        #expect(accepted.status == 0 && accepted.stdoutText.contains("11 deleted"), "\(accepted.stderr)")
        #expect(try box.vault(["list"]).stdoutText == "e21\n")
    }

    /// Issue 33 §3's last point, as measured: another machine's newer file copied over this one is refused (it lacks
    /// this machine's latest write); put back, this machine's own file opens again, and merging the other works.
    @Test func aRefusedCopyOverDoesNotPoisonTheRollbackRecord() throws {
        let box = try Sandbox()
        let here = ["XDG_STATE_HOME": box.directory + "/state-a"], there = ["XDG_STATE_HOME": box.directory + "/state-b"]
        #expect(try box.vault(["init"], extraEnvironment: here).status == 0)
        #expect(try box.vault(["put", "shared"], stdin: Data("1".utf8), extraEnvironment: here).status == 0)
        let other = box.directory + "/vaults/other.vault"
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: other)
        #expect(try box.vault(["put", "mine"], stdin: Data("m".utf8), extraEnvironment: here).status == 0)
        for name in ["t1", "t2", "t3"] {
            #expect(try box.vault(["put", name, "--vault", other], stdin: Data("t".utf8), extraEnvironment: there).status == 0)
        }
        let mine = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        try FileManager.default.removeItem(atPath: box.vaultPath)
        try FileManager.default.copyItem(atPath: other, toPath: box.vaultPath)
        let refused = try box.vault(["list", "--json"], extraEnvironment: here)
        #expect(refused.status == 6, "\(refused.stderr)")
        #expect(try error(refused)["code"] as? String == "missing_own_writes")
        write(Array(mine), to: box.vaultPath)
        let back = try box.vault(["list"], extraEnvironment: here)
        #expect(back.status == 0 && back.stdoutText == "mine\nshared\n", "\(back.stderr)")
        let merged = try box.vault(["merge", other], extraEnvironment: here)
        #expect(merged.status == 0 && merged.stdoutText.contains("3 added"), "\(merged.stderr)")
        #expect(try box.vault(["list"], extraEnvironment: here).stdoutText == "mine\nshared\nt1\nt2\nt3\n")
    }
}
