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

    /// Sets the check of every document loaded (see ``verify``'s role above).
    func setVerify(_ check: Verifier?) { verifier.withLock { $0 = check } }

    /// Runs the check, if any, outside the state's lock (it may take other locks: the rollback record's).
    private func verify(_ document: VaultDocument, _ dataKey: SecureBytes) throws {
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

    /// Forgets the document and its data key.
    public func close() { state.withLock { loaded in loaded = nil } }

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
        var (document, dataKey) = try VaultDocument.open(stored.bytes, with: key, label: storage.label, policy: policy)
        try loadingAgainOnARace(&stored) { stored, first in
            if !first { document = try openHeld(stored, dataKey: dataKey, verifying: false) }
            try verify(document, dataKey)
        }
        state.withLock { loaded in loaded = (stored.bytes, stored.version, document, dataKey) }
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
    private func openHeld(_ stored: StoredVault, dataKey: SecureBytes, verifying: Bool = true) throws -> VaultDocument {
        let document: VaultDocument
        do {
            document = try VaultDocument.open(stored.bytes, with: .dataKey(dataKey), label: storage.label, policy: policy).document
        } catch VaultError.wrongPassphrase {
            throw VaultError.keyChanged(path: storage.label)
        }
        if verifying { try verify(document, dataKey) }
        return document
    }

    /// A new data key wrapped for `passphrase`, and the stored vault re-sealed under it, conditionally as
    /// ``update(_:attempts:)`` writes (the KDF runs once, before any attempt).
    public func changePassphrase(to passphrase: SecureBytes, parameters: Argon2id.Parameters?, attempts: Int = 5) throws {
        guard let held = state.withLock({ loaded in loaded }) else { throw VaultError.notOpen }
        let parameters = parameters ?? held.document.kdfParameters ?? .interactive
        let prepared = try VaultDocument.create(passphrase: passphrase, parameters: parameters, label: storage.label)
        try write(attempts: attempts) { stored in
            let document = try openHeld(stored, dataKey: held.dataKey)
            // The change, signed with the key it replaces: every copy that holds that key follows it (KeyLinks).
            let newID = DocumentID.random()
            document.stanzas = prepared.document.stanzas
                + KeyLinks.changed(document, from: held.dataKey, to: prepared.dataKey, id: newID, reason: .passphraseChange)
            document.dataKeyID = newID
            return (document, prepared.dataKey)
        }
    }

    /// Sets the vault's `x25519` stanzas to what `recipients` makes from the data key held, keeping the data key and
    /// every other stanza (an addition: whoever could read the vault still can, and the new recipients too),
    /// conditionally as ``update(_:attempts:)`` writes. `recipients` gets the current stanzas and the data key and
    /// returns the new ones; then each recipient of the result named in `labels` takes its label there (by recipient,
    /// ``RecipientLabel``).
    ///
    /// - Throws: ``VaultError/notOpen``; ``VaultError/keyChanged(path:)``; what `recipients` throws.
    public func setRecipients(
        attempts: Int = 5, labels: [String: String] = [:],
        _ recipients: (_ current: [RecipientStanza], _ dataKey: SecureBytes) throws -> [RecipientStanza]
    ) throws {
        guard let dataKey = state.withLock({ loaded in loaded?.dataKey }) else { throw VaultError.notOpen }
        try write(attempts: attempts) { stored in
            let document = try openHeld(stored, dataKey: dataKey)
            let made = try recipients(document.recipientStanzas, dataKey)
            document.stanzas = document.stanzas.filter { RecipientStanza.Kind(stanzaType: $0.type) == nil } + made.map(\.stanza)
            let now = clock.milliseconds()
            for stanza in made {
                if let label = labels[stanza.recipient] { document.setRecipientLabel(label, of: stanza.recipient, replica: replica, now: now) }
            }
            return (document, dataKey)
        }
    }

    /// A new data key (and data key id): the stored vault re-sealed under it, with an `argon2id` stanza for
    /// `passphrase` (when given) and the `x25519` stanzas `recipients` makes for the new key from the current ones
    /// (a removal: the recipients left, each wrapped again). Every other stanza is dropped: it wraps the old key.
    /// No ciphertext made under the old key remains in the file. Conditionally as ``update(_:attempts:)``
    /// writes; the KDF runs once, before any attempt.
    ///
    /// - Throws: ``VaultError/notOpen``; ``VaultError/keyChanged(path:)``; ``VaultError/corrupt(path:reason:)``
    ///   (`no_usable_stanza`) when neither a passphrase nor a recipient would open the result; what `recipients`
    ///   throws.
    public func rotateKey(
        passphrase: SecureBytes?, parameters: Argon2id.Parameters?, reason: KeyChangeReason = .other, attempts: Int = 5,
        progress: ((_ done: Int, _ total: Int) -> Void)? = nil,
        recipients: (_ current: [RecipientStanza], _ newDataKey: SecureBytes) throws -> [RecipientStanza]
    ) throws {
        guard let held = state.withLock({ loaded in loaded }) else { throw VaultError.notOpen }
        let newKey = SecureBytes(count: VaultFormat.dataKeyByteCount) { Sodium.fillRandom($0) }
        var passphraseStanzas: [KeyStanza] = []
        if let passphrase {
            let parameters = parameters ?? held.document.kdfParameters ?? .interactive
            passphraseStanzas = [try Argon2idStanza.wrap(newKey, passphrase: passphrase, parameters: parameters).stanza]
        }
        try write(attempts: attempts, progress: progress) { stored in
            let document = try openHeld(stored, dataKey: held.dataKey)
            let made = try recipients(document.recipientStanzas, newKey)
            guard !passphraseStanzas.isEmpty || !made.isEmpty else {
                throw VaultError.corrupt(path: storage.label, reason: .noUsableStanza)
            }
            // The key links the vault has, and this change's, signed with the key it replaces (KeyLinks).
            let newID = DocumentID.random()
            document.stanzas = passphraseStanzas + made.map(\.stanza)
                + KeyLinks.changed(document, from: held.dataKey, to: newKey, id: newID, reason: reason.link)
            document.dataKeyID = newID
            return (document, newKey)
        }
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
            let held = state.withLock { loaded in loaded?.version == stored.version ? loaded?.document : nil }
            let document: VaultDocument
            if let held {
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
                state.withLock { loaded in loaded = (stored.bytes, stored.version, fresh, dataKey) }
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

    /// Merges `other` (a copy of this vault: the same vault id) into what is stored, conditionally as
    /// ``update(_:attempts:)`` writes (``VaultDocument/merge(_:_:now:)``); nothing is written when the merge changes
    /// nothing, or with `dryRun`.
    ///
    /// A copy under another data key is followed only along its key links from our key (``KeyLinks``: a link signed
    /// with our key's signing key, then each with the one before, up to its key; else
    /// ``VaultError/unauthorizedKey(path:)``, or ``VaultError/staleKey(path:)`` for a key our own links retired),
    /// checked before its key is asked for; it opens then with `otherKey` or `otherPassphrase`, and the result takes
    /// the other copy's key stanzas and data key (a key change made elsewhere is followed, not undone). `mayFollow`
    /// is the caller's further check (``DocumentVault``: no key this vault retired). A copy under `previousKey` (the
    /// key a change made here replaced, not yet published) is merged into our key as content.
    ///
    /// - Throws: ``VaultError/notTheSameVault(path:)``; ``VaultError/needsVersion2(path:)`` for a version-1
    ///   `other`; ``VaultError/otherKey(path:)`` when it is sealed with another data key and no `otherPassphrase`
    ///   was given; ``VaultError/wrongPassphrase(path:)`` when that passphrase does not open it; what opening it
    ///   throws.
    public func merge(
        _ otherBytes: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes? = nil,
        otherKey: ((DocumentHeader) throws -> DocumentKey?)? = nil, previousKey: (id: DocumentID, key: SecureBytes)? = nil,
        mayFollow: ((DocumentHeader) throws -> Void)? = nil, acceptDeletions: Bool = false, attempts: Int = 5
    ) throws -> MergeReport {
        guard let dataKey = state.withLock({ loaded in loaded?.dataKey }), let held = document else { throw VaultError.notOpen }
        guard DocumentHeader.isVersion2(otherBytes) else { throw VaultError.needsVersion2(path: label) }
        let header = try DocumentHeader.parse(otherBytes, label: label, policy: policy)
        guard header.vaultID == held.vaultID else { throw VaultError.notTheSameVault(path: label) }
        let other: VaultDocument
        var adopted: SecureBytes?
        if header.dataKeyID == held.dataKeyID {
            other = try VaultDocument.open(otherBytes, with: .dataKey(dataKey), label: label, policy: policy, against: held).document
        } else if let previousKey, header.dataKeyID == previousKey.id {
            // A copy under the key a change made here replaced, before that change reached any other copy: its
            // content is what a sync made before the change would have brought; merged into our key, never its key.
            other = try VaultDocument.open(otherBytes, with: .dataKey(previousKey.key), label: label, policy: policy, against: held).document
        } else if !KeyLinks.authorizes(header, from: held.dataKeyID, signingKey: KeySigning.publicKey(of: dataKey), vaultID: held.vaultID) {
            // No link signed with our key leads to the copy's: nobody who holds our key handed it over. Refused before
            // any key of the copy is asked for (a stranger's copy prompts for nothing).
            if KeyLinks.links(in: held.stanzas).contains(where: { $0.link.oldKeyID == header.dataKeyID }) {
                throw VaultError.staleKey(path: label)
            }
            throw VaultError.unauthorizedKey(path: label)
        } else {
            try mayFollow?(header)
            // The other copy's key: from an identity (an `x25519` stanza, above this library), else its passphrase.
            let key: DocumentKey
            if let unwrapped = try otherKey?(header) {
                key = unwrapped
            } else if let otherPassphrase {
                key = .passphrase(otherPassphrase)
            } else {
                throw VaultError.otherKey(path: label)
            }
            let opened = try VaultDocument.open(otherBytes, with: key, label: label, policy: policy, against: held)
            other = opened.document
            adopted = opened.dataKey
        }
        var report = MergeReport()
        if dryRun {
            try reload()
            guard let current = document else { throw VaultError.notOpen }
            let now = clock.milliseconds()
            report = try VaultDocument.merge(current, other, now: now).1
            try other.checkClaims(about: replica, ownClock: current.replicas[replica]?.packed ?? 0, mergingInto: current, now: now)
            return report
        }
        try write(attempts: attempts) { stored in
            // The document held when it is what is stored (the merge changes neither input), else the stored bytes.
            let ours: VaultDocument
            if let held = state.withLock({ loaded in loaded?.version == stored.version ? loaded?.document : nil }) {
                try verify(held, dataKey)
                ours = held
            } else {
                ours = try openHeld(stored, dataKey: dataKey)
            }
            let now = clock.milliseconds()
            // (Clocks from the future first: the merge refuses them, naming the clock.)
            let (merged, made) = try VaultDocument.merge(ours, other, now: now)
            try other.checkClaims(about: replica, ownClock: ours.replicas[replica]?.packed ?? 0, mergingInto: ours, now: now)
            if !acceptDeletions, made.isMassDeletion(outOf: ours.entries.count) {
                throw VaultError.massDeletion(path: label, names: made.deleted)
            }
            report = made
            // (Settling changes only the sync bookkeeping, which the other copy need not be sent for its own sake:
            // ``VaultDocument/isHeld(by:)``.)
            merged.settle(replica: replica, now: now)
            if let adopted {
                // The other copy's passphrase change, followed: its stanzas and data key.
                merged.stanzas = other.stanzas
                merged.dataKeyID = other.dataKeyID
                report.written = true
                return (merged, adopted)
            }
            report.written = !merged.sameContent(as: ours)
            return report.written ? (merged, dataKey) : nil
        }
        return report
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
    private func write(
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
                    // Held before the lock is let go: no reader of this process can hold an older one after.
                    replaced = state.withLock { loaded in
                        defer { loaded = written }
                        return loaded?.document
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
