import Synchronization
import VaultSodium

/// A version-2 vault on any ``VaultStorage``: opens a ``VaultDocument`` from the stored bytes and writes batches
/// of changes with conditional replaces. A writer that meets a conflict (another writer replaced the bytes since
/// they were loaded) loads again, applies its changes again to what is stored now, and retries, a bounded number
/// of times: no writer's batch is lost, and none overwrites another's. Thread-safe: one lock around the state (an
/// agent serves several connections at once).
public final class DocumentStore: Sendable {
    public let storage: any VaultStorage
    /// The replica this store writes as: the one it was made with, until a load accepted as a fork of its history
    /// moves it to a new one (``DocumentVault``'s rollback check, ``renewReplica(_:)``).
    public var replica: ReplicaID { currentReplica.withLock { $0 } }
    private let currentReplica: Mutex<ReplicaID>
    let clock: any WallClock
    let policy: Argon2id.KDFPolicy
    // The check of every document loaded before it is used or written over (``DocumentVault`` checks the rollback
    // record there); `rollbackDetected` from it makes an update load again once when the bytes moved meanwhile.
    typealias Verifier = @Sendable (VaultDocument, SecureBytes) throws -> Void
    private let verifier = Mutex<Verifier?>(nil)
    /// The bytes last loaded or written, their version, the document they hold and its data key.
    private let state = Mutex<(bytes: [UInt8], version: StorageVersion, document: VaultDocument, dataKey: SecureBytes)?>(nil)
    /// The zeroed guarded regions of the documents a write replaced (their values and their plaintext), for the next
    /// write's copy and seal: a new region each time (map, lock, fault in, and unlock, unmap when freed) was a third
    /// of a put's time at 100,000 entries.
    private let regions = Mutex(RegionPool())
    /// The key the passphrase gave under the `argon2id` stanza that opened the vault (``PassphraseKey``), while
    /// open: a key change that keeps the passphrase wraps the new data key with it (``rotateKey(passphrase:parameters:keepingHeldPassphrase:reason:attempts:progress:recipients:)``).
    let passphraseKey = Mutex<PassphraseKey?>(nil)

    /// Sets the check of every document loaded (see ``verify``'s role above).
    func setVerify(_ check: Verifier?) { verifier.withLock { $0 = check } }

    /// Runs the check, if any, outside the state's lock (it may take other locks: the rollback record's).
    func verify(_ document: VaultDocument, _ dataKey: SecureBytes) throws {
        try verifier.withLock { $0 }?(document, dataKey)
    }

    public init(storage: any VaultStorage, replica: ReplicaID, clock: any WallClock = SystemWallClock(), policy: Argon2id.KDFPolicy = .standard) {
        self.storage = storage
        self.currentReplica = Mutex(replica)
        self.clock = clock
        self.policy = policy
    }

    /// Writes as `replica` from now on.
    func renewReplica(_ replica: ReplicaID) { currentReplica.withLock { $0 = replica } }

    /// The name this store's replica goes by (``ReplicaName``), asked at every write; `nil`: none is given.
    private let replicaName = Mutex<(@Sendable () -> String?)?>(nil)

    /// Sets what names this store's replica: every write gives the replica that name when the vault has another or
    /// none for it (``VaultDocument/setName(_:of:now:)``), so a new replica is named at its first write, and a name
    /// changed here reaches the file with the next write.
    public func setReplicaName(_ name: (@Sendable () -> String?)?) { replicaName.withLock { $0 = name } }

    /// The document as last loaded or written (a document is never changed once held: each load or write makes a
    /// new one).
    public var document: VaultDocument? { state.withLock { loaded in loaded?.document } }

    /// The data key held (for the rollback record).
    var dataKey: SecureBytes? { state.withLock { loaded in loaded?.dataKey } }

    /// The document and data key held, from one load or write.
    var held: (document: VaultDocument, dataKey: SecureBytes)? { state.withLock { loaded in loaded.map { ($0.document, $0.dataKey) } } }

