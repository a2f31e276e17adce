import ArgumentParser
import FoundationEssentials
import Glibc
import VaultAgent
import VaultCore
import VaultSyncCore
import VaultTerminal

/// `vault git setup` and `vault git merge-driver`: a vault kept in a git repository merges entry by entry when
/// two branches changed it, instead of leaving a binary conflict (issue 19 §3).
package struct GitCommand: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "git",
        abstract: "Keep the vault in a git repository: a merge driver that merges it entry by entry.",
        subcommands: [Setup.self, MergeDriver.self, TextConv.self])

    package struct Setup: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            commandName: "setup",
            abstract: "Make git merge this vault with 'vault git merge-driver' (run once in every clone).",
            discussion: """
                Writes '<vault> merge=vault diff=vault' to the repository's .gitattributes and the vault's lock and temporary files to .gitignore ('vault sync' commits both with the vault), and sets merge.vault.name, merge.vault.driver and diff.vault.textconv in this clone's config ('git diff' and 'git log -p' then show names, ids, times and field names, never a value). In this clone only, it pins the vault's attributes in .git/info/attributes (git then converts no byte of it, whatever a committed .gitattributes says) and installs the hooks post-checkout, post-merge, post-rewrite and reference-transaction, which make the vault 0600 again after git wrote it (a hook already there is kept as NAME.before-vault and run by vault's), and sets core.trustctime false (the hooks' chmod changes the file's ctime, which git would take for a change). A repository cannot configure a driver for its clones (git's own trust boundary): every clone runs 'vault git setup' once. Idempotent.

                A vault outside any repository (--vault PATH, e.g. the default one), with the command run inside a clone, is first moved to the top of that clone under its own file name (a rename on one file system; another file system, a name taken or a vault in use is refused with the command that does it), and said so. This machine's own vault (neither --vault nor VAULT_PATH) has its new path recorded in $XDG_CONFIG_HOME/vault/default-vault (else ~/.config/vault/), where every verb finds it; another one: use --vault or VAULT_PATH with its new path afterwards. A vault the agent held unlocked is locked at its old path ('vault unlock' again).

                On a machine with no vault yet, run in a fresh clone ('git clone URL secrets; cd secrets; vault git setup'), it adopts the vault the clone holds (its one *.vault file; of several, those .gitattributes merges as vaults, else it asks which with --vault) as this machine's vault, recorded the same way, and makes it 0600. On a machine with a vault of its own (and no vault recorded yet), --vault with one the clone holds makes that one this machine's, recorded the same way; the old one stays where it is, and setup prints the command that brings its entries in. The driver takes the vault's key from the agent ('vault unlock' first); it never asks for anything.
                """)

        @OptionGroup var options: VaultOptions

        package func run() throws {
            try reportingErrors(json: options.json) {
                let resolved = options.resolvedPath
                var vault = URL(fileURLWithPath: resolved).standardizedFileURL.path
                let here = FileManager.default.currentDirectoryPath
                // This machine's own vault (neither --vault nor VAULT_PATH, or --vault naming the path a verb without
                // it finds: the record, else the default): its new place is recorded.
                let noEnvironment = (Posix.environment("VAULT_PATH") ?? "").isEmpty
                let implicit = options.vaultPath == nil && noEnvironment
                let own = URL(fileURLWithPath: VaultOptions.resolvedPath(nil)).standardizedFileURL.path
                let machines = implicit || (noEnvironment && vault == own)
                var adopted = false
                // This machine's vault of before, when --vault names one a clone holds and adopts it (not moved).
                var before: String?
                var info = stat()
                if implicit, let clone = GitVaultFile.cloneVaults(from: here), !clone.vaults.isEmpty,
                   !URL(fileURLWithPath: vault).resolvingSymlinksInPath().path.hasPrefix(clone.top + "/") {
                    guard lstat(vault, &info) != 0 else {
                        // Two vaults: this machine's and the clone's. Which one to keep in the clone is the user's call.
                        throw CLIError.message(
                            "this clone holds \(GitVaultFile.listed(clone.vaults)) and this machine has a vault of its own, '\(TerminalText.escaped(vault))': "
                                + "'vault git setup --vault PATH' with the clone's makes that one this machine's vault (and says how to bring this machine's entries into it); "
                                + "--vault '\(TerminalText.escaped(vault))' moves this machine's into the clone beside it",
                            exitCode: Exit.usage)
                    }
                    // A fresh clone on a machine with no vault yet: the clone's vault becomes this machine's.
                    guard clone.vaults.count == 1 else {
                        throw CLIError.message(
                            "this clone holds \(clone.vaults.count) vaults (\(GitVaultFile.listed(clone.vaults))): say which with 'vault git setup --vault PATH'",
                            exitCode: Exit.usage)
                    }
                    vault = clone.top + "/" + clone.vaults[0]
                    adopted = true
                } else if options.vaultPath != nil, noEnvironment, vault != own, VaultPointer.read() == nil,
                          let clone = GitVaultFile.cloneVaults(from: URL(fileURLWithPath: vault).deletingLastPathComponent().path),
                          clone.vaults.contains(where: { clone.top + "/" + $0 == vault }),
                          lstat(own, &info) == 0 || clone.vaults.count > 1 {
                    // --vault with a vault the clone holds, as the refusals above say: on a machine that has a vault
                    // of its own at the default path, or where the clone holds several, that one becomes this
                    // machine's (the one of before stays where it is; said how to bring its entries in).
                    adopted = true
                    if lstat(own, &info) == 0 { before = own }
                }
                let directory = URL(fileURLWithPath: vault).deletingLastPathComponent().path
                var top = (try? Git(directory: directory).output(["rev-parse", "--show-toplevel"]))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
                var moved: String?
                var lockedInAgent = false
                if top.isEmpty || !vault.hasPrefix(top + "/") {
                    // A vault outside any repository, run from inside one: moved into it. The agent forgets it at
                    // its old path first (it would go on listing, and writing, a path that no longer holds it).
                    (top, moved) = try VaultMove.intoRepository(vault, from: here) {
                        lockedInAgent = GitCommand.lockInAgent([resolved, vault])
                    }
                    vault = top + "/" + moved!
                }
                let relative = String(vault.dropFirst(top.count + 1))
                // Patterns are matched literally: spaces and glob characters are escaped.
                let pattern = GitVaultFile.literal(relative)
                let line = "/\(pattern) merge=vault diff=vault"
                let attributes = top + "/.gitattributes"
                let added = try !GitVaultFile.append([line], to: attributes).isEmpty
                // The lock file and a writer's temporary files are this machine's, never the repository's.
                let directoryPart = relative.lastIndex(of: "/").map { relative[...$0] } ?? ""
                let fileName = relative.split(separator: "/").last!
                let ignored = ["/\(pattern).lock", "/\(GitVaultFile.literal(directoryPart)).\(GitVaultFile.literal(fileName)).*.tmp"]
                let missing = try GitVaultFile.append(ignored, to: top + "/.gitignore")
                let driver = "'\(AgentCommand.executable.replacing("'", with: "'\\''"))' git merge-driver %O %A %B %P"
                let repository = Git(directory: top)
                try repository.check(["config", "merge.vault.name", "vault: entry by entry"])
                try repository.check(["config", "merge.vault.driver", driver])
                let textconv = "'\(AgentCommand.executable.replacing("'", with: "'\\''"))' git textconv"
                try repository.check(["config", "diff.vault.textconv", textconv])
                // Bytes as they are, whatever a committed .gitattributes says (this clone's own file, read first).
                _ = try GitVaultFile.pin(repository, top: top, relative: relative)
                // 0600 after git's own checkouts, merges and rebases (git writes files 0644), and now (a fresh clone).
                let hooks = try GitVaultFile.installHooks(repository, top: top, relative: relative)
                let shown = TerminalText.escaped(relative)
                if hooks == nil {
                    writeToStderr("vault: note: core.hooksPath is set, so no hook is installed: git leaves '\(shown)' 0644 when it checks it out ('vault sync' makes it 0600 again)\n")
                } else {
                    // A hook's chmod changes the file's ctime in the middle of a rebase or merge; git would then
                    // take the vault for changed by hand ("your local changes would be overwritten") and stop.
                    try repository.check(["config", "core.trustctime", "false"])
                }
                GitVaultFile.makePrivate(vault, shown: shown)
                let recorded = adopted || (machines && moved != nil)
                if recorded { try VaultPointer.write(vault) }
                if options.json {
                    var object: [String: Any] = ["repository": top, "attributes": attributes, "line": line, "added": added, "driver": driver, "ignored": missing, "hooks": hooks ?? []]
                    if moved != nil { object["moved_to"] = vault }
                    if adopted { object["adopted"] = vault }
                    if let before { object["previous_vault"] = before }
                    if recorded { object["recorded_in"] = VaultPointer.path }
                    if moved != nil { object["locked_in_agent"] = lockedInAgent }
                    try writeJSON(object)
                } else {
                    let newPath = TerminalText.escaped(vault)
                    let found = "vault finds it there from now on (recorded in '\(TerminalText.escaped(VaultPointer.path))')"
                    if adopted {
                        try writeToStdout("this machine's vault is now '\(newPath)', the one this clone holds: \(found)\n")
                        if let before {
                            // Another vault (its own id): 'vault merge' refuses it; its entries go over as vault's JSON,
                            // through a pipe (never a file), into this one held by the agent (one passphrase asked).
                            let old = TerminalText.escaped(before).replacing("'", with: "'\\''")
                            try writeToStdout("this machine's vault of before stays at '\(TerminalText.escaped(before))'; to bring its entries into this one: "
                                + "vault unlock && vault export --vault '\(old)' --format json --yes | vault import json /dev/stdin\n")
                        }
                    } else if moved != nil {
                        try writeToStdout("moved the vault to '\(newPath)' ('vault sync' commits it); "
                            + (recorded ? found : "from now on give --vault '\(newPath)' or set VAULT_PATH to it") + "\n")
                    }
                    if lockedInAgent {
                        try writeToStdout("the agent held it unlocked at its old path: it is locked now; unlock it again: vault unlock" + (recorded ? "" : " --vault '\(newPath)'") + "\n")
                    }
                    try writeToStdout(
                        "git merges '\(relative)' entry by entry in this clone (\(added ? "added to" : "already in") .gitattributes"
                            + (missing.isEmpty ? "" : ", its lock file to .gitignore") + (added || !missing.isEmpty ? "; 'vault sync' commits them" : "")
                            + "); every other clone runs 'vault git setup' once\n")
                }
            }
        }
    }

    /// The agent's key of the vault at `paths` (one file, named as it was unlocked), forgotten; whether the agent
    /// held it. No agent, nothing to do.
    static func lockInAgent(_ paths: [String]) -> Bool {
        guard let client = try? AgentClient.connect() else { return false }
        return Set(paths).map { (try? client.lock(path: $0)) ?? false }.contains(true)
    }
}

