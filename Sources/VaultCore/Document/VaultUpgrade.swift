/// `vault upgrade`: a version-1 or version-2 vault rewritten as the current version (3) in one atomic write
/// (issue 18 §3; docs/FORMAT.md, "Version 3").
public enum VaultUpgrade {
    /// What an upgrade did.
    public struct Outcome: Sendable, Equatable {
        /// `false` when the file was already the current version (nothing was written).
        public var upgraded: Bool
        /// The version the file had.
        public var fromVersion: Int
        public var entryCount: Int
        public var vaultID: DocumentID
    }

    /// Upgrades the vault at `path`: opens version 1 with `passphrase`, makes a version-2 document with the same
    /// Argon2id parameters and a new data key, every entry under a fresh id with its value as the `password`
    /// field and its creation and modification times, as this user's replica; writes it only over the version-1
    /// bytes it read (a write by another process meanwhile: ``VaultError/storageConflict(path:)``, nothing
    /// written); records the new key in the rollback record, retiring the old one (a version-1 copy put back is
    /// refused as older). A version-2 file is rewritten as version 3 with its key (its entries as they are); a
    /// version-3 file: nothing written.
    public static func upgrade(path: String, passphrase: SecureBytes, options: VaultStoreOptions) throws -> Outcome {
        let storage = LocalFileStorage(path: path, lockTimeoutSeconds: options.lockTimeoutSeconds)
        guard let stored = try storage.load() else { throw VaultError.vaultNotFound(path: path) }
        if DocumentHeader.isVersion2(stored.bytes) {
            let header = try DocumentHeader.parse(stored.bytes, label: path, policy: options.kdfPolicy)
            let document = try DocumentVault(
                path: path, key: .passphrase(passphrase), replica: .random(), policy: options.kdfPolicy,
                lockTimeoutSeconds: options.lockTimeoutSeconds, rollbackProtection: options.rollbackProtection,
                acceptRollback: options.acceptRollback)
            defer { document.close() }
            let upgraded = try document.upgradeFormat()
            return Outcome(upgraded: upgraded, fromVersion: Int(header.version), entryCount: try document.keys().count, vaultID: header.vaultID)
        }
        let old = FormatOneStore(path: path, options: options)
        try old.open(with: passphrase, createIfMissing: false)
        defer { old.close() }
        guard let oldKey = old.state.withLock({ $0.open?.dataKey }), let parameters = old.kdfParameters else {
            throw VaultError.notOpen
        }
        let (document, dataKey) = try VaultDocument.create(passphrase: passphrase, parameters: parameters, label: path)
        let replica = try ReplicaRegistry.replica(for: document.vaultID, stateDirectory: options.rollbackProtection?.stateDirectory)
        // One value at a time into the document's own guarded region (one region per value for a 100,000-entry
        // vault would exhaust the process's memory maps).
        var count = 0
        for (name, attributes) in try old.listing() {
            guard let value = try old.getBytes(name) else { continue }
            func milliseconds(_ date: Date) -> UInt64 { UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded())) }
            document.importEntry(name: name, value: value, created: milliseconds(attributes.created),
                                 modified: milliseconds(attributes.modified), replica: replica)
            count += 1
        }
        let bytes = try document.seal(dataKey: dataKey)
        _ = try storage.replace(bytes, expecting: stored.version)
        if let protection = options.rollbackProtection {
            RollbackGuard.record(path: path, generation: document.generation, dataKey: dataKey, retiring: oldKey, protection: protection)
            RollbackGuard.recordVault(
                document.vaultID, dataKeyID: document.dataKeyID, dataKey: dataKey, generation: document.generation, protection: protection)
        }
        return Outcome(upgraded: true, fromVersion: 1, entryCount: count, vaultID: document.vaultID)
    }
}

import FoundationEssentials

extension VaultDocument {
    /// Adds an entry as it was elsewhere (an upgrade, an import): under a fresh id, its value as the secret
    /// `password` field, created and modified at the given milliseconds as `replica`, each timestamp of the
    /// replica distinct (the counter counts within a millisecond); the replica table then holds the latest, so that
    /// the next change is later than every imported time.
    func importEntry(name: String, value: SecureBytes, created: UInt64, modified: UInt64, replica: ReplicaID) {
        func stamp(_ milliseconds: UInt64) -> HybridTimestamp {
            let ms = min(milliseconds, HybridTimestamp.maximumMilliseconds)
            let latest = replicas[replica]
            let next: HybridTimestamp
            if let latest, latest.milliseconds == ms, latest.counter < UInt16.max {
                next = HybridTimestamp(milliseconds: ms, counter: latest.counter + 1, replica: replica)
            } else {
                next = HybridTimestamp(milliseconds: ms, counter: 0, replica: replica)
            }
            if latest.map({ next > $0 }) ?? true { replicas[replica] = next }
            return next
        }
        ownValues()
        let range = value.withUnsafeBytes { values.append($0) }
        let id = DocumentID.random()
        let createdAt = stamp(created)
        let modifiedAt = modified > created ? stamp(modified) : createdAt
        entries[id] = Entry(
            id: id, name: name, fields: [Field(name: "password", value: range, isSecret: true)], created: createdAt,
            modified: modifiedAt, history: [])
        idsByName[name] = id
    }
}
