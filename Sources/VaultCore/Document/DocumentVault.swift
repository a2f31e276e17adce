import FoundationEssentials
import Synchronization
import VaultSodium

/// A version-2 vault as a ``KeyValueVault``: what the credential store, device registration and the CLI's verbs
/// use today works on it unchanged, while the document underneath keeps ids, fields, history and tombstones.
///
/// An entry's value, for this interface, is its `password` field; a put sets that field and keeps the others
/// (and the version it replaces goes into the entry's history); a remove leaves a tombstone; a move
/// (``SecureKeyValueStore/Changes/copy(_:to:keepCreated:)`` with `keepCreated` followed by the source's removal,
/// what `vault mv` sends) renames the entry and keeps its id; any other copy makes a new id.
public final class DocumentVault: KeyValueVault, Sendable {
    public let path: String
    let store: DocumentStore
    let rollbackProtection: RollbackProtection?
    /// How another copy's key is had when a merge follows it, besides its passphrase (``setOtherKey(_:)``).
    let otherKeySource = Mutex<(@Sendable (DocumentHeader, String) throws -> DocumentKey?)?>(nil)

    /// How a merge opens a copy under another key that it may follow (an age identity's stanza: the one this vault
    /// was opened with), given the copy's header and label; `nil` from it: not this way (its passphrase then).
    public func setOtherKey(_ source: (@Sendable (DocumentHeader, String) throws -> DocumentKey?)?) {
        otherKeySource.withLock { $0 = source }
    }

    /// Opens the version-2 vault at `path` with `key` (see ``DocumentStore``). With `rollbackProtection`, the
    /// vault is checked against (and recorded in) the same rollback record as version 1 (its generation and its
    /// data key), unless `acceptRollback`.
    public init(path: String, key: DocumentKey, replica: ReplicaID, clock: any WallClock = SystemWallClock(),
                policy: Argon2id.KDFPolicy = .standard, lockTimeoutSeconds: Double = 10,
                rollbackProtection: RollbackProtection? = nil, acceptRollback: Bool = false) throws {
        self.path = path
        self.rollbackProtection = rollbackProtection
        store = DocumentStore(
            storage: LocalFileStorage(path: path, lockTimeoutSeconds: lockTimeoutSeconds), replica: replica, clock: clock,
            policy: policy)
        // Every document loaded (the open, each reload, each write's load) is checked against the rollback record
        // before it is used or written over, as version 1 does; `acceptRollback` only for the open.
        store.setVerify(rollbackCheck(accept: acceptRollback))
        try store.open(with: key)
        store.setVerify(rollbackCheck(accept: false))
        if let vaultID = store.document?.vaultID {
            let directory = rollbackProtection?.stateDirectory
            store.setReplicaName { ReplicaRegistry.name(for: vaultID, stateDirectory: directory) }
        }
    }

