import Foundation
import Testing
import VaultTestSupport

/// Issue 19 §3 with real git: `vault sync` in a work tree (commit, fetch, merge entry by entry, push, retry), and
/// the merge driver under what git does to it (a rebase, a criss-cross merge, a driver killed mid-merge).
/// Two machines are two boxes: each with its own home, state directory (replica, rollback record) and agent.
@Suite(.processTimeLimit) struct GitSyncTests {
    static let git = findTool("git")
    static let strace = findTool("strace")

    /// A bare repository and clones of it, each clone a machine of its own (an ``AgentBox``).
    final class Machines {
        let a: AgentBox
        let b: AgentBox
        let origin: String
        var cloneA: String { a.directory + "/clone" }
        var cloneB: String { b.directory + "/clone" }
        var vaultA: String { cloneA + "/team.vault" }
        var vaultB: String { cloneB + "/team.vault" }

        init() throws {
            a = try AgentBox()
            b = try AgentBox()
            origin = a.directory + "/origin.git"
            try #require(try run(a, nil, ["init", "-q", "--bare", "-b", "main", origin]).status == 0)
            try #require(try run(a, nil, ["clone", "-q", origin, cloneA]).status == 0)
            try #require(try a.around(["init", "--vault", vaultA]).status == 0)
            try #require(try a.vault(["git", "setup", "--vault", vaultA]).status == 0)
            try #require(try git(a, ["add", "-A"]).status == 0)
            try #require(try git(a, ["commit", "-qm", "a vault"]).status == 0)
            try #require(try git(a, ["push", "-q", "-u", "origin", "main"]).status == 0)
            try #require(try run(b, nil, ["clone", "-q", origin, cloneB]).status == 0)
            chmod(vaultB, 0o600)  // git checks files out 0644
            try #require(try b.vault(["git", "setup", "--vault", vaultB]).status == 0)
        }

        deinit {
            a.stopAgents()
            b.stopAgents()
        }

        func clone(_ box: AgentBox) -> String { box === a ? cloneA : cloneB }
        func vault(_ box: AgentBox) -> String { box === a ? vaultA : vaultB }

        /// git in `box`'s clone, as that machine (its home, no system config, a committer).
        func git(_ box: AgentBox, _ arguments: [String]) throws -> AgentRun { try run(box, clone(box), arguments) }

        /// `box`'s environment for git and for the `vault` that runs git: its home, no system config, a committer.
        func environment(_ box: AgentBox) -> [String: String] {
            box.environment.merging([
                "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@example.invalid", "HOME": box.directory, "GIT_CONFIG_NOSYSTEM": "1",
            ]) { $1 }
        }

        func run(_ box: AgentBox, _ directory: String?, _ arguments: [String]) throws -> AgentRun {
            try AgentCLI.exec(GitSyncTests.git!, (directory.map { ["-C", $0] } ?? []) + arguments, environment: environment(box))
        }

        /// `vault ARGS --vault <box's vault>` through `box`'s agent.
        func vault(_ box: AgentBox, _ arguments: [String], stdin: Data = Data()) throws -> AgentRun {
            try box.vault(arguments + ["--vault", vault(box)], stdin: stdin)
        }

        func put(_ box: AgentBox, _ name: String, _ value: String) throws {
            let put = try vault(box, ["put", name, "--force"], stdin: Data(value.utf8))
            #expect(put.status == 0, "\(put.stderr)")
        }

        /// `vault sync` in `box`'s clone: through its agent, or with `passphrase` around it.
        func sync(_ box: AgentBox, _ extra: [String] = [], passphrase: Bool = false, vault path: String? = nil) throws -> AgentRun {
            try startSync(box, extra, passphrase: passphrase, vault: path).finish()
        }

        func startSync(_ box: AgentBox, _ extra: [String] = [], passphrase: Bool = false, vault path: String? = nil) throws -> AgentCLI.Running {
            let arguments = ["sync", "--vault", path ?? vault(box)] + extra + (passphrase ? ["--passphrase-file", box.passphraseFile] : [])
            return try AgentCLI.start(CLI.vault, arguments, environment: environment(box))
        }

        func list(_ box: AgentBox) throws -> [String] {
            try vault(box, ["list"]).stdoutText.split(separator: "\n").map(String.init)
        }
    }

