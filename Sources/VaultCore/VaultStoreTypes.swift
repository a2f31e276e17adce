import FoundationEssentials

/// How a store (``SecureKeyValueStore``, ``VaultOpener``) treats new vaults, KDF parameters and the lock.
public struct VaultStoreOptions: Sendable {
    /// The Argon2id parameters of vaults this store creates. Default ``Argon2id/Parameters/moderate``.
    public var kdfParametersForNewVaults: Argon2id.Parameters
    /// Which parameters a vault may ask for when opened.
    public var kdfPolicy: Argon2id.KDFPolicy
    /// How long a writer waits for another process's lock before failing with ``VaultError/busy(path:timeoutSeconds:)``.
    public var lockTimeoutSeconds: Double
    /// Rollback protection: where to remember the highest generation seen of each vault, so that an older
    /// copy put back is refused with ``VaultError/rollbackDetected(path:seenGeneration:fileGeneration:)``.
    /// `nil` (the library's default) turns it off; the `vault` CLI uses ``RollbackProtection/standard``.
    public var rollbackProtection: RollbackProtection? = nil
    /// Opens a vault older than the recorded generation anyway, and lowers the record (a restored backup).
    public var acceptRollback = false

    /// - Parameter allowInsecureKDFForTesting: the explicit test hook: accept and create vaults with
    ///   libsodium's minimum Argon2id cost. Never set it outside tests.
    public init(
        kdfParametersForNewVaults: Argon2id.Parameters = .moderate,
        allowInsecureKDFForTesting: Bool = false,
        lockTimeoutSeconds: Double = 10
    ) {
        self.kdfParametersForNewVaults = kdfParametersForNewVaults
        self.kdfPolicy = allowInsecureKDFForTesting ? .insecureForTesting : .standard
        self.lockTimeoutSeconds = lockTimeoutSeconds
    }

    /// Cheap Argon2id for tests: creates and opens vaults with ``Argon2id/Parameters/insecureForTesting``.
    public static let insecureForTesting = VaultStoreOptions(
        kdfParametersForNewVaults: .insecureForTesting, allowInsecureKDFForTesting: true)
}

/// A batch of puts and removes written in one atomic, durable write (``KeyValueVault/write(_:)``).
///
/// The values are copied into one growable guarded region as they are added, so a batch may hold any
/// number of entries (one guarded mapping per value would hit the kernel's limit on mappings).
public struct VaultChanges {
    var list: [(name: String, change: VaultContents.Change)] = []
    /// Conditions on the file as it is when the batch is written (under the lock), checked before any
    /// change: a name that must exist, or must not.
    var requirements: [(name: String, exists: Bool)] = []
    /// The values of the puts in `list`; a copy of the batch shares it (it is only appended to).
    var values: GuardedArena
    var removesAll = false

    /// An empty batch, to fill and pass to ``KeyValueVault/write(_:)``.
    public init() {
        self.values = GuardedArena()
    }

    init(values: GuardedArena) {
        self.values = values
    }

    /// Takes the values' region out of the batch (for the store to wipe and keep), leaving it empty.
    mutating func detachValues() -> GuardedArena {
        var arena = GuardedArena()
        swap(&arena, &values)
        return arena
    }

    public mutating func put(_ value: SecureBytes, forKey key: String) throws {
        try value.withUnsafeBytes { try put(bytes: $0, forKey: key) }
    }

    public mutating func put(_ value: String, forKey key: String) throws {
        var value = value
        try value.withUTF8 { try put(bytes: UnsafeRawBufferPointer($0), forKey: key) }
    }

    private mutating func put(bytes: UnsafeRawBufferPointer, forKey key: String) throws {
        try SecureKeyValueStore.validate(key: key)
        guard bytes.count <= VaultFormat.maximumValueByteCount else {
            throw VaultError.valueTooLarge(key: key, byteCount: bytes.count)
        }
        list.append((key, .put(values.append(bytes))))
    }

    public mutating func remove(_ key: String) {
        list.append((key, .remove))
    }

    /// Puts a copy of the entry `source` under `key`, its value as the file holds it when the batch is
    /// written (before the batch's other changes). `keepCreated` keeps the source's creation time (a move:
    /// copy, then remove the source). A missing source fails the batch with ``VaultError/noSuchEntry(key:path:)``.
    public mutating func copy(_ source: String, to key: String, keepCreated: Bool = false) throws {
        try SecureKeyValueStore.validate(key: key)
        list.append((key, .copy(from: source, keepCreated: keepCreated)))
    }

    /// Fails the whole batch, writing nothing, unless the file (as it is when the batch is written) has an
    /// entry under `key` (`exists`) or has none: ``VaultError/noSuchEntry(key:path:)`` or
    /// ``VaultError/entryExists(key:path:)``. What `vault put --no-clobber`, `vault mv` and `vault delete`
    /// check without a window between the check and the write.
    public mutating func require(_ key: String, exists: Bool) {
        requirements.append((key, exists))
    }

    /// Removes every entry in the file as it is when the batch is written (then applies the rest).
    public mutating func removeAll() {
        list.removeAll()
        requirements.removeAll()
        removesAll = true
    }
}

/// Creation and modification times of an entry.
public struct EntryAttributes: Sendable, Equatable {
    public var created: Date
    public var modified: Date
    public var byteCount: Int

    public init(created: Date, modified: Date, byteCount: Int) {
        self.created = created
        self.modified = modified
        self.byteCount = byteCount
    }
}

/// What a vault's header says, read without the passphrase (nothing of it is authenticated yet).
public struct VaultHeaderInfo: Sendable, Equatable {
    public var formatVersion: Int
    public var kdfParameters: Argon2id.Parameters
    public var generation: UInt64
    public var fileByteCount: Int
    /// Version 2: the vault's id and its key stanzas' types (`argon2id`, …); `nil` and `[]` for version 1.
    public var vaultID: DocumentID? = nil
    public var stanzaTypes: [String] = []
}

extension VaultHeaderInfo {
    /// Reads the header of the vault at `path` (either format) with the checks an open makes before its KDF
    /// (permissions, magic, version, KDF range under `policy`), without a passphrase.
    static func read(path: String, policy: Argon2id.KDFPolicy) throws -> VaultHeaderInfo {
        guard let file = try VaultFile.read(path: path) else { throw VaultError.vaultNotFound(path: path) }
        if DocumentHeader.isVersion2(file) {
            let header = try DocumentHeader.parse(file, label: path, policy: policy)
            return VaultHeaderInfo(
                formatVersion: Int(header.version), kdfParameters: header.kdfParameters!, generation: header.generation,
                fileByteCount: file.count, vaultID: header.vaultID, stanzaTypes: header.stanzaTypes)
        }
        let header = try VaultEnvelope.parseHeader(file, path: path, policy: policy)
        return VaultHeaderInfo(
            formatVersion: Int(VaultFormat.version), kdfParameters: header.parameters,
            generation: header.generation, fileByteCount: file.count)
    }
}

extension FormatOneStore {
    /// Reads the header of the vault at ``path`` (``VaultHeaderInfo``), without a passphrase.
    public func inspect() throws -> VaultHeaderInfo { try VaultHeaderInfo.read(path: path, policy: options.kdfPolicy) }
}
