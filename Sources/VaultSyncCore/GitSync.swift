import FoundationEssentials
import Glibc
import VaultCore

/// A sync of a vault kept in a git work tree (issue 19 §3): commit the vault if it changed, bring in what the
/// upstream branch has (the vault merged entry by entry here, then git's merge of everything else), push, and try
/// again when another clone pushed first.
///
/// The vault is merged in this process, with the key it was opened with (``open``), before git merges: the commit
/// git then merges already holds both sides, so git is told to keep ours for the vault
/// (`-c merge.vault.driver=true`) and never needs the agent. When this clone has nothing git does not have, the
/// branch is fast-forwarded instead (no merge commit for a sync with nothing to merge).
///
/// git is not a ``VaultCopy``: its copy is a commit of a whole work tree, whose other files git merges too, and its
/// conditional write is a push refused when the branch moved. The loop is the same: read (fetch), merge here,
/// write only over what was read (push), and on a refusal read, merge and try again.
public struct GitSync {
    /// The vault file, in a git work tree.
    public var path: String
    /// Opens the vault (once, after the work tree's checks); whoever opened it closes it.
    public var open: () throws -> any KeyValueVault
    /// What a key change made here is published to once pushed.
    public var rollbackProtection: RollbackProtection?
    /// Fetch and say what the merge would change; commit, merge and push nothing.
    public var dryRun = false
    /// Many deletions at once are accepted, also by a fast-forward (else they are merged through ``merging``, which
    /// asks or refuses).
    public var acceptDeletions = false
    /// How many times a push refused because the upstream moved is tried again (fetch, merge, push again).
    public var attempts = 5
    /// Runs one merge of the upstream's vault (its label), as ``SyncEngine/merging``.
    public var merging: (_ label: String, _ merge: (SecureBytes?, Bool) throws -> MergeReport) throws -> MergeReport = { _, merge in
        try merge(nil, false)
    }
    /// Told what a sync did beside its report, as it happens.
    public var notify: (Notice) -> Void = { _ in }

    public init(path: String, open: @escaping () throws -> any KeyValueVault) {
        self.path = path
        self.open = open
    }

    /// What a sync did beside its report.
    public enum Notice: Equatable, Sendable {
        /// The vault's attributes were pinned in this clone's `.git/info/attributes` (git converts no byte of it).
        case attributesPinned(relative: String)
        /// The vault was readable by others (git writes what it checks out 0644): it is 0600 now.
        case madePrivate(relative: String)
        /// The upstream has no vault (deleted there?): this clone's is kept.
        case upstreamLacksVault(upstream: String, relative: String)
    }

    /// What one sync did.
    public struct Report: Sendable {
        public var repository = ""
        public var relativePath = ""
        public var upstream = ""
        public var merge = MergeReport()
        public var committed = false
        public var fastForwarded = false
        public var mergedCommit = false
        public var pushed = false
        public var attempts = 1
        /// What `vault git setup` wrote beside the vault (`.gitattributes`, `.gitignore`), committed with it.
        public var committedSetupFiles: [String] = []
        /// The branch had no upstream and the repository one remote: pushed with `-u` (with `dryRun`: would be).
        public var setUpstream = false
        /// The remote and branch pushed to (or fetched from).
        public var remote = ""
        public var branch = ""
    }

