import CVaultSystem
import FoundationEssentials
import Glibc
import VaultCore
import VaultTerminal

/// `vault sync` for a vault kept in a git work tree (issue 19 §3): commit the vault if it changed, bring in what the
/// upstream branch has (the vault merged entry by entry here, then git's merge of everything else), push, and try
/// again when another clone pushed first.
///
/// The vault is merged in this process, with the key it was opened with (the agent or the passphrase), before git
/// merges: the commit git then merges already holds both sides, so git is told to keep ours for the vault
/// (`-c merge.vault.driver=true`) and never needs the agent. When this clone has nothing git does not have, the
/// branch is fast-forwarded instead (no merge commit for a sync with nothing to merge).
package struct GitRepositorySync {
    package let options: VaultOptions
    package let dryRun: Bool
    package let otherPassphrase: OtherCopyPassphrase
    package let deletions: DeletionConsent

    package init(options: VaultOptions, dryRun: Bool, otherPassphrase: SecretSourceOptions<OtherPassphraseSecret>, acceptDeletions: Bool = false) {
        self.options = options
        self.dryRun = dryRun
        self.otherPassphrase = OtherCopyPassphrase(otherPassphrase)
        self.deletions = DeletionConsent(accepted: acceptDeletions)
    }

    /// How many times a push rejected because the upstream moved is retried (fetch, merge, push again).
    package static let attempts = 5

    /// What one sync did.
    package struct Outcome {
        package var repository = ""
        package var relativePath = ""
        package var upstream = ""
        package var merge = MergeReport()
        package var committed = false
        package var fastForwarded = false
        package var mergedCommit = false
        package var pushed = false
        package var attempts = 1
    }

    package func run() throws -> Outcome {
        // git names the work tree by its physical path: the vault's directory with its links resolved too.
        let given = URL(fileURLWithPath: options.resolvedPath).standardizedFileURL
        let directory = given.deletingLastPathComponent().resolvingSymlinksInPath().path
        let vaultPath = (directory == "/" ? "" : directory) + "/" + given.lastPathComponent
        guard FileManager.default.fileExists(atPath: vaultPath) else { throw VaultError.vaultNotFound(path: vaultPath) }
        let probe = Git(directory: directory)
        let topResult = try probe.run(["rev-parse", "--show-toplevel"])
        guard topResult.status == 0 else {
            throw CLIError.message(
                "'\(TerminalText.escaped(vaultPath))' is not in a git work tree; name a remote (s3://BUCKET/KEY or bao://HOST/MOUNT/PATH), or keep the vault in a git repository",
                exitCode: Exit.usage)
        }
        let top = URL(fileURLWithPath: topResult.text.trimmingCharacters(in: .newlines)).standardizedFileURL.path
        guard vaultPath.hasPrefix(top + "/") else {
            throw CLIError.message("'\(TerminalText.escaped(vaultPath))' is not inside the work tree '\(TerminalText.escaped(top))'", exitCode: Exit.usage)
        }
        let git = Git(directory: top)
        var outcome = Outcome()
        outcome.repository = top
        let relative = String(vaultPath.dropFirst(top.count + 1))
        outcome.relativePath = relative
        let shown = TerminalText.escaped(relative)

        // The merge attribute: without it, git would leave a binary conflict in every other clone's pull.
        let attribute = try git.output(["check-attr", "merge", "--", relative])
        guard attribute.trimmingCharacters(in: .newlines).hasSuffix(": merge: vault") else {
            throw CLIError.message(
                "git does not merge '\(shown)' with vault: run 'vault git setup' (once in every clone) and commit .gitattributes",
                exitCode: Exit.usage)
        }
        // Its bytes as they are, whatever a committed .gitattributes says (a clone set up before the pin).
        if try GitVaultFile.pin(git, top: top, relative: relative) {
            writeToStderr("vault: note: git now converts no byte of '\(shown)' in this clone (its attributes pinned in .git/info/attributes)\n")
        }
        // git writes the files it checks out 0644 (a fresh clone's vault too): this user's own file is made 0600.
        GitVaultFile.makePrivate(vaultPath, shown: shown)
        guard try git.run(["rev-parse", "-q", "--verify", "MERGE_HEAD"]).status != 0 else {
            throw CLIError.message("a git merge is in progress in '\(TerminalText.escaped(top))': finish it (git merge --continue) or abort it first", exitCode: Exit.busy)
        }
        for (state, what) in [("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")]
        where try git.run(["rev-parse", "-q", "--verify", state]).status == 0 {
            throw CLIError.message("a git \(what) is in progress in '\(TerminalText.escaped(top))': finish it or abort it first", exitCode: Exit.busy)
        }
        for state in ["rebase-merge", "rebase-apply"] {
            let path = try git.output(["rev-parse", "--git-path", state]).trimmingCharacters(in: .newlines)
            if FileManager.default.fileExists(atPath: path.hasPrefix("/") ? path : top + "/" + path) {
                throw CLIError.message("a git rebase is in progress in '\(TerminalText.escaped(top))': finish it (git rebase --continue) or abort it first", exitCode: Exit.busy)
            }
        }
        let branch = try git.output(["rev-parse", "--abbrev-ref", "HEAD"]).trimmingCharacters(in: .newlines)
        guard branch != "HEAD" else {
            throw CLIError.message("HEAD is detached in '\(TerminalText.escaped(top))': check out a branch to sync", exitCode: Exit.usage)
        }
        let upstreamResult = try git.run(["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"])
        let upstream = upstreamResult.status == 0 ? upstreamResult.text.trimmingCharacters(in: .newlines) : nil

        // The vault opens (key, MACs, rollback record) before anything of it is committed or merged.
        let vault = try openVault(options)
        defer { vault.close() }
        let entries = try vault.requiringFields()
        _ = try entries.keys()

        // 1. This clone's changes to the vault, committed (only the vault: other staged work stays staged).
        let status = try git.output(["status", "--porcelain", "--", relative])
        if !status.isEmpty, !dryRun {
            try GitVaultFile.checkStoredAsIs(git, relative: relative)
            try git.check(["add", "--", relative])
            try git.check(["commit", "-q", "-m", "vault: sync '\(relative)'", "--only", "--", relative])
            outcome.committed = true
        }
        guard let upstream else {
            throw CLIError.message(
                "branch '\(TerminalText.escaped(branch))' has no upstream: \(outcome.committed ? "the vault is committed; " : "")set one with 'git push -u REMOTE \(TerminalText.escaped(branch))'",
                exitCode: Exit.failure)
        }
        outcome.upstream = upstream

        for attempt in 1...Self.attempts {
            outcome.attempts = attempt
            try git.check(["fetch", "-q"])
            let theirs = try git.output(["rev-parse", "--verify", "@{upstream}^{commit}"]).trimmingCharacters(in: .newlines)
            let head = try git.output(["rev-parse", "--verify", "HEAD^{commit}"]).trimmingCharacters(in: .newlines)
            let upToDate = try git.run(["merge-base", "--is-ancestor", theirs, head]).status == 0
            if !upToDate {
                let label = "\(upstream):\(relative)"
                let theirBlob = try git.run(["rev-parse", "-q", "--verify", "\(theirs):\(relative)"])
                let ourBlob = try git.run(["rev-parse", "-q", "--verify", "\(head):\(relative)"])
                let theirBytes = theirBlob.status == 0 ? try git.blob(theirBlob.text.trimmingCharacters(in: .newlines)) : nil
                // A fast-forward puts the upstream's file in place as it is: only when it holds everything this
                // vault holds, under the same key, at a generation not below ours (else the rollback record would
                // refuse it); what it brings is said from a dry run.
                var fastForward = false
                if try git.run(["merge-base", "--is-ancestor", head, theirs]).status == 0, let theirBytes {
                    if theirBlob.text == ourBlob.text {
                        fastForward = true
                    } else if let report = try? entries.merge(theirBytes, label: label, dryRun: true, otherPassphrase: nil), !report.otherLacks,
                              // Many deletions at once are merged (and asked about), never fast-forwarded in silence.
                              deletions.accepted || !report.isMassDeletion(outOf: (try? entries.keys().count) ?? 0),
                              let ours = try? DocumentHeader.parse(Merge.read(vaultPath), label: vaultPath, policy: .insecureForTesting),
                              let other = try? DocumentHeader.parse(theirBytes, label: label, policy: .insecureForTesting),
                              other.generation >= ours.generation {
                        fastForward = true
                        outcome.merge.accumulate(report)
                    }
                }
                if !fastForward, let theirBytes, theirBlob.text != ourBlob.text {
                    // Merged here, with the key this vault opened with (a copy with another passphrase asks for it).
                    outcome.merge.accumulate(try otherPassphrase.merging(label: label) { passphrase in
                        try deletions.merging(label: label) {
                            try entries.merge(theirBytes, label: label, dryRun: dryRun, otherPassphrase: passphrase, acceptDeletions: $0)
                        }
                    })
                } else if !fastForward, theirBytes == nil {
                    writeToStderr("vault: warning: \(TerminalText.escaped(upstream)) has no '\(TerminalText.escaped(relative))' (deleted there?): this clone's vault is kept\n")
                }
                if dryRun { return outcome }
                // git replaces the vault's file outside the vault's own writes: under the vault's lock, so that a
                // writer that loaded the file before (the agent, a put) meets a changed file and loads it again.
                try LocalFileStorage(path: vaultPath).exclusively { _ in
                    if fastForward {
                        try git.check(["merge", "-q", "--ff-only", theirs])
                        outcome.fastForwarded = true
                    } else {
                        if try !git.output(["status", "--porcelain", "--", relative]).isEmpty {
                            try GitVaultFile.checkStoredAsIs(git, relative: relative)
                            try git.check(["commit", "-q", "-m", "vault: merge '\(relative)' from \(upstream)", "--only", "--", relative])
                            outcome.committed = true
                        }
                        // The vault in HEAD holds both sides. git would take the upstream's file whenever ours equals the
                        // merge base (a driver runs only when both sides changed), or delete it: the merge is made without
                        // committing, the vault put back from HEAD, then committed.
                        let merged = try git.run(["-c", "merge.vault.driver=true", "merge", "-q", "--no-ff", "--no-commit", theirs])
                        let detail = [merged.text.trimmingCharacters(in: .whitespacesAndNewlines), merged.errorText].filter { !$0.isEmpty }.joined(separator: "; ")
                        guard try git.run(["rev-parse", "-q", "--verify", "MERGE_HEAD"]).status == 0 else {
                            // The merge did not start (local changes or untracked files in its way): nothing changed.
                            throw CLIError.message(
                                "git could not merge \(upstream) (the vault is merged and committed): \(TerminalText.escaped(detail)); run 'vault sync' again once that is settled",
                                exitCode: Exit.failure)
                        }
                        let unmerged = try git.output(["diff", "--name-only", "--diff-filter=U"]).split(separator: "\n").map(String.init)
                        try git.check(["checkout", "HEAD", "--", relative])
                        if unmerged.contains(where: { $0 != relative }) {
                            chmod(vaultPath, 0o600)
                            try GitVaultFile.checkCheckedOut(git, relative: relative, path: vaultPath)
                            throw CLIError.message(
                                "git could not merge \(upstream): \(TerminalText.escaped(detail)); the vault is merged: resolve the other files, commit, and run 'vault sync' again",
                                exitCode: Exit.failure)
                        }
                        try git.check(["commit", "-q", "--no-edit", "-m", "Merge \(upstream) (vault sync)"])
                        outcome.mergedCommit = true
                    }
                    // git writes the files it checks out 0644.
                    chmod(vaultPath, 0o600)
                    try GitVaultFile.checkCheckedOut(git, relative: relative, path: vaultPath)
                }
            }
            if dryRun { return outcome }
            let ahead = try git.output(["rev-list", "--count", "@{upstream}..HEAD"]).trimmingCharacters(in: .newlines)
            guard ahead != "0" else { return outcome }
            // To the upstream branch itself, whatever push.default says.
            let remote = try git.output(["config", "branch.\(branch).remote"]).trimmingCharacters(in: .newlines)
            let mergeRef = try git.output(["config", "branch.\(branch).merge"]).trimmingCharacters(in: .newlines)
            let push = try git.run(["push", "--porcelain", remote, "HEAD:\(mergeRef)"])
            if push.status == 0 {
                outcome.pushed = true
                // A key change made here is upstream now: other clones follow it; it is no longer pending.
                if let protection = options.storeOptions.rollbackProtection, let pushed = try? Merge.read(vaultPath) {
                    DocumentVault.keyChangePublished(pushed, protection: protection)
                }
                return outcome
            }
            // Only a rejection because the branch moved (before or while we pushed) is tried again; a hook or a
            // protected branch is final.
            let pushed = push.text + "\n" + push.errorText
            let moved = ["(fetch first)", "(non-fast-forward)", "(failed to update ref)", "cannot lock ref"].contains { pushed.contains($0) }
            guard moved else {
                let detail = [push.text.split(separator: "\n").filter { $0.hasPrefix("!") }.joined(separator: "; "), push.errorText]
                    .filter { !$0.isEmpty }.joined(separator: "; ")
                throw CLIError.message("git push failed: \(TerminalText.escaped(detail))", exitCode: Exit.failure)
            }
            // Another clone pushed first: fetch, merge and push again.
        }
        throw CLIError.message("\(upstream) kept moving: gave up after \(Self.attempts) pushes; run 'vault sync' again", exitCode: Exit.busy)
    }
}

