import Foundation
import Testing
import VaultTestSupport

/// Issue 35 §1 with real git: the machine whose fresh edit lost is told, whichever side merges (also when its sync is
/// a fast-forward to the other side's merge), and the machine whose edit won is told whose change lost; each entry
/// is counted once, as a conflict.
@Suite(.processTimeLimit) struct GitSyncReportTests {
    typealias Machines = GitSyncTests.Machines

    /// Two clones named alice@desk (A) and bob@desk (B), unlocked.
    func namedMachines() throws -> Machines {
        let m = try Machines()
        for (box, name) in [(m.a, "alice@desk"), (m.b, "bob@desk")] {
            let named = try box.around(["replica", "name", name, "--vault", m.vault(box)])
            try #require(named.status == 0, "\(named.stderr)")
            try box.unlock(["--vault", m.vault(box)])
        }
        return m
    }

    /// ``namedMachines()``, both holding `web/site3`.
    func machines() throws -> Machines {
        let m = try namedMachines()
        try m.put(m.a, "web/site3", "first")
        try #require(try m.sync(m.a).status == 0)
        try #require(try m.sync(m.b).status == 0)
        return m
    }

    func expectSync(_ m: Machines, _ box: AgentBox, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let sync = try m.sync(box)
        #expect(sync.status == 0, "\(sync.stderr)", sourceLocation: sourceLocation)
        #expect(sync.stdoutText == expected, sourceLocation: sourceLocation)
    }

    /// B's later edit wins at B's merge; A's next sync is a fast-forward to it and says A's edit lost.
    @Test(.enabled(if: GitSyncTests.git != nil, "needs git")) func theWinnerMergesAndTheLoserFastForwards() throws {
        let m = try machines()
        try m.put(m.a, "web/site3", "fromA")
        try #require(try m.sync(m.a).status == 0)
        usleep(5_000)
        try m.put(m.b, "web/site3", "fromB")
        try expectSync(m, m.b, """
            merged 'origin/main' into 'team.vault': 0 added, 0 updated, 0 deleted, 0 resurrected, 1 conflict
              conflict: web/site3: your change won over alice@desk's (kept as version 1)
            committed 'team.vault'
            merged origin/main
            pushed to origin/main

            """)
        try expectSync(m, m.a, """
            merged 'origin/main' into 'team.vault': 0 added, 0 updated, 0 deleted, 0 resurrected, 1 conflict
              your change to web/site3 lost to a later one from bob@desk; 'vault history web/site3' shows it as version 1
            fast-forwarded to origin/main

            """)
        #expect(try m.vault(m.a, ["get", "web/site3"]).stdoutText == "fromB")
        #expect(try m.vault(m.a, ["get", "web/site3", "--version", "1"]).stdoutText == "fromA")
        // Told once: the next sync has nothing new.
        try expectSync(m, m.a, "'team.vault' and origin/main are the same\n")
    }

    /// The other order: A's edit loses at A's own merge (said there, once); B's next sync is a fast-forward and says
    /// whose change B's won over.
    @Test(.enabled(if: GitSyncTests.git != nil, "needs git")) func theLoserMergesAndTheWinnerFastForwards() throws {
        let m = try machines()
        try m.put(m.a, "web/site3", "fromA")
        usleep(5_000)
        try m.put(m.b, "web/site3", "fromB")
        try #require(try m.sync(m.b).status == 0)
        try expectSync(m, m.a, """
            merged 'origin/main' into 'team.vault': 0 added, 0 updated, 0 deleted, 0 resurrected, 1 conflict
              your change to web/site3 lost to a later one from bob@desk; 'vault history web/site3' shows it as version 1
            committed 'team.vault'
            merged origin/main
            pushed to origin/main

            """)
        try expectSync(m, m.b, """
            merged 'origin/main' into 'team.vault': 0 added, 0 updated, 0 deleted, 0 resurrected, 1 conflict
              conflict: web/site3: your change won over alice@desk's (kept as version 1)
            fast-forwarded to origin/main

            """)
        let json = try m.vault(m.b, ["history", "web/site3", "--json", "--reveal"]).stdoutText
        #expect(json.contains("\"conflict\":true"), "\(json)")
        try expectSync(m, m.b, "'team.vault' and origin/main are the same\n")
    }

