import Foundation
import Testing
import VaultTestSupport

/// Issue 35 §4 (walkthrough finding 4), with the real git and a bare repository: the first push of a vault to an
/// empty remote is one `vault sync` (the first commit, with what `vault git setup` wrote beside the vault, and
/// `push -u` to the one remote), and `vault remote show` says what a git vault syncs with.
@Suite(.processTimeLimit) struct GitFirstPushTests {
    typealias Machine = GitSecondMachineTests.Machine

    /// A machine with its default vault (one entry) set up in a new repository `secrets` whose one remote is an
    /// empty bare repository: the state just before the first `vault sync`.
    struct NewRepository {
        let box: Sandbox
        let base: String
        let machine: Machine
        let bare: String
        let clone: String

        init() throws {
            box = try Sandbox()
            base = URL(fileURLWithPath: box.directory).standardizedFileURL.path
            machine = try Machine(base + "/home")
            bare = base + "/remote.git"
            clone = base + "/secrets"
            try #require(try machine.run("git init -q --bare -b main '\(bare)' && git init -q -b main secrets", in: base).status == 0)
            try #require(try vault("init", in: base).status == 0)
            try #require(try machine.run("printf v | exec \"$VAULT\" put k --passphrase-file '\(box.passphraseFile)'", in: base).status == 0)
            try #require(try vault("git setup", in: clone).status == 0)
        }

        /// `vault ARGUMENTS --passphrase-file …` in `directory` (the clone by default).
        func vault(_ arguments: String, in directory: String? = nil) throws -> CLIResult {
            try machine.run("exec \"$VAULT\" \(arguments) --passphrase-file '\(box.passphraseFile)'", in: directory ?? clone)
        }

        func git(_ arguments: String, in directory: String? = nil) throws -> CLIResult {
            try machine.run("git \(arguments)", in: directory ?? clone)
        }
    }

