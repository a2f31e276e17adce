import FoundationEssentials
import Synchronization

/// An encrypted key-value store in one file, unlocked with a passphrase: the vault `vault init` makes, opened,
/// read and written by a program.
///
/// The API follows the `SecureKeyValueStore` of the SAP mobile tutorials (`init(databaseFileName:)`,
/// `open(with:)`, `put(_:forKey:)`, `getString(_:)`, `changeEncryptionKey(with:)`), without their hard-coded key.
/// It creates vaults of the current format (version 3, docs/FORMAT.md: entries with fields, earlier versions,
/// merges) and opens every version the `vault` CLI opens (``VaultOpener``). Writes keep the file's version: a
/// version-1 vault stays version 1 until upgraded (``VaultUpgrade``, `vault upgrade`), and answers the operations of
/// fields and history (``records(of:_:)``, ``apply(_:)``, ``merge(_:label:dryRun:otherPassphrase:)``) with
/// ``VaultError/needsVersion2(path:)``.
///
/// - Argon2id turns the passphrase into a key that unwraps the vault's random data key; the entries are sealed
///   with `crypto_secretbox` under a key made from the data key, the header bound to them, so editing any byte
///   makes opening fail.
/// - Every write replaces the file atomically and durably, under an exclusive lock on `<path>.lock`, after
///   re-reading the file: writers in several processes never lose each other's updates.
/// - The passphrase, keys and decrypted values live in libsodium-guarded memory, zeroed when released.
///
/// All methods are thread-safe, and all of them block: reads and writes of the file, `fsync`, waiting for another
/// process's lock (up to ``VaultStoreOptions/lockTimeoutSeconds``) and, in ``open(with:)-(SecureBytes)`` and
/// ``changePassphrase(to:parameters:)``, Argon2id (up to 1 GiB and seconds). From `async` code call them through
/// ``perform(_:)`` (or ``runBlocking(_:)``), which runs them off the cooperative pool.
///
/// ```swift
/// let store = SecureKeyValueStore(path: "/home/me/.local/share/vault/default.vault")
/// try store.open(with: passphrase)                  // creates the vault if there is none
/// try store.put("hunter2", forKey: "github")
/// let user = try store.record(of: "github")?.field("username")
/// store.close()                                     // zeroes all key material
/// ```
public final class SecureKeyValueStore: KeyValueVault, Sendable {
    public typealias Options = VaultStoreOptions
    public typealias Changes = VaultChanges
    public typealias EntryAttributes = VaultCore.EntryAttributes
    public typealias HeaderInfo = VaultHeaderInfo

    /// The vault file's path.
    public let path: String
    public let options: Options
    /// The open vault: a ``DocumentVault`` (versions 2 and 3) or a ``FormatOneStore``.
    private let opened = Mutex<(any KeyValueVault)?>(nil)

    /// A store for the vault file at `path`. Nothing is read until ``open(with:)-(SecureBytes)``.
    public init(path: String, options: Options = Options()) {
        self.path = path
        self.options = options
    }

    /// A store for `databaseFileName` in ``defaultDirectory``, like the tutorials' `SecureKeyValueStore(databaseFileName:)`.
    ///
    /// - Throws: ``VaultError/invalidFileName(_:)`` if the name contains `/` or is empty or `.`/`..`.
    public convenience init(databaseFileName: String, options: Options = Options()) throws {
        guard !databaseFileName.isEmpty, !databaseFileName.contains("/"), databaseFileName != ".",
            databaseFileName != ".."
        else { throw VaultError.invalidFileName(databaseFileName) }
        self.init(path: Self.defaultDirectory + "/" + databaseFileName, options: options)
    }

    /// `$XDG_DATA_HOME/vault`, or `~/.local/share/vault` when `XDG_DATA_HOME` is unset or not absolute (where
    /// `vault` keeps `default.vault`).
    public static var defaultDirectory: String {
        if let data = Posix.environment("XDG_DATA_HOME"), data.hasPrefix("/") {
            return data + "/vault"
        }
        return Posix.homeDirectory + "/.local/share/vault"
    }

