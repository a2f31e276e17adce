import FoundationEssentials
import VaultSodium

/// Every failure of the vault library. No case ever carries a passphrase, a key or a value; entry names and
/// paths do appear (they are not secret to the user who typed them, but SECURITY.md lists names as assets:
/// an embedder that logs errors should know).
///
/// The cases say what failed; what to tell a user (a hint, an exit code) is the command line's business.
public enum VaultError: Error, Equatable, Sendable {
    /// The passphrase is wrong, or the file's authenticated parts were altered; the two cannot be told apart.
    case wrongPassphrase(path: String)
    /// No `x25519` stanza of the vault opens with the identities given (none is for their recipients, or the one
    /// that is was altered; the two cannot be told apart): a stranger's key, or one removed from the vault.
    case wrongIdentity(path: String)
    /// The file is not a vault or is damaged in a way its unkeyed structure shows (bad magic, truncation, lengths).
    case corrupt(path: String, reason: Corruption)
    /// The file is a vault in a format version this build does not read.
    case unsupportedVersion(path: String, version: Int)
    /// The header asks for Argon2id parameters outside the accepted range; refused before the KDF runs.
    case kdfParametersOutOfRange(path: String, opsLimit: UInt64, memLimitBytes: UInt64)
    /// The header names a key-derivation algorithm this build does not know.
    case unsupportedKDF(path: String, algorithm: Int)
    /// No vault exists at the path.
    case vaultNotFound(path: String)
    /// A vault already exists where a new one was to be created.
    case vaultAlreadyExists(path: String)
    /// The vault, its directory or its lock file is accessible to others, owned by someone else, or a symlink.
    case unsafePermissions(path: String, reason: String, hint: String)
    /// Another process held the vault's lock for longer than the timeout.
    case busy(path: String, timeoutSeconds: Double)
    /// The store is not open; call `open(with:)` first.
    case notOpen
    /// An entry name is empty, too long, or holds a control character.
    case invalidEntryName(reason: String)
    /// A database file name (``SecureKeyValueStore/init(databaseFileName:options:)``) is not a plain file name.
    case invalidFileName(String)
    /// A value is larger than the format allows.
    case valueTooLarge(key: String, byteCount: Int)
    /// A stored value is not valid UTF-8 (asked for as a `String`) or does not decode as the requested type.
    case typeMismatch(key: String, reason: String)
    /// A system call failed. `operation` names it (e.g. `open`, `fsync`), `errno` is the C error number.
    case io(operation: String, path: String, errno: Int32)
    /// libsodium reported a failure in `function` (e.g. out of memory in `crypto_pwhash`).
    case cryptoFailure(function: String)
    /// The vault's authenticated generation is lower than the highest this user has seen at this path: an older
    /// copy was put back (see ``SecureKeyValueStore/Options/rollbackProtection``).
    case rollbackDetected(path: String, seenGeneration: UInt64, fileGeneration: UInt64)
    /// A batch required an entry that the vault does not have (a move, a copy or a delete of a missing name);
    /// nothing was written.
    case noSuchEntry(key: String, path: String)
    /// A batch required that an entry not exist, and it does (`put --no-clobber`, a move or copy onto an
    /// existing name); nothing was written.
    case entryExists(key: String, path: String)
    /// The vault file is sealed with a data key this vault retired when its passphrase changed (or, as `reason` says
    /// when the record knows, when a recipient was removed): a copy from before the change (or a file forged with the
    /// old passphrase) was put back.
    case retiredKey(path: String, reason: KeyChangeReason? = nil)
    /// The vault file is another vault (another data key) than the one last seen at this path, and not one
    /// this user's writes made: a vault was put in its place.
    case otherVault(path: String)
    /// The data key this open store holds no longer opens the file, which has another salt: another process
    /// changed the vault's passphrase (which changes the data key), or put another vault in its place. Open
    /// it again with the (new) passphrase.
    case keyChanged(path: String)
    /// Another copy of this vault, to merge, is sealed with another data key: its passphrase was changed on one
    /// side (or, as `reason` says when its key links tell, a recipient was removed there). Its own passphrase opens it.
    case otherKey(path: String, reason: KeyChangeReason? = nil)
    /// A write would make the vault file larger than the format allows (``VaultFormat/maximumFileByteCount``);
    /// nothing was written.
    case vaultTooLarge(path: String, byteCount: Int)
    /// The vault's generation is 2^64−1, the largest: no write can raise it (docs/FORMAT.md); nothing was
    /// written, the vault still opens.
    case generationExhausted(path: String)
    /// A field name that the format cannot hold (`reason` says why).
    case invalidFieldName(String)
    /// Entry `key` has no earlier version `version` (1 is the newest earlier one).
    case noSuchVersion(key: String, version: Int)
    /// Entry `key` has no field `field` (in the version asked for).
    case noSuchField(key: String, field: String)
    /// Entry `key` already has a field `field` (a write that required it absent).
    case fieldExists(key: String, field: String)
    /// What was asked needs format version 2 (fields, history, ids); the vault at `path` is version 1.
    case needsVersion2(path: String)
    /// The vault file lacks writes this user's replica made to it (a copy from another machine put over it, which
    /// would silently lose them); nothing is read or written. `--accept-rollback` takes the file as it is.
    case missingOwnWrites(path: String)
    /// The stored vault changed between its load and a conditional replace (another writer): nothing was
    /// written. A writer loads again and retries; this is thrown when it gave up.
    case storageConflict(path: String)
    /// A merge of two files that are not copies of one vault (their vault ids differ): nothing was merged.
    case notTheSameVault(path: String)
    /// A merge of a copy (`path`) that has not seen deletions the other copy has since forgotten (below its
    /// tombstone horizon: docs/FORMAT.md, "The tombstone horizon"): merging it would bring deleted entries back.
    /// Nothing was merged; the newer copy should replace it.
    case behindHorizon(path: String)
    /// A replica's clock reached the largest timestamp (the year 10889): no later one can be issued.
    case clockExhausted
    /// A copy to merge (`path`), or a file put in the vault's place and opened, is sealed under a data key that no key
    /// link signed by this vault's current key leads to (docs/FORMAT.md, "Key changes"): a stranger's key, a removed
    /// recipient's, or a fork from a key this vault retired. Nothing was merged or written; the vault's key and stanzas
    /// are unchanged. `--accept-rollback` does not override it.
    case unauthorizedKey(path: String)
    /// A copy to merge (`path`) is sealed under the data key this vault replaced at a key change that other copies
    /// have since been given (published): it was written by a machine that has not followed the change yet. Nothing
    /// was merged; that machine's next sync follows the change, after which its copy merges.
    case staleKey(path: String)
    /// The age identity given has no stanza in `path` (or its stanza does not open), which has recipient stanzas:
    /// it is not, or no longer, a recipient of that vault.
    case notARecipient(path: String)
    /// The vault was opened with an age identity that `path`, a later copy of it, no longer has a stanza for, and the
    /// key change that leads there (its key links) removed a recipient: this identity was removed, and opens no
    /// later version of the vault.
    case removedRecipient(path: String)
    /// A copy to merge (`path`) holds a clock (a replica's time, a stamp, a `seen` time or a dropped mark) of
    /// `replica` at `milliseconds`, more than a day ahead of this machine's wall clock and of every clock of the vault
    /// it is merged into: taken in, it would hold back (or, at the end of time, stop) every later change. Nothing was
    /// merged (docs/FORMAT.md, "Merging two copies").
    case clockAhead(path: String, replica: ReplicaID, milliseconds: UInt64)
    /// A copy to merge (`path`) claims what no copy of this vault can hold (`reason`): changes of this machine's own
    /// replica that it never made, or deletions forgotten that cannot be old enough to be. Nothing was merged.
    case untrustedCopy(path: String, reason: String)
    /// A merge of `path` would delete `names` at once (more than 10 entries and more than a tenth of the vault):
    /// nothing was merged; the caller asks, or the user passes `--accept-deletions`.
    case massDeletion(path: String, names: [String])
}