    /// The check of every load: the record of the vault's id (generation and data-key id, wherever the file is),
    /// the rollback record of its path (generation and data key, as version 1), and this user's
    /// replica's own latest write: a file whose replica table shows an older one for this replica lacks writes made
    /// here (another machine's copy put over this one: newer by generation, yet it would silently lose them).
    func rollbackCheck(accept: Bool) -> DocumentStore.Verifier? {
        guard let protection = rollbackProtection else { return nil }
        let path = self.path, store = self.store
        return { document, dataKey in
            // Wherever the file is: the record of the vault's id and data key id (issue 18 §6), checked first so that
            // a refused file is recorded nowhere; then the record of this path (another vault put here). A file under
            // another key than the one recorded (put in the vault's place by a `git pull` fast-forward, a sync tool, a
            // copy: no merge checked it) is taken only along its key links from the recorded key (`followed`), else
            // refused whatever `accept` says (issue 33 §1).
            let followed = try RollbackGuard.checkVault(
                document.vaultID, dataKeyID: document.dataKeyID, stanzas: document.stanzas, path: path, protection: protection, accept: accept)
            // This replica's own latest write before the record of the path: a file refused for lacking it must not
            // raise what that record has seen (your own file, put back, would then be refused as older).
            let replica = store.replica
            let written = ReplicaRegistry.latestWrite(of: replica, to: document.vaultID, stateDirectory: protection.stateDirectory)
            let inFile = document.replicas[replica]?.packed ?? 0
            let lacksOwnWrites = written.map { inFile < $0 } ?? false
            if lacksOwnWrites, !accept {
                // The path's checks first (an older copy of this very file is a rollback), recording nothing.
                try RollbackGuard.checkAndRecord(
                    path: path, generation: document.generation, dataKey: dataKey, protection: protection, accept: false, record: false,
                    followed: followed)
                throw VaultError.missingOwnWrites(path: path)
            }
            try RollbackGuard.checkAndRecord(
                path: path, generation: document.generation, dataKey: dataKey, protection: protection, accept: accept, followed: followed)
            RollbackGuard.recordVault(
                document.vaultID, dataKeyID: document.dataKeyID, dataKey: dataKey, generation: document.generation, stanzas: document.stanzas,
                protection: protection)
            guard lacksOwnWrites else { return }
            try ReplicaRegistry.recordLatestWrite(inFile, of: replica, to: document.vaultID, stateDirectory: protection.stateDirectory)
            // Accepted: a fork of this replica's history (a branch checked out, a backup put back). Writing on it
            // as the same replica would make two lines of changes one replica's: a clock of it in a table would no
            // longer say what that table has seen, and a merge could bring back a deletion whose tombstone was
            // dropped, or take one copy for the other's past (docs/FORMAT.md, "The tombstone horizon"). From here on
            // this user writes to the vault as a new replica.
            store.renewReplica(try ReplicaRegistry.replica(for: document.vaultID, stateDirectory: protection.stateDirectory, renew: true))
        }
    }

    /// Records a write in the rollback record; `retiring` (id `retiringID`): the data key a key change replaced. With
    /// `pending`, that change was made here and no other copy has it yet: the retired key is kept sealed under the
    /// new one (``RollbackGuard/setPending``) so that a copy under it written before the change can still be merged.
    func recordWrite(retiring: SecureBytes? = nil, retiringID: DocumentID? = nil, pending: Bool = false) {
        guard let protection = rollbackProtection, let document = store.document, let dataKey = store.dataKey else { return }
        RollbackGuard.record(path: path, generation: document.generation, dataKey: dataKey, retiring: retiring, protection: protection)
        RollbackGuard.recordVault(
            document.vaultID, dataKeyID: document.dataKeyID, dataKey: dataKey, generation: document.generation, retiring: retiringID,
            stanzas: document.stanzas, protection: protection)
        if pending, let retiring, let retiringID {
            RollbackGuard.setPending(
                document.vaultID, keyID: document.dataKeyID, retiredKeyID: retiringID, sealedKey: Self.seal(retiring, under: dataKey),
                protection: protection)
        }
        if let latest = document.replicas[store.replica] {
            try? ReplicaRegistry.recordLatestWrite(latest.packed, of: store.replica, to: document.vaultID, stateDirectory: protection.stateDirectory)
        }
    }

    /// The document as last read or written.
    public var document: VaultDocument? { store.document }

    func current() throws -> VaultDocument {
        guard let document = store.document else { throw VaultError.notOpen }
        return document
    }

    public func contains(_ key: String) throws -> Bool { try current().entry(key) != nil }

    public func getBytes(_ key: String) throws -> SecureBytes? { try current().value(of: "password", in: key) }

    public func keys() throws -> [String] { try current().names }

