import VaultCore
import VaultSyncCore
import VaultTerminal

/// The errors of the sync library (VaultSyncCore's ``SyncError``: the engine, git, the S3 and OpenBao stores) in
/// the CLI's words: exit codes, `--json` codes, messages and hints. Here, not in vault-net, because `vault git
/// setup` (in `vault`) runs git through the library too.
extension SyncError: CLIReportable {
    /// The engine's errors, said as `vault sync` said them before the engine was the library's.
    package var said: CLIError? {
        switch self {
        case .nothingToSync(let local, let remote):
            return .message("neither '\(TerminalText.escaped(local))' nor \(remote) exists: nothing to sync", exitCode: Exit.notFound)
        case .deletedInStore(let remote, let whileSyncing):
            return .message("\(remote) was deleted in the store \(whileSyncing ? "while syncing" : "since the last sync"); --recreate writes it again", exitCode: Exit.notFound)
        case .keptChanging(let remote, let attempts):
            return .message("\(remote) kept changing: gave up after \(attempts) tries; run vault sync again", exitCode: Exit.busy)
        case .git(let failure):
            return failure.said
        default:
            return nil
        }
    }

    package var exitCode: Int32 {
        if let said { return said.exitCode }
        switch self {
        case .badLocation: return Exit.usage
        case .missingCredentials, .badConfiguration, .objectTooLarge: return Exit.failure
        case .status(let status, _, _, _): return status == 401 || status == 403 ? Exit.authentication : Exit.failure
        case .nothingToSync, .deletedInStore, .keptChanging, .git: return Exit.failure
        }
    }

    package var code: String {
        if let said { return said.code }
        switch self {
        case .badLocation: return "bad_location"
        case .missingCredentials: return "no_credentials"
        case .badConfiguration: return "bad_configuration"
        case .objectTooLarge: return "too_large"
        case .status(let status, _, _, _): return status == 401 || status == 403 ? "rejected" : "http_error"
        case .nothingToSync, .deletedInStore, .keptChanging, .git: return "error"
        }
    }

    package var message: String {
        if let said { return said.message }
        switch self {
        case .badLocation(let reason): return "not a remote location: \(reason)"
        case .missingCredentials(let profile): return "no S3 credentials: no access key in the environment nor for profile '\(TerminalText.escaped(profile))' of ~/.aws/credentials"
        case .badConfiguration(let path, let line): return "'\(TerminalText.escaped(path))' line \(line) is neither [section] nor key = value"
        case .objectTooLarge(let url): return "\(url) is larger than a vault can be"
        case .status(let status, let code, let message, let url):
            let what = [code, message].compactMap { $0.map { TerminalText.escaped($0) } }.joined(separator: ": ")
            return "\(url): the store answered \(status)\(what.isEmpty ? "" : " (\(what))")"
        case .nothingToSync, .deletedInStore, .keptChanging, .git: return String(describing: self)
        }
    }

    package var hint: String? {
        if case .git(.failed(_, let detail)) = self, let known = GitRawError(detail, directory: nil) { return known.hint }
        if let said { return said.hint }
        switch self {
        case .missingCredentials: return "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE naming a profile of ~/.aws/credentials"
        case .status(let status, _, _, _) where status == 403: return "check the access key and secret (and the clock: signatures are valid for 15 minutes)"
        case .status(let status, _, _, _) where status == 301 || status == 400: return "check --region and --endpoint"
        default: return nil
        }
    }
}