    /// The document held when it is the stored bytes of `version` (a write's load: no need to open them again).
    func held(ifStoredAs version: StorageVersion) -> VaultDocument? {
        state.withLock { loaded in loaded?.version == version ? loaded?.document : nil }
    }

    /// Forgets the document and its data key.
    public func close() {
        state.withLock { loaded in loaded = nil }
        passphraseKey.withLock { $0 = nil }
    }

    /// Keeps `key` as the passphrase's key, unless the store was closed meanwhile (a lock while a key change
    /// waited for the file: nothing of the vault may stay in memory after it). Under the state's lock, which
    /// ``close()`` takes before it drops the key.
    func keep(_ key: PassphraseKey?) {
        state.withLock { loaded in passphraseKey.withLock { $0 = loaded == nil ? nil : key } }
    }

    /// Creates a new, empty version-2 vault in the storage (refused when something is stored there).
    ///
    /// - Throws: ``VaultError/vaultAlreadyExists(path:)``.
    public func create(passphrase: SecureBytes, parameters: Argon2id.Parameters) throws {
        let (document, dataKey) = try VaultDocument.create(passphrase: passphrase, parameters: parameters, label: storage.label)
        let bytes = try document.seal(dataKey: dataKey)
        let version: StorageVersion
        do {
            version = try storage.replace(bytes, expecting: nil)
        } catch VaultError.storageConflict {
            throw VaultError.vaultAlreadyExists(path: storage.label)
        }
        state.withLock { loaded in loaded = (bytes, version, document, dataKey) }
    }

    /// Opens the stored vault with `key` (a passphrase runs the KDF once; later loads use the data key).
    ///
    /// - Throws: ``VaultError/vaultNotFound(path:)``, and what ``VaultDocument/open(_:with:label:policy:)`` throws.
    public func open(with key: DocumentKey) throws {
        guard var stored = try storage.load() else { throw VaultError.vaultNotFound(path: storage.label) }
        var (document, dataKey, kek) = try VaultDocument.openKeepingPassphraseKey(stored.bytes, with: key, label: storage.label, policy: policy)
        try loadingAgainOnARace(&stored) { stored, first in
            if !first { document = try openHeld(stored, dataKey: dataKey, verifying: false) }
            try verify(document, dataKey)
        }
        state.withLock { loaded in loaded = (stored.bytes, stored.version, document, dataKey) }
        keep(kek)
    }

    /// Runs `body` on `stored` (`first`: the bytes as first loaded); when it fails with what a concurrent writer
    /// causes (it wrote and raised the rollback record, or this replica's latest write, after our load) and the
    /// stored bytes moved meanwhile, loads them again and runs `body` on them, three times, then once more under
    /// the storage's lock (``VaultStorage/exclusively(_:)``).
    private func loadingAgainOnARace(_ stored: inout StoredVault, _ body: (StoredVault, Bool) throws -> Void) throws {
        var first = true
        for _ in 1...3 {
            do {
                return try body(stored, first)
            } catch let error as VaultError where Self.isRace(error) {
                guard let again = try storage.load(), again.version != stored.version else { throw error }
                stored = again
                first = false
            }
        }
        // Once more with no writer writing (writers may keep replacing it faster than it is read): a reader that
        // took the lock at once would queue behind every writer.
        do {
            try body(stored, false)
        } catch let error as VaultError where Self.isRace(error) {
            stored = try storage.exclusively { _ in
                guard let again = try storage.load(), again.version != stored.version else { throw error }
                try body(again, false)
                return again
            }
        }
    }

    /// Whether `error` is what a writer that replaced the stored bytes after our load makes our check report.
    static func isRace(_ error: VaultError) -> Bool {
        switch error {
        case .rollbackDetected, .missingOwnWrites, .retiredKey, .otherVault: return true
        default: return false
        }
    }

