import Foundation
import Testing

/// Issue 18 §3: `vault upgrade` turns a version-1 vault into version 2 in one write, and every verb then works on
/// it, locally and through the agent.
@Suite(.processTimeLimit) struct UpgradeTests {
    func json(_ result: CLIResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.stdoutText) \(result.stderr)")
    }

    @Test func upgradeKeepsNamesValuesAndTimesAndEveryVerbWorksAfter() throws {
        let box = try Sandbox()
        #expect(try box.vault(["init", "--format", "1"]).status == 0)
        #expect(try box.vault(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        #expect(try box.vault(["put", "binary"], stdin: Data([0xFF, 0x00, 0x0A])).status == 0)
        #expect(try box.vault(["put", "dir/é"], stdin: Data("x".utf8)).status == 0)
        let before = try box.vault(["list", "--json"]).stdoutText
        #expect(try json(box.vault(["info", "--json"], passphrase: false))["format_version"] as? Int == 1)
        let v1Copy = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))

        let upgraded = try box.vault(["upgrade"])
        #expect(upgraded.status == 0, "\(upgraded.stderr)")
        #expect(upgraded.stdoutText == "upgraded vault '\(box.vaultPath)' from format version 1 to 3 (3 entries)\n")
        let info = try json(box.vault(["info", "--json"], passphrase: false))
        #expect(info["format_version"] as? Int == 3)
        #expect((info["vault_id"] as? String)?.count == 32)
        #expect(info["stanzas"] as? [String] == ["argon2id"])
        #expect(try box.vault(["list", "--json"]).stdoutText == before, "names, sizes and times are kept")
        #expect(try box.vault(["get", "github"]).stdout == Data("t0k3n".utf8))
        #expect(try box.vault(["get", "binary"]).stdout == Data([0xFF, 0x00, 0x0A]))

        // Every verb on version 2.
        #expect(try box.vault(["put", "github", "--force"], stdin: Data("n3w".utf8)).status == 0)
        #expect(try box.vault(["get", "github"]).stdoutText == "n3w")
        #expect(try box.vault(["mv", "dir/é", "dir/e"]).status == 0)
        #expect(try box.vault(["cp", "github", "github2"]).status == 0)
        #expect(try box.vault(["delete", "binary", "--yes"]).status == 0)
        #expect(try box.vault(["list"]).stdoutText == "dir/e\ngithub\ngithub2\n")
        #expect(try box.vault(["get", "binary"]).status == 2)
        let missing = try box.vault(["get", "gihtub"])
        #expect(missing.status == 2 && missing.stderr.contains("did you mean 'github'?"))

        // Again: nothing to do.
        let again = try box.vault(["upgrade", "--json"])
        #expect(again.status == 0)
        let againJSON = try json(again)
        #expect(againJSON["upgraded"] as? Bool == false && againJSON["from_version"] as? Int == 3 && againJSON["format_version"] as? Int == 3)

        // git's credential helper on version 2: store (with extras it removes when absent), get, erase.
        let request = "protocol=https\nhost=git.example\nusername=alice\npassword=s3cret\n\n"
        #expect(try box.vault(["credential", "store"], stdin: Data(request.utf8)).status == 0)
        let got = try box.vault(["credential", "get"], stdin: Data("protocol=https\nhost=git.example\n\n".utf8))
        #expect(got.stdoutText == "username=alice\npassword=s3cret\n", "\(got.stderr)")
        #expect(try box.vault(["credential", "erase"], stdin: Data(request.utf8)).status == 0)
        #expect(try box.vault(["credential", "get"], stdin: Data("protocol=https\nhost=git.example\n\n".utf8)).stdoutText == "")

        // The version-1 copy put back is refused: its key was retired by the upgrade.
        try v1Copy.write(to: URL(fileURLWithPath: box.vaultPath))
        let rollback = try box.vault(["get", "github", "--json"])
        #expect(rollback.status == 6, "\(rollback.stderr)")
        #expect(rollback.stderr.contains(#""code":"retired_key""#), "\(rollback.stderr)")
    }

    @Test func aWrongPassphraseWritesNothing() throws {
        let box = try Sandbox()
        #expect(try box.vault(["init", "--format", "1"]).status == 0)
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8)).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let wrong = box.directory + "/wrong"
        try box.write("not the passphrase\n", to: wrong)
        let result = try box.vault(["upgrade", "--passphrase-file", wrong], passphrase: false)
        #expect(result.status == 3)
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)
    }

    @Test func theAgentHoldsAnUpgradedVault() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        #expect(try box.around(["init", "--format", "1"]).status == 0)
        #expect(try box.around(["put", "k"], stdin: Data("v1".utf8)).status == 0)
        try box.unlock()
        #expect(try box.vault(["get", "k"]).stdoutText == "v1")
        let upgraded = try box.vault(["upgrade"], source: true)
        #expect(upgraded.status == 0, "\(upgraded.stderr)")
        // The upgrade locked it in the agent; unlocked again, the agent holds version 2.
        let locked = try box.vault(["get", "k"])
        #expect(locked.status == 1 && locked.stderr.contains("vault unlock"), "\(locked.stderr)")
        try box.unlock()
        #expect(try box.vault(["get", "k"]).stdoutText == "v1")
        #expect(try box.vault(["put", "k", "--force"], stdin: Data("v2".utf8)).status == 0)
        #expect(try box.vault(["put", "other"], stdin: Data("o".utf8)).status == 0)
        #expect(try box.vault(["list"]).stdoutText == "k\nother\n")
        #expect(try box.around(["get", "k"]).stdoutText == "v2")
    }

    /// Issue 18's opening measurement: a vault copied from a second machine over the first (B had two new
    /// entries, A one) opened with exit 0 and A's entry was gone. On version 2, A refuses B's copy (exit 6,
    /// missing_own_writes, with a hint), and --accept-rollback takes it on purpose.
    @Test func aCopyFromAnotherMachineThatLacksThisOnesWritesIsRefused() throws {
        let box = try Sandbox()
        #expect(try box.vault(["init", "--format", "1"]).status == 0)
        let machineA = ["XDG_STATE_HOME": box.directory + "/state-a"]
        let machineB = ["XDG_STATE_HOME": box.directory + "/state-b"]
        #expect(try box.vault(["upgrade"], extraEnvironment: machineA).status == 0)
        #expect(try box.vault(["put", "shared"], stdin: Data("s".utf8), extraEnvironment: machineA).status == 0)
        let copyB = box.directory + "/vaults/b.vault"
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: copyB)
        for name in ["b1", "b2"] {
            #expect(try box.vault(["put", name, "--vault", copyB], stdin: Data("b".utf8), extraEnvironment: machineB).status == 0)
        }
        #expect(try box.vault(["put", "a1"], stdin: Data("a".utf8), extraEnvironment: machineA).status == 0)
        try FileManager.default.removeItem(atPath: box.vaultPath)
        try FileManager.default.copyItem(atPath: copyB, toPath: box.vaultPath)
        let refused = try box.vault(["list"], extraEnvironment: machineA)
        #expect(refused.status == 6 && refused.stdout.isEmpty)
        #expect(refused.stderr == """
            vault: refusing to open vault '\(box.vaultPath)': it lacks changes made to it here (a copy from another machine put over it?)
            hint: merge the copy that has them into this one ('vault merge OTHER'); to take this copy as it is, pass --accept-rollback once

            """)
        let accepted = try box.vault(["list", "--accept-rollback"], extraEnvironment: machineA)
        #expect(accepted.status == 0 && accepted.stdoutText == "b1\nb2\nshared\n", "\(accepted.stderr)")
        #expect(try box.vault(["list"], extraEnvironment: machineA).status == 0)
    }
}