    @Test(.enabled(if: git != nil, "needs git")) func twoMachinesSyncThroughOneRepositoryAndLoseNothing() throws {
        let m = try Machines()
        #expect(try String(contentsOfFile: m.cloneA + "/.gitignore", encoding: .utf8) == "/team.vault.lock\n/.team.vault.*.tmp\n")
        try m.a.unlock(["--vault", m.vaultA])
        try m.b.unlock(["--vault", m.vaultB])

        // A's entry reaches B by a fast-forward; B's entries come back by a merge.
        try m.put(m.a, "shared", "one")
        let first = try m.sync(m.a)
        #expect(first.status == 0 && first.stdoutText == "committed 'team.vault'\npushed to origin/main\n", "\(first.stdoutText) \(first.stderr)")
        let second = try m.sync(m.b)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdoutText.contains("1 added") && second.stdoutText.hasSuffix("fast-forwarded to origin/main\n"), "\(second.stdoutText)")
        #expect(try m.git(m.b, ["log", "--merges", "--oneline"]).stdoutText == "", "a fast-forward makes no merge commit")
        #expect(AgentFiles.lstatMode(m.vaultB).map { $0 & 0o777 } == 0o600, "git checks files out 0644: sync makes the vault 0600 again")

        // The same entry changed on both machines (B later), and a new entry on each, plus another file on B.
        try m.put(m.a, "shared", "from a")
        try m.put(m.a, "only-a", "a")
        usleep(5_000)
        try m.put(m.b, "shared", "from b")
        try m.put(m.b, "only-b", "b")
        try Data("notes\n".utf8).write(to: URL(fileURLWithPath: m.cloneB + "/README"))
        #expect(try m.git(m.b, ["add", "README"]).status == 0 && m.git(m.b, ["commit", "-qm", "readme"]).status == 0)
        #expect(try m.sync(m.a).status == 0)
        let merged = try m.sync(m.b)
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(merged.stdoutText.contains("1 added") && merged.stdoutText.contains("  conflict: shared: your change won over "), "\(merged.stdoutText)")
        #expect(merged.stdoutText.hasSuffix("committed 'team.vault'\nmerged origin/main\npushed to origin/main\n"), "\(merged.stdoutText)")
        #expect(try m.sync(m.a).status == 0)
        for box in [m.a, m.b] {
            #expect(try m.list(box) == ["only-a", "only-b", "shared"])
            #expect(try m.vault(box, ["get", "shared"]).stdoutText == "from b", "the later change wins")
            let history = try m.vault(box, ["history", "shared", "--json"])
            #expect(history.stdoutText.contains("\"conflict\":true"), "the loser is kept in the history: \(history.stdoutText)")
            #expect(try m.git(box, ["status", "--porcelain"]).stdoutText == "", "nothing left uncommitted")
        }
        #expect(FileManager.default.fileExists(atPath: m.cloneA + "/README"), "git's merge of the other files")
        let same = try m.sync(m.a)
        #expect(same.status == 0 && same.stdoutText == "'team.vault' and origin/main are the same\n", "\(same.stdoutText)")