    /// Checks an entry name: 1 to 4,096 bytes of UTF-8, no control characters (C0, DEL or C1: U+0000–U+001F,
    /// U+007F–U+009F).
    public static func validate(key: String) throws { try FormatOneStore.validate(key: key) }

    /// Whether the store is open (unlocked).
    public var isOpen: Bool { opened.withLock { $0 != nil } }

    /// Whether a file exists at ``path`` (it may still be unreadable or not a vault).
    public var exists: Bool { VaultFile.exists(path) }

    /// Checks, without a passphrase, what an open checks of the file system: the directory (real, ours or root's,
    /// writable by no one else) and the vault file (a regular file of ours, no access for group or others).
    public func checkAccess() throws { try FormatOneStore(path: path, options: options).checkAccess() }

    /// Reads the header of the vault at ``path`` (its format version, KDF parameters, …) without a passphrase.
    public func inspect() throws -> VaultHeaderInfo { try VaultHeaderInfo.read(path: path, policy: options.kdfPolicy) }

    /// The open vault's format version (1, 2 or 3), or `nil` when closed.
    public var formatVersion: Int? { opened { Int($0.formatVersion) } one: { _ in 1 } }

    /// The open vault's generation as last read or written: 1 when created, one more on every write.
    public var generation: UInt64? { opened { $0.generation } one: { $0.generation } }

    /// What the open vault's `document` (versions 2 and 3) or version-1 `store` says, or `nil` when closed.
    private func opened<T>(_ document: (VaultDocument) -> T?, one store: (FormatOneStore) -> T?) -> T? {
        switch opened.withLock({ $0 }) {
        case let vault as DocumentVault: vault.document.flatMap(document)
        case let vault as FormatOneStore: store(vault)
        default: nil
        }
    }

    // MARK: Open, create, close

    /// Opens (unlocks) the vault with `passphrase`, creating an empty one (the current format) first if none
    /// exists at ``path`` (the tutorials' behaviour). Use ``open(with:createIfMissing:)`` with `false` to refuse.
    ///
    /// - Throws: ``VaultError/wrongPassphrase(path:)`` for a wrong passphrase or a tampered file;
    ///   ``VaultError/corrupt(path:reason:)``, ``VaultError/kdfParametersOutOfRange(path:opsLimit:memLimitBytes:)``,
    ///   ``VaultError/unsupportedVersion(path:version:)`` for files it refuses before the KDF runs;
    ///   ``VaultError/unsafePermissions(path:reason:hint:)`` for a loose, foreign or symlinked file.
    public func open(with passphrase: SecureBytes) throws {
        try open(with: passphrase, createIfMissing: true)
    }

    /// Opens the vault with a passphrase given as a `String` (the tutorials' signature).
    /// Prefer ``open(with:)-(SecureBytes)``: a `String` cannot be wiped from memory.
    public func open(with passphrase: String) throws {
        try open(with: SecureBytes(string: passphrase))
    }

    /// Opens the vault; when none exists, creates one if `createIfMissing`, else throws ``VaultError/vaultNotFound(path:)``.
    public func open(with passphrase: SecureBytes, createIfMissing: Bool) throws {
        if createIfMissing && !exists {
            do {
                _ = try VaultOpener.create(path: path, passphrase: passphrase, options: options)
            } catch VaultError.vaultAlreadyExists {
                // Another process created it between our look and our write: open theirs.
            }
        }
        let vault = try VaultOpener.open(path: path, passphrase: passphrase, options: options)
        hold(vault)
    }