    /// Loads what is stored now with the data key held (no KDF; no decryption when the bytes did not change).
    ///
    /// - Throws: ``VaultError/keyChanged(path:)`` when the stored vault has another data key now (a passphrase
    ///   change elsewhere).
    public func reload() throws {
        // No state lock across the I/O: a writer holds the storage's lock and then takes the state lock.
        guard let held = state.withLock({ loaded in loaded }) else { throw VaultError.notOpen }
        guard var stored = try storage.load() else { throw VaultError.vaultNotFound(path: storage.label) }
        if stored.version == held.version { return }
        var document: VaultDocument?
        try loadingAgainOnARace(&stored) { stored, _ in document = try openHeld(stored, dataKey: held.dataKey) }
        // Only over what was held when this reload began: a writer (or another reload) may have put something newer
        // in place meanwhile, which a slow reload must not replace with what it read before.
        state.withLock { loaded in
            if loaded?.version == held.version { loaded = (stored.bytes, stored.version, document!, held.dataKey) }
        }
    }

    /// Opens `stored` with the data key held and verifies it; another data key is ``VaultError/keyChanged(path:)``.
    func openHeld(_ stored: StoredVault, dataKey: SecureBytes, verifying: Bool = true) throws -> VaultDocument {
        let document: VaultDocument
        do {
            document = try VaultDocument.open(stored.bytes, with: .dataKey(dataKey), label: storage.label, policy: policy).document
        } catch VaultError.wrongPassphrase {
            throw VaultError.keyChanged(path: storage.label)
        }
        if verifying { try verify(document, dataKey) }
        return document
    }

    /// Applies `changes` as one batch to what is stored now and stores the result: each attempt loads the stored
    /// bytes (another writer may have written since this store last looked), opens them with the data key (no
    /// KDF) and verifies them, applies the batch and replaces the bytes only if they are still the version it
    /// loaded. On a conflict it tries again, up to `attempts` times in all. On any error the stored vault is as
    /// other writers left it, never half of this batch, and ``document`` shows what is stored.
    ///
    /// - Throws: ``VaultError/notOpen``; the batch's errors (``VaultDocument/apply(_:replica:clock:)``) against
    ///   what is stored; ``VaultError/keyChanged(path:)``; ``VaultError/storageConflict(path:)`` after `attempts`
    ///   conflicts.
    public func update(_ changes: [DocumentChange], attempts: Int = 5) throws {
        guard let dataKey = state.withLock({ loaded in loaded?.dataKey }) else { throw VaultError.notOpen }
        try write(attempts: attempts) { stored in
            // The bytes held (what this process last read or wrote): a copy of the held document, checked again,
            // instead of decrypting and parsing the whole vault anew (most of a put's time at 10,000 entries).
            let document: VaultDocument
            if let held = self.held(ifStoredAs: stored.version) {
                document = held.copied(
                    reserving: changes.reduce(0) { if case .setField(_, _, let value, _) = $1 { $0 + value.count } else { $0 } },
                    recycling: regions.withLock { $0.takeArena() })
                try verify(document, dataKey)
            } else {
                document = try openHeld(stored, dataKey: dataKey)
            }
            do {
                try document.apply(changes, replica: replica, clock: clock)
            } catch {
                // The batch does not fit what is stored: nothing written; reads now see what is stored.
                let fresh = try openHeld(stored, dataKey: dataKey)
                state.withLock { loaded in if loaded != nil { loaded = (stored.bytes, stored.version, fresh, dataKey) } }
                throw error
            }
            return (document, dataKey)
        }
    }

    /// Rewrites the vault in format version `version` when it is older (from 2 to 3: version 3's bookkeeping
    /// starts, nothing else changes; docs/FORMAT.md, "Version 3"). Returns whether it wrote.
    public func upgradeFormat(to version: UInt16 = DocumentFormat.currentVersion, attempts: Int = 5) throws -> Bool {
        guard let dataKey = state.withLock({ loaded in loaded?.dataKey }) else { throw VaultError.notOpen }
        var upgraded = false
        try write(attempts: attempts) { stored in
            let document = try openHeld(stored, dataKey: dataKey)
            guard document.formatVersion < version else { return nil }
            document.formatVersion = version
            document.settle(replica: replica, now: clock.milliseconds())
            upgraded = true
            return (document, dataKey)
        }
        return upgraded
    }

