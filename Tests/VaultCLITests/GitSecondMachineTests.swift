import Foundation
import Testing
@testable import VaultCommands
import VaultTestSupport

/// Issue 35's two machines over git without loose ends (walkthrough findings 2, 3 and 5), with the real git: a
/// fresh clone's vault adopted by `vault git setup` as this machine's (no `vault init`, no VAULT_PATH, no chmod),
/// and a vault the agent holds forgotten at its old path when setup moves it.
@Suite(.processTimeLimit) struct GitSecondMachineTests {
    static let gitTool = findTool("git")
    static var runs: Bool { gitTool != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    /// A machine: its own home, XDG directories inside it (the config one holds the record of its vault), no
    /// VAULT_PATH, the cheap test KDF, git's author.
    struct Machine {
        let home: String
        var environment: [String: String] {
            ["HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_DATA_HOME": home + "/.local/share", "XDG_STATE_HOME": home + "/.local/state",
             "VAULT_TESTING_INSECURE_KDF": "1", "GIT_CONFIG_NOSYSTEM": "1",
             "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"]
        }
        var defaultVault: String { home + "/.local/share/vault/default.vault" }
        var record: String { home + "/.config/vault/default-vault" }

        init(_ home: String) throws {
            self.home = home
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        }

        /// `script` run by sh in `directory` (`$VAULT` is vault).
        func run(_ script: String, in directory: String, stdin: Data = Data()) throws -> CLIResult {
            try CLI.shell("cd '\(directory)' && \(script)", stdin: stdin, environment: environment)
        }
    }

    func mode(_ path: String) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test(.enabled(if: runs, "needs git: scripts/install-deps --test"))
    func aSecondMachinesCloneIsAdoptedBySetupAndFoundWithoutOptions() throws {
        _ = try #require(Self.gitTool, "git is needed (CI=true)")
        let box = try Sandbox()
        let base = URL(fileURLWithPath: box.directory).standardizedFileURL.path
        let a = try Machine(base + "/homeA"), b = try Machine(base + "/homeB")
        let bare = base + "/remote.git"
        #expect(try a.run("git init -q --bare -b main '\(bare)' && git init -q -b main secrets && git -C secrets remote add origin '\(bare)'", in: base).status == 0)

        // The first machine: its default vault moved into the clone, and recorded there for every later verb.
        #expect(try a.run("exec \"$VAULT\" init --passphrase-file '\(box.passphraseFile)'", in: base).status == 0)
        #expect(try a.run("printf v | exec \"$VAULT\" put k --passphrase-file '\(box.passphraseFile)'", in: base).status == 0)
        let cloneA = base + "/secrets"
        let setupA = try a.run("exec \"$VAULT\" git setup", in: cloneA)
        #expect(setupA.status == 0, "\(setupA.stderr)")
        #expect(setupA.stdoutText == """
            moved the vault to '\(cloneA)/default.vault' ('vault sync' commits it); vault finds it there from now on (recorded in '\(a.record)')
            git merges 'default.vault' entry by entry in this clone (added to .gitattributes, its lock file to .gitignore; 'vault sync' commits them); every other clone runs 'vault git setup' once

            """, "\(setupA.stdoutText)")
        #expect(try String(contentsOfFile: a.record, encoding: .utf8) == cloneA + "/default.vault\n" && mode(a.record) == 0o600)
        // Found from anywhere, with no --vault and no VAULT_PATH.
        let listA = try a.run("exec \"$VAULT\" list --passphrase-file '\(box.passphraseFile)'", in: base)
        #expect(listA.status == 0 && listA.stdoutText == "k\n", "\(listA.stderr)")
        #expect(try a.run("git add -A && git commit -q -m start && git push -q -u origin main", in: cloneA).status == 0)

        // The second machine clones: before setup, its verbs say 'vault git setup', not 'vault init'.
        #expect(try b.run("umask 022 && git clone -q '\(bare)' secrets", in: base + "/homeB").status == 0)
        let cloneB = base + "/homeB/secrets"
        #expect(try mode(cloneB + "/default.vault") == 0o644)
        let hint = "hint: this git clone holds 'default.vault': run 'vault git setup' to make it this machine's vault\n"
        for verb in ["list", "sync"] {
            let before = try b.run("exec \"$VAULT\" \(verb) --passphrase-file '\(box.passphraseFile)'", in: cloneB)
            #expect(before.status == 1 && before.stdout.isEmpty, "\(verb): \(before.stderr)")
            #expect(before.stderr == "vault: no vault at '\(b.defaultVault)'\n" + hint, "\(verb): \(before.stderr)")
        }
        // Outside any clone: 'vault init' is what to do.
        let elsewhere = try b.run("exec \"$VAULT\" list --passphrase-file '\(box.passphraseFile)'", in: b.home)
        #expect(elsewhere.status == 1 && elsewhere.stderr == "vault: no vault at '\(b.defaultVault)'\nhint: create one with 'vault init', or pass --vault PATH\n", "\(elsewhere.stderr)")

        let setupB = try b.run("exec \"$VAULT\" git setup", in: cloneB)
        #expect(setupB.status == 0, "\(setupB.stderr)")
        #expect(setupB.stdoutText == """
            this machine's vault is now '\(cloneB)/default.vault', the one this clone holds: vault finds it there from now on (recorded in '\(b.record)')
            git merges 'default.vault' entry by entry in this clone (already in .gitattributes); every other clone runs 'vault git setup' once

            """, "\(setupB.stdoutText)")
        #expect(setupB.stderr == "vault: note: 'default.vault' was readable by others (git writes what it checks out 0644): it is 0600 now\n", "\(setupB.stderr)")
        #expect(try mode(cloneB + "/default.vault") == 0o600)
        #expect(!FileManager.default.fileExists(atPath: b.defaultVault))
        let get = try b.run("exec \"$VAULT\" get k --passphrase-file '\(box.passphraseFile)'", in: b.home)
        #expect(get.status == 0 && get.stdoutText == "v", "\(get.stderr)")
        // Setup again: nothing adopted anew, the recorded vault set up as it is.
        let again = try b.run("exec \"$VAULT\" git setup", in: cloneB)
        #expect(again.status == 0 && again.stdoutText.hasPrefix("git merges 'default.vault'") && again.stderr.isEmpty, "\(again.stdoutText) \(again.stderr)")

        // The recorded vault gone (the clone deleted): said where the record is.
        #expect(rename(cloneB, cloneB + ".moved") == 0)
        let gone = try b.run("exec \"$VAULT\" list --passphrase-file '\(box.passphraseFile)'", in: b.home)
        #expect(gone.status == 1 && gone.stderr == """
            vault: no vault at '\(cloneB)/default.vault'
            hint: 'vault git setup' recorded it as this machine's vault in '\(b.record)': clone its repository there again, or remove that file to use the default vault

            """, "\(gone.stderr)")
        #expect(rename(cloneB + ".moved", cloneB) == 0)
        // A record that is not one absolute path, or that others may read or write, is not followed: said, and
        // the default path is used.
        try "secrets/default.vault\n".write(toFile: b.record + ".new", atomically: false, encoding: .utf8)
        #expect(chmod(b.record + ".new", 0o600) == 0 && rename(b.record, b.record + ".kept") == 0 && rename(b.record + ".new", b.record) == 0)
        let relative = try b.run("exec \"$VAULT\" list --passphrase-file '\(box.passphraseFile)'", in: b.home)
        #expect(relative.status == 1 && relative.stderr.hasPrefix(
            "vault: warning: ignoring '\(b.record)' (where 'vault git setup' records this machine's vault): it does not hold one absolute path\nvault: no vault at '\(b.defaultVault)'\n"), "\(relative.stderr)")
        #expect(rename(b.record + ".kept", b.record) == 0)
        chmod(b.record, 0o666)
        let untrusted = try b.run("exec \"$VAULT\" list --passphrase-file '\(box.passphraseFile)'", in: b.home)
        #expect(untrusted.status == 1)
        #expect(untrusted.stderr == """
            vault: warning: ignoring '\(b.record)' (where 'vault git setup' records this machine's vault): it is not a private file of yours (run: chmod 600 '\(b.record)')
            vault: no vault at '\(b.defaultVault)'
            hint: create one with 'vault init', or pass --vault PATH

            """, "\(untrusted.stderr)")
    }

    @Test(.enabled(if: runs, "needs git: scripts/install-deps --test"))
    func aCloneWithSeveralVaultsIsNotGuessed() throws {
        _ = try #require(Self.gitTool, "git is needed (CI=true)")
        let box = try Sandbox()
        let base = URL(fileURLWithPath: box.directory).standardizedFileURL.path
        let machine = try Machine(base + "/home")
        let clone = base + "/clone"
        #expect(try machine.run("git init -q -b main clone", in: base).status == 0)
        for name in ["team.vault", "ops/ops.vault"] {
            try FileManager.default.createDirectory(atPath: URL(fileURLWithPath: clone + "/" + name).deletingLastPathComponent().path, withIntermediateDirectories: true)
            let made = try CLI.run(["init", "--vault", clone + "/" + name, "--passphrase-file", box.passphraseFile], environment: machine.environment)
            #expect(made.status == 0, "\(made.stderr)")
        }
        let list = try machine.run("exec \"$VAULT\" list --passphrase-file '\(box.passphraseFile)'", in: clone)
        #expect(list.status == 1 && list.stderr == """
            vault: no vault at '\(machine.defaultVault)'
            hint: this git clone holds vaults 'ops/ops.vault', 'team.vault': run 'vault git setup --vault PATH' with the one to make this machine's vault

            """, "\(list.stderr)")
        let setup = try machine.run("exec \"$VAULT\" git setup", in: clone)
        #expect(setup.status == 64 && setup.stdout.isEmpty)
        #expect(setup.stderr == "vault: this clone holds 2 vaults ('ops/ops.vault', 'team.vault'): say which with 'vault git setup --vault PATH'\n", "\(setup.stderr)")
        #expect(!FileManager.default.fileExists(atPath: machine.record) && !FileManager.default.fileExists(atPath: clone + "/.gitattributes"))

        // A machine with a vault of its own (made by 'vault init' before the clone): not moved in beside the clone's.
        #expect(try machine.run("exec \"$VAULT\" init --passphrase-file '\(box.passphraseFile)'", in: base).status == 0)
        let two = try machine.run("exec \"$VAULT\" git setup", in: clone)
        #expect(two.status == 64 && two.stdout.isEmpty)
        #expect(two.stderr == """
            vault: this clone holds 'ops/ops.vault', 'team.vault' and this machine has a vault of its own, '\(machine.defaultVault)': 'vault git setup --vault PATH' with the clone's makes that one this machine's vault (and says how to bring this machine's entries into it); --vault '\(machine.defaultVault)' moves this machine's into the clone beside it

            """, "\(two.stderr)")
        #expect(FileManager.default.fileExists(atPath: machine.defaultVault) && !FileManager.default.fileExists(atPath: clone + "/default.vault"))
        #expect(!FileManager.default.fileExists(atPath: machine.record) && !FileManager.default.fileExists(atPath: clone + "/.gitattributes"))
    }

    /// Re-walk finding 2: a second machine with a vault of its own. `vault git setup --vault` with the clone's makes
    /// that one this machine's (recorded: `vault sync` and every verb find it, inside the clone and out), and the
    /// command it prints to bring this machine's entries in works as printed, on a terminal, through the agent.
    /// `--vault` with the default path moves that vault into the clone and records it (no second setup).
    @Test(.enabled(if: runs, "needs git: scripts/install-deps --test"))
    func aMachineWithAVaultOfItsOwnTakesTheClonesAndBringsItsEntriesIn() throws {
        _ = try #require(Self.gitTool, "git is needed (CI=true)")
        let agents = try AgentBox()
        let base = URL(fileURLWithPath: agents.directory).standardizedFileURL.path
        let passphrase = agents.passphraseFile
        let a = try Machine(base + "/homeA"), b = try Machine(base + "/homeB")
        let bare = base + "/remote.git"
        #expect(try a.run("git init -q --bare -b main '\(bare)' && git init -q -b main secrets && git -C secrets remote add origin '\(bare)'", in: base).status == 0)
        // The first machine: --vault with the default path moves it into the clone and records it.
        #expect(try a.run("\"$VAULT\" init --passphrase-file '\(passphrase)' && printf v | \"$VAULT\" put k --passphrase-file '\(passphrase)'", in: base).status == 0)
        let setupA = try a.run("exec \"$VAULT\" git setup --vault '\(a.defaultVault)'", in: base + "/secrets")
        #expect(setupA.status == 0, "\(setupA.stderr)")
        #expect(setupA.stdoutText.hasPrefix("moved the vault to '\(base)/secrets/default.vault' ('vault sync' commits it); vault finds it there from now on (recorded in '\(a.record)')\n"), "\(setupA.stdoutText)")
        #expect(try String(contentsOfFile: a.record, encoding: .utf8) == base + "/secrets/default.vault\n")
        let syncA = try a.run("exec \"$VAULT\" sync --passphrase-file '\(passphrase)'", in: base)
        #expect(syncA.status == 0 && syncA.stdoutText.contains("pushed to origin/main"), "\(syncA.stdoutText) \(syncA.stderr)")

        // The second machine has a vault of its own, then clones.
        #expect(try b.run("\"$VAULT\" init --passphrase-file '\(passphrase)' && printf mine | \"$VAULT\" put mine --passphrase-file '\(passphrase)'", in: base).status == 0)
        #expect(try b.run("git clone -q '\(bare)' secrets", in: b.home).status == 0)
        let clone = b.home + "/secrets"
        let refused = try b.run("exec \"$VAULT\" git setup", in: clone)
        #expect(refused.status == 64 && refused.stderr.contains("'vault git setup --vault PATH' with the clone's makes that one this machine's vault"), "\(refused.stderr)")
        let setup = try b.run("exec \"$VAULT\" git setup --vault '\(clone)/default.vault'", in: clone)
        #expect(setup.status == 0, "\(setup.stderr)")
        let bringIn = "vault unlock && vault export --vault '\(b.defaultVault)' --format json --yes | vault import json /dev/stdin"
        #expect(setup.stdoutText == """
            this machine's vault is now '\(clone)/default.vault', the one this clone holds: vault finds it there from now on (recorded in '\(b.record)')
            this machine's vault of before stays at '\(b.defaultVault)'; to bring its entries into this one: \(bringIn)
            git merges 'default.vault' entry by entry in this clone (already in .gitattributes); every other clone runs 'vault git setup' once

            """, "\(setup.stdoutText)")
        #expect(try String(contentsOfFile: b.record, encoding: .utf8) == clone + "/default.vault\n")
        for directory in [clone, b.home] {
            let sync = try b.run("exec \"$VAULT\" sync --passphrase-file '\(passphrase)'", in: directory)
            #expect(sync.status == 0 && sync.stdoutText == "'default.vault' and origin/main are the same\n", "\(sync.stdoutText) \(sync.stderr)")
        }

        // The command as printed, typed on a terminal: one passphrase for the unlock, one for the export.
        var environment = b.environment
        environment["PATH"] = URL(fileURLWithPath: CLI.vault).deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        environment["VAULT_AGENT_SOCK"] = agents.socketPath
        environment["XDG_RUNTIME_DIR"] = base + "/runtime"
        environment["VAULT_AGENT"] = "off"
        let typed = try PseudoTerminal.run("/bin/sh", ["-c", "cd '\(clone)' && " + bringIn], steps: [
            (marker: "Vault passphrase for ~/secrets/default.vault: ", keys: agents.passphrase + "\n"),
            (marker: "Vault passphrase for ~/.local/share/vault/default.vault: ", keys: agents.passphrase + "\n"),
        ], environment: environment)
        #expect(typed.status == 0, "\(typed.stdoutText)")
        #expect(typed.stdoutText.contains("imported '/dev/stdin' into '\(clone)/default.vault': 1 added, 0 updated, 0 unchanged, 0 kept, 0 skipped\n  added: mine\n"), "\(typed.stdoutText)")
        let list = try b.run("exec \"$VAULT\" list --passphrase-file '\(passphrase)'", in: base)
        #expect(list.status == 0 && list.stdoutText == "k\nmine\n", "\(list.stderr)")
        let synced = try b.run("exec \"$VAULT\" sync --passphrase-file '\(passphrase)'", in: clone)
        #expect(synced.status == 0 && synced.stdoutText.hasSuffix("pushed to origin/main\n"), "\(synced.stdoutText) \(synced.stderr)")
        agents.stopAgents()
    }

    /// Finding 3: a vault git checked out 0644, refused before setup: the hint is the command that fixes it for good.
    @Test(.enabled(if: runs, "needs git: scripts/install-deps --test"))
    func aVaultGitLeftReadableSaysGitSetupNotChmod() throws {
        _ = try #require(Self.gitTool, "git is needed (CI=true)")
        let box = try Sandbox()
        try box.initVault()
        let base = URL(fileURLWithPath: box.directory).standardizedFileURL.path
        let repository = base + "/repo"
        let machine = try Machine(base + "/home")
        #expect(try machine.run("git init -q -b main repo", in: base).status == 0)
        let vault = repository + "/team.vault"
        #expect(rename(box.vaultPath, vault) == 0 && chmod(vault, 0o644) == 0)
        var environment = machine.environment
        environment["VAULT_PATH"] = vault
        // Not git's (untracked: a directory that merely lies in a work tree, a home kept in git): chmod.
        let untracked = try CLI.run(["list", "--passphrase-file", box.passphraseFile], environment: environment)
        #expect(untracked.status == 4 && untracked.stderr.hasSuffix("hint: run: chmod 600 '\(vault)'\n"), "\(untracked.stderr)")
        // As git checks it out.
        #expect(try machine.run("git add team.vault && git commit -q -m vault", in: repository).status == 0)
        let refused = try CLI.run(["list", "--passphrase-file", box.passphraseFile], environment: environment)
        #expect(refused.status == 4 && refused.stdout.isEmpty)
        #expect(refused.stderr == """
            vault: refusing to use '\(vault)': the vault is accessible by group or others (mode 0644)
            hint: it is in the git clone '\(repository)', and git writes what it checks out 0644: run: vault git setup --vault '\(vault)' (it makes the vault 0600 and keeps it so)

            """, "\(refused.stderr)")
        // Re-walk finding 6: on a terminal, refused before any passphrase is asked, by unlock and every verb (the
        // driver types nothing: a prompt would wait until it gives up, exit 124).
        var onTerminal = environment
        onTerminal["VAULT_AGENT_SOCK"] = base + "/agent/agent.sock"
        onTerminal["VAULT_AGENT"] = "off"
        let other = base + "/other.vault"
        try FileManager.default.copyItem(atPath: vault, toPath: other)
        for verb in [["unlock"], ["unlock", "--force"], ["list"], ["get", "k"], ["put", "k"], ["mv", "k", "k2"], ["history", "k"], ["passwd"],
                     ["export", "--format", "json", "--yes"], ["recipients", "list"], ["merge", other], ["otp", "k"]] {
            let asked = try PseudoTerminal.run(CLI.vault, verb, playing: [], environment: onTerminal, seconds: 20)
            #expect(asked.status == 4, "\(verb): \(asked.stdoutText) \(asked.stderr)")
            #expect(asked.stdoutText == """
                vault: refusing to use '\(vault)': the vault is accessible by group or others (mode 0644)
                hint: it is in the git clone '\(repository)', and git writes what it checks out 0644: run: vault git setup --vault '\(vault)' (it makes the vault 0600 and keeps it so)
                [echo on]

                """, "\(verb)")
        }
        // That command fixes it.
        let setup = try CLI.shell("cd '\(repository)' && exec \"$VAULT\" git setup --vault '\(vault)'", environment: environment)
        #expect(try setup.status == 0 && mode(vault) == 0o600, "\(setup.stderr)")
        #expect(try CLI.run(["list", "--passphrase-file", box.passphraseFile], environment: environment).status == 0)

        // Anywhere else: chmod is the fix.
        let outside = base + "/plain.vault"
        #expect(rename(vault, outside) == 0 && chmod(outside, 0o644) == 0)
        environment["VAULT_PATH"] = outside
        let plain = try CLI.run(["list", "--passphrase-file", box.passphraseFile], environment: environment)
        #expect(plain.status == 4 && plain.stderr == """
            vault: refusing to use '\(outside)': the vault is accessible by group or others (mode 0644)
            hint: run: chmod 600 '\(outside)'

            """, "\(plain.stderr)")
    }

    /// Finding 5: setup moving a vault the agent holds: the agent forgets it at its old path (it would list a path
    /// that no longer holds the vault), and setup says to unlock it again.
    @Test(.enabled(if: runs, "needs git: scripts/install-deps --test"))
    func setupMovingAVaultTheAgentHoldsLocksItThere() throws {
        _ = try #require(Self.gitTool, "git is needed (CI=true)")
        let box = try AgentBox()
        try box.initVault()
        try box.unlock()
        #expect(try box.status()?.vaults.map(\.path) == [box.vaultPath])
        let repository = box.directory + "/repo"
        #expect(try CLI.exec("/bin/sh", ["-c", "git init -q -b main '\(repository)'"]).status == 0)
        let moved = try AgentCLI.exec("/bin/sh", ["-c", "cd '\(repository)' && exec '\(CLI.vault)' git setup"], environment: box.environment)
        let target = repository + "/test.vault"
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.stdoutText.hasPrefix("""
            moved the vault to '\(target)' ('vault sync' commits it); from now on give --vault '\(target)' or set VAULT_PATH to it
            the agent held it unlocked at its old path: it is locked now; unlock it again: vault unlock --vault '\(target)'
            git merges 'test.vault' entry by entry in this clone
            """), "\(moved.stdoutText)")
        #expect(try box.status()?.vaults.map(\.path) == [])
        let unlocked = try box.vault(["unlock", "--vault", target], source: true)
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        #expect(try box.status()?.vaults.map(\.path) == [target])
        let read = try box.vault(["list", "--vault", target])
        #expect(read.status == 0 && read.stdoutText.isEmpty, "\(read.stderr)")
    }
}
