import Foundation
import Testing

/// Issue 35 §5: a deleted entry can be brought back for 30 days (`vault restore --deleted NAME`, listed by
/// `vault list --deleted`), as KeePassXC's recycle bin and Bitwarden's trash; `VAULT_KEEP_DELETED=DAYS` sets how
/// long (0: nothing kept, the deletion removes at once).
@Suite(.processTimeLimit) struct TrashCLITests {
    @Test func aDeletedEntryComesBackAsItWasAndZeroDaysKeepsNothing() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "web/github", "--field", "password"], stdin: Data("Gh-1".utf8)).status == 0)
        #expect(try box.vault(["put", "web/github", "--field", "username"], stdin: Data("alice".utf8)).status == 0)
        #expect(try box.vault(["delete", "web/github", "--yes"]).status == 0)
        #expect(try box.vault(["get", "web/github"]).status == 2)
        #expect(try box.vault(["list", "--deleted"]).stdoutText == "web/github\n")
        let restored = try box.vault(["restore", "web/github", "--deleted"])
        #expect(restored.status == 0 && restored.stderr.isEmpty, "\(restored.stderr)")
        #expect(try box.vault(["get", "web/github"]).stdoutText == "Gh-1")
        #expect(try box.vault(["get", "web/github", "--field", "username"]).stdoutText == "alice")
        #expect(try box.vault(["list", "--deleted"]).stdoutText == "")

        // Kept 0 days: nothing to bring back, and what was kept before goes at this write.
        #expect(try box.vault(["put", "old"], stdin: Data("o".utf8)).status == 0)
        #expect(try box.vault(["delete", "old", "--yes"]).status == 0)
        #expect(try box.vault(["list", "--deleted"]).stdoutText == "old\n")
        let none = ["VAULT_KEEP_DELETED": "0"]
        #expect(try box.vault(["delete", "web/github", "--yes"], extraEnvironment: none).status == 0)
        #expect(try box.vault(["list", "--deleted"]).stdoutText == "")
        let gone = try box.vault(["restore", "web/github", "--deleted"], extraEnvironment: none)
        #expect(gone.status == 2 && gone.stderr == "vault: no deleted entry 'web/github' to bring back in vault '\(box.vaultPath)' (deleted entries are kept 0 days)\n", "\(gone.stderr)")
    }
}