    @Test(.enabled(if: GitSecondMachineTests.runs, "needs git: scripts/install-deps --test"))
    func theFirstPushToAnEmptyRemoteIsOneSync() throws {
        _ = try #require(GitSecondMachineTests.gitTool, "git is needed (CI=true)")
        let r = try NewRepository()
        // No remote yet: how to add one. 'vault remote show' (finding 12) says what sync would use, from anywhere.
        let vaultPath = r.clone + "/default.vault"
        let noRemote = try r.vault("remote show", in: r.base)
        #expect(noRemote.status == 2 && noRemote.stdout.isEmpty)
        #expect(noRemote.stderr == "vault: '\(vaultPath)' has no remote: its git branch 'main' has no upstream and the repository no remote; 'git push -u REMOTE BRANCH' or 'vault remote set REMOTE' sets one\n", "\(noRemote.stderr)")
        let none = try r.vault("sync")
        #expect(none.status == 1 && none.stdout.isEmpty)
        #expect(none.stderr == "vault: branch 'main' has no upstream: the vault is committed; add the repository to push to (git remote add origin URL), then run 'vault sync' again\n", "\(none.stderr)")
        #expect(try r.git("rev-list --count HEAD").stdoutText == "1\n")
        #expect(try r.git("status --porcelain").stdoutText.isEmpty)
        // Undo that commit: the repository as new, with one remote.
        #expect(try r.git("update-ref -d HEAD && git remote add origin '\(r.bare)'").status == 0)

        let pending = try r.vault("remote show")
        #expect(pending.status == 0 && pending.stdoutText == "git: origin (main); no upstream yet: the first 'vault sync' sets it\n", "\(pending.stdoutText) \(pending.stderr)")
        let dry = try r.vault("sync --dry-run")
        #expect(dry.status == 0 && dry.stderr.isEmpty, "\(dry.stderr)")
        #expect(dry.stdoutText == "would push to origin/main with -u (git push -u origin main): the branch's upstream from now on\n", "\(dry.stdoutText)")
        #expect(try r.git("rev-parse -q --verify HEAD").status != 0 && r.git("ls-remote --heads origin").stdoutText.isEmpty)

        let first = try r.vault("sync")
        #expect(first.status == 0 && first.stderr.isEmpty, "\(first.stderr)")
        #expect(first.stdoutText == """
            committed 'default.vault'
            committed .gitattributes and .gitignore (what 'vault git setup' wrote)
            pushed to origin/main with -u (git push -u origin main): the branch's upstream from now on

            """, "\(first.stdoutText)")
        #expect(try r.git("ls-tree --name-only main", in: r.bare).stdoutText == ".gitattributes\n.gitignore\ndefault.vault\n")
        #expect(try r.git("rev-parse --abbrev-ref @{upstream}").stdoutText == "origin/main\n")
        #expect(try r.git("status --porcelain").stdoutText.isEmpty)
        let shown = try r.vault("remote show", in: r.base)
        #expect(shown.status == 0 && shown.stdoutText == "git: origin (main)\n", "\(shown.stdoutText) \(shown.stderr)")
        let shownJSON = try r.vault("remote show --json")
        #expect(try JSONSerialization.jsonObject(with: shownJSON.stdout) as? NSDictionary == ["remote": "git", "git_remote": "origin", "branch": "main", "upstream_set": true])
        let again = try r.vault("sync")
        #expect(again.status == 0 && again.stdoutText == "'default.vault' and origin/main are the same\n", "\(again.stdoutText) \(again.stderr)")

        // A change of the user's own in .gitattributes is not the vault's to commit: only the vault goes.
        let attributes = r.clone + "/.gitattributes"
        try (String(contentsOfFile: attributes, encoding: .utf8) + "*.md text\n").write(toFile: attributes, atomically: false, encoding: .utf8)
        #expect(try r.machine.run("printf w | exec \"$VAULT\" put k2 --passphrase-file '\(r.box.passphraseFile)'", in: r.base).status == 0)
        let later = try r.vault("sync")
        #expect(later.status == 0 && later.stdoutText == "committed 'default.vault'\npushed to origin/main\n", "\(later.stdoutText) \(later.stderr)")
        #expect(try r.git("status --porcelain").stdoutText == " M .gitattributes\n")

        // No upstream, but the one remote has the branch: it becomes the upstream, and the sync goes on as always.
        #expect(try r.git("branch --unset-upstream").status == 0)
        #expect(try r.machine.run("printf x | exec \"$VAULT\" put k3 --passphrase-file '\(r.box.passphraseFile)'", in: r.base).status == 0)
        let tracked = try r.vault("sync")
        #expect(tracked.status == 0 && tracked.stdoutText == "committed 'default.vault'\npushed to origin/main\n", "\(tracked.stdoutText) \(tracked.stderr)")
        #expect(try r.git("rev-parse --abbrev-ref @{upstream}").stdoutText == "origin/main\n")

        // A second machine: clone, setup, sync; it has every entry.
        let b = try Machine(r.base + "/homeB")
        #expect(try b.run("git clone -q '\(r.bare)' secrets", in: b.home).status == 0)
        #expect(try b.run("exec \"$VAULT\" git setup", in: b.home + "/secrets").status == 0)
        let syncB = try b.run("exec \"$VAULT\" sync --passphrase-file '\(r.box.passphraseFile)'", in: b.home)
        #expect(syncB.status == 0 && syncB.stdoutText == "'default.vault' and origin/main are the same\n", "\(syncB.stdoutText) \(syncB.stderr)")
        let listB = try b.run("exec \"$VAULT\" list --passphrase-file '\(r.box.passphraseFile)'", in: b.home)
        #expect(listB.stdoutText == "k\nk2\nk3\n", "\(listB.stderr)")
    }

    /// `git init` and `git remote add` where `git clone` was meant: the remote's branch and this first commit would be
    /// unrelated histories, which git does not merge. Said before anything is committed.
    @Test(.enabled(if: GitSecondMachineTests.runs, "needs git: scripts/install-deps --test"))
    func aNewRepositoryBesideARemoteWithTheBranchIsToldToClone() throws {
        _ = try #require(GitSecondMachineTests.gitTool, "git is needed (CI=true)")
        let r = try NewRepository()
        #expect(try r.git("clone -q '\(r.bare)' seed 2>/dev/null && git -C seed commit -q --allow-empty -m start && git -C seed push -q origin main", in: r.base).status == 0)
        #expect(try r.git("remote add origin '\(r.bare)'").status == 0)
        for arguments in ["sync --dry-run", "sync"] {
            let sync = try r.vault(arguments)
            #expect(sync.status == 1 && sync.stdout.isEmpty, "\(arguments)")
            #expect(sync.stderr == "vault: 'origin' has a branch 'main' already, and this repository no commit: git would not merge the two; clone it instead (git clone URL) and run 'vault git setup' in the clone (it adopts the clone's vault; 'vault merge' brings this one's entries into it); nothing was committed\n", "\(arguments): \(sync.stderr)")
        }
        #expect(try r.git("rev-parse -q --verify HEAD").status != 0)
        #expect(try r.git("status --porcelain").stdoutText == "?? .gitattributes\n?? .gitignore\n?? default.vault\n")
    }

    @Test(.enabled(if: GitSecondMachineTests.runs, "needs git: scripts/install-deps --test"))
    func severalRemotesAreNotGuessed() throws {
        _ = try #require(GitSecondMachineTests.gitTool, "git is needed (CI=true)")
        let r = try NewRepository()
        #expect(try r.git("remote add origin '\(r.bare)' && git remote add mirror '\(r.bare)'").status == 0)
        let shown = try r.vault("remote show")
        #expect(shown.status == 2 && shown.stderr == "vault: '\(r.clone)/default.vault' has no remote: its git branch 'main' has no upstream and the repository 2 remotes; 'git push -u REMOTE BRANCH' or 'vault remote set REMOTE' sets one\n", "\(shown.stderr)")
        let sync = try r.vault("sync")
        #expect(sync.status == 1 && sync.stdout.isEmpty)
        #expect(sync.stderr == "vault: branch 'main' has no upstream: the vault is committed; set one with 'git push -u REMOTE main' (this repository has 2 remotes)\n", "\(sync.stderr)")
        #expect(try r.git("ls-remote --heads origin").stdoutText.isEmpty)
    }

    /// What setup and the first sync did, in JSON: setup moving a vault into the repository (`moved_to`,
    /// `recorded_in`, `locked_in_agent`), the first push (`set_upstream`, `committed_setup_files`), and a machine
    /// with a vault of its own taking the clone's (`adopted`, `previous_vault`).
    @Test(.enabled(if: GitSecondMachineTests.runs, "needs git: scripts/install-deps --test"))
    func setupAndTheFirstSyncSayWhatTheyDidInJSON() throws {
        _ = try #require(GitSecondMachineTests.gitTool, "git is needed (CI=true)")
        let box = try Sandbox()
        let base = URL(fileURLWithPath: box.directory).standardizedFileURL.path
        let a = try Machine(base + "/homeA"), c = try Machine(base + "/homeC")
        let bare = base + "/remote.git", clone = base + "/secrets"
        let passphrase = "--passphrase-file '\(box.passphraseFile)'"
        func json(_ result: CLIResult) throws -> NSDictionary {
            try #require(result.status == 0, "\(result.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? NSDictionary)
        }
        try #require(try a.run("git init -q --bare -b main '\(bare)' && git init -q -b main secrets && \"$VAULT\" init \(passphrase)", in: base).status == 0)
        let setup = try json(a.run("exec \"$VAULT\" git setup --json", in: clone))
        #expect(setup["moved_to"] as? String == clone + "/default.vault")
        #expect(setup["recorded_in"] as? String == a.record)
        #expect(setup["locked_in_agent"] as? Bool == false)
        #expect(setup["adopted"] == nil && setup["previous_vault"] == nil)
        #expect(setup["added"] as? Bool == true && setup["repository"] as? String == clone)

        try #require(try a.run("git remote add origin '\(bare)'", in: clone).status == 0)
        let first = try json(a.run("exec \"$VAULT\" sync --json \(passphrase)", in: clone))
        #expect(first["set_upstream"] as? Bool == true && first["upstream"] as? String == "origin/main")
        #expect(first["committed_setup_files"] as? [String] == [".gitattributes", ".gitignore"])
        #expect(first["committed"] as? Bool == true && first["pushed"] as? Bool == true)
        let again = try json(a.run("exec \"$VAULT\" sync --json \(passphrase)", in: clone))
        #expect(again["set_upstream"] as? Bool == false && again["committed_setup_files"] as? [String] == [])

        try #require(try c.run("\"$VAULT\" init \(passphrase) && git clone -q '\(bare)' secrets", in: c.home).status == 0)
        let adopted = try json(c.run("exec \"$VAULT\" git setup --json --vault '\(c.home)/secrets/default.vault'", in: c.home + "/secrets"))
        #expect(adopted["adopted"] as? String == c.home + "/secrets/default.vault")
        #expect(adopted["previous_vault"] as? String == c.defaultVault)
        #expect(adopted["recorded_in"] as? String == c.record)
        #expect(adopted["moved_to"] == nil && adopted["locked_in_agent"] == nil)
    }
}