    public func attributes(forKey key: String) throws -> SecureKeyValueStore.EntryAttributes? {
        let document = try current()
        guard let entry = document.entry(key) else { return nil }
        return SecureKeyValueStore.EntryAttributes(
            created: Date(timeIntervalSince1970: Double(entry.created.milliseconds) / 1000),
            modified: Date(timeIntervalSince1970: Double(entry.modified.milliseconds) / 1000),
            byteCount: document.fields(of: key, version: nil)?.first(where: { $0.name == "password" })?.value.count ?? 0)
    }

    public func listing() throws -> [(name: String, attributes: SecureKeyValueStore.EntryAttributes)] {
        try keys().compactMap { name in try attributes(forKey: name).map { (name, $0) } }
    }

    /// Writes as a new replica when this one's clock in the file is more than a day ahead of the wall clock (a copy
    /// from the future merged before such copies were refused, or a wall clock that was set far ahead): every later
    /// change would otherwise have to come after it, and none can after the end of time. A new replica has no past to
    /// come after; entries stamped in the future keep their stamps until ``repairClocks(dryRun:)``.
    func renewReplicaIfAhead() {
        guard let document = store.document, let mine = document.replicas[store.replica],
              mine.milliseconds > store.clock.milliseconds() &+ VaultDocument.maximumClockLead else { return }
        let renewed = rollbackProtection.flatMap {
            try? ReplicaRegistry.replica(for: document.vaultID, stateDirectory: $0.stateDirectory, renew: true)
        }
        store.renewReplica(renewed ?? .random())
    }

    /// Brings every clock of the vault more than a day ahead of the wall clock back to now (``VaultDocument/repairClocks(replica:now:)``),
    /// as a new replica when this one's own clock is among them; with `dryRun` only says what it would change.
    public func repairClocks(dryRun: Bool) throws -> VaultDocument.ClockRepair {
        try store.reload()
        let preview = try current().copied().repairClocks(replica: store.replica, now: store.clock.milliseconds())
        guard !dryRun, !preview.isEmpty else { return preview }
        renewReplicaIfAhead()
        let repair = try store.repairClocks()
        recordWrite()
        return repair
    }

    public func write(_ changes: SecureKeyValueStore.Changes) throws {
        renewReplicaIfAhead()
        try store.update(changes.documentChanges())
        recordWrite()
    }

    public func records(of name: String, _ which: EntryVersions) throws -> [EntryRecord]? {
        try current().records(of: name, which)
    }

    public func search(prefix: String, required: [(field: String, value: [UInt8])]) throws -> [EntryRecord] {
        try current().search(prefix: prefix, required: required)
    }

    public func apply(_ changes: [DocumentChange]) throws {
        renewReplicaIfAhead()
        try store.update(changes)
        recordWrite()
    }

    public func deletedEntries() throws -> [VaultDocument.DeletedEntry] { try current().deleted }

    /// Rewrites the vault in the current format version when it is older (``DocumentStore/upgradeFormat(to:attempts:)``).
    public func upgradeFormat() throws -> Bool {
        let upgraded = try store.upgradeFormat()
        if upgraded { recordWrite() }
        return upgraded
    }

    /// The vault's id, as last read.
    public var vaultID: DocumentID? { store.document?.vaultID }

    /// Whether the key held replaced the key of the file whose header is `header`, along this vault's own key links:
    /// a file of this vault from before a key change made here (what a rebase checks out while that change is not
    /// pushed). Read from the links held, which were verified when they were opened.
    public func replacedKey(of header: DocumentHeader) -> Bool {
        guard let held = store.document, header.vaultID == held.vaultID else { return false }
        return KeyLinks.links(in: held.stanzas).contains { $0.link.oldKeyID == header.dataKeyID }
    }

    @discardableResult
    public func remove(_ key: String) throws -> Bool {
        try store.reload()
        guard try contains(key) else { return false }
        renewReplicaIfAhead()
        try store.update([.delete(entry: key)])
        recordWrite()
        return true
    }

    public func reload() throws { try store.reload() }

    public func close() { store.close() }
}
