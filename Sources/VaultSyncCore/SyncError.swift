/// What goes wrong in a sync (``SyncEngine``) and with a remote store (S3, OpenBao): its answers and its
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
}