    /// Issue 35 §1, re-walk finding 1: A and B each create `web/site3` before syncing, B first. B's keeps the name (created
    /// first); A's, the fresher value, is renamed. Each machine is told once, at the sync that brings the rename: A that
    /// its own entry was renamed and why (no "added" for the name it had), B whose entry it was; later syncs that merge
    /// do not say it again.
    /// After a collision, the holder of the name deletes it: the renamed entry has the name again, and the sync that
    /// does it says so, beside the deletion (note 4: "deleted: web/site3" alone, and web/site3 was still there).
    @Test(.enabled(if: GitSyncTests.git != nil, "needs git")) func theRenamedEntryHasItsNameAgainWhenTheHolderIsDeleted() throws {
        let m = try namedMachines()
        try m.put(m.b, "web/site3", "B3")
        usleep(5_000)
        try m.put(m.a, "web/site3", "A3")
        try #require(try m.sync(m.b).status == 0)
        try #require(try m.sync(m.a).status == 0)
        try #require(try m.sync(m.b).status == 0)
        let mine = try #require(try m.vault(m.a, ["list"]).stdoutText.split(separator: "\n").map(String.init).last)
        #expect(mine.hasPrefix("web/site3~"))
        #expect(try m.vault(m.b, ["delete", "web/site3"]).status == 0)
        try #require(try m.sync(m.b).status == 0)
        let sync = try m.sync(m.a, ["--json"])
        #expect(sync.status == 0, "\(sync.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: sync.stdout) as? [String: Any])
        #expect(report["deleted"] as? [String] == ["web/site3"])
        #expect(report["named_back"] as? [[String: String]] == [["from": mine, "to": "web/site3"]], "\(report)")
        #expect(try m.vault(m.a, ["list"]).stdoutText == "web/site3\n")
        #expect(try m.vault(m.a, ["get", "web/site3"]).stdoutText == "A3")
        try m.put(m.b, "web/other", "o")
        try #require(try m.sync(m.b).status == 0)
        #expect(try m.vault(m.b, ["list"]).stdoutText == "web/other\nweb/site3\n")
    }

