import Foundation
import Testing
import VaultTestSupport

/// Issue 33 §4 and §5 with real git: what a repository's committed files or git's own commands do to the vault's
/// file in a work tree (its bytes, its mode). Two machines are two boxes, as in ``GitSyncTests``.
@Suite(.processTimeLimit) struct GitHostileRepositoryTests {
    typealias Machines = GitSyncTests.Machines
    static let git = GitSyncTests.git

    static let pin = "/team.vault -text -eol -filter -ident -working-tree-encoding merge=vault diff=vault\n"

    static func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    /// A collaborator commits a `.gitattributes` line that makes git convert line endings in the vault (`text`
    /// normalises its CRLF when it is committed, `eol=crlf` adds CRs when it is checked out): every clone's
    /// `vault git setup` pinned the vault's attributes in `.git/info/attributes`, which wins, so both machines keep
    /// syncing, every vault opens and every pushed vault is the file's bytes.
    @Test(.enabled(if: git != nil, "needs git")) func aCommittedGitattributesThatConvertsTheVaultNeitherBreaksNorCorruptsIt() throws {
        let m = try Machines()
        #expect(try String(contentsOfFile: m.cloneB + "/.git/info/attributes", encoding: .utf8) == Self.pin)
        try m.a.unlock(["--vault", m.vaultA])
        try m.b.unlock(["--vault", m.vaultB])
        for (round, line) in ["/team.vault text eol=crlf", "/team.vault text"].enumerated() {
            let attributes = m.cloneA + "/.gitattributes"
            let before = try String(contentsOfFile: attributes, encoding: .utf8)
            try (before + line + "\n").write(toFile: attributes, atomically: true, encoding: .utf8)
            #expect(try m.git(m.a, ["commit", "-qm", "line endings", "--", ".gitattributes"]).status == 0)
            try m.put(m.a, "from-a-\(round)", "a")
            let pushed = try m.sync(m.a)
            #expect(pushed.status == 0 && pushed.stdoutText.hasSuffix("pushed to origin/main\n"), "\(line): \(pushed.stdoutText) \(pushed.stderr)")
            #expect(try m.git(m.a, ["cat-file", "blob", "origin/main:team.vault"]).stdout == Self.bytes(m.vaultA), "\(line): stored as it is")

            let pulled = try m.sync(m.b)
            #expect(pulled.status == 0 && pulled.stdoutText.hasSuffix("fast-forwarded to origin/main\n"), "\(line): \(pulled.stdoutText) \(pulled.stderr)")
            #expect(try Self.bytes(m.vaultB) == m.git(m.b, ["cat-file", "blob", "HEAD:team.vault"]).stdout, "\(line): checked out as it is")
            #expect(try m.list(m.b).contains("from-a-\(round)"), "\(line): the vault opens")
            try m.put(m.b, "from-b-\(round)", "b")
            let back = try m.sync(m.b)
            #expect(back.status == 0 && back.stdoutText.hasSuffix("pushed to origin/main\n"), "\(line): \(back.stdoutText) \(back.stderr)")
            #expect(try m.git(m.b, ["cat-file", "blob", "origin/main:team.vault"]).stdout == Self.bytes(m.vaultB), "\(line): stored as it is")
            #expect(try m.sync(m.a).status == 0)
            #expect(try m.list(m.a) == m.list(m.b))
        }
        #expect(try m.list(m.a) == ["from-a-0", "from-a-1", "from-b-0", "from-b-1"])
    }