    public func sync() throws -> Report {
        // git names the work tree by its physical path: the vault's directory with its links resolved too.
        let given = URL(fileURLWithPath: path).standardizedFileURL
        let directory = given.deletingLastPathComponent().resolvingSymlinksInPath().path
        let vaultPath = (directory == "/" ? "" : directory) + "/" + given.lastPathComponent
        guard FileManager.default.fileExists(atPath: vaultPath) else { throw VaultError.vaultNotFound(path: vaultPath) }
        let probe = Git(directory: directory)
        let topResult = try probe.run(["rev-parse", "--show-toplevel"])
        guard topResult.status == 0 else {
            throw SyncError.git(.notAWorkTree(vault: vaultPath))
        }
        let top = URL(fileURLWithPath: topResult.text.trimming(.newlines)).standardizedFileURL.path
        guard vaultPath.hasPrefix(top + "/") else {
            throw SyncError.git(.outsideWorkTree(vault: vaultPath, top: top))
        }
        let git = Git(directory: top)
        var outcome = Report()
        outcome.repository = top
        let relative = String(vaultPath.dropFirst(top.count + 1))
        outcome.relativePath = relative

        // The merge attribute: without it, git would leave a binary conflict in every other clone's pull.
        let attribute = try git.output(["check-attr", "merge", "--", relative])
        guard attribute.trimming(.newlines).hasSuffix(": merge: vault") else {
            throw SyncError.git(.notSetUp(relative: relative))
        }
        // Its bytes as they are, whatever a committed .gitattributes says (a clone set up before the pin).
        if try GitVaultFile.pin(git, top: top, relative: relative) { notify(.attributesPinned(relative: relative)) }
        // git writes the files it checks out 0644 (a fresh clone's vault too): this user's own file is made 0600.
        if GitVaultFile.makePrivate(vaultPath) { notify(.madePrivate(relative: relative)) }
        guard try git.run(["rev-parse", "-q", "--verify", "MERGE_HEAD"]).status != 0 else {
            throw SyncError.git(.inProgress(operation: "merge", top: top))
        }
        for (state, what) in [("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")]
        where try git.run(["rev-parse", "-q", "--verify", state]).status == 0 {
            throw SyncError.git(.inProgress(operation: what, top: top))
        }
        for state in ["rebase-merge", "rebase-apply"] {
            let path = try git.output(["rev-parse", "--git-path", state]).trimming(.newlines)
            if FileManager.default.fileExists(atPath: path.hasPrefix("/") ? path : top + "/" + path) {
                throw SyncError.git(.inProgress(operation: "rebase", top: top))
            }
        }
        // The branch's name, also before its first commit (a new repository).
        let branchResult = try git.run(["symbolic-ref", "-q", "--short", "HEAD"])
        guard branchResult.status == 0 else {
            throw SyncError.git(.detachedHead(top: top))
        }
        let branch = branchResult.text.trimming(.newlines)
        let upstreamResult = try git.run(["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"])
        var upstream = upstreamResult.status == 0 ? upstreamResult.text.trimming(.newlines) : nil
        // The upstream's commit as git names it (a dry run does not record an upstream it found).
        var upstreamRef = "@{upstream}"

        // The vault opens (key, MACs, rollback record) before anything of it is committed or merged.
        let entries = try open()
        _ = try entries.keys()

        // No upstream: with exactly one remote, its branch of this name, when it has one (else a first push there).
        let remotes = upstream == nil ? try git.output(["remote"]).split(separator: "\n").map(String.init) : []
        var firstPush: String?
        if upstream == nil, remotes.count == 1, let remote = remotes.first {
            try git.check(["fetch", "-q", remote])
            (outcome.remote, outcome.branch) = (remote, branch)
            let tracking = "\(remote)/\(branch)"
            if try git.run(["rev-parse", "-q", "--verify", "refs/remotes/\(tracking)"]).status == 0 {
                // A new repository (no commit) beside a remote that has the branch: unrelated histories git would
                // not merge. Cloning is the way; nothing is committed.
                guard try git.run(["rev-parse", "-q", "--verify", "HEAD"]).status == 0 else {
                    throw SyncError.git(.remoteHasBranch(remote: remote, branch: branch))
                }
                // The remote has that branch already: it becomes the upstream, and the sync goes on as always.
                if !dryRun { try git.check(["branch", "-q", "--set-upstream-to=\(tracking)", branch]) }
                upstream = tracking
                upstreamRef = "refs/remotes/\(tracking)"
            } else {
                firstPush = remote
                outcome.upstream = tracking
                outcome.setUpstream = true
            }
        }

        // 1. This clone's changes to the vault, committed (only the vault, with what setup wrote beside it: other
        // staged work stays staged). The first commit of a new repository too.
        let status = try git.output(["status", "--porcelain", "--", relative])
        let setupFiles = try GitVaultFile.setupChanges(git, top: top)
        if !status.isEmpty || !setupFiles.isEmpty, !dryRun {
            if !status.isEmpty { try GitVaultFile.checkStoredAsIs(git, relative: relative) }
            let paths = (status.isEmpty ? [] : [relative]) + setupFiles
            try git.check(["add", "--"] + paths)
            try git.check(["commit", "-q", "-m", "vault: sync '\(relative)'", "--only", "--"] + paths)
            outcome.committed = !status.isEmpty
            outcome.committedSetupFiles = setupFiles
        }
        if upstream == nil {
            guard let remote = firstPush else {
                throw SyncError.git(.noUpstream(branch: branch, committed: outcome.committed || !outcome.committedSetupFiles.isEmpty, remotes: remotes.count))
            }
            if dryRun { return outcome }
            // A first push to an empty remote (or one without this branch): with -u, the branch's upstream after.
            let push = try git.run(["push", "--porcelain", "-u", remote, "refs/heads/\(branch):refs/heads/\(branch)"])
            guard push.status == 0 else {
                let rejected = push.text.split(separator: "\n").filter { $0.hasPrefix("!") }.joined(separator: "; ")
                throw SyncError.git(.pushFailed(rejected: rejected, errors: push.errorText))
            }
            outcome.pushed = true
            publishKeyChange(vaultPath)
            return outcome
        }
        guard let upstream else { return outcome }
        outcome.upstream = upstream

        for attempt in 1...attempts {
            outcome.attempts = attempt
            try git.check(["fetch", "-q"])
            let theirs = try git.output(["rev-parse", "--verify", "\(upstreamRef)^{commit}"]).trimming(.newlines)
            let head = try git.output(["rev-parse", "--verify", "HEAD^{commit}"]).trimming(.newlines)
            let upToDate = try git.run(["merge-base", "--is-ancestor", theirs, head]).status == 0
            if !upToDate {
                let label = "\(upstream):\(relative)"
                let theirBlob = try git.run(["rev-parse", "-q", "--verify", "\(theirs):\(relative)"])
                let ourBlob = try git.run(["rev-parse", "-q", "--verify", "\(head):\(relative)"])
                let theirBytes = theirBlob.status == 0 ? try git.blob(theirBlob.text.trimming(.newlines)) : nil
                // A fast-forward puts the upstream's file in place as it is: only when it holds everything this
                // vault holds, under the same key, at a generation not below ours (else the rollback record would
                // refuse it); what it brings is said from a dry run.
                var fastForward = false
                if try git.run(["merge-base", "--is-ancestor", head, theirs]).status == 0, let theirBytes {
                    if theirBlob.text == ourBlob.text {
                        fastForward = true
                    } else if let report = try? entries.merge(theirBytes, label: label, dryRun: true, otherPassphrase: nil), !report.otherLacks,
                              // Many deletions at once are merged (and asked about), never fast-forwarded in silence.
                              acceptDeletions || !report.isMassDeletion(outOf: (try? entries.keys().count) ?? 0),
                              let ours = try? DocumentHeader.parse(GitVaultFile.read(vaultPath), label: vaultPath, policy: .insecureForTesting),
                              let other = try? DocumentHeader.parse(theirBytes, label: label, policy: .insecureForTesting),
                              other.generation >= ours.generation {
                        fastForward = true
                        outcome.merge.accumulate(report)
                    }
                }
                if !fastForward, let theirBytes, theirBlob.text != ourBlob.text {
                    // Merged here, with the key this vault opened with (a copy with another passphrase asks for it).
                    outcome.merge.accumulate(try merging(label) { passphrase, acceptDeletions in
                        try entries.merge(theirBytes, label: label, dryRun: dryRun, otherPassphrase: passphrase, acceptDeletions: acceptDeletions)
                    })
                } else if !fastForward, theirBytes == nil {
                    notify(.upstreamLacksVault(upstream: upstream, relative: relative))
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
                        let output = merged.text.trimming(.whitespacesAndNewlines)
                        guard try git.run(["rev-parse", "-q", "--verify", "MERGE_HEAD"]).status == 0 else {
                            // The merge did not start (local changes or untracked files in its way): nothing changed.
                            throw SyncError.git(.mergeDidNotStart(upstream: upstream, output: output, errors: merged.errorText))
                        }
                        let unmerged = try git.output(["diff", "--name-only", "--diff-filter=U"]).split(separator: "\n").map(String.init)
                        try git.check(["checkout", "HEAD", "--", relative])
                        if unmerged.contains(where: { $0 != relative }) {
                            chmod(vaultPath, 0o600)
                            try GitVaultFile.checkCheckedOut(git, relative: relative, path: vaultPath)
                            throw SyncError.git(.otherFilesUnmerged(upstream: upstream, output: output, errors: merged.errorText))
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
            let ahead = try git.output(["rev-list", "--count", "\(upstreamRef)..HEAD"]).trimming(.newlines)
            guard ahead != "0" else { return outcome }
            // To the upstream branch itself, whatever push.default says.
            let remote = try git.output(["config", "branch.\(branch).remote"]).trimming(.newlines)
            let mergeRef = try git.output(["config", "branch.\(branch).merge"]).trimming(.newlines)
            let push = try git.run(["push", "--porcelain", remote, "HEAD:\(mergeRef)"])
            if push.status == 0 {
                outcome.pushed = true
                publishKeyChange(vaultPath)
                return outcome
            }
            // Only a rejection because the branch moved (before or while we pushed) is tried again; a hook or a
            // protected branch is final.
            let pushed = push.text + "\n" + push.errorText
            let moved = ["(fetch first)", "(non-fast-forward)", "(failed to update ref)", "cannot lock ref"].contains { pushed.contains($0) }
            guard moved else {
                let rejected = push.text.split(separator: "\n").filter { $0.hasPrefix("!") }.joined(separator: "; ")
                throw SyncError.git(.pushFailed(rejected: rejected, errors: push.errorText))
            }
            // Another clone pushed first: fetch, merge and push again.
        }
        throw SyncError.git(.keptMoving(upstream: upstream, attempts: attempts))
    }
}

extension GitSync {
    /// After a push: a key change made here is upstream now (other clones follow it); it is no longer pending.
    func publishKeyChange(_ vaultPath: String) {
        if let protection = rollbackProtection, let pushed = try? GitVaultFile.read(vaultPath) {
            DocumentVault.keyChangePublished(pushed, protection: protection)
        }
    }

    /// What `vault sync` with no remote syncs the vault at `path` with (`vault remote show`).
    public enum Target: Equatable, Sendable {
        /// The branch's upstream: `remote`'s `branch`.
        case upstream(remote: String, branch: String)
        /// No upstream, one remote: the first sync pushes `branch` there with `-u`.
        case firstPush(remote: String, branch: String)
        /// No upstream and not exactly one remote (`branch` nil: HEAD is detached).
        case none(branch: String?, remotes: Int)
    }

    /// What `vault sync` would sync the vault at `path` with, as its git sync decides it; nil when the vault's
    /// directory is in no git work tree.
    public static func target(of path: String) throws -> Target? {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let probe = Git(directory: directory)
        guard try probe.run(["rev-parse", "--show-toplevel"]).status == 0 else { return nil }
        let remotes = try probe.output(["remote"]).split(separator: "\n").map(String.init)
        let branchResult = try probe.run(["symbolic-ref", "-q", "--short", "HEAD"])
        guard branchResult.status == 0 else { return Target.none(branch: nil, remotes: remotes.count) }
        let branch = branchResult.text.trimming(.newlines)
        if try probe.run(["rev-parse", "-q", "--verify", "@{upstream}"]).status == 0 {
            let remote = try probe.output(["config", "branch.\(branch).remote"]).trimming(.newlines)
            let merge = try probe.output(["config", "branch.\(branch).merge"]).trimming(.newlines)
            return .upstream(remote: remote, branch: merge.hasPrefix("refs/heads/") ? String(merge.dropFirst("refs/heads/".count)) : merge)
        }
        guard remotes.count == 1 else { return Target.none(branch: branch, remotes: remotes.count) }
        return .firstPush(remote: remotes[0], branch: branch)
    }
}

extension MergeReport {
    /// Adds `other`'s entries to this report (a sync that merged more than once says all of it).
    package mutating func accumulate(_ other: MergeReport) {
        added += other.added
        updated += other.updated
        deleted += other.deleted
        resurrected += other.resurrected
        conflicts += other.conflicts
        keptDeleted += other.keptDeleted
        cameBack += other.cameBack
        moved += other.moved
        namedBack += other.namedBack
        keptDeletions += other.keptDeletions
        lostEdits += other.lostEdits
        wonConflicts += other.wonConflicts
        renamed += other.renamed
        replicasAhead = Array(Set(replicasAhead + other.replicasAhead)).sorted()
        written = written || other.written
        otherLacks = otherLacks || other.otherLacks
        followedKey = other.followedKey ?? followedKey
    }
}