extension GitFailure {
    /// A git sync's failure in the words `vault sync` used.
    var said: CLIError {
        func escaped(_ text: String) -> String { TerminalText.escaped(text) }
        /// git's output and its (escaped) errors, as one detail.
        func detail(_ output: String, _ errors: String) -> String { [output, escaped(errors)].filter { !$0.isEmpty }.joined(separator: "; ") }
        switch self {
        case .notAWorkTree(let vault):
            return .message(
                "'\(escaped(vault))' is not in a git work tree; name a remote (s3://BUCKET/KEY or bao://HOST/MOUNT/PATH), or keep the vault in a git repository",
                exitCode: Exit.usage)
        case .outsideWorkTree(let vault, let top):
            return .message("'\(escaped(vault))' is not inside the work tree '\(escaped(top))'", exitCode: Exit.usage)
        case .notSetUp(let relative):
            return .message(
                "git does not merge '\(escaped(relative))' with vault: run 'vault git setup' (once in every clone) and commit .gitattributes",
                exitCode: Exit.usage)
        case .inProgress(let operation, let top):
            let resume = ["merge", "rebase"].contains(operation) ? " (git \(operation) --continue)" : ""
            return .message("a git \(operation) is in progress in '\(escaped(top))': finish it\(resume) or abort it first", exitCode: Exit.busy)
        case .detachedHead(let top):
            return .message("HEAD is detached in '\(escaped(top))': check out a branch to sync", exitCode: Exit.usage)
        case .noUpstream(let branch, let committed, let remotes):
            return .message(
                "branch '\(escaped(branch))' has no upstream: \(committed ? "the vault is committed; " : "")"
                    + (remotes == 0
                        ? "add the repository to push to (git remote add origin URL), then run 'vault sync' again"
                        : "set one with 'git push -u REMOTE \(escaped(branch))' (this repository has \(remotes) remotes)"),
                exitCode: Exit.failure)
        case .remoteHasBranch(let remote, let branch):
            return .message(
                "'\(escaped(remote))' has a branch '\(escaped(branch))' already, and this repository no commit: git would not merge the two; "
                    + "clone it instead (git clone URL) and run 'vault git setup' in the clone (it adopts the clone's vault; 'vault merge' brings this one's entries into it); nothing was committed",
                exitCode: Exit.failure)
        case .mergeDidNotStart(let upstream, let output, let errors):
            return .message(
                "git could not merge \(upstream) (the vault is merged and committed): \(escaped(detail(output, errors))); run 'vault sync' again once that is settled",
                exitCode: Exit.failure)
        case .otherFilesUnmerged(let upstream, let output, let errors):
            return .message(
                "git could not merge \(upstream): \(escaped(detail(output, errors))); the vault is merged: resolve the other files, commit, and run 'vault sync' again",
                exitCode: Exit.failure)
        case .pushFailed(let rejected, let errors):
            return .message("git push failed: \(escaped(detail(rejected, errors)))", exitCode: Exit.failure)
        case .keptMoving(let upstream, let attempts):
            return .message("\(upstream) kept moving: gave up after \(attempts) pushes; run 'vault sync' again", exitCode: Exit.busy)
        case .converted(let relative, let conversions, let checkedOut):
            let found = conversions.isEmpty ? "" : " (\(escaped(conversions.joined(separator: ", "))))"
            let remedy = "remove what sets \(GitVaultFile.converting.joined(separator: ", ")) for it ('git check-attr -a -- \(escaped(relative))' shows them), then run 'vault sync' again"
            return .message(
                checkedOut
                    ? "git changed the bytes of '\(escaped(relative))' as it checked it out: its attributes convert it\(found); the file is put back as committed and nothing is pushed; \(remedy)"
                    : "git would not store '\(escaped(relative))' as it is: its attributes convert it\(found); nothing is committed or pushed; \(remedy)",
                exitCode: Exit.corrupt)
        case .cannotRun(let reason):
            return .message("cannot run git: \(reason)", exitCode: Exit.failure)
        case .cannotWait(let reason):
            return .message("cannot wait for git: \(reason)", exitCode: Exit.failure)
        case .failed(let command, let detail):
            // git's first words a user meets ("not a git repository", "no commit yet") in ours.
            if let known = GitRawError(detail, directory: nil) { return .message(known.message, exitCode: known.exitCode) }
            return .message("git \(command) failed: \(escaped(detail))", exitCode: Exit.failure)
        }
    }
}

extension GitSync.Notice {
    /// The line `vault sync` writes to stderr.
    package var said: String {
        switch self {
        case .attributesPinned(let relative):
            return "vault: note: git now converts no byte of '\(TerminalText.escaped(relative))' in this clone (its attributes pinned in .git/info/attributes)\n"
        case .madePrivate(let relative):
            return "vault: note: '\(TerminalText.escaped(relative))' was readable by others (git writes what it checks out 0644): it is 0600 now\n"
        case .upstreamLacksVault(let upstream, let relative):
            return "vault: warning: \(TerminalText.escaped(upstream)) has no '\(TerminalText.escaped(relative))' (deleted there?): this clone's vault is kept\n"
        }
    }
}