    /// Brings the stored vault's clocks from the future back to now as this store's replica
    /// (``VaultDocument/repairClocks(replica:now:)``), conditionally as ``update(_:attempts:)`` writes; nothing is
    /// written when nothing is ahead.
    public func repairClocks(attempts: Int = 5) throws -> VaultDocument.ClockRepair {
        guard let dataKey = state.withLock({ loaded in loaded?.dataKey }) else { throw VaultError.notOpen }
        var repair = VaultDocument.ClockRepair()
        try write(attempts: attempts) { stored in
            let document = try openHeld(stored, dataKey: dataKey)
            let now = clock.milliseconds()
            repair = try document.repairClocks(replica: replica, now: now)
            guard !repair.isEmpty else { return nil }
            document.settle(replica: replica, now: now)
            return (document, dataKey)
        }
        return repair
    }

    /// Keeps the regions of `document`, which a write replaced, for the next write (``regions``), when nothing else
    /// holds them (a reader may still use the document; then they are freed with it).
    private func recycle(_ document: consuming VaultDocument?) {
        guard let held = document.take() else { return }
        var values: GuardedArena? = held.values
        var plaintext = held.encoded.withLock { $0?.plaintext }
        _ = consume held  // (its entries, and its last seal's, go with it)
        regions.withLock { pool in
            pool.keep(values.take())
            pool.keep(plaintext.take())
        }
    }

    /// Loads, lets `make` produce the next document and its key from what is stored (`nil`: nothing to write),
    /// seals and replaces conditionally; a conflict, or a rollback report while the stored bytes moved (another
    /// writer raised the record after our load), loads again, `attempts` times in all.
    func write(
        attempts: Int, progress: ((_ done: Int, _ total: Int) -> Void)? = nil, _ make: (StoredVault) throws -> (VaultDocument, SecureBytes)?
    ) throws {
        var replaced: VaultDocument?
        defer { recycle(replaced.take()) }
        for attempt in 1...max(1, attempts) {
            // Under the storage's lock where it has one (a local file: writers queue), else optimistic.
            var unchanged = false
            let written = try storage.exclusively { replace -> (bytes: [UInt8], version: StorageVersion, document: VaultDocument, dataKey: SecureBytes)? in
                guard let stored = try storage.loadForWrite() else { throw VaultError.vaultNotFound(path: storage.label) }
                let document: VaultDocument, key: SecureBytes
                do {
                    guard let made = try make(stored) else {
                        unchanged = true
                        return nil
                    }
                    (document, key) = made
                    // Named once it is an author (its clock in the table: a change of its own). A replica that only
                    // merged has made nothing to name, and naming it would make the merged copy differ from the one it
                    // was merged with (a library user without a state directory is a new replica in every process).
                    if document.replicas[replica] != nil, let name = replicaName.withLock({ $0 })?() {
                        document.setName(name, of: replica, now: clock.milliseconds())
                    }
                } catch let error as VaultError {
                    if Self.isRace(error), attempt < attempts, try storage.load()?.version != stored.version { return nil }
                    throw error
                }
                let total = document.entries.count
                let bytes = try document.seal(
                    dataKey: key, recycling: regions.withLock { $0.spare.take() }, progress: progress.map { report in { report($0, total) } })
                do {
                    let written = (bytes, try replace(bytes, stored.version), document, key)
                    // Held before the lock is let go: no reader of this process can hold an older one after. Not
                    // when the store was closed meanwhile (a lock while the write waited): it stays closed.
                    replaced = state.withLock { loaded in
                        guard let previous = loaded else { return nil }
                        loaded = written
                        return previous.document
                    }
                    return written
                } catch VaultError.storageConflict where attempt < attempts {
                    return nil
                }
            }
            if unchanged || written != nil { return }
        }
        throw VaultError.storageConflict(path: storage.label)
    }
}
