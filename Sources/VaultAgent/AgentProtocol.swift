/// The requests a client sends (the second byte of a request payload).
enum AgentOperation: UInt8 {
    /// What is unlocked, with the time left. Not an activity: it extends no idle timeout.
    case status = 1
    /// Open a vault with a passphrase and keep its key: path, passphrase, idle and max seconds, options.
    case unlock = 2
    /// Forget a vault's key: path. Answers whether it was unlocked.
    case lock = 3
    /// Forget every key. Answers how many there were.
    case lockAll = 4
    /// Whether a vault is unlocked (not an activity): path.
    case probe = 5
    /// The value of an entry: path, name. Answers the value, or no value field when there is none.
    case get = 6
    /// Every entry's name and attributes: path.
    case list = 7
    /// Protocol version 4's batch of puts and removes (format version 1's terms). Retired in version 5: every write,
    /// of any format version, is an ``apply`` (one change vocabulary); the code is not reused.
    case retiredWrite = 8
    /// Remove one entry: path, name. Answers whether there was one.
    case remove = 9
    /// Change the passphrase: path, passphrase (the new one).
    case passwd = 10
    /// Every entry's name, sorted, without attributes (`vault list`): path; with flags set, not an activity
    /// (shell completion: it extends no idle timeout).
    case names = 11
    /// Versions of one entry with their fields (format version 2): path, name, and `version` N or `flags` for
    /// every version (neither: the current one). Answers the entry (``AgentWire/encode(_:into:)``), or nothing
    /// when there is no such entry.
    case records = 12
    /// A batch of document changes in one atomic write: path, then the changes (``AgentDocumentChange``). A
    /// version-1 vault takes the changes its format can hold (``VaultChanges/documentChanges()``'s image: puts of
    /// the password field, removes, moves, copies, requirements first) and answers others `needs_version_2`.
    case apply = 13
    /// Several entries in one round trip: path, then `name`*. Answers per name, in order, `bool` (it exists),
    /// and for one that exists `created`, `modified`, `size` and its `value` when it has one.
    case entries = 14
    /// Merge another copy of the vault (format version 2): path, `source` (how errors name it), `value` (its file's
    /// bytes: ciphertext), `flags` (1: a dry run), `code` accept-deletions, `code` keep-file. Answers the report:
    /// (`code` added/updated/deleted/resurrected/conflict, `name`)*, (`code` renamed, `source`, `name`)*, (`code`
    /// ahead, `replica`)*, and with keep-file, when the merge wrote, `value`: the file it wrote (a sync sends it
    /// without reading the file again).
    case merge = 15
    /// Merge two files of an unlocked version-2 vault, found by the vault id in their headers (git's merge
    /// driver): `value` (ours), `value` (theirs), `source` twice (their names). Answers `value` (the merged file,
    /// sealed with that vault's key) and the report as for `merge`. Nothing on disk is read or written.
    case mergeFiles = 16
    /// What a file of an unlocked version-2 vault holds, by the vault id in its header (git's textconv): `value`
    /// (the file), `source` (its name). Answers `message`* (lines: names, ids, times, field names; never a value).
    case describeFile = 17
    /// The deleted entries that keep a change (format version 3): path. Answers per entry `entryID`, `name`,
    /// `created` and `replica` (when it was deleted, by whom), `modified` and `replica` (when the kept change was
    /// made, by whom) (``AgentWire/encode(_:into:)-deleted``). An older agent refuses the code.
    case deleted = 18
    /// The entries named `name…` whose non-secret fields include every (`field`, `value`) pair of the request
    /// (format version 2; the Secret Service's attribute search): path, `name` (the prefix), then (`field`,
    /// `value`)*. Answers, per entry sorted by name, its current version as ``records`` encodes it (each starting
    /// with `entryID`), non-secret fields only. An older agent refuses the code.
    case search = 19
    /// The vault's age recipients (format version 2; `vault recipients` through the agent, ``AgentRequest/Recipients``):
    /// path, `code` list/add/remove; add: `source`* (the recipients), optional `name` (the label of the one given);
    /// remove: `source` (the recipient), `passphrase` when the vault has a passphrase stanza (the new key is wrapped
    /// for it). Answers the recipients after it, (`source`, `name` (its label, empty for none))*, `bool` (a passphrase
    /// stanza), and `field`*: the recipients added (add), the entries the removed key could read (remove). An older
    /// agent refuses the code.
    case recipients = 20
}

/// The status of an answer (the second byte of a response payload).
enum AgentStatus: UInt8 {
    case ok = 0
    /// The request failed in the agent: code, exit code, message and hint fields.
    case error = 1
    /// The vault is not unlocked (never, expired, or locked).
    case locked = 2
}

/// One change of a document batch on the wire (``AgentOperation/apply``): the `change` byte, then its fields.
enum AgentDocumentChange: UInt8 {
    /// `name`, `field`, `value`, and `secret` when the flag is set.
    case setField = 1
    /// `name`, `field`.
    case removeField
    /// `name`, `bool` (only if present).
    case delete
    /// `source` (from), `name` (to), `bool` (replacing).
    case rename
    /// `source` (from), `name` (to), `bool` (replacing).
    case copy
    /// `name`, `version`.
    case restore
    /// `name`, `bool` (exists).
    case require
    /// `name`, `field`, `bool` (exists).
    case requireField
    /// No fields.
    case deleteAll
    /// `name`, `created` when known, and one `value`: the versions (``AgentWire/encodeVersions(_:)``), so that an
    /// import of thousands of entries with their histories stays far below the message's field limit.
    case insert
    /// `name`: the version a deletion kept of the entry last named so, back (an older agent refuses the code and
    /// writes nothing).
    case restoreDeleted
}