extension MergeReport {
    /// Adds `other`'s entries to this report (a sync that merged more than once says all of it).
    mutating func accumulate(_ other: MergeReport) {
        added += other.added
        updated += other.updated
        deleted += other.deleted
        resurrected += other.resurrected
        conflicts += other.conflicts
        keptDeleted += other.keptDeleted
        lostEdits += other.lostEdits
        renamed += other.renamed
        replicasAhead = Array(Set(replicasAhead + other.replicasAhead)).sorted()
        written = written || other.written
        otherLacks = otherLacks || other.otherLacks
    }
}

/// git run in one directory with no terminal: its status, standard output (bytes) and standard error.
struct Git {
    let directory: String

    struct Result {
        let status: Int32
        let output: Data
        let errorText: String
        var text: String { String(decoding: output, as: UTF8.self) }
    }

    func run(_ arguments: [String]) throws -> Result {
        var environment = ProcessInfo.processInfo.environment
        // Never a prompt on the terminal from inside `vault sync`: git fails instead, and says why.
        environment["GIT_TERMINAL_PROMPT"] = "0"
        // git runs the repository's hooks (project code): no secret of ours goes with it.
        environment["VAULT_PASSPHRASE"] = nil
        // The vault's path is a path, not a pattern (glob characters, a leading ':').
        environment["GIT_LITERAL_PATHSPECS"] = "1"
        // git's messages as git writes them in English: the push rejection is recognised by its words.
        environment["LC_ALL"] = "C"
        // No line-ending conversion from this user's configuration either (the vault's attributes say none).
        let configuration = ["-c", "core.autocrlf=false", "-c", "core.eol=lf"]
        let (status, out, err) = try Self.capture(["git"] + configuration + ["-C", directory] + arguments, environment: environment)
        let message = String(decoding: err, as: UTF8.self).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("hint:") }.joined(separator: "; ")
        return Result(status: status, output: Data(out), errorText: TerminalText.escaped(message))
    }

    /// Runs `arguments` (looked up on PATH) with stdin on /dev/null and waits for it: its exit status (128 + signal
    /// when killed), standard output and standard error, both read as they come (a large output on one pipe never
    /// blocks the other).
    private static func capture(_ arguments: [String], environment: [String: String]) throws -> (Int32, [UInt8], [UInt8]) {
        var output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        guard pipe(&output) == 0, pipe(&errors) == 0 else {
            let code = errno
            for fd in output + errors where fd >= 0 { close(fd) }
            throw CLIError.message("cannot run git: \(String(cString: strerror(code)))", exitCode: Exit.failure)
        }
        for fd in output + errors { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        let pid = vault_spawn_tool(arguments[0], argv, envp, -1, output[1], errors[1], 0)
        let spawnError = errno
        (argv + envp).forEach { free($0) }
        close(output[1])
        close(errors[1])
        var readEnds = [output[0], errors[0]]
        // Closed before the wait too: a child still writing to a full pipe then ends with EPIPE, never blocks it.
        func closeReadEnds() { for index in readEnds.indices where readEnds[index] >= 0 { close(readEnds[index]); readEnds[index] = -1 } }
        defer { closeReadEnds() }
        guard pid > 0 else {
            throw CLIError.message("cannot run git: \(String(cString: strerror(spawnError)))", exitCode: Exit.failure)
        }
        var collected: [[UInt8]] = [[], []]
        var open = [output[0], errors[0]]
        var buffer = [UInt8](repeating: 0, count: 65536)
        while open.contains(where: { $0 >= 0 }) {
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard Posix.retryingEINTR({ poll(&fds, nfds_t(fds.count), -1) }) >= 0 else { break }
            for index in fds.indices where fds[index].fd >= 0 && fds[index].revents != 0 {
                switch Posix.valueOrErrno({ read(fds[index].fd, &buffer, buffer.count) }) {
                case .success(let count) where count > 0: collected[index] += buffer[0..<count]
                default: open[index] = -1  // the end, or a failure: nothing more from this pipe
                }
            }
        }
        closeReadEnds()
        var status: Int32 = 0
        guard Posix.retryingEINTR({ waitpid(pid, &status, 0) }) == pid else {
            throw CLIError.message("cannot wait for git: \(String(cString: strerror(errno)))", exitCode: Exit.failure)
        }
        let exit = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return (exit, collected[0], collected[1])
    }

    /// git's standard output; a failure is a CLI error with git's own message.
    func output(_ arguments: [String]) throws -> String {
        let result = try run(arguments)
        guard result.status == 0 else {
            throw CLIError.message("git \(arguments.prefix(2).joined(separator: " ")) failed: \(result.errorText)", exitCode: Exit.failure)
        }
        return result.text
    }

    func check(_ arguments: [String]) throws { _ = try output(arguments) }

    /// The bytes of blob `sha` (at most a vault's largest size: a larger blob is refused by its size, unread).
    func blob(_ sha: String) throws -> [UInt8] {
        let size = try output(["cat-file", "-s", sha]).trimmingCharacters(in: .whitespacesAndNewlines)
        if let size = Int(size), size > Merge.largestFile { throw VaultError.vaultTooLarge(path: sha, byteCount: size) }
        let result = try run(["cat-file", "blob", sha])
        guard result.status == 0 else { throw CLIError.message("git cat-file failed: \(result.errorText)", exitCode: Exit.failure) }
        guard result.output.count <= Merge.largestFile else { throw VaultError.vaultTooLarge(path: sha, byteCount: result.output.count) }
        return [UInt8](result.output)
    }
}
