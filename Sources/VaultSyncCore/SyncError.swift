/// What goes wrong in a sync (``SyncEngine``, ``GitSync``) and with a remote store (S3, OpenBao): its answers and its
/// set-up. The library's one error type beside ``VaultError`` (the vault's own: opening, merging, writing); no case
/// carries a secret, and none is worded for a user: the CLI says each in its words.
public enum SyncError: Error, Equatable, Sendable {
    case badLocation(String)
    /// No access key: neither the environment nor `~/.aws/credentials` has one for the profile.
    case missingCredentials(profile: String)
    /// A malformed `~/.aws/credentials` or `~/.aws/config` line.
    case badConfiguration(path: String, line: Int)
    /// An answer the sync cannot use: its status and S3's error code and message (from the XML body), if any.
    case status(Int, code: String?, message: String?, url: String)
    /// A remote object larger than a vault can be.
    case objectTooLarge(url: String)
    /// Neither the local vault at `local` nor the copy `remote` exists.
    case nothingToSync(local: String, remote: String)
    /// The copy was deleted in its store since the last sync (`whileSyncing`: between this sync's read and its
    /// write); ``SyncEngine/recreate`` writes it again.
    case deletedInStore(remote: String, whileSyncing: Bool)
    /// Every one of `attempts` conditional writes found the copy changed again.
    case keptChanging(remote: String, attempts: Int)
    /// A git sync that cannot start or finish (``GitSync``), or git itself failing.
    case git(GitFailure)
}

/// Why a git sync stops. Paths are as git names them; `detail`, `output` and `errors` are git's own words, as it
/// wrote them (a message escapes them before a terminal shows them).
public enum GitFailure: Equatable, Sendable {
    /// The vault's directory is in no git work tree.
    case notAWorkTree(vault: String)
    /// The vault is not inside the work tree git names (`top`).
    case outsideWorkTree(vault: String, top: String)
    /// git does not merge the vault with vault's driver: `vault git setup` was not run, or .gitattributes not committed.
    case notSetUp(relative: String)
    /// A git merge, rebase, cherry-pick or revert (`operation`) is in progress in the work tree `top`.
    case inProgress(operation: String, top: String)
    /// HEAD is detached in `top`.
    case detachedHead(top: String)
    /// The branch has no upstream and the repository not exactly one remote (`remotes`) to push it to
    /// (`committed`: the vault was committed before this was found).
    case noUpstream(branch: String, committed: Bool, remotes: Int)
    /// A repository with no commit whose one remote has the branch already (histories git would not merge).
    case remoteHasBranch(remote: String, branch: String)
    /// git's merge of the upstream did not start (local changes or untracked files in its way); the vault is merged
    /// and committed.
    case mergeDidNotStart(upstream: String, output: String, errors: String)
    /// git's merge of the upstream left other files than the vault unmerged; the vault is merged.
    case otherFilesUnmerged(upstream: String, output: String, errors: String)
    /// A push refused for another reason than the upstream having moved (a hook, a protected branch): git's
    /// `rejected` lines and its errors.
    case pushFailed(rejected: String, errors: String)
    /// Every one of `attempts` pushes found the upstream moved again.
    case keptMoving(upstream: String, attempts: Int)
    /// git's attributes convert the vault's bytes (`conversions`: `name: value`), found before a commit, or after
    /// a checkout (`checkedOut`: the committed bytes are put back); nothing is committed or pushed.
    case converted(relative: String, conversions: [String], checkedOut: Bool)
    /// git could not be started, or waited for.
    case cannotRun(reason: String)
    case cannotWait(reason: String)
    /// `git COMMAND` failed.
    case failed(command: String, detail: String)
}