    /// Creates a new, empty vault at ``path`` and leaves it open.
    ///
    /// - Parameters:
    ///   - parameters: Argon2id cost; default ``VaultStoreOptions/kdfParametersForNewVaults``.
    ///   - formatVersion: the format version, 3 (the current one) unless an older reader must open the file.
    /// - Throws: ``VaultError/vaultAlreadyExists(path:)`` if a file is already there.
    public func create(
        with passphrase: SecureBytes, parameters: Argon2id.Parameters? = nil, formatVersion: Int = Int(DocumentFormat.currentVersion)
    ) throws {
        let vault: any KeyValueVault
        if formatVersion == 1 {
            let store = FormatOneStore(path: path, options: options)
            try store.create(with: passphrase, parameters: parameters)
            vault = store
        } else {
            _ = try VaultOpener.create(
                path: path, passphrase: passphrase, parameters: parameters, options: options,
                formatVersion: UInt16(clamping: formatVersion))
            vault = try VaultOpener.open(path: path, passphrase: passphrase, options: options)
        }
        hold(vault)
    }

    /// Keeps `vault` as the open one; one opened before is closed.
    private func hold(_ vault: any KeyValueVault) {
        opened.withLock { held in
            defer { held = vault }
            return held.take()
        }?.close()
    }

    /// Closes the store: drops the data key and all decrypted values (their memory is zeroed).
    public func close() {
        opened.withLock { $0.take() }?.close()
    }

    /// The open vault, or ``VaultError/notOpen``.
    private func vault() throws -> any KeyValueVault {
        guard let vault = opened.withLock({ $0 }) else { throw VaultError.notOpen }
        return vault
    }

    /// Re-reads the vault file so that reads see what other processes wrote (writes always start from the file on
    /// disk). No KDF runs.
    public func reload() throws { try vault().reload() }

    // MARK: Entries (KeyValueVault)

    public func contains(_ key: String) throws -> Bool { try vault().contains(key) }
    /// The value under `key` (its password field, versions 2 and 3) as secret bytes, or `nil` if there is none.
    public func getBytes(_ key: String) throws -> SecureBytes? { try vault().getBytes(key) }
    public func keys() throws -> [String] { try vault().keys() }
    public func attributes(forKey key: String) throws -> EntryAttributes? { try vault().attributes(forKey: key) }
    public func listing() throws -> [(name: String, attributes: EntryAttributes)] { try vault().listing() }
    public func entries(_ keys: [String]) throws -> [(value: SecureBytes?, attributes: EntryAttributes)?] { try vault().entries(keys) }
    /// Writes a batch made elsewhere (``VaultChanges/init()``) in one atomic, durable write.
    public func write(_ changes: Changes) throws { try vault().write(changes) }
    @discardableResult public func remove(_ key: String) throws -> Bool { try vault().remove(key) }

    /// The number of entries.
    public var count: Int {
        get throws { try keys().count }
    }

    /// Changes the passphrase in one atomic write, with a new data key (the old passphrase and the old key stop
    /// working at once; other stores holding this vault open get ``VaultError/keyChanged(path:)``).
    ///
    /// - Parameter parameters: new Argon2id parameters, or `nil` to keep the vault's.
    public func changePassphrase(to newPassphrase: SecureBytes, parameters: Argon2id.Parameters? = nil) throws {
        try vault().changePassphrase(to: newPassphrase, parameters: parameters)
    }

    // MARK: Fields, versions, merges (format versions 2 and 3)

    public func records(of name: String, _ which: EntryVersions) throws -> [EntryRecord]? { try vault().records(of: name, which) }
    public func search(prefix: String, required: [(field: String, value: [UInt8])]) throws -> [EntryRecord] {
        try vault().search(prefix: prefix, required: required)
    }
    public func apply(_ changes: [DocumentChange]) throws { try vault().apply(changes) }
    public func merge(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> MergeReport {
        try vault().merge(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions)
    }
    public func mergeKeepingFile(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> (report: MergeReport, file: [UInt8]?) {
        try vault().mergeKeepingFile(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions)
    }
    public func deletedEntries() throws -> [VaultDocument.DeletedEntry] { try vault().deletedEntries() }
    public func requireFields() throws { try vault().requireFields() }
}
