import Foundation
import Testing
import VaultTestSupport

/// Issue 35 §1 with real git: the machine whose fresh edit lost is told, whichever side merges (also when its sync is
/// a fast-forward to the other side's merge), and the machine whose edit won is told whose change lost; each entry
/// is counted once, as a conflict.
@Suite(.processTimeLimit) struct GitSyncReportTests {
    typealias Machines = GitSyncTests.Machines

    /// Two clones named alice@desk (A) and bob@desk (B), unlocked, both holding `web/site3`.
    func machines() throws -> Machines {
        let m = try Machines()
        for (box, name) in [(m.a, "alice@desk"), (m.b, "bob@desk")] {
            let named = try box.around(["replica", "name", name, "--vault", m.vault(box)])
            try #require(named.status == 0, "\(named.stderr)")
            try box.unlock(["--vault", m.vault(box)])
        }
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
}