    @Test(.enabled(if: GitSyncTests.git != nil, "needs git")) func aSameNameCollisionIsToldOnceSayingWhoseEntryWasRenamed() throws {
        let m = try namedMachines()
        try m.put(m.b, "web/site3", "B3")
        usleep(5_000)
        try m.put(m.a, "web/site3", "A3")
        #expect(try m.vault(m.a, ["list"]).stdoutText == "web/site3\n")
        try #require(try m.sync(m.b).status == 0)
        // 1: A merges B's push. The name is B's (created first); A's entry, written later, is renamed.
        let sync = try m.sync(m.a)
        #expect(sync.status == 0, "\(sync.stderr)")
        let names = try m.vault(m.a, ["list"]).stdoutText.split(separator: "\n").map(String.init)
        #expect(names.count == 2 && names[0] == "web/site3" && names[1].hasPrefix("web/site3~"), "\(names)")
        let mine = names.last ?? ""
        #expect(mine.count == "web/site3~".count + 8)
        #expect(sync.stdoutText == """
            merged 'origin/main' into 'team.vault': 0 added, 0 updated, 0 deleted, 0 resurrected, 0 conflicts, 1 renamed
              renamed: your web/site3 is now \(mine): bob@desk created web/site3 first, so web/site3 now reads an older value than \(mine) ('vault mv' to rename)
            committed 'team.vault'
            merged origin/main
            pushed to origin/main

            """)
        #expect(try m.vault(m.a, ["get", "web/site3"]).stdoutText == "B3")
        #expect(try m.vault(m.a, ["get", mine]).stdoutText == "A3")
        // B's sync (a fast-forward to A's merge) says whose entry came in renamed.
        try expectSync(m, m.b, """
            merged 'origin/main' into 'team.vault': 0 added, 0 updated, 0 deleted, 0 resurrected, 0 conflicts, 1 renamed
              renamed: alice@desk's web/site3 is now \(mine): you created web/site3 first, so web/site3 now reads an older value than \(mine) ('vault mv' to rename)
            fast-forwarded to origin/main

            """)
        let json = try m.vault(m.b, ["sync", "--json", "--dry-run"]).stdoutText
        #expect(!json.contains("renamed\":[{"), "\(json)")
        // 2 and 3: each machine's next merge brings another entry, and says only that.
        try m.put(m.b, "web/other", "o")
        try #require(try m.sync(m.b).status == 0)
        try expectSync(m, m.a, """
            merged 'origin/main' into 'team.vault': 1 added, 0 updated, 0 deleted, 0 resurrected, 0 conflicts
              added: web/other
            fast-forwarded to origin/main

            """)
        try m.put(m.a, "web/more", "m")
        try m.put(m.b, "web/else", "e")
        try #require(try m.sync(m.a).status == 0)
        try expectSync(m, m.b, """
            merged 'origin/main' into 'team.vault': 1 added, 0 updated, 0 deleted, 0 resurrected, 0 conflicts
              added: web/more
            committed 'team.vault'
            merged origin/main
            pushed to origin/main

            """)
        try expectSync(m, m.a, """
            merged 'origin/main' into 'team.vault': 1 added, 0 updated, 0 deleted, 0 resurrected, 0 conflicts
              added: web/else
            fast-forwarded to origin/main

            """)
        #expect(try m.vault(m.b, ["get", mine]).stdoutText == "A3")
        // A renames its entry: B is told it was renamed, and by whom (not "updated").
        #expect(try m.vault(m.a, ["mv", mine, "web/site3-alice"]).status == 0)
        try #require(try m.sync(m.a).status == 0)
        try expectSync(m, m.b, """
            merged 'origin/main' into 'team.vault': 0 added, 0 updated, 0 deleted, 0 resurrected, 0 conflicts, 1 renamed
              renamed: \(mine) -> web/site3-alice (by alice@desk)
            fast-forwarded to origin/main

            """)
        #expect(try m.vault(m.b, ["get", "web/site3-alice"]).stdoutText == "A3")
    }

    /// Re-walk finding 7: a deletion and a change on two machines say who did which. A deletes web/site1 before B
    /// changes it (B's change brings it back) and web/x2 after B changed it (the deletion wins and keeps B's change).
    /// Then git's own pull: the driver names the branch git merged (git pull gives the commit: the upstream's name).
    @Test(.enabled(if: GitSyncTests.git != nil, "needs git")) func aDeletionAndAChangeSayWhoDidWhichAndTheDriverNamesTheBranch() throws {
        let m = try machines()
        try m.put(m.a, "web/site1", "1")
        try m.put(m.a, "web/x2", "2")
        try #require(try m.sync(m.a).status == 0)
        try #require(try m.sync(m.b).status == 0)
        try m.put(m.b, "web/x2", "bx")
        usleep(5_000)
        #expect(try m.vault(m.a, ["delete", "web/site1", "--yes"]).status == 0)
        #expect(try m.vault(m.a, ["delete", "web/x2", "--yes"]).status == 0)
        usleep(5_000)
        try m.put(m.b, "web/site1", "b1")
        try #require(try m.sync(m.a).status == 0)
        try expectSync(m, m.b, """
            merged 'origin/main' into 'team.vault': 0 added, 0 updated, 1 deleted, 0 resurrected, 0 conflicts
              deleted: web/x2
              kept: web/x2: your change lost to alice@desk's later deletion, which keeps it ('vault restore --deleted web/x2' brings it back)
            committed 'team.vault'
            merged origin/main
            pushed to origin/main

            """)
        try expectSync(m, m.a, """
            merged 'origin/main' into 'team.vault': 0 added, 0 updated, 0 deleted, 1 resurrected, 0 conflicts
              resurrected: web/site1 came back: bob@desk changed it after your deletion
              kept: web/x2: bob@desk's change lost to your later deletion, which keeps it ('vault restore --deleted web/x2' brings it back)
            fast-forwarded to origin/main

            """)
        #expect(try m.vault(m.a, ["get", "web/site1"]).stdoutText == "b1")
        let json = try m.vault(m.b, ["merge", m.vault(m.a), "--json"]).stdoutText
        #expect(json.contains("\"kept_deleted_by\":[]") && json.contains("\"resurrected_by\":[]"), "told once: \(json)")

        // git pull (not vault sync) runs the driver, which names the upstream.
        try m.put(m.b, "web/q", "q")
        try #require(try m.sync(m.b).status == 0)
        try m.put(m.a, "web/p", "p")
        #expect(try m.git(m.a, ["commit", "-qam", "p"]).status == 0)
        let pull = try m.git(m.a, ["pull", "-q", "--no-rebase"])
        #expect(pull.status == 0, "\(pull.stderr)")
        #expect(pull.stderr.contains("vault: merged 'origin/main' into 'team.vault': 1 added, 0 updated, 0 deleted, 0 resurrected, 0 conflicts\n"), "\(pull.stderr)")
    }
}