    /// A conversion the pin does not prevent (here a later line of this clone's own `info/attributes`): sync
    /// checks the bytes before it commits (nothing committed) and after git checked the vault out (the committed
    /// bytes put back), and stops with exit 6 before it pushes.
    @Test(.enabled(if: git != nil, "needs git")) func aConversionThePinDoesNotStopIsCaughtBeforeACommitAndAfterACheckout() throws {
        let m = try Machines()
        try m.a.unlock(["--vault", m.vaultA])
        try m.b.unlock(["--vault", m.vaultB])
        let info = m.cloneB + "/.git/info/attributes"
        let remedy = "remove what sets text, eol, filter, ident, working-tree-encoding for it ('git check-attr -a -- team.vault' shows them), then run 'vault sync' again"

        try (Self.pin + "/team.vault text\n").write(toFile: info, atomically: true, encoding: .utf8)
        try m.put(m.b, "from-b", "b")
        let head = try m.git(m.b, ["rev-parse", "HEAD"]).stdoutText
        let refused = try m.sync(m.b)
        #expect(refused.status == 6, "\(refused.stdoutText) \(refused.stderr)")
        #expect(refused.stderr == "vault: git would not store 'team.vault' as it is: its attributes convert it (text: set); nothing is committed or pushed; \(remedy)\n")
        #expect(try m.git(m.b, ["rev-parse", "HEAD"]).stdoutText == head)
        #expect(try m.git(m.b, ["rev-parse", "origin/main"]).stdoutText == head)

        try Data(Self.pin.utf8).write(to: URL(fileURLWithPath: info))
        #expect(try m.sync(m.b).status == 0)
        // The index's record of the file made older than a second (not racy): git then trusts it, as it would any
        // day, and sees no change to commit.
        sleep(2)
        #expect(try m.git(m.b, ["update-index", "-q", "--really-refresh"]).status == 0)
        try (Self.pin + "/team.vault text eol=crlf\n").write(toFile: info, atomically: true, encoding: .utf8)
        #expect(try m.sync(m.a).status == 0)
        // A value of 4 KiB: its ciphertext holds line feeds for git to convert (a 600-byte vault may hold none).
        try m.put(m.a, "from-a", String(repeating: "a", count: 4096))
        #expect(try m.sync(m.a).status == 0)
        let converted = try m.sync(m.b)
        #expect(converted.status == 6, "\(converted.stdoutText) \(converted.stderr)")
        #expect(converted.stderr == "vault: git changed the bytes of 'team.vault' as it checked it out: its attributes convert it (text: set, eol: crlf); the file is put back as committed and nothing is pushed; \(remedy)\n")
        #expect(try Self.bytes(m.vaultB) == m.git(m.b, ["cat-file", "blob", "HEAD:team.vault"]).stdout)
        #expect(try m.list(m.b) == ["from-a", "from-b"], "the vault opens")
    }

    static let madePrivate = "vault: note: 'team.vault' was readable by others (git writes what it checks out 0644): it is 0600 now\n"