extension VaultError: CustomStringConvertible {
    /// A one-line message that starts with what failed and quotes the object.
    public var description: String {
        switch self {
        case .wrongIdentity(let path):
            return "cannot open vault '\(path)': no key stanza for this identity (or the file was tampered with)"
        case .wrongPassphrase(let path):
            return "cannot open vault '\(path)': incorrect passphrase (or the file was tampered with)"
        case .corrupt(let path, let reason):
            return "cannot read vault '\(path)': the file is corrupt: \(reason)"
        case .unsupportedVersion(let path, let version):
            return "cannot read vault '\(path)': unsupported format version \(version)"
        case .kdfParametersOutOfRange(let path, let ops, let mem):
            return "cannot open vault '\(path)': Argon2id parameters out of the accepted range "
                + "(opslimit \(ops), memlimit \(mem) bytes)"
        case .unsupportedKDF(let path, let algorithm):
            return "cannot open vault '\(path)': unsupported key-derivation algorithm \(algorithm)"
        case .vaultNotFound(let path):
            return "no vault at '\(path)'"
        case .vaultAlreadyExists(let path):
            return "a vault already exists at '\(path)'"
        case .unsafePermissions(let path, let reason, _):
            return "refusing to use '\(path)': \(reason)"
        case .busy(let path, let timeout):
            return "vault '\(path)' is busy: another process held its lock for more than \(formatSeconds(timeout))"
        case .notOpen:
            return "the vault is not open"
        case .invalidEntryName(let reason):
            return "invalid entry name: \(reason)"
        case .invalidFileName(let name):
            return "invalid database file name '\(name)': it must be a plain file name"
        case .valueTooLarge(let key, let count):
            return "value for '\(key)' is too large (\(count) bytes)"
        case .typeMismatch(let key, let reason):
            return "entry '\(key)' cannot be read as requested: \(reason)"
        case .io(let operation, let path, let code):
            // "cannot read 'x': …" says it once; "opening 'x' failed: …" needs the word.
            let failed = operation.hasPrefix("cannot ") ? "" : " failed"
            let what = path.isEmpty ? operation : "\(operation) '\(path)'"
            return "\(what)\(failed): \(errnoDescription(code))"
        case .cryptoFailure(let function):
            return "cryptographic operation failed in \(function)"
        case .rollbackDetected(let path, let seen, let file):
            return "refusing to open vault '\(path)': it is an older copy of the vault than one already seen here "
                + "(this copy was written \(file) times, one seen here \(seen) times): an older copy may have been put back"
        case .noSuchEntry(let key, let path):
            return "no entry '\(key)' in vault '\(path)'"
        case .entryExists(let key, let path):
            return "an entry '\(key)' already exists in vault '\(path)'"
        case .retiredKey(let path, .recipientRemoval):
            return "refusing to open vault '\(path)': it is sealed with a key the vault retired when a recipient was removed: "
                + "a copy from before the removal was put back"
        case .retiredKey(let path, _):
            return "refusing to open vault '\(path)': it is sealed with a key the vault retired when its passphrase "
                + "changed: a copy from before the change may have been put back"
        case .otherVault(let path):
            return "refusing to open vault '\(path)': it is another vault than the one last seen at this path "
                + "(another data key)"
        case .keyChanged(let path):
            return "vault '\(path)' no longer opens with the key this process holds: another process changed its "
                + "passphrase (or put another vault in its place); open it again"
        case .otherKey(let path, let reason):
            let why = switch reason {
            case .recipientRemoval: "a recipient was removed on one side, which rotates the key (the passphrase may be the same)"
            case .other: "its key was changed on one side"
            case .passphraseChange, nil: "its passphrase was changed on one side"
            }
            return "'\(path)' is sealed with another key than this vault: \(why)"
        case .vaultTooLarge(let path, let count):
            return "cannot write vault '\(path)': it would be larger than a vault can be (\(count) bytes)"
        case .generationExhausted(let path):
            return "cannot write vault '\(path)': its generation is at the maximum (2^64-1)"
        case .invalidFieldName(let reason):
            return "invalid field name: \(reason)"
        case .noSuchVersion(let key, let version):
            return "entry '\(key)' has no version \(version)"
        case .noSuchField(let key, let field):
            return "entry '\(key)' has no field '\(field)'"
        case .fieldExists(let key, let field):
            return "entry '\(key)' already has a field '\(field)'"
        case .needsVersion2(let path):
            return "vault '\(path)' is format version 1: fields, history and entry ids need format version 2"
        case .missingOwnWrites(let path):
            return "refusing to open vault '\(path)': it lacks changes made to it here (a copy from another machine put over it?)"
        case .storageConflict(let path):
            return "vault '\(path)' kept changing while this write was made (other writers); nothing was written"
        case .notTheSameVault(let path):
            return "cannot merge '\(path)': it is another vault (the vault ids differ)"
        case .behindHorizon(let path):
            return "cannot merge '\(path)': it has not seen deletions the other copy no longer records, so merging it could bring deleted entries back"
        case .clockExhausted:
            return "the vault's clock is at its largest timestamp: no later change can be recorded"
        case .unauthorizedKey(let path):
            return "'\(path)' is sealed under a key this vault did not hand over: nothing merged or written"
        case .staleKey(let path):
            return "'\(path)' was written under the key this vault replaced at a key change other copies already have: nothing merged"
        case .notARecipient(let path):
            return "this identity is not (or no longer) a recipient of '\(path)'"
        case .removedRecipient(let path):
            return "this identity was removed from the vault (its key rotated at a recipient's removal; '\(path)' has no stanza for it): "
                + "it opens no later version; ask the owner to add it again"
        case .clockAhead(let path, let replica, let milliseconds):
            let time = UTCTime.iso8601(milliseconds: Int64(clamping: milliseconds), fractional: false)
            return "cannot merge '\(path)': it holds a clock of replica \(replica) at \(time), more than a day ahead of this machine's clock and of this vault's"
        case .untrustedCopy(let path, let reason):
            return "cannot merge '\(path)': \(reason)"
        case .massDeletion(let path, let names):
            let shown = names.prefix(5).map { "'\($0)'" }.joined(separator: ", ") + (names.count > 5 ? ", ..." : "")
            return "merging '\(path)' would delete \(names.count) entries (\(shown)): nothing was merged"
        }
    }
}

private func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
}

func errnoDescription(_ code: Int32) -> String {
    Posix.describe(errno: code)
}

/// Runs a libsodium wrapper, turning its failure into ``VaultError/cryptoFailure(function:)``.
func sodium<R>(_ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let failure as SodiumFailure {
        throw VaultError.cryptoFailure(function: failure.function)
    }
}

/// `localizedDescription` gives the message (as for VaultAuth's and MobileServices' errors), not Foundation's
/// generic "The operation could not be completed".
extension VaultError: LocalizedError {
    public var errorDescription: String? { description }
}
