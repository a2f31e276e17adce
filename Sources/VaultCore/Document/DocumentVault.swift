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
    private let otherKeySource = Mutex<(@Sendable (DocumentHeader, String) throws -> DocumentKey?)?>(nil)

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
                document.vaultID, dataKeyID: document.dataKeyID, dataKey: dataKey, generation: document.generation, protection: protection)
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
            protection: protection)
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

    /// Merges two files of this vault given as bytes (git's merge driver: `ours` and `theirs`, neither of them the
    /// vault's own file) with the data key held here, and returns the merged file sealed with it, and the report.
    /// Nothing is read or written on disk; the key never leaves this process.
    ///
    /// - Throws: ``VaultError/notTheSameVault(path:)``, ``VaultError/needsVersion2(path:)``,
    ///   ``VaultError/wrongPassphrase(path:)`` (the key held does not open one of them), what opening them throws.
    public func mergeFiles(ours: [UInt8], theirs: [UInt8], labels: (String, String), now: UInt64) throws -> ([UInt8], MergeReport) {
        guard let dataKey = store.dataKey, let vaultID else { throw VaultError.notOpen }
        var documents: [VaultDocument] = []
        for (bytes, label) in [(ours, labels.0), (theirs, labels.1)] {
            guard DocumentHeader.isVersion2(bytes) else { throw VaultError.needsVersion2(path: label) }
            let header = try DocumentHeader.parse(bytes, label: label, policy: store.policy)
            guard header.vaultID == vaultID else { throw VaultError.notTheSameVault(path: label) }
            guard header.dataKeyID == store.document?.dataKeyID else { throw VaultError.otherKey(path: label) }
            documents.append(try VaultDocument.open(bytes, with: .dataKey(dataKey), label: label, policy: store.policy, against: documents.first).document)
        }
        // Neither file may claim changes of this replica beyond its latest write (recorded: git's files may be older).
        if let protection = rollbackProtection,
           let own = ReplicaRegistry.latestWrite(of: store.replica, to: vaultID, stateDirectory: protection.stateDirectory) {
            for document in documents { try document.checkClaims(about: store.replica, ownClock: own, mergingInto: nil, now: now) }
        }
        // Neither file is this vault's own (during a rebase git's "ours" is the upstream): both files' clocks are checked
        // against the wall clock alone, never against either file's own table (a clock from the future in "ours" would
        // otherwise raise the bound for "theirs").
        let bound = now &+ VaultDocument.maximumClockLead
        try documents[0].checkStamps(differingFrom: documents[1], below: bound)
        try documents[1].checkStamps(differingFrom: documents[0], below: bound)
        var (merged, report) = try VaultDocument.merge(documents[0], documents[1], now: now)
        // The driver cannot ask: a mass deletion stops it (a conflict; `vault sync` asks, or takes --accept-deletions).
        // Counted over both files (either may be the local one): entries live in either and not in the result.
        let live = Set(documents[0].entries.keys).union(documents[1].entries.keys)
        let gone = live.subtracting(merged.entries.keys)
        if gone.count > 10, gone.count * 10 > live.count {
            let names = Set(gone.compactMap { documents[0].entries[$0]?.name ?? documents[1].entries[$0]?.name }).sorted()
            throw VaultError.massDeletion(path: labels.1, names: names)
        }
        merged.settle(replica: store.replica, now: now)
        report.written = true
        return (try merged.seal(dataKey: dataKey), report)
    }

    /// What a file of this vault (given as bytes: a version git hands its textconv) holds, without a single value:
    /// each live entry's name, id, last change (its time in ISO 8601 and the replica that made it, by name when it has
    /// one), field names (secret ones marked) and number of earlier versions,
    /// sorted by name; then the number of tombstones. The data key held opens it; nothing on disk is read.
    public func describeFile(_ bytes: [UInt8], label: String) throws -> [String] {
        guard let dataKey = store.dataKey, let vaultID else { throw VaultError.notOpen }
        guard DocumentHeader.isVersion2(bytes) else { throw VaultError.needsVersion2(path: label) }
        guard try DocumentHeader.parse(bytes, label: label, policy: store.policy).vaultID == vaultID else {
            throw VaultError.notTheSameVault(path: label)
        }
        let document = try VaultDocument.open(bytes, with: .dataKey(dataKey), label: label, policy: store.policy).document
        var lines = ["vault \(document.vaultID) generation \(document.generation)"]
        for name in document.names {
            guard let entry = document.entry(name) else { continue }
            lines.append("\(name)")
            // The time as a person reads it (ISO 8601, UTC), and who made the change: its replica's name, else its id.
            let by = document.name(of: entry.modified.replica) ?? "replica \(entry.modified.replica)"
            lines.append("  id \(entry.id)  modified \(UTCTime.iso8601(milliseconds: Int64(entry.modified.milliseconds), fractional: true)) by \(by)"
                + "  earlier versions \(entry.versionCount)")
            lines.append("  fields " + entry.fields.map { $0.name + ($0.isSecret ? " (secret)" : "") }.joined(separator: ", "))
        }
        lines.append("deleted entries \(document.tombstones.count)")
        return lines
    }

    public func merge(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> MergeReport {
        try merge(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, otherKey: nil, acceptDeletions: acceptDeletions)
    }

    /// The merge, and the file it wrote: read back through the storage, which knows the bytes it last wrote (the
    /// file's header prefix is read to confirm them, not its body).
    public func mergeKeepingFile(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> (report: MergeReport, file: [UInt8]?) {
        let report = try merge(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions)
        guard report.written, !dryRun else { return (report, nil) }
        return (report, try store.storage.loadForWrite()?.bytes)
    }

    /// ``merge(_:label:dryRun:otherPassphrase:)`` where the other copy's key (when it is not ours) may also come from
    /// `otherKey` (an age identity unwrapping one of its `x25519` stanzas), tried before `otherPassphrase`.
    public func merge(
        _ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?,
        otherKey: ((DocumentHeader) throws -> DocumentKey?)?, acceptDeletions: Bool = false
    ) throws -> MergeReport {
        let oldKey = store.dataKey, oldID = store.document?.dataKeyID
        let protection = rollbackProtection
        let source = otherKeySource.withLock { $0 }
        let otherKey = otherKey ?? source.map { source in { header in try source(header, label) } }
        // A key change made here and not yet published: a copy under the key it retired is merged into ours as content.
        var previousKey: (id: DocumentID, key: SecureBytes)?
        if let protection, let vaultID, let oldID, let oldKey,
           let pending = RollbackGuard.pending(vaultID, keyID: oldID, protection: protection),
           let key = Self.open(pending.sealedKey, under: oldKey) {
            previousKey = (pending.retiredKeyID, key)
        }
        let report = try store.merge(
            other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, otherKey: otherKey, previousKey: previousKey,
            mayFollow: { header in
                // A key this vault retired is never followed back, whatever links lead to it.
                guard let protection else { return }
                do {
                    try RollbackGuard.checkVault(header.vaultID, dataKeyID: header.dataKeyID, path: label, protection: protection, accept: false)
                } catch VaultError.retiredKey {
                    throw VaultError.unauthorizedKey(path: label)
                }
            }, acceptDeletions: acceptDeletions)
        if !dryRun {
            if store.document?.dataKeyID != oldID {
                // The other copy's key followed: this vault's own is retired, so that a copy under it is refused here;
                // the change was made elsewhere, so nothing of ours is pending.
                recordWrite(retiring: oldKey, retiringID: oldID)
            } else {
                recordWrite()
                // A copy already under our key: a key change made here has reached another copy.
                if let protection, let vaultID, let oldID, DocumentHeader.isVersion2(other),
                   let header = try? DocumentHeader.parse(other, label: label, policy: .insecureForTesting), header.dataKeyID == oldID {
                    RollbackGuard.clearPending(vaultID, keyID: oldID, protection: protection)
                }
            }
        }
        return report
    }

    /// `key` sealed (secretbox, a fresh nonce before the box) under a key derived from `dataKey`: the key a change
    /// made here replaced, kept in the rollback record while the change is pending.
    static func seal(_ key: SecureBytes, under dataKey: SecureBytes) -> [UInt8] {
        let wrapping = VaultDocument.subkey(dataKey, pendingContext)
        let nonce = Sodium.randomBytes(count: VaultFormat.nonceByteCount)
        var box = [UInt8](repeating: 0, count: key.count + VaultFormat.macByteCount)
        key.withUnsafeBytes { plain in
            nonce.withUnsafeBytes { nonce in
                wrapping.withUnsafeBytes { wrapping in
                    box.withUnsafeMutableBytes { try? Sodium.secretBoxSeal(plain, nonce: nonce, key: wrapping, into: $0) }
                }
            }
        }
        return nonce + box
    }

    /// The key ``seal(_:under:)`` sealed, `nil` when it does not open under `dataKey`.
    static func open(_ sealed: [UInt8], under dataKey: SecureBytes) -> SecureBytes? {
        guard sealed.count == VaultFormat.nonceByteCount + VaultFormat.dataKeyByteCount + VaultFormat.macByteCount else { return nil }
        let wrapping = VaultDocument.subkey(dataKey, pendingContext)
        let nonce = Array(sealed.prefix(VaultFormat.nonceByteCount)), box = Array(sealed.dropFirst(VaultFormat.nonceByteCount))
        return try? SecureBytes(count: VaultFormat.dataKeyByteCount) { (out) throws in
            let opened = box.withUnsafeBytes { box in
                nonce.withUnsafeBytes { nonce in wrapping.withUnsafeBytes { Sodium.secretBoxOpen(box, nonce: nonce, key: $0, into: out) } }
            }
            guard opened else { throw VaultError.cryptoFailure(function: "crypto_secretbox_open_easy") }
        }
    }

    static let pendingContext = Array("vault pending key".utf8)

    /// A key change made here has reached another copy (`file`, under that key, was written to the remote by a sync):
    /// a copy under the key it retired is refused from now on (``VaultError/staleKey(path:)``).
    package static func keyChangePublished(_ file: [UInt8], protection: RollbackProtection) {
        guard DocumentHeader.isVersion2(file), let header = try? DocumentHeader.parse(file, label: "", policy: .insecureForTesting) else { return }
        RollbackGuard.clearPending(header.vaultID, keyID: header.dataKeyID, protection: protection)
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

    public func changePassphrase(to newPassphrase: SecureBytes, parameters: Argon2id.Parameters?) throws {
        let old = store.dataKey, oldID = store.document?.dataKeyID
        try store.changePassphrase(to: newPassphrase, parameters: parameters)
        recordWrite(retiring: old, retiringID: oldID, pending: true)
    }

    /// The recipients (`age1…`) the vault is shared with, as last read.
    public var recipients: [String] { store.document?.recipients ?? [] }

    /// Whether the vault has a passphrase stanza, as last read.
    public var hasPassphraseStanza: Bool { store.document?.stanzas.contains { $0.type == KeyStanza.argon2id } ?? false }

    /// Whether `passphrase` opens a passphrase stanza of the vault as last read (one Argon2id run per stanza tried):
    /// what a key rotation that wraps the new key for it checks first, when the vault was opened without it.
    ///
    /// - Throws: ``VaultError/notOpen``; ``VaultError/cryptoFailure(function:)`` when the KDF fails.
    public func opens(passphrase: SecureBytes) throws -> Bool {
        guard let document = store.document else { throw VaultError.notOpen }
        for stanza in document.stanzas where stanza.type == KeyStanza.argon2id {
            if try Argon2idStanza(body: stanza.body)?.unwrap(passphrase: passphrase, label: path) != nil { return true }
        }
        return false
    }

    /// The labels of the recipients (recipient → label), as last read.
    public var recipientLabels: [String: String] { store.document?.sealedRecipientLabels.mapValues(\.label) ?? [:] }

    /// Sets the `x25519` stanzas under the current data key, and labels (``DocumentStore/setRecipients(attempts:labels:_:)``).
    public func setRecipients(
        labels: [String: String] = [:],
        _ recipients: (_ current: [RecipientStanza], _ dataKey: SecureBytes) throws -> [RecipientStanza]
    ) throws {
        try store.setRecipients(labels: labels, recipients)
        recordWrite()
    }

    /// A new data key, the body sealed again under it, and its stanzas (``DocumentStore/rotateKey(passphrase:parameters:attempts:recipients:)``);
    /// the old key is retired in the rollback record, so that a copy under it is refused here. Only a passphrase
    /// change is pending until published (a copy under the old key merged as content meanwhile: the machine one change
    /// behind, issue 33 §1); any other change, a recipient's removal above all, retires the old key at once: a copy the
    /// removed recipient writes under it after the removal is `stale_key`, never merged.
    public func rotateKey(
        passphrase: SecureBytes?, parameters: Argon2id.Parameters? = nil, reason: KeyChangeReason = .other,
        progress: ((_ done: Int, _ total: Int) -> Void)? = nil,
        recipients: (_ current: [RecipientStanza], _ newDataKey: SecureBytes) throws -> [RecipientStanza]
    ) throws {
        let old = store.dataKey, oldID = store.document?.dataKeyID
        try store.rotateKey(passphrase: passphrase, parameters: parameters, reason: reason, progress: progress, recipients: recipients)
        recordWrite(retiring: old, retiringID: oldID, pending: reason == .passphraseChange)
    }

    public func reload() throws { try store.reload() }

    public func close() { store.close() }
}