extension GitCommand {
    /// git's merge driver (`%O %A %B %P`): merges B into A with the key of the vault unlocked in the agent whose
    /// vault id they carry, writes the result into A and exits 0. Never asks: locked or no agent, A is untouched,
    /// one line says what to do, and the exit is 1 (git records a conflict); an internal failure exits 130.
    package struct MergeDriver: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            commandName: "merge-driver",
            abstract: "git's merge driver for a vault (set by 'vault git setup'): merges B into A through the agent.")

        @Argument(help: "The common ancestor's file (%O; not needed: the merge is by clocks).") var base: String
        @Argument(help: "Ours (%A): the merged vault is written here.") var ours: String
        @Argument(help: "Theirs (%B).") var theirs: String
        @Argument(help: "The path in the repository (%P), for messages.") var pathname: String = ""

        /// The branch merged, as git tells a driver (its placeholders %O %A %B %L %P name files, a size and the path;
        /// git 2.39 has no %X/%Y): `git merge` sets `GITHEAD_<commit>` to the name it was given, `git pull` to the commit
        /// itself (then the upstream's name when the upstream is that commit, else the commit's start); a rebase, which
        /// replays this branch's own commits, sets none: "theirs".
        static func theirsName(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
            let heads = environment.filter { $0.key.hasPrefix("GITHEAD_") }
            guard heads.count == 1, let (key, name) = heads.first, !name.isEmpty else { return "theirs" }
            let commit = String(key.dropFirst("GITHEAD_".count))
            guard name == commit else { return name }
            let git = Git(directory: FileManager.default.currentDirectoryPath)
            func output(_ arguments: [String]) -> String? {
                (try? git.output(arguments))?.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            if output(["rev-parse", "-q", "--verify", "@{upstream}"]) == commit, let upstream = output(["rev-parse", "--abbrev-ref", "@{upstream}"]),
               !upstream.isEmpty {
                return upstream
            }
            return "commit " + commit.prefix(12)
        }

        /// git takes any exit above 128 for a driver that failed, not a conflict.
        static let internalFailure: Int32 = 130

        /// Why the two files do not merge with the key held (`reason`: the key links from it to the other file's key),
        /// worded as 'vault sync' words it: a recipient's removal rotates the key and leaves the passphrase as it was.
        /// With no such links, the files' own: one from before a key change the other has (made in this clone: the
        /// key held is the newer), which 'vault sync' merges into the new key while that change is not pushed.
        /// `rebasing`: git names the sides the other way round (ours is the upstream's file, theirs this clone's).
        static func otherKeyMessage(_ reason: KeyChangeReason?, ours: String, theirs: String, rebasing: Bool) -> String {
            let abort = "abort this merge or rebase (git merge --abort, git rebase --abort) and run 'vault sync'"
            // Read, not verified (the agent verifies the links of what it merges); only the headers, no KDF runs.
            if reason == nil,
               let a = try? DocumentHeader.parse(Merge.read(ours), label: ours, policy: .insecureForTesting),
               let b = try? DocumentHeader.parse(Merge.read(theirs), label: theirs, policy: .insecureForTesting),
               let (older, newer, change) = a.keyChange(from: b.dataKeyID).map({ ("theirs", "ours", $0) })
                   ?? b.keyChange(from: a.dataKeyID).map({ ("ours", "theirs", $0) }) {
                let why = switch change {
                case .recipientRemoval: "a recipient was removed, which rotates the key"
                case .passphraseChange: "the passphrase was changed"
                case .other: "the key was changed"
                }
                let sides = rebasing ? " (in a rebase, git's ours is the upstream's file and theirs this clone's)" : ""
                return "\(older) is from before a key change \(newer) has (\(why))\(sides); \(abort), which, while this clone's key change is not pushed, merges the older copy into the new key"
            }
            let why = switch reason {
            case .recipientRemoval: "another key (a recipient was removed on another machine, which rotates the key; the passphrase may be the same)"
            case .passphraseChange: "another passphrase (changed on another machine)"
            case .other, nil: "another key (changed on another machine)"
            }
            return "one side has \(why); \(abort), which asks for the passphrase as that copy has it"
        }

        package func run() throws {
            let shown = TerminalText.escaped(pathname.isEmpty ? ours : pathname)
            do {
                let a = try Merge.read(ours), b = try Merge.read(theirs)
                guard let client = try AgentClient.connect(),
                      // Errors name the sides by the file's path in the repository, not git's temporary files.
                      let (merged, report) = try client.mergeFiles(ours: a, theirs: b, labels: (shown + " (ours)", shown + " (theirs)"))
                else {
                    writeToStderr("vault: cannot merge '\(shown)': its vault is not unlocked in the agent; run 'vault unlock', then 'git checkout -m -- \(shown)' (merges it again), 'git add' it and 'git merge --continue'\n")
                    throw ExitCode(1)
                }
                try GitVaultFile.replace(ours, with: merged)
                let summary = Merge.describe(report, other: Self.theirsName(), into: pathname.isEmpty ? ours : pathname, dryRun: false)
                writeToStderr("vault: " + summary.split(separator: "\n").first.map(String.init)! + "\n" + Merge.conflictLines(report) + Merge.renameLines(report))
            } catch let exit as ExitCode {
                throw exit
            } catch VaultError.otherKey(_, let reason) {
                let rebasing = !ProcessInfo.processInfo.environment.keys.contains { $0.hasPrefix("GITHEAD_") }
                writeToStderr("vault: cannot merge '\(shown)': \(Self.otherKeyMessage(reason, ours: ours, theirs: theirs, rebasing: rebasing))\n")
                throw ExitCode(1)
            } catch VaultError.massDeletion(_, let names) {
                // The driver cannot ask: git's file stays as it is (a conflict), and sync asks.
                writeToStderr("vault: cannot merge '\(shown)': theirs deletes \(names.count) entries (\(names.prefix(5).map { "'\(TerminalText.escaped($0))'" }.joined(separator: ", "))\(names.count > 5 ? ", ..." : "")); abort this merge or rebase (git merge --abort, git rebase --abort) and run 'vault sync', which asks (or --accept-deletions)\n")
                throw ExitCode(1)
            } catch let error as VaultError {
                writeToStderr("vault: cannot merge '\(shown)': \(error)\n")
                // Another vault, a version-1 file, a file that does not open: a conflict for git to show.
                throw ExitCode(1)
            } catch {
                writeToStderr("vault: cannot merge '\(shown)': \(error)\n")
                throw ExitCode(Self.internalFailure)
            }
        }
    }

    /// git's textconv for a vault (`diff.vault.textconv`): what the file holds, as text for `git diff`, never a
    /// value; locked or no agent, one line saying so (git then shows that line as the file's text).
    package struct TextConv: ParsableCommand {
        package init() {}

        package static let configuration = CommandConfiguration(
            commandName: "textconv",
            abstract: "git's textconv for a vault (set by 'vault git setup'): names, ids, times and field names, never a value.")

        @Argument(help: "The file git hands over.") var file: String

        package func run() throws {
            do {
                let bytes = try Merge.read(file)
                guard let client = try AgentClient.connect(), let lines = try client.describeFile(bytes, label: file) else {
                    try writeToStdout("(vault locked: 'vault unlock' shows its entries here)\n")
                    return
                }
                try writeToStdout(lines.map { TerminalText.escaped($0) + "\n" }.joined())
            } catch {
                try writeToStdout("(vault: cannot show this file: \(TerminalText.escaped(String(describing: error))))\n")
            }
        }
    }
}