        // B's push is rejected because A pushed first (made certain: B's pre-push hook pushes A's commit, once):
        // B fetches, merges and pushes again, and says it took 2 tries.
        try m.put(m.a, "race-a", "a")
        #expect(try m.git(m.a, ["commit", "-qam", "race-a"]).status == 0)
        try m.put(m.b, "race-b", "b")
        let hook = m.cloneB + "/.git/hooks/pre-push"
        try Data("#!/bin/sh\n[ -e \"$0.done\" ] && exit 0\ntouch \"$0.done\"\nenv -u GIT_DIR -u GIT_WORK_TREE git -C '\(m.cloneA)' push -q\n".utf8)
            .write(to: URL(fileURLWithPath: hook))
        chmod(hook, 0o755)
        let raced = try m.sync(m.b, ["--json"])
        #expect(raced.status == 0, "\(raced.stderr)")
        #expect(raced.stdoutText.contains("\"attempts\":2") && raced.stdoutText.contains("\"pushed\":true"), "\(raced.stdoutText)")
        #expect(try m.sync(m.a).status == 0)
        #expect(try m.list(m.a) == ["only-a", "only-b", "race-a", "race-b", "shared"])
        #expect(try m.list(m.b) == m.list(m.a))
    }

    /// Issue 33 §3: another machine deleted 11 of 12 entries; this machine's sync (which would fast-forward) does not
    /// take that in silence: without a terminal it stops (exit 1, mass_deletion, naming them, nothing changed), and
    /// with --accept-deletions it syncs.
    @Test(.enabled(if: git != nil, "needs git")) func manyDeletionsFromTheUpstreamNeedAcceptDeletions() throws {
        let m = try Machines()
        try m.a.unlock(["--vault", m.vaultA])
        try m.b.unlock(["--vault", m.vaultB])
        let names = (10..<22).map { "e\($0)" }
        for name in names { try m.put(m.a, name, "v") }
        #expect(try m.sync(m.a).status == 0)
        #expect(try m.sync(m.b).status == 0)
        #expect(try m.vault(m.a, ["delete", "--yes"] + names.dropLast()).status == 0)
        #expect(try m.sync(m.a).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: m.vaultB))
        let refused = try m.sync(m.b, ["--json"])
        #expect(refused.status == 1 && refused.stderr.contains(#""code":"mass_deletion""#) && refused.stderr.contains("e20"), "\(refused.stdoutText) \(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: m.vaultB)) == before && m.list(m.b) == names)
        let accepted = try m.sync(m.b, ["--accept-deletions"])
        #expect(accepted.status == 0 && accepted.stdoutText.contains("11 deleted"), "\(accepted.stdoutText) \(accepted.stderr)")
        #expect(try m.list(m.b) == ["e21"])
    }

    /// The upstream reverts the vault to an older file (or deletes it) while this clone changed only another
    /// file: git alone would take the upstream's file (a driver runs only when both sides changed it); sync keeps
    /// this clone's vault, merged.
    @Test(.enabled(if: git != nil, "needs git")) func anUpstreamThatRevertsOrDeletesTheVaultTakesNothingAway() throws {
        let m = try Machines()
        try m.a.unlock(["--vault", m.vaultA])
        try m.b.unlock(["--vault", m.vaultB])
        try m.put(m.a, "kept", "k")
        #expect(try m.sync(m.a).status == 0 && m.sync(m.b).status == 0)
        // B reverts the vault to the first commit's file and pushes; A changes only README.
        #expect(try m.git(m.b, ["checkout", "HEAD~1", "--", "team.vault"]).status == 0)
        #expect(try m.git(m.b, ["commit", "-qm", "revert the vault"]).status == 0 && m.git(m.b, ["push", "-q"]).status == 0)
        try Data("a\n".utf8).write(to: URL(fileURLWithPath: m.cloneA + "/README"))
        #expect(try m.git(m.a, ["add", "README"]).status == 0 && m.git(m.a, ["commit", "-qm", "readme"]).status == 0)
        let synced = try m.sync(m.a)
        #expect(synced.status == 0 && synced.stdoutText.contains("merged origin/main\n"), "\(synced.stdoutText) \(synced.stderr)")
        #expect(try m.list(m.a) == ["kept"])
        #expect(try m.git(m.a, ["show", "HEAD:team.vault"]).stdout == Data(contentsOf: URL(fileURLWithPath: m.vaultA)), "the merge commit holds this clone's vault")
        // B deletes the vault and pushes: A keeps it, says so, and pushes it back.
        chmod(m.vaultB, 0o600)
        #expect(try m.git(m.b, ["pull", "-q", "--ff-only"]).status == 0)
        #expect(try m.git(m.b, ["rm", "-q", "team.vault"]).status == 0 && m.git(m.b, ["commit", "-qm", "delete"]).status == 0 && m.git(m.b, ["push", "-q"]).status == 0)
        try Data("b\n".utf8).write(to: URL(fileURLWithPath: m.cloneA + "/README"))
        #expect(try m.git(m.a, ["commit", "-qam", "readme 2"]).status == 0)
        let kept = try m.sync(m.a)
        #expect(kept.status == 0 && kept.stderr.contains("has no 'team.vault' (deleted there?): this clone's vault is kept"), "\(kept.stdoutText) \(kept.stderr)")
        #expect(try m.list(m.a) == ["kept"])
        #expect(try m.git(m.a, ["cat-file", "-e", "origin/main:team.vault"]).status == 0, "pushed back")
    }

    @Test(.enabled(if: git != nil, "needs git")) func syncWorksWithTheAgentLockedGivenThePassphraseAndRefusesWhatItCannotDo() throws {
        let m = try Machines()
        // No agent: the passphrase opens the vault and the merge happens here; git never runs the driver.
        #expect(try m.b.around(["put", "from-b", "--vault", m.vaultB], stdin: Data("b".utf8)).status == 0)
        #expect(try m.sync(m.b, passphrase: true).status == 0)
        #expect(try m.a.around(["put", "from-a", "--vault", m.vaultA], stdin: Data("a".utf8)).status == 0)
        let synced = try m.sync(m.a, passphrase: true)
        #expect(synced.status == 0 && synced.stdoutText.contains("merged origin/main\n"), "\(synced.stdoutText) \(synced.stderr)")
        #expect(try m.a.around(["list", "--vault", m.vaultA]).stdoutText == "from-a\nfrom-b\n")

        // A dry run fetches and says what it would merge, and changes nothing.
        #expect(try m.b.around(["put", "later-b", "--vault", m.vaultB], stdin: Data("b".utf8)).status == 0)
        #expect(try m.sync(m.b, passphrase: true).status == 0)
        var before = try Data(contentsOf: URL(fileURLWithPath: m.vaultA))
        let head = try m.git(m.a, ["rev-parse", "HEAD"]).stdoutText
        let dry = try m.sync(m.a, ["--dry-run"], passphrase: true)
        #expect(dry.status == 0 && dry.stdoutText.hasPrefix("would merge 'origin/main' into 'team.vault': 1 added"), "\(dry.stdoutText) \(dry.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: m.vaultA)) == before)
        #expect(try m.git(m.a, ["rev-parse", "HEAD"]).stdoutText == head)

        // Through a link above the clone (git names the work tree by its physical path), and options of
        // the remote stores, which mean nothing here.
        let link = m.a.directory + "-linked"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: m.a.directory)
        defer { try? FileManager.default.removeItem(atPath: link) }
        let linked = try m.sync(m.a, passphrase: true, vault: link + "/clone/team.vault")
        #expect(linked.status == 0 && linked.stdoutText.contains("  added: later-b\n"), "\(linked.stdoutText) \(linked.stderr)")
        before = try Data(contentsOf: URL(fileURLWithPath: m.vaultA))
        let stray = try m.sync(m.a, ["--endpoint", "http://127.0.0.1:1", "--recreate"], passphrase: true)
        #expect(stray.status == 64 && stray.stderr.contains("--endpoint, --recreate need a remote"), "\(stray.stderr)")

        // Without 'vault git setup' in the repository (nor this clone's own pin), outside a work tree, without an
        // upstream, mid-merge.
        #expect(try m.git(m.a, ["rm", "-q", "--cached", ".gitattributes"]).status == 0)
        try FileManager.default.removeItem(atPath: m.cloneA + "/.gitattributes")
        try FileManager.default.removeItem(atPath: m.cloneA + "/.git/info/attributes")
        let noSetup = try m.sync(m.a, passphrase: true)
        #expect(noSetup.status == 64 && noSetup.stderr.contains("run 'vault git setup'"), "\(noSetup.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: m.vaultA)) == before)
        #expect(try m.git(m.a, ["checkout", "-q", "HEAD", "--", ".gitattributes"]).status == 0)
        let outside = try m.a.around(["init", "--vault", m.a.directory + "/loose.vault"])
        #expect(outside.status == 0)
        let loose = try m.sync(m.a, passphrase: true, vault: m.a.directory + "/loose.vault")
        #expect(loose.status == 64 && loose.stderr.contains("is not in a git work tree; name a remote"), "\(loose.stderr)")
        #expect(try m.git(m.a, ["checkout", "-q", "-b", "lonely"]).status == 0)
        // Two remotes: which one is not guessed (one remote: the first push sets it, GitFirstPushTests).
        #expect(try m.git(m.a, ["remote", "add", "mirror", m.a.directory + "/elsewhere.git"]).status == 0)
        let noUpstream = try m.sync(m.a, passphrase: true)
        #expect(noUpstream.status == 1 && noUpstream.stderr.contains("branch 'lonely' has no upstream"), "\(noUpstream.stderr)")
    }

    @Test(.enabled(if: git != nil, "needs git")) func aRebaseOfFiveCommitsAndACrissCrossMergeGoThroughTheDriver() throws {
        let m = try Machines()
        try m.a.unlock(["--vault", m.vaultA])
        try m.b.unlock(["--vault", m.vaultB])
        // B pushes one change; A has five commits of its own and rebases them onto it: five merges by the driver.
        try m.put(m.b, "b-0", "b")
        #expect(try m.git(m.b, ["commit", "-qam", "b-0"]).status == 0 && m.git(m.b, ["push", "-q"]).status == 0)
        for n in 1...5 {
            try m.put(m.a, "a-\(n)", "a")
            #expect(try m.git(m.a, ["commit", "-qam", "a-\(n)"]).status == 0)
            chmod(m.vaultA, 0o600)
        }
        let rebase = try m.git(m.a, ["pull", "-q", "--rebase"])
        #expect(rebase.status == 0, "\(rebase.stdoutText) \(rebase.stderr)")
        #expect(try m.git(m.a, ["rev-list", "--count", "HEAD"]).stdoutText == "7\n", "the first commit, B's and five rebased")
        chmod(m.vaultA, 0o600)
        #expect(try m.list(m.a) == ["a-1", "a-2", "a-3", "a-4", "a-5", "b-0"])
        #expect(try m.git(m.a, ["status", "--porcelain"]).stdoutText == "")

        // Criss-cross: A on branch x and B on branch y each merge the other's first commit, then change again, and A
        // merges y: two merge bases, which git merges first (the driver as its own recursive driver), then the rest.
        // (Each machine's work tree only ever holds its own latest writes: no rollback record is crossed.)
        #expect(try m.git(m.a, ["push", "-q"]).status == 0)
        #expect(try m.git(m.b, ["pull", "-q", "--ff-only"]).status == 0)
        chmod(m.vaultB, 0o600)
        #expect(try m.git(m.a, ["checkout", "-qb", "x"]).status == 0)
        try m.put(m.a, "x-1", "x")
        #expect(try m.git(m.a, ["commit", "-qam", "x-1"]).status == 0 && m.git(m.a, ["push", "-q", "origin", "x"]).status == 0)
        #expect(try m.git(m.b, ["checkout", "-qb", "y"]).status == 0)
        try m.put(m.b, "y-1", "y")
        #expect(try m.git(m.b, ["commit", "-qam", "y-1"]).status == 0 && m.git(m.b, ["push", "-q", "origin", "y"]).status == 0)
        #expect(try m.git(m.a, ["fetch", "-q"]).status == 0 && m.git(m.b, ["fetch", "-q"]).status == 0)
        let crossA = try m.git(m.a, ["merge", "-q", "--no-edit", "origin/y"])
        let crossB = try m.git(m.b, ["merge", "-q", "--no-edit", "origin/x"])
        #expect(crossA.status == 0 && crossB.status == 0, "\(crossA.stderr) \(crossB.stderr)")
        chmod(m.vaultA, 0o600)
        chmod(m.vaultB, 0o600)
        try m.put(m.a, "x-2", "x")
        #expect(try m.git(m.a, ["commit", "-qam", "x-2"]).status == 0)
        try m.put(m.b, "y-2", "y")
        #expect(try m.git(m.b, ["commit", "-qam", "y-2"]).status == 0 && m.git(m.b, ["push", "-q", "origin", "y"]).status == 0)
        #expect(try m.git(m.a, ["fetch", "-q"]).status == 0)
        #expect(try m.git(m.a, ["merge-base", "--all", "x", "origin/y"]).stdoutText.split(separator: "\n").count == 2, "a criss-cross")
        let crossed = try m.git(m.a, ["merge", "--no-edit", "origin/y"])
        #expect(crossed.status == 0, "\(crossed.stdoutText) \(crossed.stderr)")
        chmod(m.vaultA, 0o600)
        #expect(try m.list(m.a) == ["a-1", "a-2", "a-3", "a-4", "a-5", "b-0", "x-1", "x-2", "y-1", "y-2"])
    }

    /// The other way round: this clone changed the passphrase (not pushed yet) and git's pull brings a teammate's
    /// commit from before the change. The driver says that theirs is older, not that another machine changed the key
    /// (note 4: it said "another key (changed on another machine)"), and 'vault sync' merges theirs, asking nothing.
    @Test(.enabled(if: git != nil, "needs git")) func theMergeDriverSaysWhenTheKeyChangeIsOurs() throws {
        let m = try Machines()
        try m.a.unlock(["--vault", m.vaultA])
        try m.b.unlock(["--vault", m.vaultB])
        let newPassphrase = m.a.directory + "/new-passphrase"
        FileManager.default.createFile(atPath: newPassphrase, contents: Data("a new passphrase\n".utf8), attributes: [.posixPermissions: 0o600])
        let passwd = try m.vault(m.a, ["passwd", "--passphrase-file", m.a.passphraseFile, "--new-passphrase-file", newPassphrase])
        #expect(passwd.status == 0, "\(passwd.stderr)")
        #expect(try m.git(m.a, ["commit", "-qam", "new passphrase"]).status == 0)
        try m.put(m.b, "from-b", "b")
        #expect(try m.sync(m.b).status == 0)

        let pull = try m.git(m.a, ["pull", "-q", "--no-rebase"])
        #expect(pull.status != 0)
        #expect(pull.stderr.contains("""
            vault: cannot merge 'team.vault': theirs is from before a key change ours has (the passphrase was changed); abort this merge or rebase (git merge --abort, git rebase --abort) and run 'vault sync', which, while this clone's key change is not pushed, merges the older copy into the new key

            """), "\(pull.stderr)")
        #expect(try m.git(m.a, ["merge", "--abort"]).status == 0)
        chmod(m.vaultA, 0o600)
        // A rebase names the sides the other way round (ours: the upstream's file), and says so.
        let rebase = try m.git(m.a, ["pull", "-q", "--rebase"])
        #expect(rebase.status != 0)
        #expect(rebase.stderr.contains("""
            vault: cannot merge 'team.vault': ours is from before a key change theirs has (the passphrase was changed) (in a rebase, git's ours is the upstream's file and theirs this clone's); abort this merge or rebase (git merge --abort, git rebase --abort) and run 'vault sync', which, while this clone's key change is not pushed, merges the older copy into the new key

            """), "\(rebase.stderr)")
        #expect(try m.git(m.a, ["rebase", "--abort"]).status == 0)
        chmod(m.vaultA, 0o600)
        let synced = try m.sync(m.a)
        #expect(synced.status == 0 && synced.stdoutText.contains("  added: from-b\n") && synced.stdoutText.hasSuffix("pushed to origin/main\n"), "\(synced.stdoutText) \(synced.stderr)")
        #expect(try m.list(m.a) == ["from-b"])
    }

    @Test(.enabled(if: git != nil, "needs git")) func aPassphraseChangedOnOneMachineIsFollowedByTheOtherWithNothingLost() throws {
        let m = try Machines()
        let newPassphrase = m.a.directory + "/new-passphrase"
        FileManager.default.createFile(atPath: newPassphrase, contents: Data("a new passphrase\n".utf8), attributes: [.posixPermissions: 0o600])
        // A changes the passphrase (a new data key) and pushes; B, unlocked in its agent, wrote an entry meanwhile.
        #expect(try m.a.around(["put", "from-a", "--vault", m.vaultA], stdin: Data("a".utf8)).status == 0)
        let passwd = try m.a.around(["passwd", "--vault", m.vaultA, "--new-passphrase-file", newPassphrase])
        #expect(passwd.status == 0, "\(passwd.stderr)")
        #expect(try AgentCLI.exec(CLI.vault, ["sync", "--vault", m.vaultA, "--passphrase-file", newPassphrase], environment: m.environment(m.a)).status == 0)
        try m.b.unlock(["--vault", m.vaultB])
        try m.put(m.b, "from-b", "b")

        // Without the other copy's passphrase (and no terminal to ask on): exit 3, what to do, the vault as it was.
        let committedBefore = try m.sync(m.b)
        #expect(committedBefore.status == 3, "\(committedBefore.stdoutText) \(committedBefore.stderr)")
        #expect(committedBefore.stderr == """
            vault: 'origin/main:team.vault' is sealed with another key than this vault: its passphrase was changed on one side
            hint: give that copy's passphrase with --other-passphrase-file or --other-passphrase-fd (asked on a terminal); the result then has that copy's passphrase

            """)
        #expect(try m.list(m.b) == ["from-b"])
        // git's own pull runs the driver, which never asks: a conflict that says what to do.
        let pull = try m.git(m.b, ["pull", "-q", "--no-rebase"])
        #expect(pull.status != 0 && pull.stderr.contains("vault: cannot merge 'team.vault': one side has another passphrase (changed on another machine); abort this merge or rebase (git merge --abort, git rebase --abort) and run 'vault sync', which asks for the passphrase as that copy has it"), "\(pull.stderr)")
        #expect(try m.git(m.b, ["merge", "--abort"]).status == 0)
        chmod(m.vaultB, 0o600)

        // With it: merged through B's agent, which now holds the new key; the old passphrase no longer opens it.
        let synced = try m.sync(m.b, ["--other-passphrase-file", newPassphrase])
        #expect(synced.status == 0 && synced.stdoutText.contains("  added: from-a\n") && synced.stdoutText.hasSuffix("pushed to origin/main\n"), "\(synced.stdoutText) \(synced.stderr)")
        #expect(synced.stderr == "vault: note: 'origin/main:team.vault' has another key (its passphrase was changed): this vault now has that copy's passphrase and key\n")
        #expect(try m.list(m.b) == ["from-a", "from-b"], "through the agent, with the key it took")
        #expect(try m.b.around(["list", "--vault", m.vaultB]).status == 3, "the old passphrase")
        #expect(try AgentCLI.exec(CLI.vault, ["list", "--vault", m.vaultB, "--passphrase-file", newPassphrase], environment: m.environment(m.b).merging(["VAULT_AGENT_SOCK": m.b.elsewhereSocket]) { $1 }).stdoutText == "from-a\nfrom-b\n")

        // A takes B's entry by a fast-forward, under the key A made.
        let back = try AgentCLI.exec(CLI.vault, ["sync", "--vault", m.vaultA, "--passphrase-file", newPassphrase], environment: m.environment(m.a))
        #expect(back.status == 0 && back.stdoutText.hasSuffix("fast-forwarded to origin/main\n"), "\(back.stdoutText) \(back.stderr)")
        #expect(try AgentCLI.exec(CLI.vault, ["list", "--vault", m.vaultA, "--passphrase-file", newPassphrase], environment: m.environment(m.a).merging(["VAULT_AGENT_SOCK": m.a.elsewhereSocket]) { $1 }).stdoutText == "from-a\nfrom-b\n")

        // B's copy from before the change, with its old passphrase: a key A replaced, after A's change was published,
        // is neither followed nor merged from (issue 33: stale, and the hint says what works); A keeps its key.
        let old = m.a.directory + "/old.vault"
        try m.git(m.b, ["show", "HEAD~2:team.vault"]).stdout.write(to: URL(fileURLWithPath: old))
        let merged = try AgentCLI.exec(
            CLI.vault, ["merge", old, "--vault", m.vaultA, "--passphrase-file", newPassphrase, "--other-passphrase-file", m.a.passphraseFile],
            environment: m.environment(m.a).merging(["VAULT_AGENT_SOCK": m.a.elsewhereSocket]) { $1 })
        #expect(merged.status == 6 && merged.stderr.contains("ask its machine to take this vault's key change first"), "\(merged.stdoutText) \(merged.stderr)")
        #expect(try m.a.around(["list", "--vault", m.vaultA]).status == 3, "still the new passphrase")

        // B idle while A changes the passphrase again: B's sync does not fast-forward to a file it could not open,
        // it merges with the new passphrase, and B's vault then opens with it (here and through B's agent).
        let third = m.a.directory + "/third-passphrase"
        FileManager.default.createFile(atPath: third, contents: Data("a third passphrase\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect(try AgentCLI.exec(CLI.vault, ["passwd", "--vault", m.vaultA, "--passphrase-file", newPassphrase, "--new-passphrase-file", third], environment: m.environment(m.a).merging(["VAULT_AGENT_SOCK": m.a.elsewhereSocket]) { $1 }).status == 0)
        #expect(try AgentCLI.exec(CLI.vault, ["sync", "--vault", m.vaultA, "--passphrase-file", third], environment: m.environment(m.a).merging(["VAULT_AGENT_SOCK": m.a.elsewhereSocket]) { $1 }).status == 0)
        let idle = try m.sync(m.b, ["--other-passphrase-file", third])
        #expect(idle.status == 0 && !idle.stdoutText.contains("fast-forwarded"), "\(idle.stdoutText) \(idle.stderr)")
        #expect(try AgentCLI.exec(CLI.vault, ["list", "--vault", m.vaultB, "--passphrase-file", third], environment: m.environment(m.b).merging(["VAULT_AGENT_SOCK": m.b.elsewhereSocket]) { $1 }).stdoutText == "from-a\nfrom-b\n")
        #expect(try m.list(m.b) == ["from-a", "from-b"], "B's agent took the new key")
    }

    @Test(.enabled(if: git != nil && strace != nil, "needs git and strace")) func aDriverKilledBeforeItsRenameLeavesOursAndGitSaysSo() throws {
        let m = try Machines()
        try m.a.unlock(["--vault", m.vaultA])
        try m.b.unlock(["--vault", m.vaultB])
        try m.put(m.b, "b", "b")
        #expect(try m.git(m.b, ["commit", "-qam", "b"]).status == 0 && m.git(m.b, ["push", "-q"]).status == 0)
        try m.put(m.a, "a", "a")
        #expect(try m.git(m.a, ["commit", "-qam", "a"]).status == 0)
        let ours = try Data(contentsOf: URL(fileURLWithPath: m.vaultA))
        // The driver dies by SIGKILL as it is about to rename the merged file over git's %A.
        let driver = "'\(GitSyncTests.strace!)' -f -qq -o /dev/null -e inject=rename,renameat,renameat2:signal=SIGKILL '\(CLI.vault)' git merge-driver %O %A %B %P"
        #expect(try m.git(m.a, ["config", "merge.vault.driver", driver]).status == 0)
        #expect(try m.git(m.a, ["fetch", "-q"]).status == 0)
        let killed = try m.git(m.a, ["merge", "--no-edit", "origin/main"])
        #expect(killed.status != 0, "git reports the failure: \(killed.stdoutText)")
        #expect(killed.stdoutText.contains("CONFLICT") || killed.stderr.contains("team.vault"), "\(killed.stdoutText) \(killed.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: m.vaultA)) == ours, "the work tree keeps ours, whole")
        #expect(try m.git(m.a, ["merge", "--abort"]).status == 0)
        chmod(m.vaultA, 0o600)
        #expect(try m.list(m.a) == ["a"])
        // The real driver again: the same merge succeeds.
        #expect(try m.a.vault(["git", "setup", "--vault", m.vaultA]).status == 0)
        let merged = try m.git(m.a, ["merge", "--no-edit", "origin/main"])
        #expect(merged.status == 0, "\(merged.stderr)")
        chmod(m.vaultA, 0o600)
        #expect(try m.list(m.a) == ["a", "b"])
    }

    /// Re-walk finding 3: a change discarded with git ('git restore' of the vault) is refused as a rollback, and the
    /// hint says so in git's words and how to take the restored copy: --accept-rollback with the passphrase (the agent
    /// does not take it; without a terminal or a passphrase source it fails and writes nothing); then sync works
    /// through the agent again.
    @Test(.enabled(if: git != nil, "needs git")) func aChangeDiscardedWithGitIsRefusedWithGitsWordsAndTakenWithThePassphrase() throws {
        let m = try Machines()
        try m.b.unlock(["--vault", m.vaultB])
        try m.put(m.b, "committed", "c")
        #expect(try m.sync(m.b).status == 0)
        try m.put(m.b, "discarded", "d")
        #expect(try m.git(m.b, ["restore", "team.vault"]).status == 0)
        chmod(m.vaultB, 0o600)
        let hint = "hint: it is in the git work tree '\(m.cloneB)': if a 'git restore', 'git checkout' or 'git reset' of it put back the copy git had, "
            + "that discarded the changes made since (those never committed are in no copy git keeps); to take the copy git put back, "
            + "pass --accept-rollback once with the passphrase (it does not go through the agent: on a terminal, or --passphrase-file PATH "
            + "or --passphrase-fd N), then run 'vault sync'\n"
        for run in [try m.sync(m.b), try m.vault(m.b, ["list"])] {
            #expect(run.status == 6)
            #expect(run.stderr.hasPrefix("vault: refusing to open vault '\(m.vaultB)': it is an older copy of the vault than one already seen here ("), "\(run.stderr)")
            #expect(run.stderr.hasSuffix("): an older copy may have been put back\n" + hint), "\(run.stderr)")
        }
        let noTerminal = try m.vault(m.b, ["list", "--accept-rollback"])
        #expect(noTerminal.status == 1 && noTerminal.stderr.hasPrefix("vault: no passphrase: there is no terminal to ask on\n"), "\(noTerminal.stderr)")
        let taken = try m.vault(m.b, ["list", "--accept-rollback", "--passphrase-file", m.b.passphraseFile])
        #expect(taken.status == 0 && taken.stdoutText == "committed\n", "\(taken.stderr)")
        let synced = try m.sync(m.b)
        #expect(synced.status == 0, "\(synced.stderr)")
        #expect(try m.list(m.b) == ["committed"], "through the agent again")
        // Outside a git work tree the hint is the one for a backup put back.
        let elsewhere = m.b.directory + "/elsewhere.vault"
        #expect(try m.b.around(["init", "--vault", elsewhere]).status == 0)
        let copy = try Data(contentsOf: URL(fileURLWithPath: elsewhere))
        #expect(try m.b.around(["put", "x", "--vault", elsewhere], stdin: Data("x".utf8)).status == 0)
        try copy.write(to: URL(fileURLWithPath: elsewhere))
        let backup = try m.b.around(["list", "--vault", elsewhere])
        #expect(backup.status == 6 && backup.stderr.hasSuffix("\nhint: if you restored this copy on purpose (a backup), pass --accept-rollback once\n"), "\(backup.stderr)")
    }
}