    /// A fresh clone's vault is 0644 (git's umask): `vault sync` there works with no chmod and makes it 0600. After
    /// `vault git setup`, git's own commands leave it 0600 (a fast-forward pull, a merge through the driver,
    /// `merge --abort` after a conflict, checkouts, `pull --rebase`), and a hook the clone had runs on as before.
    @Test(.enabled(if: git != nil, "needs git")) func gitsOwnCommandsLeaveTheVaultPrivateAfterSetup() throws {
        let m = try Machines()
        let c = try AgentBox()
        let clone = c.directory + "/clone", vault = clone + "/team.vault"
        func git(_ arguments: [String]) throws -> AgentRun { try m.run(c, clone, arguments) }
        func mode() -> mode_t? { AgentFiles.lstatMode(vault).map { $0 & 0o777 } }
        func list() throws -> [String] { try c.around(["list", "--vault", vault]).stdoutText.split(separator: "\n").map(String.init) }
        func pushFromA(_ name: String) throws {
            try m.put(m.a, name, "a")
            #expect(try m.sync(m.a).status == 0)
        }
        try m.a.unlock(["--vault", m.vaultA])
        try pushFromA("a-0")

        #expect(try m.run(c, nil, ["clone", "-q", m.origin, clone]).status == 0)
        #expect(mode() == 0o644)
        let around = m.environment(c).merging(["VAULT_AGENT_SOCK": c.elsewhereSocket]) { $1 }
        let synced = try AgentCLI.exec(CLI.vault, ["sync", "--vault", vault, "--passphrase-file", c.passphraseFile], environment: around)
        #expect(synced.status == 0 && synced.stdoutText == "'team.vault' and origin/main are the same\n", "\(synced.stdoutText) \(synced.stderr)")
        #expect(synced.stderr == "vault: note: git now converts no byte of 'team.vault' in this clone (its attributes pinned in .git/info/attributes)\n" + Self.madePrivate)
        #expect(mode() == 0o600)

        // Setup in a clone with a hook of its own, whose vault git wrote 0644 again.
        let log = c.directory + "/hook.log"
        let userHook = clone + "/.git/hooks/post-merge"
        try Data("#!/bin/sh\necho \"user post-merge $*\" >> '\(log)'\n".utf8).write(to: URL(fileURLWithPath: userHook))
        chmod(userHook, 0o755)
        chmod(vault, 0o644)
        let setup = try c.vault(["git", "setup", "--vault", vault])
        #expect(setup.status == 0 && setup.stderr == Self.madePrivate, "\(setup.stderr)")
        #expect(mode() == 0o600)
        let hook = try String(contentsOfFile: clone + "/.git/hooks/post-checkout", encoding: .utf8)
        #expect(hook.contains("\nvault_private 'team.vault'\n"), "\(hook)")
        #expect(try c.vault(["git", "setup", "--vault", vault]).status == 0)
        #expect(try String(contentsOfFile: clone + "/.git/hooks/post-checkout", encoding: .utf8) == hook, "idempotent")
        #expect(FileManager.default.isExecutableFile(atPath: userHook + ".before-vault"))

        // A fast-forward pull.
        try pushFromA("a-1")
        #expect(try git(["pull", "-q", "--no-rebase"]).status == 0)
        #expect(mode() == 0o600, "after a fast-forward pull")
        #expect(try list() == ["a-0", "a-1"])

        // Both sides changed and the agent is locked: the driver leaves a conflict, and git merge --abort.
        #expect(try c.around(["put", "c-1", "--vault", vault], stdin: Data("c".utf8)).status == 0)
        #expect(try git(["commit", "-qam", "c-1"]).status == 0)
        try pushFromA("a-2")
        let conflict = try git(["pull", "-q", "--no-rebase"])
        #expect(conflict.status != 0 && conflict.stderr.contains("its vault is not unlocked in the agent"), "\(conflict.stderr)")
        #expect(try git(["merge", "--abort"]).status == 0)
        #expect(mode() == 0o600, "after git merge --abort")
        #expect(try list() == ["a-0", "a-1", "c-1"])

        // Unlocked: a merge through the driver.
        try c.unlock(["--vault", vault])
        let merged = try git(["pull", "-q", "--no-rebase"])
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(mode() == 0o600, "after a merge through the driver")
        #expect(try list() == ["a-0", "a-1", "a-2", "c-1"])
        #expect(try git(["push", "-q"]).status == 0)
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "user post-merge 0\nuser post-merge 0\n", "the clone's own hook ran after each")

        // Checkouts.
        #expect(try git(["checkout", "-q", "HEAD~1"]).status == 0)
        #expect(mode() == 0o600, "after a checkout")
        #expect(try git(["checkout", "-q", "main"]).status == 0)
        #expect(mode() == 0o600, "after a checkout")

        // A rebase onto the other machine's change, through the driver.
        #expect(try c.around(["put", "c-2", "--vault", vault], stdin: Data("c".utf8)).status == 0)
        #expect(try git(["commit", "-qam", "c-2"]).status == 0)
        #expect(try m.sync(m.a).status == 0)
        try pushFromA("a-3")
        let rebased = try git(["pull", "-q", "--rebase"])
        #expect(rebased.status == 0, "\(rebased.stderr)")
        #expect(mode() == 0o600, "after git pull --rebase")
        #expect(try list() == ["a-0", "a-1", "a-2", "a-3", "c-1", "c-2"])
    }
}
