import Foundation
import Testing
import VaultTestSupport

/// Issue 19 §3: real git merges a vault kept in a repository through `vault git merge-driver`, with the key from
/// the agent; locked, the merge is a conflict that names what to do, and the vault file is left as git gave it.
@Suite(.processTimeLimit) struct GitMergeDriverTests {
    static let git = findTool("git")

    @Test(.enabled(if: git != nil, "needs git")) func twoBranchesMergeEntryByEntry() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        let repo = box.directory + "/repo", vault = repo + "/team.vault"
        let identity = ["GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@example.invalid", "HOME": box.directory, "GIT_CONFIG_NOSYSTEM": "1"]
        func git(_ arguments: [String]) throws -> AgentRun {
            try AgentCLI.exec(Self.git!, ["-C", repo] + arguments, environment: box.environment.merging(identity) { $1 }.merging(["PATH": "/usr/bin:/bin"]) { $1 })
        }
        try FileManager.default.createDirectory(atPath: repo, withIntermediateDirectories: true)
        #expect(try git(["init", "-q", "-b", "main"]).status == 0)
        #expect(try box.around(["init", "--vault", vault]).status == 0)
        let setup = try box.vault(["git", "setup", "--vault", vault])
        #expect(setup.status == 0 && setup.stdoutText.hasPrefix("git merges 'team.vault' entry by entry"), "\(setup.stderr)")
        #expect(try String(contentsOfFile: repo + "/.gitattributes", encoding: .utf8) == "/team.vault merge=vault diff=vault\n")
        #expect(try box.vault(["git", "setup", "--vault", vault]).stdoutText.contains("already in .gitattributes"), "idempotent")
        #expect(try box.around(["put", "shared", "--vault", vault], stdin: Data("0".utf8)).status == 0)
        #expect(try git(["add", "-A"]).status == 0 && git(["commit", "-qm", "init"]).status == 0)

        // Two branches, each with an entry of its own (the other written as another machine: its own replica, named
        // bob@desk), and both changing `shared`: main first, so that main's change loses.
        #expect(try git(["branch", "other"]).status == 0)
        #expect(try box.around(["put", "shared", "--force", "--vault", vault], stdin: Data("a".utf8)).status == 0)
        #expect(try box.around(["put", "from-main", "--vault", vault], stdin: Data("a".utf8)).status == 0)
        #expect(try git(["commit", "-qam", "main"]).status == 0)
        #expect(try git(["checkout", "-q", "other"]).status == 0)
        chmod(vault, 0o600)  // git checks files out 0644
        let elsewhere = ["XDG_STATE_HOME": box.directory + "/state-b", "VAULT_AGENT_SOCK": box.elsewhereSocket]
        #expect(try box.vault(["replica", "name", "bob@desk", "--vault", vault], source: true, environment: elsewhere).status == 0)
        #expect(try box.vault(["put", "from-other", "--vault", vault], stdin: Data("b".utf8), source: true, environment: elsewhere).status == 0)
        usleep(5_000)
        #expect(try box.vault(["put", "shared", "--force", "--vault", vault], stdin: Data("b".utf8), source: true, environment: elsewhere).status == 0)
        #expect(try git(["commit", "-qam", "other"]).status == 0)
        #expect(try git(["checkout", "-q", "main"]).status == 0)
        chmod(vault, 0o600)

        // Locked: a conflict that says what to do; the file in the work tree is git's.
        let locked = try git(["merge", "other", "-m", "merge"])
        #expect(locked.status == 1)
        #expect(locked.stderr.contains("vault: cannot merge 'team.vault': its vault is not unlocked in the agent; run 'vault unlock'"), "\(locked.stderr)")
        #expect(try git(["merge", "--abort"]).status == 0)

        // Unlocked: merged, no conflict, both entries.
        chmod(vault, 0o600)
        try box.unlock(["--vault", vault])
        let merged = try git(["merge", "other", "-m", "merge"])
        #expect(merged.status == 0, "\(merged.stdoutText) \(merged.stderr)")
        #expect(merged.stderr.contains("vault: merged 'other' into 'team.vault': 1 added, 0 updated, 0 deleted, 0 resurrected, 1 conflict\n"), "\(merged.stderr)")
        // The driver names the entry whose change on this side lost, and to whom.
        #expect(merged.stderr.contains(
            "\n  your change to shared lost to a later one from bob@desk; 'vault history shared' shows it as version 1\n"), "\(merged.stderr)")
        chmod(vault, 0o600)
        #expect(try box.around(["list", "--vault", vault]).stdoutText == "from-main\nfrom-other\nshared\n")
        #expect(try git(["status", "--porcelain"]).stdoutText == "")

        // git's diff through the textconv: names and field names, never a value; locked, one line.
        let diff = try git(["diff", "HEAD~1", "HEAD", "--", "team.vault"])
        #expect(diff.status == 0 && diff.stdoutText.contains("+from-other\n") && diff.stdoutText.contains("+  fields password (secret)"), "\(diff.stdoutText) \(diff.stderr)")
        #expect(!diff.stdoutText.contains("Binary files"))
        // Times as a person reads them, with who made the change; never epoch milliseconds.
        let modifiedLine = try #require(diff.stdoutText.split(separator: "\n").first { $0.hasPrefix("+  id ") && $0.contains("by bob@desk") },
                                        "\(diff.stdoutText)")
        #expect(modifiedLine.wholeMatch(of: /\+  id [0-9a-f]{32}  modified \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z by bob@desk  earlier versions \d+/) != nil,
                "\(modifiedLine)")
        #expect(try box.vault(["lock", "--all"]).status == 0)
        let lockedDiff = try git(["show", "HEAD:team.vault"])
        #expect(lockedDiff.status == 0)
        let textconv = try git(["show", "--textconv", "HEAD:team.vault"])
        #expect(textconv.stdoutText == "(vault locked: 'vault unlock' shows its entries here)\n", "\(textconv.stdoutText) \(textconv.stderr)")
    }
}
