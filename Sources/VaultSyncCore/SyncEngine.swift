import FoundationEssentials
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// This vault and a copy of it (any ``VaultCopy``: an S3 object, an OpenBao secret, another file) made one, entry by
/// entry (``KeyValueVault/merge(_:label:dryRun:otherPassphrase:acceptDeletions:)``), with conditional writes so
/// that no writer's entries are lost: read the copy (a conditional read when the record of the last sync says
/// what it was), merge it here, write the merged vault back only when the copy lacks something and only over the
/// version read; when another writer came in between, read, merge and try again (at most ``attempts`` times).
///
/// ```swift
/// let engine = SyncEngine(vault: store)                 // an open SecureKeyValueStore
/// let report = try await engine.sync(with: remote)      // S3ObjectStore, OpenBaoKV, LocalFileStorage…
/// ```
///
/// The local vault is opened at most once per sync, by ``open`` (the CLI: through the agent when it holds it),
/// and checked by opening (key, MACs, rollback record) before anything of it is sent. With no local vault, the
/// copy becomes it, once it opens with what ``open`` opens it with.
public struct SyncEngine {
    /// The local vault file.
    public var path: String
    /// Opens the local vault (called at most once per sync, when the sync first needs its entries). The engine
    /// never closes what it returns: whoever opened it does.
    public var open: () throws -> any KeyValueVault
    /// Where the record of each copy's last sync is kept (`nil`: none; every sync then reads and merges).
    public var stateDirectory: String?
    /// What a key change made here is published to once sent (``DocumentVault/keyChangePublished(_:protection:)``).
    public var rollbackProtection: RollbackProtection?
    /// The Argon2id bounds a copy adopted as the local vault must keep.
    public var kdfPolicy: Argon2id.KDFPolicy = .standard
    /// Say what the merge would change, and write nothing (neither here nor there).
    public var dryRun = false
    /// Write the copy again when it was deleted in its store since the last sync.
    public var recreate = false
    /// How many conditional writes are tried.
    public var attempts = 8
    /// Runs one merge of a copy (its label): `merge` takes the other copy's passphrase (`nil` first: a copy sealed
    /// with another key then throws ``VaultError/otherKey(path:reason:)``) and whether a mass deletion is accepted
    /// (``VaultError/massDeletion(path:names:)`` else). The default: no other passphrase, no mass deletion.
    public var merging: (_ label: String, _ merge: (SecureBytes?, Bool) throws -> MergeReport) throws -> MergeReport = { _, merge in
        try merge(nil, false)
    }
    /// Waits before the next try when the store answers that another write is in progress.
    public var backOff: (_ attempt: Int) async throws -> Void = { attempt in
        try await Task.sleep(nanoseconds: UInt64(50_000_000 << min(attempt, 5)))
    }

    public init(path: String, open: @escaping () throws -> any KeyValueVault, stateDirectory: String? = RollbackProtection.defaultStateDirectory) {
        self.path = path
        self.open = open
        self.stateDirectory = stateDirectory
    }

    /// The engine of an open store: its path, its Argon2id policy and rollback record, and the state directory of
    /// its rollback record (else the CLI's).
    public init(vault store: SecureKeyValueStore) {
        self.init(path: store.path, open: { store }, stateDirectory: store.options.rollbackProtection?.stateDirectory ?? RollbackProtection.defaultStateDirectory)
        rollbackProtection = store.options.rollbackProtection
        kdfPolicy = store.options.kdfPolicy
    }

    /// Syncs the local vault with `copy`.
    ///
    /// - Throws: ``SyncError`` (the copy's store, a copy deleted, one that kept changing), ``VaultError`` (opening,
    ///   merging or writing the local vault), and what ``merging`` throws.
    public func sync(with copy: any VaultCopy) async throws -> SyncReport {
        try await Run(engine: self, copy: copy).sync()
    }
}

/// What one sync did.
public struct SyncReport: Sendable, Equatable {
    /// The copy was adopted as the local vault (there was none).
    public var fetched = false
    /// What the merge changed here (`nil`: nothing was merged).
    public var merge: MergeReport?
    /// The merged vault was written to the copy.
    public var pushed = false
    /// The copy was created by that write.
    public var created = false
    /// How many times the copy was read.
    public var attempts = 1

    public init() {}
}
